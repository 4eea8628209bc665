//! The dashboard page, compiled into the binary: viewing it needs no network and no files
//! beside the driver.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::reply;

const INDEX: &str = include_str!("../assets/index.html");
const FILES: [(&str, &str, &str); 2] = [
    ("dashboard.js", "text/javascript; charset=utf-8", include_str!("../assets/dashboard.js")),
    ("dashboard.css", "text/css; charset=utf-8", include_str!("../assets/dashboard.css")),
];

pub async fn index() -> Response {
    page(INDEX, "text/html; charset=utf-8")
}

pub async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(file, _, _)| *file == name) {
        Some((_, content_type, body)) => page(body, content_type),
        None => reply::failure(StatusCode::NOT_FOUND, format!("no asset {name}")),
    }
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    // The assets change only with the binary; a stale page after an upgrade would be worse
    // than reloading a few kilobytes.
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}
