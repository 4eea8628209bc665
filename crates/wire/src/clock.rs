//! Time: the wall clock every timestamp is read from, and the batch clock that turns batch
//! ids into time ranges and back.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_micros() as i64).unwrap_or(0)
}

pub fn now_ms() -> i64 {
    now_us() / 1000
}

/// A job's batches on the time axis: batch `b` holds what falls in
/// `[start_ms + b·interval_ms, start_ms + (b+1)·interval_ms)`. The driver, the workers and the
/// benchmarks all compute batch times here, so they cannot disagree by an off-by-one.
///
/// A job of 10 ms batches asked to start at 1 003 ms starts on the next round boundary, and a
/// batch has closed exactly when its end has passed:
///
/// ```
/// use sleet_wire::clock::BatchClock;
///
/// let clock = BatchClock::aligned_after(1_003, 10);
/// assert_eq!(clock.range_ms(0), (1_010, 1_020));
/// assert_eq!(clock.closed_by(1_019), 0);
/// assert_eq!(clock.closed_by(clock.end_ms(0)), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchClock {
    /// Start of batch 0, ms since the epoch.
    pub start_ms: i64,
    pub interval_ms: i64,
}

impl BatchClock {
    pub fn new(start_ms: i64, interval_ms: i64) -> Self {
        assert!(interval_ms > 0, "a batch interval is at least 1 ms, not {interval_ms}");
        BatchClock { start_ms, interval_ms }
    }

    /// Batch 0 starts on the first interval boundary at or after `not_before_ms`, so batch
    /// boundaries fall on round times.
    pub fn aligned_after(not_before_ms: i64, interval_ms: i64) -> Self {
        let start_ms = not_before_ms.div_euclid(interval_ms) * interval_ms;
        let start_ms = if start_ms < not_before_ms { start_ms + interval_ms } else { start_ms };
        BatchClock::new(start_ms, interval_ms)
    }

    /// `[start, end)` of `batch`, in ms since the epoch.
    pub fn range_ms(&self, batch: u64) -> (i64, i64) {
        let start_ms = self.start_ms + batch as i64 * self.interval_ms;
        (start_ms, start_ms + self.interval_ms)
    }

    /// When `batch` closes: no record of it can arrive after this.
    pub fn end_ms(&self, batch: u64) -> i64 {
        self.range_ms(batch).1
    }

    /// How many batches cover `duration_ms` (the last one may reach past it).
    pub fn batches_in(&self, duration_ms: u64) -> u64 {
        duration_ms.div_ceil(self.interval_ms as u64)
    }

    /// How many batches have closed by `now_ms`: every batch below this id has ended.
    pub fn closed_by(&self, now_ms: i64) -> u64 {
        (now_ms - self.start_ms).div_euclid(self.interval_ms).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_ids_and_times_agree() {
        let clock = BatchClock::new(1_000, 10);
        assert_eq!(clock.range_ms(0), (1_000, 1_010));
        assert_eq!(clock.end_ms(3), 1_040);
        assert_eq!(clock.closed_by(999), 0);
        assert_eq!(clock.closed_by(1_009), 0);
        assert_eq!(clock.closed_by(1_010), 1, "batch 0 has closed at its end");
        assert_eq!(clock.closed_by(1_045), 4);
        for batch in 0..100 {
            assert_eq!(clock.closed_by(clock.end_ms(batch)), batch + 1);
            assert_eq!(clock.closed_by(clock.end_ms(batch) - 1), batch);
        }
        assert_eq!(clock.batches_in(25), 3);
        assert_eq!(clock.batches_in(30), 3);
    }

    #[test]
    fn aligned_start_is_the_next_boundary() {
        assert_eq!(BatchClock::aligned_after(1_003, 10).start_ms, 1_010);
        assert_eq!(BatchClock::aligned_after(1_010, 10).start_ms, 1_010);
        assert_eq!(BatchClock::aligned_after(-5, 10).start_ms, 0);
    }
}
