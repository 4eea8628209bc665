//! The result object of one `bench ysb` run (the format `benchmarks/README.md` describes):
//! correctness against the ground truth, sustained throughput, stability, lag and window latency,
//! where the CPU time went, per-second series, and the performance model's view (`clarity`).
//! Computed from the job summary and the sink's rows only.

use anyhow::{Context, Result};
use serde_json::json;
use sleet_clarity::{percentile, Distribution};
use sleet_connectors::ysb::{event, event_range};
use sleet_plan::YsbSourceSpec;
use sleet_wire::clock::BatchClock;
use sleet_wire::JobSummary;

use crate::batch_figures::{judge, lag_figures, measured_batches, processing_ms, sustained};
use crate::breakdown_check::end_to_end_check;
use crate::clarity_report::{clarity_section, measured_samples};
use crate::ysb_check::{check_counts, window_latencies_ms};

/// What one run is judged on, besides the summary and the sink.
pub struct RunPlan<'a> {
    pub spec: &'a YsbSourceSpec,
    pub config: serde_json::Value,
    pub rate: u64,
    pub batch_interval_ms: u64,
    pub duration_ms: u64,
    pub warmup_ms: u64,
    /// Events that came through an outside system (Kafka) rather than the job's own
    /// generator: what was written, which the results are checked against.
    pub input: Option<ProducedInput>,
    /// The result rows when the caller has them already (a Kafka sink read back, or rows
    /// it checks itself); `None`: read from `results_dir`.
    pub sink_rows: Option<Vec<sleet_connectors::sink::SinkRow>>,
    /// What a reader of the sink directory saw and when (`sink_watch`), for checking the
    /// latency breakdown against an end to end measured without it; `None`: not watched.
    pub sink_sightings: Option<crate::sink_watch::SinkSightings>,
    /// Whether the run was cut short on purpose (a search's probe that fell behind): its
    /// results are not checked, since batches past the cut never ran.
    pub stopped_early: bool,
    /// What the machine offered while the run was measured (`host_capacity`), for the
    /// what-if model; `None` where the caller did not measure it.
    pub host: Option<sleet_clarity::HostCapacity>,
}

/// What a producer wrote: the generator's events of `[start_ms, end_ms)`, `events` of them.
#[derive(Debug, Clone, Copy)]
pub struct ProducedInput {
    pub start_ms: i64,
    pub end_ms: i64,
    pub events: u64,
    /// What the job read, when it left some of the input unread (backpressure).
    pub read: Option<ReadPrefix>,
}

/// A job that read a prefix of each partition: every window ending by `whole_through_ms` had
/// all its events read, so those windows are checked, and the bad events among those read
/// are the dead letters expected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadPrefix {
    pub whole_through_ms: i64,
    pub events: u64,
    pub dead_letters: u64,
}

/// The figures a caller acts on, next to the full result object.
pub struct RunReport {
    pub json: serde_json::Value,
    /// `Some(false)` on a mismatch; `None` when the results were not checked.
    pub correct: Option<bool>,
    pub stable: bool,
    pub events_per_s: Option<f64>,
}

