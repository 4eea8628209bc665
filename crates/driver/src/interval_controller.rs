//! The batch-interval controller (`--batch-interval auto`): the interval of the next group,
//! the smallest one whose batches' processing time stays under the interval with headroom.
//! Pure: it takes the batch timings of a group that just ended and returns the interval for
//! the next group; the caller applies it at a group boundary and records it in the batch log.
//!
//! **Model.** A batch's processing time is a fixed part (launch, shuffle set-up, per-batch
//! bookkeeping) plus a part proportional to its events, and at a given input rate the events
//! grow with the interval:
//!
//! ```text
//!   processing(T) = fixed + per_event × rate × T      keep: processing(T) ≤ headroom × T
//!   smallest T    = fixed ÷ (headroom − per_event × rate), none if per_event × rate ≥ headroom
//! ```
//!
//! `fixed` and `per_event` are fitted by least squares on the recent groups, which needs
//! groups that differ in events per batch. The cost per event is the system's and the rate is
//! the input's, so the fit survives a change of rate: a burst is answered from the rate of
//! the latest group at once, without relearning the costs.
//!
//! **Without a model** the controller takes only safe steps. Processing time does not shrink
//! when the interval grows, so `processing ÷ headroom`, measured at the interval in use, is a
//! smaller interval that surely keeps the headroom when it is below the interval in use, and
//! the least a larger interval must be when it is above. When that bound rounds to the
//! interval in use, it probes one rung down, only if the processing measured now fits in the
//! lower rung even if all of it were fixed (so the probe cannot make batches fall behind),
//! and never again once a probe had to be undone. Moves give the fit its second size; the
//! model is kept once fitted, so a steady input that stops spreading the events never sends
//! the controller probing again.
//!
//! **Hysteresis.** The controller moves up at once when batches fall behind (the group's last
//! batch finished more than an interval after its scheduled end, and later than the group
//! before: a queue grows) or when processing passes halfway from the headroom to the whole
//! interval: a queue that grows costs latency every batch it is left. Any other move waits
//! for `patience` consecutive groups at the interval in use asking for the same direction,
//! and goes to the largest interval they asked for. After a move down on the model's or the
//! measured bound's word, processing a little over the headroom (up to halfway to the urgent
//! share) is tolerated: the move was predicted to keep the headroom, so an excess that small
//! is prediction error (integer event counts, noise), and answering it would bounce between
//! two neighbouring rungs. A probe gets no such tolerance, since it predicted nothing. On a
//! steady input the target is then a fixed point: once there, no group asks for a move.
//!
//! **Ladder.** Intervals come from a fixed ladder: every whole millisecond below 10 ms (the
//! batch clock counts whole ms), then the rounded R20 series (10, 11, 12, 14, 16, 18, 20, 22,
//! 25, 28, 32, 36, 40, 45, 50, 56, 63, 71, 80, 90 per decade), plus the user's bounds. Its
//! steps are 9–17 % from 6 ms up, so the rung above the ideal interval is within a sixth of
//! it, while a 1-2-5 ladder could land 150 % above. Whole milliseconds everywhere would be
//! fine at 5 ms and needlessly fine at 5 s: noise of a few per cent would ask for a new
//! interval, and each change restarts the batch clock and adds an entry to the batch log. The
//! ladder keeps the same relative resolution at every scale, and any move on it changes the
//! events per batch by more than the fit needs to tell the fixed part from the per-event part.
//!
//! Like the group-size controller, it steps only on evidence about the interval in use: the
//! group after a change was already out with the old interval, and its timings update the
//! model but do not move the interval again.

use std::collections::VecDeque;

/// Groups the cost model is fitted on: enough to average out noise, few enough that a change
/// in the cost per event (a worker joined or left) replaces the old points within 16 groups.
const MODEL_GROUPS_MAX: usize = 16;
/// The least spread in events per batch, relative to the largest, that the fit accepts: with
/// less, the slope would be mostly measurement noise. A step on the ladder changes the events
/// per batch by more than this at a steady rate.
const MODEL_SPREAD_MIN: f64 = 0.05;
/// Intervals within this relative distance of a rung count as that rung, so that a float
/// error in an exact fit does not push the choice onto the next rung.
const RUNG_TOLERANCE: f64 = 1e-9;
const LADDER_WHOLE_MS_BELOW: u64 = 10;
const LADDER_MANTISSAS: [u64; 20] = [10, 11, 12, 14, 16, 18, 20, 22, 25, 28, 32, 36, 40, 45, 50, 56, 63, 71, 80, 90];

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSettings {
    pub min_ms: u32,
    pub max_ms: u32,
    /// The share of the interval a batch's processing may take, in (0, 1): the rest absorbs
    /// variation between batches.
    pub headroom: f64,
    /// Consecutive groups that must ask for the same move before a move that is not urgent.
    pub patience: u32,
}

