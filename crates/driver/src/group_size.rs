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

use sleet_plan::{GroupSize, OverheadBounds};

/// The largest automatic group size. A group is also the unit of adaptation, so one that
/// spans many seconds reacts late to failures and membership changes.
pub const GROUP_SIZE_AUTO_MAX: u32 = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct GroupSizeController {
    bounds: OverheadBounds,
    /// Weight of the newest measurement in the exponential average.
    smoothing: f64,
    size_max: u32,
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
            size: initial_size.min(size_max),
            overhead_average: None,
        }
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
            self.size = self.size.saturating_mul(2).min(self.size_max);
        } else if average < self.bounds.low {
            self.size = self.size.saturating_sub(1).max(1);
        }
        self.size
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
    use super::*;

    /// Feeds overheads, each measured on a group of the size then in use, and returns the
    /// size after each.
    fn check(initial: u32, overheads: &[f64], expected: &[u32]) {
        let mut controller = GroupSizeController::new(OverheadBounds::default(), initial, 128);
        let sizes: Vec<u32> =
            overheads.iter().map(|overhead| controller.observe(*overhead, controller.size())).collect();
        assert_eq!(sizes, expected, "overheads {overheads:?}");
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
    fn a_fixed_policy_never_moves() {
        let mut policy = GroupSizePolicy::new(GroupSize::Fixed(25), OverheadBounds::default());
        assert_eq!(policy.observe(0.9, 25), (25, None));
        let mut auto = GroupSizePolicy::new(GroupSize::Auto, OverheadBounds::default());
        assert_eq!(auto.size(), 1);
        assert_eq!(auto.observe(0.9, 1), (2, Some(0.9)));
    }
}
