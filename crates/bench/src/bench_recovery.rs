//! `sleet-bench recovery` (`benchmarks/README.md`): runs ysb on a local cluster, kills or stops one
//! worker mid-run, and reports how long the driver took to notice, how high latency rose, how long
//! until it was back near its level before the failure, and whether the results still equal the
//! ground truth.
//!
//! Latency here is per batch, from a batch's close (its scheduled end) to its results being
//! visible in the sink: ysb's 10 s windows are too coarse to show a recovery that takes a
//! second. Every figure comes from the job summary the driver returns; the benchmark adds
//! only the time it sent the signal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_clarity::{percentile, Distribution};
use sleet_plan::SinkSpec;
use sleet_wire::clock::{now_ms, BatchClock};
use sleet_wire::JobSummary;

use crate::batch_figures::sustained;
use crate::client::run_job_with_status;
use crate::cluster::LocalCluster;
use crate::duration_arg::show;
use crate::interrupt::Interrupted;
use crate::output::write_output;
use crate::plot::{render_svg_with_markers, LinePlot, Marker, Scale, Series};
use crate::ysb_job::{ysb_job, ysb_source_spec, YsbFlags};
use crate::ysb_report::{evaluate, RunPlan};
use crate::ysb_run::clear_run_outputs;

#[derive(Debug, Clone, clap::Args)]
pub struct BenchRecoveryArgs {
    /// Rate, batch interval, seed and scheduler.
    #[command(flatten)]
    pub ysb: YsbFlags,
    /// Worker processes; the second one is signalled, so at least 2.
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    /// Cores each worker computes on (its CPU pool size).
    #[arg(long, default_value_t = 1)]
    pub cores_per_worker: u32,
    /// Source and reduce partitions [default: workers × (workers − 1) × cores per worker, 12
    /// for 4 workers]: a multiple of both the workers and the survivors, so that the
    /// survivors take equal shares of the lost worker's partitions and latency after the
    /// recovery is what it was before. With workers × cores partitions one survivor takes
    /// the lost one's and does twice the others' work, and latency then settles above its
    /// level before the failure (measured, see docs/experiments/2026-11-26-recovery-reuse.md).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Length of each run, in batches' time; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "30s")]
    pub duration: Duration,
    /// When the worker is signalled, counted from the start of batch 0; a bare number is in
    /// seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "10s")]
    pub kill_at: Duration,
    /// Time at the start left out of the pre-failure latency (it must end before
    /// --kill-at); a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "5s")]
    pub warmup: Duration,
    /// KILL ends the worker (its connections close at once); STOP freezes it, so only the
    /// missing heartbeats give it away.
    #[arg(long, value_enum, ignore_case = true, default_value = "KILL")]
    pub signal: FailureSignal,
    /// Runs, one fresh cluster each, one after the other; the medians are over them.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    #[command(flatten)]
    pub output: crate::output::BenchOutputArgs,
    /// Write an SVG plot of the first run here: latency per batch against time from the
    /// failure, with the failure, its detection and the recovery marked.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailureSignal {
    #[value(name = "KILL")]
    Kill,
    #[value(name = "STOP")]
    Stop,
}

impl FailureSignal {
    fn number(self) -> libc::c_int {
        match self {
            FailureSignal::Kill => libc::SIGKILL,
            FailureSignal::Stop => libc::SIGSTOP,
        }
    }

    fn name(self) -> &'static str {
        match self {
            FailureSignal::Kill => "KILL",
            FailureSignal::Stop => "STOP",
        }
    }
}

/// Batch 0 starts this long after submission, so the workers have registered and the job
/// runs on the clock from its first batch rather than replaying a backlog.
const START_DELAY_MS: i64 = 1_500;
/// Latency counts as recovered once it is at most this multiple of its pre-failure median (the
/// criterion `benchmarks/README.md` states for `bench recovery`).
const RECOVERED_FACTOR: f64 = 1.2;
/// The recovered median is taken over at least this many batches and this much time, so one
/// lucky batch in a backlog does not count as a recovery.
const RECOVERY_WINDOW_BATCHES_MIN: usize = 5;
const RECOVERY_WINDOW_MS: u64 = 500;

