//! The group-size controller (Drizzle §3.4): how many batches to schedule with one
//! coordination round. Pure: it takes the measured coordination overhead of the group that
//! just ended and returns the size of the next one.
//!
//! Overhead (time spent scheduling and waiting ÷ batch time) is smoothed with an exponential
//! average so one noisy group does not swing the size. Above the upper bound the size
//! doubles: coordination dominates and must be amortized fast. Below the lower bound it
//! shrinks by one: a smaller group reacts sooner to failures and membership changes, and
//! backing off slowly keeps the controller from oscillating.

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverheadBounds {
    pub low: f64,
    pub high: f64,
}

impl Default for OverheadBounds {
    fn default() -> Self {
        OverheadBounds { low: 0.05, high: 0.10 }
    }
}

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

    /// Takes the overhead measured over the group that just ended; returns the next size.
    pub fn observe(&mut self, overhead: f64) -> u32 {
        let overhead = overhead.clamp(0.0, 1.0);
        let average = match self.overhead_average {
            Some(previous) => self.smoothing * overhead + (1.0 - self.smoothing) * previous,
            None => overhead,
        };
        self.overhead_average = Some(average);
        if average > self.bounds.high {
            self.size = self.size.saturating_mul(2).min(self.size_max);
        } else if average < self.bounds.low {
            self.size = self.size.saturating_sub(1).max(1);
        }
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds overheads in order and returns the size after each.
    fn check(initial: u32, overheads: &[f64], expected: &[u32]) {
        let mut controller = GroupSizeController::new(OverheadBounds::default(), initial, 128);
        let sizes: Vec<u32> = overheads.iter().map(|overhead| controller.observe(*overhead)).collect();
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
}
