//! `TopRowsExec` and its partial against a brute-force ranking of every accepted row.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use proptest::prelude::*;

use super::*;

const SIZE_MS: i64 = 100;

fn spec(k: u32, ranking: Ranking, lateness_ms: i64) -> TopRowsSpec {
    TopRowsSpec {
        group: vec!["w_start".into(), "w_end".into()],
        order_by: "price".into(),
        k,
        ranking,
        time_column: "t".into(),
        window_end_column: "w_end".into(),
        allowed_lateness_ms: lateness_ms,
        max_groups: 1_000,
    }
}

/// (event time, price, bidder); the window is the tumbling one of `SIZE_MS` holding the time.
type TestRow = (i64, Option<i64>, String);

/// A ranked output row: (price, bidder, time, rank), sorted by rank then row.
type Top = Vec<(i64, String, i64, i64)>;

fn window_end(time: i64) -> i64 {
    time.div_euclid(SIZE_MS) * SIZE_MS + SIZE_MS
}

fn to_batch(rows: &[TestRow]) -> RecordBatch {
    let ints = |values: Vec<Option<i64>>| Arc::new(Int64Array::from(values)) as ArrayRef;
    RecordBatch::try_from_iter([
        ("w_start", ints(rows.iter().map(|row| Some(window_end(row.0) - SIZE_MS)).collect())),
        ("w_end", ints(rows.iter().map(|row| Some(window_end(row.0))).collect())),
        ("t", ints(rows.iter().map(|row| Some(row.0)).collect())),
        ("price", ints(rows.iter().map(|row| row.1).collect())),
        (
            "bidder",
            Arc::new(arrow_array::StringArray::from(rows.iter().map(|row| row.2.as_str()).collect::<Vec<_>>()))
                as ArrayRef,
        ),
    ])
    .expect("rows")
}

/// Each window's top in one output, by window end.
fn tops(output: &RecordBatch) -> BTreeMap<i64, Top> {
    let mut found: BTreeMap<i64, Top> = BTreeMap::new();
    if output.num_rows() == 0 {
        // A batch with no input has no schema either.
        return found;
    }
    let int = |name: &str, row: usize| output.column_by_name(name).expect(name).as_primitive::<Int64Type>().value(row);
    let bidders = output.column_by_name("bidder").expect("bidder");
    for row in 0..output.num_rows() {
        found.entry(int("w_end", row)).or_default().push((
            int("price", row),
            bidders.as_string::<i32>().value(row).to_string(),
            int("t", row),
            int(RANK_COLUMN, row),
        ));
    }
    for top in found.values_mut() {
        top.sort_by(|a, b| (a.3, b.0, &a.1, a.2).cmp(&(b.3, a.0, &b.1, b.2)));
    }
    found
}

/// The reference: a batch's rows are accepted unless their window ended by the watermark at
/// the batch's start (the largest accepted time before it, less the lateness); each window's
/// top is ranked from scratch over all its accepted rows, a rank by its definition.
fn reference(batches: &[Vec<TestRow>], k: usize, ranking: Ranking, lateness_ms: i64) -> BTreeMap<i64, Top> {
    let mut accepted: BTreeMap<i64, Vec<(i64, String, i64)>> = BTreeMap::new();
    let mut max_time: Option<i64> = None;
    for batch in batches {
        let watermark = max_time.map(|max| max - lateness_ms);
        for (time, price, bidder) in batch {
            let Some(price) = price else { continue };
            if watermark.is_some_and(|watermark| window_end(*time) <= watermark) {
                continue;
            }
            max_time = Some(max_time.map_or(*time, |max| max.max(*time)));
            accepted.entry(window_end(*time)).or_default().push((*price, bidder.clone(), *time));
        }
    }
    let mut tops = BTreeMap::new();
    for (end, mut rows) in accepted {
        // The rows' total order is their columns in schema order: start, end, t, price, bidder.
        rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)).then(a.1.cmp(&b.1)));
        let mut top = Top::new();
        for (position, (price, bidder, time)) in rows.iter().enumerate() {
            let rank = match ranking {
                Ranking::RowNumber => position as i64 + 1,
                Ranking::Rank => 1 + rows.iter().filter(|other| other.0 > *price).count() as i64,
            };
            if rank <= k as i64 {
                top.push((*price, bidder.clone(), *time, rank));
            }
        }
        top.sort_by(|a, b| (a.3, b.0, &a.1, a.2).cmp(&(b.3, a.0, &b.1, b.2)));
        tops.insert(end, top);
    }
    tops
}

