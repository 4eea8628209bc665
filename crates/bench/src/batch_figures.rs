//! What a run's batch log says about throughput and stability, computed the same way for every
//! benchmark that reports them. Pure functions over the driver's batch records.
//!
//! - *Sustained throughput* is what was processed per second of wall time: the events of the
//!   measured batches over the span from the first of them launching to the last finishing.
//!   The rate offered to the source is a configuration, reported apart.
//! - *Stable* means the backlog does not grow, so the job could keep up with the rate
//!   indefinitely: over the measured batches the least-squares slope of the lag (finish minus
//!   scheduled end) against scheduled time is at most [`LAG_SLOPE_MAX_MS_PER_S`], and the
//!   lag's 99th percentile stays under [`lag_bound_ms`]. Latency is reported separately and
//!   never folded into the word.

use serde::Serialize;
use sleet_clarity::Distribution;
use sleet_wire::BatchRecord;

/// A backlog growing by 10 ms per second of input is 1 % of the offered load left behind;
/// below that, noise on a shared machine moves the fitted slope as much as real growth does.
pub const LAG_SLOPE_MAX_MS_PER_S: f64 = 10.0;

/// Stability is judged on at least this many measured batches; fewer cannot show a trend.
pub const BATCHES_MIN_FOR_STABILITY: usize = 10;

/// How much lag still counts as keeping up: ten batches of backlog, and never less than
/// 100 ms, which one scheduling hiccup of a shared 2-core machine can cost on its own.
pub fn lag_bound_ms(batch_interval_ms: u64) -> f64 {
    (10 * batch_interval_ms).max(100) as f64
}

/// The batches a run's figures cover: scheduled to end after the warm-up (`warm_ms`) and by
/// the planned end (`measured_end_ms`). Batches past the planned duration (a live Kafka
/// run's tail, reading the producer's last events) are not part of the measured rate.
pub fn measured_batches(batches: &[BatchRecord], warm_ms: i64, measured_end_ms: i64) -> Vec<&BatchRecord> {
    batches
        .iter()
        .filter(|batch| batch.scheduled_end_ms > warm_ms && batch.scheduled_end_ms <= measured_end_ms)
        .collect()
}

