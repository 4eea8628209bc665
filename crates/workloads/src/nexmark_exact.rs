//! Whether a Nexmark job's sink holds exactly the rows `nexmark_check` computes over the
//! events the job covered: every row as often as the ground truth has it, no other row. q3's
//! and q8's window joins emit a pair when its later row arrives, so the windows a run cuts
//! hold the pairs of the events it read, as the ground truth over those events does. The
//! bench (`sleet-bench nexmark`) and the integration tests judge runs of the SQL scripts
//! under `benchmarks/nexmark/` with it.
//!
//! q5's and q7's jobs emit a window's whole list (its busiest auctions, its highest bids) every
//! batch that changes it, so their sinks hold several lists per window, told apart by the batch each row's line names (a
//! window's rows all live in one reduce partition, which emits a window once per batch): the
//! list of a window's last batch is its answer, and those lists are what is compared.
//!
//! q1's price is float64 on both sides and is compared **bit for bit**: the engine and the
//! ground truth evaluate the same IEEE product (`price as f64 * 0.908`; every price is below
//! 2^53, so converting it is exact, and multiplication commutes), the sink writes the
//! shortest decimal that reads back as the same double, and the check reads that decimal
//! with Rust's correctly rounded parser rather than `serde_json::Value`'s (which may be an ulp
//! off without serde_json's `float_roundtrip`). Any difference, even of an ulp, is then a
//! change in how the engine computes or writes the value, which a tolerance would hide.

use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use sleet_durable::committed::{visit_json_lines, CommittedLine};
use sleet_durable::DurableError;
use sleet_plan::NexmarkSourceSpec;

use crate::nexmark_check::{self, BidRow, Q2Row, Q3Row, Q5Row, Q7Row, Q8Row};

/// A query whose sink can be judged, by its script's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    Q0,
    Q1,
    Q2,
    Q3,
    Q5,
    Q7,
    Q8,
}

impl Query {
    pub const ALL: [Query; 7] = [Query::Q0, Query::Q1, Query::Q2, Query::Q3, Query::Q5, Query::Q7, Query::Q8];

    pub fn name(self) -> &'static str {
        match self {
            Query::Q0 => "q0",
            Query::Q1 => "q1",
            Query::Q2 => "q2",
            Query::Q3 => "q3",
            Query::Q5 => "q5",
            Query::Q7 => "q7",
            Query::Q8 => "q8",
        }
    }
}

/// How many differing rows a verdict lists.
const MISMATCHES_SHOWN: usize = 10;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Exactness {
    pub exact: bool,
    pub rows_expected: usize,
    pub rows_found: usize,
    /// Rows the ground truth has more often than the sink.
    pub missing: usize,
    /// Rows the sink has more often than the ground truth.
    pub unexpected: usize,
    /// The first differing rows, in row order.
    pub first_mismatches: Vec<String>,
    pub definition: &'static str,
}

/// The sink under `results_dir` against `query` over the events of `spec` timed in
/// `[start_ms, end_ms)`.
pub fn check_sink(
    query: Query,
    spec: &NexmarkSourceSpec,
    start_ms: i64,
    end_ms: i64,
    results_dir: &Path,
) -> Result<Exactness> {
    let events = nexmark_check::events(spec, start_ms, end_ms);
    let read = || format!("reading {}'s sink rows under {}", query.name(), results_dir.display());
    Ok(match query {
        Query::Q0 => compare(nexmark_check::q0(&events), read_rows(results_dir, q0_row).with_context(read)?),
        Query::Q1 => {
            let expected = nexmark_check::q1(&events).into_iter().map(|row| Q1Key::from(&row)).collect();
            compare(expected, read_rows(results_dir, q1_row).with_context(read)?)
        }
        Query::Q2 => compare(nexmark_check::q2(&events), read_rows(results_dir, q2_row).with_context(read)?),
        Query::Q3 => compare(nexmark_check::q3(&events), read_rows(results_dir, q3_row).with_context(read)?),
        Query::Q8 => compare(nexmark_check::q8(&events), read_rows(results_dir, q8_row).with_context(read)?),
        Query::Q5 => {
            let emitted = read_rows(results_dir, q5_row).with_context(read)?;
            compare(nexmark_check::q5(&events), last_lists(emitted, |row: &Q5Row| row.window_start_ms))
        }
        Query::Q7 => {
            let emitted = read_rows(results_dir, q7_row).with_context(read)?;
            compare(nexmark_check::q7(&events), last_lists(emitted, |row: &Q7Row| row.window_start_ms))
        }
    })
}

