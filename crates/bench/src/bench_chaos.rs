//! `sleet-bench chaos`: ysb on a local cluster while workers are killed (SIGKILL) or frozen
//! (SIGSTOP, woken a little later, when the driver has cut them off) at seeded random
//! times, each replaced by a fresh worker that joins the running job; with `--driver-kills`
//! the driver too is killed (SIGKILL) at seeded times and restarted at once with the same
//! state directory, resuming the job. At the end every (campaign, window) count must equal
//! the ground truth and no committed row may appear twice.
//!
//! ```text
//!  LocalCluster ── job ──▶ driver ── recoveries, rebalances ──▶ summary
//!       ▲                                                        │
//!  chaos task: at t₁…tₙ signal a live worker, start a new one     ▼
//!                                          results/ (manifest) ─▶ ground truth + duplicates
//! ```

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_plan::SinkSpec;
use sleet_wire::clock::{now_ms, BatchClock};

use crate::client::run_job_with_status;
use crate::cluster::{signal_worker, sleep_until_ms, LocalCluster};
use crate::duration_arg::show;
use crate::interrupt::Interrupted;
use crate::output::write_output;
use crate::ysb_job::{ysb_job, ysb_source_spec, YsbFlags};
use crate::ysb_report::{evaluate, RunPlan};
use crate::ysb_run::clear_run_outputs;
use crate::ysb_run::on_brokers;
use sleet_kafka::admin::{delete_topic, ensure_topic};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchChaosArgs {
    /// Rate, batch interval, seed and scheduler.
    #[command(flatten)]
    pub ysb: YsbFlags,
    /// Worker processes at the start; each one lost is replaced, so this many stay.
    #[arg(long, default_value_t = 3)]
    pub workers: u32,
    /// Length of the run, in batches' time; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "300s")]
    pub duration: Duration,
    /// Workers signalled over the run, at random times between the first checkpoint and
    /// 5 s before the end.
    #[arg(long, default_value_t = 20)]
    pub kills: u32,
    /// Times the driver is killed (SIGKILL) and restarted with its state directory, at
    /// seeded random times in the same span as the workers' signals.
    #[arg(long, default_value_t = 0)]
    pub driver_kills: u32,
    /// Seed of the chaos: which worker, which signal, when.
    #[arg(long, default_value_t = 7)]
    pub chaos_seed: u64,
    /// How long a frozen worker stays frozen (longer than the driver's heartbeat timeout, so
    /// it is cut off); woken, it finds itself fenced and exits.
    #[arg(long, value_parser = crate::duration_arg::millis, default_value = "1500ms")]
    pub stop_for: Duration,
    /// The signals to pick from, each strike one at random: KILL (dies), STOP (freezes, is
    /// cut off by the heartbeat timeout), TERM (leaves at the next checkpoint, nothing re-run).
    #[arg(long, value_delimiter = ',', default_value = "KILL,STOP")]
    pub signals: Vec<ChaosSignal>,
    /// Results to a Kafka topic of this run (exactly once, by transactions) on --brokers,
    /// checked by a read_committed read, instead of to JSON-lines files.
    #[arg(long)]
    pub sink_kafka: bool,
    /// Kafka brokers for --sink-kafka (`scripts/kafka.sh start` runs one on 127.0.0.1:9092).
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    #[command(flatten)]
    pub output: crate::output::BenchOutputArgs,
}

/// A signal the chaos sends to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum ChaosSignal {
    Kill,
    Stop,
    Term,
}

impl ChaosSignal {
    fn number(self) -> i32 {
        match self {
            ChaosSignal::Kill => libc::SIGKILL,
            ChaosSignal::Stop => libc::SIGSTOP,
            ChaosSignal::Term => libc::SIGTERM,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ChaosSignal::Kill => "KILL",
            ChaosSignal::Stop => "STOP",
            ChaosSignal::Term => "TERM",
        }
    }
}

/// Batch 0 starts this long after submission, so the workers have registered.
const START_DELAY_MS: i64 = 1_500;
/// No signal before the first checkpoints exist, nor in the last seconds (a job must end on
/// a cluster that had time to settle).
const QUIET_START_MS: i64 = 3_000;
const QUIET_END_MS: i64 = 5_000;

