//! `sleet bench ysb`: runs the Yahoo Streaming Benchmark on a local cluster, checks every
//! (campaign, window) count against the ground truth and writes the WORKLOADS.md result.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_clarity::percentile;
use sleet_connectors::ysb::{event, event_range};
use sleet_plan::{SinkSpec, YsbSourceSpec};
use sleet_wire::{JobProgress, JobSummary};

use crate::client::run_job;
use crate::cluster::LocalCluster;
use crate::ysb_check::{check_counts, window_latencies_ms};
use crate::ysb_job::{ysb_job, ysb_source_spec, YsbOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchYsbArgs {
    /// Input events per second, over all source partitions.
    #[arg(long, default_value_t = 500_000)]
    pub rate: u64,
    /// Seconds of batches to run.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Seconds at the start left out of latency and stability figures.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    #[arg(long, default_value_t = 1)]
    pub cores_per_worker: u32,
    #[arg(long, default_value_t = 100)]
    pub batch_interval: u64,
    /// Source and reduce partitions; default one per worker core.
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Disable map-side partial aggregation (the paper's groupBy instead of reduceBy).
    #[arg(long)]
    pub no_combine: bool,
    /// Share of generated records that are malformed, mistyped or oversized.
    #[arg(long, default_value_t = 0.0)]
    pub bad_fraction: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the result object here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the run's sink files, dead letters and logs here (default: a temporary directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Start of batch 0 in ms since the epoch (default: a moment after submission). A start
    /// in the past first replays the backlog as fast as the cluster can.
    #[arg(long)]
    pub start_ms: Option<i64>,
    #[command(flatten)]
    pub scheduling: crate::scheduler_args::SchedulerArgs,
}

/// `" | group 8, overhead 6.1%"` for status lines under group scheduling; empty under bsp.
pub fn group_status(progress: &JobProgress) -> String {
    match (progress.group_size, progress.overhead) {
        (Some(size), Some(overhead)) => format!(" | group {size}, overhead {:.1}%", overhead * 100.0),
        (Some(size), None) => format!(" | group {size}"),
        _ => String::new(),
    }
}

/// A run keeps up if its batches never end more than one window behind schedule and the
/// backlog at the end is under a second (the lag is not growing without bound).
const LAG_MAX_MS: i64 = 10_000;
const FINAL_LAG_MAX_MS: i64 = 1_000;

pub async fn run(args: BenchYsbArgs) -> Result<bool> {
    anyhow::ensure!((0.0..1.0).contains(&args.bad_fraction), "--bad-fraction must be in [0, 1)");
    anyhow::ensure!(args.workers > 0 && args.cores_per_worker > 0, "--workers and --cores-per-worker must be positive");
    let keep = args.out.is_some();
    let run_dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("sleet-bench-ysb-{}", std::process::id())));
    let results_dir = run_dir.join("results");
    let dead_letter_dir = run_dir.join("dead-letters");
    for dir in [&results_dir, &dead_letter_dir] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
    }
    let partitions = args.partitions.unwrap_or(args.workers * args.cores_per_worker);
    let options = YsbOptions {
        seed: args.seed,
        rate_per_s: args.rate,
        source_partitions: partitions,
        reduce_partitions: partitions,
        bad_fraction: args.bad_fraction,
        batch_interval_ms: args.batch_interval,
        duration_ms: Some(args.duration * 1000),
        combine: !args.no_combine,
        sink: SinkSpec::JsonLines { dir: results_dir.display().to_string() },
        dead_letter_dir: Some(dead_letter_dir.display().to_string()),
        scheduling: args.scheduling.clone(),
        start_ms: args.start_ms,
    };
    let job = ysb_job(&options)?;
    let spec = ysb_source_spec(&options);

    eprintln!(
        "bench ysb: {} events/s, {} workers × {} cores, {} ms batches, {} s, {}{}",
        args.rate,
        args.workers,
        args.cores_per_worker,
        args.batch_interval,
        args.duration,
        args.scheduling.describe(),
        if args.no_combine { ", no combine" } else { "" }
    );
    let cluster = LocalCluster::start(args.workers, args.cores_per_worker, &run_dir.join("logs"))?;
    let started = std::time::Instant::now();
    let summary = run_job(
        &cluster.driver_address,
        job,
        |progress| {
            if progress.batches_done > 0 {
                eprintln!(
                    "  [{:>4} s] {:>9.0} events/s  batches {:>6}  lag {:>6} ms  window p99 {}  dead letters {}{}",
                    started.elapsed().as_secs(),
                    progress.events_per_s,
                    progress.batches_done,
                    progress.lag_ms,
                    progress.window_latency_ms_p99.map_or("-".into(), |v| format!("{v:.0} ms")),
                    progress.dead_letters,
                    group_status(progress)
                );
            }
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    )
    .await;
    cluster.shutdown().await;
    let summary = summary?;

    let report = evaluate(&args, &spec, &summary, &results_dir)?;
    println!(
        "ysb: {:.0} events/s, {} ms batches, window latency p50 {} p99 {} ms, stable {}, correct {} ({} mismatches)",
        report["events_per_s"].as_f64().unwrap_or(0.0),
        args.batch_interval,
        report["latency_ms"]["p50"],
        report["latency_ms"]["p99"],
        report["stable"],
        report["correct"],
        report["mismatches"]
    );
    if let Some(cpu) = report["cpu_breakdown"].as_object() {
        let parts: Vec<String> =
            cpu.iter().map(|(kind, share)| format!("{kind} {:.0}%", share.as_f64().unwrap_or(0.0) * 100.0)).collect();
        println!("cpu time: {}", parts.join(", "));
    }
    if let Some(path) = &args.json {
        if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&run_dir);
    }
    Ok(report["correct"].as_bool().unwrap_or(false))
}

