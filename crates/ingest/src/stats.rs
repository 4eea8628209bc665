//! What the server reports at `GET /v1/stats` and on exit: records and bytes accepted and
//! refused, acknowledgement latency, and the process's CPU time per accepted record.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Latencies kept for the percentiles: the most recent ones, so memory stays bounded on a
/// server that runs for weeks, and the figures describe its recent behaviour.
const LATENCIES_KEPT: usize = 1 << 16;

#[derive(Default)]
pub struct Stats {
    pub records_accepted: AtomicU64,
    pub records_refused: AtomicU64,
    pub bytes_accepted: AtomicU64,
    pub requests_accepted: AtomicU64,
    pub requests_refused: AtomicU64,
    /// Produce requests sent to Kafka, each one partition's batch.
    pub batches_written: AtomicU64,
    latencies_us: Mutex<Ring>,
}

#[derive(Default)]
struct Ring {
    values: Vec<u32>,
    next: usize,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct StatsReport {
    pub records_accepted: u64,
    pub records_refused: u64,
    pub bytes_accepted: u64,
    pub requests_accepted: u64,
    pub requests_refused: u64,
    pub batches_written: u64,
    /// Over the last `latency_samples` acknowledged requests or messages, from receipt to
    /// Kafka's acknowledgement.
    pub ack_latency_ms_p50: f64,
    pub ack_latency_ms_p99: f64,
    pub latency_samples: u64,
    pub uptime_s: f64,
    /// User plus system CPU time of the whole process since it started.
    pub cpu_s: f64,
    pub cpu_us_per_record: f64,
}

impl Stats {
    pub fn accepted(&self, records: usize, bytes: usize, latency: Duration) {
        self.records_accepted.fetch_add(records as u64, Ordering::Relaxed);
        self.bytes_accepted.fetch_add(bytes as u64, Ordering::Relaxed);
        self.requests_accepted.fetch_add(1, Ordering::Relaxed);
        let micros = latency.as_micros().min(u32::MAX as u128) as u32;
        let mut ring = self.latencies_us.lock().expect("no thread panics holding the latency ring");
        if ring.values.len() < LATENCIES_KEPT {
            ring.values.push(micros);
        } else {
            let next = ring.next;
            ring.values[next] = micros;
        }
        ring.next = (ring.next + 1) % LATENCIES_KEPT;
    }

    pub fn refused(&self, records: usize) {
        self.records_refused.fetch_add(records as u64, Ordering::Relaxed);
        self.requests_refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn report(&self, started: Instant) -> StatsReport {
        let mut latencies = self.latencies_us.lock().expect("no thread panics holding the latency ring").values.clone();
        latencies.sort_unstable();
        let records_accepted = self.records_accepted.load(Ordering::Relaxed);
        let cpu_s = process_cpu_seconds().unwrap_or(f64::NAN);
        StatsReport {
            records_accepted,
            records_refused: self.records_refused.load(Ordering::Relaxed),
            bytes_accepted: self.bytes_accepted.load(Ordering::Relaxed),
            requests_accepted: self.requests_accepted.load(Ordering::Relaxed),
            requests_refused: self.requests_refused.load(Ordering::Relaxed),
            batches_written: self.batches_written.load(Ordering::Relaxed),
            ack_latency_ms_p50: percentile_ms(&latencies, 0.50),
            ack_latency_ms_p99: percentile_ms(&latencies, 0.99),
            latency_samples: latencies.len() as u64,
            uptime_s: started.elapsed().as_secs_f64(),
            cpu_s,
            cpu_us_per_record: if records_accepted == 0 { 0.0 } else { cpu_s * 1e6 / records_accepted as f64 },
        }
    }
}

/// The nearest-rank percentile `q` of sorted microseconds, in milliseconds; 0 for none.
fn percentile_ms(sorted_us: &[u32], q: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted_us.len() as f64).ceil() as usize).clamp(1, sorted_us.len());
    sorted_us[rank - 1] as f64 / 1000.0
}

/// User plus system time of this process, from `/proc/self/stat`.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    Some((stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values_us: &[u32], q: f64, expected_ms: f64) {
        let mut sorted = values_us.to_vec();
        sorted.sort_unstable();
        assert_eq!(percentile_ms(&sorted, q), expected_ms, "p{} of {values_us:?}", q * 100.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        check(&[], 0.5, 0.0);
        check(&[3000], 0.99, 3.0);
        let hundred: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        check(&hundred, 0.50, 50.0);
        check(&hundred, 0.99, 99.0);
        check(&[1000, 2000], 0.5, 1.0);
    }

    #[test]
    fn the_ring_keeps_the_most_recent_latencies() {
        let stats = Stats::default();
        for _ in 0..LATENCIES_KEPT {
            stats.accepted(1, 10, Duration::from_millis(100));
        }
        for _ in 0..LATENCIES_KEPT {
            stats.accepted(1, 10, Duration::from_millis(1));
        }
        let report = stats.report(Instant::now());
        assert_eq!(report.latency_samples, LATENCIES_KEPT as u64);
        assert_eq!(report.ack_latency_ms_p99, 1.0);
        assert_eq!(report.records_accepted, 2 * LATENCIES_KEPT as u64);
        // CPU time comes in clock ticks, so a short test may show none: the integration tests
        // check it on a server that has worked.
        assert!(report.cpu_s >= 0.0, "CPU time is read: {}", report.cpu_s);
    }
}