impl IntervalSettings {
    pub fn new(min_ms: u32, max_ms: u32) -> Self {
        IntervalSettings { min_ms, max_ms, headroom: 0.8, patience: 3 }
    }

    /// Processing past this share of the interval is treated as falling behind: halfway from
    /// the headroom to the whole interval.
    fn urgent_share(&self) -> f64 {
        (1.0 + self.headroom) / 2.0
    }

    /// Processing up to this share is tolerated after a predicted move down: halfway from the
    /// headroom to the urgent share.
    fn tolerated_share(&self) -> f64 {
        (self.headroom + self.urgent_share()) / 2.0
    }
}

/// One batch of the group that ended, from its `BatchRecord`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTiming {
    /// From its launch to its end on the workers (`finished_at − launched_at`).
    pub processing_ms: f64,
    /// Events it read (`events_in`).
    pub events: u64,
    /// From its scheduled end to its end (`finished_at − scheduled_end`): its wait to start
    /// plus its processing.
    pub finished_late_ms: f64,
}

/// Processing time of a batch as a function of its events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    pub fixed_ms: f64,
    pub per_event_ms: f64,
}

impl CostModel {
    pub fn processing_ms(&self, events: f64) -> f64 {
        self.fixed_ms + self.per_event_ms * events
    }

    /// The smallest interval whose processing at `rate_per_ms` stays within `headroom` of it;
    /// `None` when the per-event part alone takes that share of any interval.
    pub fn smallest_interval_ms(&self, rate_per_ms: f64, headroom: f64) -> Option<f64> {
        let spare_share = headroom - self.per_event_ms * rate_per_ms;
        (spare_share > 0.0).then(|| self.fixed_ms / spare_share)
    }

    /// Least squares over `(events, processing_ms)` points, with both parts kept
    /// non-negative: a negative part is noise, and would predict that larger batches are
    /// cheaper or that empty ones take negative time.
    fn fit(points: &VecDeque<(f64, f64)>) -> Option<CostModel> {
        let events = points.iter().map(|(events, _)| *events);
        let events_max = events.clone().fold(0.0, f64::max);
        let events_min = events.fold(f64::INFINITY, f64::min);
        if points.len() < 2 || events_max - events_min <= MODEL_SPREAD_MIN * events_max {
            return None;
        }
        let count = points.len() as f64;
        let events_mean = points.iter().map(|(events, _)| events).sum::<f64>() / count;
        let processing_mean = points.iter().map(|(_, processing)| processing).sum::<f64>() / count;
        let (covariance, variance) = points.iter().fold((0.0, 0.0), |(covariance, variance), (events, processing)| {
            let deviation = events - events_mean;
            (covariance + deviation * (processing - processing_mean), variance + deviation * deviation)
        });
        let per_event_ms = covariance / variance;
        let fixed_ms = processing_mean - per_event_ms * events_mean;
        if per_event_ms < 0.0 {
            Some(CostModel { fixed_ms: processing_mean, per_event_ms: 0.0 })
        } else if fixed_ms < 0.0 {
            let through_origin = points.iter().map(|(events, processing)| events * processing).sum::<f64>()
                / points.iter().map(|(events, _)| events * events).sum::<f64>();
            Some(CostModel { fixed_ms: 0.0, per_event_ms: through_origin })
        } else {
            Some(CostModel { fixed_ms, per_event_ms })
        }
    }
}

/// A group's batches, summed up.
#[derive(Debug, Clone, Copy, PartialEq)]
struct GroupFigures {
    interval_ms: u32,
    processing_ms: f64,
    events_per_batch: f64,
    /// How late its last batch finished: the queue the group left behind.
    finished_late_ms: f64,
}

impl GroupFigures {
    /// `None` when no batch has usable figures. Timings come from several workers' clocks,
    /// so a negative one is skew, read as zero, and a non-finite one is dropped.
    fn summarize(interval_ms: u32, batches: &[BatchTiming]) -> Option<GroupFigures> {
        let usable: Vec<&BatchTiming> = batches
            .iter()
            .filter(|batch| batch.processing_ms.is_finite() && batch.finished_late_ms.is_finite())
            .collect();
        let last = usable.last()?;
        let count = usable.len() as f64;
        Some(GroupFigures {
            interval_ms,
            processing_ms: usable.iter().map(|batch| batch.processing_ms.max(0.0)).sum::<f64>() / count,
            events_per_batch: usable.iter().map(|batch| batch.events as f64).sum::<f64>() / count,
            finished_late_ms: last.finished_late_ms.max(0.0),
        })
    }

