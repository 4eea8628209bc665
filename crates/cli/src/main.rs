//! The `sleet` binary: run a local demo, a driver, a worker, submit and follow jobs (job
//! files or SQL scripts), print a job file, write a workload's input to Kafka, explain a
//! result. The benchmarks are `sleet-bench` (crates/bench); this binary links none of them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use sleet_cli::entry::{Frame, INTERRUPT_GRACE};
use sleet_cli::security::SecurityArgs;
use sleet_cli::state_report::{self, StateFullNotices};
use sleet_cli::{client, demo, explain, ingest, interrupt, sql_file, worker_limits};
use sleet_workloads::{duration_arg, gateway_job_file, gen_gateway, gen_nexmark, gen_ysb, ysb_input, ysb_job};

/// Tasks allocate on a monotask thread and free on the async thread; glibc's allocator spends
/// a fifth of a small task's time consolidating such cross-thread frees, mimalloc a fraction.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::{Parser, Subcommand};
use sleet_plan::SinkSpec;

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
        /// A submitted job starts only once this many workers have registered.
        #[arg(long, default_value_t = 1)]
        expect_workers: u32,
        /// How long a submitted job waits for --expect-workers before it fails, naming the
        /// workers that did register; a bare number is in seconds.
        #[arg(long, value_parser = duration_arg::seconds, default_value = "30s")]
        worker_wait: Duration,
        /// A stage of one batch taking longer than this fails the job; a bare number is in
        /// seconds.
        #[arg(long, value_parser = duration_arg::seconds, default_value = "60s")]
        stage_timeout: Duration,
        /// How often workers send a heartbeat; a bare number is in milliseconds.
        #[arg(long, value_parser = duration_arg::millis, default_value = "100ms")]
        heartbeat_interval: Duration,
        /// A worker silent this long is declared lost, fenced, and its partitions recovered
        /// on the others; a bare number is in milliseconds. A closed connection is noticed at
        /// once.
        #[arg(long, value_parser = duration_arg::millis, default_value = "500ms")]
        heartbeat_timeout: Duration,
        /// Where checkpoints (state snapshots and the checkpoint records) are kept: a
        /// directory every worker can reach.
        #[arg(long, default_value = "sleet-checkpoints")]
        checkpoint_dir: PathBuf,
        /// Where the running job is kept (written atomically at each attempt, removed when
        /// the job ends): a driver restarted with the same state directory resumes the job
        /// from its last checkpoint once workers re-register [default:
        /// CHECKPOINT_DIR/driver-state].
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Serve the dashboard, the JSON API (docs/api.md) and Prometheus metrics (/metrics)
        /// on this loopback address, e.g. 127.0.0.1:7078 (port 0 picks a free one); the URL
        /// is printed after the driver's address.
        #[arg(long)]
        http: Option<String>,
        #[command(flatten)]
        secret: SecurityArgs,
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
        /// HOST:PORT the driver and the other workers reach this worker's shuffle service at
        /// [default: the --listen address once bound; required when --listen is a wildcard
        /// such as 0.0.0.0].
        #[arg(long)]
        advertise: Option<String>,
        #[arg(long)]
        name: Option<String>,
        /// Run only on these cpus, as `taskset` writes them (`0-1`, `2,3`); cpu pool thread i
        /// takes the i-th. Workers sharing a host each on cores of their own start a batch's
        /// tasks together without two landing on one core [default: any cpu].
        #[arg(long)]
        cpus: Option<sleet_worker::cpu_pin::CpuList>,
        #[command(flatten)]
        limits: worker_limits::WorkerLimits,
        /// How long to keep trying to reach the driver, at start and when it goes away (a
        /// driver restarted with its state directory resumes the job with the workers that
        /// come back); 0 gives up at once. A bare number is in seconds.
        #[arg(long, value_parser = duration_arg::seconds, default_value = "30s")]
        driver_reconnect: Duration,
        #[command(flatten)]
        secret: SecurityArgs,
    },
    /// Submit a job to a driver and follow it until it ends: a job file (JSON), or a SQL
    /// script (`.sql`: tables, settings and one query; an EXPLAIN script prints its plan).
    Submit {
        job_file: PathBuf,
        #[arg(long, default_value = "127.0.0.1:7077")]
        driver: String,
        /// Print each progress report and the final summary as one JSON object a line on
        /// stdout (`{"progress": …}`, then `{"summary": …}`; the fields of docs/api.md), not
        /// status lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        secret: SecurityArgs,
    },
    /// Ask a driver's HTTP API (its --http address) how the cluster and its current job stand.
    Status {
        /// The driver's --http address.
        #[arg(long, default_value = "127.0.0.1:7078")]
        http: String,
        /// Print the API's answers (the cluster and the job, as docs/api.md has them) as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        secret: SecurityArgs,
    },
    /// Follow a job submitted earlier until it ends, e.g. after `submit` lost a driver that
    /// was restarted since.
    Attach {
        /// The job's id, as `submit` printed it.
        job: u64,
        #[arg(long, default_value = "127.0.0.1:7077")]
        driver: String,
        #[command(flatten)]
        secret: SecurityArgs,
    },
    /// Print the token the driver's HTTP API asks for, derived from the cluster secret
    /// (--secret-file or SLEET_SECRET).
    Token {
        #[command(flatten)]
        secret: SecurityArgs,
    },
    /// Compile a SQL script and print its job file (or, for EXPLAIN or with --explain, its
    /// logical and physical plan); errors name the line and column.
    Sql {
        script: PathBuf,
        /// Print the plan the job runs as, not its job file.
        #[arg(long)]
        explain: bool,
    },
    /// Print a job file for a built-in workload, to edit and `submit`.
    Job {
        #[command(subcommand)]
        workload: JobWorkload,
    },
    /// Write a workload's input to an outside system (Kafka), for a job to read.
    Gen {
        #[command(subcommand)]
        workload: GenWorkload,
    },
    /// Explain a finished benchmark from its result file: the latency breakdown, the
    /// per-resource model and bottleneck, straggler causes, blocked time, and what-if answers.
    Explain(explain::ExplainArgs),
    /// Serve HTTP and WebSocket ingest into a Kafka topic: records checked against a schema,
    /// acknowledged once Kafka has them (docs/ingest.md).
    Ingest(sleet_ingest::IngestArgs),
}

