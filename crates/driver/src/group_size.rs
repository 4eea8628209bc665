//! The group-size controller (`docs/design/group-scheduling.md`): how many batches to schedule
//! with one coordination round. Pure: it takes the measured coordination overhead of the group
//! that just ended and returns the size of the next one.
//!
//! Overhead (see `group_tracker`) is smoothed with an exponential average so one noisy group
//! does not swing the size. Above the upper bound the size doubles: coordination dominates
//! and must be amortized fast. Below the lower bound it shrinks by one: a smaller group
//! reacts sooner to failures and membership changes, and backing off slowly keeps the
//! controller from oscillating.
//!
//! The driver sends a group before the previous one ends, so when a group completes, the
//! group after it is already out with the size decided one step earlier. The controller
//! therefore changes the size only on evidence about the size in use: an overhead measured
//! on a group of another size updates the average but does not trigger a second step in the
//! same direction before the first one has been observed.
//!
//! **Latency bound** (`with_latency_bound`, off unless asked for). A group is the unit the
//! driver acts on: checkpoints, size changes and membership changes wait for its boundary,
//! and workers hold its reports until it ends. So a group never spans more than a share of the job's
//! latency target: `size × interval ≤ share × target`, and at least one batch. With a target
//! set, growth is also proportional rather than doubling: with the coordination of a group
//! roughly fixed, the overhead falls about as `1 / size`, so `size × average / upper bound`
//! is the size that would bring it back to the bound if all of it amortized. Part of it is
//! per batch and does not, so this undershoots and the next group measured steps again,
//! instead of spending half the latency budget on an average a few per cent over the bound
//! (1 → 32 batches at 10 ms, as measured under overload). It still grows by at least one
//! batch and at most doubles.

use sleet_plan::{GroupSize, JobSettings, OverheadBounds};

/// The largest automatic group size. A group is also the unit of adaptation, so one that
/// spans many seconds reacts late to failures and membership changes.
pub const GROUP_SIZE_AUTO_MAX: u32 = 1024;

/// How much of a latency target one group may span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyBound {
    pub target_ms: u32,
    /// The share of the target, in (0, 1].
    pub share: f64,
    /// The batch interval in use.
    pub interval_ms: u32,
}

