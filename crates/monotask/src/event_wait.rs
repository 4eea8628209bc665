//! How long a batch's events waited for it to close, measured by the source that read them.

use serde::{Deserialize, Serialize};

/// How long the events of a batch (or of one partition's share of it) waited for the batch
/// to close: their count and the sum of (close − event time). A sum, not a mean, so that
/// partitions merge exactly into the batch's events-weighted mean. Milliseconds, as event
/// times are; the mean is taken in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventWait {
    pub events: u64,
    pub wait_sum_ms: i64,
}

impl EventWait {
    /// `events` events of a batch closing at `close_ms` whose times add up to `time_sum_ms`,
    /// summed with wrapping additions: the one addition per event a source's hot loop can
    /// afford. The wait, events × close − Σ times, is computed modulo 2⁶⁴ too, which makes it
    /// exact whenever the wait itself fits in an i64 (events × their largest wait: always),
    /// though the sum of the times alone overflows past a few million events. An event read
    /// after its batch closed (a late record) waits a negative time and is kept, so the mean
    /// stays the mean over the events the batch actually held.
    pub fn from_time_sum(close_ms: i64, events: u64, time_sum_ms: i64) -> EventWait {
        EventWait { events, wait_sum_ms: (events as i64).wrapping_mul(close_ms).wrapping_sub(time_sum_ms) }
    }

    pub fn merge(self, other: EventWait) -> EventWait {
        EventWait { events: self.events + other.events, wait_sum_ms: self.wait_sum_ms + other.wait_sum_ms }
    }

    /// The mean wait in µs, rounded to the nearest; `None` without events. Computed in
    /// 128 bits: a backlog of millions of events read hours late overflows 64 once in µs.
    pub fn mean_us(&self) -> Option<i64> {
        if self.events == 0 {
            return None;
        }
        let (sum_us, events) = (i128::from(self.wait_sum_ms) * 1000, i128::from(self.events));
        let rounded = (2 * sum_us + sum_us.signum() * events) / (2 * events);
        Some(i64::try_from(rounded).expect("a mean of i64 ms in µs fits in i64"))
    }

    /// The events-weighted mean over the parts that measured their events; `None` when none
    /// did, so a source that knows no event times leaves the breakdown to its assumption.
    pub fn mean_us_of(parts: impl IntoIterator<Item = EventWait>) -> Option<i64> {
        parts.into_iter().reduce(EventWait::merge)?.mean_us()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(events: u64, wait_sum_ms: i64) -> EventWait {
        EventWait { events, wait_sum_ms }
    }

    #[test]
    fn event_waits_come_from_the_sum_of_times_and_merge_weighted_by_events() {
        // A batch closing at 1 000 ms; partition 0 read events at 990, 995 and 999 ms.
        let first = EventWait::from_time_sum(1_000, 3, 990 + 995 + 999);
        assert_eq!(first, wait(3, 16));
        assert_eq!(first.mean_us(), Some(5_333), "16 ms over 3 events, rounded to the µs");
        // Partition 1 read one event at 902 ms: the batch's mean is (16 + 98) / 4 = 28.5 ms,
        // not the mean of the two partitions' means (5.33 and 98).
        let second = wait(1, 98);
        assert_eq!(EventWait::mean_us_of([first, second]), Some(28_500));
        assert_eq!(
            EventWait::mean_us_of([first, EventWait::default()]),
            Some(5_333),
            "an empty partition adds nothing"
        );
        assert_eq!(EventWait::mean_us_of([]), None, "no source measured");
        assert_eq!(EventWait::default().mean_us(), None, "no events");
    }

    #[test]
    fn a_sum_of_times_that_wraps_still_gives_the_exact_wait() {
        // Ten million events at 1.7e12 ms (2026) sum to 1.7e19, past i64::MAX: a source's
        // wrapping sum is off by 2⁶⁴, and the wait is exact anyway. Each waits 40 ms.
        let (close, events) = (1_700_000_000_040_i64, 10_000_000_u64);
        let time_sum = (0..events).fold(0i64, |sum, _| sum.wrapping_add(close - 40));
        assert!(i128::from(close - 40) * i128::from(events as i64) > i128::from(i64::MAX), "the sum does wrap");
        let got = EventWait::from_time_sum(close, events, time_sum);
        assert_eq!(got, wait(events, 400_000_000));
        assert_eq!(got.mean_us(), Some(40_000));
    }

    #[test]
    fn late_events_wait_negatively_and_rounding_is_symmetric() {
        let late = EventWait::from_time_sum(1_000, 3, 1_003 + 1_000 + 1_000);
        assert_eq!(late.mean_us(), Some(-1_000));
        assert_eq!(wait(3, -2).mean_us(), Some(-667));
        assert_eq!(wait(3, 2).mean_us(), Some(667));
        assert_eq!(wait(2, 1).mean_us(), Some(500));
        assert_eq!(wait(1, i64::MAX / 1000).mean_us(), Some(i64::MAX / 1000 * 1000), "no overflow in µs");
    }
}
