//! `sleet-bench sched` and `sleet-bench shuffle` (`benchmarks/README.md`): how long a batch
//! takes when the work is tiny and coordination is all that is left.
//!
//! `sched` is one stage with one task per worker core, each summing random numbers; `shuffle`
//! adds a reduce stage of 16 tasks. The batches are a backlog (batch 0 starts in the past, so
//! every batch is closed when the job starts): the cluster runs them as fast as its scheduler
//! lets it. A run's time per batch is the wall time from the driver's first launch to the
//! last batch's completion, over the number of batches: what the scheduler costs. Gaps between
//! completions would not do: under group scheduling workers do not move in lockstep, so
//! completions bunch up behind the slowest worker and their gaps show only its tail.
//!
//! A sweep starts one local cluster per worker count and runs every configuration on it,
//! interleaved run by run, so that the configurations of one worker count share the
//! machine's noise and are compared side by side.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::json;
use sleet_clarity::percentile;
use sleet_plan::{
    Aggregate, GroupSize, JobFile, JobSettings, NumbersSourceSpec, OverheadBounds, PlanBuilder, SchedulerKind,
    SinkSpec, SourceSpec, WindowSpec,
};
use sleet_wire::clock::BatchClock;
use sleet_wire::JobSummary;

use crate::client::run_job;
use crate::cluster::LocalCluster;
use crate::plot::{render_svg, LinePlot, Scale, Series};
use crate::scheduler_args::SchedulerArgs;
use crate::shuffle_check::{compare, expected_totals, sink_totals};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One stage.
    Sched,
    /// A map stage and a reduce stage behind a shuffle.
    Shuffle,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Sched => "sched",
            Shape::Shuffle => "shuffle",
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchSchedArgs {
    /// Worker processes (one core each) for a single run.
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    #[command(flatten)]
    pub scheduling: SchedulerArgs,
    /// Batches per run (every configuration first runs a short warm-up job). The default is
    /// fifty groups of the largest swept size, so a run measures the steady state of
    /// pipelined groups rather than the ramp of the first one, and lasts long enough (a
    /// fifth of a second at the fastest) that one stall of a process sharing the machine
    /// does not decide its result.
    #[arg(long, default_value_t = 5000)]
    pub batches: u32,
    /// Random numbers each task sums per batch.
    #[arg(long, default_value_t = 1000)]
    pub numbers_per_task: u32,
    /// Reduce tasks per batch (`shuffle` only).
    #[arg(long, default_value_t = 16)]
    pub reduce_partitions: u32,
    /// Sums each task emits, under keys of its own; with as many keys as reduce tasks, a
    /// `shuffle` map task sends data to (nearly) every reduce task.
    #[arg(long, default_value_t = 1)]
    pub keys_per_task: u32,
    /// `shuffle` only: discard the reduce output instead of writing it and checking it against
    /// the ground truth, so the figure is scheduling and shuffling alone, comparable with
    /// commits from before the check (writing and reading the sink doubles a group's time).
    #[arg(long)]
    pub no_check: bool,
    /// Run every worker count × scheduler × group size instead of one configuration.
    #[arg(long)]
    pub sweep: bool,
    /// Worker counts of a sweep.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32")]
    pub sweep_workers: Vec<u32>,
    /// Group sizes of a sweep (bsp runs too, once per round).
    #[arg(long, value_delimiter = ',', default_value = "1,10,25,50,100")]
    pub sweep_group_sizes: Vec<u32>,
    /// Runs of every configuration; the result is their median and 95th percentile.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the result object here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the plot of a sweep here (SVG): time per batch against workers.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Keep process logs here (default: a temporary directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Nominal batch interval: batches are a backlog, so it only spaces their event times.
const BATCH_INTERVAL_MS: u64 = 10;
/// `shuffle`'s window: a hundred batches of numbers summed per key.
const SHUFFLE_WINDOW_MS: i64 = 1000;
/// Keys per task: by default a task sums all its numbers into one, so its output is as small
/// as it can be and coordination is what is left; `shuffle` sends that sum to the one reduce
/// task its key hashes to. Every map task still announces its output to every reduce task,
/// empty ones included.
fn keys(args: &BenchSchedArgs) -> u32 {
    args.keys_per_task
}

/// One configuration of the scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Config {
    scheduler: SchedulerKind,
    group_size: GroupSize,
}

