//! Checks the latency breakdown (issue 14) against an end-to-end latency measured without it:
//! per batch, the mean over its events of (rows visible in the sink − event time), with the
//! event times from the generator function (the ground truth, not the sources' reports) and
//! the visible time from a reader of the sink files (`sink_watch`, not the task reports).
//! The breakdown sums to its own end to end by construction; only this comparison shows that
//! the parts cover the whole of what a reader waits. Pure.
//!
//! ```text
//!  breakdowns (task reports, sources' event waits) ──┐
//!  generator event times ─┬─ mean per batch ─────────┼──▶ relative difference per batch
//!  sink watcher: rows visible, manifest commits ─────┘
//! ```

use std::collections::BTreeMap;

use serde::Serialize;
use sleet_clarity::{BatchSample, Distribution, LatencyBreakdown};
use sleet_connectors::ysb::{event, event_range};
use sleet_plan::YsbSourceSpec;
use sleet_wire::clock::BatchClock;

use crate::sink_watch::SinkSightings;

pub const DEFINITION: &str = "per batch after the warm-up: measured_us is the mean over the batch's \
    generated events of (the time a reader of the sink directory first saw the batch's rows in the \
    last of the files that hold them − the event's event_time), the event times recomputed from the \
    generator function and the sight times taken by an inotify watcher in the bench process; \
    breakdown_us is the sum of the breakdown's parts up to the batch's end (wait_for_close measured \
    by the sources, the rest from the task reports). relative_difference = (breakdown − measured) ÷ \
    measured. committed_us is the same mean to the time the watcher first saw the commit manifest \
    admit the batch, breakdown_committed_us the breakdown's whole end to end, its commit part \
    included (the driver's time of publishing that manifest); relative_difference_committed \
    compares those two.";

pub const CLOCKS: &str = "one host clock (CLOCK_REALTIME): the workers' task and monotask times, \
    the driver's, and the bench's watcher all read it; event times are the generator's schedule on \
    it, in whole ms. The watcher reads the clock when poll returns, so its times are late by its \
    wake-up, never early.";

/// One batch's two end-to-end latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchEndToEnd {
    pub batch: u64,
    pub breakdown_us: i64,
    pub measured_us: i64,
    /// To the manifest's commit, when the watcher saw one.
    pub committed_us: Option<i64>,
    /// The breakdown's whole end to end, its commit part included.
    pub breakdown_committed_us: i64,
}

impl BatchEndToEnd {
    pub fn relative_difference(&self) -> f64 {
        relative(self.breakdown_us, self.measured_us)
    }

    /// As `relative_difference`, to the commit; `None` when the watcher saw none.
    pub fn relative_difference_committed(&self) -> Option<f64> {
        self.committed_us.map(|committed| relative(self.breakdown_committed_us, committed))
    }
}

fn relative(breakdown_us: i64, measured_us: i64) -> f64 {
    (breakdown_us - measured_us) as f64 / (measured_us.max(1) as f64)
}

/// Sum and count of the generated events' times in `[start_ms, end_ms)`, over all partitions.
pub fn generated_event_times(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64) -> (u64, i128) {
    (0..spec.partitions).fold((0, 0), |(count, sum), partition| {
        event_range(spec, partition, start_ms, end_ms).fold((count, sum), |(count, sum), k| {
            (count + 1, sum + i128::from(event(spec, partition, k).event_time_ms))
        })
    })
}

/// The mean over `events` events whose times sum to `time_sum_ms` of (`at_us` − event time),
/// in µs; `None` without events.
fn mean_latency_us(at_us: i64, (events, time_sum_ms): (u64, i128)) -> Option<i64> {
    (events > 0).then(|| (i128::from(at_us) - time_sum_ms * 1000 / i128::from(events)) as i64)
}

/// Pairs each breakdown with the batch's measured end to end; a batch whose rows the watcher
/// never saw (it wrote none) is left out, as is one without events.
pub fn compare(
    breakdowns: &[LatencyBreakdown],
    sightings: &SinkSightings,
    event_times: impl Fn(u64) -> (u64, i128),
) -> Vec<BatchEndToEnd> {
    breakdowns
        .iter()
        .filter_map(|breakdown| {
            let visible_us = *sightings.rows_visible_at_us.get(&breakdown.batch)?;
            let times = event_times(breakdown.batch);
            Some(BatchEndToEnd {
                batch: breakdown.batch,
                breakdown_us: breakdown.end_to_end_us - breakdown.commit_us,
                breakdown_committed_us: breakdown.end_to_end_us,
                measured_us: mean_latency_us(visible_us, times)?,
                committed_us: sightings
                    .committed_at_us
                    .get(&breakdown.batch)
                    .and_then(|at| mean_latency_us(*at, times)),
            })
        })
        .collect()
}