/// Who a planned strike hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A live, unfrozen worker, chosen then.
    Worker,
    /// The driver, restarted at once.
    Driver,
}

/// Seeds the driver's strike times apart from the workers', so adding driver kills leaves
/// the workers' times of a seed as they were.
const DRIVER_SEED_MIX: u64 = 0xd41e_7e55;

/// One signal sent.
#[derive(Debug, Clone, PartialEq)]
struct Strike {
    at_ms: i64,
    pid: u32,
    signal: &'static str,
    replacement: String,
}

/// Runs the benchmark; `Ok(false)` when the results are wrong or hold duplicates.
pub async fn run(args: BenchChaosArgs) -> Result<bool> {
    anyhow::ensure!(args.workers >= 2, "--workers must be at least 2: a lost worker needs a survivor to recover on");
    anyhow::ensure!(args.ysb.rate > 0, "--rate must be positive");
    args.ysb.scheduling.check()?;
    anyhow::ensure!(
        args.ysb.checkpoint_interval_ms() > 0,
        "--checkpoint-interval 0 leaves nothing to recover from: chaos needs checkpoints"
    );
    anyhow::ensure!(
        span_ms(&args) > 0,
        "--duration ({}) leaves no time for kills: at least {} s",
        show(args.duration),
        (QUIET_START_MS + QUIET_END_MS) / 1000 + 1
    );
    anyhow::ensure!(!args.signals.is_empty(), "--signals needs at least one of KILL, STOP, TERM");
    let run_dir = args.output.prepare("bench-chaos")?;
    let outcome = run_chaos(&args, &run_dir.path).await;
    let interrupted = outcome.as_ref().is_err_and(|error| error.is::<Interrupted>());
    run_dir.finish(interrupted || matches!(outcome, Ok(true)));
    outcome
}

async fn run_chaos(args: &BenchChaosArgs, dir: &Path) -> Result<bool> {
    if !args.sink_kafka {
        return run_chaos_into(args, dir, None).await;
    }
    let topic = format!("sleet-chaos-{}-{}-results", std::process::id(), now_ms());
    let partitions = args.workers;
    let name = topic.clone();
    on_brokers(&args.brokers, move |cluster| ensure_topic(cluster, &name, partitions)).await.with_context(|| {
        format!("creating the results topic on {} (is a broker running? `scripts/kafka.sh start`)", args.brokers)
    })?;
    let outcome = run_chaos_into(args, dir, Some(&topic)).await;
    for name in [topic.clone(), sleet_connectors::sink::marker_topic(&topic)] {
        if let Err(error) = on_brokers(&args.brokers, move |cluster| delete_topic(cluster, &name)).await {
            eprintln!("  note: a topic of this run was not deleted: {error:#}");
        }
    }
    outcome
}