impl Config {
    fn label(&self) -> String {
        match self.scheduler {
            SchedulerKind::Bsp => "bsp".into(),
            SchedulerKind::Group => format!("group {}", self.group_size),
        }
    }

    fn group_size_json(&self) -> serde_json::Value {
        SchedulerArgs::new(self.scheduler, self.group_size).group_size_json()
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
struct RunResult {
    /// Wall time from the first launch to the last completion, over the batches.
    batch_ms: f64,
    complete: bool,
    /// `shuffle`: whether every (key, window) total in the sink equals the ground truth.
    correct: Option<bool>,
    launch_messages: u64,
    group_sizes: Vec<u32>,
}

pub async fn run(shape: Shape, args: BenchSchedArgs) -> Result<bool> {
    args.scheduling.check()?;
    anyhow::ensure!(args.batches >= 1, "--batches must be at least 1");
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(args.numbers_per_task >= 1, "--numbers-per-task must be at least 1");
    anyhow::ensure!(args.reduce_partitions >= 1, "--reduce-partitions must be at least 1");
    anyhow::ensure!(args.keys_per_task >= 1, "--keys-per-task must be at least 1");
    let run_dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("sleet-bench-{}-{}", shape.name(), std::process::id())));
    let result = if args.sweep { sweep(shape, &args, &run_dir).await? } else { single(shape, &args, &run_dir).await? };
    if let Some(path) = &args.json {
        write_file(path, &(serde_json::to_string_pretty(&result)? + "\n"))?;
    }
    if args.out.is_none() {
        let _ = std::fs::remove_dir_all(&run_dir);
    }
    Ok(result["complete"].as_bool().unwrap_or(false) && result["correct"].as_bool() != Some(false))
}

async fn single(shape: Shape, args: &BenchSchedArgs, run_dir: &std::path::Path) -> Result<serde_json::Value> {
    anyhow::ensure!(args.workers >= 1, "--workers must be at least 1");
    let config = Config { scheduler: args.scheduling.scheduler, group_size: args.scheduling.group_size() };
    eprintln!("bench {}: {} workers, {}, {} batches", shape.name(), args.workers, config.label(), args.batches);
    let cluster = LocalCluster::start(args.workers, 1, &run_dir.join(format!("logs-{}", args.workers)))?;
    let results_dir = run_dir.join("results");
    let outcome = async {
        warm_up(shape, args, &cluster, &[config], &results_dir).await?;
        let mut runs = Vec::new();
        for _ in 0..args.runs {
            runs.push(run_once(shape, args, &cluster, config, args.scheduling.overhead_bounds(), &results_dir).await?);
        }
        Ok::<_, anyhow::Error>(runs)
    }
    .await;
    cluster.shutdown().await;
    let runs = outcome?;
    let point = point_json(args.workers, &config, &runs);
    println!(
        "{}: {} workers, {}: {:.3} ms per batch (median of {} runs; p95 {:.3}), {} launch messages per run",
        shape.name(),
        args.workers,
        config.label(),
        point["batch_ms_median"].as_f64().unwrap_or(0.0),
        runs.len(),
        point["batch_ms_p95"].as_f64().unwrap_or(0.0),
        point["launch_messages"]
    );
    Ok(json!({
        "benchmark": shape.name(),
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "workers": args.workers,
            "cores_per_worker": 1,
            "scheduler": config.scheduler.to_string(),
            "group_size": config.group_size_json(),
            "latency_target": args.scheduling.latency_target(),
            "batches": args.batches,
            "runs": args.runs,
            "numbers_per_task": args.numbers_per_task,
            "keys_per_task": args.keys_per_task,
            "reduce_partitions": (shape == Shape::Shuffle).then_some(args.reduce_partitions),
        },
        "batch_ms_median": point["batch_ms_median"],
        "batch_ms_p95": point["batch_ms_p95"],
        "runs_batch_ms": point["runs_batch_ms"],
        "batches": args.batches,
        "complete": point["complete"],
        "correct": point["correct"],
        "launch_messages": point["launch_messages"],
        "group_sizes": runs.last().map(|run| run.group_sizes.clone()),
    }))
}

