//! `sleet demo`: a driver and workers on 127.0.0.1 running ysb, with a status line each second.

use std::path::PathBuf;

use anyhow::Result;
use sleet_plan::SinkSpec;

use crate::client::run_job;
use crate::cluster::LocalCluster;
use crate::run_dir::RunDir;
use sleet_workloads::ysb_job::{ysb_job, YsbFlags, YsbOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub ysb: YsbFlags,
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Stop after this long (default: run until Ctrl-C); a bare number is in seconds.
    #[arg(long, value_parser = sleet_workloads::duration_arg::seconds)]
    pub duration: Option<std::time::Duration>,
    /// Share of generated records that are malformed, to watch the dead-letter path.
    #[arg(long, default_value_t = 0.001)]
    pub bad_fraction: f64,
    /// Where results, dead letters and process logs go. A directory that holds files sleet
    /// did not write is refused unless --force.
    #[arg(long, default_value = "out/demo")]
    pub out: PathBuf,
    /// Write into an --out directory that holds other files (its results/, dead-letters/ and
    /// logs/ are replaced).
    #[arg(long)]
    pub force: bool,
    /// Where the driver serves the live dashboard, its API and metrics (a loopback address;
    /// port 0 picks a free one) [default: 127.0.0.1:7078, or a free port when that one is
    /// taken, e.g. by another demo].
    #[arg(long)]
    pub http: Option<String>,
}

const DEFAULT_HTTP: &str = "127.0.0.1:7078";

/// The address asked for, or the default one if it is free, else any free port: a second demo
/// beside the first still gets a dashboard.
fn dashboard_address(asked: Option<&str>) -> String {
    match asked {
        Some(address) => address.to_string(),
        None if std::net::TcpListener::bind(DEFAULT_HTTP).is_ok() => DEFAULT_HTTP.to_string(),
        None => "127.0.0.1:0".to_string(),
    }
}

pub async fn run(args: DemoArgs) -> Result<()> {
    anyhow::ensure!(args.workers > 0, "--workers must be positive");
    anyhow::ensure!((0.0..1.0).contains(&args.bad_fraction), "--bad-fraction must be in [0, 1)");
    let run_dir = RunDir::prepare(Some(&args.out), args.force, "demo")?;
    let results = run_dir.fresh("results")?;
    let dead_letters = run_dir.fresh("dead-letters")?;
    let sink = SinkSpec::JsonLines { dir: results.display().to_string() };
    let job = ysb_job(&YsbOptions {
        bad_fraction: args.bad_fraction,
        dead_letter_dir: Some(dead_letters.display().to_string()),
        ..args.ysb.options(args.workers, args.duration, sink)
    })?;
    let http = dashboard_address(args.http.as_deref());
    let cluster = LocalCluster::start_serving(args.workers, 1, &run_dir.path.join("logs"), &http)?;
    println!(
        "sleet demo: driver on {}, {} workers (pids {:?}), ysb at {} events/s in {} ms batches, {}",
        cluster.driver_address,
        args.workers,
        cluster.worker_pids(),
        args.ysb.rate,
        args.ysb.batch_interval_ms(),
        args.ysb.scheduling.describe()
    );
    if let Some(http) = &cluster.http_address {
        println!("sleet demo: dashboard on http://{http}/");
    }
    println!(
        "results in {}, dead letters in {}, logs in {}",
        results.display(),
        dead_letters.display(),
        cluster.log_dir.display()
    );
    println!("press Ctrl-C to stop");
    let outcome = run_job(
        &cluster.driver_address,
        job,
        |progress| {
            let latency = |value: Option<f64>| value.map_or("-".to_string(), |ms| format!("{ms:.0} ms"));
            println!(
                "in {:>9.0} events/s | batches {:>6} | window latency p50 {:>7} p99 {:>7} | dead letters {:>6} | lag {} ms{}",
                progress.events_per_s,
                progress.batches_done,
                latency(progress.window_latency_ms_p50),
                latency(progress.window_latency_ms_p99),
                progress.dead_letters,
                progress.lag_ms,
                crate::client::status_tail(progress)
            );
        },
        async {
            crate::interrupt::wait().await;
            println!("stopping…");
        },
    )
    .await;
    cluster.shutdown().await;
    let summary = outcome?;
    println!(
        "stopped after {} batches: {} events in, {} dead letters, {} result rows; every process has exited",
        summary.batches_total, summary.events_in, summary.dead_letters, summary.sink_rows
    );
    Ok(())
}
