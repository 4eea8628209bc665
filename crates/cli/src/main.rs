//! The `sleet` binary: run a local demo, a driver, a worker, submit jobs, run benchmarks.

mod batch_figures;
mod bench_sched;
mod bench_ysb;
mod client;
mod cluster;
mod demo;
mod max_rate;
mod plot;
mod rate_search;
mod scheduler_args;
mod shuffle_check;
mod ysb_check;
mod ysb_job;
mod ysb_report;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

/// Tasks allocate on a monotask thread and free on the async thread; glibc's allocator spends
/// a fifth of a small task's time consolidating such cross-thread frees, mimalloc a fraction.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::{Parser, Subcommand};
use sleet_plan::{JobFile, SinkSpec};

#[derive(Parser)]
#[command(name = "sleet", version, about = "A distributed micro-batch stream processing engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a driver and workers on 127.0.0.1 with the Yahoo Streaming Benchmark; Ctrl-C stops all.
    Demo(demo::DemoArgs),
    /// Run the driver: it accepts workers and jobs, and prints its address on stdout.
    Driver {
        #[arg(long, default_value = "127.0.0.1:7077")]
        listen: String,
        /// A submitted job waits until this many workers have registered (at most 30 s).
        #[arg(long, default_value_t = 1)]
        expect_workers: u32,
        /// A stage of one batch taking longer than this fails the job.
        #[arg(long, default_value_t = 60)]
        stage_timeout: u64,
    },
    /// Run a worker that registers with the driver at HOST:PORT.
    Worker {
        #[arg(long)]
        driver: String,
        /// Cores this worker runs compute on (its CPU pool size).
        #[arg(long, default_value_t = 1)]
        cores: u32,
        /// Address of this worker's shuffle service; port 0 picks a free port.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Submit a job file to a driver and follow it until it ends.
    Submit {
        job_file: PathBuf,
        #[arg(long, default_value = "127.0.0.1:7077")]
        driver: String,
    },
    /// Print a job file for a built-in workload, to edit and `submit`.
    Job {
        #[command(subcommand)]
        workload: JobWorkload,
    },
    /// Run a benchmark of WORKLOADS.md on a local cluster and check its results.
    Bench {
        #[command(subcommand)]
        workload: BenchWorkload,
    },
}

#[derive(Subcommand)]
enum JobWorkload {
    /// The Yahoo Streaming Benchmark query.
    Ysb {
        #[arg(long, default_value_t = 100_000)]
        rate: u64,
        #[arg(long, default_value_t = 2)]
        partitions: u32,
        #[arg(long, default_value_t = 100)]
        batch_interval: u64,
        /// Seconds to run; default until stopped.
        #[arg(long)]
        duration: Option<u64>,
        /// Directory for the JSON-lines results; default stdout.
        #[arg(long)]
        sink_dir: Option<String>,
        #[command(flatten)]
        scheduling: scheduler_args::SchedulerArgs,
    },
}

#[derive(Subcommand)]
enum BenchWorkload {
    /// The Yahoo Streaming Benchmark (WORKLOADS §1).
    Ysb(bench_ysb::BenchYsbArgs),
    /// Scheduling micro-benchmark: one stage of tiny tasks (WORKLOADS §4).
    Sched(bench_sched::BenchSchedArgs),
    /// Scheduling micro-benchmark: `sched` plus a reduce stage behind a shuffle (WORKLOADS §4).
    Shuffle(bench_sched::BenchSchedArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A worker's compute runs on its own monotask pools; its async side only moves messages,
    // and one thread does that without waking a second one for every message.
    let builder = match &cli.command {
        Command::Worker { .. } => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        }
    };
    let runtime = match { builder }.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sleet: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("sleet: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Demo(args) => demo::run(args).await?,
        Command::Driver { listen, expect_workers, stage_timeout } => {
            let config = sleet_driver::DriverConfig {
                listen,
                expect_workers,
                stage_timeout_s: stage_timeout,
                ..sleet_driver::DriverConfig::default()
            };
            sleet_driver::run(config).await.context("driver failed")?;
        }
        Command::Worker { driver, cores, listen, name } => {
            let config = sleet_worker::WorkerConfig {
                driver_address: driver,
                cores,
                shuffle_listen: listen,
                advertise: None,
                name: name.unwrap_or_else(|| format!("worker-pid-{}", std::process::id())),
                fetches_in_flight_max: 16,
            };
            sleet_worker::run(config).await.context("worker failed")?;
        }
        Command::Submit { job_file, driver } => {
            let text = std::fs::read_to_string(&job_file).with_context(|| format!("reading {}", job_file.display()))?;
            let job =
                JobFile::from_json(&text).with_context(|| format!("{} is not a valid job", job_file.display()))?;
            let summary = client::run_job(
                &driver,
                job,
                |progress| {
                    eprintln!(
                        "batches {} | {:.0} events/s | dead letters {} | lag {} ms",
                        progress.batches_done, progress.events_per_s, progress.dead_letters, progress.lag_ms
                    )
                },
                async {
                    let _ = tokio::signal::ctrl_c().await;
                },
            )
            .await?;
            println!(
                "job {} finished: {} batches, {} events in, {} dead letters, {} result rows",
                summary.job, summary.batches_total, summary.events_in, summary.dead_letters, summary.sink_rows
            );
        }
        Command::Job {
            workload: JobWorkload::Ysb { rate, partitions, batch_interval, duration, sink_dir, scheduling },
        } => {
            let job = ysb_job::ysb_job(&ysb_job::YsbOptions {
                seed: 1,
                rate_per_s: rate,
                source_partitions: partitions,
                reduce_partitions: partitions,
                bad_fraction: 0.0,
                batch_interval_ms: batch_interval,
                duration_ms: duration.map(|seconds| seconds * 1000),
                combine: true,
                sink: sink_dir.map_or(SinkSpec::Stdout, |dir| SinkSpec::JsonLines { dir }),
                dead_letter_dir: None,
                scheduling,
                start_ms: None,
            })?;
            println!("{}", job.to_json());
        }
        Command::Bench { workload: BenchWorkload::Ysb(args) } => {
            if !bench_ysb::run(args).await? {
                eprintln!("sleet: the results do not match the ground truth");
                return Ok(ExitCode::from(2));
            }
        }
        Command::Bench { workload: BenchWorkload::Sched(args) } => {
            if !bench_sched::run(bench_sched::Shape::Sched, args).await? {
                eprintln!("sleet: some batches did not run every task exactly once");
                return Ok(ExitCode::from(2));
            }
        }
        Command::Bench { workload: BenchWorkload::Shuffle(args) } => {
            if !bench_sched::run(bench_sched::Shape::Shuffle, args).await? {
                eprintln!("sleet: some batches did not run every task exactly once, or their totals are wrong");
                return Ok(ExitCode::from(2));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
