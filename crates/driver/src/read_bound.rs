//! Backpressure: how many records each source partition may read per batch while the cluster
//! cannot keep up (`docs/jobs.md`, "Backpressure"). Pure.
//!
//! Off until a batch ends more than an interval after its close. Then each partition reads at
//! most what the cluster processes in `HEADROOM` of an interval at its measured rate, so batches
//! end inside their interval, the lag drains, and the unread backlog waits in the source (Kafka
//! keeps it); while batches still end more than an interval after their close (a queue left
//! from before the bound), in `CATCH_UP_HEADROOM`, so the queue drains in dozens of batches
//! rather than hundreds.
//!
//! The rate is a batch's records over its service time, each smoothed over batches. A batch's
//! service time is the shorter of its span (first task start to last task end) and the time
//! since the batch before it ended: when batches queue, a span includes the wait behind the
//! others, while the gap between completions is what each one cost; when they do not, the gap
//! is the interval and the span is the cost. Since a batch also has a fixed cost, the bound this
//! gives is a little short of the target; the next batch's rate is measured on it, and the bound
//! settles, without overshoot, where a batch takes `HEADROOM` of its interval.
//!
//! The bound lifts when the sources read well under it for `LIFT_AFTER` batches in a row with
//! none ending late (the input has dropped below what the cluster can do): it doubles with each
//! further such batch until it reaches the sources' own limit, so a burst that comes back
//! meanwhile meets a bound at most twice what batches last managed rather than none.
//!
//! The driver tells the workers each new bound at once (`DriverToWorker::ReadBound`), and it
//! applies to every read not yet made, batches already launched in a group included; the
//! source ranges each batch read are in the batch log, so a re-run reads what its first run did
//! whatever the bound is by then.

use sleet_plan::{JobSettings, SourceSpec, StageInput, StagePlan};
use sleet_wire::{BatchRecord, JobId};

/// The share of an interval a bounded batch is sized to take; the rest absorbs noise.
pub const HEADROOM: f64 = 0.9;
/// The share while batches still end more than an interval after their close: the queue
/// then drains by half an interval a batch instead of a tenth.
pub const CATCH_UP_HEADROOM: f64 = 0.5;
/// Weight of the newest batch in the smoothed records and service time.
const RATE_WEIGHT: f64 = 0.25;
/// Batches in a row that read under the bound, and ended within an interval of their close,
/// before it lifts.
pub const LIFT_AFTER: u32 = 20;
/// A batch reading at least this share of the bound was held back by it.
const BINDING_SHARE: f64 = 0.9;
/// Never fewer records per partition per batch than this: a batch must still move the job on
/// when one batch's fixed cost alone exceeds the interval.
pub const FLOOR_RECORDS: u32 = 100;

/// What one completed batch says of the load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchLoad {
    /// Records read per source partition (the batch's input over its source partitions).
    pub records_per_partition: f64,
    /// From its first task's start to its last task's end.
    pub span_ms: f64,
    /// From its scheduled close to its first task's start.
    pub start_delay_ms: f64,
    /// When its last task ended (µs), for the gap to the batch before it.
    pub finished_at_us: i64,
}