async fn run_chaos_into(args: &BenchChaosArgs, dir: &Path, sink_topic: Option<&str>) -> Result<bool> {
    let (results_dir, dead_letter_dir) = clear_run_outputs(dir)?;
    let sink = match sink_topic {
        Some(topic) => crate::ysb_job::kafka_sink(&args.brokers, topic),
        None => SinkSpec::JsonLines { dir: results_dir.display().to_string() },
    };
    let start_ms = BatchClock::aligned_after(now_ms() + START_DELAY_MS, args.ysb.batch_interval_ms() as i64).start_ms;
    let options = crate::ysb_job::YsbOptions {
        dead_letter_dir: Some(dead_letter_dir.display().to_string()),
        start_ms: Some(start_ms),
        ..args.ysb.options(args.workers, Some(args.duration), sink)
    };
    let job = ysb_job(&options)?;
    let spec = ysb_source_spec(&options);
    let times = chaos_plan(args.chaos_seed, args.kills, args.driver_kills, start_ms + QUIET_START_MS, span_ms(args));
    eprintln!(
        "bench chaos: ysb at {} events/s on {} workers, {} ms batches, {}, {} signals and {} driver kills over {} (seed {})",
        args.ysb.rate,
        args.workers,
        args.ysb.batch_interval_ms(),
        args.ysb.scheduling.describe(),
        args.kills,
        args.driver_kills,
        show(args.duration),
        args.chaos_seed
    );
    let cluster = LocalCluster::start(args.workers, 1, &dir.join("logs"))?;
    let address = cluster.driver_address.clone();
    let chaos = tokio::spawn(strike(cluster, times, args.chaos_seed, args.stop_for, args.signals.clone()));
    let summary = run_job_with_status(&address, job).await;
    if summary.is_err() {
        // Dropping the cluster inside the aborted task stops its processes.
        chaos.abort();
        let _ = chaos.await;
        crate::interrupt::check()?;
        return summary.map(|_| false);
    }
    let (cluster, strikes, chaos_error) = chaos.await.context("the chaos task panicked")?;
    cluster.shutdown().await;
    crate::interrupt::check()?;
    let summary = summary?;
    if let Some(error) = chaos_error {
        return Err(error.context("the chaos stopped before its last signal"));
    }

    let rows = match sink_topic {
        Some(topic) => {
            let (brokers, topic) = (args.brokers.clone(), topic.to_string());
            tokio::task::spawn_blocking(move || sleet_connectors::sink::read_ysb_topic(&brokers, &topic))
                .await?
                .context("reading the results topic (read_committed)")?
        }
        None => sleet_connectors::sink::read_ysb_sink(&results_dir).context("reading the committed results")?,
    };
    let duplicates = duplicate_rows(&rows);
    let plan = RunPlan {
        spec: &spec,
        config: json!({
            "workers": args.workers,
            "batch_interval_ms": args.ysb.batch_interval_ms(),
            "scheduler": args.ysb.scheduling.scheduler.to_string(),
            "rate": args.ysb.rate,
            "kills": args.kills,
            "signals": args.signals.iter().map(|signal| signal.name()).collect::<Vec<_>>(),
            "sink": if sink_topic.is_some() { "kafka" } else { "json_lines" },
            "driver_kills": args.driver_kills,
            "chaos_seed": args.chaos_seed,
            "checkpoint_interval_ms": args.ysb.checkpoint_interval_ms(),
        }),
        rate: args.ysb.rate,
        batch_interval_ms: args.ysb.batch_interval_ms(),
        duration_ms: args.duration.as_millis() as u64,
        warmup_ms: 0,
        stopped_early: false,
        input: None,
        sink_rows: Some(rows),
        host: None,
        sink_sightings: None,
    };
    let report = evaluate(&plan, &summary, &results_dir)?;
    let correct = report.correct == Some(true) && duplicates == 0;
    let driver_restarts = strikes.iter().filter(|strike| strike.replacement == RESTARTED_DRIVER).count();
    eprintln!(
        "bench chaos: {} signals ({driver_restarts} to the driver), {} recoveries, {} workers joined, {} left, {} batches re-run ({} source tasks reused); correct {}, {} committed rows twice",
        strikes.len(),
        summary.recoveries.len(),
        summary.rebalances.iter().map(|rebalance| rebalance.joined.len()).sum::<usize>(),
        summary.rebalances.iter().map(|rebalance| rebalance.left.len()).sum::<usize>(),
        summary.batches_rerun,
        summary.recoveries.iter().map(|recovery| recovery.reused_map_tasks).sum::<u64>(),
        report.correct == Some(true),
        duplicates
    );
    if let Some(path) = &args.output.json {
        let result = json!({
            "benchmark": "chaos",
            "engine": "sleet",
            "version": env!("CARGO_PKG_VERSION"),
            "config": plan.config,
            "duration_s": args.duration.as_secs_f64(),
            "correct": correct,
            "ground_truth_matches": report.correct,
            "mismatches": report.json["mismatches"],
            "duplicate_committed_rows": duplicates,
            "signals": strikes.iter().map(|strike| json!({
                "at_s": (strike.at_ms - start_ms) as f64 / 1000.0,
                "pid": strike.pid,
                "signal": strike.signal,
                "replacement": strike.replacement,
            })).collect::<Vec<_>>(),
            "driver_restarts": driver_restarts,
            // A restarted driver takes its figures over from the state directory: the
            // recoveries, rebalances and batches below span every driver of the job, each
            // record marked with the restarts before it (`driver_restarts`).
            "restarts": summary.restarts,
            "recoveries": summary.recoveries,
            "rebalances": summary.rebalances,
            "batches_rerun": summary.batches_rerun,
            "batches": summary.batches_before_restart + summary.batches_total,
            "batches_before_restart": summary.batches_before_restart,
        });
        write_output(path, &(serde_json::to_string_pretty(&result)? + "\n"))?;
    }
    Ok(correct)
}