/// How a run feeds the operator: each batch cut into `blocks` blocks, ranked map-side first
/// by one partial per block when `partial`, and the state snapshotted and restored into a new
/// operator after batch `cut`.
struct Feeding {
    blocks: usize,
    partial: bool,
    cut: Option<usize>,
}

/// The last top each window emitted.
fn run(batches: &[Vec<TestRow>], spec: &TopRowsSpec, feeding: &Feeding) -> BTreeMap<i64, Top> {
    let input = if feeding.partial { AggregateInput::Partials } else { AggregateInput::Rows };
    let mut exec = TopRowsExec::new(spec.clone(), input);
    let mut partial = PartialTopRowsExec::new(spec.clone());
    let mut last: BTreeMap<i64, Top> = BTreeMap::new();
    for (index, batch) in batches.iter().enumerate() {
        let size = batch.len().div_ceil(feeding.blocks).max(1);
        let mut blocks: Vec<RecordBatch> = batch.chunks(size).map(to_batch).collect();
        if feeding.partial {
            blocks = blocks.iter().map(|block| partial.execute(block).expect("partial").rows).collect();
        }
        let output = exec.process(&blocks).expect("process");
        last.extend(tops(&output.rows));
        if feeding.cut == Some(index) {
            let bytes = exec.snapshot();
            let size = exec.size();
            exec = TopRowsExec::new(spec.clone(), input);
            exec.restore(&bytes).expect("restore");
            assert_eq!(exec.snapshot(), bytes, "a restored state snapshots as it was");
            assert_eq!(exec.size().keys, size.keys);
        }
    }
    last
}

fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<TestRow>>> {
    // Few prices, so ties are common; a few bidders, so whole rows repeat; times within
    // a few windows and often behind the largest, so some rows are late.
    let row = (0i64..400, proptest::option::weighted(0.95, 0i64..5), "[a-c]");
    proptest::collection::vec(proptest::collection::vec(row, 0..25), 1..10)
}

proptest! {
    #[test]
    fn the_last_top_of_each_window_is_the_brute_force_ranking_of_its_rows(
        batches in arbitrary_batches(),
        k in 1u32..4,
        rank: bool,
        partial: bool,
        blocks in 1usize..4,
        lateness_ms in prop_oneof![Just(0i64), Just(50), Just(1_000)],
        cut in proptest::option::of(0usize..10),
    ) {
        let ranking = if rank { Ranking::Rank } else { Ranking::RowNumber };
        let spec = spec(k, ranking, lateness_ms);
        let found = run(&batches, &spec, &Feeding { blocks, partial, cut });
        prop_assert_eq!(found, reference(&batches, k as usize, ranking, lateness_ms));
    }

    #[test]
    fn the_partial_changes_no_output_and_snapshots_change_nothing(
        batches in arbitrary_batches(), k in 1u32..4, rank: bool, cut in 0usize..10
    ) {
        let ranking = if rank { Ranking::Rank } else { Ranking::RowNumber };
        let spec = spec(k, ranking, 50);
        let plain = run(&batches, &spec, &Feeding { blocks: 1, partial: false, cut: None });
        let combined = run(&batches, &spec, &Feeding { blocks: 3, partial: true, cut: Some(cut) });
        prop_assert_eq!(plain, combined);
    }
}

fn row(time: i64, price: i64, bidder: &str) -> TestRow {
    (time, Some(price), bidder.to_string())
}