/// The worker signalled (an index into the cluster's workers). Any one would do; a fixed
/// choice keeps runs comparable.
const VICTIM_INDEX: usize = 1;

/// Runs the benchmark; `Ok(false)` means some run's results did not match the ground truth.
pub async fn run(args: BenchRecoveryArgs) -> Result<bool> {
    check_args(&args)?;
    let run_dir = args.output.prepare("bench-recovery")?;
    let outcome = run_all(&args, &run_dir.path).await;
    let interrupted = outcome.as_ref().is_err_and(|error| error.is::<Interrupted>());
    run_dir.finish(interrupted || matches!(outcome, Ok(true)));
    outcome
}

fn check_args(args: &BenchRecoveryArgs) -> Result<()> {
    anyhow::ensure!(args.workers >= 2, "--workers must be at least 2: a lost worker needs a survivor to recover on");
    anyhow::ensure!(args.cores_per_worker > 0, "--cores-per-worker must be positive");
    anyhow::ensure!(args.partitions != Some(0), "--partitions must be positive");
    anyhow::ensure!(args.ysb.rate > 0, "--rate must be positive");
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    args.ysb.scheduling.check()?;
    anyhow::ensure!(
        args.warmup < args.kill_at,
        "--kill-at ({}) must come after --warmup ({}): the latency before the failure is measured in between",
        show(args.kill_at),
        show(args.warmup)
    );
    anyhow::ensure!(
        args.kill_at < args.duration,
        "--kill-at ({}) must come before the end of --duration ({})",
        show(args.kill_at),
        show(args.duration)
    );
    Ok(())
}

async fn run_all(args: &BenchRecoveryArgs, run_dir: &Path) -> Result<bool> {
    let mut runs = Vec::new();
    for index in 1..=args.runs {
        let run = run_once(args, index, &run_dir.join(format!("run-{index}"))).await?;
        print_run(&run);
        runs.push(run);
    }
    let medians = medians(&runs);
    print_medians(&medians, runs.len());
    let correct = runs.iter().all(|run| run.correct == Some(true));
    if let Some(path) = &args.plot {
        write_output(path, &(render_svg_with_markers(&plot_of(&runs[0]), &markers_of(&runs[0])) + "\n"))?;
    }
    if let Some(path) = &args.output.json {
        let report = json!({
            "benchmark": "recovery",
            "engine": "sleet",
            "version": env!("CARGO_PKG_VERSION"),
            "config": config_json(args),
            "duration_s": args.duration.as_secs_f64(),
            "warmup_s": args.warmup.as_secs_f64(),
            "latency_definition": "per batch: from a batch's scheduled end (its close) to its results being visible \
                in the sink; ysb's 10 s windows are too coarse to show a recovery",
            "recovered_definition": format!(
                "the first batch b closing after the signal such that the median latency of batches [b, b+W) is at \
                 most {RECOVERED_FACTOR} × the median latency of the batches that closed between the warm-up and \
                 the signal (W = max({RECOVERY_WINDOW_BATCHES_MIN}, {RECOVERY_WINDOW_MS} ms / batch interval)); \
                 reported as b's scheduled end minus the detection, 0 if latency was already back then"
            ),
            "events_per_s_definition": "events of every batch over the wall time from the first batch launching \
                to the last finishing",
            "correct": correct,
            "mismatches": runs.iter().filter_map(|run| run.mismatches).sum::<u64>(),
            "runs": runs.iter().map(RunResult::to_json).collect::<Vec<_>>(),
            "median": medians,
            "samples": runs.len(),
        });
        write_output(path, &(serde_json::to_string_pretty(&report)? + "\n"))?;
    }
    Ok(correct)
}