impl LatencyBound {
    /// The most batches a group may hold; at least one, since a group is never smaller than a
    /// batch, even when one batch alone spans more than the share.
    pub fn size_max(&self) -> u32 {
        let span_ms = self.share * f64::from(self.target_ms);
        let batches = (span_ms / f64::from(self.interval_ms)).floor();
        (batches.min(f64::from(u32::MAX)) as u32).max(1)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupSizeController {
    bounds: OverheadBounds,
    /// Weight of the newest measurement in the exponential average.
    smoothing: f64,
    size_max: u32,
    latency_bound: Option<LatencyBound>,
    size: u32,
    overhead_average: Option<f64>,
}

impl GroupSizeController {
    pub fn new(bounds: OverheadBounds, initial_size: u32, size_max: u32) -> Self {
        assert!(bounds.low < bounds.high, "overhead bounds must satisfy low < high");
        assert!(size_max >= 1 && initial_size >= 1, "group sizes start at 1");
        GroupSizeController {
            bounds,
            smoothing: 0.5,
            size_max,
            latency_bound: None,
            size: initial_size.min(size_max),
            overhead_average: None,
        }
    }

    /// Bounds every group to `share` of `target_ms` at batches of `interval_ms`, and makes
    /// growth proportional to how far the overhead is over its upper bound.
    pub fn with_latency_bound(mut self, target_ms: u32, share: f64, interval_ms: u32) -> Self {
        assert!(target_ms >= 1 && interval_ms >= 1, "a latency target and a batch interval are at least 1 ms");
        assert!(share > 0.0 && share <= 1.0, "a share of the latency target is in (0, 1], not {share}");
        self.latency_bound = Some(LatencyBound { target_ms, share, interval_ms });
        self.size = self.size.min(self.size_limit());
        self
    }

    /// The batch interval changed (at a group boundary): a latency bound allows another
    /// number of batches. Without a bound, nothing changes.
    pub fn set_interval_ms(&mut self, interval_ms: u32) {
        assert!(interval_ms >= 1, "a batch interval is at least 1 ms");
        if let Some(bound) = &mut self.latency_bound {
            bound.interval_ms = interval_ms;
            self.size = self.size.min(self.size_limit());
        }
    }

    pub fn latency_bound(&self) -> Option<LatencyBound> {
        self.latency_bound
    }

    /// The largest size allowed now: the maximum, and the latency bound if set.
    pub fn size_limit(&self) -> u32 {
        self.latency_bound.map_or(self.size_max, |bound| bound.size_max().min(self.size_max))
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    pub fn overhead_average(&self) -> Option<f64> {
        self.overhead_average
    }

    /// Takes the overhead measured over a group of `observed_size` batches that just ended;
    /// returns the size of the next group.
    pub fn observe(&mut self, overhead: f64, observed_size: u32) -> u32 {
        // A measurement that is no number (a group of zero length) says nothing, and would
        // stay in the average for good.
        if overhead.is_nan() {
            return self.size;
        }
        let overhead = overhead.clamp(0.0, 1.0);
        let average = match self.overhead_average {
            Some(previous) => self.smoothing * overhead + (1.0 - self.smoothing) * previous,
            None => overhead,
        };
        self.overhead_average = Some(average);
        if observed_size != self.size {
            return self.size;
        }
        if average > self.bounds.high {
            self.size = self.grown(average).min(self.size_limit());
        } else if average < self.bounds.low {
            self.size = self.size.saturating_sub(1).max(1);
        }
        self.size
    }

    fn grown(&self, average: f64) -> u32 {
        if self.latency_bound.is_none() {
            return self.size.saturating_mul(2);
        }
        // The average is over the bound, so the factor is over 1 and the ceiling adds at least
        // one batch.
        let factor = (average / self.bounds.high).min(2.0);
        (f64::from(self.size) * factor).ceil() as u32
    }
}

/// The job's setting: a fixed size, or the controller.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupSizePolicy {
    Fixed(u32),
    Auto(GroupSizeController),
}

impl GroupSizePolicy {
    pub fn new(setting: GroupSize, bounds: OverheadBounds) -> Self {
        match setting {
            GroupSize::Fixed(size) => GroupSizePolicy::Fixed(size.max(1)),
            GroupSize::Auto => GroupSizePolicy::Auto(GroupSizeController::new(bounds, 1, GROUP_SIZE_AUTO_MAX)),
        }
    }

    /// The policy a job's settings ask for: its group size, and its latency target if it has one.
    pub fn for_job(settings: &JobSettings) -> Self {
        let policy = GroupSizePolicy::new(settings.group_size, settings.overhead_bounds);
        match settings.latency_target {
            Some(target) => policy.with_latency_bound(
                u32::try_from(target.target_ms).unwrap_or(u32::MAX),
                target.group_share,
                u32::try_from(settings.batch_interval_ms).unwrap_or(u32::MAX),
            ),
            None => policy,
        }
    }

    /// Bounds the automatic size by latency (`GroupSizeController::with_latency_bound`). A
    /// fixed size is the user's explicit choice and stays as it is.
    pub fn with_latency_bound(self, target_ms: u32, share: f64, interval_ms: u32) -> Self {
        match self {
            GroupSizePolicy::Auto(controller) => {
                GroupSizePolicy::Auto(controller.with_latency_bound(target_ms, share, interval_ms))
            }
            fixed @ GroupSizePolicy::Fixed(_) => fixed,
        }
    }

    pub fn set_interval_ms(&mut self, interval_ms: u32) {
        if let GroupSizePolicy::Auto(controller) = self {
            controller.set_interval_ms(interval_ms);
        }
    }

    pub fn size(&self) -> u32 {
        match self {
            GroupSizePolicy::Fixed(size) => *size,
            GroupSizePolicy::Auto(controller) => controller.size(),
        }
    }

    /// Returns the next size and, for the automatic policy, the average it acted on.
    pub fn observe(&mut self, overhead: f64, observed_size: u32) -> (u32, Option<f64>) {
        match self {
            GroupSizePolicy::Fixed(size) => (*size, None),
            GroupSizePolicy::Auto(controller) => {
                let size = controller.observe(overhead, observed_size);
                (size, controller.overhead_average())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_jobs_latency_target_bounds_its_automatic_groups_and_nothing_else() {
        let settings = JobSettings {
            batch_interval_ms: 10,
            latency_target: Some(sleet_plan::LatencyTarget { target_ms: 100, group_share: 0.5 }),
            ..JobSettings::default()
        };
        let mut policy = GroupSizePolicy::for_job(&settings);
        for _ in 0..20 {
            let size = policy.size();
            policy.observe(0.9, size);
        }
        assert_eq!(policy.size(), 5, "half of 100 ms is five batches of 10 ms, however high the overhead");
        let mut unbounded = GroupSizePolicy::for_job(&JobSettings { latency_target: None, ..settings.clone() });
        for _ in 0..20 {
            let size = unbounded.size();
            unbounded.observe(0.9, size);
        }
        assert_eq!(unbounded.size(), GROUP_SIZE_AUTO_MAX, "without a target only the maximum stops it");
        let fixed = JobSettings { group_size: GroupSize::Fixed(40), ..settings };
        assert_eq!(GroupSizePolicy::for_job(&fixed).size(), 40);
    }

    #[test]
    fn an_overhead_that_is_no_number_leaves_size_and_average_as_they_were() {
        let bounds = OverheadBounds { low: 0.05, high: 0.1 };
        let mut controller = GroupSizeController::new(bounds, 4, 64);
        controller.observe(0.5, 4);
        let (size, average) = (controller.size(), controller.overhead_average());
        assert_eq!(controller.observe(f64::NAN, size), size);
        assert_eq!(controller.overhead_average(), average);
        assert_eq!(controller.observe(0.5, size), 2 * size, "later measurements still count");
    }

    /// Feeds overheads, each measured on a group of the size then in use, and compares the
    /// size after each.
    fn check_controller(mut controller: GroupSizeController, overheads: &[f64], expected: &[u32]) {
        let sizes: Vec<u32> =
            overheads.iter().map(|overhead| controller.observe(*overhead, controller.size())).collect();
        assert_eq!(sizes, expected, "overheads {overheads:?}");
    }

    fn check(initial: u32, overheads: &[f64], expected: &[u32]) {
        check_controller(GroupSizeController::new(OverheadBounds::default(), initial, 128), overheads, expected);
    }

    /// A controller bounded to `share × target_ms` at `interval_ms`, within the default
    /// overhead bounds and the automatic maximum.
    fn bounded(initial: u32, target_ms: u32, share: f64, interval_ms: u32) -> GroupSizeController {
        GroupSizeController::new(OverheadBounds::default(), initial, GROUP_SIZE_AUTO_MAX).with_latency_bound(
            target_ms,
            share,
            interval_ms,
        )
    }

    #[test]
    fn high_overhead_doubles_low_overhead_subtracts_one() {
        check(1, &[0.5, 0.5, 0.5], &[2, 4, 8]);
        check(10, &[0.0, 0.0, 0.0], &[9, 8, 7]);
        check(4, &[0.07, 0.07], &[4, 4]);
    }

    #[test]
    fn the_average_smooths_one_outlier() {
        // 0.06 then a spike of 0.2: the average 0.13 is above the bound; then 0.02 brings it
        // to 0.075, inside the bounds, so the size holds.
        check(4, &[0.06, 0.2, 0.02], &[4, 8, 8]);
    }

    #[test]
    fn size_stays_between_one_and_the_maximum() {
        check(100, &[0.9; 3], &[128, 128, 128]);
        check(1, &[0.0; 3], &[1, 1, 1]);
    }

    #[test]
    fn evidence_about_an_older_size_does_not_step_again() {
        let mut controller = GroupSizeController::new(OverheadBounds::default(), 1, 128);
        assert_eq!(controller.observe(0.5, 1), 2);
        // The group after it was already out at size 1: its high overhead is old news.
        assert_eq!(controller.observe(0.5, 1), 2);
        assert_eq!(controller.observe(0.5, 2), 4, "a group of the current size confirms it");
    }

    #[test]
    fn a_group_never_spans_more_than_its_share_of_the_latency_target() {
        // Half of 100 ms at 10 ms batches: 5 batches.
        check_controller(bounded(1, 100, 0.5, 10), &[0.5; 5], &[2, 4, 5, 5, 5]);
        assert_eq!(bounded(64, 100, 0.5, 10).size(), 5, "a larger initial size is cut to the bound");
        assert_eq!(bounded(8, 10, 0.5, 20).size(), 1, "a batch longer than the share still makes a group");
    }

    #[test]
    fn a_few_per_cent_over_the_bound_grows_in_proportion() {
        // 11 % against 10 %: 10 × 1.1 = 11. Then the average 12 %: 11 × 1.2 = 13.2 → 14.
        check_controller(bounded(10, 100_000, 1.0, 10), &[0.11, 0.13], &[11, 14]);
        check_controller(bounded(4, 100_000, 1.0, 10), &[0.5], &[8]);
        check_controller(bounded(1, 100_000, 1.0, 10), &[0.101], &[2]);
        check(10, &[0.11], &[20]);
    }

    #[test]
    fn a_new_interval_moves_the_latency_bound() {
        let mut controller = bounded(5, 100, 0.5, 10);
        controller.set_interval_ms(25);
        assert_eq!((controller.size(), controller.size_limit()), (2, 2));
        controller.set_interval_ms(5);
        assert_eq!((controller.size(), controller.size_limit()), (2, 10), "a looser bound does not grow the size");
        let mut unbounded = GroupSizeController::new(OverheadBounds::default(), 100, 128);
        unbounded.set_interval_ms(1000);
        assert_eq!((unbounded.size(), unbounded.size_limit()), (100, 128));
    }

    #[test]
    fn a_policy_bounds_only_its_automatic_size() {
        let fixed =
            GroupSizePolicy::new(GroupSize::Fixed(25), OverheadBounds::default()).with_latency_bound(100, 0.5, 10);
        assert_eq!(fixed.size(), 25);
        let mut auto =
            GroupSizePolicy::new(GroupSize::Auto, OverheadBounds::default()).with_latency_bound(100, 0.5, 10);
        let sizes: Vec<u32> = (0..4).map(|_| auto.observe(0.9, auto.size()).0).collect();
        assert_eq!(sizes, [2, 4, 5, 5]);
        auto.set_interval_ms(50);
        assert_eq!(auto.size(), 1);
    }

    #[test]
    fn a_fixed_policy_never_moves() {
        let mut policy = GroupSizePolicy::new(GroupSize::Fixed(25), OverheadBounds::default());
        assert_eq!(policy.observe(0.9, 25), (25, None));
        let mut auto = GroupSizePolicy::new(GroupSize::Auto, OverheadBounds::default());
        assert_eq!(auto.size(), 1);
        assert_eq!(auto.observe(0.9, 1), (2, Some(0.9)));
    }

    fn latency_bound() -> impl Strategy<Value = (u32, f64, u32)> {
        (1u32..2000, 0.01..=1.0f64, 1u32..500)
    }

    /// Runs `groups` groups of a system whose coordination costs `coordination_ms` per group
    /// and whose batches execute in `execution_ms` each, so a group of `size` batches has the
    /// overhead `C ÷ (C + size × E)`; two groups are in flight, so the size decided when group
    /// k ends applies to group k + 2. Returns each decision.
    fn simulate(
        controller: &mut GroupSizeController,
        coordination_ms: f64,
        execution_ms: f64,
        groups: usize,
    ) -> Vec<u32> {
        let mut in_flight = VecDeque::from([controller.size(), controller.size()]);
        (0..groups)
            .map(|_| {
                let size = in_flight.pop_front().expect("two groups are in flight");
                let overhead = coordination_ms / (coordination_ms + f64::from(size) * execution_ms);
                let decided = controller.observe(overhead, size);
                in_flight.push_back(decided);
                decided
            })
            .collect()
    }

    proptest! {
        /// Whatever the overheads, the sizes they claim to be measured on and the interval
        /// changes, the size stays between 1 and its limit, and a group spans no more than its
        /// share of the latency target unless a single batch already does.
        #[test]
        fn the_size_never_leaves_its_bounds_and_the_latency_bound_always_holds(
            (target_ms, share, interval_ms) in latency_bound(),
            with_bound in any::<bool>(),
            initial in 1u32..2000,
            steps in prop::collection::vec((-0.5..1.5f64, 0u32..40, prop::option::weighted(0.1, 1u32..500)), 1..80),
        ) {
            let controller = GroupSizeController::new(OverheadBounds::default(), initial, GROUP_SIZE_AUTO_MAX);
            let mut controller = if with_bound { controller.with_latency_bound(target_ms, share, interval_ms) } else { controller };
            for (overhead, claimed_size, new_interval_ms) in steps {
                if let Some(new_interval_ms) = new_interval_ms {
                    controller.set_interval_ms(new_interval_ms);
                }
                let observed_size = if claimed_size % 2 == 0 { controller.size() } else { claimed_size };
                let size = controller.observe(overhead, observed_size);
                prop_assert!((1..=GROUP_SIZE_AUTO_MAX).contains(&size), "size {}", size);
                if let Some(bound) = controller.latency_bound() {
                    let span_ms = f64::from(size) * f64::from(bound.interval_ms);
                    prop_assert!(
                        size == 1 || span_ms <= bound.share * f64::from(bound.target_ms),
                        "{} batches of {} ms exceed {} of {} ms", size, bound.interval_ms, bound.share, bound.target_ms
                    );
                }
            }
        }

        /// On a steady system the size stops moving and never moves again, with or without a
        /// latency bound. The decrease is one batch per two groups (every other group is of
        /// the older size), so from at most 150 batches a bounded controller settles within
        /// 400 groups. Doubling can overshoot to the maximum (the average still holds the
        /// overhead of the older size when the new one is measured) and come back one batch
        /// at a time, so without a bound it gets 2 200.
        #[test]
        fn a_steady_system_converges_and_never_oscillates(
            coordination_ms in 0.1..50.0f64,
            execution_ms in 0.5..100.0f64,
            (target_ms, share, interval_ms) in latency_bound(),
            with_bound in any::<bool>(),
            initial in 1u32..150,
        ) {
            let controller = GroupSizeController::new(OverheadBounds::default(), initial, GROUP_SIZE_AUTO_MAX);
            let mut controller = if with_bound { controller.with_latency_bound(target_ms, share, interval_ms) } else { controller };
            let settling_groups = if with_bound { 400 } else { 2200 };
            let decided = simulate(&mut controller, coordination_ms, execution_ms, settling_groups + 400);
            let settled = decided[settling_groups - 1];
            prop_assert!(
                decided[settling_groups..].iter().all(|size| *size == settled),
                "moved after settling at {}: {:?}", settled, decided
            );
        }

        /// With a latency target, an average a few per cent over the upper bound (up to half
        /// of it again) grows a group of two or more by less than doubling, and by no more
        /// than the ratio of the average to the bound.
        #[test]
        fn a_few_per_cent_over_the_bound_grows_by_less_than_doubling(
            initial in 2u32..500,
            excess in 0.0001..0.05f64,
        ) {
            let overhead = OverheadBounds::default().high + excess;
            let mut controller = bounded(initial, 1_000_000, 1.0, 1);
            let size = controller.observe(overhead, initial);
            let proportional = (f64::from(initial) * overhead / OverheadBounds::default().high).ceil() as u32;
            prop_assert!(size > initial && size < 2 * initial, "{} → {} at {}", initial, size, overhead);
            prop_assert!(size <= proportional.max(initial + 1), "{} → {} at {}", initial, size, overhead);
        }
    }
}
