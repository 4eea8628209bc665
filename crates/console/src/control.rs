//! The write side of the API: submit a job (a job file or a SQL script) and stop one. Both go
//! to the coordinator as the wire protocol's requests do, so a job submitted here runs, and
//! is refused, exactly as one from `sleet submit`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use sleet_driver::event::DriverEvent;
use sleet_plan::JobFile;
use sleet_wire::DriverToClient;
use tokio::sync::mpsc;

use crate::reply::{failure, json, unknown_job};
use crate::Console;

/// Client id of a job submitted over HTTP: no connection's end can stop it (a resumed job has
/// the same), only `POST …/stop`.
const HTTP_CLIENT: u64 = 0;

pub async fn submit(State(console): State<Console>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(text) = std::str::from_utf8(&body) else {
        return failure(StatusCode::BAD_REQUEST, "the body is not UTF-8 text");
    };
    let job = match content_type(&headers).as_str() {
        "application/sql" | "text/sql" | "text/plain" => console.front.compile_sql(text),
        "application/json" | "" => JobFile::from_json(text).map_err(|error| format!("not a valid job file: {error}")),
        other => Err(format!(
            "Content-Type {other} is neither a job file (application/json) nor a SQL script (application/sql)"
        )),
    };
    let job = match job {
        Ok(job) => job,
        Err(reason) => return failure(StatusCode::BAD_REQUEST, reason),
    };
    if let Some(running) = console.driver.live.running_job() {
        let reason = format!("the driver is busy running job {running}; submit again when it ends");
        return failure(StatusCode::CONFLICT, reason);
    }
    let (replies, mut answers) = mpsc::channel(16);
    let submit = DriverEvent::Submit { client: HTTP_CLIENT, job: Box::new(job), replies };
    if console.driver.events.send(submit).await.is_err() {
        return failure(StatusCode::SERVICE_UNAVAILABLE, "the driver is shutting down");
    }
    // The first answer is the driver's decision; later ones (progress) go nowhere, as the
    // live view already has them.
    match answers.recv().await {
        Some(DriverToClient::Accepted { job, workers, start_ms }) => {
            json(StatusCode::CREATED, &serde_json::json!({ "job": job, "workers": workers, "start_ms": start_ms }))
        }
        Some(DriverToClient::Rejected { reason }) => failure(StatusCode::BAD_REQUEST, reason),
        Some(other) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("the driver answered {other:?}")),
        None => failure(StatusCode::SERVICE_UNAVAILABLE, "the driver dropped the request (shutting down?)"),
    }
}

fn content_type(headers: &HeaderMap) -> String {
    let value = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    value.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

pub async fn stop(State(console): State<Console>, Path(id): Path<u64>) -> Response {
    if console.driver.live.running_job() != Some(id) {
        return match console.driver.live.job(id) {
            Some(view) => failure(
                StatusCode::NOT_FOUND,
                format!("job {id} is not running: it {}", format!("{:?}", view.brief.state).to_lowercase()),
            ),
            None => unknown_job(id),
        };
    }
    if console.driver.events.send(DriverEvent::Stop { job: id }).await.is_err() {
        return failure(StatusCode::SERVICE_UNAVAILABLE, "the driver is shutting down");
    }
    json(StatusCode::ACCEPTED, &serde_json::json!({ "job": id, "stopping": true }))
}