fn config_json(args: &BenchRecoveryArgs) -> serde_json::Value {
    json!({
        "workers": args.workers,
        "cores_per_worker": args.cores_per_worker,
        "partitions": partitions(args),
        "batch_interval_ms": args.ysb.batch_interval_ms(),
        "scheduler": args.ysb.scheduling.scheduler.to_string(),
        "group_size": args.ysb.scheduling.group_size_json(),
        "latency_target": args.ysb.scheduling.latency_target(),
        "overhead_bounds": args.ysb.scheduling.overhead_bounds_json(),
        "rate": args.ysb.rate,
        "seed": args.ysb.seed,
        "kill_at_s": args.kill_at.as_secs_f64(),
        "signal": args.signal.name(),
        "victim": format!("worker-{}", VICTIM_INDEX + 1),
        "runs": args.runs,
        "checkpoint_interval_ms": args.ysb.checkpoint_interval_ms(),
        "recovery_window_batches": recovery_window_batches(args.ysb.batch_interval_ms()),
    })
}

fn partitions(args: &BenchRecoveryArgs) -> u32 {
    args.partitions.unwrap_or(args.workers * (args.workers - 1) * args.cores_per_worker)
}

/// W: how many batches the recovered median is taken over.
pub fn recovery_window_batches(batch_interval_ms: u64) -> usize {
    RECOVERY_WINDOW_BATCHES_MIN.max(RECOVERY_WINDOW_MS.div_ceil(batch_interval_ms.max(1)) as usize)
}

/// One run as measured: what the driver reported, and when the signal went out.
struct RunResult {
    index: u32,
    signal: FailureSignal,
    victim_pid: u32,
    start_ms: i64,
    /// When the signal was sent, ms since the epoch.
    signalled_at_ms: i64,
    summary: JobSummary,
    points: Vec<LatencyPoint>,
    figures: RecoveryFigures,
    correct: Option<bool>,
    mismatches: Option<u64>,
    events_per_s: Option<f64>,
}

impl RunResult {
    fn to_json(&self) -> serde_json::Value {
        let recovery = self.summary.recoveries.first();
        let figures = &self.figures;
        json!({
            "run": self.index,
            "signal": self.signal.name(),
            "victim_pid": self.victim_pid,
            "start_ms": self.start_ms,
            "signalled_at_ms": self.signalled_at_ms,
            "signalled_at_s": (self.signalled_at_ms - self.start_ms) as f64 / 1000.0,
            "recoveries": self.summary.recoveries.len(),
            "lost_worker": recovery.map(|recovery| recovery.lost_worker),
            "reason": recovery.map(|recovery| recovery.reason.clone()),
            "detected_at_ms": recovery.map(|recovery| recovery.detected_at_ms),
            "detection_ms": figures.detection_ms,
            "checkpoint_batch": recovery.and_then(|recovery| recovery.checkpoint_batch),
            "resume_batch": recovery.map(|recovery| recovery.resume_batch),
            "rerun_batches": recovery.map(|recovery| recovery.rerun_batches),
            "reused_map_tasks": recovery.map(|recovery| recovery.reused_map_tasks),
            "moves": recovery.map(|recovery| recovery.moves.clone()),
            "batches_rerun": self.summary.batches_rerun,
            "pre_failure_latency_ms_p50": figures.pre_failure_latency_ms_p50,
            "pre_failure_batches": figures.pre_failure_batches,
            "recovered_ms_after_detection": figures.recovered_ms_after_detection,
            "peak_latency_ms": figures.peak_latency_ms,
            "latency_ms": Distribution::of(&self.points.iter().map(|point| point.latency_ms).collect::<Vec<_>>()),
            "correct": self.correct,
            "mismatches": self.mismatches,
            "events_in": self.summary.events_in,
            "events_per_s": self.events_per_s,
            "batches": self.summary.batches_total,
            "latency_series": {
                "offset_ms": self.points.iter().map(|point| point.scheduled_end_ms - self.signalled_at_ms).collect::<Vec<_>>(),
                "latency_ms": self.points.iter().map(|point| point.latency_ms).collect::<Vec<_>>(),
            },
        })
    }
}