async fn sweep(shape: Shape, args: &BenchSchedArgs, run_dir: &std::path::Path) -> Result<serde_json::Value> {
    let mut configs = vec![Config { scheduler: SchedulerKind::Bsp, group_size: GroupSize::Fixed(1) }];
    configs.extend(
        args.sweep_group_sizes
            .iter()
            .map(|size| Config { scheduler: SchedulerKind::Group, group_size: GroupSize::Fixed(*size) }),
    );
    let mut points = Vec::new();
    let mut complete = true;
    let started = std::time::Instant::now();
    for &workers in &args.sweep_workers {
        eprintln!("bench {}: {workers} workers: starting the cluster", shape.name());
        let cluster = LocalCluster::start(workers, 1, &run_dir.join(format!("logs-{workers}")))?;
        let results_dir = run_dir.join(format!("results-{workers}"));
        let outcome = async {
            // bsp and the first group size: one warm-up per scheduler.
            warm_up(shape, args, &cluster, &configs[..configs.len().min(2)], &results_dir).await?;
            let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); configs.len()];
            for round in 1..=args.runs {
                for (index, config) in configs.iter().enumerate() {
                    let result =
                        run_once(shape, args, &cluster, *config, OverheadBounds::default(), &results_dir).await?;
                    eprintln!(
                        "  [{:>4} s] {workers:>2} workers  round {round}  {:<10} {:>8.3} ms per batch",
                        started.elapsed().as_secs(),
                        config.label(),
                        result.batch_ms
                    );
                    runs[index].push(result);
                }
            }
            Ok::<_, anyhow::Error>(runs)
        }
        .await;
        cluster.shutdown().await;
        for (config, runs) in configs.iter().zip(outcome?) {
            complete &= runs.iter().all(|run| run.complete && run.correct != Some(false));
            points.push(point_json(workers, config, &runs));
        }
    }
    let ratios = ratios_json(&points, &args.sweep_workers);
    print_table(shape, &points, &args.sweep_workers, &configs);
    if let Some(path) = &args.plot {
        write_file(path, &(render_svg(&plot_of(shape, args, &points, &configs)) + "\n"))?;
    }
    Ok(json!({
        "benchmark": shape.name(),
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "workers": args.sweep_workers,
            "cores_per_worker": 1,
            "schedulers": configs.iter().map(Config::label).collect::<Vec<_>>(),
            "batches": args.batches,
            "runs": args.runs,
            "numbers_per_task": args.numbers_per_task,
            "keys_per_task": args.keys_per_task,
            "reduce_partitions": (shape == Shape::Shuffle).then_some(args.reduce_partitions),
        },
        "complete": complete,
        "correct": (shape == Shape::Shuffle).then(|| points.iter().all(|point| point["correct"] != false)),
        "ratios_bsp_over_group": ratios,
        "series": points,
    }))
}

/// A short run of each scheduler measured, first, so connections and pools are warm for
/// every configuration alike.
async fn warm_up(
    shape: Shape,
    args: &BenchSchedArgs,
    cluster: &LocalCluster,
    configs: &[Config],
    results_dir: &Path,
) -> Result<()> {
    let short = BenchSchedArgs { batches: 20, ..args.clone() };
    for config in configs {
        run_once(shape, &short, cluster, *config, args.scheduling.overhead_bounds(), results_dir).await?;
    }
    Ok(())
}

