//! The `sleet-bench` binary: the benchmarks `benchmarks/README.md` describes, each on a local
//! cluster of the `sleet` binary beside this one, checked against its workload's ground truth.
//!
//! ```text
//!  main.rs ──▶ bench_ysb ──▶ ysb_run (one run: BenchYsbArgs, Probe, RunOutcome)
//!          │       └──────▶ max_rate (probes) ─▶ ysb_run
//!          ├─▶ bench_sched (sched, shuffle)
//!          ├─▶ bench_nexmark (q0–q2 and q7 as SQL scripts, checked against nexmark_check)
//!          ├─▶ bench_recovery, bench_chaos (a worker or the driver lost mid-run)
//!          ├─▶ bench_console (the driver's CPU with its console served and watched, or not)
//!          └─▶ bench_bottleneck, bench_whatif ──▶ ysb_case (a run by its flags) ──▶ ysb_run
//!  ysb_run ──▶ sleet_cli::{cluster, client} (processes, jobs), sleet_workloads (the job, its
//!              ground truth), sink_watch + host_capacity + task_calibration (measuring),
//!              ysb_report (judging: ground truth, figures, the clarity section)
//! ```
//!
//! Arrows go from here to the product (`sleet-cli`) and the workloads, never back.

mod batch_figures;
mod bench_bottleneck;
mod bench_chaos;
mod bench_console;
mod bench_gateway;
mod bench_nexmark;
mod bench_recovery;
mod bench_sched;
mod bench_whatif;
mod bench_ysb;
mod breakdown_check;
mod cpu_time;
mod host_capacity;
mod max_rate;
mod memory_watch;
mod output;
mod plot;
mod plot_bars;
mod producer_process;
mod rate_search;
mod read_all;
mod sink_watch;
mod task_calibration;
mod ysb_case;
mod ysb_report;
mod ysb_run;

// The product's and the workloads' modules, under the names the harness has always used for
// them (`crate::client`, `crate::ysb_job`, …).
use sleet_cli::{clarity_report, client, cluster, interrupt, worker_limits};
use sleet_workloads::{duration_arg, gen_ysb, scheduler_args, shuffle_check, ysb_check, ysb_input, ysb_job};

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use sleet_cli::entry::{Frame, INTERRUPT_GRACE};

/// The benchmarks measure `sleet` processes, but calibrate the host and the source stage's
/// fixed cost in this one, with the allocator the workers use.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sleet-bench",
    version,
    about = "Benchmarks of sleet on a local cluster, each checked against its ground truth (benchmarks/README.md)"
)]
struct Cli {
    #[command(subcommand)]
    workload: BenchWorkload,
}

#[derive(Subcommand)]
enum BenchWorkload {
    /// The Yahoo Streaming Benchmark (benchmarks/README.md).
    Ysb(Box<bench_ysb::BenchYsbCommand>),
    /// Scheduling micro-benchmark: one stage of tiny tasks, so coordination is all that is left.
    Sched(bench_sched::BenchSchedArgs),
    /// Scheduling micro-benchmark: `sched` plus a reduce stage behind a shuffle.
    Shuffle(bench_sched::BenchSchedArgs),
    /// ysb with one worker killed or stopped mid-run: detection, latency, recovery time and
    /// correctness.
    Recovery(bench_recovery::BenchRecoveryArgs),
    /// ysb while workers are killed or frozen at random times and replaced: results must
    /// equal the ground truth with no committed row twice.
    Chaos(bench_chaos::BenchChaosArgs),
    /// Engineers cpu-, network-, disk-, source- and coordination-bound ysb runs and checks
    /// that the performance model names the engineered bottleneck in every repeat.
    Bottleneck(bench_bottleneck::BenchBottleneckArgs),
    /// Validates the what-if answers: per scenario a baseline, the prediction from its
    /// records and the changed run, taken back to back, for eight scenarios; medians of the
    /// repeats, predicted against measured batch time.
    Whatif(bench_whatif::BenchWhatifArgs),
    /// The home-gateway pipeline (generator → Kafka → keyed state and a daily top 10): one
    /// run or one of the field study's sweeps, checked against the generator's ground truth.
    Gateway(bench_gateway::BenchGatewayArgs),
    /// Nexmark q0–q2 and q7 as SQL scripts on the built-in Nexmark generator: throughput, CPU
    /// per event and latency at one rate or the largest sustained, each run checked exactly
    /// against the ground truth.
    Nexmark(bench_nexmark::BenchNexmarkArgs),
    /// What serving the console costs the driver: its CPU with `--http`, one dashboard page
    /// open in headless Chromium and a scrape of /metrics every second, against the same ysb
    /// run without `--http`, in pairs of runs alternating the order.
    Console(bench_console::BenchConsoleArgs),
}

fn main() -> ExitCode {
    let cli = match sleet_cli::entry::parse::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let frame = Frame { program: "sleet-bench", current_thread: false, grace: INTERRUPT_GRACE };
    sleet_cli::entry::run(frame, || run(cli.workload))
}

/// Exit code 2: the results do not match their ground truth.
const MISMATCH: u8 = 2;

async fn run(workload: BenchWorkload) -> Result<ExitCode> {
    let (passed, mismatch) = match workload {
        BenchWorkload::Ysb(args) => (bench_ysb::run(*args).await?, Some("the results do not match the ground truth")),
        BenchWorkload::Sched(args) => (
            bench_sched::run(bench_sched::Shape::Sched, args).await?,
            Some("some batches did not run every task exactly once"),
        ),
        BenchWorkload::Shuffle(args) => (
            bench_sched::run(bench_sched::Shape::Shuffle, args).await?,
            Some("some batches did not run every task exactly once, or their totals are wrong"),
        ),
        BenchWorkload::Recovery(args) => {
            (bench_recovery::run(args).await?, Some("the results of some run do not match the ground truth"))
        }
        BenchWorkload::Chaos(args) => (
            bench_chaos::run(args).await?,
            Some("the results do not match the ground truth, or a committed row appears twice"),
        ),
        BenchWorkload::Bottleneck(args) => (bench_bottleneck::run(args).await?, None),
        BenchWorkload::Whatif(args) => (bench_whatif::run(args).await?, None),
        BenchWorkload::Gateway(args) => {
            (bench_gateway::run(args).await?, Some("some day's top 10 does not match the ground truth"))
        }
        BenchWorkload::Nexmark(args) => (
            bench_nexmark::run(args).await?,
            Some("some query's results do not match the ground truth, or no probed rate was sustained"),
        ),
        BenchWorkload::Console(args) => (bench_console::run(args).await?, None),
    };
    Ok(match (passed, mismatch) {
        (true, _) => ExitCode::SUCCESS,
        (false, Some(what)) => {
            eprintln!("sleet-bench: {what}");
            ExitCode::from(MISMATCH)
        }
        (false, None) => ExitCode::FAILURE,
    })
}
