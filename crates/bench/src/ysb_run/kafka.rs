//! `sleet-bench ysb --source kafka`: producer → Kafka → job → sink, checked against the
//! ground truth of what the producer wrote.
//!
//! Live, a `sleet gen ysb` process produces at `--rate` while the job runs; with
//! `--preload N` it first writes N events and the job then drains the topic from the
//! earliest offset, stopping once every event is in. Each run writes to a topic of its own
//! (deleted afterwards) on the broker at `--brokers`, which `scripts/kafka.sh start` runs.
//! CPU time comes from `/proc` for the sleet processes, the broker and the producer apart.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use sleet_connectors::sink::read_ysb_topic;
use sleet_connectors::ysb::{event, event_range, WINDOW_MS};
use sleet_kafka::admin::{delete_topic, ensure_topic};
use sleet_kafka::cluster::Cluster;
use sleet_plan::{KafkaStart, SinkSpec, SourceRange, YsbSourceSpec};

use sleet_cli::client::{run_job, status_line};

use super::{BenchYsbArgs, Probe, RunOutcome};
use crate::cpu_time::{cpu_seconds, find_kafka_broker, total_cpu_seconds};
use crate::gen_ysb::Produced;
use crate::memory_watch::{memory_json, MemoryWatch};
use crate::producer_process::ProducerProcess;
use crate::read_all::ReadAll;
use crate::ysb_job::{kafka_sink, ysb_job, YsbInput, YsbOptions};
use crate::ysb_report::{evaluate, ProducedInput, ReadPrefix, RunPlan};

/// A live job runs until it has read every event the producer wrote, at most this long past
/// the producer's planned end (a broker that was down leaves a backlog to catch up on).
const LIVE_TAIL_MAX: Duration = Duration::from_secs(60);
/// A drain that has not finished after this much longer than the slowest rate we expect
/// (100 K events/s) is stopped and reported as incomplete.
const DRAIN_SLOWEST_EVENTS_PER_S: u64 = 100_000;

pub async fn run_once(args: &BenchYsbArgs, probe: &Probe, run_dir: &Path) -> Result<RunOutcome> {
    super::clear_run_outputs(run_dir)?;
    let partitions = args.partitions.unwrap_or(args.workers * args.cores_per_worker);
    let brokers = &args.input.brokers;
    let topic = format!("sleet-bench-{}-{}", std::process::id(), sleet_wire::clock::now_ms());
    let results_topic = format!("{topic}-results");
    let sink_topic = args.sink_kafka.then_some(results_topic.as_str());
    for name in [Some(topic.as_str()), sink_topic].into_iter().flatten() {
        let name = name.to_string();
        on_brokers(brokers, move |cluster| ensure_topic(cluster, &name, partitions)).await.with_context(|| {
            format!("creating a topic of this run on {brokers} (is a broker running? `scripts/kafka.sh start` starts one on 127.0.0.1:9092)")
        })?;
    }
    let outcome = run_with_topic(args, probe, run_dir, &topic, sink_topic, partitions).await;
    // The sink's commit markers live in a topic of their own, created on its first write.
    let markers = sink_topic.map(sleet_connectors::sink::marker_topic);
    for name in [Some(topic.as_str()), sink_topic, markers.as_deref()].into_iter().flatten() {
        let name = name.to_string();
        if let Err(error) = on_brokers(brokers, move |cluster| delete_topic(cluster, &name)).await {
            eprintln!("  note: a topic of this run was not deleted: {error:#}");
        }
    }
    outcome
}

/// Runs blocking client calls against `brokers` off the async threads.
pub async fn on_brokers<T: Send + 'static>(
    brokers: &str,
    calls: impl FnOnce(&mut Cluster) -> Result<T, sleet_kafka::KafkaError> + Send + 'static,
) -> Result<T> {
    let brokers = brokers.to_string();
    Ok(tokio::task::spawn_blocking(move || calls(&mut Cluster::new(&brokers))).await??)
}