fn job(
    shape: Shape,
    args: &BenchSchedArgs,
    partitions: u32,
    config: Config,
    bounds: OverheadBounds,
    results_dir: &Path,
) -> Result<JobFile> {
    let spec = numbers_spec(args, partitions);
    let source = PlanBuilder::source(shape.name(), SourceSpec::Numbers(spec))
        .decode_json(sleet_connectors::numbers::record_schema());
    let plan = match shape {
        Shape::Sched => source.sink(SinkSpec::Discard).build()?,
        Shape::Shuffle => source
            .exchange(["key"], args.reduce_partitions)
            .window_aggregate(
                WindowSpec::tumbling("time", SHUFFLE_WINDOW_MS, 0),
                ["key"],
                [Aggregate::sum("sum", "total")],
            )
            .sink(if args.no_check {
                SinkSpec::Discard
            } else {
                SinkSpec::JsonLines { dir: results_dir.display().to_string() }
            })
            .build()?,
    };
    let interval = BATCH_INTERVAL_MS as i64;
    let batches = args.batches as i64;
    // Every batch has closed before the job starts: a backlog the scheduler works through.
    let now_ms = sleet_wire::clock::now_ms();
    let start_ms = BatchClock::aligned_after(now_ms - (batches + 10) * interval, interval).start_ms;
    let settings = JobSettings {
        batch_interval_ms: BATCH_INTERVAL_MS,
        duration_ms: Some(args.batches as u64 * BATCH_INTERVAL_MS),
        scheduler: config.scheduler,
        group_size: config.group_size,
        overhead_bounds: bounds,
        start_ms: Some(start_ms),
        // What this measures is scheduling; checkpoint writes would only add noise to it.
        checkpoint_interval_ms: 0,
        // A target bounds the automatic size only; the sweep's fixed sizes run as they are.
        latency_target: args.scheduling.latency_target().filter(|_| config.group_size == GroupSize::Auto),
        ..JobSettings::default()
    };
    settings.validate()?;
    Ok(JobFile { plan, settings, query: None })
}

async fn run_once(
    shape: Shape,
    args: &BenchSchedArgs,
    cluster: &LocalCluster,
    config: Config,
    bounds: OverheadBounds,
    results_dir: &Path,
) -> Result<RunResult> {
    let partitions = cluster.workers() as u32;
    if results_dir.exists() {
        std::fs::remove_dir_all(results_dir).with_context(|| format!("clearing {}", results_dir.display()))?;
    }
    let job = job(shape, args, partitions, config, bounds, results_dir)?;
    let summary = run_job(&cluster.driver_address, job, |_| {}, crate::interrupt::wait()).await;
    crate::interrupt::check()?;
    let summary = summary?;
    let mut result = evaluate(args, partitions, keys(args), &summary)
        .with_context(|| format!("{} run with {}", shape.name(), config.label()))?;
    if shape == Shape::Shuffle && !args.no_check {
        let clock = BatchClock::new(summary.start_ms, BATCH_INTERVAL_MS as i64);
        let expected = expected_totals(&numbers_spec(args, partitions), &clock, args.batches as u64, SHUFFLE_WINDOW_MS);
        let check = compare(&expected, &sink_totals(results_dir)?);
        for example in &check.examples {
            eprintln!("  mismatch ({}): {example}", config.label());
        }
        result.correct = Some(check.mismatches == 0);
    }
    Ok(result)
}

fn numbers_spec(args: &BenchSchedArgs, partitions: u32) -> NumbersSourceSpec {
    NumbersSourceSpec { seed: args.seed, partitions, numbers_per_batch: args.numbers_per_task, keys: keys(args) }
}