pub fn evaluate(plan: &RunPlan, summary: &JobSummary, results_dir: &std::path::Path) -> Result<RunReport> {
    let clock = BatchClock::new(summary.start_ms, plan.batch_interval_ms as i64);
    let batches_expected = clock.batches_in(plan.duration_ms);
    // Every batch below `batches_total` ran: batch ids complete in order within the log
    // (after a driver restart that found no saved figures, counted from where it resumed,
    // and `batches_before_restart` ran before).
    let batches_run = summary.batches_before_restart + summary.batches_total;
    let end_ms = clock.range_ms(batches_run).0;
    // Through an outside system the job is complete once it has read every event written;
    // from its own generator, once it ran every batch of its duration.
    let (ran_fully, check_from_ms, check_to_ms) = match plan.input {
        Some(input) => (
            summary.events_in == input.events,
            input.start_ms,
            input.read.map_or(input.end_ms, |read| read.whole_through_ms),
        ),
        None => (batches_run >= batches_expected, summary.start_ms, end_ms),
    };
    let read_prefix = plan.input.and_then(|input| input.read);
    let warm_ms = summary.start_ms + plan.warmup_ms as i64;

    let (correct, mismatches, windows_expected, latencies, dead_letters_expected) = if plan.stopped_early {
        (None, None, None, Vec::new(), None)
    } else {
        let read;
        let rows: &[sleet_connectors::sink::SinkRow] = match &plan.sink_rows {
            Some(rows) => rows,
            None => {
                read = sleet_connectors::sink::read_ysb_sink(results_dir).context("reading the sink output")?;
                &read
            }
        };
        // Of a job that left input unread, only the windows it read whole are checked.
        let whole: Vec<sleet_connectors::sink::SinkRow>;
        let checked = match read_prefix {
            Some(read) => {
                whole = rows.iter().filter(|row| row.window_start < read.whole_through_ms).cloned().collect();
                &whole[..]
            }
            None => rows,
        };
        let check = check_counts(plan.spec, check_from_ms, check_to_ms, checked);
        for example in &check.examples {
            eprintln!("  mismatch: {example}");
        }
        let dead_letters_expected =
            read_prefix.map_or_else(|| bad_events(plan.spec, check_from_ms, check_to_ms), |read| read.dead_letters);
        let read_as_told = read_prefix.is_some_and(|read| read.events == summary.events_in);
        let correct =
            check.mismatches == 0 && summary.dead_letters == dead_letters_expected && (ran_fully || read_as_told);
        let visible_at_ms: std::collections::BTreeMap<u64, i64> =
            summary.batches.iter().map(|batch| (batch.batch, batch.results_visible_at_ms())).collect();
        let latencies = window_latencies_ms(rows, &visible_at_ms, warm_ms, end_ms);
        (Some(correct), Some(check.mismatches), Some(check.windows_expected), latencies, Some(dead_letters_expected))
    };

    let measured = measured_batches(&summary.batches, warm_ms, summary.start_ms + plan.duration_ms as i64);
    let throughput = sustained(&measured);
    let lag = lag_figures(&measured);
    let mut stability = judge(&lag, plan.batch_interval_ms, ran_fully || read_prefix.is_some());
    if let (Some(read), Some(input)) = (read_prefix, plan.input) {
        // The lag may be small, but the job did not keep up with its input.
        stability.stable = false;
        stability.reasons.insert(
            0,
            format!(
                "{} of {} events were left unread in Kafka: backpressure held the job to what it could process",
                input.events.saturating_sub(read.events),
                input.events
            ),
        );
    }
    let processing = processing_ms(&measured);
    let events_per_s = throughput.as_ref().map(|throughput| throughput.events_per_s);

    let json = json!({
        "benchmark": "ysb",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": plan.config,
        "start_ms": summary.start_ms,
        "end_ms": end_ms,
        "duration_s": (end_ms - summary.start_ms) as f64 / 1000.0,
        "warmup_s": plan.warmup_ms as f64 / 1000.0,
        "events_in": summary.events_in,
        "events_per_s": events_per_s,
        "offered_events_per_s": plan.rate,
        "throughput": {
            "definition": "events of the batches scheduled after the warm-up, over the wall time from the first of them launching to the last finishing",
            "measured": throughput,
        },
        "stable": stability.stable,
        "stability": stability,
        "lag_ms": lag,
        "latency_ms": Distribution::of(&latencies),
        "latency_definition": "per 10 s window ending after the warm-up: when its last campaign row became visible in the sink, minus the window's end",
        "correct": correct,
        "mismatches": mismatches,
        "windows_expected": windows_expected,
        "read_prefix": read_prefix.map(|read| json!({
            "definition": "the job left input unread (backpressure): only windows ending by whole_through_ms, whose events it read in full, are checked",
            "whole_through_ms": read.whole_through_ms,
            "events_read": read.events,
            "events_unread": plan.input.map(|input| input.events.saturating_sub(read.events)),
        })),
        "dead_letters": summary.dead_letters,
        "late_rows_dropped": summary.late_rows_dropped,
        "dead_letters_expected": dead_letters_expected,
        "stopped_early": plan.stopped_early,
        "batches": summary.batches_before_restart + summary.batches_total,
        "batches_expected": batches_expected,
        "batch_processing_ms": Distribution::of(&processing),
        "cpu_breakdown": cpu_breakdown(summary),
        "monotasks": summary.monotask_summary,
        "launch_messages": summary.launch_messages,
        "fewer_workers": fewer_workers(plan.config["workers"].as_u64(), summary),
        "groups": group_summary(summary, warm_ms),
        "series": per_second_series(summary),
        "processed_per_wall_second": processed_per_wall_second(summary),
        "clarity": clarity_section(summary, warm_ms, plan.config["combine"].as_bool().unwrap_or(true), plan.host),
        "end_to_end_check": end_to_end_section(plan, summary, &clock, warm_ms),
    });
    Ok(RunReport { json, correct, stable: stability.stable, events_per_s })
}