async fn run_with_topic(
    args: &BenchYsbArgs,
    probe: &Probe,
    run_dir: &Path,
    topic: &str,
    sink_topic: Option<&str>,
    partitions: u32,
) -> Result<RunOutcome> {
    let results_dir = run_dir.join("results");
    let campaigns = run_dir.join("campaigns.csv");
    let broker_port: u16 = args.input.brokers.rsplit(':').next().and_then(|port| port.parse().ok()).unwrap_or(9092);
    let broker_pid = find_kafka_broker(broker_port);
    let producer_args = |mode: Vec<String>| -> Vec<String> {
        let mut all = vec![
            "gen".into(),
            "ysb".into(),
            "--brokers".into(),
            args.input.brokers.clone(),
            "--topic".into(),
            topic.into(),
            "--partitions".into(),
            partitions.to_string(),
            "--rate".into(),
            probe.rate.to_string(),
            "--seed".into(),
            args.ysb.seed.to_string(),
            "--bad-fraction".into(),
            args.bad_fraction.to_string(),
            "--campaigns-out".into(),
            campaigns.display().to_string(),
        ];
        all.extend(mode);
        all
    };

    let broker_cpu = || broker_pid.and_then(cpu_seconds);
    let mut broker_preload_s = None;
    let preloaded = match args.preload {
        Some(count) => {
            eprintln!("bench ysb: preloading {count} events into `{topic}`");
            let broker_before = broker_cpu();
            let run = ProducerProcess::<Produced>::start(&producer_args(vec!["--count".into(), count.to_string()]))?
                .finish()
                .await?;
            broker_preload_s = broker_cpu().zip(broker_before).map(|(after, before)| after - before);
            Some(run)
        }
        None => None,
    };
    let duration = match &preloaded {
        Some(run) => probe.duration.max(Duration::from_secs(run.produced.events / DRAIN_SLOWEST_EVENTS_PER_S + 30)),
        None => probe.duration + LIVE_TAIL_MAX,
    };
    let sink = match sink_topic {
        Some(sink_topic) => kafka_sink(&args.input.brokers, sink_topic),
        None => SinkSpec::JsonLines { dir: results_dir.display().to_string() },
    };
    let options = YsbOptions {
        rate_per_s: probe.rate,
        bad_fraction: args.bad_fraction,
        combine: !args.no_combine,
        dead_letter_dir: Some(run_dir.join("dead-letters").display().to_string()),
        input: YsbInput::Kafka {
            brokers: args.input.brokers.clone(),
            topic: topic.to_string(),
            start: KafkaStart::Earliest,
            max_records_per_batch: args.input.max_records_per_batch,
        },
        campaigns: None,
        ..args.ysb.options(partitions, Some(duration), sink)
    };
    // The live producer writes the campaigns file as it starts; the preload has written it.
    let live = match &preloaded {
        Some(_) => None,
        None => {
            let live = ProducerProcess::<Produced>::start(&producer_args(vec![
                "--duration".into(),
                format!("{}ms", probe.duration.as_millis()),
            ]))?;
            wait_for_file(&campaigns).await?;
            Some(live)
        }
    };
    let job = ysb_job(&YsbOptions { campaigns: Some(campaigns.display().to_string()), ..options })?;
    eprintln!(
        "bench ysb {} (kafka `{topic}`): {} ({} ms batches, {} workers × {} cores)",
        probe.label,
        match &preloaded {
            Some(run) => format!("draining {} preloaded events", run.produced.events),
            None => format!("{} events/s live for {}", probe.rate, crate::duration_arg::show(probe.duration)),
        },
        args.ysb.batch_interval_ms(),
        args.workers,
        args.cores_per_worker
    );

    let cluster = args.start_cluster(run_dir)?;
    let memory = MemoryWatch::of_cluster(&cluster)?;
    let sleet_before = total_cpu_seconds(&cluster.pids());
    let broker_before = broker_cpu();
    let started = std::time::Instant::now();
    // What the job must read before it stops: the preload, or what the live producer wrote.
    let mut read_all = ReadAll::new(preloaded.as_ref().map(|run| run.produced.events));
    let live_task = live.map(|live| read_all.follow(live, |produced: &Produced| produced.events));
    let stopped = read_all.stopped();
    let summary = run_job(
        &cluster.driver_address,
        job,
        |progress| {
            eprintln!("{}", status_line(started.elapsed(), progress));
            read_all.observe(progress.events_in);
        },
        stopped,
    )
    .await;
    let sleet_s = total_cpu_seconds(&cluster.pids()) - sleet_before;
    let broker_s = broker_cpu().zip(broker_before).map(|(after, before)| after - before);
    let memory = memory.finish()?;
    let pinned = cluster.pinned();
    cluster.shutdown().await;
    crate::interrupt::check()?;
    let summary = summary?;
    let producer = match (preloaded, live_task) {
        (Some(run), _) => run,
        (None, Some(live)) => live.await??,
        (None, None) => unreachable!("either preloaded or live"),
    };
    let produced = &producer.produced;
    let sink_rows = match sink_topic {
        Some(sink_topic) => {
            let (brokers, name) = (args.input.brokers.clone(), sink_topic.to_string());
            Some(tokio::task::spawn_blocking(move || read_ysb_topic(&brokers, &name)).await??)
        }
        None => None,
    };
    let per_event = |seconds: f64| seconds * 1e6 / produced.events.max(1) as f64;

    let plan = RunPlan {
        spec: &produced.spec,
        config: json!({
            "source": "kafka",
            "brokers": args.input.brokers,
            "topic": topic,
            "preload": args.preload,
            "workers": args.workers,
            "cores_per_worker": args.cores_per_worker,
            "batch_interval_ms": args.ysb.batch_interval_ms(),
            "scheduler": args.ysb.scheduling.scheduler.to_string(),
            "group_size": args.ysb.scheduling.group_size_json(),
            "latency_target": args.ysb.scheduling.latency_target(),
            "backpressure": args.ysb.scheduling.backpressure,
            "rate": probe.rate,
            "partitions": partitions,
            "max_records_per_batch": args.input.max_records_per_batch,
            "sink": if sink_topic.is_some() { "kafka" } else { "json_lines" },
            "combine": !args.no_combine,
            "bad_fraction": args.bad_fraction,
            "seed": args.ysb.seed,
            "worker_limits": args.limits.config_json(),
            "workers_pinned": pinned,
        }),
        rate: probe.rate,
        batch_interval_ms: args.ysb.batch_interval_ms(),
        // Live, the measured part is the producer's; the tail only reads its last events.
        duration_ms: if args.preload.is_some() { duration } else { probe.duration }.as_millis() as u64,
        warmup_ms: probe.warmup.as_millis() as u64,
        stopped_early: false,
        input: Some(ProducedInput {
            start_ms: produced.start_ms,
            end_ms: produced.end_ms,
            events: produced.events,
            read: read_prefix(&produced.spec, produced.start_ms, produced.end_ms, &summary),
        }),
        sink_rows,
        host: None,
        sink_sightings: None,
    };
    let mut report = evaluate(&plan, &summary, &results_dir)?;
    report.json["memory"] = memory_json(&memory);
    let drain = drain_figures(&summary);
    let offset_ranges = offset_ranges(&summary);
    report.json["kafka"] = json!({
        "events_written": produced.events,
        "producer_events_per_s": produced.events as f64 / produced.elapsed_s.max(1e-9),
        "drain": drain,
        "offset_ranges": offset_ranges,
        "read_bound": read_bound_figures(&summary),
        "cpu_definition": "CPU seconds (user + system, from /proc) over the job for sleet's driver and workers and for the broker, over its life for the producer; divided by the events written",
        "cpu_seconds": { "sleet": sleet_s, "broker": broker_s, "broker_while_preloading": broker_preload_s, "producer": producer.cpu_seconds },
        "cpu_us_per_event": {
            "sleet": per_event(sleet_s),
            "broker": broker_s.map(per_event),
            "producer": producer.cpu_seconds.map(per_event),
        },
    });
    if broker_pid.is_none() {
        report.json["kafka"]["note"] =
            json!(format!("no broker process found listening on 127.0.0.1:{broker_port}: its CPU is not counted"));
    }
    if let Some(drain_rate) = drain["events_per_s"].as_f64() {
        if args.preload.is_some() {
            report.events_per_s = Some(drain_rate);
        }
    }
    eprintln!(
        "  kafka: drain {} events/s; cpu µs/event: sleet {:.2}, broker {}, producer {}",
        drain["events_per_s"].as_f64().map_or("-".into(), |rate| format!("{rate:.0}")),
        per_event(sleet_s),
        broker_s.map_or("-".into(), |seconds| format!("{:.2}", per_event(seconds))),
        producer.cpu_seconds.map_or("-".into(), |seconds| format!("{:.2}", per_event(seconds)))
    );
    Ok(RunOutcome { report, last_status_events_per_s: None })
}

