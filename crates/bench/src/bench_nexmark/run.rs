//! One Nexmark run: a local cluster of `sleet` processes runs one query's script on the
//! built-in generator at one rate; the run is measured (throughput, CPU from /proc, batch and
//! end-to-end latency, lag) and its sink judged against the ground truth.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use sleet_clarity::Distribution;
use sleet_cli::client::{run_job, status_line};
use sleet_cli::cluster::LocalCluster;
use sleet_wire::clock::BatchClock;

use sleet_workloads::nexmark_exact::{check_sink, Exactness, Query};

use super::script::{job_of_script, Overrides};
use crate::batch_figures::{judge, lag_figures, measured_batches, processing_ms, sustained};
use crate::cpu_time::total_cpu_seconds;
use crate::ysb_run::GiveUp;

/// Workers register within a second or two of starting; batch 0 starts after that.
const START_DELAY_MS: i64 = 2_000;

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub query: Query,
    pub script: PathBuf,
    pub rate: u64,
    pub partitions: u32,
    pub workers: u32,
    pub cores_per_worker: u32,
    pub batch_interval_ms: u64,
    pub duration: Duration,
    pub warmup: Duration,
    /// Write the results to files and compare them with the ground truth; otherwise the
    /// script's own sink (the blackhole) stays and nothing is checked.
    pub check: bool,
    /// Stop the run once its lag passes this: a search's probe that cannot keep up.
    pub give_up_lag_ms: Option<i64>,
}

impl RunConfig {
    fn json(&self) -> serde_json::Value {
        json!({
            "query": self.query.name(),
            "script": self.script.display().to_string(),
            "source": "nexmark generator (built in), the tables the script reads",
            "rate": self.rate,
            "partitions": self.partitions,
            "workers": self.workers,
            "cores_per_worker": self.cores_per_worker,
            "batch_interval_ms": self.batch_interval_ms,
            "duration_ms": self.duration.as_millis() as u64,
            "warmup_ms": self.warmup.as_millis() as u64,
            "sink": if self.check { "files (run directory)" } else { "the script's own" },
        })
    }
}

/// The figures a caller acts on, next to the run's result object.
pub struct RunResult {
    pub json: serde_json::Value,
    pub exactness: Option<Exactness>,
    pub stable: bool,
    pub events_per_s: Option<f64>,
}

impl RunResult {
    /// Kept up and, where checked, exact.
    pub fn sustained(&self) -> bool {
        self.stable && self.exactness.as_ref().is_none_or(|verdict| verdict.exact)
    }
}

/// CPU seconds of the cluster's processes, and what had been processed, at one moment.
#[derive(Debug, Clone, Copy)]
struct CpuMark {
    at: Instant,
    sleet_s: f64,
    workers_s: f64,
    events_in: u64,
}

impl CpuMark {
    fn take(pids: &[u32], worker_pids: &[u32], events_in: u64) -> CpuMark {
        CpuMark {
            at: Instant::now(),
            sleet_s: total_cpu_seconds(pids),
            workers_s: total_cpu_seconds(worker_pids),
            events_in,
        }
    }
}