fn evaluate(
    args: &BenchYsbArgs,
    spec: &YsbSourceSpec,
    summary: &JobSummary,
    results_dir: &std::path::Path,
) -> Result<serde_json::Value> {
    let interval = args.batch_interval as i64;
    let start_ms = summary.start_ms;
    let end_ms = start_ms + summary.batches_total as i64 * interval;
    let warm_ms = start_ms + args.warmup as i64 * 1000;
    let rows = sleet_connectors::sink::read_ysb_sink(results_dir).context("reading the sink output")?;
    let check = check_counts(spec, start_ms, end_ms, &rows);
    let dead_letters_expected = bad_events(spec, start_ms, end_ms);
    let batches_expected = (args.duration * 1000).div_ceil(args.batch_interval.max(1)) as usize;
    let ran_fully = summary.batches_total as usize >= batches_expected;
    let correct = check.mismatches == 0 && summary.dead_letters == dead_letters_expected && ran_fully;
    for example in &check.examples {
        eprintln!("  mismatch: {example}");
    }

    let visible_at_ms: std::collections::BTreeMap<u64, i64> =
        summary.batches.iter().map(|batch| (batch.batch, batch.results_visible_at_ms)).collect();
    let latencies = window_latencies_ms(&rows, &visible_at_ms, warm_ms, end_ms);
    let measured: Vec<_> = summary.batches.iter().filter(|batch| batch.scheduled_end_ms > warm_ms).collect();
    let lags: Vec<i64> = measured.iter().map(|batch| batch.finished_at_ms - batch.scheduled_end_ms).collect();
    let lag_max_ms = lags.iter().copied().max().unwrap_or(0);
    let lag_final_ms = lags.last().copied().unwrap_or(0);
    let stable = ran_fully && lag_max_ms <= LAG_MAX_MS && lag_final_ms <= FINAL_LAG_MAX_MS;
    let processing: Vec<f64> =
        measured.iter().map(|batch| (batch.finished_at_ms - batch.launched_at_ms) as f64).collect();

    let cpu_total: f64 = ["source_read", "map_compute", "reduce_compute"]
        .iter()
        .filter_map(|kind| summary.monotask_summary.get(*kind))
        .map(|entry| entry.run_ms)
        .sum();
    let cpu_breakdown: serde_json::Map<String, serde_json::Value> = ["source_read", "map_compute", "reduce_compute"]
        .iter()
        .filter_map(|kind| {
            summary
                .monotask_summary
                .get(*kind)
                .map(|entry| (kind.to_string(), json!(entry.run_ms / cpu_total.max(1e-9))))
        })
        .collect();

    Ok(json!({
        "benchmark": "ysb",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "workers": args.workers,
            "cores_per_worker": args.cores_per_worker,
            "batch_interval_ms": args.batch_interval,
            "scheduler": args.scheduling.scheduler.to_string(),
            "group_size": args.scheduling.group_size_json(),
            "overhead_bounds": [args.scheduling.overhead_bounds.low, args.scheduling.overhead_bounds.high],
            "rate": args.rate,
            "partitions": spec.partitions,
            "combine": !args.no_combine,
            "bad_fraction": args.bad_fraction,
            "seed": args.seed,
        },
        "start_ms": start_ms,
        "end_ms": end_ms,
        "duration_s": (end_ms - start_ms) as f64 / 1000.0,
        "warmup_s": args.warmup as f64,
        "events_in": summary.events_in,
        "events_per_s": summary.events_in as f64 / ((end_ms - start_ms).max(1) as f64 / 1000.0),
        "latency_ms": {
            "p50": percentile(&latencies, 0.5),
            "p95": percentile(&latencies, 0.95),
            "p99": percentile(&latencies, 0.99),
            "max": percentile(&latencies, 1.0),
        },
        "windows_measured": latencies.len(),
        "correct": correct,
        "mismatches": check.mismatches,
        "windows_expected": check.windows_expected,
        "dead_letters": summary.dead_letters,
        "dead_letters_expected": dead_letters_expected,
        "stable": stable,
        "lag_ms_max": lag_max_ms,
        "lag_ms_final": lag_final_ms,
        "batches": summary.batches_total,
        "batch_processing_ms": {
            "p50": percentile(&processing, 0.5),
            "p99": percentile(&processing, 0.99),
        },
        "cpu_breakdown": cpu_breakdown,
        "monotasks": summary.monotask_summary,
        "launch_messages": summary.launch_messages,
        "groups": group_summary(summary, warm_ms),
        "series": per_second_series(summary),
    }))
}