fn evaluate(args: &BenchSchedArgs, partitions: u32, keys: u32, summary: &JobSummary) -> Result<RunResult> {
    let last_finished_us = summary.batches.iter().map(|batch| batch.finished_at_us).max().unwrap_or(0);
    if summary.batches.is_empty() || summary.first_launch_at_us == 0 {
        bail!("no batch finished");
    }
    let span_ms = (last_finished_us - summary.first_launch_at_us) as f64 / 1000.0;
    // Each task emits one record per key, so the input count proves every task ran once.
    let records_expected = args.batches as u64 * partitions as u64 * keys.min(args.numbers_per_task) as u64;
    Ok(RunResult {
        batch_ms: span_ms / summary.batches_total.max(1) as f64,
        complete: summary.batches_total == args.batches as u64 && summary.events_in == records_expected,
        correct: None,
        launch_messages: summary.launch_messages,
        group_sizes: summary.groups.iter().map(|group| group.size).collect(),
    })
}

fn point_json(workers: u32, config: &Config, runs: &[RunResult]) -> serde_json::Value {
    let batch_ms: Vec<f64> = runs.iter().map(|run| run.batch_ms).collect();
    json!({
        "workers": workers,
        "scheduler": config.scheduler.to_string(),
        "group_size": config.group_size_json(),
        "label": config.label(),
        "batch_ms_median": percentile(&batch_ms, 0.5),
        "batch_ms_p95": percentile(&batch_ms, 0.95),
        "runs_batch_ms": batch_ms,
        "launch_messages": runs.first().map_or(0, |run| run.launch_messages),
        "complete": runs.iter().all(|run| run.complete),
        "correct": runs.iter().map(|run| run.correct).try_fold(true, |all, correct| Some(all && correct?)),
    })
}

/// bsp's time per batch over each group size's, per worker count (medians of the runs,
/// measured in the same rounds).
fn ratios_json(points: &[serde_json::Value], workers: &[u32]) -> serde_json::Value {
    let mut ratios = serde_json::Map::new();
    for &count in workers {
        let of = |label: &str, field: &str| {
            points
                .iter()
                .find(|point| point["workers"] == count && point["label"] == label)
                .and_then(|point| point[field].as_f64())
        };
        let mut entry = serde_json::Map::new();
        for point in points.iter().filter(|point| point["workers"] == count && point["scheduler"] == "group") {
            let label = point["label"].as_str().unwrap_or_default();
            let ratio = |field: &str| match (of("bsp", field), of(label, field)) {
                (Some(bsp), Some(group)) if group > 0.0 => json!(bsp / group),
                _ => serde_json::Value::Null,
            };
            entry.insert(label.to_string(), ratio("batch_ms_median"));
        }
        ratios.insert(count.to_string(), serde_json::Value::Object(entry));
    }
    serde_json::Value::Object(ratios)
}

fn print_table(shape: Shape, points: &[serde_json::Value], workers: &[u32], configs: &[Config]) {
    println!("{}: time per batch in ms (median of runs), by workers", shape.name());
    print!("{:<12}", "scheduler");
    for count in workers {
        print!("{count:>10}");
    }
    println!();
    for config in configs {
        print!("{:<12}", config.label());
        for &count in workers {
            let value = points
                .iter()
                .find(|point| point["workers"] == count && point["label"] == config.label().as_str())
                .and_then(|point| point["batch_ms_median"].as_f64());
            match value {
                Some(ms) => print!("{ms:>10.3}"),
                None => print!("{:>10}", "-"),
            }
        }
        println!();
    }
}

fn plot_of(shape: Shape, args: &BenchSchedArgs, points: &[serde_json::Value], configs: &[Config]) -> LinePlot {
    let series = configs
        .iter()
        .map(|config| Series {
            label: config.label(),
            points: points
                .iter()
                .filter(|point| point["label"] == config.label().as_str())
                .filter_map(|point| Some((point["workers"].as_f64()?, point["batch_ms_median"].as_f64()?)))
                .collect(),
        })
        .collect();
    let what = match shape {
        Shape::Sched => "one stage".to_string(),
        Shape::Shuffle => format!("map stage + {} reduce tasks", args.reduce_partitions),
    };
    LinePlot {
        title: format!("sleet-bench {}: {what}, {} batches, median of {} runs", shape.name(), args.batches, args.runs),
        x_label: "worker processes (1 core each, loopback)".into(),
        y_label: "time per batch (ms)".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        series,
    }
}

fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
