//! `sleet-bench nexmark`: Nexmark's queries as the SQL scripts under `benchmarks/nexmark/`, run
//! on a local cluster from the built-in Nexmark generator, measured and checked exactly
//! against `sleet_workloads::nexmark_check`; at one rate, or the largest rate sustained
//! (`--rate max`, a `RateSearch`).
//!
//! ```text
//!  mod.rs (flags, queries, rate search) ──▶ run (one run: cluster, CPU, figures)
//!                                              ├─▶ script (the script compiled, the run's settings over it)
//!                                              └─▶ sleet_workloads::nexmark_exact (the sink against nexmark_check)
//! ```

mod run;
mod script;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use sleet_workloads::nexmark_exact::Query;

use crate::output::BenchOutputArgs;
use crate::rate_search::{ProbeResult, RateSearch};
use run::{run_once, RunConfig, RunResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryChoice {
    Q0,
    Q1,
    Q2,
    Q3,
    Q5,
    Q7,
    Q8,
    /// q0, q1, q2, q3, q5, q7 and q8, one after another.
    All,
}

impl QueryChoice {
    fn queries(self) -> Vec<Query> {
        match self {
            QueryChoice::Q0 => vec![Query::Q0],
            QueryChoice::Q1 => vec![Query::Q1],
            QueryChoice::Q2 => vec![Query::Q2],
            QueryChoice::Q3 => vec![Query::Q3],
            QueryChoice::Q5 => vec![Query::Q5],
            QueryChoice::Q7 => vec![Query::Q7],
            QueryChoice::Q8 => vec![Query::Q8],
            QueryChoice::All => Query::ALL.to_vec(),
        }
    }
}

/// `--rate`: events per second offered, or the search for the largest sustained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateChoice {
    Fixed(u64),
    Max,
}

