//! A window join's plan, end to end through `StagePipeline`s (stage 0 → partition → stage 1)
//! on hand-made persons and auctions whose pairs are listed by hand below: the side and key
//! projected before the exchange, pairs emitted when their later row arrives (in either
//! order), a snapshot of the reduce stage restored mid-stream, and a late row dropped.

use std::collections::BTreeSet;

use crate::pipeline::{StageInputData, StagePipeline};
use crate::RawRecords;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use sleet_plan::*;

fn join_plan() -> Plan {
    let source = SourceSpec::Files(FileSourceSpec {
        path: "events.jsonl".into(),
        max_records_per_partition_per_batch: 1_000,
        partitions: 1,
        start_bytes: Vec::new(),
    });
    let schema = Schema::new(vec![
        Field::new("kind", DataType::Utf8),
        Field::new("id", DataType::Int64),
        Field::new("seller", DataType::Int64).nullable(),
        Field::new("t", DataType::Int64),
    ]);
    let (is_person, is_auction) = (col("kind").eq(lit("person")), col("kind").eq(lit("auction")));
    PlanBuilder::source("join", source)
        .decode_json(schema)
        .project_named([
            (Expr::case([(is_person.clone(), lit(true)), (is_auction.clone(), lit(false))], None), "side"),
            (Expr::case([(is_person, col("id")), (is_auction, col("seller"))], None), "key"),
            (col("t"), "t"),
            (col("id"), "id"),
        ])
        .filter(col("side").is_not_null())
        .exchange(["key"], 2)
        .window_join(WindowJoinSpec {
            window: WindowSpec::tumbling("t", 1_000, 0),
            side_column: "side".into(),
            key_column: "key".into(),
            left: vec![JoinColumn::new("id", "person")],
            right: vec![JoinColumn::new("id", "auction")],
            distinct: false,
            max_rows: 1_000,
        })
        .sink(SinkSpec::Discard)
        .build()
        .expect("the join plan is valid")
}

/// `(kind, id, seller, t)`; a person's seller is null.
fn records(events: &[(&str, i64, Option<i64>, i64)]) -> RawRecords {
    let mut records = RawRecords::new();
    for (kind, id, seller, t) in events {
        let seller = seller.map_or("null".to_string(), |seller| seller.to_string());
        records.push(format!(r#"{{"kind":"{kind}","id":{id},"seller":{seller},"t":{t}}}"#).as_bytes());
    }
    records
}

struct Job {
    map: StagePipeline,
    reduce: Vec<StagePipeline>,
}

impl Job {
    fn new(physical: &PhysicalPlan) -> Job {
        let no_table = |_: &TableSpec| -> Result<RecordBatch, String> { unreachable!("no lookups") };
        Job {
            map: StagePipeline::new(&physical.stages[0], &no_table).expect("map stage"),
            reduce: (0..2).map(|_| StagePipeline::new(&physical.stages[1], &no_table).expect("reduce")).collect(),
        }
    }

    /// Runs one batch through both stages; returns the pairs `(window_start, person, auction)`
    /// and the late rows dropped.
    fn run(&mut self, input: RawRecords, batch: u64) -> (BTreeSet<(i64, i64, i64)>, u64) {
        let map = self.map.run(&StageInputData::Raw(input), batch).expect("map stage runs");
        assert!(map.dead_letters.is_empty());
        let (mut pairs, mut late) = (BTreeSet::new(), 0);
        for (partition, reduce) in self.reduce.iter_mut().enumerate() {
            let blocks: Vec<RecordBatch> =
                map.blocks.iter().filter(|(to, _)| *to as usize == partition).map(|(_, block)| block.clone()).collect();
            let output =
                reduce.run(&StageInputData::Blocks { blocks, progress: None }, batch).expect("reduce stage runs");
            late += output.late_rows_dropped;
            let Some(sink) = output.sink_rows else { continue };
            let int = |index: usize, row: usize| sink.column(index).as_primitive::<Int64Type>().value(row);
            for row in 0..sink.num_rows() {
                assert!(pairs.insert((int(0, row), int(2, row), int(3, row))), "each pair once");
            }
        }
        (pairs, late)
    }
}

#[test]
fn the_join_plan_pairs_persons_and_auctions_of_a_window_once_across_a_restore() {
    let physical = plan_stages(&join_plan(), true).expect("plans");
    assert!(!physical.stages[0].is_stateful() && physical.stages[1].is_stateful());
    // Person 1 and auction 10 of window 0 pair at once; auction 11 (window 0, seller 2) waits
    // for person 2; person 3's auction is in the next window, so never pairs with it.
    let first = records(&[
        ("person", 1, None, 100),
        ("auction", 10, Some(1), 200),
        ("auction", 11, Some(2), 300),
        ("person", 3, None, 900),
        ("bid", 99, None, 950),
    ]);
    // Person 2 arrives and meets auction 11; auction 12 meets person 1; auction 13 is in window
    // 1000 with no one of seller 3 there. Auction 15 of seller 1 at 2500 moves the watermark of
    // the partition seller 1 hashes to (each partition keeps its own) past window 0, so
    // auction 14 of window 0, in the batch after, is late.
    let second = records(&[
        ("person", 2, None, 400),
        ("auction", 12, Some(1), 500),
        ("auction", 13, Some(3), 1_100),
        ("auction", 15, Some(1), 2_500),
    ]);
    let third = records(&[("auction", 14, Some(1), 600)]);

    let mut straight = Job::new(&physical);
    assert_eq!(straight.run(first, 0), (BTreeSet::from([(0, 1, 10)]), 0));
    let mut restored = Job::new(&physical);
    for (fresh, old) in restored.reduce.iter_mut().zip(&straight.reduce) {
        fresh.restore_state(&old.snapshot_state().expect("reduce state")).expect("reduce restore");
    }
    let expected = BTreeSet::from([(0, 2, 11), (0, 1, 12)]);
    assert_eq!(straight.run(second.clone(), 1), (expected.clone(), 0));
    assert_eq!(restored.run(second, 1), (expected, 0));
    assert_eq!(restored.run(third, 2), (BTreeSet::new(), 1));
}
