//! The ground truth of a ysb run, counted from the generator function directly, its sink
//! output checked against it, and the window latencies read off the output and the batch log.

use std::collections::BTreeMap;

use sleet_connectors::sink::{final_counts, SinkRow};
use sleet_connectors::ysb::{event, event_range, Campaigns, EventType, WINDOW_MS};
use sleet_plan::YsbSourceSpec;

/// Good view events per (campaign id, window start) over all partitions in `[start, end)`,
/// counted from `event()` directly so it shares no code with the engine's operators.
pub fn ground_truth(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64) -> BTreeMap<(String, i64), u64> {
    let campaigns = Campaigns::new(spec.seed);
    let mut counts: BTreeMap<(u32, i64), u64> = BTreeMap::new();
    for partition in 0..spec.partitions {
        for k in event_range(spec, partition, start_ms, end_ms) {
            let event = event(spec, partition, k);
            if event.bad.is_none() && event.event_type == EventType::View {
                let window = event.event_time_ms.div_euclid(WINDOW_MS) * WINDOW_MS;
                *counts.entry((campaigns.campaign_of(event.ad), window)).or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .map(|((campaign, window), count)| ((campaigns.campaign_id(campaign).to_string(), window), count))
        .collect()
}

#[derive(Debug, Default)]
pub struct YsbCheck {
    pub windows_expected: usize,
    pub mismatches: usize,
    /// A few mismatches, spelled out, for the report.
    pub examples: Vec<String>,
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

/// One latency per window that ended inside `[from_ms, to_ms]`: when its result was final and
/// visible for every campaign — the latest of the times its campaigns' final rows became
/// visible in the sink (`visible_at_ms`: per batch, from the batch log) — minus the window's
/// end. The campaigns of one window are updated by the same few batches, so they are one
/// sample, not a hundred. A window whose final batch is no longer in the log is left out.
pub fn window_latencies_ms(rows: &[SinkRow], visible_at_ms: &BTreeMap<u64, i64>, from_ms: i64, to_ms: i64) -> Vec<f64> {
    let mut visible_by_window: BTreeMap<i64, Option<i64>> = BTreeMap::new();
    for ((_, window), (_, batch)) in final_counts(rows) {
        let end = window + WINDOW_MS;
        if end < from_ms || end > to_ms {
            continue;
        }
        let visible = visible_at_ms.get(&batch).copied();
        let entry = visible_by_window.entry(end).or_insert(visible);
        *entry = match (*entry, visible) {
            (Some(seen), Some(at)) => Some(seen.max(at)),
            _ => None,
        };
    }
    visible_by_window.into_iter().filter_map(|(end, visible)| Some((visible? - end) as f64)).collect()
}

#[cfg(test)]
mod tests {
    use sleet_connectors::ysb::YsbGenerator;
    use sleet_exec::RawRecords;

    use super::*;

    fn row(campaign: &str, window_start: i64, count: i64, batch: u64) -> SinkRow {
        SinkRow { window_start, campaign_id: campaign.into(), count, batch }
    }

    #[test]
    fn a_window_is_final_when_the_last_of_its_campaigns_is_visible() {
        // Rows of a later batch may come first in file order (another partition's file).
        let rows = [
            row("a", 0, 5, 101),
            row("a", 0, 3, 90),
            row("b", 0, 7, 100),
            row("b", 10_000, 1, 200),
            row("c", 20_000, 1, 300),
        ];
        let last = final_counts(&rows);
        assert_eq!(last[&("a".to_string(), 0)], (5, 101), "the highest batch holds the final value");
        let visible: BTreeMap<u64, i64> = [(90, 9_000), (100, 10_040), (101, 10_120), (200, 20_050)].into();
        assert_eq!(window_latencies_ms(&rows, &visible, 0, 20_000), vec![120.0, 50.0], "one sample per window");
        assert_eq!(window_latencies_ms(&rows, &visible, 15_000, 20_000), vec![50.0]);
        assert!(window_latencies_ms(&rows, &visible, 25_000, 30_000).is_empty(), "batch 300 is not in the log");
    }

    #[test]
    fn counts_off_by_one_are_mismatches() {
        let spec = YsbSourceSpec { seed: 3, rate_per_s: 2_000, partitions: 2, bad_fraction: 0.0, pre_decoded: false };
        let truth = ground_truth(&spec, 0, 20_000);
        let mut rows: Vec<SinkRow> = truth.iter().map(|((c, w), n)| row(c, *w, *n as i64, 0)).collect();
        assert_eq!(check_counts(&spec, 0, 20_000, &rows).mismatches, 0);
        rows[0].count += 1;
        rows.pop();
        let check = check_counts(&spec, 0, 20_000, &rows);
        assert_eq!(check.mismatches, 2, "{:?}", check.examples);
    }

    #[test]
    fn ground_truth_equals_a_count_over_parsed_json() {
        let spec = YsbSourceSpec { seed: 42, rate_per_s: 3_000, partitions: 3, bad_fraction: 0.02, pre_decoded: false };
        let campaigns = Campaigns::new(spec.seed);
        let ads = (sleet_connectors::ysb::CAMPAIGNS * sleet_connectors::ysb::ADS_PER_CAMPAIGN) as u32;
        let campaign_of_ad: std::collections::HashMap<String, String> = (0..ads)
            .map(|ad| (campaigns.ad_id(ad).to_string(), campaigns.campaign_id(campaigns.campaign_of(ad)).to_string()))
            .collect();
        let (start, end) = (1_700_000_005_000, 1_700_000_027_000);
        let mut counted: BTreeMap<(String, i64), u64> = BTreeMap::new();
        for partition in 0..3 {
            let mut records = RawRecords::new();
            YsbGenerator::new(&spec, partition).generate(start, end, &mut records);
            for record in records.iter() {
                if record.len() > 4096 {
                    continue;
                }
                let Ok(value) = serde_json::from_slice::<serde_json::Value>(record) else { continue };
                let Ok(time) = value["event_time"].as_str().unwrap_or("").parse::<i64>() else { continue };
                if value["event_type"] == "view" {
                    let campaign = campaign_of_ad[value["ad_id"].as_str().expect("ad")].clone();
                    *counted.entry((campaign, time.div_euclid(WINDOW_MS) * WINDOW_MS)).or_default() += 1;
                }
            }
        }
        assert_eq!(ground_truth(&spec, start, end), counted);
    }
}
