//! When each batch's sink output became visible, per stateful partition: what a window's
//! end-to-end latency is read from. Pure.
//!
//! A window closes a batch or more after the batch that last updated it (it closes when the
//! watermark passes its end), so the time its final result became visible is that earlier
//! batch's. A partition writes its batches in order, so the times arrive in batch order and
//! a bounded queue of the most recent ones answers every lookup of a window that can still
//! be open.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct VisibleTimes {
    /// (batch, visible at ms), batches increasing.
    times: VecDeque<(u64, i64)>,
    /// How many batches back a lookup may reach.
    horizon_batches: u64,
}

impl VisibleTimes {
    pub fn new(horizon_batches: u64) -> Self {
        VisibleTimes { times: VecDeque::new(), horizon_batches: horizon_batches.max(1) }
    }

    /// `batch`'s output became visible at `at_ms`. Batches come in order; a batch seen again
    /// (a re-run) keeps its first time, which is when a reader could first see it.
    pub fn record(&mut self, batch: u64, at_ms: i64) {
        if self.times.back().is_some_and(|(last, _)| *last >= batch) {
            return;
        }
        self.times.push_back((batch, at_ms));
        while self.times.front().is_some_and(|(oldest, _)| oldest + self.horizon_batches < batch) {
            self.times.pop_front();
        }
    }

    pub fn at(&self, batch: u64) -> Option<i64> {
        let index = self.times.binary_search_by_key(&batch, |(recorded, _)| *recorded).ok()?;
        Some(self.times[index].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_horizon_and_the_first_time_of_a_batch() {
        let mut times = VisibleTimes::new(3);
        for batch in 0..10 {
            times.record(batch, 1_000 + batch as i64);
        }
        assert_eq!(times.at(9), Some(1_009));
        assert_eq!(times.at(6), Some(1_006));
        assert_eq!(times.at(5), None, "older than the horizon");
        times.record(9, 5_000);
        assert_eq!(times.at(9), Some(1_009), "a re-run does not move the first visible time");
        times.record(12, 1_012);
        assert_eq!(times.at(11), None, "a batch that wrote nothing has no time");
        assert_eq!(times.at(12), Some(1_012));
        assert!(times.times.len() <= 4);
    }
}
