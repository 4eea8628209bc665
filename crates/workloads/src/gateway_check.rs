//! The home-gateway workload's ground truth: exact per-(gateway, day) traffic totals and each
//! day's top 10, summed from the generator's own traffic (`sleet_connectors::gateway`), never
//! from the encoded values a job decodes; and a checker of a job's top-k rows against it.
//!
//! A reading counts towards the UTC day of its `date`, with the bytes since the gateway's
//! previous reading (0 for its first): what a job that orders each gateway's readings by event
//! time computes from any of the three encodings (exactly for `counter` and `cumulative`, to
//! float rounding for `rate`). A day's totals are final once every reading dated in it has been
//! delivered: `day_is_final`.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sleet_connectors::gateway::{day_of, exists, gateway_id, profile, reading, DAY_MS};
use sleet_plan::{GatewayEncoding, GatewaySourceSpec};

/// The top-k a gateway job reports per day.
pub const TOP_K: usize = 10;
/// `rate` totals are sums of `rate × elapsed`, which float rounding moves a little.
pub const RATE_TOLERANCE: f64 = 0.001;

/// Bytes a gateway sent and received on one day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayTotals {
    pub tx: u64,
    pub rx: u64,
}

impl DayTotals {
    pub fn total(&self) -> u64 {
        self.tx + self.rx
    }
}

/// Totals by `(day, gateway_id)`, day = `date div 86 400 000`.
pub type Totals = BTreeMap<(i64, String), DayTotals>;

/// The tolerance a job's totals are held to under `encoding`.
pub fn tolerance(encoding: GatewayEncoding) -> f64 {
    match encoding {
        GatewayEncoding::Rate => RATE_TOLERANCE,
        GatewayEncoding::Cumulative | GatewayEncoding::Counter => 0.0,
    }
}

/// The totals of the readings delivered in `[start_ms, end_ms)` of simulated time, over every
/// gateway. Walks each gateway's readings from its first, so it shares nothing with the
/// generator's range arithmetic but the reading function itself.
pub fn ground_truth(spec: &GatewaySourceSpec, start_ms: i64, end_ms: i64) -> Totals {
    let mut totals = Totals::new();
    for gateway in 0..spec.gateways {
        let profile = profile(spec, gateway);
        let id = gateway_id(gateway);
        for index in 0.. {
            // A reading dated at or after the end is delivered after it too.
            if !exists(spec, &profile, index) || sleet_connectors::gateway::date_ms(spec, &profile, index) >= end_ms {
                break;
            }
            let reading = reading(spec, &profile, gateway, index);
            if (start_ms..end_ms).contains(&reading.delivery_ms) {
                let day = totals.entry((day_of(reading.date_ms), id.clone())).or_default();
                day.tx += reading.tx.bytes;
                day.rx += reading.rx.bytes;
            }
        }
    }
    totals
}

/// Whether a job that saw the readings delivered in `[start_ms, end_ms)` has `day` final: it
/// saw every gateway from its first reading, and every reading dated in the day (those of a
/// day's end arrive up to `max_delay_ms` later), or the gateways stopped and all was drained.
pub fn day_is_final(spec: &GatewaySourceSpec, start_ms: i64, end_ms: i64, day: i64) -> bool {
    let day_end = (day + 1).saturating_mul(DAY_MS);
    start_ms <= spec.start_ms
        && (day_end.saturating_add(spec.max_delay_ms) <= end_ms || spec.drained_ms().is_some_and(|done| done <= end_ms))
}

/// Each day's top `k` gateways by `tx + rx`, largest first, ties by gateway id ascending.
pub fn top_k(totals: &Totals, k: usize) -> BTreeMap<i64, Vec<(String, u64)>> {
    let mut by_day: BTreeMap<i64, Vec<(String, u64)>> = BTreeMap::new();
    for ((day, id), totals) in totals {
        by_day.entry(*day).or_default().push((id.clone(), totals.total()));
    }
    for ranked in by_day.values_mut() {
        ranked.sort_by(|(a_id, a), (b_id, b)| b.cmp(a).then_with(|| a_id.cmp(b_id)));
        ranked.truncate(k);
    }
    by_day
}