/// Events over the wall time from the first batch that read any to the last one that did.
fn drain_figures(summary: &sleet_wire::JobSummary) -> serde_json::Value {
    let busy: Vec<_> = summary.batches.iter().filter(|batch| batch.events_in > 0).collect();
    let (Some(first), Some(last)) =
        (busy.iter().map(|b| b.launched_at_ms).min(), busy.iter().map(|b| b.finished_at_ms).max())
    else {
        return json!({ "events": 0 });
    };
    let events: u64 = busy.iter().map(|batch| batch.events_in).sum();
    let seconds = (last - first).max(1) as f64 / 1000.0;
    json!({ "events": events, "batches": busy.len(), "seconds": seconds, "events_per_s": events as f64 / seconds })
}

/// What the job read of a topic it left partly unread (backpressure), from the offsets its
/// batches logged. The producer writes generator partition p's events in order to partition p
/// of a topic made for the run, so offset n is the partition's n-th event; the first unread
/// event of each partition bounds, in event time, the windows whose events were all read.
/// `None` when every event was read.
fn read_prefix(
    spec: &YsbSourceSpec,
    start_ms: i64,
    end_ms: i64,
    summary: &sleet_wire::JobSummary,
) -> Option<ReadPrefix> {
    let mut read_to: std::collections::BTreeMap<u32, i64> = std::collections::BTreeMap::new();
    for batch in &summary.batches {
        for (partition, range) in &batch.source_ranges {
            if let SourceRange::Offsets { end, .. } = range {
                let furthest = read_to.entry(*partition).or_default();
                *furthest = (*furthest).max(*end);
            }
        }
    }
    let mut whole_through_ms = end_ms;
    let (mut events, mut dead_letters, mut unread) = (0, 0, false);
    for partition in 0..spec.partitions {
        let written = event_range(spec, partition, start_ms, end_ms);
        let read = (read_to.get(&partition).copied().unwrap_or(0).max(0) as u64).min(written.end - written.start);
        let first_unread = written.start + read;
        if first_unread < written.end {
            unread = true;
            whole_through_ms = whole_through_ms.min(event(spec, partition, first_unread).event_time_ms);
        }
        events += read;
        dead_letters +=
            (written.start..first_unread).filter(|k| event(spec, partition, *k).bad.is_some()).count() as u64;
    }
    unread.then(|| ReadPrefix {
        whole_through_ms: whole_through_ms.div_euclid(WINDOW_MS) * WINDOW_MS,
        events,
        dead_letters,
    })
}