/// Starts a cluster, runs ysb, signals one worker at --kill-at, stops the cluster and judges
/// the run.
async fn run_once(args: &BenchRecoveryArgs, index: u32, dir: &Path) -> Result<RunResult> {
    let (results_dir, dead_letter_dir) = clear_run_outputs(dir)?;
    let batch_interval_ms = args.ysb.batch_interval_ms();
    let sink = SinkSpec::JsonLines { dir: results_dir.display().to_string() };
    // Batch 0's start is fixed here, so the signal can be timed against it.
    let start_ms = BatchClock::aligned_after(now_ms() + START_DELAY_MS, batch_interval_ms as i64).start_ms;
    let options = crate::ysb_job::YsbOptions {
        dead_letter_dir: Some(dead_letter_dir.display().to_string()),
        start_ms: Some(start_ms),
        ..args.ysb.options(partitions(args), Some(args.duration), sink)
    };
    let job = ysb_job(&options)?;
    let spec = ysb_source_spec(&options);

    eprintln!(
        "bench recovery run {index}/{}: {} events/s, {} workers × {} cores, {} ms batches, {}, SIG{} worker-{} at {}",
        args.runs,
        args.ysb.rate,
        args.workers,
        args.cores_per_worker,
        batch_interval_ms,
        args.ysb.scheduling.describe(),
        args.signal.name(),
        VICTIM_INDEX + 1,
        show(args.kill_at)
    );
    let cluster = LocalCluster::start(args.workers, args.cores_per_worker, &dir.join("logs"))?;
    let victim_pid = cluster.worker_pids()[VICTIM_INDEX];
    let signal_at_ms = start_ms + args.kill_at.as_millis() as i64;
    let signaller = tokio::spawn(signal_at(victim_pid, args.signal, signal_at_ms));
    let summary = run_job_with_status(&cluster.driver_address, job).await;
    // The victim's PID stays ours until the cluster reaps it in `shutdown`, so the signal can
    // never reach a process that reused it; stopping the signaller first keeps it that way.
    signaller.abort();
    let signalled = signaller.await;
    cluster.shutdown().await;
    crate::interrupt::check()?;
    let summary = summary?;
    let signalled_at_ms = match signalled {
        Ok(result) => result?,
        Err(_) => anyhow::bail!(
            "run {index}: the job ended before --kill-at ({}), so no worker was signalled",
            show(args.kill_at)
        ),
    };

    let plan = RunPlan {
        spec: &spec,
        config: config_json(args),
        rate: args.ysb.rate,
        batch_interval_ms,
        duration_ms: args.duration.as_millis() as u64,
        warmup_ms: args.warmup.as_millis() as u64,
        stopped_early: false,
        input: None,
        sink_rows: None,
        host: None,
        sink_sightings: None,
    };
    let report = evaluate(&plan, &summary, &results_dir)?;
    let points = latency_points(&summary);
    let timeline = Timeline {
        signalled_at_ms,
        detected_at_ms: summary.recoveries.first().map(|recovery| recovery.detected_at_ms),
        warm_ms: summary.start_ms + args.warmup.as_millis() as i64,
        window_batches: recovery_window_batches(batch_interval_ms),
    };
    let figures = recovery_figures(&points, &timeline);
    let all: Vec<&sleet_wire::BatchRecord> = summary.batches.iter().collect();
    Ok(RunResult {
        index,
        signal: args.signal,
        victim_pid,
        start_ms: summary.start_ms,
        signalled_at_ms,
        events_per_s: sustained(&all).map(|throughput| throughput.events_per_s),
        correct: report.correct,
        mismatches: report.json["mismatches"].as_u64(),
        summary,
        points,
        figures,
    })
}

