//! Checks a ysb run's sink output against the ground truth computed from the generator
//! function directly, and reads the window latencies off the output.

use std::collections::BTreeMap;

use sleet_connectors::sink::SinkRow;
use sleet_connectors::ysb::{ground_truth, WINDOW_MS};
use sleet_plan::YsbSourceSpec;

#[derive(Debug, Default)]
pub struct YsbCheck {
    pub windows_expected: usize,
    pub mismatches: usize,
    /// A few mismatches, spelled out, for the report.
    pub examples: Vec<String>,
}

/// The final value per (campaign, window) is the last row written for it.
pub fn final_counts(rows: &[SinkRow]) -> BTreeMap<(String, i64), (i64, i64)> {
    let mut last = BTreeMap::new();
    for row in rows {
        last.insert((row.campaign_id.clone(), row.window_start), (row.count, row.update_time_ms));
    }
    last
}

pub fn check_counts(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64, rows: &[SinkRow]) -> YsbCheck {
    let expected = ground_truth(spec, start_ms, end_ms);
    let actual = final_counts(rows);
    let mut check = YsbCheck { windows_expected: expected.len(), ..YsbCheck::default() };
    let note = |check: &mut YsbCheck, text: String| {
        check.mismatches += 1;
        if check.examples.len() < 10 {
            check.examples.push(text);
        }
    };
    for ((campaign, window), count) in &expected {
        match actual.get(&(campaign.clone(), *window)) {
            Some((found, _)) if *found as u64 == *count => {}
            Some((found, _)) => {
                note(&mut check, format!("campaign {campaign} window {window}: {found}, expected {count}"))
            }
            None => note(&mut check, format!("campaign {campaign} window {window}: missing, expected {count}")),
        }
    }
    for (campaign, window) in actual.keys() {
        if !expected.contains_key(&(campaign.clone(), *window)) {
            note(&mut check, format!("campaign {campaign} window {window}: present but no events were generated"));
        }
    }
    check
}

/// Latency of each window that ended inside `[from_ms, to_ms]`: its last update − its end.
pub fn window_latencies_ms(rows: &[SinkRow], from_ms: i64, to_ms: i64) -> Vec<f64> {
    final_counts(rows)
        .iter()
        .filter_map(|((_, window), (_, updated_ms))| {
            let end = window + WINDOW_MS;
            (end >= from_ms && end <= to_ms).then_some((updated_ms - end) as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(campaign: &str, window_start: i64, count: i64, update_time_ms: i64) -> SinkRow {
        SinkRow { window_start, campaign_id: campaign.into(), count, update_time_ms }
    }

    #[test]
    fn the_last_update_of_a_window_is_its_value_and_its_latency() {
        let rows = [row("a", 0, 3, 9_000), row("a", 0, 5, 10_120), row("b", 10_000, 1, 20_050)];
        let last = final_counts(&rows);
        assert_eq!(last[&("a".to_string(), 0)], (5, 10_120));
        assert_eq!(window_latencies_ms(&rows, 0, 20_000), vec![120.0, 50.0]);
        assert_eq!(window_latencies_ms(&rows, 15_000, 20_000), vec![50.0]);
    }

    #[test]
    fn counts_off_by_one_are_mismatches() {
        let spec = YsbSourceSpec { seed: 3, rate_per_s: 2_000, partitions: 2, bad_fraction: 0.0 };
        let truth = ground_truth(&spec, 0, 20_000);
        let mut rows: Vec<SinkRow> = truth.iter().map(|((c, w), n)| row(c, *w, *n as i64, 0)).collect();
        assert_eq!(check_counts(&spec, 0, 20_000, &rows).mismatches, 0);
        rows[0].count += 1;
        rows.pop();
        let check = check_counts(&spec, 0, 20_000, &rows);
        assert_eq!(check.mismatches, 2, "{:?}", check.examples);
    }
}
