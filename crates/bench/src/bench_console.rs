//! `sleet-bench console` (`benchmarks/README.md`): what serving the console costs the driver.
//! The budget: one open dashboard page and a Prometheus scrape every second cost at
//! most 1 % of the driver's CPU at 10 ms batches.
//!
//! Each run is a fresh cluster (a driver, 2 workers of 1 core) running ysb on the built-in
//! generator, either `off` (no `--http`, nobody looking) or `on` (`--http`, the dashboard
//! open in headless Chromium and `/metrics` scraped every second, from before the job is
//! submitted to its end). The runs come in pairs, one of each mode, and the two runs of a
//! pair run at the same time, their jobs starting on the same batch boundary: whatever else
//! the shared machine does in those seconds (the browser rendering included) weighs on both
//! drivers alike, where runs one after the other differed by several times the budget. The
//! figure is the driver process's CPU (user + system) from the end of the warm-up to the end
//! of the job's duration, per second of wall time, read to the nanosecond (`cpu_time`); the
//! window is set on the clock the batches are scheduled on, so it covers the same batches in
//! both modes.

#[allow(dead_code)] // the dashboard test's harness, of which the benchmark takes no screenshot
#[path = "../../cli/tests/common/browser.rs"]
mod browser;
mod onlookers;
mod summary;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use sleet_cli::client::run_job;
use sleet_cli::cluster::{sleep_until_ms, LocalCluster};
use sleet_cli::interrupt::Interrupted;
use sleet_plan::{GroupSize, SchedulerKind, SinkSpec};
use sleet_wire::clock::BatchClock;
use sleet_workloads::duration_arg::show;
use sleet_workloads::scheduler_args::SchedulerArgs;
use sleet_workloads::ysb_job::{ysb_job, YsbInput, YsbOptions, DEFAULT_RATE};

use crate::batch_figures::{measured_batches, sustained};
use crate::cpu_time::cpu_seconds;
use crate::output::BenchOutputArgs;
use onlookers::Onlookers;
use summary::{summarize, Mode, RunFigures, Summary};

/// The batch interval: the driver coordinates a hundred batches a second, its
/// busiest steady state, against which the console's cost is smallest in absolute terms
/// but must still be small.
const BATCH_INTERVAL_MS: u64 = 10;
const WORKERS: u32 = 2;
const CORES_PER_WORKER: u32 = 1;
/// Two clusters' workers register, and Chromium opens its page, within a few seconds of
/// starting; batch 0 of both jobs starts after that.
const START_DELAY_MS: i64 = 5_000;

#[derive(Debug, Clone, clap::Args)]
pub struct BenchConsoleArgs {
    /// Input events per second of the ysb generator.
    #[arg(long, default_value_t = DEFAULT_RATE)]
    pub rate: u64,
    /// Length of each run's job, warm-up included; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "30s")]
    pub duration: Duration,
    /// Time at the start of each job left out of the figures; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "5s")]
    pub warmup: Duration,
    /// Pairs of runs, one with the console off and one with it on in each, the two at the
    /// same time; the `off` cluster starts first in odd pairs, the `on` one in even pairs.
    #[arg(long, default_value_t = 3)]
    pub pairs: u32,
    /// Batches per group: `auto` (the driver tunes it, as users run) or a fixed number, which
    /// takes the group-size controller's swings out of the driver's CPU.
    #[arg(long, default_value = "auto")]
    pub group_size: GroupSize,
    /// Seed of the generator and of the campaigns table.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub output: BenchOutputArgs,
}

