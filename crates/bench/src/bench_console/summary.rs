//! What the pairs of runs add up to: each mode's median, the cost of the console as a share
//! of the driver's CPU without it, and each pair's own ratio, so a reader sees how far the
//! pairs agree before trusting the medians.

use serde::Serialize;

use crate::batch_figures::median;

/// The budget: serving the console may cost at most this share of the driver's CPU.
pub const BUDGET_SHARE: f64 = 0.01;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No `--http`: the driver serves nothing and nobody looks.
    Off,
    /// `--http`, one dashboard page open and a scrape of `/metrics` every second.
    On,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::On => "on",
        }
    }

    /// The modes of pair `pair` (from 1) in the order their clusters start: alternating from
    /// pair to pair, so that starting first (or second) favours neither mode.
    pub fn order(pair: u32) -> [Mode; 2] {
        if pair % 2 == 1 {
            [Mode::Off, Mode::On]
        } else {
            [Mode::On, Mode::Off]
        }
    }
}

/// One run's figures, as the result object lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFigures {
    pub mode: Mode,
    pub pair: u32,
    /// The driver's CPU (user + system) over the measured window, per second of wall time.
    pub driver_cpu_ms_per_s: f64,
    /// `on` only: the console thread's own CPU over the same window.
    pub console_cpu_ms_per_s: Option<f64>,
    pub events_per_s: f64,
    /// `on` only: the updates the page applied, and the scrapes answered, over the whole run.
    pub page_updates: Option<u64>,
    pub scrapes: Option<u64>,
}

/// A figure's median in each mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByMode {
    pub off: f64,
    pub on: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Complete pairs, the sample count of each median.
    pub pairs: usize,
    pub driver_cpu_ms_per_s: ByMode,
    pub events_per_s: ByMode,
    /// (median on − median off) ÷ median off, of the driver's CPU.
    pub cost_share: f64,
    /// Each complete pair's driver CPU on ÷ off, by pair.
    pub pair_ratios: Vec<f64>,
    /// The median over `on` runs of the console thread's CPU ÷ the driver's CPU: the cost
    /// measured where it is spent.
    pub console_share: Option<f64>,
    pub budget_share: f64,
    pub within_budget: bool,
}

/// The summary of the complete pairs among `runs` (a pair short of a mode counts in neither
/// median, so both stand on the same pairs); `None` without a complete pair.
pub fn summarize(runs: &[RunFigures]) -> Option<Summary> {
    let mut pairs: Vec<u32> = runs.iter().map(|run| run.pair).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let of = |pair: u32, mode: Mode| runs.iter().find(|run| run.pair == pair && run.mode == mode);
    let complete: Vec<(&RunFigures, &RunFigures)> =
        pairs.iter().filter_map(|&pair| Some((of(pair, Mode::Off)?, of(pair, Mode::On)?))).collect();
    let median_of = |figure: fn(&RunFigures) -> f64| -> Option<ByMode> {
        let off: Vec<f64> = complete.iter().map(|(off, _)| figure(off)).collect();
        let on: Vec<f64> = complete.iter().map(|(_, on)| figure(on)).collect();
        Some(ByMode { off: median(&off)?, on: median(&on)? })
    };
    let cpu = median_of(|run| run.driver_cpu_ms_per_s)?;
    let events = median_of(|run| run.events_per_s)?;
    let cost_share = (cpu.on - cpu.off) / cpu.off;
    let console_shares: Vec<f64> = complete
        .iter()
        .filter_map(|(_, on)| on.console_cpu_ms_per_s.map(|console| console / on.driver_cpu_ms_per_s))
        .collect();
    Some(Summary {
        console_share: median(&console_shares),
        pairs: complete.len(),
        pair_ratios: complete.iter().map(|(off, on)| on.driver_cpu_ms_per_s / off.driver_cpu_ms_per_s).collect(),
        driver_cpu_ms_per_s: cpu,
        events_per_s: events,
        cost_share,
        budget_share: BUDGET_SHARE,
        within_budget: cost_share <= BUDGET_SHARE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mode: Mode, pair: u32, cpu: f64, events: f64) -> RunFigures {
        RunFigures {
            mode,
            pair,
            driver_cpu_ms_per_s: cpu,
            console_cpu_ms_per_s: None,
            events_per_s: events,
            page_updates: None,
            scrapes: None,
        }
    }

    #[test]
    fn pairs_alternate_which_mode_runs_first() {
        assert_eq!(Mode::order(1), [Mode::Off, Mode::On]);
        assert_eq!(Mode::order(2), [Mode::On, Mode::Off]);
        assert_eq!(Mode::order(3), [Mode::Off, Mode::On]);
    }

    #[test]
    fn the_cost_is_the_difference_of_the_medians_over_the_median_off() {
        let runs = [
            run(Mode::Off, 1, 100.0, 200_000.0),
            run(Mode::On, 1, 103.0, 199_000.0),
            run(Mode::On, 2, 99.0, 201_000.0),
            run(Mode::Off, 2, 90.0, 200_500.0),
            run(Mode::Off, 3, 120.0, 199_500.0),
            run(Mode::On, 3, 101.0, 200_000.0),
        ];
        let summary = summarize(&runs).expect("three complete pairs");
        assert_eq!(summary.pairs, 3);
        assert_eq!(summary.driver_cpu_ms_per_s, ByMode { off: 100.0, on: 101.0 });
        assert_eq!(summary.events_per_s, ByMode { off: 200_000.0, on: 200_000.0 });
        assert!((summary.cost_share - 0.01).abs() < 1e-12, "{}", summary.cost_share);
        assert!(summary.within_budget);
        let expected = [1.03, 1.1, 101.0 / 120.0];
        for (ratio, want) in summary.pair_ratios.iter().zip(expected) {
            assert!((ratio - want).abs() < 1e-12, "{:?}", summary.pair_ratios);
        }
    }

    #[test]
    fn a_pair_missing_a_mode_counts_in_neither_median() {
        let runs = [run(Mode::Off, 1, 100.0, 1.0), run(Mode::On, 1, 105.0, 1.0), run(Mode::On, 2, 500.0, 1.0)];
        let summary = summarize(&runs).expect("one complete pair");
        assert_eq!(summary.pairs, 1);
        assert_eq!(summary.driver_cpu_ms_per_s, ByMode { off: 100.0, on: 105.0 });
        assert_eq!(summary.pair_ratios, vec![1.05]);
        assert!(!summary.within_budget);
        assert_eq!(summarize(&runs[2..]), None);
    }
}