pub async fn run_once(config: &RunConfig, run_dir: &Path) -> Result<RunResult> {
    let (results_dir, dead_letter_dir) = crate::ysb_run::clear_run_outputs(run_dir)?;
    let script = std::fs::read_to_string(&config.script)
        .with_context(|| format!("reading the {} script {}", config.query.name(), config.script.display()))?;
    eprintln!(
        "bench nexmark {}: {} events/s, {} partitions, {} workers × {} cores, {} ms batches, {} (warm-up {})",
        config.query.name(),
        config.rate,
        config.partitions,
        config.workers,
        config.cores_per_worker,
        config.batch_interval_ms,
        crate::duration_arg::show(config.duration),
        crate::duration_arg::show(config.warmup),
    );
    let cluster = LocalCluster::start_limited(
        config.workers,
        config.cores_per_worker,
        &run_dir.join("logs"),
        &Default::default(),
        Default::default(),
    )?;
    let interval = config.batch_interval_ms as i64;
    let start_ms = (sleet_wire::clock::now_ms() + START_DELAY_MS + interval - 1) / interval * interval;
    let overrides = Overrides {
        rate_per_s: config.rate,
        partitions: config.partitions,
        start_ms,
        duration_ms: config.duration.as_millis() as u64,
        batch_interval_ms: config.batch_interval_ms,
        results_dir: config.check.then(|| results_dir.display().to_string()),
        dead_letter_dir: dead_letter_dir.display().to_string(),
    };
    let (job, spec) = job_of_script(&config.script, &script, &overrides)?;
    let (pids, worker_pids) = (cluster.pids(), cluster.worker_pids());
    let started = Instant::now();
    let before = CpuMark::take(&pids, &worker_pids, 0);
    let mut warm: Option<CpuMark> = None;
    let give_up = GiveUp::new(config.give_up_lag_ms);
    let warm_at = Duration::from_millis(START_DELAY_MS as u64) + config.warmup;
    let summary = run_job(
        &cluster.driver_address,
        job,
        |progress| {
            eprintln!("{}", status_line(started.elapsed(), progress));
            if warm.is_none() && started.elapsed() >= warm_at {
                warm = Some(CpuMark::take(&pids, &worker_pids, progress.events_in));
            }
            give_up.observe(progress.lag_ms);
        },
        give_up.stop(),
    )
    .await;
    let summary_events = summary.as_ref().map_or(0, |summary| summary.events_in);
    let after = CpuMark::take(&pids, &worker_pids, summary_events);
    cluster.shutdown().await;
    crate::interrupt::check()?;
    let summary = summary?;
    let stopped_early = give_up.fired();

    let clock = BatchClock::new(summary.start_ms, interval);
    let batches_expected = clock.batches_in(config.duration.as_millis() as u64);
    let batches_run = summary.batches_before_restart + summary.batches_total;
    let end_ms = clock.range_ms(batches_run).0;
    let warm_ms = summary.start_ms + config.warmup.as_millis() as i64;
    let measured = measured_batches(&summary.batches, warm_ms, summary.start_ms + config.duration.as_millis() as i64);
    let throughput = sustained(&measured);
    let lag = lag_figures(&measured);
    let stability = judge(&lag, config.batch_interval_ms, batches_run >= batches_expected && !stopped_early);
    let processing = processing_ms(&measured);
    let end_to_end: Vec<f64> = measured
        .iter()
        .map(|batch| (batch.results_visible_at_us as f64 / 1000.0 - batch.scheduled_end_ms as f64).max(0.0))
        .collect();
    let events_per_s = throughput.as_ref().map(|throughput| throughput.events_per_s);

    // From the end of the warm-up when the run got that far, else over the whole run.
    let from = warm.unwrap_or(before);
    let span_s = after.at.duration_since(from.at).as_secs_f64().max(1e-9);
    let sleet_cpu_s = after.sleet_s - from.sleet_s;
    let workers_cpu_s = after.workers_s - from.workers_s;
    let events_counted = after.events_in.saturating_sub(from.events_in);
    let cores_used = workers_cpu_s / span_s;
    let cpu_us_per_event = (events_counted > 0).then(|| sleet_cpu_s * 1e6 / events_counted as f64);
    let events_per_s_per_core = events_per_s.filter(|_| cores_used > 0.0).map(|rate| rate / cores_used);

    let exactness = if config.check && !stopped_early {
        let verdict = check_sink(config.query, &spec, summary.start_ms, end_ms, &results_dir)?;
        for mismatch in &verdict.first_mismatches {
            eprintln!("  mismatch: {mismatch}");
        }
        Some(verdict)
    } else {
        None
    };
    let latency = Distribution::of(&end_to_end);
    let json = json!({
        "benchmark": "nexmark",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "query": config.query.name(),
        "config": config.json(),
        "start_ms": summary.start_ms,
        "end_ms": end_ms,
        "duration_s": (end_ms - summary.start_ms) as f64 / 1000.0,
        "warmup_s": config.warmup.as_secs_f64(),
        "events_in": summary.events_in,
        "events_per_s": events_per_s,
        "offered_events_per_s": config.rate,
        "throughput": {
            "definition": "events of the batches scheduled after the warm-up, over the wall time from the first of them launching to the last finishing",
            "measured": throughput,
        },
        "events_per_s_per_core": events_per_s_per_core,
        "cores_used": cores_used,
        "cores_definition": "the workers' CPU seconds (user + system, /proc) over the wall time from the end of the warm-up to the job's end",
        "cpu_us_per_event": cpu_us_per_event,
        "cpu_seconds": { "driver_and_workers": sleet_cpu_s, "workers": workers_cpu_s, "events": events_counted, "wall_s": span_s },
        "cpu_definition": "CPU seconds (user + system, /proc) of the driver and the workers from the end of the warm-up to the job's end, per event read in that time",
        "stable": stability.stable,
        "sustained": stability.stable && exactness.as_ref().is_none_or(|verdict| verdict.exact),
        "stability": stability,
        "lag_ms": lag,
        "latency_ms": latency,
        "latency_definition": "per batch scheduled after the warm-up: when its last sink output became visible, minus the batch's scheduled end (its last event's due time)",
        "batch_processing_ms": Distribution::of(&processing),
        "exact": exactness.as_ref().map(|verdict| verdict.exact),
        "correct": exactness.as_ref().map(|verdict| verdict.exact),
        "mismatches": exactness.as_ref().map(|verdict| verdict.missing + verdict.unexpected),
        "exactness": exactness,
        "dead_letters": summary.dead_letters,
        "sink_rows": summary.sink_rows,
        "stopped_early": stopped_early,
        "batches": batches_run,
        "batches_expected": batches_expected,
    });
    eprintln!(
        "  {}: {} events/s processed (offered {}), {} per core, {} µs CPU/event, latency p99 {} ms, {}, exact {}",
        config.query.name(),
        events_per_s.map_or("-".into(), |rate| format!("{rate:.0}")),
        config.rate,
        events_per_s_per_core.map_or("-".into(), |rate| format!("{rate:.0}")),
        cpu_us_per_event.map_or("-".into(), |us| format!("{us:.2}")),
        latency.p99.map_or("-".into(), |p99| format!("{p99:.1}")),
        if stability.stable { "stable".to_string() } else { format!("not stable ({})", stability.reasons.join("; ")) },
        exactness.as_ref().map_or("not checked".into(), |verdict| verdict.exact.to_string()),
    );
    Ok(RunResult { json, exactness, stable: stability.stable, events_per_s })
}