    fn rate_per_ms(&self) -> f64 {
        self.events_per_batch / f64::from(self.interval_ms)
    }
}

/// The intervals the controller may choose, ascending, within the user's bounds and
/// including them.
#[derive(Debug, Clone, PartialEq)]
struct Ladder {
    rungs: Vec<u32>,
}

impl Ladder {
    fn new(min_ms: u32, max_ms: u32) -> Self {
        let whole_ms = 1..LADDER_WHOLE_MS_BELOW;
        let decades =
            (0..10u32).flat_map(|power| LADDER_MANTISSAS.iter().map(move |mantissa| mantissa * 10u64.pow(power)));
        let bounds = u64::from(min_ms)..=u64::from(max_ms);
        let mut rungs: Vec<u32> = whole_ms
            .chain(decades)
            .filter(|ms| bounds.contains(ms))
            .map(|ms| u32::try_from(ms).expect("a rung within u32 bounds fits u32"))
            .chain([min_ms, max_ms])
            .collect();
        rungs.sort_unstable();
        rungs.dedup();
        Ladder { rungs }
    }

    fn min_ms(&self) -> u32 {
        self.rungs[0]
    }

    fn max_ms(&self) -> u32 {
        *self.rungs.last().expect("a ladder holds at least its bounds")
    }

    /// The lowest rung at or above `ms`; the top rung when none is.
    fn at_or_above(&self, ms: f64) -> u32 {
        assert!(!ms.is_nan(), "an interval estimate is a number");
        let index = self.rungs.partition_point(|rung| f64::from(*rung) < ms * (1.0 - RUNG_TOLERANCE));
        self.rungs.get(index).copied().unwrap_or_else(|| self.max_ms())
    }

    /// The lowest rung above `ms`; the top rung when none is.
    fn above(&self, ms: u32) -> u32 {
        self.rungs.iter().copied().find(|rung| *rung > ms).unwrap_or_else(|| self.max_ms())
    }

    fn below(&self, ms: u32) -> Option<u32> {
        self.rungs.iter().rev().copied().find(|rung| *rung < ms)
    }
}