/// What backpressure did over the batches kept in the summary: how many ran under a read
/// bound and its range, beside how far the batches ended behind their schedule.
fn read_bound_figures(summary: &sleet_wire::JobSummary) -> serde_json::Value {
    let bounds: Vec<f64> = summary.batches.iter().filter_map(|batch| batch.read_bound.map(f64::from)).collect();
    let lags: Vec<f64> =
        summary.batches.iter().map(|batch| (batch.finished_at_ms - batch.scheduled_end_ms) as f64).collect();
    json!({
        "batches": summary.batches.len(),
        "batches_bounded": bounds.len(),
        "bound_min": sleet_clarity::percentile(&bounds, 0.0),
        "bound_median": sleet_clarity::percentile(&bounds, 0.5),
        "bound_max": sleet_clarity::percentile(&bounds, 1.0),
        "last_batch_bound": summary.batches.last().and_then(|batch| batch.read_bound),
        "lag_ms_p50": sleet_clarity::percentile(&lags, 0.5),
        "lag_ms_p99": sleet_clarity::percentile(&lags, 0.99),
        "lag_ms_max": sleet_clarity::percentile(&lags, 1.0),
    })
}

/// Whether each partition's logged offset ranges follow one another, batch by batch, with
/// no gap and no overlap: what a replay of the batch log depends on. Also how far apart the
/// partitions got: the most offsets one had read beyond another at the end of a batch. The
/// producer writes the partitions alike, so offsets apart are event time apart, and a
/// partition far behind the others in event time is one whose rows a window may already have
/// closed on (`docs/experiments/2026-11-28-latency-target-and-memory.md`).
fn offset_ranges(summary: &sleet_wire::JobSummary) -> serde_json::Value {
    let mut next: std::collections::BTreeMap<u32, i64> = std::collections::BTreeMap::new();
    let mut first_start: std::collections::BTreeMap<u32, i64> = std::collections::BTreeMap::new();
    let mut breaks = Vec::new();
    let mut logged = 0;
    let mut spread_max: Option<(i64, u64)> = None;
    for batch in &summary.batches {
        for (partition, range) in &batch.source_ranges {
            let SourceRange::Offsets { start, end } = *range else { continue };
            logged += 1;
            first_start.entry(*partition).or_insert(start);
            if let Some(expected) = next.insert(*partition, end) {
                if start != expected {
                    breaks
                        .push(format!("batch {} partition {partition} starts at {start}, not {expected}", batch.batch));
                }
            }
        }
        let read = next.iter().map(|(partition, end)| end - first_start[partition]);
        if let (Some(most), Some(least)) = (read.clone().max(), read.min()) {
            if spread_max.is_none_or(|(spread, _)| most - least > spread) {
                spread_max = Some((most - least, batch.batch));
            }
        }
    }
    breaks.truncate(10);
    json!({
        "ranges_logged": logged,
        "contiguous": logged > 0 && breaks.is_empty(),
        "breaks": breaks,
        "partitions_apart_max": spread_max.map(|(offsets, batch)| json!({ "offsets": offsets, "batch": batch })),
    })
}

