//! The read side of the API: the cluster, jobs, their recent batches and groups, the model of
//! where their time goes, and what-if answers (`docs/api.md`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sleet_clarity::{parse_scenarios, predict, Bottleneck, Glance, JobModel, PartDistribution, ResourceUse};
use sleet_driver::live::JobView;
use sleet_wire::clock::now_ms;

use crate::reply::{failure, ok, unknown_job};
use crate::Console;

/// How long a request for the model waits for the first one: the schedulers compute it about
/// once a second, and only after someone asked.
const FIRST_MODEL_WAIT: Duration = Duration::from_millis(2_500);
const FIRST_MODEL_POLL: Duration = Duration::from_millis(100);

pub async fn cluster(State(console): State<Console>) -> Response {
    ok(&console.driver.live.cluster())
}

pub async fn jobs(State(console): State<Console>) -> Response {
    ok(&serde_json::json!({ "jobs": console.driver.live.jobs() }))
}

/// A job as the API shows it: the live view's, with its plan in words when its definition is
/// there.
#[derive(Serialize)]
pub struct JobAnswer {
    #[serde(flatten)]
    pub view: JobView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// Plans in words kept per job: explaining one plans its stages, which the stream would
/// otherwise repeat every second.
const PLANS_KEPT: usize = 64;

impl Console {
    /// The job whole (`definition`), or only its figures.
    pub fn job_answer(&self, id: u64, definition: bool) -> Option<JobAnswer> {
        if !definition {
            return self.driver.live.job_figures(id).map(|view| JobAnswer { view, plan: None });
        }
        let view = self.driver.live.job(id)?;
        let job_file = &view.definition.as_ref()?.job_file;
        let mut plans = self.plans.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if plans.len() >= PLANS_KEPT && !plans.contains_key(&id) {
            plans.clear();
        }
        let plan = plans.entry(id).or_insert_with(|| self.front.explain(job_file).unwrap_or_default()).clone();
        Some(JobAnswer { view, plan: Some(plan).filter(|plan| !plan.is_empty()) })
    }
}

pub async fn job(State(console): State<Console>, Path(id): Path<u64>) -> Response {
    match console.job_answer(id, true) {
        Some(answer) => ok(&answer),
        None => unknown_job(id),
    }
}

#[derive(Deserialize)]
pub struct After {
    after: Option<u64>,
}

pub async fn batches(State(console): State<Console>, Path(id): Path<u64>, Query(after): Query<After>) -> Response {
    match console.driver.live.batches(id, after.after) {
        Some(batches) => ok(&serde_json::json!({ "batches": batches })),
        None => unknown_job(id),
    }
}

pub async fn groups(State(console): State<Console>, Path(id): Path<u64>, Query(after): Query<After>) -> Response {
    match console.driver.live.groups(id, after.after) {
        Some(groups) => ok(&serde_json::json!({ "groups": groups })),
        None => unknown_job(id),
    }
}

/// The model of the recent batches, flattened for a reader who wants the headline figures.
#[derive(Serialize)]
pub struct AnalysisAnswer<'a> {
    pub batches: usize,
    pub bottleneck: Bottleneck,
    pub measured_batch_ms: f64,
    pub modelled_batch_ms: f64,
    pub interval_ms: f64,
    pub breakdown: &'a [PartDistribution],
    pub utilization: &'a [ResourceUse],
    pub model: &'a JobModel,
}

impl<'a> AnalysisAnswer<'a> {
    pub fn of(glance: &'a Glance) -> Self {
        let model = &glance.model;
        AnalysisAnswer {
            batches: glance.batches,
            bottleneck: model.bottleneck,
            measured_batch_ms: model.measured_us / 1000.0,
            modelled_batch_ms: model.modelled_us / 1000.0,
            interval_ms: model.interval_us / 1000.0,
            breakdown: &glance.breakdown,
            utilization: &glance.utilization,
            model,
        }
    }
}

pub async fn analysis(State(console): State<Console>, Path(id): Path<u64>) -> Response {
    match first_glance(&console, id).await {
        Ok(glance) => ok(&AnalysisAnswer::of(&glance)),
        Err(response) => response,
    }
}

impl Console {
    /// The model of the job's recent batches, if the driver has handed their samples over.
    pub fn glance(&self, id: u64) -> Option<Option<Arc<Glance>>> {
        let recent = self.driver.live.recent_samples(id)?;
        Some(recent.map(|recent| self.models.glance_of(id, &recent)))
    }
}

/// The job's model, waiting a moment for the first samples when nobody asked before.
async fn first_glance(console: &Console, id: u64) -> Result<Arc<Glance>, Response> {
    let live = &console.driver.live;
    let waited_from = tokio::time::Instant::now();
    loop {
        live.looking(now_ms());
        match console.glance(id) {
            None => return Err(unknown_job(id)),
            Some(Some(glance)) => return Ok(glance),
            Some(None) if waited_from.elapsed() < FIRST_MODEL_WAIT => tokio::time::sleep(FIRST_MODEL_POLL).await,
            Some(None) => {
                return Err(failure(
                    StatusCode::NOT_FOUND,
                    format!("no model of job {id} yet: it needs a finished batch's samples while the job runs"),
                ))
            }
        }
    }
}

#[derive(Deserialize)]
pub struct WhatIf {
    change: Option<String>,
}

pub async fn whatif(State(console): State<Console>, Path(id): Path<u64>, Query(query): Query<WhatIf>) -> Response {
    let Some(change) = query.change.filter(|change| !change.trim().is_empty()) else {
        return failure(
            StatusCode::BAD_REQUEST,
            "say what changes: ?change=workers=2 (cores=K, workers=K, net=K, disk=K, decoded, combine=on|off, interval=MS; \
             several comma-separated)",
        );
    };
    let scenarios = match parse_scenarios(&change) {
        Ok(scenarios) => scenarios,
        Err(error) => return failure(StatusCode::BAD_REQUEST, error.to_string()),
    };
    if let Err(response) = first_glance(&console, id).await {
        return response;
    }
    let (Some(Some(recent)), Some(Some(definition))) =
        (console.driver.live.recent_samples(id), console.driver.live.job(id).map(|view| view.definition))
    else {
        return unknown_job(id);
    };
    let params = console.front.whatif_params(&definition.job_file, &recent);
    ok(&predict(&recent, &params, &scenarios))
}