/// Runs the benchmark. Every run that completes is valid (a page or scraper that did not keep
/// looking fails the run with an error), so the verdict on the budget is in the result, not in
/// the exit status: a noisy machine can tip a sub-percent figure either way.
pub async fn run(args: BenchConsoleArgs) -> Result<bool> {
    anyhow::ensure!(args.rate > 0, "--rate must be positive");
    anyhow::ensure!(args.pairs >= 1, "--pairs must be at least 1");
    anyhow::ensure!(
        args.warmup < args.duration,
        "--warmup ({}) must be shorter than --duration ({}): nothing would be measured",
        show(args.warmup),
        show(args.duration)
    );
    anyhow::ensure!(
        args.duration >= Duration::from_secs(4),
        "--duration ({}) must be at least 4s: the page gets an update every 2 s and must show at least half",
        show(args.duration)
    );
    let run_dir = args.output.prepare("bench-console")?;
    let outcome = run_pairs(&args, &run_dir.path).await;
    let interrupted = outcome.as_ref().is_err_and(|error| error.is::<Interrupted>());
    run_dir.finish(interrupted || outcome.is_ok());
    let runs = outcome?;
    let summary = summarize(&runs).context("no complete pair of runs to compare")?;
    eprintln!("{}", summary_line(&summary));
    args.output.emit(&json!({
        "benchmark": "console",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "workers": WORKERS,
            "cores_per_worker": CORES_PER_WORKER,
            "batch_interval_ms": BATCH_INTERVAL_MS,
            "scheduler": "group",
            "group_size": SchedulerArgs::new(SchedulerKind::Group, args.group_size).group_size_json(),
            "side_by_side": "the two runs of a pair at the same time, their jobs starting on the same batch boundary",
            "rate": args.rate,
            "seed": args.seed,
            "pairs": args.pairs,
            "source": "ysb generator (built in)",
            "sink": "JSON lines in the run directory, not checked",
            "on": "driver --http 127.0.0.1:0; one dashboard page (/) in headless Chromium and a GET /metrics every second, from before the job's submission to its end",
            "off": "driver without --http",
        },
        "duration_s": args.duration.as_secs_f64(),
        "warmup_s": args.warmup.as_secs_f64(),
        "definitions": {
            "driver_cpu_ms_per_s": "the driver process's CPU (user + system, its CPU-time clock, to the ns) from the end of the warm-up to the end of the job's duration (batch 0's start + warm-up → + duration, wall clock), over that wall time",
            "events_per_s": "events of the batches scheduled after the warm-up, over the wall time from the first of them launching to the last finishing",
            "page_updates": "the page's count of stream updates applied (body.dataset.updates), over the whole run",
            "scrapes": "GET /metrics answered 200 with the metrics, over the whole run",
            "cost_share": "(median on − median off) ÷ median off, of driver_cpu_ms_per_s",
            "pair_ratios": "driver_cpu_ms_per_s on ÷ off, per pair",
            "console_cpu_ms_per_s": "on runs: CPU of the driver's console thread (its thread clock, sleet_console_cpu_seconds_total, read from /metrics at both ends of the same window), over that wall time",
            "console_share": "median over the on runs of console_cpu_ms_per_s ÷ driver_cpu_ms_per_s",
        },
        "runs": runs,
        "summary": summary,
    }))?;
    Ok(true)
}

async fn run_pairs(args: &BenchConsoleArgs, run_dir: &Path) -> Result<Vec<RunFigures>> {
    let mut runs = Vec::new();
    for pair in 1..=args.pairs {
        eprintln!(
            "bench console: pair {pair} of {}, off and on at once: ysb {} events/s each, {WORKERS} workers × \
             {CORES_PER_WORKER} core, {BATCH_INTERVAL_MS} ms batches, {} (warm-up {})",
            args.pairs,
            args.rate,
            show(args.duration),
            show(args.warmup),
        );
        let start_ms =
            BatchClock::aligned_after(sleet_wire::clock::now_ms() + START_DELAY_MS, BATCH_INTERVAL_MS as i64).start_ms;
        let [first, second] = Mode::order(pair);
        let run =
            |mode: Mode| run_once(args, mode, pair, start_ms, run_dir.join(format!("pair-{pair}-{}", mode.name())));
        let (first, second) = tokio::try_join!(run(first), run(second))?;
        for figures in [first, second] {
            eprintln!("  {}", run_line(&figures));
            runs.push(figures);
        }
    }
    Ok(runs)
}

