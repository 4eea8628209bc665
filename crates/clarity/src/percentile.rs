//! Percentiles of measured values, the one definition every report uses (nearest rank), and
//! the summary of a distribution that says how many samples its figures stand on.

use serde::Serialize;

/// The `q`-quantile (0 ≤ q ≤ 1) of `values` by nearest rank; `None` when there are none.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.saturating_sub(1).min(sorted.len() - 1)])
}

/// Below this many samples a tail percentile is only the maximum under another name, so a
/// distribution states its median and maximum and says why there is no tail.
pub const TAIL_SAMPLES_MIN: usize = 10;

/// A distribution as every result file reports it: the sample count first, tail percentiles
/// only where there are enough samples to mean something.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    pub samples: usize,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Distribution {
    pub fn of(values: &[f64]) -> Self {
        let samples = values.len();
        let tails = samples >= TAIL_SAMPLES_MIN;
        let tail = |q| if tails { percentile(values, q) } else { None };
        let note = match samples {
            0 => Some("no samples".to_string()),
            n if !tails => Some(format!("{n} samples: too few for p95 and p99")),
            _ => None,
        };
        Distribution {
            samples,
            p50: percentile(values, 0.5),
            p95: tail(0.95),
            p99: tail(0.99),
            max: percentile(values, 1.0),
            note,
        }
    }

    /// `p50 12 p99 40 ms (1500 samples)` or `p50 12 max 20 ms (3 samples)`: never a p99 that
    /// is not one.
    pub fn describe(&self, unit: &str) -> String {
        let show = |value: Option<f64>| value.map_or("-".to_string(), |value| format!("{value:.0}"));
        match self.p99 {
            Some(p99) => {
                format!("p50 {} p99 {p99:.0} {unit} ({} samples)", show(self.p50), self.samples)
            }
            None => format!("p50 {} max {} {unit} ({} samples)", show(self.p50), show(self.max), self.samples),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), Some(50.0));
        assert_eq!(percentile(&values, 0.99), Some(99.0));
        assert_eq!(percentile(&values, 1.0), Some(100.0));
        assert_eq!(percentile(&values, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn a_distribution_of_few_samples_has_no_tail() {
        let few = Distribution::of(&[3.0, 1.0, 2.0]);
        assert_eq!((few.samples, few.p50, few.p99, few.max), (3, Some(2.0), None, Some(3.0)));
        assert!(few.note.as_deref().is_some_and(|note| note.contains("3 samples")));
        assert_eq!(few.describe("ms"), "p50 2 max 3 ms (3 samples)");
        let many: Vec<f64> = (1..=200).map(f64::from).collect();
        let many = Distribution::of(&many);
        assert_eq!((many.samples, many.p95, many.p99, many.note.clone()), (200, Some(190.0), Some(198.0), None));
        assert_eq!(many.describe("ms"), "p50 100 p99 198 ms (200 samples)");
        assert_eq!(Distribution::of(&[]).note.as_deref(), Some("no samples"));
    }
}
