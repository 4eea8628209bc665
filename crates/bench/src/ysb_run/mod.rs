//! One ysb run on a local cluster, the unit every ysb benchmark is made of (`bench_ysb`,
//! `max_rate`'s probes, `ysb_case`'s cases for whatif and bottleneck, recovery and chaos):
//! its arguments (`BenchYsbArgs`), its rate and length (`Probe`), and its outcome
//! (`RunOutcome`: the judged report). The built-in generator's run is here; a Kafka-fed run
//! is `kafka`.

mod kafka;

pub use kafka::on_brokers;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_cli::client::{run_job, status_line};
use sleet_cli::cluster::LocalCluster;
use sleet_plan::SinkSpec;
use sleet_workloads::duration_arg::show;
use sleet_workloads::ysb_input::InputKind;
use sleet_workloads::ysb_job::{ysb_job, ysb_source_spec, YsbFlags, YsbOptions};

use crate::batch_figures::lag_bound_ms;
use crate::host_capacity::HostMeter;
use crate::memory_watch::{memory_json, MemoryWatch};
use crate::sink_watch::SinkWatch;
use crate::ysb_report::{evaluate, RunPlan, RunReport};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchYsbArgs {
    /// Rate, batch interval, seed and scheduler (with `bench ysb --find-max-rate`, --rate is the first rate
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
    /// Disable map-side partial aggregation: every row is shuffled and aggregated on the reduce
    /// side only, as a groupBy does where a reduceBy combines first.
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
    /// Start of batch 0 in ms since the epoch (default: a moment after submission). A start
    /// in the past first replays the backlog as fast as the cluster can.
    #[arg(long)]
    pub start_ms: Option<i64>,
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

/// Stops a search's probe once its lag passes a limit: past it the rate cannot be kept up,
/// and the rest of the run would only cost time.
pub struct GiveUp {
    limit_ms: Option<i64>,
    fired: AtomicBool,
    notify: Arc<tokio::sync::Notify>,
}

impl GiveUp {
    /// `None`: never gives up (a full run).
    pub fn new(limit_ms: Option<i64>) -> GiveUp {
        GiveUp { limit_ms, fired: AtomicBool::new(false), notify: Arc::new(tokio::sync::Notify::new()) }
    }

    /// Takes each progress report's lag.
    pub fn observe(&self, lag_ms: i64) {
        if self.limit_ms.is_some_and(|limit| lag_ms > limit) && !self.fired.swap(true, Ordering::SeqCst) {
            eprintln!("  lag {lag_ms} ms: this rate cannot be kept up; stopping the probe");
            self.notify.notify_one();
        }
    }

    /// Resolves on Ctrl-C, or once the probe has given up: what stops the job.
    pub fn stop(&self) -> impl std::future::Future<Output = ()> {
        crate::interrupt::or_notified(self.notify.clone())
    }

    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
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
        InputKind::Kafka => return kafka::run_once(args, probe, run_dir).await,
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
    let memory = MemoryWatch::of_cluster(&cluster)?;
    let started = std::time::Instant::now();
    let give_up = GiveUp::new(probe.give_up_lag_ms);
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
            give_up.observe(progress.lag_ms);
        },
        give_up.stop(),
    )
    .await;
    let host = host.finish();
    let memory = memory.finish()?;
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
            "latency_target": args.ysb.scheduling.latency_target(),
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
        stopped_early: give_up.fired(),
        input: None,
        sink_rows: None,
        host,
        sink_sightings: Some(sightings),
    };
    let mut report = evaluate(&plan, &summary, &results_dir)?;
    report.json["memory"] = memory_json(&memory);
    Ok(RunOutcome { report, last_status_events_per_s: last_status })
}