/// One row of a job's top-k output: `rank` from 1 within `day` (`date div 86 400 000`), and
/// the gateway's `total` bytes (tx + rx) that day. As a JSON line:
/// `{"day": 19675, "rank": 1, "gateway_id": "gw-000042", "total": 123456789}`; other fields
/// are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopRow {
    pub day: i64,
    pub rank: u32,
    pub gateway_id: String,
    pub total: f64,
}

/// A job's top-k rows from JSON lines; an error names the line.
pub fn read_top_rows(text: &str) -> Result<Vec<TopRow>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            serde_json::from_str(line).with_context(|| format!("line {} is not a top-k row: {line}", number + 1))
        })
        .collect()
}

/// The last row of each `(day, rank)` in output order: a job emits each day's top-k every
/// batch, and its last emission is its final answer.
pub fn latest_rows(rows: &[TopRow]) -> BTreeMap<i64, BTreeMap<u32, TopRow>> {
    let mut latest: BTreeMap<i64, BTreeMap<u32, TopRow>> = BTreeMap::new();
    for row in rows {
        latest.entry(row.day).or_default().insert(row.rank, row.clone());
    }
    latest
}

/// Each day's ranking as a job left it in the committed JSON-lines files of `dir`: the rows of
/// the last batch that ranked the day (a batch re-ranks only the days its readings touch, so a
/// day's final ranking can be older than the run's last batch). An error names the bad line.
pub fn read_final_rankings(dir: &std::path::Path) -> Result<BTreeMap<i64, BTreeMap<u32, TopRow>>> {
    let lines = sleet_durable::committed::read_json_lines(dir, "part-", "sink")?;
    let mut latest: BTreeMap<i64, (u64, BTreeMap<u32, TopRow>)> = BTreeMap::new();
    for line in lines {
        let place = || format!("{} line {}", line.path.display(), line.line);
        let batch = line.value["batch"].as_u64().with_context(|| format!("{}: no batch number", place()))?;
        let row: TopRow =
            serde_json::from_value(line.value.clone()).with_context(|| format!("{}: not a ranking row", place()))?;
        let entry = latest.entry(row.day).or_insert((batch, BTreeMap::new()));
        if batch > entry.0 {
            *entry = (batch, BTreeMap::new());
        }
        if batch == entry.0 {
            entry.1.insert(row.rank, row);
        }
    }
    Ok(latest.into_iter().map(|(day, (_, ranks))| (day, ranks)).collect())
}

/// A run's rankings judged against the truth of what was delivered.
#[derive(Debug, Clone, Serialize)]
pub struct RankingVerdict {
    /// Days whose every reading was delivered, and so whose ranking is final.
    pub final_days: Vec<i64>,
    pub mismatches: Vec<String>,
}

impl RankingVerdict {
    pub fn exact(&self) -> bool {
        self.mismatches.is_empty() && !self.final_days.is_empty()
    }
}

/// The top `k` of every final day in `rankings` (`read_final_rankings`) against the truth of
/// the readings delivered in `[start_ms, end_ms)`.
pub fn check_rankings(
    spec: &GatewaySourceSpec,
    (start_ms, end_ms): (i64, i64),
    rankings: &BTreeMap<i64, BTreeMap<u32, TopRow>>,
    k: usize,
) -> RankingVerdict {
    let truth = ground_truth(spec, start_ms, end_ms);
    let is_final = |day: i64| day_is_final(spec, start_ms, end_ms, day);
    let top: BTreeMap<i64, BTreeMap<u32, TopRow>> = rankings
        .iter()
        .map(|(day, ranks)| (*day, ranks.range(1..=k as u32).map(|(rank, row)| (*rank, row.clone())).collect()))
        .collect();
    let days: std::collections::BTreeSet<i64> = truth.keys().map(|(day, _)| *day).chain(top.keys().copied()).collect();
    RankingVerdict {
        final_days: days.into_iter().filter(|day| is_final(*day)).collect(),
        mismatches: check_top(&top, &truth, k, tolerance(spec.encoding), &is_final),
    }
}

fn within(got: f64, expected: u64, tolerance: f64) -> bool {
    (got - expected as f64).abs() <= tolerance * expected as f64
}

