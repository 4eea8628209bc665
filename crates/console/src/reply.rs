//! Answers as the API gives them: JSON bodies, and errors as `{"error": …}` with the status
//! that fits.

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

pub fn json<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(error) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("the answer did not encode: {error}")),
    }
}

pub fn ok<T: Serialize + ?Sized>(body: &T) -> Response {
    json(StatusCode::OK, body)
}

pub fn failure(status: StatusCode, error: impl Into<String>) -> Response {
    json(status, &serde_json::json!({ "error": error.into() }))
}

pub fn unknown_job(id: u64) -> Response {
    failure(StatusCode::NOT_FOUND, format!("this driver knows no job {id} (GET /v1/jobs lists those it knows)"))
}

pub async fn not_found(uri: Uri) -> Response {
    failure(StatusCode::NOT_FOUND, format!("no such path: {} (docs/api.md lists the API's paths)", uri.path()))
}
