//! `sleet bench ysb`: runs the Yahoo Streaming Benchmark on a local cluster, checks every
//! (campaign, window) count against the ground truth and writes the result object that
//! `benchmarks/README.md` describes; with `--find-max-rate`, searches for the highest rate the
//! cluster sustains (`max_rate`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_plan::SinkSpec;
use sleet_wire::JobProgress;

use crate::batch_figures::lag_bound_ms;
use crate::client::run_job;
use crate::cluster::LocalCluster;
use crate::duration_arg::show;
use crate::host_capacity::HostMeter;
use crate::interrupt::Interrupted;
use crate::sink_watch::SinkWatch;
use crate::ysb_input::InputKind;
use crate::ysb_job::{ysb_job, ysb_source_spec, YsbFlags, YsbOptions};
use crate::ysb_report::{evaluate, RunPlan, RunReport};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchYsbArgs {
    /// Rate, batch interval, seed and scheduler (with --find-max-rate, --rate is the first rate
    /// probed).
    #[command(flatten)]
    pub ysb: YsbFlags,
    /// Length of the run, in batches' time (with --find-max-rate: of the confirming run); a
    /// bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "60s")]
    pub duration: Duration,
    /// Time at the start left out of throughput, lag, latency and stability figures; a bare
    /// number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "10s")]
    pub warmup: Duration,
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    #[arg(long, default_value_t = 1)]
    pub cores_per_worker: u32,
    /// Source and reduce partitions; default one per worker core.
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Disable map-side partial aggregation (the paper's groupBy instead of reduceBy).
    #[arg(long)]
    pub no_combine: bool,
    /// Share of generated records that are malformed, mistyped or oversized.
    #[arg(long, default_value_t = 0.0)]
    pub bad_fraction: f64,
    /// The generator hands the map stage rows instead of JSON, as a store of already-decoded
    /// events would: decoding drops out and everything else runs as usual (the "input
    /// already decoded" what-if).
    #[arg(long)]
    pub pre_decoded: bool,
    #[command(flatten)]
    pub output: crate::run_dir::BenchOutputArgs,
    /// Start of batch 0 in ms since the epoch (default: a moment after submission). A start
    /// in the past first replays the backlog as fast as the cluster can.
    #[arg(long)]
    pub start_ms: Option<i64>,
    #[command(flatten)]
    pub search: crate::max_rate::SearchArgs,
    /// Where the events come from; with `--source kafka` a `sleet gen ysb` process writes
    /// them to a fresh topic on --brokers (start a broker with `scripts/kafka.sh start`).
    #[command(flatten)]
    pub input: crate::ysb_input::InputFlags,
    /// With --source kafka: write this many events first, then measure the job draining
    /// them from the earliest offset (instead of producing live at --rate).
    #[arg(long)]
    pub preload: Option<u64>,
    /// With --source kafka: write the results to a Kafka topic (created per run) instead of
    /// JSON-lines files, and check them read back from it.
    #[arg(long)]
    pub sink_kafka: bool,
    /// Resource limits of every worker, for engineering a network- or disk-bound run.
    #[command(flatten)]
    pub limits: crate::worker_limits::WorkerLimits,
    #[command(flatten)]
    pub placement: crate::cluster::Placement,
}

impl BenchYsbArgs {
    /// The run's cluster: its workers with their limits, placed as the flags say.
    pub fn start_cluster(&self, run_dir: &Path) -> Result<LocalCluster> {
        LocalCluster::start_limited(
            self.workers,
            self.cores_per_worker,
            &run_dir.join("logs"),
            &self.limits,
            self.placement,
        )
    }
}

/// `" | group 8, overhead 6.1% | bottleneck cpu"` for status lines: the group under group
/// scheduling (nothing under bsp), and what limits the job now, once the driver knows.
pub fn status_tail(progress: &JobProgress) -> String {
    let group = match (progress.group_size, progress.overhead) {
        (Some(size), Some(overhead)) => format!(" | group {size}, overhead {:.1}%", overhead * 100.0),
        (Some(size), None) => format!(" | group {size}"),
        _ => String::new(),
    };
    let bottleneck = progress.bottleneck.as_ref().map_or(String::new(), |name| format!(" | bottleneck {name}"));
    group + &bottleneck
}

/// A benchmark's status line, printed on each progress report: the last second's rate, the
/// totals so far, the lag, the recent window latency, the scheduler's group and what the
/// source waits for, if anything.
pub fn status_line(elapsed: Duration, progress: &JobProgress) -> String {
    format!(
        "  [{:>4} s] {:>9.0} events/s  batches {:>6}  events in {:>10}  lag {:>6} ms  window p99 {}  dead letters {}{}{}",
        elapsed.as_secs(),
        progress.events_per_s,
        progress.batches_done,
        progress.events_in,
        progress.lag_ms,
        progress.window_latency_ms_p99.map_or("-".into(), |v| format!("{v:.0} ms")),
        progress.dead_letters,
        status_tail(progress),
        progress.source_waiting.as_ref().map_or(String::new(), |note| format!("  | source waiting: {note}"))
    )
}

/// Runs the benchmark; `Ok(false)` means the results did not match the ground truth.
pub async fn run(args: BenchYsbArgs) -> Result<bool> {
    anyhow::ensure!((0.0..1.0).contains(&args.bad_fraction), "--bad-fraction must be in [0, 1)");
    anyhow::ensure!(args.workers > 0 && args.cores_per_worker > 0, "--workers and --cores-per-worker must be positive");
    anyhow::ensure!(args.ysb.rate > 0, "--rate must be positive");
    anyhow::ensure!(
        args.warmup < args.duration,
        "--warmup ({}) must be shorter than --duration ({}): nothing would be measured",
        show(args.warmup),
        show(args.duration)
    );
    args.ysb.scheduling.check()?;
    anyhow::ensure!(args.preload.is_none() || args.input.source == InputKind::Kafka, "--preload needs --source kafka");
    anyhow::ensure!(
        !args.pre_decoded || args.input.source == InputKind::Generator,
        "--pre-decoded runs on the built-in generator only"
    );
    anyhow::ensure!(
        !(args.pre_decoded && args.bad_fraction > 0.0),
        "--pre-decoded has no bad records to make: a malformed record has no decoded form; drop --bad-fraction"
    );
    anyhow::ensure!(
        !(args.search.find_max_rate && args.input.source != InputKind::Generator),
        "--find-max-rate runs on the built-in generator only"
    );
    anyhow::ensure!(
        args.input.campaigns.is_none(),
        "bench ysb writes and reads its own campaigns table; --campaigns is for `job ysb`"
    );
    let run_dir = args.output.prepare("bench-ysb")?;
    let outcome = run_and_report(&args, &run_dir.path).await;
    let interrupted = outcome.as_ref().is_err_and(|error| error.is::<Interrupted>());
    run_dir.finish(interrupted || matches!(outcome, Ok(Verdict::Passed)));
    match outcome? {
        Verdict::NoRateFound => {
            anyhow::bail!("no probed rate was both stable and correct; the probes are in the result object")
        }
        verdict => Ok(verdict == Verdict::Passed),
    }
}

async fn run_and_report(args: &BenchYsbArgs, run_dir: &Path) -> Result<Verdict> {
    let (report, verdict) = if args.search.find_max_rate {
        let (report, all_found) = crate::max_rate::run(args, run_dir).await?;
        (report, if all_found { Verdict::Passed } else { Verdict::NoRateFound })
    } else {
        let outcome = run_once(args, &Probe::full(args), run_dir).await?;
        print_run(args, &outcome.report);
        let verdict = if outcome.report.correct == Some(true) { Verdict::Passed } else { Verdict::Mismatch };
        (outcome.report.json, verdict)
    };
    if let Some(path) = &args.output.json {
        write_output(path, &(serde_json::to_string_pretty(&report)? + "\n"))?;
    }
    Ok(verdict)
}

/// Writes a benchmark's output file (a result object, a plot), creating its directory.
pub fn write_output(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Passed,
    /// The results differ from the ground truth: the one failure with its own exit code.
    Mismatch,
    NoRateFound,
}

fn print_run(args: &BenchYsbArgs, report: &RunReport) {
    let json = &report.json;
    let distribution = |figure: &serde_json::Value| {
        serde_json::from_value::<FigureView>(figure.clone()).map_or("-".into(), |view| view.describe())
    };
    println!(
        "ysb: {} events/s sustained (offered {}), {} ms batches, stable {}, correct {} ({} mismatches)",
        report.events_per_s.map_or("-".into(), |rate| format!("{rate:.0}")),
        args.ysb.rate,
        args.ysb.batch_interval_ms(),
        report.stable,
        report.correct.map_or("not checked".into(), |correct| correct.to_string()),
        json["mismatches"]
    );
    for reason in json["fewer_workers"].as_array().into_iter().flatten().filter_map(|reason| reason.as_str()) {
        println!("  the run measured fewer workers than asked: {reason}");
    }
    println!(
        "  lag {} (slope {} ms/s); window latency {}",
        distribution(&json["lag_ms"]),
        json["lag_ms"]["slope_ms_per_s"].as_f64().map_or("-".into(), |slope| format!("{slope:.1}")),
        distribution(&json["latency_ms"])
    );
    if let Some(reasons) = json["stability"]["reasons"].as_array().filter(|reasons| !reasons.is_empty()) {
        let reasons: Vec<&str> = reasons.iter().filter_map(|reason| reason.as_str()).collect();
        println!("  not stable: {}", reasons.join("; "));
    }
    let check = &json["end_to_end_check"];
    if let Some(median) = check["relative_difference"]["p50"].as_f64() {
        println!(
            "  breakdown vs measured end to end ({} batches): median {:+.1}%, |p99| {:.1}%, of means {:+.1}%; \
             measured {}, committed {}",
            check["batches_compared"],
            median * 100.0,
            check["relative_difference_abs"]["p99"].as_f64().map_or(f64::NAN, |p99| p99 * 100.0),
            check["relative_difference_of_means"].as_f64().map_or(f64::NAN, |mean| mean * 100.0),
            distribution(&check["measured_ms"]),
            distribution(&check["committed_ms"]),
        );
    }
    if let Some(median) = check["relative_difference_committed"]["p50"].as_f64() {
        println!(
            "  breakdown with its commit part vs measured to the commit: median {:+.1}%, |p99| {:.1}%",
            median * 100.0,
            check["relative_difference_committed_abs"]["p99"].as_f64().map_or(f64::NAN, |p99| p99 * 100.0),
        );
    }
    if let Some(cpu) = json["cpu_breakdown"].as_object() {
        let parts: Vec<String> =
            cpu.iter().map(|(kind, share)| format!("{kind} {:.0}%", share.as_f64().unwrap_or(0.0) * 100.0)).collect();
        println!("  cpu time: {}", parts.join(", "));
    }
}

/// The printed form of a `Distribution` read back from a result object.
#[derive(serde::Deserialize)]
struct FigureView {
    samples: usize,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

impl FigureView {
    fn describe(&self) -> String {
        sleet_clarity::Distribution {
            samples: self.samples,
            p50: self.p50,
            p95: None,
            p99: self.p99,
            max: self.max,
            note: None,
        }
        .describe("ms")
    }
}

/// One run's rate and length: the full run, or a search's probe.
#[derive(Debug, Clone)]
pub struct Probe {
    pub rate: u64,
    pub duration: Duration,
    pub warmup: Duration,
    /// Stop the run once its lag passes this: it cannot be stable any more.
    pub give_up_lag_ms: Option<i64>,
    pub label: String,
}

impl Probe {
    pub fn full(args: &BenchYsbArgs) -> Probe {
        Probe {
            rate: args.ysb.rate,
            duration: args.duration,
            warmup: args.warmup,
            give_up_lag_ms: None,
            label: "run".into(),
        }
    }

    /// A lag this far past the stability bound will not come back within a short probe.
    pub fn give_up_lag_ms(batch_interval_ms: u64) -> i64 {
        (lag_bound_ms(batch_interval_ms) as i64 * 5).max(2_000)
    }
}

pub struct RunOutcome {
    pub report: RunReport,
    /// The last per-second processed rate the status line showed.
    pub last_status_events_per_s: Option<f64>,
}

/// The results and dead-letter directories of a run, emptied of an earlier run's files.
pub fn clear_run_outputs(run_dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let results_dir = run_dir.join("results");
    let dead_letter_dir = run_dir.join("dead-letters");
    for dir in [&results_dir, &dead_letter_dir] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
    }
    Ok((results_dir, dead_letter_dir))
}

/// Starts a local cluster, runs ysb at `probe`'s rate, stops the cluster and judges the run.
pub async fn run_once(args: &BenchYsbArgs, probe: &Probe, run_dir: &Path) -> Result<RunOutcome> {
    match args.input.source {
        InputKind::Generator => {}
        InputKind::Kafka => return crate::bench_kafka::run_once(args, probe, run_dir).await,
        InputKind::Files => anyhow::bail!("bench ysb reads the generator or Kafka; --source files is for `job ysb`"),
    }
    let (results_dir, dead_letter_dir) = clear_run_outputs(run_dir)?;
    let partitions = args.partitions.unwrap_or(args.workers * args.cores_per_worker);
    let sink = SinkSpec::JsonLines { dir: results_dir.display().to_string() };
    let options = YsbOptions {
        rate_per_s: probe.rate,
        bad_fraction: args.bad_fraction,
        combine: !args.no_combine,
        dead_letter_dir: Some(dead_letter_dir.display().to_string()),
        start_ms: args.start_ms,
        pre_decoded: args.pre_decoded,
        ..args.ysb.options(partitions, Some(probe.duration), sink)
    };
    let job = ysb_job(&options)?;
    let spec = ysb_source_spec(&options);

    eprintln!(
        "bench ysb {}: {} events/s, {} workers × {} cores, {} ms batches, {}, {}{}{}",
        probe.label,
        probe.rate,
        args.workers,
        args.cores_per_worker,
        args.ysb.batch_interval_ms(),
        show(probe.duration),
        args.ysb.scheduling.describe(),
        if args.no_combine { ", no combine" } else { "" },
        if args.pre_decoded { ", input pre-decoded" } else { "" }
    );
    // Calibrated before the cluster starts, while only this process runs on the host.
    let mut host = HostMeter::calibrated()
        .with_map_task_fixed(crate::task_calibration::map_task_fixed_cost(&job, args.ysb.batch_interval));
    // Watching from before the cluster starts: a batch's rows must not be written unseen.
    let watch = SinkWatch::start(&results_dir)?;
    let cluster = args.start_cluster(run_dir)?;
    let started = std::time::Instant::now();
    let gave_up = Arc::new(AtomicBool::new(false));
    let give_up = Arc::new(tokio::sync::Notify::new());
    let mut last_status = None;
    let summary = run_job(
        &cluster.driver_address,
        job,
        |progress| {
            if progress.batches_done == 0 {
                return;
            }
            last_status = Some(progress.events_per_s);
            // The host's load is measured over the same part of the run as the batches the
            // model reads: from the end of the warm-up (to the nearest progress report).
            if started.elapsed() >= probe.warmup {
                host.start();
            }
            eprintln!("{}", status_line(started.elapsed(), progress));
            if probe.give_up_lag_ms.is_some_and(|limit| progress.lag_ms > limit)
                && !gave_up.swap(true, Ordering::SeqCst)
            {
                eprintln!("  lag {} ms: this rate cannot be kept up; stopping the probe", progress.lag_ms);
                give_up.notify_one();
            }
        },
        crate::interrupt::or_notified(give_up.clone()),
    )
    .await;
    let host = host.finish();
    let pinned = cluster.pinned();
    cluster.shutdown().await;
    crate::interrupt::check()?;
    let summary = summary?;
    let sightings = watch.finish().context("watching the sink")?;

    let plan = RunPlan {
        spec: &spec,
        config: json!({
            "workers": args.workers,
            "cores_per_worker": args.cores_per_worker,
            "batch_interval_ms": args.ysb.batch_interval_ms(),
            "scheduler": args.ysb.scheduling.scheduler.to_string(),
            "group_size": args.ysb.scheduling.group_size_json(),
            "overhead_bounds": args.ysb.scheduling.overhead_bounds_json(),
            "rate": probe.rate,
            "partitions": partitions,
            "combine": !args.no_combine,
            "pre_decoded": args.pre_decoded,
            "bad_fraction": args.bad_fraction,
            "seed": args.ysb.seed,
            "checkpoint_interval_ms": args.ysb.checkpoint_interval_ms(),
            "worker_limits": args.limits.config_json(),
            "workers_pinned": pinned,
        }),
        rate: probe.rate,
        batch_interval_ms: args.ysb.batch_interval_ms(),
        duration_ms: probe.duration.as_millis() as u64,
        warmup_ms: probe.warmup.as_millis() as u64,
        stopped_early: gave_up.load(Ordering::SeqCst),
        input: None,
        sink_rows: None,
        host,
        sink_sightings: Some(sightings),
    };
    let report = evaluate(&plan, &summary, &results_dir)?;
    Ok(RunOutcome { report, last_status_events_per_s: last_status })
}