fn bad_events(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64) -> u64 {
    (0..spec.partitions)
        .map(|partition| {
            event_range(spec, partition, start_ms, end_ms).filter(|k| event(spec, partition, *k).bad.is_some()).count()
                as u64
        })
        .sum()
}

/// Group sizes and overheads after the warm-up (group scheduling only): where the size settled.
fn group_summary(summary: &JobSummary, warm_ms: i64) -> serde_json::Value {
    if summary.groups.is_empty() {
        return serde_json::Value::Null;
    }
    let settled: Vec<_> = summary.groups.iter().filter(|group| group.sent_at_ms >= warm_ms).collect();
    let sizes: Vec<f64> = settled.iter().map(|group| group.size as f64).collect();
    let overheads: Vec<f64> = settled.iter().map(|group| group.overhead_average.unwrap_or(group.overhead)).collect();
    json!({
        "count": summary.groups.len(),
        "after_warmup": settled.len(),
        "size_p50": percentile(&sizes, 0.5),
        "size_min": percentile(&sizes, 0.0),
        "size_max": percentile(&sizes, 1.0),
        "overhead_p50": percentile(&overheads, 0.5),
        "overhead_p05": percentile(&overheads, 0.05),
        "overhead_p95": percentile(&overheads, 0.95),
        "size_last": summary.groups.last().map(|group| group.size),
        "series": {
            "first_batch": summary.groups.iter().map(|group| group.first_batch).collect::<Vec<_>>(),
            "sent_at_s": summary.groups.iter().map(|group| (group.sent_at_ms - summary.start_ms) as f64 / 1000.0).collect::<Vec<_>>(),
            "size": summary.groups.iter().map(|group| group.size).collect::<Vec<_>>(),
            "overhead": summary.groups.iter().map(|group| group.overhead).collect::<Vec<_>>(),
            "overhead_average": summary.groups.iter().map(|group| group.overhead_average).collect::<Vec<_>>(),
            "schedule_us": summary.groups.iter().map(|group| group.schedule_us).collect::<Vec<_>>(),
            "register_us": summary.groups.iter().map(|group| group.register_us).collect::<Vec<_>>(),
            "status_us": summary.groups.iter().map(|group| group.status_us).collect::<Vec<_>>(),
            "coordination_wait_us": summary.groups.iter().map(|group| group.coordination_wait_us).collect::<Vec<_>>(),
            "execute_us": summary.groups.iter().map(|group| group.execute_us).collect::<Vec<_>>(),
        },
    })
}

/// Per second of scheduled time: input events, the worst lag, the median processing time and,
/// under group scheduling, the size of the groups those batches ran in and their overhead.
fn per_second_series(summary: &JobSummary) -> serde_json::Value {
    #[derive(Default)]
    struct Second {
        events: u64,
        lag_ms_max: i64,
        processing_ms: Vec<f64>,
        groups: std::collections::BTreeSet<u64>,
    }
    let mut seconds: std::collections::BTreeMap<i64, Second> = std::collections::BTreeMap::new();
    for batch in &summary.batches {
        let second = (batch.scheduled_end_ms - summary.start_ms - 1).max(0) / 1000;
        let entry = seconds.entry(second).or_default();
        entry.events += batch.events_in;
        entry.lag_ms_max = entry.lag_ms_max.max(batch.finished_at_ms - batch.scheduled_end_ms);
        entry.processing_ms.push((batch.finished_at_ms - batch.launched_at_ms) as f64);
        entry.groups.extend(batch.group);
    }
    let groups: std::collections::HashMap<u64, &sleet_wire::GroupRecord> =
        summary.groups.iter().map(|group| (group.group, group)).collect();
    let group_figure = |entry: &Second, figure: &dyn Fn(&sleet_wire::GroupRecord) -> f64| {
        let values: Vec<f64> = entry.groups.iter().filter_map(|id| groups.get(id)).map(|group| figure(group)).collect();
        percentile(&values, 0.5)
    };
    let second: Vec<i64> = seconds.keys().copied().collect();
    let events: Vec<u64> = seconds.values().map(|entry| entry.events).collect();
    let lag: Vec<i64> = seconds.values().map(|entry| entry.lag_ms_max).collect();
    let processing: Vec<f64> =
        seconds.values().map(|entry| percentile(&entry.processing_ms, 0.5).unwrap_or(0.0)).collect();
    let mut series = json!({
        "second": second,
        "events_in": events,
        "lag_ms_max": lag,
        "batch_processing_ms_p50": processing,
    });
    if !groups.is_empty() {
        let sizes: Vec<Option<f64>> =
            seconds.values().map(|entry| group_figure(entry, &|group| group.size as f64)).collect();
        let overheads: Vec<Option<f64>> = seconds
            .values()
            .map(|entry| group_figure(entry, &|group| group.overhead_average.unwrap_or(group.overhead)))
            .collect();
        series["group_size"] = json!(sizes);
        series["overhead"] = json!(overheads);
    }
    series
}