/// The differences between a job's final top-k (`latest_rows`) and the truth's, over the days
/// `is_final` admits; empty when they agree. With a tolerance (`rate`), a row is right when its
/// total is within it of its gateway's true total, and that within it of the rank's: gateways
/// closer than the tolerance may trade places.
pub fn check_top(
    latest: &BTreeMap<i64, BTreeMap<u32, TopRow>>,
    truth: &Totals,
    k: usize,
    tolerance: f64,
    is_final: &dyn Fn(i64) -> bool,
) -> Vec<String> {
    let expected = top_k(truth, k);
    let mut mismatches = Vec::new();
    let days: std::collections::BTreeSet<i64> = expected.keys().chain(latest.keys()).copied().collect();
    for day in days.into_iter().filter(|day| is_final(*day)) {
        let want = expected.get(&day).map(Vec::as_slice).unwrap_or_default();
        let got: Vec<&TopRow> = latest.get(&day).map(|rows| rows.values().collect()).unwrap_or_default();
        if got.len() != want.len() {
            mismatches.push(format!("day {day}: {} ranks, expected {}", got.len(), want.len()));
        }
        for (position, (want_id, want_total)) in want.iter().enumerate() {
            let rank = position as u32 + 1;
            let Some(row) = got.iter().find(|row| row.rank == rank) else {
                mismatches.push(format!("day {day} rank {rank}: missing, expected {want_id} with {want_total}"));
                continue;
            };
            let right = if tolerance == 0.0 {
                row.gateway_id == *want_id && row.total == *want_total as f64
            } else {
                let true_total = truth.get(&(day, row.gateway_id.clone())).map_or(0, DayTotals::total);
                within(row.total, true_total, tolerance) && within(true_total as f64, *want_total, tolerance)
            };
            if !right {
                mismatches.push(format!(
                    "day {day} rank {rank}: {} with {}, expected {want_id} with {want_total}",
                    row.gateway_id, row.total
                ));
            }
        }
    }
    mismatches
}