/// Why the run measured fewer workers than its configuration names, one reason each: a
/// worker lost mid-run leaves its partitions to the others, and a worker that ran none of
/// the sampled batches' tasks did not take part in what was measured. Empty when every
/// worker did its share.
fn fewer_workers(configured: Option<u64>, summary: &JobSummary) -> Vec<String> {
    let mut reasons: Vec<String> = summary
        .recoveries
        .iter()
        .map(|recovery| format!("worker {} was lost: {}", recovery.lost_worker, recovery.reason))
        .collect();
    if let (Some(configured), Some(samples)) = (configured, &summary.samples) {
        let working: std::collections::BTreeSet<u32> = samples.tasks.iter().map(|task| task.worker).collect();
        if !samples.tasks.is_empty() && (working.len() as u64) < configured {
            reasons.push(format!(
                "only {} of {configured} workers ran the sampled batches' tasks (workers {working:?})",
                working.len()
            ));
        }
    }
    reasons
}

/// The breakdown of the measured batches against their end to end as a reader of the sink
/// saw it (`breakdown_check`); `null` when the sink was not watched or the events came from
/// outside the job (their times are not the generator's schedule then).
fn end_to_end_section(plan: &RunPlan, summary: &JobSummary, clock: &BatchClock, warm_ms: i64) -> serde_json::Value {
    let (Some(sightings), Some(samples), None) = (&plan.sink_sightings, &summary.samples, plan.input) else {
        return serde_json::Value::Null;
    };
    let run = measured_samples(samples, warm_ms);
    let breakdowns = sleet_clarity::breakdowns(&run.batches, &run.tasks, plan.batch_interval_ms);
    json!(end_to_end_check(plan.spec, clock, &run.batches, &breakdowns, sightings))
}

/// Each compute kind's share of the CPU time the monotasks spent computing.
fn cpu_breakdown(summary: &JobSummary) -> serde_json::Map<String, serde_json::Value> {
    const KINDS: [&str; 4] = ["source_read", "decode", "map_compute", "reduce_compute"];
    let run_ms = |kind: &str| summary.monotask_summary.get(kind).map(|entry| entry.run_ms);
    let total: f64 = KINDS.iter().filter_map(|kind| run_ms(kind)).sum();
    KINDS.iter().filter_map(|kind| Some((kind.to_string(), json!(run_ms(kind)? / total.max(1e-9))))).collect()
}

fn bad_events(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64) -> u64 {
    (0..spec.partitions)
        .map(|partition| {
            event_range(spec, partition, start_ms, end_ms).filter(|k| event(spec, partition, *k).bad.is_some()).count()
                as u64
        })
        .sum()
}