#[derive(Subcommand)]
enum JobWorkload {
    /// The Yahoo Streaming Benchmark query.
    Ysb {
        #[command(flatten)]
        ysb: ysb_job::YsbFlags,
        #[arg(long, default_value_t = 2)]
        partitions: u32,
        /// How long to run (default: until stopped); a bare number is in seconds.
        #[arg(long, value_parser = duration_arg::seconds)]
        duration: Option<Duration>,
        /// Directory the workers write the JSON-lines results to, one file per reduce
        /// partition; `-` prints them on the workers' stdout instead.
        #[arg(long, default_value = "sleet-results")]
        sink_dir: String,
        /// Write the results to this Kafka topic on --brokers instead (it must exist): one
        /// JSON record per row, keyed by campaign and window.
        #[arg(long)]
        sink_topic: Option<String>,
        /// Directory the workers write bad records to, each with its reason and, for Kafka
        /// and files, where it came from (created on the first bad record).
        #[arg(long, default_value = "sleet-dead-letters")]
        dead_letter_dir: String,
        #[command(flatten)]
        input: ysb_input::InputFlags,
    },
    /// The home-gateway job: each gateway's traffic from its readings (cumulative, counter or
    /// rate), every (day, gateway)'s total and each day's top gateways, on the built-in
    /// generator or a Kafka topic, in JSON or Avro.
    Gateway(gateway_job_file::GatewayJobArgs),
}

#[derive(Subcommand)]
enum GenWorkload {
    /// The ysb events of the built-in generator, to a Kafka topic; the campaigns table to a
    /// CSV file. Prints what it wrote as JSON on stdout.
    Ysb(gen_ysb::GenYsbArgs),
    /// Home gateways' traffic readings (some late, in one of three client encodings), keyed
    /// by gateway_id, to a Kafka topic. Prints what it sent as JSON on stdout: every
    /// parameter the ground truth is recomputed from.
    Gateway(gen_gateway::GenGatewayArgs),
    /// Nexmark's persons, auctions and bids (or the kinds of --tables), one JSON record per
    /// event, to a Kafka topic. Prints what it wrote as JSON on stdout: the generator's spec
    /// and time range, from which the ground truth is recomputed.
    Nexmark(gen_nexmark::GenNexmarkArgs),
}