/// One run on a cluster of its own, so neither mode inherits the other's driver state; its
/// job's batch 0 starts at `start_ms`.
async fn run_once(args: &BenchConsoleArgs, mode: Mode, pair: u32, start_ms: i64, dir: PathBuf) -> Result<RunFigures> {
    let dir = dir.as_path();
    let (results_dir, _) = crate::ysb_run::clear_run_outputs(dir)?;
    let logs = dir.join("logs");
    let cluster = match mode {
        Mode::Off => LocalCluster::start(WORKERS, CORES_PER_WORKER, &logs)?,
        Mode::On => LocalCluster::start_serving(WORKERS, CORES_PER_WORKER, &logs, "127.0.0.1:0")?,
    };
    let driver_pid = *cluster.pids().first().context("the cluster has no driver process")?;
    let outcome = async {
        let onlookers = match (mode, &cluster.http_address) {
            (Mode::Off, _) => None,
            (Mode::On, Some(http)) => Some(Onlookers::start(http, &dir.join("chromium-profile")).await?),
            (Mode::On, None) => anyhow::bail!("the driver started with --http gave no HTTP address"),
        };
        anyhow::ensure!(
            sleet_wire::clock::now_ms() < start_ms,
            "pair {pair}, {}: the cluster was not up by the jobs' common start, {START_DELAY_MS} ms after the pair began",
            mode.name()
        );
        let options = YsbOptions {
            start_ms: Some(start_ms),
            ..ysb_options(args, SinkSpec::JsonLines { dir: results_dir.display().to_string() })
        };
        let job = ysb_job(&options)?;
        let warm_ms = start_ms + args.warmup.as_millis() as i64;
        let end_ms = start_ms + args.duration.as_millis() as i64;
        let window = async {
            tokio::select! {
                cpu = driver_cpu_ms_per_s(driver_pid, cluster.http_address.as_deref(), warm_ms, end_ms) => cpu,
                _ = crate::interrupt::wait() => Err(Interrupted.into()),
            }
        };
        let submitted = async {
            let summary = run_job(&cluster.driver_address, job, |_| {}, crate::interrupt::wait()).await;
            crate::interrupt::check()?;
            summary.with_context(|| format!("the ysb job of pair {pair}, {}", mode.name()))
        };
        // A job that fails ends the run at once, without waiting out the measured window.
        let (summary, cpu) = tokio::try_join!(submitted, window)?;
        let seen = match onlookers {
            Some(onlookers) => Some(onlookers.finish().await?),
            None => None,
        };
        let measured = measured_batches(&summary.batches, warm_ms, end_ms);
        let events_per_s = sustained(&measured)
            .with_context(|| format!("pair {pair}, {}: no batch finished after the warm-up", mode.name()))?
            .events_per_s;
        Ok::<_, anyhow::Error>((cpu, events_per_s, seen))
    }
    .await;
    cluster.shutdown().await;
    let ((driver_cpu_ms_per_s, console_cpu_ms_per_s), events_per_s, seen) = outcome?;
    let figures = RunFigures {
        mode,
        pair,
        driver_cpu_ms_per_s,
        console_cpu_ms_per_s,
        events_per_s,
        page_updates: seen.map(|seen| seen.page_updates),
        scrapes: seen.map(|seen| seen.scrapes),
    };
    if let Some(seen) = seen {
        // An update every 2 s while a job runs (docs/api.md) and a scrape a second: half of
        // either is a page or a scraper that stalled, and a run it barely looked at would
        // understate the cost.
        let seconds = args.duration.as_secs_f64();
        let least_updates = seconds / 4.0;
        let least = seconds / 2.0;
        anyhow::ensure!(
            seen.page_updates as f64 >= least_updates,
            "pair {pair}, on: the page applied {} updates over a {} job, fewer than {least_updates:.0}: it did not \
             follow the stream",
            seen.page_updates,
            show(args.duration)
        );
        anyhow::ensure!(
            seen.scrapes as f64 >= least,
            "pair {pair}, on: {} scrapes of /metrics were answered ({} failed) over a {} job, fewer than {least:.0}",
            seen.scrapes,
            seen.failed_scrapes,
            show(args.duration)
        );
    }
    Ok(figures)
}