/// The comparison as the bench JSON holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndToEndCheck {
    pub definition: &'static str,
    pub clocks: &'static str,
    pub batches_compared: usize,
    /// Measured batches the watcher saw no rows of (they wrote none), left out.
    pub batches_not_seen: usize,
    /// Per batch, signed, as a fraction: its median is the headline figure.
    pub relative_difference: Distribution,
    pub relative_difference_abs: Distribution,
    /// Over all compared batches: (mean breakdown − mean measured) ÷ mean measured.
    pub relative_difference_of_means: Option<f64>,
    pub breakdown_ms: Distribution,
    pub measured_ms: Distribution,
    /// To the manifest's commit: what a reader that trusts only committed output waits.
    pub committed_ms: Distribution,
    /// Per batch the watcher saw committed, signed: the whole breakdown against `committed`.
    pub relative_difference_committed: Distribution,
    pub relative_difference_committed_abs: Distribution,
    /// |the sources' reported wait for the close − the generator's|, per batch, in µs (1 at
    /// most: rounding): shows that the wait the breakdown takes is the events' own.
    pub event_wait_error_us: Distribution,
    pub batches_without_event_wait: usize,
    /// Per batch, as columns: `batch`, `breakdown_us`, `measured_us`, `committed_us`,
    /// `breakdown_committed_us`.
    pub per_batch: BTreeMap<String, Vec<Option<i64>>>,
}