/// Group sizes and overheads after the warm-up (group scheduling only): where the size settled.
fn group_summary(summary: &JobSummary, warm_ms: i64) -> serde_json::Value {
    if summary.groups.is_empty() {
        return serde_json::Value::Null;
    }
    let settled: Vec<_> = summary.groups.iter().filter(|group| group.sent_at_ms >= warm_ms).collect();
    let sizes: Vec<f64> = settled.iter().map(|group| group.size as f64).collect();
    let overheads: Vec<f64> = settled.iter().map(|group| group.overhead_average.unwrap_or(group.overhead)).collect();
    json!({
        "count": summary.groups.len(),
        "after_warmup": settled.len(),
        "size_p50": percentile(&sizes, 0.5),
        "size_min": percentile(&sizes, 0.0),
        "size_max": percentile(&sizes, 1.0),
        "overhead_p50": percentile(&overheads, 0.5),
        "overhead_p05": percentile(&overheads, 0.05),
        "overhead_p95": percentile(&overheads, 0.95),
        "size_last": summary.groups.last().map(|group| group.size),
        "series": {
            "first_batch": summary.groups.iter().map(|group| group.first_batch).collect::<Vec<_>>(),
            "sent_at_s": summary.groups.iter().map(|group| (group.sent_at_ms - summary.start_ms) as f64 / 1000.0).collect::<Vec<_>>(),
            "size": summary.groups.iter().map(|group| group.size).collect::<Vec<_>>(),
            "overhead": summary.groups.iter().map(|group| group.overhead).collect::<Vec<_>>(),
            "overhead_average": summary.groups.iter().map(|group| group.overhead_average).collect::<Vec<_>>(),
            "schedule_us": summary.groups.iter().map(|group| group.schedule_us).collect::<Vec<_>>(),
            "register_us": summary.groups.iter().map(|group| group.register_us).collect::<Vec<_>>(),
            "status_us": summary.groups.iter().map(|group| group.status_us).collect::<Vec<_>>(),
            "coordination_wait_us": summary.groups.iter().map(|group| group.coordination_wait_us).collect::<Vec<_>>(),
            "execute_us": summary.groups.iter().map(|group| group.execute_us).collect::<Vec<_>>(),
        },
    })
}

/// Per second of scheduled time: input events, the worst lag, the median processing time and,
/// under group scheduling, the size of the groups those batches ran in and their overhead.
fn per_second_series(summary: &JobSummary) -> serde_json::Value {
    #[derive(Default)]
    struct Second {
        events: u64,
        lag_ms_max: i64,
        processing_ms: Vec<f64>,
        groups: std::collections::BTreeSet<u64>,
    }
    let mut seconds: std::collections::BTreeMap<i64, Second> = std::collections::BTreeMap::new();
    for batch in &summary.batches {
        let second = (batch.scheduled_end_ms - summary.start_ms - 1).max(0) / 1000;
        let entry = seconds.entry(second).or_default();
        entry.events += batch.events_in;
        entry.lag_ms_max = entry.lag_ms_max.max(batch.finished_at_ms - batch.scheduled_end_ms);
        entry.processing_ms.push((batch.finished_at_ms - batch.launched_at_ms) as f64);
        entry.groups.extend(batch.group);
    }
    let groups: std::collections::HashMap<u64, &sleet_wire::GroupRecord> =
        summary.groups.iter().map(|group| (group.group, group)).collect();
    let group_figure = |entry: &Second, figure: &dyn Fn(&sleet_wire::GroupRecord) -> f64| {
        let values: Vec<f64> = entry.groups.iter().filter_map(|id| groups.get(id)).map(|group| figure(group)).collect();
        percentile(&values, 0.5)
    };
    let second: Vec<i64> = seconds.keys().copied().collect();
    let events: Vec<u64> = seconds.values().map(|entry| entry.events).collect();
    let lag: Vec<i64> = seconds.values().map(|entry| entry.lag_ms_max).collect();
    let processing: Vec<f64> =
        seconds.values().map(|entry| percentile(&entry.processing_ms, 0.5).unwrap_or(0.0)).collect();
    let mut series = json!({
        "second": second,
        "events_in": events,
        "lag_ms_max": lag,
        "batch_processing_ms_p50": processing,
    });
    if !groups.is_empty() {
        let sizes: Vec<Option<f64>> =
            seconds.values().map(|entry| group_figure(entry, &|group| group.size as f64)).collect();
        let overheads: Vec<Option<f64>> = seconds
            .values()
            .map(|entry| group_figure(entry, &|group| group.overhead_average.unwrap_or(group.overhead)))
            .collect();
        series["group_size"] = json!(sizes);
        series["overhead"] = json!(overheads);
    }
    series
}

/// Events of the batches that finished in each second of wall time since batch 0 was
/// scheduled to start: what the status line prints each second.
fn processed_per_wall_second(summary: &JobSummary) -> serde_json::Value {
    let mut seconds: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for batch in &summary.batches {
        *seconds.entry((batch.finished_at_ms - summary.start_ms).max(0) / 1000).or_default() += batch.events_in;
    }
    json!({
        "second": seconds.keys().collect::<Vec<_>>(),
        "events": seconds.values().collect::<Vec<_>>(),
    })
}