#[test]
fn rank_keeps_every_tie_and_row_number_breaks_them_by_the_row() {
    let rows = [row(10, 7, "b"), row(20, 9, "a"), row(30, 7, "a"), row(40, 3, "c")];
    let mut exec = TopRowsExec::new(spec(2, Ranking::Rank, 0), AggregateInput::Rows);
    let ranked = tops(&exec.process(&[to_batch(&rows)]).expect("rank").rows);
    let expected = vec![(9, "a".into(), 20, 1), (7, "a".into(), 30, 2), (7, "b".into(), 10, 2)];
    assert_eq!(ranked[&100], expected, "both 7s share second place");
    let mut exec = TopRowsExec::new(spec(2, Ranking::RowNumber, 0), AggregateInput::Rows);
    let numbered = tops(&exec.process(&[to_batch(&rows)]).expect("row number").rows);
    assert_eq!(numbered[&100], vec![(9, "a".into(), 20, 1), (7, "b".into(), 10, 2)], "t = 10 comes before t = 30");
}

#[test]
fn a_window_is_emitted_only_when_its_top_changes_and_forgotten_once_the_watermark_passes_it() {
    let mut exec = TopRowsExec::new(spec(1, Ranking::Rank, 100), AggregateInput::Rows);
    let first = exec.process(&[to_batch(&[row(10, 5, "a"), row(150, 1, "b")])]).expect("first");
    assert_eq!(first.rows.num_rows(), 2);
    assert_eq!((exec.size().keys, exec.groups.len()), (2, 2));
    let second = exec.process(&[to_batch(&[row(20, 4, "c")])]).expect("second");
    assert_eq!(second.rows.num_rows(), 0, "a lower price changes no top");
    let third = exec.process(&[to_batch(&[row(205, 6, "d")])]).expect("third");
    assert_eq!(third.counts.expired_keys, 1, "the watermark 105 passed the first window's end, 100");
    assert_eq!((exec.size().keys, exec.groups.len()), (2, 2), "b's window and d's remain");
    let fourth = exec.process(&[to_batch(&[row(99, 9, "e")])]).expect("fourth");
    assert_eq!(fourth.counts.late_rows_dropped, 1);
    assert_eq!(fourth.rows.num_rows(), 0);
}

#[test]
fn the_partial_keeps_each_groups_top_with_the_groups_latest_time() {
    let mut partial = PartialTopRowsExec::new(spec(1, Ranking::Rank, 0));
    let batch =
        to_batch(&[row(10, 5, "a"), row(90, 1, "b"), row(30, 5, "c"), row(150, 2, "d"), (95, None, "e".into())]);
    let output = partial.execute(&batch).expect("partial");
    assert_eq!(output.counts.invalid_rows_dropped, 1, "a row without a price");
    let times: Vec<i64> = output
        .rows
        .column_by_name(PARTIAL_MAX_EVENT_TIME_COLUMN)
        .expect("times")
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    let bidders: Vec<&str> =
        output.rows.column_by_name("bidder").expect("bidder").as_string::<i32>().iter().flatten().collect();
    assert_eq!(bidders, ["a", "c", "d"], "the two tied at 5, then the next window's one row");
    assert_eq!(times, [90, 90, 150], "window 0's latest time is b's, which ranks below");
}

#[test]
fn new_windows_past_the_bound_are_refused_until_one_closes() {
    let mut exec = TopRowsExec::new(TopRowsSpec { max_groups: 1, ..spec(1, Ranking::Rank, 0) }, AggregateInput::Rows);
    let first = exec.process(&[to_batch(&[row(10, 5, "a"), row(110, 5, "b")])]).expect("first");
    assert_eq!(first.counts.refused_rows, 1);
    let second = exec.process(&[to_batch(&[row(120, 5, "b")])]).expect("second");
    assert_eq!(second.counts.refused_rows, 0, "the first window closed at the end of the last batch");
    assert_eq!(tops(&second.rows)[&200], vec![(5, "b".into(), 120, 1)]);
}

#[test]
fn restore_rejects_damaged_bytes_without_panicking() {
    let mut exec = TopRowsExec::new(spec(2, Ranking::Rank, 100), AggregateInput::Rows);
    exec.process(&[to_batch(&[row(10, 5, "a"), row(20, 5, "b"), row(150, 1, "c")])]).expect("process");
    let bytes = exec.snapshot();
    for cut in 0..bytes.len() {
        let mut restored = TopRowsExec::new(spec(2, Ranking::Rank, 100), AggregateInput::Rows);
        assert!(restored.restore(&bytes[..cut]).is_err(), "truncated at {cut}");
    }
}