/// The differences between a job's per-(day, gateway) totals `(tx, rx)` and the truth's over
/// the days `is_final` admits; empty when they agree within `tolerance`.
pub fn check_totals(
    got: &BTreeMap<(i64, String), (f64, f64)>,
    truth: &Totals,
    tolerance: f64,
    is_final: &dyn Fn(i64) -> bool,
) -> Vec<String> {
    let mut mismatches = Vec::new();
    let keys: std::collections::BTreeSet<&(i64, String)> = got.keys().chain(truth.keys()).collect();
    for key in keys.into_iter().filter(|(day, _)| is_final(*day)) {
        let want = truth.get(key).copied().unwrap_or_default();
        let (tx, rx) = got.get(key).copied().unwrap_or((0.0, 0.0));
        if !(within(tx, want.tx, tolerance) && within(rx, want.rx, tolerance)) {
            mismatches
                .push(format!("day {} {}: tx {tx} rx {rx}, expected tx {} rx {}", key.0, key.1, want.tx, want.rx));
        }
    }
    mismatches
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_connectors::gateway::GatewayGenerator;
    use sleet_exec::RawRecords;
    use sleet_plan::GatewayFormat;

    use super::*;

    const START_MS: i64 = 1_700_000_000_000;

    fn spec(seed: u64, gateways: u32, partitions: u32, encoding: GatewayEncoding) -> GatewaySourceSpec {
        GatewaySourceSpec {
            seed,
            gateways,
            partitions,
            encoding,
            format: GatewayFormat::Json,
            start_ms: START_MS,
            stop_ms: Some(START_MS + 2 * DAY_MS),
            speedup: 1,
            report_interval_ms: 60_000,
            jitter_ms: 20_000,
            late_fraction: 0.05,
            max_delay_ms: 120_000,
        }
    }

    /// Every partition's records over `[start, end)`, made in steps of `step_ms`.
    fn produced(spec: &GatewaySourceSpec, start: i64, end: i64, step_ms: i64) -> Vec<serde_json::Value> {
        let mut values = Vec::new();
        for partition in 0..spec.partitions {
            let generator = GatewayGenerator::new(spec, partition);
            let mut from = start;
            while from < end {
                let mut out = RawRecords::new();
                generator.generate_simulated(from, (from + step_ms).min(end), &mut out, None);
                values.extend(out.iter().map(|record| serde_json::from_slice(record).expect("a JSON record")));
                from += step_ms;
            }
        }
        values
    }

    /// What a job computes, written as plainly as possible: each gateway's readings sorted by
    /// date, each counted with the formula of its encoding towards its own day.
    fn decode_naively(records: &[serde_json::Value], encoding: GatewayEncoding) -> BTreeMap<(i64, String), (f64, f64)> {
        let mut by_gateway: BTreeMap<String, Vec<(i64, f64, f64)>> = BTreeMap::new();
        for record in records {
            let id = record["gateway_id"].as_str().expect("gateway_id").to_string();
            let date = record["date"].as_i64().expect("date");
            let (tx, rx) = (record["ipTx"].as_f64().expect("ipTx"), record["ipRx"].as_f64().expect("ipRx"));
            by_gateway.entry(id).or_default().push((date, tx, rx));
        }
        let mut totals: BTreeMap<(i64, String), (f64, f64)> = BTreeMap::new();
        for (id, mut readings) in by_gateway {
            readings.sort_by_key(|reading| reading.0);
            let mut previous: Option<(i64, f64, f64)> = None;
            for (date, tx, rx) in readings {
                let traffic =
                    |value: f64, before: Option<f64>, elapsed_ms: Option<i64>| match (encoding, before, elapsed_ms) {
                        (GatewayEncoding::Counter, _, _) => value,
                        (_, None, _) | (_, _, None) => 0.0,
                        (GatewayEncoding::Cumulative, Some(before), _) => {
                            ((value as u64).wrapping_sub(before as u64) % (1 << 32)) as f64
                        }
                        (GatewayEncoding::Rate, _, Some(elapsed)) => value * elapsed as f64 / 1000.0,
                    };
                let elapsed = previous.map(|(before, _, _)| date - before);
                let entry = totals.entry((date.div_euclid(DAY_MS), id.clone())).or_default();
                entry.0 += traffic(tx, previous.map(|p| p.1), elapsed);
                entry.1 += traffic(rx, previous.map(|p| p.2), elapsed);
                previous = Some((date, tx, rx));
            }
        }
        totals
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        #[test]
        fn every_encoding_decoded_naively_gives_the_truth(
            seed in 0u64..10_000,
            gateways in 1u32..30,
            partitions in 1u32..4,
            step_ms in 60_000i64..20_000_000,
        ) {
            for encoding in GatewayEncoding::ALL {
                let spec = spec(seed, gateways, partitions, encoding);
                let end = spec.drained_ms().expect("stops");
                let truth = ground_truth(&spec, START_MS, end);
                let decoded = decode_naively(&produced(&spec, START_MS, end, step_ms), encoding);
                let all = |_: i64| true;
                let mismatches = check_totals(&decoded, &truth, tolerance(encoding), &all);
                prop_assert!(mismatches.is_empty(), "{:?}: {:?}", encoding, &mismatches[..mismatches.len().min(5)]);
            }
        }
    }

    #[test]
    fn counters_wrap_during_the_run_and_still_decode_exactly() {
        let spec = spec(3, 40, 2, GatewayEncoding::Cumulative);
        let end = spec.drained_ms().expect("stops");
        let records = produced(&spec, START_MS, end, 3_600_000);
        let mut last: BTreeMap<String, f64> = BTreeMap::new();
        let mut sorted: Vec<_> = records.iter().collect();
        sorted.sort_by_key(|record| record["date"].as_i64());
        let wraps = sorted
            .iter()
            .filter(|record| {
                let value = record["ipTx"].as_f64().expect("ipTx");
                let before = last.insert(record["gateway_id"].as_str().expect("id").to_string(), value);
                before.is_some_and(|before| value < before)
            })
            .count();
        assert!(wraps >= 10, "{wraps} wraps");
        let truth = ground_truth(&spec, START_MS, end);
        let decoded = decode_naively(&records, GatewayEncoding::Cumulative);
        assert_eq!(check_totals(&decoded, &truth, 0.0, &|_| true), Vec::<String>::new());
        // The check can fail: a counter reading lost takes its bytes with it.
        let spec = GatewaySourceSpec { encoding: GatewayEncoding::Counter, ..spec };
        let mut records = produced(&spec, START_MS, end, 3_600_000);
        let lost = records.iter().position(|record| record["ipTx"].as_f64() > Some(0.0)).expect("traffic");
        records.remove(lost);
        let decoded = decode_naively(&records, GatewayEncoding::Counter);
        assert_eq!(check_totals(&decoded, &truth, 0.0, &|_| true).len(), 1);
    }

    #[test]
    fn the_truth_of_a_range_sums_its_pieces_and_final_days_need_the_delay() {
        let spec = GatewaySourceSpec { stop_ms: None, ..spec(5, 25, 1, GatewayEncoding::Counter) };
        let middle = START_MS + 5 * 3_600_000;
        let end = START_MS + DAY_MS;
        let mut pieces = ground_truth(&spec, START_MS, middle);
        for (key, totals) in ground_truth(&spec, middle, end) {
            let entry = pieces.entry(key).or_default();
            entry.tx += totals.tx;
            entry.rx += totals.rx;
        }
        assert_eq!(pieces, ground_truth(&spec, START_MS, end));
        let day = day_of(START_MS);
        let day_end = (day + 1) * DAY_MS;
        assert!(!day_is_final(&spec, START_MS, day_end, day));
        assert!(day_is_final(&spec, START_MS, day_end + spec.max_delay_ms, day));
        assert!(!day_is_final(&spec, START_MS + 1, day_end + spec.max_delay_ms, day), "first readings missed");
    }

    fn row(day: i64, rank: u32, gateway_id: &str, total: f64) -> TopRow {
        TopRow { day, rank, gateway_id: gateway_id.into(), total }
    }

    #[test]
    fn top_k_ranks_by_total_then_id_and_the_checker_finds_what_differs() {
        let mut truth = Totals::new();
        for (id, tx, rx) in [("gw-3", 5, 5), ("gw-1", 4, 6), ("gw-2", 20, 0), ("gw-4", 1, 0)] {
            truth.insert((7, id.to_string()), DayTotals { tx, rx });
        }
        let expected = vec![("gw-2".to_string(), 20), ("gw-1".to_string(), 10), ("gw-3".to_string(), 10)];
        assert_eq!(top_k(&truth, 3)[&7], expected);
        let text = "{\"day\": 7, \"rank\": 1, \"gateway_id\": \"gw-2\", \"total\": 19, \"batch\": 1}\n\
                    {\"day\": 7, \"rank\": 1, \"gateway_id\": \"gw-2\", \"total\": 20}\n\
                    {\"day\": 7, \"rank\": 2, \"gateway_id\": \"gw-1\", \"total\": 10}\n\n\
                    {\"day\": 7, \"rank\": 3, \"gateway_id\": \"gw-3\", \"total\": 10}\n";
        let latest = latest_rows(&read_top_rows(text).expect("rows"));
        assert_eq!(check_top(&latest, &truth, 3, 0.0, &|_| true), Vec::<String>::new());
        // The tie broken the wrong way, a total off by one, a rank missing.
        let swapped = latest_rows(&[row(7, 1, "gw-2", 20.0), row(7, 2, "gw-3", 10.0), row(7, 3, "gw-1", 10.0)]);
        assert_eq!(check_top(&swapped, &truth, 3, 0.0, &|_| true).len(), 2);
        assert_eq!(check_top(&swapped, &truth, 3, RATE_TOLERANCE, &|_| true), Vec::<String>::new(), "tied within it");
        let off = latest_rows(&[row(7, 1, "gw-2", 21.0), row(7, 2, "gw-1", 10.0)]);
        let mismatches = check_top(&off, &truth, 3, 0.0, &|_| true);
        assert_eq!(mismatches.len(), 3, "{mismatches:?}");
        assert!(mismatches[1].contains("rank 1"), "{mismatches:?}");
        assert!(check_top(&off, &truth, 3, 0.0, &|_| false).is_empty(), "only final days are checked");
        let error = read_top_rows("{\"day\": 7}\n").expect_err("a row lacks fields").to_string();
        assert!(error.contains("line 1"), "{error}");
    }
}