fn ysb_options(args: &BenchConsoleArgs, sink: SinkSpec) -> YsbOptions {
    let partitions = WORKERS * CORES_PER_WORKER;
    YsbOptions {
        seed: args.seed,
        rate_per_s: args.rate,
        source_partitions: partitions,
        reduce_partitions: partitions,
        bad_fraction: 0.0,
        batch_interval_ms: BATCH_INTERVAL_MS,
        duration_ms: Some(args.duration.as_millis() as u64),
        combine: true,
        sink,
        dead_letter_dir: None,
        scheduling: SchedulerArgs::new(SchedulerKind::Group, args.group_size),
        start_ms: None,
        input: YsbInput::Generator,
        campaigns: None,
        checkpoint_interval_ms: None,
        pre_decoded: false,
    }
}

/// The driver's CPU milliseconds per second of wall time between `from_ms` and `to_ms` on
/// the wall clock (the clock batches are scheduled on).
/// With the console serving at `http`, also the CPU of its own thread over the same window
/// (`sleet_console_cpu_seconds_total`, read from its metrics at both ends): the share of the
/// driver's CPU that watching costs, to the ns, where the side-by-side difference is blurred
/// by run-to-run noise several times the budget.
async fn driver_cpu_ms_per_s(pid: u32, http: Option<&str>, from_ms: i64, to_ms: i64) -> Result<(f64, Option<f64>)> {
    let read = || cpu_seconds(pid).context("the driver's CPU time: the process is gone");
    let console = |http: Option<String>| async move {
        match http {
            None => Ok(None),
            Some(http) => tokio::task::spawn_blocking(move || onlookers::console_cpu_seconds(&http)).await?.map(Some),
        }
    };
    sleep_until_ms(from_ms).await;
    let (from_cpu_s, from) = (read()?, Instant::now());
    let from_console_s = console(http.map(str::to_string)).await?;
    sleep_until_ms(to_ms).await;
    let (to_cpu_s, wall_s) = (read()?, from.elapsed().as_secs_f64());
    let to_console_s = console(http.map(str::to_string)).await?;
    let console_ms_per_s = from_console_s.zip(to_console_s).map(|(from, to)| (to - from) * 1000.0 / wall_s);
    Ok(((to_cpu_s - from_cpu_s) * 1000.0 / wall_s, console_ms_per_s))
}

fn run_line(figures: &RunFigures) -> String {
    let mut line = format!(
        "pair {}, {}: driver {:.1} ms CPU per s, {:.0} events/s",
        figures.pair,
        figures.mode.name(),
        figures.driver_cpu_ms_per_s,
        figures.events_per_s
    );
    if let Some(console) = figures.console_cpu_ms_per_s {
        line += &format!(" (the console thread {console:.2} of them)");
    }
    if let (Some(updates), Some(scrapes)) = (figures.page_updates, figures.scrapes) {
        line += &format!(", page {updates} updates, {scrapes} scrapes answered");
    }
    line
}

fn summary_line(summary: &Summary) -> String {
    let ratios: Vec<String> = summary.pair_ratios.iter().map(|ratio| format!("{ratio:.3}")).collect();
    format!(
        "console: driver CPU {:.1} ms/s on, {:.1} off (medians of {} pairs): cost {:+.1}% of the driver's CPU \
         ({} the {:.0}% budget); the console thread's own CPU {} of the driver's; on ÷ off per pair {}; events/s \
         {:.0} on, {:.0} off",
        summary.driver_cpu_ms_per_s.on,
        summary.driver_cpu_ms_per_s.off,
        summary.pairs,
        summary.cost_share * 100.0,
        if summary.within_budget { "within" } else { "over" },
        summary.budget_share * 100.0,
        summary.console_share.map_or("unknown".to_string(), |share| format!("{:.2}%", share * 100.0)),
        ratios.join(", "),
        summary.events_per_s.on,
        summary.events_per_s.off,
    )
}
