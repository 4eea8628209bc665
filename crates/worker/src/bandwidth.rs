//! Bandwidth limits for experiments (`--net-bandwidth`, `--disk-bandwidth`): a resource that
//! moves at most a given number of bytes per second, so that a net- or disk-bound run can be
//! engineered on one machine whose loopback and page cache are far faster than a real link.
//!
//! A limit is a single link shared by every transfer on it: each transfer reserves the next
//! `bytes ÷ rate` of the link's time, after the reservations before it, and its monotask
//! ends only when that reservation does. The waiting is therefore part of the monotask's run
//! time, so the model sees a slow resource rather than an idle one, and the throughput it
//! derives from the records (bytes ÷ busy time) comes out at the limit.

use std::sync::Mutex;
use std::time::Duration;

use sleet_wire::clock::now_us;

/// One resource's limit in bytes per second, with the time its link is booked until.
#[derive(Debug)]
pub struct BandwidthLimit {
    bytes_per_s: u64,
    /// µs since the epoch until which earlier transfers hold the link.
    booked_until_us: Mutex<i64>,
}

impl BandwidthLimit {
    /// `None` for no limit: a rate of 0 would never finish a transfer.
    pub fn new(bytes_per_s: Option<u64>) -> Option<Self> {
        bytes_per_s
            .filter(|&rate| rate > 0)
            .map(|bytes_per_s| BandwidthLimit { bytes_per_s, booked_until_us: Mutex::new(0) })
    }

    pub fn bytes_per_s(&self) -> u64 {
        self.bytes_per_s
    }

    /// Books `bytes` of the link for a transfer that began at `started_at_us` and returns when
    /// the booking ends (µs since the epoch). A transfer starts on the link no earlier than it
    /// began and no earlier than the transfers booked before it end.
    pub fn book(&self, started_at_us: i64, bytes: u64) -> i64 {
        let mut booked_until_us = self.booked_until_us.lock().expect("bandwidth lock");
        let end_us = transfer_end_us(*booked_until_us, started_at_us, bytes, self.bytes_per_s);
        *booked_until_us = end_us;
        end_us
    }

    /// Books the transfer and blocks the calling thread until its booking ends: for the
    /// disk scheduler's thread, which is the disk.
    pub fn wait_blocking(&self, started_at_us: i64, bytes: u64) {
        if let Some(wait) = wait_from_now(self.book(started_at_us, bytes)) {
            std::thread::sleep(wait);
        }
    }

    /// Books the transfer and waits, without blocking a thread, until its booking ends: for
    /// shuffle fetches, which run on the async runtime.
    pub async fn wait(&self, started_at_us: i64, bytes: u64) {
        if let Some(wait) = wait_from_now(self.book(started_at_us, bytes)) {
            tokio::time::sleep(wait).await;
        }
    }
}

fn wait_from_now(end_us: i64) -> Option<Duration> {
    let wait_us = end_us - now_us();
    (wait_us > 0).then(|| Duration::from_micros(wait_us as u64))
}

/// When a transfer of `bytes` at `bytes_per_s` ends on a link booked until `booked_until_us`,
/// if it began at `started_at_us`. Pure, for the tests.
fn transfer_end_us(booked_until_us: i64, started_at_us: i64, bytes: u64, bytes_per_s: u64) -> i64 {
    let on_link_us = (bytes as u128 * 1_000_000 / u128::from(bytes_per_s.max(1))) as i64;
    booked_until_us.max(started_at_us) + on_link_us
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(booked_until_us: i64, started_at_us: i64, bytes: u64, bytes_per_s: u64, expected_us: i64) {
        assert_eq!(
            transfer_end_us(booked_until_us, started_at_us, bytes, bytes_per_s),
            expected_us,
            "{bytes} B at {bytes_per_s} B/s, begun at {started_at_us}, link booked until {booked_until_us}"
        );
    }

    #[test]
    fn a_transfer_takes_its_bytes_over_the_rate_after_the_link_is_free() {
        // 1 MB at 4 MB/s is 250 ms on the link.
        check(0, 1_000, 1_000_000, 4_000_000, 251_000);
        // The link is busy until 2 000: the transfer queues behind it.
        check(2_000, 1_000, 1_000_000, 4_000_000, 252_000);
        check(0, 0, 0, 4_000_000, 0);
    }

    #[test]
    fn bookings_follow_one_another_on_the_link() {
        let limit = BandwidthLimit::new(Some(1_000_000)).expect("a limit");
        assert_eq!(limit.book(100, 500), 600);
        assert_eq!(limit.book(100, 500), 1_100, "the second waits for the first");
        assert_eq!(limit.book(5_000, 1_000), 6_000, "an idle link starts at once");
        assert!(BandwidthLimit::new(Some(0)).is_none() && BandwidthLimit::new(None).is_none());
    }

    #[test]
    fn waiting_blocks_until_the_booking_ends() {
        let limit = BandwidthLimit::new(Some(1_000_000)).expect("a limit");
        let started = now_us();
        limit.wait_blocking(started, 3_000);
        assert!(now_us() - started >= 3_000, "3 000 B at 1 MB/s take at least 3 ms");
    }
}