/// Committed rows that appear more than once: a (campaign, window) row is written once per
/// batch that updates it, so a second row of the same batch is a replay that leaked.
fn duplicate_rows(rows: &[sleet_connectors::sink::SinkRow]) -> usize {
    let mut seen = BTreeSet::new();
    rows.iter().filter(|row| !seen.insert((row.campaign_id.as_str(), row.window_start, row.batch))).count()
}

fn span_ms(args: &BenchChaosArgs) -> i64 {
    args.duration.as_millis() as i64 - QUIET_START_MS - QUIET_END_MS
}

/// The strikes of a run, in time order: `kills` at workers and `driver_kills` at the driver,
/// each set spread over the span as `strike_times` spreads it. Pure.
fn chaos_plan(seed: u64, kills: u32, driver_kills: u32, from_ms: i64, span_ms: i64) -> Vec<(i64, Target)> {
    let workers = strike_times(seed, kills, from_ms, span_ms).into_iter().map(|at| (at, Target::Worker));
    let driver =
        strike_times(seed ^ DRIVER_SEED_MIX, driver_kills, from_ms, span_ms).into_iter().map(|at| (at, Target::Driver));
    let mut plan: Vec<(i64, Target)> = workers.chain(driver).collect();
    plan.sort_by_key(|(at, target)| (*at, *target == Target::Driver));
    plan
}

/// `count` times spread over `[from_ms, from_ms + span_ms)`: one per equal slot, at a
/// seeded random place inside it, so signals neither bunch up nor fall on a fixed rhythm.
fn strike_times(seed: u64, count: u32, from_ms: i64, span_ms: i64) -> Vec<i64> {
    let mut random = SplitMix(seed);
    let slot_ms = span_ms / i64::from(count.max(1));
    (0..i64::from(count))
        .map(|slot| from_ms + slot * slot_ms + (random.next() % slot_ms.max(1) as u64) as i64)
        .collect()
}

/// What a driver strike records as its replacement.
const RESTARTED_DRIVER: &str = "driver (restarted)";

/// The signaller: at each time, signals a live worker that is not frozen (a signal of
/// `signals` at random), wakes frozen ones after `stop_for`, and starts a replacement for
/// each; or kills the driver and restarts it.
/// It always hands the cluster back, with the error that stopped it if one did: dropping
/// the cluster here would kill the driver under the running job.
async fn strike(
    mut cluster: LocalCluster,
    times: Vec<(i64, Target)>,
    seed: u64,
    stop_for: Duration,
    signals: Vec<ChaosSignal>,
) -> (LocalCluster, Vec<Strike>, Option<anyhow::Error>) {
    let mut strikes = Vec::new();
    let error = strike_all(&mut cluster, times, seed, stop_for, &signals, &mut strikes).await.err();
    (cluster, strikes, error)
}