/// The whole check of one run's measured batches.
pub fn end_to_end_check(
    spec: &YsbSourceSpec,
    clock: &BatchClock,
    batches: &[BatchSample],
    breakdowns: &[LatencyBreakdown],
    sightings: &SinkSightings,
) -> EndToEndCheck {
    let mut times: BTreeMap<u64, (u64, i128)> = BTreeMap::new();
    for batch in batches {
        let (start_ms, end_ms) = clock.range_ms(batch.batch);
        times.insert(batch.batch, generated_event_times(spec, start_ms, end_ms));
    }
    let compared = compare(breakdowns, sightings, |batch| times.get(&batch).copied().unwrap_or((0, 0)));
    let relative: Vec<f64> = compared.iter().map(BatchEndToEnd::relative_difference).collect();
    let absolute: Vec<f64> = relative.iter().map(|value| value.abs()).collect();
    let relative_committed: Vec<f64> =
        compared.iter().filter_map(BatchEndToEnd::relative_difference_committed).collect();
    let absolute_committed: Vec<f64> = relative_committed.iter().map(|value| value.abs()).collect();
    let ms = |values: Vec<i64>| Distribution::of(&values.iter().map(|us| *us as f64 / 1000.0).collect::<Vec<_>>());
    let mean = |values: &[i64]| (!values.is_empty()).then(|| values.iter().sum::<i64>() as f64 / values.len() as f64);
    let breakdown_us: Vec<i64> = compared.iter().map(|batch| batch.breakdown_us).collect();
    let measured_us: Vec<i64> = compared.iter().map(|batch| batch.measured_us).collect();
    let relative_difference_of_means =
        mean(&breakdown_us).zip(mean(&measured_us)).map(|(breakdown, measured)| (breakdown - measured) / measured);
    let wait_errors: Vec<f64> = batches
        .iter()
        .filter_map(|batch| {
            let reported = batch.event_wait_us?;
            let generated = mean_latency_us(batch.closed_at_us, times[&batch.batch])?;
            Some((reported - generated).abs() as f64)
        })
        .collect();
    let mut per_batch: BTreeMap<String, Vec<Option<i64>>> = BTreeMap::new();
    for batch in &compared {
        let columns = [
            ("batch", Some(batch.batch as i64)),
            ("breakdown_us", Some(batch.breakdown_us)),
            ("measured_us", Some(batch.measured_us)),
            ("committed_us", batch.committed_us),
            ("breakdown_committed_us", Some(batch.breakdown_committed_us)),
        ];
        for (name, value) in columns {
            per_batch.entry(name.to_string()).or_default().push(value);
        }
    }
    EndToEndCheck {
        definition: DEFINITION,
        clocks: CLOCKS,
        batches_compared: compared.len(),
        batches_not_seen: breakdowns.len() - compared.len(),
        relative_difference: Distribution::of(&relative),
        relative_difference_abs: Distribution::of(&absolute),
        relative_difference_of_means,
        breakdown_ms: ms(breakdown_us),
        measured_ms: ms(measured_us),
        committed_ms: ms(compared.iter().filter_map(|batch| batch.committed_us).collect()),
        relative_difference_committed: Distribution::of(&relative_committed),
        relative_difference_committed_abs: Distribution::of(&absolute_committed),
        event_wait_error_us: Distribution::of(&wait_errors),
        batches_without_event_wait: batches.iter().filter(|batch| batch.event_wait_us.is_none()).count(),
        per_batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breakdown(batch: u64, end_to_end_us: i64) -> LatencyBreakdown {
        LatencyBreakdown { batch, end_to_end_us, ..LatencyBreakdown::default() }
    }

    fn committed_breakdown(batch: u64, end_to_end_us: i64, commit_us: i64) -> LatencyBreakdown {
        LatencyBreakdown { commit_us, ..breakdown(batch, end_to_end_us) }
    }

    #[test]
    fn the_measured_end_to_end_is_the_events_mean_wait_for_the_rows() {
        // Batch 3: two events at 1 000 and 1 004 ms, rows seen at 1 020.5 ms: they waited
        // 20.5 and 16.5 ms, 18.5 ms on average; the breakdown says 20.35 ms, 10 % more.
        // Batch 4 wrote no rows; batch 5 had no events.
        let sightings = SinkSightings {
            rows_visible_at_us: [(3, 1_020_500), (5, 1_040_000)].into(),
            committed_at_us: [(3, 1_100_000)].into(),
        };
        let times = |batch| if batch == 3 { (2, 2_004) } else { (0, 0) };
        // The driver published the manifest 78.05 ms after the batch ended (commit part), the
        // watcher saw it at 1 100 ms: 98 ms after the mean event, against 98.4 in the breakdown.
        let breakdowns = [committed_breakdown(3, 98_400, 78_050), breakdown(4, 9_000), breakdown(5, 1)];
        let got = compare(&breakdowns, &sightings, times);
        assert_eq!(
            got,
            vec![BatchEndToEnd {
                batch: 3,
                breakdown_us: 20_350,
                measured_us: 18_500,
                committed_us: Some(98_000),
                breakdown_committed_us: 98_400,
            }]
        );
        assert!((got[0].relative_difference() - 0.1).abs() < 1e-12, "{}", got[0].relative_difference());
        let committed = got[0].relative_difference_committed().expect("committed");
        assert!((committed - 400.0 / 98_000.0).abs() < 1e-12, "{committed}");
    }

    #[test]
    fn generated_event_times_are_summed_over_partitions() {
        // 2 000 events/s on 2 partitions: one event per ms on each, at 10..=14 ms for [10, 15).
        let spec = YsbSourceSpec { seed: 1, rate_per_s: 2_000, partitions: 2, bad_fraction: 0.0, pre_decoded: false };
        assert_eq!(generated_event_times(&spec, 10, 15), (10, 2 * (10 + 11 + 12 + 13 + 14)));
        assert_eq!(generated_event_times(&spec, 15, 15), (0, 0));
    }

    #[test]
    fn the_check_compares_reported_waits_with_the_generators() {
        let spec = YsbSourceSpec { seed: 1, rate_per_s: 2_000, partitions: 2, bad_fraction: 0.0, pre_decoded: false };
        let clock = BatchClock::new(0, 10);
        // Batch 1 is [10, 20): events at 10..=19 ms wait 10..=1 ms, 5.5 ms on average.
        let sample = |event_wait_us| BatchSample {
            batch: 1,
            closed_at_us: 20_000,
            first_task_started_at_us: 20_000,
            finished_at_us: 30_000,
            coordination_us: 0,
            events: 20,
            event_wait_us,
            committed_at_us: None,
        };
        let sightings = SinkSightings { rows_visible_at_us: [(1, 30_000)].into(), ..SinkSightings::default() };
        let check = end_to_end_check(&spec, &clock, &[sample(Some(5_600))], &[breakdown(1, 15_500)], &sightings);
        assert_eq!(check.event_wait_error_us.p50, Some(100.0), "reported 5.6 ms, generated 5.5 ms");
        assert_eq!(check.measured_ms.p50, Some(15.5));
        assert_eq!(check.relative_difference.p50, Some(0.0));
        assert_eq!((check.batches_compared, check.batches_not_seen, check.batches_without_event_wait), (1, 0, 0));
        let unmeasured = end_to_end_check(&spec, &clock, &[sample(None)], &[breakdown(1, 15_500)], &sightings);
        assert_eq!((unmeasured.batches_without_event_wait, unmeasured.event_wait_error_us.samples), (1, 0));
    }
}
