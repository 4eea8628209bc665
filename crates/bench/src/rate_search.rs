//! The search for the highest rate a cluster sustains: which rate to probe next, given what the
//! probes so far found. Pure; `bench_ysb` runs the probes.
//!
//! Without a known stable rate, an overloaded probe's *processed* rate is the best estimate of
//! capacity, so the next probe goes just under it instead of halving blindly; without a known
//! unstable rate, a stable probe doubles. Once both ends are known, bisection narrows them
//! until they are within the tolerance of each other. The answer is the highest stable rate,
//! which the caller then confirms with a longer run; a failed confirmation counts as one more
//! unstable probe and the search goes on.

/// Rates are probed in steps of this many significant digits, so that results read cleanly
/// and two searches land on comparable rates.
const SIGNIFICANT_DIGITS: u32 = 3;
/// Doubling stops here: far past what a few cores can process.
const RATE_CEILING: u64 = 1_000_000_000;
/// Under an overloaded probe's processed rate by this much, the next probe likely keeps up.
const UNDER_PROCESSED: f64 = 0.9;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeResult {
    pub rate: u64,
    /// Stable and correct.
    pub kept_up: bool,
    /// Events per second actually processed (sustained), when the probe measured any.
    pub processed_per_s: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct RateSearch {
    /// Highest rate found to keep up.
    highest_kept: Option<u64>,
    /// Lowest rate found not to keep up.
    lowest_failed: Option<u64>,
    tolerance: f64,
    last_processed: Option<f64>,
}

impl RateSearch {
    /// `tolerance`: the search ends when the bracket's width is at most this share of its top.
    pub fn new(tolerance: f64) -> Self {
        RateSearch { highest_kept: None, lowest_failed: None, tolerance, last_processed: None }
    }

    pub fn record(&mut self, probe: ProbeResult) {
        if probe.kept_up {
            self.highest_kept = Some(self.highest_kept.map_or(probe.rate, |rate| rate.max(probe.rate)));
        } else {
            self.lowest_failed = Some(self.lowest_failed.map_or(probe.rate, |rate| rate.min(probe.rate)));
            self.last_processed = probe.processed_per_s;
        }
        // A noisy probe can fail below a rate that kept up; the later evidence wins.
        if let (Some(kept), Some(failed)) = (self.highest_kept, self.lowest_failed) {
            if failed <= kept {
                if probe.kept_up {
                    self.lowest_failed = None;
                } else {
                    self.highest_kept = None;
                }
            }
        }
    }

    pub fn highest_kept(&self) -> Option<u64> {
        self.highest_kept
    }

    /// The next rate to probe, or `None` when the bracket is narrow enough.
    pub fn next(&self) -> Option<u64> {
        match (self.highest_kept, self.lowest_failed) {
            (Some(kept), None) => (kept < RATE_CEILING).then(|| round_rate(kept.saturating_mul(2))),
            (None, Some(failed)) => {
                let hint = self
                    .last_processed
                    .map(|processed| processed * UNDER_PROCESSED)
                    .filter(|estimate| *estimate >= 1.0 && *estimate < failed as f64);
                let next = hint.map_or(failed / 2, |estimate| estimate as u64);
                (next >= 1).then(|| round_rate(next))
            }
            (Some(kept), Some(failed)) => {
                if (failed - kept) as f64 <= self.tolerance * failed as f64 {
                    return None;
                }
                let middle = round_rate(kept + (failed - kept) / 2);
                (middle > kept && middle < failed).then_some(middle)
            }
            (None, None) => None,
        }
    }
}

/// `rate` rounded to [`SIGNIFICANT_DIGITS`] significant digits.
pub fn round_rate(rate: u64) -> u64 {
    let digits = rate.checked_ilog10().unwrap_or(0) + 1;
    if digits <= SIGNIFICANT_DIGITS {
        return rate.max(1);
    }
    let step = 10u64.pow(digits - SIGNIFICANT_DIGITS);
    ((rate + step / 2) / step * step).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a cluster that keeps up below `capacity` and processes
    /// `capacity` when overloaded; returns the answer and the number of probes.
    fn search(capacity: u64, start: u64, tolerance: f64) -> (Option<u64>, usize) {
        let mut search = RateSearch::new(tolerance);
        let mut rate = start;
        for probes in 1..=50 {
            let kept_up = rate <= capacity;
            let processed = if kept_up { rate } else { capacity };
            search.record(ProbeResult { rate, kept_up, processed_per_s: Some(processed as f64) });
            match search.next() {
                Some(next) => rate = next,
                None => return (search.highest_kept(), probes),
            }
        }
        panic!("the search did not converge in 50 probes");
    }

    #[test]
    fn the_answer_is_within_the_tolerance_under_the_capacity() {
        for (capacity, start) in [(5_300_000, 500_000), (5_300_000, 12_000_000), (230_000, 1_000_000), (7_777, 1_000)] {
            let (answer, probes) = search(capacity, start, 0.05);
            let answer = answer.expect("some rate keeps up");
            assert!(answer <= capacity, "{answer} over the capacity {capacity}");
            assert!(answer as f64 >= capacity as f64 * 0.94, "{answer} too far under {capacity}");
            assert!(probes <= 12, "{probes} probes for capacity {capacity} from {start}");
        }
    }

    #[test]
    fn a_later_contradicting_probe_reopens_the_bracket() {
        let mut search = RateSearch::new(0.05);
        search.record(ProbeResult { rate: 4_000_000, kept_up: true, processed_per_s: Some(4e6) });
        search.record(ProbeResult { rate: 5_000_000, kept_up: false, processed_per_s: Some(4.6e6) });
        // The confirmation of 4 M failed: 4 M is now the lowest failure, nothing is known to keep up.
        search.record(ProbeResult { rate: 4_000_000, kept_up: false, processed_per_s: Some(3.8e6) });
        assert_eq!(search.highest_kept(), None);
        assert_eq!(search.next(), Some(3_420_000), "just under the processed rate");
    }

    #[test]
    fn rates_round_to_three_significant_digits() {
        assert_eq!(round_rate(5_432_100), 5_430_000);
        assert_eq!(round_rate(999), 999);
        assert_eq!(round_rate(0), 1);
        assert_eq!(round_rate(12_345), 12_300);
    }
}
