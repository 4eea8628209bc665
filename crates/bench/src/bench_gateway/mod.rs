//! `sleet-bench gateway`: the home-gateway pipeline (generator → ingest server over HTTP or
//! WebSocket → Kafka → the gateway job → sink), each run checked against the generator's ground truth: every final day's top 10
//! exact for `counter` and `cumulative`, within 0.1 % for `rate`.
//!
//! One run by its flags, or one of the field study's experiments as a sweep (`--sweep`):
//! encodings × formats at one rate, HTTP against WebSocket, partitions 1–4 at one rate, and
//! per partition count the smallest stable batch interval. A sweep writes its runs' JSON and
//! a plot.

mod census;
mod figures;
mod run;
mod sweep;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use sleet_workloads::gen_gateway::{EncodingArg, FormatArg};

pub use run::{run_once, RunConfig, Victim};

use crate::output::{write_output, BenchOutputArgs};

/// Where a run's records come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Feed {
    /// The engine's built-in gateway source: no Kafka, the job's own cost alone.
    Builtin,
    /// `sleet gen gateway --to kafka` into a fresh topic, read back by the job.
    Kafka,
    /// The generator posts batches to the cluster's `sleet ingest` server, which writes the
    /// topic.
    Http,
    /// The generator streams to the ingest server over a WebSocket.
    Ws,
}

impl Feed {
    pub fn as_str(self) -> &'static str {
        match self {
            Feed::Builtin => "builtin",
            Feed::Kafka => "kafka",
            Feed::Http => "http",
            Feed::Ws => "ws",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepKind {
    /// Every encoding in JSON and Avro at --rate: batch processing time and CPU per record.
    Encodings,
    /// HTTP and WebSocket, each in JSON and Avro, at --rate: the ingest server's CPU per
    /// record and acknowledgement latency.
    Transports,
    /// 1 to 4 partitions (and reduce partitions) at --rate: throughput and delay.
    Partitions,
    /// For 1 to 4 partitions, the smallest stable batch interval at --rate.
    Interval,
}

impl SweepKind {
    /// Its name on the command line, which a result file records as its `sweep`.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self).map_or_else(String::new, |value| value.get_name().to_string())
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchGatewayArgs {
    /// Where the records come from; all but `builtin` need a broker at --brokers
    /// (`scripts/kafka.sh start` runs one).
    #[arg(long, value_enum, default_value_t = Feed::Kafka)]
    pub feed: Feed,
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    #[arg(long, value_enum, default_value_t = FormatArg::Json)]
    pub format: FormatArg,
    #[arg(long, value_enum, default_value_t = EncodingArg::Cumulative)]
    pub encoding: EncodingArg,
    /// Source partitions (topic partitions) and reduce partitions.
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    #[arg(long, default_value_t = 1)]
    pub workers: u32,
    #[arg(long, default_value_t = 2)]
    pub cores_per_worker: u32,
    /// Records per second over all gateways.
    #[arg(long, default_value_t = 100_000)]
    pub rate: u64,
    /// Gateways reporting; each reports once a minute of simulated time, so the rate sets
    /// how fast simulated time runs (10 000 gateways at 100 000 records/s: a day in 144 s).
    #[arg(long, default_value_t = 10_000)]
    pub gateways: u32,
    /// How long the gateways report (wall time); a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "60s")]
    pub duration: Duration,
    #[arg(long, value_parser = crate::duration_arg::millis, default_value = "100ms")]
    pub batch_interval: Duration,
    #[arg(long, value_parser = crate::duration_arg::millis, default_value = "1000ms")]
    pub checkpoint_interval: Duration,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// SIGKILL the cluster's last worker this long into the run (the job must stay exact).
    #[arg(long, value_parser = crate::duration_arg::seconds, conflicts_with = "kill_ingest_at")]
    pub kill_worker_at: Option<Duration>,
    /// With --feed http|ws: SIGKILL the ingest server this long into the run and start it
    /// again on its address; no acknowledged record may be missing from the topic (read
    /// back `read_committed`) and the job must stay exact.
    #[arg(long, value_parser = crate::duration_arg::seconds)]
    pub kill_ingest_at: Option<Duration>,
    /// With --feed http|ws: records per request or message.
    #[arg(long, default_value_t = 500)]
    pub request_records: usize,
    /// With --feed http|ws: requests (or messages) in flight per generator partition.
    #[arg(long, default_value_t = 4)]
    pub in_flight: usize,
    /// Run one of the study's experiments instead of one run.
    #[arg(long, value_enum)]
    pub sweep: Option<SweepKind>,
    /// With --sweep: write the plot here (SVG).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// With --sweep and --plot: run nothing, draw the plot again from the points of this
    /// result file, which the same sweep wrote (pass the flags it ran with, for the title).
    #[arg(long, requires_all = ["sweep", "plot"])]
    pub replot: Option<PathBuf>,
    #[command(flatten)]
    pub output: BenchOutputArgs,
}

impl BenchGatewayArgs {
    fn config(&self) -> RunConfig {
        RunConfig {
            feed: self.feed,
            brokers: self.brokers.clone(),
            format: self.format.into(),
            encoding: self.encoding.into(),
            partitions: self.partitions,
            workers: self.workers,
            cores_per_worker: self.cores_per_worker,
            rate: self.rate,
            gateways: self.gateways,
            duration: self.duration,
            batch_interval_ms: self.batch_interval.as_millis() as u64,
            checkpoint_interval_ms: self.checkpoint_interval.as_millis() as u64,
            seed: self.seed,
            kill: self
                .kill_worker_at
                .map(|at| (Victim::Worker, at))
                .or(self.kill_ingest_at.map(|at| (Victim::Ingest, at))),
            request_records: self.request_records,
            in_flight: self.in_flight,
        }
    }
}

/// Runs the benchmark; false when some run's results differ from the ground truth.
pub async fn run(args: BenchGatewayArgs) -> Result<bool> {
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    anyhow::ensure!(args.rate >= 1 && args.gateways >= 1, "--rate and --gateways must be at least 1");
    anyhow::ensure!(
        args.kill_ingest_at.is_none() || matches!(args.feed, Feed::Http | Feed::Ws),
        "--kill-ingest-at needs --feed http or ws: only they run an ingest server"
    );
    if let (Some(kind), Some(result), Some(plot)) = (args.sweep, &args.replot, &args.plot) {
        return replot(kind, &args.config(), result, plot).map(|()| true);
    }
    let run_dir = args.output.prepare("bench gateway")?;
    let (json, exact) = match args.sweep {
        None => {
            let result = run_once(&args.config(), &run_dir.path).await?;
            let exact = result.exact();
            (serde_json::json!({ "benchmark": "gateway", "engine": "sleet", "run": result.json }), exact)
        }
        Some(kind) => sweep::run(kind, &args.config(), &run_dir.path, args.plot.as_deref()).await?,
    };
    args.output.emit(&json)?;
    run_dir.finish(exact);
    Ok(exact)
}

fn replot(kind: SweepKind, base: &RunConfig, result: &Path, plot: &Path) -> Result<()> {
    let text = std::fs::read_to_string(result).with_context(|| format!("reading {}", result.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", result.display()))?;
    let swept = json["sweep"].as_str().unwrap_or("none");
    let asked = kind.name();
    anyhow::ensure!(swept == asked, "{} holds the `{swept}` sweep, not `{asked}`", result.display());
    let points = json["points"].as_array().with_context(|| format!("{} has no `points`", result.display()))?;
    write_output(plot, &(sweep::plot_of(kind, base, points) + "\n"))
}