fn main() -> ExitCode {
    let cli = match sleet_cli::entry::parse::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    // Before any thread starts, so that every thread of the worker inherits the cpus.
    if let Command::Worker { cpus: Some(sleet_worker::cpu_pin::CpuList(cpus)), .. } = &cli.command {
        if let Err(error) = sleet_worker::cpu_pin::pin_this_thread(cpus) {
            eprintln!("sleet: cannot run the worker on cpus {cpus:?}: {error}");
            return ExitCode::FAILURE;
        }
    }
    let server = matches!(cli.command, Command::Driver { .. } | Command::Worker { .. });
    let frame = Frame {
        program: "sleet",
        // A worker's compute runs on its own monotask pools; its async side only moves
        // messages, and one thread does that without waking a second one for every message.
        current_thread: matches!(cli.command, Command::Worker { .. }),
        // A driver or worker has nothing to hand back to the user: Ctrl-C ends it at once.
        grace: match &cli.command {
            _ if server => Duration::ZERO,
            Command::Ingest(args) => ingest::grace(args),
            _ => INTERRUPT_GRACE,
        },
    };
    sleet_cli::entry::run(frame, || run(cli.command))
}

async fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Demo(args) => demo::run(args).await?,
        Command::Driver {
            listen,
            expect_workers,
            worker_wait,
            stage_timeout,
            heartbeat_interval,
            heartbeat_timeout,
            checkpoint_dir,
            state_dir,
            http,
            secret,
        } => {
            arm_failpoints()?;
            let secret = secret.install(true)?;
            sleet_cli::security::check_exposure("--listen", &listen, secret.as_ref())?;
            if secret.is_none() {
                eprintln!(
                    "sleet driver: no cluster secret (--secret-file or SLEET_SECRET): nobody is authenticated, so only \
                     loopback addresses are served"
                );
            }
            anyhow::ensure!(expect_workers >= 1, "--expect-workers must be at least 1");
            anyhow::ensure!(
                heartbeat_timeout >= heartbeat_interval * 2,
                "--heartbeat-timeout ({}) must be at least twice --heartbeat-interval ({}), or one late beat \
                 would declare a live worker lost",
                duration_arg::show(heartbeat_timeout),
                duration_arg::show(heartbeat_interval)
            );
            let config = sleet_driver::DriverConfig {
                listen,
                expect_workers,
                worker_wait_s: worker_wait.as_secs().max(1),
                stage_timeout_s: stage_timeout.as_secs().max(1),
                heartbeats: sleet_driver::HeartbeatSettings {
                    interval: heartbeat_interval,
                    timeout: heartbeat_timeout,
                },
                checkpoint_dir,
                state_dir,
            };
            let connectors = std::sync::Arc::new(sleet_cli::connector_check::ConnectorResolver);
            match http {
                Some(http) => {
                    let listener = sleet_cli::console::bind(&http, secret.as_ref()).await?;
                    let observe = sleet_cli::console::serve_beside(listener, secret);
                    sleet_driver::run_observed(config, connectors, observe).await.context("driver failed")?
                }
                None => sleet_driver::run(config, connectors).await.context("driver failed")?,
            }
        }
        Command::Worker { driver, cores, listen, advertise, name, cpus, limits, driver_reconnect, secret } => {
            arm_failpoints()?;
            secret.install(true)?;
            let config = sleet_worker::WorkerConfig {
                driver_address: driver,
                cores,
                shuffle_listen: listen,
                advertise,
                name: name.unwrap_or_else(|| format!("worker-pid-{}", std::process::id())),
                fetches_in_flight_max: 16,
                net_bytes_per_s: limits.net_bandwidth,
                disk_bytes_per_s: limits.disk_bandwidth,
                sync_writes: limits.sync_writes,
                report_monotasks: !limits.no_monotask_records,
                driver_reconnect,
                cpus: cpus.map(|list| list.0).unwrap_or_default(),
            };
            sleet_worker::run(config).await.context("worker failed")?;
        }
        Command::Sql { script, explain } => {
            let defaults = sql_file::SqlDefaults::here(sleet_wire::clock::now_ms())?;
            match sql_file::read_sql_file(&script, &defaults)? {
                sleet_sql::Compiled::Job(job) if !explain => println!("{}", job.to_json()),
                compiled => print!("{}", sleet_sql::explain(compiled.job())?),
            }
        }
        Command::Submit { job_file, driver, json, secret } => {
            secret.install(false)?;
            let job = if sql_file::is_sql(&job_file) {
                let defaults = sql_file::SqlDefaults::here(sleet_wire::clock::now_ms())?;
                match sql_file::read_sql_file(&job_file, &defaults)? {
                    sleet_sql::Compiled::Job(job) => job,
                    sleet_sql::Compiled::Explain(job) => {
                        print!("{}", sleet_sql::explain(&job)?);
                        return Ok(ExitCode::SUCCESS);
                    }
                }
            } else {
                let text =
                    std::fs::read_to_string(&job_file).with_context(|| format!("reading {}", job_file.display()))?;
                sleet_cli::job_file::read_job_file(&job_file, &text)?
            };
            if json {
                let on_progress = |progress: &sleet_wire::JobProgress| {
                    println!("{}", serde_json::json!({ "progress": progress }));
                };
                let summary = client::run_job(&driver, job, on_progress, interrupt::wait()).await?;
                println!("{}", serde_json::json!({ "summary": summary_figures(&summary) }));
                return Ok(ExitCode::SUCCESS);
            }
            let mut notices = StateFullNotices::default();
            let on_progress = |progress: &sleet_wire::JobProgress| print_progress(progress, &mut notices);
            let summary = client::run_job(&driver, job, on_progress, interrupt::wait()).await?;
            print_summary(&summary, &mut notices);
        }
        Command::Status { http, json, secret } => {
            let token = secret.install(false)?.map(|secret| secret.api_token());
            let status =
                tokio::task::spawn_blocking(move || sleet_cli::status::fetch(&http, token.as_deref())).await??;
            match json {
                true => println!("{}", serde_json::to_string_pretty(&status)?),
                false => print!("{}", sleet_cli::status::describe(&status)),
            }
        }
        Command::Attach { job, driver, secret } => {
            secret.install(false)?;
            let mut notices = StateFullNotices::default();
            let on_progress = |progress: &sleet_wire::JobProgress| print_progress(progress, &mut notices);
            let summary = client::attach_job(&driver, job, on_progress, interrupt::wait()).await?;
            print_summary(&summary, &mut notices);
        }
        Command::Job {
            workload: JobWorkload::Ysb { ysb, partitions, duration, sink_dir, sink_topic, dead_letter_dir, input },
        } => {
            anyhow::ensure!(partitions >= 1, "--partitions must be at least 1");
            let sink = match (sink_topic, sink_dir.as_str()) {
                (Some(topic), _) => ysb_job::kafka_sink(&input.brokers, &topic),
                (None, "-") => SinkSpec::Stdout,
                (None, dir) => SinkSpec::JsonLines { dir: sleet_workloads::absolute_dir(dir, "--sink-dir")? },
            };
            let options = ysb_job::YsbOptions {
                input: input.input()?,
                campaigns: input.campaigns()?,
                dead_letter_dir: Some(sleet_workloads::absolute_dir(&dead_letter_dir, "--dead-letter-dir")?),
                ..ysb.options(partitions, duration, sink)
            };
            let job = ysb_job::ysb_job(&options)?;
            println!("{}", job.to_json());
        }
        Command::Job { workload: JobWorkload::Gateway(args) } => {
            let job = gateway_job_file::gateway_job_file(&args, sleet_wire::clock::now_ms())?;
            println!("{}", job.to_json());
        }
        Command::Token { secret } => match secret.install(false)? {
            Some(secret) => println!("{}", secret.api_token()),
            None => anyhow::bail!("no cluster secret: give --secret-file FILE or set SLEET_SECRET"),
        },
        Command::Explain(args) => explain::run(&args)?,
        Command::Ingest(args) => ingest::run(args).await?,
        Command::Gen { workload: GenWorkload::Ysb(args) } => {
            let produced = tokio::task::spawn_blocking(move || gen_ysb::run(&args)).await??;
            println!("{}", serde_json::to_string(&produced)?);
        }
        Command::Gen { workload: GenWorkload::Gateway(args) } => {
            let produced = tokio::task::spawn_blocking(move || gen_gateway::run(&args)).await??;
            println!("{}", serde_json::to_string(&produced)?);
        }
        Command::Gen { workload: GenWorkload::Nexmark(args) } => {
            let produced = tokio::task::spawn_blocking(move || gen_nexmark::run(&args)).await??;
            println!("{}", serde_json::to_string(&produced)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arms the failpoints of `SLEET_FAILPOINTS` (tests set it), and says so in the log.
fn arm_failpoints() -> Result<()> {
    let armed = sleet_failpoint::arm_from_env()?;
    for arming in armed {
        eprintln!("sleet: failpoint {} armed: {:?} at hit {}", arming.name, arming.action, arming.nth);
    }
    Ok(())
}

fn print_progress(progress: &sleet_wire::JobProgress, notices: &mut StateFullNotices) {
    sleet_cli::entry::say(&format!(
        "batches {} | {:.0} events/s | dead letters {} | lag {} ms{}",
        progress.batches_done,
        progress.events_per_s,
        progress.dead_letters,
        progress.lag_ms,
        sleet_cli::client::status_tail(progress)
    ));
    for notice in notices.new_notices(progress) {
        sleet_cli::entry::say(&notice.to_string());
    }
}

/// A job's summary without its per-batch records and samples, which make it megabytes.
fn summary_figures(summary: &sleet_wire::JobSummary) -> serde_json::Value {
    serde_json::json!({
        "job": summary.job,
        "start_ms": summary.start_ms,
        "end_ms": summary.end_ms,
        "batches_total": summary.batches_total,
        "events_in": summary.events_in,
        "dead_letters": summary.dead_letters,
        "late_rows_dropped": summary.late_rows_dropped,
        "sink_rows": summary.sink_rows,
        "recoveries": summary.recoveries,
        "rebalances": summary.rebalances,
        "restarts": summary.restarts,
        // Backpressure: of the batch records the summary keeps (the newest), those whose
        // sources were held to a read bound, and the smallest bound.
        "read_bound": {
            "batches_kept": summary.batches.len(),
            "batches_bounded": summary.batches.iter().filter(|batch| batch.read_bound.is_some()).count(),
            "bound_min": summary.batches.iter().filter_map(|batch| batch.read_bound).min(),
        },
    })
}

fn print_summary(summary: &sleet_wire::JobSummary, notices: &mut StateFullNotices) {
    println!(
        "job {} finished: {} batches, {} events in, {} dead letters, {} result rows",
        summary.job, summary.batches_total, summary.events_in, summary.dead_letters, summary.sink_rows
    );
    if let Some(line) = state_report::summary_line(summary) {
        println!("  {line}");
    }
    for notice in notices.new_notices_in_summary(summary) {
        println!("  {notice}");
    }
    for restart in &summary.restarts {
        println!("  {}", client::describe_restart(restart));
    }
    if summary.batches_before_restart > 0 {
        println!(
            "  the figures above do not count the {} batches before the restart: their driver kept none",
            summary.batches_before_restart
        );
    }
    let restarted = !summary.restarts.is_empty();
    for recovery in &summary.recoveries {
        println!(
            "  {}{}",
            client::describe_recovery(recovery),
            client::under_driver(restarted, recovery.driver_restarts)
        );
    }
    for rebalance in &summary.rebalances {
        println!(
            "  {}{}",
            client::describe_rebalance(rebalance),
            client::under_driver(restarted, rebalance.driver_restarts)
        );
    }
}
