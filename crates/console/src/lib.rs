//! The driver's HTTP face (`docs/api.md`): a JSON API over the driver's live view, the
//! dashboard page that reads it, and Prometheus metrics.
//!
//! ```text
//!  browser ── GET / , /assets/* ─────────▶ assets   (embedded in the binary)
//!  clients ── GET /v1/… ─────────────────▶ api      ─┐
//!          ── GET /v1/stream (SSE) ──────▶ stream   ─┼─ read LiveView (sleet-driver::live)
//!  scraper ── GET /metrics ──────────────▶ metrics  ─┘
//!  clients ── POST /v1/jobs, …/stop ─────▶ control  ── DriverEvent ──▶ the coordinator
//! ```
//!
//! Nothing here owns state: the coordinator publishes, this reads. What the driver's crate
//! must not link (the SQL compiler, the workload-specific what-if estimates) comes in
//! through `Frontend`, from the binary.

mod access;
mod api;
mod assets;
mod control;
mod metrics;
mod model;
mod reply;
mod stream;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use sleet_clarity::{RunSamples, WhatIfParams};
use sleet_driver::coordinator::DriverHandles;
use sleet_plan::JobFile;
use tokio::net::TcpListener;

/// What the console needs from the front ends the binary links.
pub trait Frontend: Send + Sync + 'static {
    /// Compiles a SQL script posted to `/v1/jobs`; the error names line and column.
    fn compile_sql(&self, text: &str) -> Result<JobFile, String>;
    /// The job's stages as `sleet sql --explain` prints them.
    fn explain(&self, job: &JobFile) -> Option<String>;
    /// What a what-if question about `run` assumes beyond the records.
    fn whatif_params(&self, job: &JobFile, run: &RunSamples) -> WhatIfParams;
}

#[derive(Clone)]
struct Console {
    driver: DriverHandles,
    front: Arc<dyn Frontend>,
    /// The token every API call must show; `None`: no cluster secret, no check.
    token: Option<String>,
    /// Each job's plan in words, by job id (`api::JobAnswer`).
    plans: Arc<std::sync::Mutex<std::collections::HashMap<u64, String>>>,
    models: Arc<model::ModelCache>,
}

/// Serves the API, the page and the metrics on `listener` until the process ends; with a
/// `token`, only to callers that show it. Run it on a one-thread runtime of its own: the
/// metrics report that thread's CPU as the console's.
pub async fn serve(
    listener: TcpListener,
    driver: DriverHandles,
    front: Arc<dyn Frontend>,
    token: Option<String>,
) -> std::io::Result<()> {
    axum::serve(listener, router(Console { driver, front, token, plans: Arc::default(), models: Arc::default() })).await
}

fn router(console: Console) -> Router {
    let page = Router::new().route("/", get(assets::index)).route("/assets/{file}", get(assets::file));
    Router::new()
        .route("/metrics", get(metrics::scrape))
        .route("/v1/cluster", get(api::cluster))
        .route("/v1/jobs", get(api::jobs).post(control::submit))
        .route("/v1/jobs/{id}", get(api::job))
        .route("/v1/jobs/{id}/batches", get(api::batches))
        .route("/v1/jobs/{id}/groups", get(api::groups))
        .route("/v1/jobs/{id}/analysis", get(api::analysis))
        .route("/v1/jobs/{id}/whatif", get(api::whatif))
        .route("/v1/jobs/{id}/stop", post(control::stop))
        .route("/v1/stream", get(stream::updates))
        .fallback(reply::not_found)
        .route_layer(axum::middleware::from_fn_with_state(console.clone(), access::require_token))
        .merge(page)
        .with_state(console)
}