/// Sends `signal` to `pid` at `at_ms` (ms since the epoch) and returns when it did.
async fn signal_at(pid: u32, signal: FailureSignal, at_ms: i64) -> Result<i64> {
    crate::cluster::sleep_until_ms(at_ms).await;
    crate::cluster::signal_worker(pid, signal.number())
        .with_context(|| format!("sending SIG{} to a worker", signal.name()))?;
    let signalled_at_ms = now_ms();
    eprintln!("  sent SIG{} to worker process {pid}", signal.name());
    Ok(signalled_at_ms)
}

/// One batch on the latency series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyPoint {
    pub scheduled_end_ms: i64,
    pub latency_ms: f64,
}

/// Each batch's latency, in batch order: its first completion, which for a batch caught by
/// the failure is the one after the recovery.
fn latency_points(summary: &JobSummary) -> Vec<LatencyPoint> {
    let mut batches: Vec<_> = summary.batches.iter().collect();
    batches.sort_by_key(|batch| batch.batch);
    batches
        .iter()
        .map(|batch| LatencyPoint {
            scheduled_end_ms: batch.scheduled_end_ms,
            latency_ms: batch.results_visible_at_us as f64 / 1000.0 - batch.scheduled_end_ms as f64,
        })
        .collect()
}

/// The moments a run's figures are measured against, ms since the epoch.
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    pub signalled_at_ms: i64,
    /// `None` when the driver recorded no recovery.
    pub detected_at_ms: Option<i64>,
    /// End of the warm-up.
    pub warm_ms: i64,
    pub window_batches: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecoveryFigures {
    pub detection_ms: Option<i64>,
    pub pre_failure_latency_ms_p50: Option<f64>,
    pub pre_failure_batches: usize,
    /// `None` when latency never came back, or no full window of batches was left to show it.
    pub recovered_ms_after_detection: Option<i64>,
    pub peak_latency_ms: Option<f64>,
}

/// The recovery figures of one run from its latency series (in batch order).
pub fn recovery_figures(points: &[LatencyPoint], timeline: &Timeline) -> RecoveryFigures {
    let before: Vec<f64> = points
        .iter()
        .filter(|point| point.scheduled_end_ms > timeline.warm_ms && point.scheduled_end_ms <= timeline.signalled_at_ms)
        .map(|point| point.latency_ms)
        .collect();
    let pre_failure = percentile(&before, 0.5);
    // A batch that closed before the signal but was still running suffers the failure too:
    // the peak is over every batch whose results appeared after the signal.
    let peak = points
        .iter()
        .filter(|point| point.scheduled_end_ms as f64 + point.latency_ms > timeline.signalled_at_ms as f64)
        .map(|point| point.latency_ms)
        .fold(None, |peak: Option<f64>, latency| Some(peak.map_or(latency, |peak| peak.max(latency))));
    let recovered = match (pre_failure, timeline.detected_at_ms) {
        (Some(pre_failure), Some(detected_at_ms)) => {
            let first_after = points.partition_point(|point| point.scheduled_end_ms <= timeline.signalled_at_ms);
            let window = timeline.window_batches.max(1);
            (first_after..points.len().saturating_sub(window - 1))
                .find(|&start| {
                    let latencies: Vec<f64> =
                        points[start..start + window].iter().map(|point| point.latency_ms).collect();
                    percentile(&latencies, 0.5).is_some_and(|median| median <= RECOVERED_FACTOR * pre_failure)
                })
                .map(|start| (points[start].scheduled_end_ms - detected_at_ms).max(0))
        }
        _ => None,
    };
    RecoveryFigures {
        detection_ms: timeline.detected_at_ms.map(|detected_at_ms| detected_at_ms - timeline.signalled_at_ms),
        pre_failure_latency_ms_p50: pre_failure,
        pre_failure_batches: before.len(),
        recovered_ms_after_detection: recovered,
        peak_latency_ms: peak,
    }
}

