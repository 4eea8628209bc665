//! A gateway run's batch figures from the job's summary: how long batches took to process,
//! how long after their interval closed their results were visible, and whether the job
//! kept up with its input (the stability the field study tunes the batch interval for).

use serde::Serialize;
use sleet_wire::JobSummary;

/// Percentiles of one figure over a run's batches, in ms.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Spread {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let at = |share: f64| values[((values.len() - 1) as f64 * share).round() as usize];
        Some(Spread { p50: at(0.5), p99: at(0.99), max: at(1.0) })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchFigures {
    /// Batches past the warm-up that the figures cover.
    pub batches: usize,
    /// Map plus reduce stage time of a batch.
    pub processing_ms: Option<Spread>,
    /// From the end of a batch's interval to its results being visible in the sink.
    pub delay_ms: Option<Spread>,
    /// The batch interval was stable: processing kept within it (p95 below the interval)
    /// and the delay did not grow over the run (the last quarter's median delay is within
    /// one interval of the second quarter's).
    pub stable: bool,
    /// Why not, when not.
    pub unstable_because: Option<String>,
}

/// The figures of the batches after the first `warmup_share` of the run's batches.
pub fn batch_figures(summary: &JobSummary, batch_interval_ms: u64, warmup_share: f64) -> BatchFigures {
    let skip = (summary.batches.len() as f64 * warmup_share) as usize;
    let batches = &summary.batches[skip.min(summary.batches.len())..];
    let processing: Vec<f64> = batches.iter().map(|batch| batch.map_stage_ms + batch.reduce_stage_ms).collect();
    let delays: Vec<f64> = batches
        .iter()
        .filter(|batch| batch.results_visible_at_us > 0)
        .map(|batch| (batch.results_visible_at_us as f64 / 1000.0 - batch.scheduled_end_ms as f64).max(0.0))
        .collect();
    let interval = batch_interval_ms as f64;
    let unstable_because = stability_problem(&processing, &delays, interval);
    BatchFigures {
        batches: batches.len(),
        processing_ms: Spread::of(processing),
        delay_ms: Spread::of(delays),
        stable: unstable_because.is_none(),
        unstable_because,
    }
}

fn stability_problem(processing: &[f64], delays: &[f64], interval: f64) -> Option<String> {
    if delays.len() < 8 {
        return Some(format!("only {} batches with results to judge", delays.len()));
    }
    let mut sorted = processing.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p95 = sorted[((sorted.len() - 1) as f64 * 0.95).round() as usize];
    if p95 >= interval {
        return Some(format!("processing p95 {p95:.1} ms is not below the {interval} ms interval"));
    }
    let quarter = delays.len() / 4;
    let median = |part: &[f64]| {
        let mut part = part.to_vec();
        part.sort_by(f64::total_cmp);
        part[part.len() / 2]
    };
    let (second, last) = (median(&delays[quarter..2 * quarter]), median(&delays[3 * quarter..]));
    if last > second + interval {
        return Some(format!("the delay grew from {second:.1} ms to {last:.1} ms over the run"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleet_wire::BatchRecord;

    fn summary(processing: impl Fn(u64) -> f64, delay: impl Fn(u64) -> f64) -> JobSummary {
        let batches = (0..40)
            .map(|batch| {
                let end_ms = 1_000 + batch as i64 * 100;
                BatchRecord {
                    batch,
                    scheduled_end_ms: end_ms,
                    map_stage_ms: processing(batch),
                    results_visible_at_us: ((end_ms as f64 + delay(batch)) * 1000.0) as i64,
                    ..BatchRecord::default()
                }
            })
            .collect();
        JobSummary { batches, ..JobSummary::default() }
    }

    #[test]
    fn a_job_that_keeps_up_is_stable() {
        let figures = batch_figures(&summary(|_| 30.0, |batch| 35.0 + (batch % 3) as f64), 100, 0.0);
        assert!(figures.stable, "{figures:?}");
        assert_eq!(figures.processing_ms.map(|spread| spread.p50), Some(30.0));
        assert_eq!(figures.batches, 40);
    }

    #[test]
    fn processing_at_the_interval_is_unstable() {
        let figures = batch_figures(&summary(|_| 100.0, |_| 40.0), 100, 0.0);
        assert!(!figures.stable);
        assert!(figures.unstable_because.expect("a reason").contains("processing p95"));
    }

    #[test]
    fn a_growing_delay_is_unstable_even_when_batches_are_quick() {
        let figures = batch_figures(&summary(|_| 50.0, |batch| batch as f64 * 20.0), 100, 0.0);
        assert!(!figures.stable);
        assert!(figures.unstable_because.expect("a reason").contains("grew"));
    }

    #[test]
    fn the_warm_up_is_left_out() {
        let figures = batch_figures(&summary(|batch| if batch < 10 { 500.0 } else { 20.0 }, |_| 30.0), 100, 0.25);
        assert!(figures.stable, "{figures:?}");
        assert_eq!(figures.batches, 30);
    }
}