/// Where the latest group says the interval should go.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Target {
    interval_ms: u32,
    /// Taken without a model and beyond what the measured bound proves safe.
    probe: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Direction {
    Up,
    Down,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct PendingMove {
    direction: Direction,
    agreeing_groups: u32,
    /// The largest interval asked for so far: the safer side of the estimates.
    interval_ms: u32,
    probe: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IntervalController {
    settings: IntervalSettings,
    ladder: Ladder,
    interval_ms: u32,
    /// `(events per batch, processing ms)` of the latest groups, oldest first.
    recent_groups: VecDeque<(f64, f64)>,
    model: Option<CostModel>,
    pending: Option<PendingMove>,
    previous_finished_late_ms: Option<f64>,
    last_move: Option<MoveKind>,
    probe_undone: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum MoveKind {
    Up,
    /// Down to where the model or the measured bound predicted the headroom holds.
    PredictedDown,
    Probe,
}

impl IntervalController {
    /// `initial_ms` is the interval the job starts with, held within the bounds; it need not
    /// be on the ladder.
    pub fn new(settings: IntervalSettings, initial_ms: u32) -> Self {
        assert!(
            1 <= settings.min_ms && settings.min_ms <= settings.max_ms,
            "interval bounds must satisfy 1 ≤ min ≤ max, not {}..{}",
            settings.min_ms,
            settings.max_ms
        );
        assert!(0.0 < settings.headroom && settings.headroom < 1.0, "headroom must be in (0, 1)");
        assert!(settings.patience >= 1, "patience counts at least the group that asks");
        IntervalController {
            settings,
            ladder: Ladder::new(settings.min_ms, settings.max_ms),
            interval_ms: initial_ms.clamp(settings.min_ms, settings.max_ms),
            recent_groups: VecDeque::with_capacity(MODEL_GROUPS_MAX),
            model: None,
            pending: None,
            previous_finished_late_ms: None,
            last_move: None,
            probe_undone: false,
        }
    }

    pub fn interval_ms(&self) -> u32 {
        self.interval_ms
    }

    /// The latest fitted cost model, if groups of different sizes have been seen.
    pub fn model(&self) -> Option<CostModel> {
        self.model
    }

    /// Takes the batches of a group that ran at `observed_interval_ms` and just ended, in
    /// batch order; returns the interval for the next group.
    pub fn observe(&mut self, observed_interval_ms: u32, batches: &[BatchTiming]) -> u32 {
        let Some(group) = GroupFigures::summarize(observed_interval_ms, batches) else {
            return self.interval_ms;
        };
        self.learn(&group);
        let falling_behind = self.falling_behind(&group);
        if observed_interval_ms != self.interval_ms {
            return self.interval_ms;
        }
        let target = self.target(&group);
        let interval_ms = f64::from(self.interval_ms);
        if falling_behind || group.processing_ms > self.settings.urgent_share() * interval_ms {
            self.move_to(target.interval_ms.max(self.ladder.above(self.interval_ms)), MoveKind::Up);
        } else if self.last_move == Some(MoveKind::PredictedDown)
            && group.processing_ms <= self.settings.tolerated_share() * interval_ms
        {
            self.deliberate(Target { interval_ms: target.interval_ms.min(self.interval_ms), ..target });
        } else {
            self.deliberate(target);
        }
        assert!((self.ladder.min_ms()..=self.ladder.max_ms()).contains(&self.interval_ms));
        self.interval_ms
    }

    fn learn(&mut self, group: &GroupFigures) {
        if self.recent_groups.len() == MODEL_GROUPS_MAX {
            self.recent_groups.pop_front();
        }
        self.recent_groups.push_back((group.events_per_batch, group.processing_ms));
        if let Some(model) = CostModel::fit(&self.recent_groups) {
            self.model = Some(model);
        }
    }

    /// A draining backlog also finishes batches late, but earlier each group: only a growing
    /// one is falling behind.
    fn falling_behind(&mut self, group: &GroupFigures) -> bool {
        let growing = self.previous_finished_late_ms.is_none_or(|previous| group.finished_late_ms > previous);
        self.previous_finished_late_ms = Some(group.finished_late_ms);
        growing && group.finished_late_ms > f64::from(group.interval_ms)
    }

    fn target(&self, group: &GroupFigures) -> Target {
        let headroom = self.settings.headroom;
        let measured_bound_ms = group.processing_ms / headroom;
        let has_room = group.processing_ms <= headroom * f64::from(self.interval_ms);
        let estimate_ms = match self.model {
            Some(model) => {
                let modelled_ms = model.smallest_interval_ms(group.rate_per_ms(), headroom).unwrap_or(f64::INFINITY);
                // The measured bound is proven safe going down and necessary going up, so
                // the model only refines within it.
                if has_room {
                    modelled_ms.min(measured_bound_ms)
                } else {
                    modelled_ms.max(measured_bound_ms)
                }
            }
            None => measured_bound_ms,
        };
        let interval_ms = self.ladder.at_or_above(estimate_ms);
        if interval_ms == self.interval_ms && self.model.is_none() {
            if let Some(probe_ms) = self.probe_ms(group) {
                return Target { interval_ms: probe_ms, probe: true };
            }
        }
        Target { interval_ms, probe: false }
    }

    /// One rung down, if the processing measured now would fit in it even if none of it
    /// shrank with the interval, and no probe had to be undone: a probe that finds no room
    /// costs a few groups once, not once per cycle.
    fn probe_ms(&self, group: &GroupFigures) -> Option<u32> {
        let below_ms = self.ladder.below(self.interval_ms)?;
        let fits = group.processing_ms < f64::from(below_ms);
        (!self.probe_undone && fits).then_some(below_ms)
    }

    fn deliberate(&mut self, target: Target) {
        let direction = match target.interval_ms.cmp(&self.interval_ms) {
            std::cmp::Ordering::Equal => {
                self.pending = None;
                return;
            }
            std::cmp::Ordering::Greater => Direction::Up,
            std::cmp::Ordering::Less => Direction::Down,
        };
        let pending = match self.pending.take() {
            Some(pending) if pending.direction == direction => PendingMove {
                direction,
                agreeing_groups: pending.agreeing_groups + 1,
                interval_ms: pending.interval_ms.max(target.interval_ms),
                probe: pending.probe || target.probe,
            },
            _ => PendingMove { direction, agreeing_groups: 1, interval_ms: target.interval_ms, probe: target.probe },
        };
        if pending.agreeing_groups < self.settings.patience {
            self.pending = Some(pending);
            return;
        }
        let kind = match pending.direction {
            Direction::Up => MoveKind::Up,
            Direction::Down if pending.probe => MoveKind::Probe,
            Direction::Down => MoveKind::PredictedDown,
        };
        self.move_to(pending.interval_ms, kind);
    }

    fn move_to(&mut self, interval_ms: u32, kind: MoveKind) {
        self.probe_undone |= kind == MoveKind::Up && self.last_move == Some(MoveKind::Probe);
        self.interval_ms = interval_ms;
        self.pending = None;
        self.last_move = Some(kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BATCHES_PER_GROUP: u32 = 4;

    /// A system whose batch processing time is exactly `fixed + per_event × events`, with
    /// batches queued one after another: a batch starts at its scheduled end or when the one
    /// before it finished, whichever is later.
    #[derive(Debug, Clone, Copy)]
    struct System {
        fixed_ms: f64,
        per_event_ms: f64,
        rate_per_ms: f64,
        scheduled_end_ms: f64,
        free_at_ms: f64,
    }

    impl System {
        fn new(fixed_ms: f64, per_event_ms: f64, rate_per_ms: f64) -> Self {
            System { fixed_ms, per_event_ms, rate_per_ms, scheduled_end_ms: 0.0, free_at_ms: 0.0 }
        }

        fn run_group(&mut self, interval_ms: u32) -> Vec<BatchTiming> {
            (0..BATCHES_PER_GROUP)
                .map(|_| {
                    self.scheduled_end_ms += f64::from(interval_ms);
                    let events = (self.rate_per_ms * f64::from(interval_ms)).round() as u64;
                    let processing_ms = self.fixed_ms + self.per_event_ms * events as f64;
                    self.free_at_ms = self.free_at_ms.max(self.scheduled_end_ms) + processing_ms;
                    BatchTiming { processing_ms, events, finished_late_ms: self.free_at_ms - self.scheduled_end_ms }
                })
                .collect()
        }

        /// The smallest interval within bounds that keeps processing under headroom, from the
        /// formula rather than from any controller code.
        fn smallest_stable_ms(&self, settings: &IntervalSettings) -> f64 {
            let spare_share = settings.headroom - self.per_event_ms * self.rate_per_ms;
            let ideal_ms = if spare_share > 0.0 { self.fixed_ms / spare_share } else { f64::INFINITY };
            ideal_ms.clamp(f64::from(settings.min_ms), f64::from(settings.max_ms))
        }
    }

    /// Runs `groups` groups with two in flight, as the group scheduler does: the interval
    /// decided when group k ends applies to group k + 2. Returns each decision.
    fn simulate(controller: &mut IntervalController, system: &mut System, groups: usize) -> Vec<u32> {
        let mut in_flight = VecDeque::from([controller.interval_ms(), controller.interval_ms()]);
        (0..groups)
            .map(|_| {
                let interval_ms = in_flight.pop_front().expect("two groups are in flight");
                let decided = controller.observe(interval_ms, &system.run_group(interval_ms));
                in_flight.push_back(decided);
                decided
            })
            .collect()
    }

    fn group(processing_ms: f64, events: u64, finished_late_ms: f64) -> Vec<BatchTiming> {
        vec![BatchTiming { processing_ms, events, finished_late_ms }; BATCHES_PER_GROUP as usize]
    }

    /// Feeds groups of identical batches `(interval, processing, events, late)`, and compares
    /// the interval after each.
    fn check(settings: IntervalSettings, initial_ms: u32, groups: &[(u32, f64, u64, f64)], expected: &[u32]) {
        let mut controller = IntervalController::new(settings, initial_ms);
        let decided: Vec<u32> = groups
            .iter()
            .map(|(interval_ms, processing_ms, events, late_ms)| {
                controller.observe(*interval_ms, &group(*processing_ms, *events, *late_ms))
            })
            .collect();
        assert_eq!(decided, expected, "groups {groups:?}");
    }

    #[test]
    fn the_ladder_is_whole_ms_below_ten_then_steps_of_at_most_a_sixth() {
        let ladder = Ladder::new(1, 100_000);
        assert_eq!(ladder.rungs[..12], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        assert_eq!(ladder.max_ms(), 100_000);
        for pair in ladder.rungs.windows(2).filter(|pair| pair[0] >= 6) {
            let step = f64::from(pair[1]) / f64::from(pair[0]);
            assert!(step > 1.05 && step <= 7.0 / 6.0 + 1e-12, "step {pair:?}");
        }
        assert_eq!(Ladder::new(13, 47).rungs, [13, 14, 16, 18, 20, 22, 25, 28, 32, 36, 40, 45, 47]);
        assert_eq!(Ladder::new(13, 47).at_or_above(1000.0), 47);
        assert_eq!(Ladder::new(13, 47).at_or_above(0.0), 13);
    }

    #[test]
    fn without_a_model_it_steps_down_to_processing_over_headroom_after_patience() {
        // 40 ms of processing at 100 ms: 40 ÷ 0.8 = 50 ms is safe whatever part is fixed.
        let settings = IntervalSettings::new(1, 1000);
        check(settings, 100, &[(100, 40.0, 1000, 40.0); 3], &[100, 100, 50]);
    }

    #[test]
    fn a_fitted_model_goes_straight_to_the_smallest_interval_with_headroom() {
        // fixed 10 ms, 1 µs per event at 300 events/ms: 10 ÷ (0.8 − 0.3) = 20 ms.
        let processing = |interval_ms: u32| 10.0 + 0.001 * 300.0 * f64::from(interval_ms);
        let settings = IntervalSettings::new(1, 1000);
        let mut controller = IntervalController::new(settings, 100);
        let decided: Vec<u32> =
            (0..3).map(|_| controller.observe(100, &group(processing(100), 30_000, processing(100)))).collect();
        assert_eq!(decided, [100, 100, 50], "40 ÷ 0.8: the measured bound");
        let decided: Vec<u32> =
            (0..3).map(|_| controller.observe(50, &group(processing(50), 15_000, processing(50)))).collect();
        assert_eq!(decided, [50, 50, 20], "two sizes give the model");
        let model = controller.model().expect("a model from two sizes");
        assert!((model.fixed_ms - 10.0).abs() < 1e-9 && (model.per_event_ms - 0.001).abs() < 1e-12, "{model:?}");
        for _ in 0..10 {
            assert_eq!(controller.observe(20, &group(processing(20), 6_000, processing(20))), 20);
        }
    }

    #[test]
    fn going_down_waits_for_consecutive_groups_that_agree() {
        let settings = IntervalSettings::new(1, 1000);
        let room = (100, 40.0, 1000, 40.0);
        let no_room = (100, 85.0, 1000, 85.0);
        check(settings, 100, &[room, room, no_room, room, room, room], &[100, 100, 100, 100, 100, 50]);
    }

    #[test]
    fn a_small_excess_after_a_predicted_move_down_is_tolerated() {
        // 40 ms at 100 ms predicts 50 ms keeps the headroom. At 50 ms processing takes 41 ms,
        // 0.82 of it: under the tolerated 0.85, so the interval holds; 43 ms (0.86) is not.
        let settings = IntervalSettings::new(1, 1000);
        let moved_down = [(100, 40.0, 1000, 40.0); 3];
        let tolerated: Vec<_> = moved_down.iter().copied().chain([(50, 41.0, 1000, 41.0); 4]).collect();
        check(settings, 100, &tolerated, &[100, 100, 50, 50, 50, 50, 50]);
        let excessive: Vec<_> = moved_down.iter().copied().chain([(50, 43.0, 1000, 43.0); 3]).collect();
        check(settings, 100, &excessive, &[100, 100, 50, 50, 50, 56]);
        // After a move up, the same excess is answered.
        check(
            settings,
            50,
            &[(50, 46.0, 1000, 46.0), (63, 52.0, 1000, 52.0), (63, 52.0, 1000, 52.0), (63, 52.0, 1000, 52.0)],
            &[63, 63, 63, 71],
        );
    }

    #[test]
    fn a_down_move_takes_the_largest_interval_the_agreeing_groups_asked_for() {
        let settings = IntervalSettings::new(1, 1000);
        check(settings, 100, &[(100, 20.0, 9, 20.0), (100, 40.0, 9, 40.0), (100, 32.0, 9, 32.0)], &[100, 100, 50]);
    }

    #[test]
    fn overload_raises_the_interval_at_once_to_what_the_model_predicts() {
        // fixed 10 ms, 1 µs per event: settled at 20 ms for 300 events/ms.
        let mut system = System::new(10.0, 0.001, 300.0);
        let settings = IntervalSettings::new(1, 1000);
        let mut controller = IntervalController::new(settings, 100);
        simulate(&mut controller, &mut system, 20);
        assert_eq!(controller.interval_ms(), 20);
        // The rate doubles: 10 ÷ (0.8 − 0.6) = 50 ms, taken on the first group that shows it.
        system.rate_per_ms = 600.0;
        assert_eq!(controller.observe(20, &system.run_group(20)), 50);
    }

    #[test]
    fn an_input_no_interval_can_keep_up_with_goes_to_the_upper_bound() {
        // 0.9 ms of work per ms of input: no interval leaves 20 % of it spare.
        let mut system = System::new(5.0, 0.001, 900.0);
        let settings = IntervalSettings::new(5, 2000);
        let mut controller = IntervalController::new(settings, 10);
        let decided = simulate(&mut controller, &mut system, 30);
        assert_eq!(decided.last(), Some(&2000), "{decided:?}");
    }

    #[test]
    fn falling_behind_raises_the_interval_even_when_processing_looks_small() {
        let settings = IntervalSettings::new(1, 1000);
        check(settings, 50, &[(50, 20.0, 100, 20.0), (50, 20.0, 100, 80.0)], &[50, 56]);
    }

    #[test]
    fn a_draining_backlog_is_not_falling_behind() {
        // Late by more than an interval, but less late than the group before: it drains.
        let settings = IntervalSettings::new(1, 1000);
        check(settings, 50, &[(50, 30.0, 100, 400.0), (56, 30.0, 100, 300.0), (56, 30.0, 100, 200.0)], &[56, 56, 56]);
    }

    #[test]
    fn evidence_about_an_older_interval_feeds_the_model_but_does_not_step() {
        let settings = IntervalSettings::new(1, 1000);
        let mut controller = IntervalController::new(settings, 20);
        assert_eq!(controller.observe(20, &group(19.0, 2000, 19.0)), 25, "overloaded: up at once");
        // The group after it was already out at 20 ms: its overload is old news.
        assert_eq!(controller.observe(20, &group(19.0, 2000, 19.0)), 25);
        assert!(controller.model().is_none(), "one size so far");
        assert_eq!(controller.observe(25, &group(20.0, 2500, 20.0)), 25, "20 ms fits 25 × 0.8");
        assert!(controller.model().is_some(), "the old group counted for the model");
    }

    #[test]
    fn the_bounds_hold_when_the_ideal_lies_outside_them() {
        let mut system = System::new(2.0, 0.0, 100.0);
        let settings = IntervalSettings::new(10, 30);
        let mut controller = IntervalController::new(settings, 30);
        assert_eq!(simulate(&mut controller, &mut system, 20).last(), Some(&10));
        let mut system = System::new(200.0, 0.0, 100.0);
        let mut controller = IntervalController::new(settings, 10);
        assert_eq!(simulate(&mut controller, &mut system, 20).last(), Some(&30));
    }

    #[test]
    fn unusable_timings_change_nothing() {
        let settings = IntervalSettings::new(1, 1000);
        let mut controller = IntervalController::new(settings, 100);
        assert_eq!(controller.observe(100, &[]), 100);
        let broken = BatchTiming { processing_ms: f64::NAN, events: 10, finished_late_ms: 1.0 };
        assert_eq!(controller.observe(100, &[broken; 3]), 100);
        let skewed = BatchTiming { processing_ms: -5.0, events: 10, finished_late_ms: -1.0 };
        assert_eq!(controller.observe(100, &[skewed]), 100);
        assert_eq!(controller.observe(100, &[skewed]), 100);
        assert_eq!(controller.observe(100, &[skewed]), 1, "zero processing needs the least interval");
    }

    #[test]
    fn a_probe_finds_room_the_measured_bound_cannot_prove() {
        // All of the processing is per event, 0.75 of the interval: the measured bound
        // rounds to the interval in use, yet any interval keeps the headroom.
        let mut system = System::new(0.0, 0.001, 750.0);
        let settings = IntervalSettings::new(5, 1000);
        let mut controller = IntervalController::new(settings, 1000);
        let decided = simulate(&mut controller, &mut system, 12);
        assert_eq!(decided[..3], [1000, 1000, 900], "the probe waits for patience");
        assert_eq!(decided.last(), Some(&5), "{decided:?}");
    }

    #[test]
    fn an_input_without_events_probes_until_a_probe_is_undone_and_settles() {
        // 17 ms of fixed processing: 17 ÷ 0.8 = 21.25 → 22 ms; the probe to 20 ms finds no
        // room (17 > 16) and the controller returns, never to probe again.
        let mut system = System::new(17.0, 0.001, 0.0);
        let settings = IntervalSettings::new(1, 1000);
        let mut controller = IntervalController::new(settings, 22);
        let decided = simulate(&mut controller, &mut system, 40);
        assert!(decided.contains(&20), "it probed: {decided:?}");
        assert!(decided[20..].iter().all(|ms| *ms == 22), "{decided:?}");
    }

    #[test]
    fn a_move_too_small_for_the_fit_is_followed_by_a_probe() {
        // 25.85 ms fixed and a load of 0.785: 1773 ms keeps the headroom. Overloaded at
        // 3018 ms, it moves to the bound 3176 ms, 5 % away: too close for a fit. The measured
        // bound rounds back to 3176 ms, and the probe to 2800 ms gives the model.
        let mut system = System::new(25.85, 0.007854, 100.0);
        let mut controller = IntervalController::new(IntervalSettings::new(1, 3176), 3018);
        let decided = simulate(&mut controller, &mut system, 30);
        assert!(decided.contains(&2800), "it probed: {decided:?}");
        assert_eq!(decided.last(), Some(&1800), "{decided:?}");
    }

    #[test]
    fn a_probe_is_judged_by_the_headroom_even_after_a_predicted_move_down() {
        // 280 ms fixed and a load of 0.41: 718 ms keeps the headroom. The measured bound
        // takes 801 → 800 (too small a spread for a model), then the probe to 710 ms lands at
        // 0.804 of it: within the tolerance a prediction would get, but a probe predicted
        // nothing, so the controller goes back to 800 ms and stays.
        let mut system = System::new(280.0, 0.0041, 100.0);
        let mut controller = IntervalController::new(IntervalSettings::new(1, 801), 801);
        let decided = simulate(&mut controller, &mut system, 30);
        assert!(decided.contains(&710), "it probed: {decided:?}");
        assert!(decided[12..].iter().all(|ms| *ms == 800), "{decided:?}");
    }

    fn timing() -> impl Strategy<Value = BatchTiming> {
        (prop_oneof![-10.0..5000.0, Just(f64::NAN), Just(f64::INFINITY)], 0u64..10_000_000, -10.0..20_000.0).prop_map(
            |(processing_ms, events, finished_late_ms)| BatchTiming { processing_ms, events, finished_late_ms },
        )
    }

    fn bounds() -> impl Strategy<Value = (u32, u32)> {
        (1u32..200, 0u32..5000).prop_map(|(min_ms, span_ms)| (min_ms, min_ms + span_ms))
    }

    proptest! {
        /// Whatever the timings and whichever interval they claim to come from, the interval
        /// stays within the user's bounds.
        #[test]
        fn the_interval_never_leaves_its_bounds(
            (min_ms, max_ms) in bounds(),
            initial_ms in 0u32..10_000,
            groups in prop::collection::vec((0u32..6000, prop::collection::vec(timing(), 0..5)), 1..60),
        ) {
            let mut controller = IntervalController::new(IntervalSettings::new(min_ms, max_ms), initial_ms);
            for (claimed_ms, batches) in &groups {
                let observed_ms = if claimed_ms % 2 == 0 { controller.interval_ms() } else { *claimed_ms };
                let decided = controller.observe(observed_ms, batches);
                prop_assert!((min_ms..=max_ms).contains(&decided), "{decided} outside {min_ms}..={max_ms}");
            }
        }

        /// On a steady input the interval stops moving within 30 groups and then never moves
        /// again. Rates are of sleet's order (0.1–3 M events/s) or zero, where whole event
        /// counts per batch are close to the rate times the interval.
        #[test]
        fn a_steady_input_converges_and_never_oscillates(
            fixed_ms in 0.0..300.0f64,
            per_event_us in 0.0..5.0f64,
            rate_per_ms in prop_oneof![Just(0.0), 100.0..3000.0f64],
            (min_ms, max_ms) in bounds(),
            initial_ms in 1u32..5000,
        ) {
            let mut system = System::new(fixed_ms, per_event_us / 1000.0, rate_per_ms);
            let mut controller = IntervalController::new(IntervalSettings::new(min_ms, max_ms), initial_ms);
            let decided = simulate(&mut controller, &mut system, 100);
            let settled = decided[29];
            prop_assert!(decided[30..].iter().all(|ms| *ms == settled), "moved after settling: {:?}", decided);
        }

        /// On a system whose processing is `fixed + cost × rate × interval`, the interval it
        /// settles on keeps the headroom and is within 20 % of the smallest interval that does,
        /// computed from the formula. The per-event load is drawn directly, a third of it
        /// beyond what any interval can take.
        #[test]
        fn it_settles_within_a_fifth_of_the_smallest_stable_interval(
            fixed_ms in 5.0..300.0f64,
            load in 0.0..1.2f64,
            rate_per_ms in 100.0..3000.0f64,
            (min_ms, max_ms) in bounds(),
            initial_ms in 1u32..5000,
        ) {
            let mut system = System::new(fixed_ms, load / rate_per_ms, rate_per_ms);
            let settings = IntervalSettings::new(min_ms, max_ms);
            let mut controller = IntervalController::new(settings, initial_ms);
            let settled = f64::from(*simulate(&mut controller, &mut system, 40).last().expect("40 groups"));
            let smallest_ms = system.smallest_stable_ms(&settings);
            prop_assert!(
                settled >= smallest_ms * (1.0 - 1e-3) && settled <= smallest_ms * 1.2,
                "settled at {} ms, smallest stable {} ms", settled, smallest_ms
            );
        }
    }
}