/// The median of each figure over the runs that have it, and how many do.
fn medians(runs: &[RunResult]) -> serde_json::Value {
    let figure = |value: &dyn Fn(&RunResult) -> Option<f64>| {
        let values: Vec<f64> = runs.iter().filter_map(value).collect();
        json!({ "value": percentile(&values, 0.5), "samples": values.len() })
    };
    json!({
        "detection_ms": figure(&|run| run.figures.detection_ms.map(|ms| ms as f64)),
        "pre_failure_latency_ms_p50": figure(&|run| run.figures.pre_failure_latency_ms_p50),
        "recovered_ms_after_detection": figure(&|run| run.figures.recovered_ms_after_detection.map(|ms| ms as f64)),
        "peak_latency_ms": figure(&|run| run.figures.peak_latency_ms),
        "batches_rerun": figure(&|run| Some(run.summary.batches_rerun as f64)),
        "reused_map_tasks": figure(&|run| run.summary.recoveries.first().map(|recovery| recovery.reused_map_tasks as f64)),
        "events_per_s": figure(&|run| run.events_per_s),
    })
}

fn ms(value: Option<impl Into<f64>>) -> String {
    value.map_or("-".into(), |value| format!("{:.0} ms", value.into()))
}

fn print_run(run: &RunResult) {
    let figures = &run.figures;
    let recovery = run.summary.recoveries.first();
    println!(
        "run {}: SIG{} to worker-{} at {:.1} s; detected {}; resumed at batch {} from checkpoint {} ({} batches rerun, {} source tasks reused from survivors' outputs)",
        run.index,
        run.signal.name(),
        VICTIM_INDEX + 1,
        (run.signalled_at_ms - run.start_ms) as f64 / 1000.0,
        figures.detection_ms.map_or("never".into(), |detection| format!("after {detection} ms")),
        recovery.map_or("-".into(), |recovery| recovery.resume_batch.to_string()),
        recovery.and_then(|recovery| recovery.checkpoint_batch).map_or("none".into(), |batch| batch.to_string()),
        run.summary.batches_rerun,
        recovery.map_or(0, |recovery| recovery.reused_map_tasks)
    );
    println!(
        "  batch latency before {}, peak {}, back within {RECOVERED_FACTOR}× {} after detection; correct {} ({} mismatches); {} events, {} events/s",
        ms(figures.pre_failure_latency_ms_p50),
        ms(figures.peak_latency_ms),
        ms(figures.recovered_ms_after_detection.map(|ms| ms as f64)),
        run.correct.map_or("not checked".into(), |correct| correct.to_string()),
        run.mismatches.map_or("-".into(), |count| count.to_string()),
        run.summary.events_in,
        run.events_per_s.map_or("-".into(), |rate| format!("{rate:.0}"))
    );
    if run.summary.recoveries.len() > 1 {
        println!("  {} recoveries: only the first is measured", run.summary.recoveries.len());
    }
}

fn print_medians(medians: &serde_json::Value, runs: usize) {
    let value = |name: &str| medians[name]["value"].as_f64();
    let samples = |name: &str| medians[name]["samples"].as_u64().unwrap_or(0);
    println!(
        "median of {runs} runs: detection {} ({} samples), recovered {} after detection ({} samples), peak {} ({} samples), before {}",
        ms(value("detection_ms")),
        samples("detection_ms"),
        ms(value("recovered_ms_after_detection")),
        samples("recovered_ms_after_detection"),
        ms(value("peak_latency_ms")),
        samples("peak_latency_ms"),
        ms(value("pre_failure_latency_ms_p50"))
    );
}

fn plot_of(run: &RunResult) -> LinePlot {
    let points = run
        .points
        .iter()
        .map(|point| ((point.scheduled_end_ms - run.signalled_at_ms) as f64 / 1000.0, point.latency_ms));
    LinePlot {
        title: format!("ysb batch latency around a SIG{} of one worker (run {})", run.signal.name(), run.index),
        x_label: "batch close, s from the signal".into(),
        y_label: "batch close to results visible, ms".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        series: vec![Series { label: "latency per batch".into(), points: points.collect() }],
    }
}