impl FromStr for RateChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<RateChoice, String> {
        match text {
            "max" => Ok(RateChoice::Max),
            number => match number.replace('_', "").parse::<u64>() {
                Ok(rate) if rate > 0 => Ok(RateChoice::Fixed(rate)),
                _ => Err(format!("'{text}' is neither a positive number of events per second nor `max`")),
            },
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchNexmarkArgs {
    /// The query to run (its script is `<queries-dir>/<query>.sql`), or all of them in turn.
    #[arg(long, value_enum, default_value_t = QueryChoice::All)]
    pub query: QueryChoice,
    /// Where the queries' SQL scripts are (default: benchmarks/nexmark of this checkout).
    #[arg(long)]
    pub queries_dir: Option<PathBuf>,
    /// Events per second the generator offers, over all partitions; `max` searches for the
    /// largest rate the cluster sustains (kept up, and exact unless --no-check).
    #[arg(long, default_value = "100000")]
    pub rate: RateChoice,
    /// With --rate max: the first rate probed.
    #[arg(long, default_value_t = 100_000)]
    pub search_start: u64,
    /// With --rate max: the search ends when the highest sustained rate and the lowest not
    /// sustained are within this share of each other.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// With --rate max: probes per query at most, each of --duration.
    #[arg(long, default_value_t = 10)]
    pub max_probes: u32,
    /// Generator partitions (source tasks per batch); default one per worker core.
    #[arg(long)]
    pub partitions: Option<u32>,
    /// The batch interval (10ms, 100ms, …); a bare number is in milliseconds.
    #[arg(long, value_parser = crate::duration_arg::millis, default_value = "100ms")]
    pub batch_interval: Duration,
    /// Worker processes of the local cluster.
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Cores each worker may use.
    #[arg(long, default_value_t = 1)]
    pub cores_per_worker: u32,
    /// Length of each run, warm-up included, in batches' time; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "30s")]
    pub duration: Duration,
    /// Time at the start of a run left out of throughput, CPU, latency and stability
    /// figures; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "5s")]
    pub warmup: Duration,
    /// Keep the script's own sink (its blackhole) and skip the exactness check: nothing is
    /// written, and the ground truth (held in memory) is not computed.
    #[arg(long)]
    pub no_check: bool,
    #[command(flatten)]
    pub output: BenchOutputArgs,
}

impl BenchNexmarkArgs {
    fn queries_dir(&self) -> PathBuf {
        if let Some(dir) = &self.queries_dir {
            return dir.clone();
        }
        let here = Path::new("benchmarks/nexmark");
        if here.is_dir() {
            return here.to_path_buf();
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/nexmark")
    }

    fn config(&self, query: Query, rate: u64) -> RunConfig {
        RunConfig {
            query,
            script: self.queries_dir().join(format!("{}.sql", query.name())),
            rate,
            partitions: self.partitions.unwrap_or(self.workers * self.cores_per_worker),
            workers: self.workers,
            cores_per_worker: self.cores_per_worker,
            batch_interval_ms: self.batch_interval.as_millis() as u64,
            duration: self.duration,
            warmup: self.warmup,
            check: !self.no_check,
            give_up_lag_ms: None,
        }
    }
}

/// Runs the benchmark; false when some run's sink differs from the ground truth, or a search
/// found no sustained rate.
pub async fn run(args: BenchNexmarkArgs) -> Result<bool> {
    anyhow::ensure!(args.workers > 0 && args.cores_per_worker > 0, "--workers and --cores-per-worker must be positive");
    anyhow::ensure!(args.partitions != Some(0), "--partitions must be positive");
    anyhow::ensure!(args.batch_interval >= Duration::from_millis(1), "--batch-interval must be at least 1ms");
    anyhow::ensure!(
        args.warmup < args.duration,
        "--warmup ({}) must be shorter than --duration ({}): nothing would be measured",
        crate::duration_arg::show(args.warmup),
        crate::duration_arg::show(args.duration)
    );
    anyhow::ensure!((0.001..0.5).contains(&args.tolerance), "--tolerance must be in [0.001, 0.5)");
    anyhow::ensure!(args.search_start > 0 && args.max_probes > 0, "--search-start and --max-probes must be positive");
    let run_dir = args.output.prepare("bench nexmark")?;
    let mut runs = Vec::new();
    let mut passed = true;
    for query in args.query.queries() {
        let dir = run_dir.path.join(query.name());
        let (json, ok) = match args.rate {
            RateChoice::Fixed(rate) => {
                let result = run_once(&args.config(query, rate), &dir).await?;
                let ok = result.exactness.as_ref().is_none_or(|verdict| verdict.exact);
                (result.json, ok)
            }
            RateChoice::Max => search(&args, query, &dir).await?,
        };
        passed &= ok;
        runs.push(json);
    }
    let summary = json!({
        "benchmark": "nexmark",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "runs": runs,
    });
    args.output.emit(&summary)?;
    for run in &runs {
        eprintln!("{}", summary_line(run));
    }
    run_dir.finish(passed);
    Ok(passed)
}

/// One line per run, the columns of benchmarks/README.md's Nexmark table.
fn summary_line(run: &serde_json::Value) -> String {
    let number =
        |value: &serde_json::Value, digits: usize| value.as_f64().map_or("-".into(), |v| format!("{v:.digits$}"));
    format!(
        "nexmark {}: {} ms batches, {} events/s{}, {} events/s per core, {} µs CPU/event, p99 latency {} ms, exact {}, {} samples",
        run["query"].as_str().unwrap_or("?"),
        run["config"]["batch_interval_ms"],
        number(&run["events_per_s"], 0),
        if run["sustained"].as_bool() == Some(true) { " sustained" } else { " NOT sustained" },
        number(&run["events_per_s_per_core"], 0),
        number(&run["cpu_us_per_event"], 2),
        number(&run["latency_ms"]["p99"], 1),
        run["exact"],
        run["latency_ms"]["samples"],
    )
}

/// The largest rate `query` sustains: probes of --duration chosen by `RateSearch`. The result
/// is the highest sustained probe's object, with every probe listed; `false` when none was.
async fn search(args: &BenchNexmarkArgs, query: Query, run_dir: &Path) -> Result<(serde_json::Value, bool)> {
    let mut search = RateSearch::new(args.tolerance);
    let mut rate = args.search_start;
    let mut probes = Vec::new();
    let mut sustained: Vec<(u64, RunResult)> = Vec::new();
    for index in 1..=args.max_probes {
        eprintln!(
            "nexmark {} rate search: probe {index} of at most {}, {rate} events/s",
            query.name(),
            args.max_probes
        );
        let config = RunConfig {
            give_up_lag_ms: Some(crate::ysb_run::Probe::give_up_lag_ms(args.batch_interval.as_millis() as u64)),
            ..args.config(query, rate)
        };
        let result = run_once(&config, &run_dir.join(format!("probe-{index}"))).await?;
        let kept_up = result.sustained();
        probes.push(json!({
            "rate": rate,
            "sustained": kept_up,
            "stable": result.stable,
            "exact": result.exactness.as_ref().map(|verdict| verdict.exact),
            "events_per_s": result.events_per_s,
        }));
        search.record(ProbeResult { rate, kept_up, processed_per_s: result.events_per_s });
        if kept_up {
            sustained.push((rate, result));
        }
        match search.next() {
            Some(next) => rate = next,
            None => break,
        }
    }
    let found = search.highest_kept();
    // Out of probes before a rate that failed was found above it, the answer is a floor.
    let converged = search.next().is_none();
    eprintln!(
        "nexmark {} rate search: {}",
        query.name(),
        match (found, converged) {
            (None, _) => "no probed rate was sustained".to_string(),
            (Some(rate), true) => format!("{rate} events/s sustained"),
            (Some(rate), false) => format!("{rate} events/s sustained; out of probes, so more may be"),
        }
    );
    let best = sustained.into_iter().rev().find(|(rate, _)| Some(*rate) == found);
    let mut json = match best {
        Some((_, result)) => result.json,
        None => json!({ "benchmark": "nexmark", "query": query.name(), "sustained": false }),
    };
    json["rate_search"] = json!({
        "sustained_rate": found,
        "converged": converged,
        "tolerance": args.tolerance,
        "probes": probes,
        "definition": "each probe a full run of --duration; the answer is the highest probed rate that kept up (and was exact when checked), its run reported here",
    });
    Ok((json, found.is_some()))
}