/// q1's row with its price ordered and compared by its bits.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Q1Key {
    auction: i64,
    bidder: i64,
    price: ExactF64,
    date_time: i64,
    extra: String,
}

impl From<&nexmark_check::Q1Row> for Q1Key {
    fn from(row: &nexmark_check::Q1Row) -> Q1Key {
        Q1Key {
            auction: row.auction,
            bidder: row.bidder,
            price: ExactF64(row.price),
            date_time: row.date_time,
            extra: row.extra.clone(),
        }
    }
}

impl fmt::Debug for Q1Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Q1Row {{ auction: {}, bidder: {}, price: {:?}, date_time: {}, extra: {:?} }}",
            self.auction, self.bidder, self.price.0, self.date_time, self.extra
        )
    }
}

/// A float64 equal only to the same bits: the ordering `total_cmp` gives.
#[derive(Clone, Copy)]
struct ExactF64(f64);

impl PartialEq for ExactF64 {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for ExactF64 {}

impl PartialOrd for ExactF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ExactF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Every committed row of the sink, each line made a row by `row`.
fn read_rows<R>(dir: &Path, row: fn(&[u8]) -> Result<R, String>) -> Result<Vec<R>, DurableError> {
    let mut rows = Vec::new();
    visit_json_lines(dir, "part-", "sink", |line: CommittedLine<'_>| {
        let parsed = row(line.text).map_err(|reason| DurableError::Format {
            path: line.path.to_path_buf(),
            line: line.line,
            reason,
        })?;
        rows.push(parsed);
        Ok(())
    })?;
    Ok(rows)
}