fn markers_of(run: &RunResult) -> Vec<Marker> {
    let seconds = |ms: i64| ms as f64 / 1000.0;
    let mut markers = vec![Marker { label: format!("SIG{}", run.signal.name()), x: 0.0 }];
    if let Some(detection_ms) = run.figures.detection_ms {
        markers.push(Marker { label: "detected".into(), x: seconds(detection_ms) });
        if let Some(recovered_ms) = run.figures.recovered_ms_after_detection {
            markers.push(Marker { label: "recovered".into(), x: seconds(detection_ms + recovered_ms) });
        }
    }
    markers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 ms batches closing at 100, 200, …; `latencies[i]` is batch i's latency.
    fn series(latencies: &[f64]) -> Vec<LatencyPoint> {
        latencies
            .iter()
            .enumerate()
            .map(|(index, latency)| LatencyPoint { scheduled_end_ms: (index as i64 + 1) * 100, latency_ms: *latency })
            .collect()
    }

    fn check(latencies: &[f64], timeline: Timeline, expected: RecoveryFigures) {
        assert_eq!(recovery_figures(&series(latencies), &timeline), expected);
    }

    /// Warm-up ends at 200 ms, the signal at 600 ms (batches 2..=5, closing at 300..=600, are
    /// before it), detection at 650 ms, a window of 3 batches.
    fn timeline(detected_at_ms: Option<i64>) -> Timeline {
        Timeline { signalled_at_ms: 600, detected_at_ms, warm_ms: 200, window_batches: 3 }
    }

    #[test]
    fn recovery_is_the_first_window_back_within_the_factor_measured_from_detection() {
        // Before the signal (closing at 300..=600): 40 40 800 50, median (the lower one) 40,
        // so the bound is 48. The batch closing at 500 was still running at the signal; its
        // results came out at 1 300 and it sets the peak. After: windows of three from the
        // batch closing at 700 have medians 600, 400, 60, then [60, 45, 40] → 45 ≤ 48, which
        // starts at the batch closing at 1 000: 350 ms after the detection at 650.
        let latencies = [9.0, 9.0, 40.0, 40.0, 800.0, 50.0, 700.0, 600.0, 400.0, 60.0, 45.0, 40.0, 40.0, 40.0];
        check(
            &latencies,
            timeline(Some(650)),
            RecoveryFigures {
                detection_ms: Some(50),
                pre_failure_latency_ms_p50: Some(40.0),
                pre_failure_batches: 4,
                recovered_ms_after_detection: Some(350),
                peak_latency_ms: Some(800.0),
            },
        );
    }

    #[test]
    fn latency_already_back_at_detection_counts_as_zero() {
        // The first window after the signal starts at the batch closing at 700, before the
        // detection at 900.
        let latencies = [10.0; 12];
        check(
            &latencies,
            timeline(Some(900)),
            RecoveryFigures {
                detection_ms: Some(300),
                pre_failure_latency_ms_p50: Some(10.0),
                pre_failure_batches: 4,
                recovered_ms_after_detection: Some(0),
                peak_latency_ms: Some(10.0),
            },
        );
    }

    #[test]
    fn no_detection_or_no_full_window_back_leaves_recovery_unknown() {
        let latencies = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 500.0, 400.0, 300.0, 300.0, 10.0];
        let expected = RecoveryFigures {
            detection_ms: None,
            pre_failure_latency_ms_p50: Some(10.0),
            pre_failure_batches: 4,
            recovered_ms_after_detection: None,
            peak_latency_ms: Some(500.0),
        };
        check(&latencies, timeline(None), expected.clone());
        // Detected, but only the last batch is back: no window of three shows a recovery.
        check(
            &latencies,
            timeline(Some(700)),
            RecoveryFigures { detection_ms: Some(100), recovered_ms_after_detection: None, ..expected },
        );
    }

    #[test]
    fn the_window_is_at_least_five_batches_and_half_a_second() {
        assert_eq!(recovery_window_batches(100), 5);
        assert_eq!(recovery_window_batches(1_000), 5);
        assert_eq!(recovery_window_batches(10), 50);
        assert_eq!(recovery_window_batches(30), 17);
    }
}