/// Each batch's processing time, first task launched to last finished, in ms.
pub fn processing_ms(measured: &[&BatchRecord]) -> Vec<f64> {
    measured.iter().map(|batch| (batch.finished_at_ms - batch.launched_at_ms) as f64).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sustained {
    pub events: u64,
    pub batches: usize,
    /// First measured batch launched → last measured batch finished, ms since the epoch.
    pub from_ms: i64,
    pub to_ms: i64,
    pub events_per_s: f64,
}

/// The processed rate over `measured` (batches after the warm-up); `None` without batches.
pub fn sustained(measured: &[&BatchRecord]) -> Option<Sustained> {
    let from_ms = measured.iter().map(|batch| batch.launched_at_ms).min()?;
    let to_ms = measured.iter().map(|batch| batch.finished_at_ms).max()?;
    let events: u64 = measured.iter().map(|batch| batch.events_in).sum();
    let span_s = (to_ms - from_ms).max(1) as f64 / 1000.0;
    Some(Sustained { events, batches: measured.len(), from_ms, to_ms, events_per_s: events as f64 / span_s })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LagFigures {
    #[serde(flatten)]
    pub distribution: Distribution,
    /// Least-squares slope of lag against scheduled time; `None` with fewer than two batches.
    pub slope_ms_per_s: Option<f64>,
    /// The lag of the last measured batch.
    pub last_ms: Option<f64>,
}

pub fn lag_figures(measured: &[&BatchRecord]) -> LagFigures {
    let points: Vec<(f64, f64)> = measured
        .iter()
        .map(|batch| (batch.scheduled_end_ms as f64 / 1000.0, (batch.finished_at_ms - batch.scheduled_end_ms) as f64))
        .collect();
    let lags: Vec<f64> = points.iter().map(|(_, lag)| *lag).collect();
    LagFigures {
        distribution: Distribution::of(&lags),
        slope_ms_per_s: least_squares_slope(&points),
        last_ms: lags.last().copied(),
    }
}

/// The slope of the line that fits `points` best; `None` when x does not vary.
fn least_squares_slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let covariance: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let variance: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    (variance > 0.0).then(|| covariance / variance)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    pub stable: bool,
    /// Why not, one reason per failed rule; empty when stable.
    pub reasons: Vec<String>,
    pub rule: String,
}

/// Judges the measured part of a run; `ran_fully` is whether every scheduled batch finished.
pub fn judge(lag: &LagFigures, batch_interval_ms: u64, ran_fully: bool) -> Stability {
    let bound = lag_bound_ms(batch_interval_ms);
    let mut reasons = Vec::new();
    if !ran_fully {
        reasons.push("the run stopped before every batch finished".to_string());
    }
    if lag.distribution.samples < BATCHES_MIN_FOR_STABILITY {
        reasons.push(format!(
            "{} measured batches, fewer than the {BATCHES_MIN_FOR_STABILITY} a trend needs",
            lag.distribution.samples
        ));
    }
    if let Some(slope) = lag.slope_ms_per_s.filter(|slope| *slope > LAG_SLOPE_MAX_MS_PER_S) {
        reasons.push(format!("the lag grows by {slope:.1} ms per second"));
    }
    if let Some(p99) = lag.distribution.p99.filter(|p99| *p99 > bound) {
        reasons.push(format!("lag p99 {p99:.0} ms is over the bound of {bound:.0} ms"));
    }
    Stability {
        stable: reasons.is_empty(),
        reasons,
        rule: format!(
            "lag slope ≤ {LAG_SLOPE_MAX_MS_PER_S} ms/s and lag p99 ≤ {bound:.0} ms over at least \
             {BATCHES_MIN_FOR_STABILITY} measured batches"
        ),
    }
}

/// The median by nearest rank (the upper middle of an even count), `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|value| value.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches of `interval` ms from t = 0, each taking `process(b)` ms after its scheduled end
    /// plus whatever backlog the batches before it left.
    fn batches(count: u64, interval: i64, events: u64, process: impl Fn(u64) -> i64) -> Vec<BatchRecord> {
        let mut free_at = 0;
        (0..count)
            .map(|batch| {
                let scheduled_end_ms = (batch as i64 + 1) * interval;
                let launched_at_ms = scheduled_end_ms.max(free_at);
                let finished_at_ms = launched_at_ms + process(batch);
                free_at = finished_at_ms;
                BatchRecord {
                    batch,
                    scheduled_end_ms,
                    launched_at_ms,
                    finished_at_ms,
                    events_in: events,
                    ..BatchRecord::default()
                }
            })
            .collect()
    }

    #[test]
    fn a_cluster_that_keeps_up_processes_the_offered_rate_and_is_stable() {
        // 100 ms batches of 50 000 events (500 000/s), 20 ms of work each.
        let log = batches(300, 100, 50_000, |_| 20);
        let measured: Vec<&BatchRecord> = log.iter().collect();
        let rate = sustained(&measured).expect("batches").events_per_s;
        assert!((rate - 500_000.0).abs() / 500_000.0 < 0.01, "{rate}");
        let lag = lag_figures(&measured);
        assert_eq!(lag.distribution.p99, Some(20.0));
        assert!(lag.slope_ms_per_s.expect("a slope").abs() < 1e-9);
        assert!(judge(&lag, 100, true).stable);
    }

    #[test]
    fn an_overloaded_cluster_reports_what_it_processed_and_a_growing_lag() {
        // 10 ms batches that take 20 ms: half the offered rate is processed, the lag grows
        // by 10 ms per batch, a full second per second.
        let log = batches(500, 10, 120_000, |_| 20);
        let measured: Vec<&BatchRecord> = log.iter().skip(100).collect();
        let rate = sustained(&measured).expect("batches").events_per_s;
        assert!((rate - 6_000_000.0).abs() / 6_000_000.0 < 0.01, "processed, not offered: {rate}");
        let lag = lag_figures(&measured);
        let slope = lag.slope_ms_per_s.expect("a slope");
        assert!((slope - 1000.0).abs() < 1.0, "{slope}");
        let verdict = judge(&lag, 10, true);
        assert!(!verdict.stable);
        assert_eq!(verdict.reasons.len(), 2, "{:?}", verdict.reasons);
    }

    #[test]
    fn a_bounded_but_high_lag_is_not_stable_and_too_few_batches_cannot_be() {
        // Every batch 400 ms behind at 10 ms batches: flat, but 40 batches of backlog.
        let log: Vec<BatchRecord> = batches(100, 10, 1, |_| 5)
            .into_iter()
            .map(|batch| BatchRecord { finished_at_ms: batch.scheduled_end_ms + 400, ..batch })
            .collect();
        let measured: Vec<&BatchRecord> = log.iter().collect();
        let verdict = judge(&lag_figures(&measured), 10, true);
        assert!(!verdict.stable && verdict.reasons[0].contains("over the bound"), "{:?}", verdict.reasons);
        let few: Vec<&BatchRecord> = log.iter().take(5).collect();
        assert!(!judge(&lag_figures(&few), 10, true).stable);
        assert!(!judge(&lag_figures(&measured[..50]), 1000, false).stable, "a run cut short is never stable");
    }
}
