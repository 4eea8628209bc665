//! `sleet demo`: a driver and workers on 127.0.0.1 running ysb, with a status line each second.

use std::path::PathBuf;

use anyhow::Result;
use sleet_plan::SinkSpec;

use crate::client::run_job;
use crate::cluster::LocalCluster;
use crate::ysb_job::{ysb_job, YsbOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Input events per second.
    #[arg(long, default_value_t = 100_000)]
    pub rate: u64,
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    #[arg(long, default_value_t = 100)]
    pub batch_interval: u64,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    pub duration: Option<u64>,
    /// Share of generated records that are malformed, to watch the dead-letter path.
    #[arg(long, default_value_t = 0.001)]
    pub bad_fraction: f64,
    /// Where results, dead letters and process logs go.
    #[arg(long, default_value = "out/demo")]
    pub out: PathBuf,
    #[command(flatten)]
    pub scheduling: crate::scheduler_args::SchedulerArgs,
}

pub async fn run(args: DemoArgs) -> Result<()> {
    let results = args.out.join("results");
    let dead_letters = args.out.join("dead-letters");
    for dir in [&results, &dead_letters] {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
    }
    let job = ysb_job(&YsbOptions {
        seed: 1,
        rate_per_s: args.rate,
        source_partitions: args.workers,
        reduce_partitions: args.workers,
        bad_fraction: args.bad_fraction,
        batch_interval_ms: args.batch_interval,
        duration_ms: args.duration.map(|seconds| seconds * 1000),
        combine: true,
        sink: SinkSpec::JsonLines { dir: results.display().to_string() },
        dead_letter_dir: Some(dead_letters.display().to_string()),
        scheduling: args.scheduling.clone(),
        start_ms: None,
    })?;
    let cluster = LocalCluster::start(args.workers, 1, &args.out.join("logs"))?;
    println!(
        "sleet demo: driver on {}, {} workers (pids {:?}), ysb at {} events/s in {} ms batches, {}",
        cluster.driver_address,
        args.workers,
        cluster.worker_pids(),
        args.rate,
        args.batch_interval,
        args.scheduling.describe()
    );
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
                crate::bench_ysb::group_status(progress)
            );
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
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