fn q0_row(text: &[u8]) -> Result<BidRow, String> {
    #[derive(Deserialize)]
    struct Line {
        auction: i64,
        bidder: i64,
        price: i64,
        channel: String,
        url: String,
        date_time: i64,
        extra: String,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q0 row: {error}"))?;
    Ok(BidRow {
        auction: line.auction,
        bidder: line.bidder,
        price: line.price,
        channel: line.channel,
        url: line.url,
        date_time: line.date_time,
        extra: line.extra,
    })
}

fn q1_row(text: &[u8]) -> Result<Q1Key, String> {
    #[derive(Deserialize)]
    struct Line<'a> {
        auction: i64,
        bidder: i64,
        #[serde(borrow)]
        price: &'a RawValue,
        date_time: i64,
        extra: String,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q1 row: {error}"))?;
    let price =
        line.price.get().parse::<f64>().map_err(|error| format!("`price` {} is not a float64: {error}", line.price))?;
    Ok(Q1Key {
        auction: line.auction,
        bidder: line.bidder,
        price: ExactF64(price),
        date_time: line.date_time,
        extra: line.extra,
    })
}

fn q2_row(text: &[u8]) -> Result<Q2Row, String> {
    #[derive(Deserialize)]
    struct Line {
        auction: i64,
        price: i64,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q2 row: {error}"))?;
    Ok(Q2Row { auction: line.auction, price: line.price })
}

fn q3_row(text: &[u8]) -> Result<Q3Row, String> {
    #[derive(Deserialize)]
    struct Line {
        name: String,
        city: String,
        state: String,
        auction_id: i64,
        window_start: i64,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q3 row: {error}"))?;
    Ok(Q3Row {
        name: line.name,
        city: line.city,
        state: line.state,
        auction_id: line.auction_id,
        window_start_ms: line.window_start,
    })
}

fn q8_row(text: &[u8]) -> Result<Q8Row, String> {
    #[derive(Deserialize)]
    struct Line {
        id: i64,
        name: String,
        window_start: i64,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q8 row: {error}"))?;
    Ok(Q8Row { person_id: line.id, name: line.name, window_start_ms: line.window_start })
}

fn q5_row(text: &[u8]) -> Result<(u64, Q5Row), String> {
    #[derive(Deserialize)]
    struct Line {
        window_start: i64,
        auction: i64,
        num: i64,
        batch: u64,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q5 row: {error}"))?;
    Ok((line.batch, Q5Row { window_start_ms: line.window_start, auction: line.auction, bid_count: line.num }))
}

fn q7_row(text: &[u8]) -> Result<(u64, Q7Row), String> {
    #[derive(Deserialize)]
    struct Line {
        auction: i64,
        price: i64,
        bidder: i64,
        date_time: i64,
        extra: String,
        window_start: i64,
        batch: u64,
    }
    let line: Line = serde_json::from_slice(text).map_err(|error| format!("not a q7 row: {error}"))?;
    let row = Q7Row {
        window_start_ms: line.window_start,
        auction: line.auction,
        price: line.price,
        bidder: line.bidder,
        date_time: line.date_time,
        extra: line.extra,
    };
    Ok((line.batch, row))
}

/// Of rows emitted as whole lists per window, each with its batch: every window's rows of the
/// last batch that emitted it.
fn last_lists<R>(emitted: Vec<(u64, R)>, window_of: impl Fn(&R) -> i64) -> Vec<R> {
    let mut last: std::collections::BTreeMap<i64, (u64, Vec<R>)> = std::collections::BTreeMap::new();
    for (batch, row) in emitted {
        let list = last.entry(window_of(&row)).or_insert((batch, Vec::new()));
        if batch > list.0 {
            *list = (batch, Vec::new());
        }
        if batch == list.0 {
            list.1.push(row);
        }
    }
    last.into_values().flat_map(|(_, rows)| rows).collect()
}

/// The two multisets of rows compared by a merge of their sorted orders.
fn compare<R: Ord + fmt::Debug>(mut expected: Vec<R>, mut found: Vec<R>) -> Exactness {
    expected.sort();
    found.sort();
    let (rows_expected, rows_found) = (expected.len(), found.len());
    let (mut missing, mut unexpected, mut first_mismatches) = (0, 0, Vec::new());
    let mut note = |what: &str, row: &R| {
        if first_mismatches.len() < MISMATCHES_SHOWN {
            first_mismatches.push(format!("{what}: {row:?}"));
        }
    };
    let (mut expected, mut found) = (expected.iter().peekable(), found.iter().peekable());
    loop {
        match (expected.peek(), found.peek()) {
            (None, None) => break,
            (Some(want), Some(have)) if want == have => {
                expected.next();
                found.next();
            }
            (Some(want), Some(have)) if want < have => {
                missing += 1;
                note("missing from the sink", want);
                expected.next();
            }
            (Some(want), None) => {
                missing += 1;
                note("missing from the sink", want);
                expected.next();
            }
            (_, Some(have)) => {
                unexpected += 1;
                note("not in the ground truth", have);
                found.next();
            }
        }
    }
    Exactness {
        exact: missing == 0 && unexpected == 0,
        rows_expected,
        rows_found,
        missing,
        unexpected,
        first_mismatches,
        definition: "the sink's committed rows equal, as a multiset, sleet_workloads::nexmark_check's rows over the \
                     events of the batches that ran; q1's float64 price bit for bit; for q5 and q7, each window's rows of the \
                     last batch that emitted it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expected: &[(i64, i64)], found: &[(i64, i64)], missing: usize, unexpected: usize) {
        let rows = |pairs: &[(i64, i64)]| pairs.iter().map(|&(auction, price)| Q2Row { auction, price }).collect();
        let verdict = compare(rows(expected), rows(found));
        assert_eq!((verdict.missing, verdict.unexpected), (missing, unexpected), "{verdict:?}");
        assert_eq!(verdict.exact, missing == 0 && unexpected == 0);
        assert_eq!(verdict.first_mismatches.len(), (missing + unexpected).min(MISMATCHES_SHOWN));
    }

    #[test]
    fn the_same_rows_in_any_order_are_exact_and_a_row_twice_or_lost_is_not() {
        check(&[(1, 5), (2, 6), (2, 6)], &[(2, 6), (1, 5), (2, 6)], 0, 0);
        check(&[(1, 5), (2, 6)], &[(1, 5), (2, 6), (2, 6)], 0, 1);
        check(&[(1, 5), (2, 6)], &[(1, 5)], 1, 0);
        check(&[(1, 5)], &[(1, 7)], 1, 1);
        check(&[], &[], 0, 0);
        let many: Vec<(i64, i64)> = (0..30).map(|auction| (auction, 1)).collect();
        check(&many, &[], 30, 0);
    }

    #[test]
    fn of_q7_lists_only_each_windows_last_counts() {
        let row = |window_start_ms: i64, auction: i64| Q7Row {
            window_start_ms,
            auction,
            price: 9,
            bidder: 1,
            date_time: window_start_ms,
            extra: String::new(),
        };
        let emitted = vec![(3, row(0, 1)), (5, row(0, 2)), (5, row(0, 3)), (4, row(10, 7)), (2, row(0, 4))];
        let auctions: Vec<(i64, i64)> = last_lists(emitted, |row| row.window_start_ms)
            .iter()
            .map(|row| (row.window_start_ms, row.auction))
            .collect();
        assert_eq!(auctions, [(0, 2), (0, 3), (10, 7)], "batch 5's list of window 0, batch 4's of window 10");
        let line = br#"{"auction":1,"price":2,"bidder":3,"date_time":4,"extra":"x","window_start":0,"batch":7}"#;
        assert_eq!(q7_row(line).expect("a q7 row").0, 7);
        assert!(q7_row(br#"{"auction":1}"#).expect_err("fields missing").contains("q7"));
    }

    #[test]
    fn a_q1_price_reads_back_to_the_bits_written_and_an_ulp_off_differs() {
        let price = 1_234_567.0 * nexmark_check::DOLLAR_TO_EURO;
        let written = format!(
            r#"{{"auction":1,"bidder":2,"price":{},"date_time":3,"extra":"x","batch":0}}"#,
            serde_json::Number::from_f64(price).expect("finite")
        );
        let row = q1_row(written.as_bytes()).expect("a q1 row");
        assert_eq!(row.price.0.to_bits(), price.to_bits());
        let next = f64::from_bits(price.to_bits() + 1);
        assert!(ExactF64(price) != ExactF64(next) && ExactF64(price) < ExactF64(next));
        let error = q1_row(br#"{"auction":1,"bidder":2,"price":"a","date_time":3,"extra":"x"}"#).expect_err("a string");
        assert!(error.contains("price"), "{error}");
    }

    #[test]
    fn q3_and_q8_rows_read_the_sink_tables_columns() {
        let q3 = q3_row(br#"{"name":"p","city":"bend","state":"or","auction_id":7,"window_start":10000,"batch":3}"#);
        let expected =
            Q3Row { name: "p".into(), city: "bend".into(), state: "or".into(), auction_id: 7, window_start_ms: 10_000 };
        assert_eq!(q3.expect("a q3 row"), expected);
        let q8 = q8_row(br#"{"id":4,"name":"p","window_start":20000}"#).expect("a q8 row");
        assert_eq!(q8, Q8Row { person_id: 4, name: "p".into(), window_start_ms: 20_000 });
        assert!(q8_row(br#"{"id":4,"window_start":20000}"#).expect_err("no name").contains("q8"));
    }
}