impl BatchLoad {
    pub fn of(record: &BatchRecord) -> BatchLoad {
        let partitions = record.source_ranges.len().max(1) as f64;
        BatchLoad {
            records_per_partition: record.events_in as f64 / partitions,
            span_ms: (record.finished_at_us as f64 / 1000.0 - record.launched_at_ms as f64).max(0.0),
            start_delay_ms: (record.launched_at_ms - record.scheduled_end_ms).max(0) as f64,
            finished_at_us: record.finished_at_us,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReadBound {
    interval_ms: f64,
    /// The sources' own limit per batch; a bound at or above it is no bound.
    ceiling: u32,
    /// Smoothed records per partition of a batch, and its service time.
    records: Option<f64>,
    service_ms: Option<f64>,
    bound: Option<u32>,
    under_bound_streak: u32,
    /// Lifting: the bound doubles with each batch that reads under it on time.
    raising: bool,
    last_finished_at_us: Option<i64>,
    /// The attempt and bound the workers were last told of.
    told: Option<(JobId, Option<u32>)>,
}

impl ReadBound {
    pub fn new(interval_ms: u64, ceiling: u32) -> ReadBound {
        ReadBound {
            interval_ms: interval_ms.max(1) as f64,
            ceiling: ceiling.max(FLOOR_RECORDS),
            records: None,
            service_ms: None,
            bound: None,
            under_bound_streak: 0,
            raising: false,
            last_finished_at_us: None,
            told: None,
        }
    }

    /// The controller of a job with backpressure on; its ceiling is the largest per-batch
    /// limit of its Kafka sources, the ones that read less when told to. (A file source
    /// does not: a re-run batch reads its lines again by count from where the one before it
    /// ended, so its batches must not depend on a bound that recovery does not restore.)
    pub fn for_job(settings: &JobSettings, stages: &[StagePlan]) -> Option<ReadBound> {
        if !settings.backpressure {
            return None;
        }
        let ceiling = stages
            .iter()
            .filter_map(|stage| match &stage.input {
                StageInput::Source(SourceSpec::Kafka(kafka)) => Some(kafka.max_records_per_partition_per_batch),
                _ => None,
            })
            .max()
            .unwrap_or_else(sleet_plan::default_max_records_per_batch);
        Some(ReadBound::new(settings.batch_interval_ms, ceiling))
    }

    /// Records each source partition may read per batch now; `None`: its own limit.
    pub fn bound(&self) -> Option<u32> {
        self.bound
    }

    /// The bound to tell the workers of attempt `job`, when they have not been told it yet.
    pub fn untold(&mut self, job: JobId) -> Option<Option<u32>> {
        let now = (job, self.bound);
        let first_of_attempt = self.told.is_none_or(|(told_job, _)| told_job != job);
        // A new attempt's workers start unbounded: they need telling only of a bound.
        if self.told == Some(now) || (first_of_attempt && self.bound.is_none()) {
            self.told = Some(now);
            return None;
        }
        self.told = Some(now);
        Some(self.bound)
    }

    pub fn observe(&mut self, load: BatchLoad) {
        let since_last_ms =
            self.last_finished_at_us.map(|last| (load.finished_at_us - last) as f64 / 1000.0).filter(|gap| *gap > 0.0);
        self.last_finished_at_us =
            Some(self.last_finished_at_us.map_or(load.finished_at_us, |last| last.max(load.finished_at_us)));
        let queued = load.start_delay_ms + load.span_ms > self.interval_ms;
        // With no batch before it to compare with, a queued batch's span is mostly its wait.
        let service_ms = match since_last_ms {
            Some(gap) => Some(gap.min(load.span_ms)),
            None => (!queued).then_some(load.span_ms),
        }
        .filter(|ms| *ms > 0.0);
        if let (Some(service_ms), true) = (service_ms, load.records_per_partition > 0.0) {
            // Records and time smoothed apart: completions that bunch up (gaps near zero, then
            // a long one) then average to what batches cost, where a mean of ratios would not.
            let smooth = |smoothed: Option<f64>, value: f64| {
                Some(smoothed.map_or(value, |smoothed| smoothed + RATE_WEIGHT * (value - smoothed)))
            };
            self.records = smooth(self.records, load.records_per_partition);
            self.service_ms = smooth(self.service_ms, service_ms);
        }
        match self.bound {
            None if queued => {
                self.under_bound_streak = 0;
                self.raising = false;
                self.bound = self.target(queued);
            }
            None => {}
            Some(bound) => {
                let held_back = load.records_per_partition >= BINDING_SHARE * bound as f64;
                if held_back || queued {
                    self.under_bound_streak = 0;
                    self.raising = false;
                    self.bound = self.target(queued);
                } else if self.raising || self.under_bound_streak + 1 >= LIFT_AFTER {
                    // Lifted by doubling, one batch at a time: should the input come back
                    // in a burst, a batch reads at most twice what the last one could.
                    self.raising = true;
                    self.bound = bound.checked_mul(2).filter(|doubled| *doubled < self.ceiling);
                } else {
                    self.under_bound_streak += 1;
                    self.bound = self.target(queued);
                }
            }
        }
    }

    /// What a partition can read for its batch to take `HEADROOM` of an interval
    /// (`CATCH_UP_HEADROOM` while a queue drains).
    fn target(&self, queued: bool) -> Option<u32> {
        let rate = self.records? / self.service_ms?;
        let headroom = if queued { CATCH_UP_HEADROOM } else { HEADROOM };
        let records = (rate * self.interval_ms * headroom).floor();
        if records >= self.ceiling as f64 {
            return None;
        }
        Some((records as u32).max(FLOOR_RECORDS))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A cluster that serves one batch at a time at `rate` records per partition per ms after
    /// `fixed_ms` per batch, fed `arriving` records per partition per interval; what is not
    /// read waits in `backlog`. A batch is launched at its close and, as a group-scheduled
    /// task does, counts the time it queues behind the batches before it in its span (the
    /// harder case for the controller), behind `queued_ms` of work already waiting. Returns
    /// each batch's bound, service time and how far it ended behind its close.
    #[allow(clippy::too_many_arguments)]
    fn run(
        controller: &mut ReadBound,
        queued_ms: f64,
        interval_ms: f64,
        rate: f64,
        fixed_ms: f64,
        arriving: f64,
        backlog: &mut f64,
        batches: usize,
    ) -> Vec<(Option<u32>, f64, f64)> {
        let mut free_at_ms: f64 = queued_ms;
        let mut seen = Vec::new();
        for index in 0..batches {
            let close_ms = (index + 1) as f64 * interval_ms;
            *backlog += arriving;
            let limit = controller.bound().map_or(controller.ceiling as f64, f64::from);
            let records = backlog.min(limit);
            *backlog -= records;
            let service_ms = fixed_ms + records / rate;
            let end_ms = close_ms.max(free_at_ms) + service_ms;
            free_at_ms = end_ms;
            controller.observe(BatchLoad {
                records_per_partition: records,
                span_ms: end_ms - close_ms,
                start_delay_ms: 0.0,
                finished_at_us: (end_ms * 1000.0) as i64,
            });
            seen.push((controller.bound(), service_ms, end_ms - close_ms));
        }
        seen
    }

    #[test]
    fn an_overload_is_held_to_the_headroom_of_an_interval_and_the_lag_drains() {
        let mut controller = ReadBound::new(10, 100_000);
        let mut backlog = 0.0;
        // Capacity 2 000 records per ms after 1 ms per batch: 18 000 per 10 ms interval; 40 000
        // arrive, behind a second of work already queued (groups launched before the overload).
        let seen = run(&mut controller, 1_000.0, 10.0, 2_000.0, 1.0, 40_000.0, &mut backlog, 400);
        let (bound, service_ms, behind_ms) = *seen.last().expect("ran");
        let bound = bound.expect("held back");
        assert!((service_ms - 9.0).abs() < 0.2, "settles at the headroom: {service_ms} ms");
        assert!((bound as f64 - 16_000.0).abs() < 300.0, "{bound} records per partition");
        assert!(behind_ms <= 10.0, "the queue drained: the last batch ended {behind_ms} ms after its close");
        let most_behind = seen.iter().map(|(_, _, behind)| *behind).fold(0.0, f64::max);
        assert!(most_behind < 1_100.0, "the queue only drains: {most_behind} ms at most");
        let caught_up = seen.iter().position(|(_, _, behind)| *behind <= 10.0).expect("caught up");
        assert!(caught_up < 250, "a second's queue drains in {caught_up} batches");
        // Queued batches' spans include their wait; the rate is taken from what each cost, so
        // the bound does not collapse while the queue drains.
        let least = seen.iter().filter_map(|(bound, _, _)| *bound).min().expect("bounded");
        assert!(least >= 5_000, "the bound fell to {least} while the queue drained");
    }

    #[test]
    fn a_load_the_cluster_keeps_up_with_is_never_bounded() {
        let mut controller = ReadBound::new(10, 100_000);
        let mut backlog = 0.0;
        let seen = run(&mut controller, 0.0, 10.0, 2_000.0, 1.0, 10_000.0, &mut backlog, 300);
        assert!(seen.iter().all(|(bound, _, _)| bound.is_none()));
    }

    #[test]
    fn the_bound_lifts_when_the_input_drops_below_capacity() {
        let mut controller = ReadBound::new(10, 100_000);
        let mut backlog = 0.0;
        run(&mut controller, 0.0, 10.0, 2_000.0, 1.0, 40_000.0, &mut backlog, 100);
        assert!(controller.bound().is_some());
        backlog = 0.0;
        let held = controller.bound().expect("held back");
        let seen = run(&mut controller, 0.0, 10.0, 2_000.0, 1.0, 5_000.0, &mut backlog, LIFT_AFTER as usize + 5);
        let lifting: Vec<Option<u32>> = seen[LIFT_AFTER as usize - 1..].iter().map(|(bound, _, _)| *bound).collect();
        // By doubling from where the input dropped, then none once past the sources' limit.
        let first = lifting[0].expect("doubled, not gone");
        assert!(first > held && first <= 2 * held, "{held} then {lifting:?}");
        assert_eq!(lifting[1], Some(2 * first), "{lifting:?}");
        assert_eq!(seen.last().expect("ran").0, None);
    }

    #[test]
    fn a_fixed_cost_above_the_interval_leaves_the_floor() {
        let mut controller = ReadBound::new(10, 100_000);
        let mut backlog = 0.0;
        let seen = run(&mut controller, 0.0, 10.0, 2_000.0, 12.0, 40_000.0, &mut backlog, 100);
        assert_eq!(seen.last().expect("ran").0, Some(FLOOR_RECORDS));
    }

    #[test]
    fn workers_are_told_each_new_bound_once_and_a_new_attempt_only_of_a_bound() {
        let mut controller = ReadBound::new(10, 100_000);
        assert_eq!(controller.untold(1), None, "no bound: nothing to tell");
        controller.bound = Some(5_000);
        assert_eq!(controller.untold(1), Some(Some(5_000)));
        assert_eq!(controller.untold(1), None, "told already");
        assert_eq!(controller.untold(2), Some(Some(5_000)), "a new attempt's workers start unbounded");
        controller.bound = None;
        assert_eq!(controller.untold(2), Some(None), "the lift is news");
        assert_eq!(controller.untold(3), None);
    }

    proptest! {
        /// Whatever the cluster and the input: the bound stays within its floor and the
        /// sources' limit, and on a steady input it moves one way only in the end (it settles;
        /// it does not swing).
        #[test]
        fn the_bound_stays_in_range_and_settles_without_swinging(
            interval_ms in 1u64..500,
            rate in 1.0f64..10_000.0,
            fixed_ms in 0.0f64..50.0,
            arriving_intervals in 0.1f64..20.0,
            ceiling in 100u32..1_000_000,
        ) {
            let mut controller = ReadBound::new(interval_ms, ceiling);
            let interval = interval_ms as f64;
            let arriving = arriving_intervals * rate * interval;
            let mut backlog = 0.0;
            let seen = run(&mut controller, 0.0, interval, rate, fixed_ms, arriving, &mut backlog, 600);
            for (bound, _, _) in &seen {
                if let Some(bound) = bound {
                    prop_assert!(*bound >= FLOOR_RECORDS && *bound < ceiling.max(FLOOR_RECORDS));
                }
            }
            let tail: Vec<u32> = seen[500..].iter().map(|(bound, _, _)| bound.unwrap_or(ceiling)).collect();
            let rises = tail.windows(2).any(|pair| pair[1] > pair[0]);
            let falls = tail.windows(2).any(|pair| pair[1] < pair[0]);
            prop_assert!(!(rises && falls), "swings on a steady input: {tail:?}");
        }
    }
}