async fn wait_for_file(path: &Path) -> Result<()> {
    for _ in 0..300 {
        if path.is_file() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::bail!("the producer did not write {} within 6 s", path.display())
}

#[cfg(test)]
mod tests {
    use sleet_wire::{BatchRecord, JobSummary};

    use super::*;

    fn batch(batch: u64, ranges: &[(u32, i64, i64)]) -> BatchRecord {
        let source_ranges = ranges
            .iter()
            .map(|(partition, start, end)| (*partition, SourceRange::Offsets { start: *start, end: *end }));
        BatchRecord { batch, source_ranges: source_ranges.collect(), ..BatchRecord::default() }
    }

    #[test]
    fn partitions_apart_is_the_largest_lead_in_offsets_read_at_a_batch_end_and_breaks_are_named() {
        // Partition 1 starts at offset 500 (a topic written to before): what counts is what
        // each read, not where it stands.
        let summary = JobSummary {
            batches: vec![
                batch(0, &[(0, 0, 100), (1, 500, 520)]),
                batch(1, &[(0, 100, 300), (1, 520, 530)]),
                batch(2, &[(0, 300, 310), (1, 530, 800)]),
            ],
            ..JobSummary::default()
        };
        let figures = offset_ranges(&summary);
        assert_eq!(figures["contiguous"], true);
        assert_eq!(figures["partitions_apart_max"], json!({ "offsets": 270, "batch": 1 }), "300 read against 30");
        let gap =
            JobSummary { batches: vec![batch(0, &[(0, 0, 10)]), batch(1, &[(0, 12, 20)])], ..JobSummary::default() };
        let figures = offset_ranges(&gap);
        assert_eq!(figures["contiguous"], false);
        assert_eq!(figures["breaks"][0], "batch 1 partition 0 starts at 12, not 10");
        assert_eq!(figures["partitions_apart_max"]["offsets"], 0, "one partition is never apart from itself");
    }

    #[test]
    fn a_partly_read_topic_is_checked_up_to_the_windows_every_partition_read_whole() {
        let spec = YsbSourceSpec { seed: 7, rate_per_s: 2_000, partitions: 2, bad_fraction: 0.1, pre_decoded: false };
        let (start, end) = (1_700_000_000_000, 1_700_000_030_000);
        let written: Vec<u64> = (0..2).map(|p| event_range(&spec, p, start, end).count() as u64).collect();
        let read = |ends: [i64; 2]| JobSummary {
            batches: vec![
                batch(0, &[(0, 0, ends[0] / 2), (1, 0, ends[1] / 2)]),
                batch(1, &[(0, ends[0] / 2, ends[0]), (1, ends[1] / 2, ends[1])]),
            ],
            ..JobSummary::default()
        };
        let all = [written[0] as i64, written[1] as i64];
        assert_eq!(read_prefix(&spec, start, end, &read(all)), None, "everything read");

        let partly = read_prefix(&spec, start, end, &read([12_500, 25_000])).expect("left some unread");
        // Partition 0's first unread event falls 12.5 s in: only the first window is whole.
        assert_eq!(partly.whole_through_ms, start + 10_000);
        assert_eq!(partly.events, 37_500);
        let bad = |partition: u32, read: u64| {
            let first = event_range(&spec, partition, start, end).start;
            (first..first + read).filter(|k| event(&spec, partition, *k).bad.is_some()).count() as u64
        };
        assert_eq!(partly.dead_letters, bad(0, 12_500) + bad(1, 25_000));
        assert!(partly.dead_letters > 0);
    }

    #[test]
    fn read_bound_figures_count_the_bounded_batches_and_the_lag() {
        let held = |batch: u64, bound: Option<u32>, lag_ms: i64| BatchRecord {
            batch,
            scheduled_end_ms: 1_000,
            finished_at_ms: 1_000 + lag_ms,
            read_bound: bound,
            ..BatchRecord::default()
        };
        let summary = JobSummary {
            batches: vec![held(0, None, 40), held(1, Some(9_000), 30), held(2, Some(7_000), 5), held(3, None, 2)],
            ..JobSummary::default()
        };
        let figures = read_bound_figures(&summary);
        assert_eq!(figures["batches_bounded"], 2);
        assert_eq!((figures["bound_min"].as_f64(), figures["bound_max"].as_f64()), (Some(7_000.0), Some(9_000.0)));
        assert_eq!(figures["last_batch_bound"], serde_json::Value::Null);
        assert_eq!(figures["lag_ms_max"].as_f64(), Some(40.0));
    }
}
