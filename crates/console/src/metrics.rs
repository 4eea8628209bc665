//! `GET /metrics`: the cluster and the current job (running, or the last that ended) in
//! Prometheus' text format, read from the live view at each scrape, so the figures are the
//! API's. Labels stay bounded: one job, the workers, three resources.

use std::fmt::Error;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use sleet_clarity::Glance;
use sleet_driver::live::{ClusterView, JobState, JobView};
use sleet_wire::clock::now_ms;

use crate::reply::failure;
use crate::Console;

type Labels = Vec<(&'static str, String)>;

/// What one scrape reports, read at once.
#[derive(Debug)]
struct Scrape {
    cluster: ClusterView,
    job: Option<JobView>,
    glance: Option<std::sync::Arc<Glance>>,
}

pub async fn scrape(State(console): State<Console>) -> Response {
    let live = &console.driver.live;
    live.looking(now_ms());
    let id = live.current_job();
    let scrape = Scrape {
        cluster: live.cluster(),
        job: id.and_then(|id| live.job_figures(id)),
        glance: id.and_then(|id| console.glance(id)).flatten(),
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut text = String::new();
    match prometheus_client::encoding::prometheus_text::encode(&mut text, &registry) {
        Ok(()) => {
            ([(header::CONTENT_TYPE, prometheus_client::encoding::prometheus_text::CONTENT_TYPE)], text).into_response()
        }
        Err(_) => failure(StatusCode::INTERNAL_SERVER_ERROR, "the metrics did not encode"),
    }
}

/// CPU seconds of the thread this runs on: the console's own, since it serves on a thread of
/// its own (`serve`), so what watching a job costs its driver is measured, not guessed.
fn this_thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the call writes one timespec through a pointer to a live local.
    match unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } {
        0 => now.tv_sec as f64 + now.tv_nsec as f64 / 1e9,
        _ => 0.0,
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), Error> {
        let console_cpu = ConstCounter::new(this_thread_cpu_seconds());
        let family = encoder.encode_descriptor(
            "sleet_console_cpu_seconds",
            "CPU time of the thread serving the API, the dashboard and these metrics.",
            None,
            console_cpu.metric_type(),
        )?;
        console_cpu.encode(family)?;
        let workers = &self.cluster.workers;
        gauge(&mut encoder, "sleet_workers", "Workers registered with the driver.", &[(vec![], workers.len() as f64)])?;
        let per_worker = |value: &dyn Fn(&sleet_driver::live::WorkerView) -> Option<f64>| -> Vec<(Labels, f64)> {
            workers
                .iter()
                .filter_map(|worker| value(worker).map(|v| (vec![("worker", worker.id.to_string())], v)))
                .collect()
        };
        gauge(
            &mut encoder,
            "sleet_worker_cores",
            "Cores a worker runs tasks on.",
            &per_worker(&|worker| Some(worker.cores as f64)),
        )?;
        gauge(
            &mut encoder,
            "sleet_worker_heartbeat_age_seconds",
            "Time since the driver last heard a worker's heartbeat.",
            &per_worker(&|worker| worker.heartbeat_age_ms.map(|ms| ms as f64 / 1000.0)),
        )?;
        if let Some(glance) = &self.glance {
            let per_resource = |value: &dyn Fn(&sleet_clarity::ResourceUse) -> f64| -> Vec<(Labels, f64)> {
                glance
                    .utilization
                    .iter()
                    .map(|used| {
                        let labels =
                            vec![("worker", used.worker.to_string()), ("resource", used.resource.name().to_string())];
                        (labels, value(used))
                    })
                    .collect()
            };
            gauge(
                &mut encoder,
                "sleet_worker_utilization_ratio",
                "Share of the time a worker's resource was busy over the newest batches modelled (at most 100, of the last ten seconds).",
                &per_resource(&|used| used.utilization_mean),
            )?;
            gauge(
                &mut encoder,
                "sleet_worker_queue_length",
                "Monotasks waiting for a worker's resource, on average over the newest batches modelled.",
                &per_resource(&|used| used.queue_len_mean),
            )?;
        }
        let Some(job) = &self.job else { return Ok(()) };
        let labels = || vec![("job", job.brief.id.to_string())];
        let one = |value: f64| vec![(labels(), value)];
        let running = if job.brief.state == JobState::Running { 1.0 } else { 0.0 };
        gauge(&mut encoder, "sleet_job_running", "1 while the job runs, 0 once it ended.", &one(running))?;
        let progress = job.progress.clone().unwrap_or_default();
        counter(&mut encoder, "sleet_job_batches", "Batches the job completed.", labels(), progress.batches_done)?;
        counter(&mut encoder, "sleet_job_events", "Events the job read.", labels(), progress.events_in)?;
        counter(
            &mut encoder,
            "sleet_job_dead_letters",
            "Records set aside as undecodable.",
            labels(),
            progress.dead_letters,
        )?;
        counter(
            &mut encoder,
            "sleet_job_late_rows_dropped",
            "Rows dropped behind a watermark or lateness horizon.",
            labels(),
            progress.late_rows_dropped,
        )?;
        counter(
            &mut encoder,
            "sleet_job_recoveries",
            "Workers lost and recovered from.",
            labels(),
            job.recoveries.len() as u64,
        )?;
        counter(&mut encoder, "sleet_job_checkpoints", "Checkpoints recorded.", labels(), job.checkpoints.taken)?;
        gauge(
            &mut encoder,
            "sleet_job_events_per_second",
            "Events of the batches that finished in the last second.",
            &one(progress.events_per_s),
        )?;
        let quantiles: Vec<(Labels, f64)> =
            [("0.5", progress.window_latency_ms_p50), ("0.99", progress.window_latency_ms_p99)]
                .into_iter()
                .filter_map(|(quantile, ms)| {
                    ms.map(|ms| {
                        (vec![("job", job.brief.id.to_string()), ("quantile", quantile.to_string())], ms / 1000.0)
                    })
                })
                .collect();
        gauge(
            &mut encoder,
            "sleet_job_window_latency_seconds",
            "Window latency over the windows closed in the last ten seconds.",
            &quantiles,
        )?;
        gauge(
            &mut encoder,
            "sleet_job_lag_seconds",
            "How far the last finished batch ended behind its scheduled end.",
            &one(progress.lag_ms as f64 / 1000.0),
        )?;
        if let Some(size) = progress.group_size {
            gauge(
                &mut encoder,
                "sleet_job_group_size",
                "Batches per group under group scheduling.",
                &one(size as f64),
            )?;
        }
        if let Some(bound) = progress.read_bound {
            gauge(
                &mut encoder,
                "sleet_job_read_bound_records",
                "Backpressure: records each source partition may read per batch while the job is held back.",
                &one(bound as f64),
            )?;
        }
        if let Some(overhead) = progress.overhead {
            gauge(
                &mut encoder,
                "sleet_job_coordination_overhead_ratio",
                "Coordination over coordination plus execution, per group.",
                &one(overhead),
            )?;
        }
        Ok(())
    }
}

/// One gauge family; nothing is written for a family without values.
fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, values: &[(Labels, f64)]) -> Result<(), Error> {
    if values.is_empty() {
        return Ok(());
    }
    let metric_type = ConstGauge::new(0.0).metric_type();
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, value) in values {
        ConstGauge::new(*value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

/// One counter; the format adds `_total` to its name.
fn counter(encoder: &mut DescriptorEncoder, name: &str, help: &str, labels: Labels, value: u64) -> Result<(), Error> {
    let counter = ConstCounter::new(value);
    let mut family = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
    counter.encode(family.encode_family(&labels)?)
}