async fn strike_all(
    cluster: &mut LocalCluster,
    times: Vec<(i64, Target)>,
    seed: u64,
    stop_for: Duration,
    signals: &[ChaosSignal],
    strikes: &mut Vec<Strike>,
) -> Result<()> {
    let mut random = SplitMix(seed ^ 0x5eed);
    let mut frozen: Vec<(u32, i64)> = Vec::new();
    let mut next_name = cluster.workers() as u32 + 1;
    for (at_ms, target) in times {
        while let Some(wake) = frozen.iter().map(|(_, until)| *until).filter(|until| *until <= at_ms).min() {
            sleep_until_ms(wake).await;
            wake_frozen(&mut frozen, now_ms());
        }
        sleep_until_ms(at_ms).await;
        wake_frozen(&mut frozen, now_ms());
        if target == Target::Driver {
            let pid = cluster.restart_driver()?;
            eprintln!("  chaos: SIGKILL to the driver; restarted as process {pid} with its state directory");
            strikes.push(Strike { at_ms: now_ms(), pid, signal: "KILL", replacement: RESTARTED_DRIVER.into() });
            continue;
        }
        let candidates: Vec<u32> = cluster
            .live_worker_pids()
            .into_iter()
            .filter(|pid| !frozen.iter().any(|(frozen_pid, _)| frozen_pid == pid))
            .collect();
        if candidates.len() < 2 {
            eprintln!("  chaos: fewer than 2 workers running; this signal is skipped");
            continue;
        }
        let pid = candidates[(random.next() % candidates.len() as u64) as usize];
        let chosen = signals[(random.next() % signals.len() as u64) as usize];
        let (signal, name) = (chosen.number(), chosen.name());
        signal_worker(pid, signal)?;
        if signal == libc::SIGSTOP {
            frozen.push((pid, now_ms() + stop_for.as_millis() as i64));
        }
        let replacement = format!("worker-{next_name}");
        next_name += 1;
        cluster.add_worker(&replacement, 1)?;
        eprintln!("  chaos: SIG{name} to worker process {pid}; {replacement} starts");
        strikes.push(Strike { at_ms: now_ms(), pid, signal: name, replacement });
    }
    for (pid, until) in std::mem::take(&mut frozen) {
        sleep_until_ms(until).await;
        signal_worker(pid, libc::SIGCONT)?;
    }
    Ok(())
}

fn wake_frozen(frozen: &mut Vec<(u32, i64)>, now_ms: i64) {
    frozen.retain(|(pid, until)| {
        if *until > now_ms {
            return true;
        }
        let _ = signal_worker(*pid, libc::SIGCONT);
        false
    });
}

/// A tiny seeded generator (SplitMix64): the chaos of a seed is the same on every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strike_times_fall_one_per_slot_and_repeat_for_a_seed() {
        let times = strike_times(3, 4, 1_000, 8_000);
        assert_eq!(times.len(), 4);
        for (slot, at) in times.iter().enumerate() {
            let from = 1_000 + slot as i64 * 2_000;
            assert!((from..from + 2_000).contains(at), "{times:?}");
        }
        assert_eq!(times, strike_times(3, 4, 1_000, 8_000));
        assert_ne!(times, strike_times(4, 4, 1_000, 8_000));
    }

    #[test]
    fn driver_kills_join_the_plan_without_moving_the_workers_strikes() {
        let workers_only = chaos_plan(9, 5, 0, 0, 50_000);
        let with_driver = chaos_plan(9, 5, 2, 0, 50_000);
        assert_eq!(with_driver.len(), 7);
        assert!(with_driver.windows(2).all(|pair| pair[0].0 <= pair[1].0), "in time order: {with_driver:?}");
        let driver_strikes: Vec<i64> =
            with_driver.iter().filter(|(_, target)| *target == Target::Driver).map(|(at, _)| *at).collect();
        assert_eq!(driver_strikes.len(), 2);
        assert!(driver_strikes[0] < 25_000 && driver_strikes[1] >= 25_000, "one per half: {driver_strikes:?}");
        let worker_strikes: Vec<(i64, Target)> =
            with_driver.into_iter().filter(|(_, target)| *target == Target::Worker).collect();
        assert_eq!(worker_strikes, workers_only);
    }

    #[test]
    fn a_row_of_the_same_batch_twice_is_a_duplicate() {
        let row = |batch| sleet_connectors::sink::SinkRow { window_start: 0, campaign_id: "c".into(), count: 1, batch };
        assert_eq!(duplicate_rows(&[row(1), row(2)]), 0);
        assert_eq!(duplicate_rows(&[row(1), row(2), row(1)]), 1);
    }
}
