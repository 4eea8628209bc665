//! The home-gateway job's plan, end to end through `StagePipeline`s (stage 0 → partition →
//! stage 1) on hand-made readings whose top-k is computed by hand below: cumulative counters
//! (one wrapping at 2^32), a late reading folded in, and a snapshot of both stateful stages
//! restored mid-stream.

use std::collections::BTreeSet;

use crate::pipeline::{StageInputData, StagePipeline};
use crate::RawRecords;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::RecordBatch;
use sleet_plan::*;

const DAY_MS: i64 = 86_400_000;

fn gateway_plan() -> Plan {
    let source = SourceSpec::Files(FileSourceSpec {
        path: "gateways.jsonl".into(),
        max_records_per_partition_per_batch: 1_000,
        partitions: 1,
        start_bytes: Vec::new(),
    });
    let schema = Schema::new(vec![
        Field::new("gateway_id", DataType::Utf8),
        Field::new("date", DataType::Int64),
        Field::new("ipTx", DataType::Float64),
        Field::new("ipRx", DataType::Float64),
    ]);
    PlanBuilder::source("gateway", source)
        .decode_json(schema)
        .increments(IncrementsSpec {
            keys: vec!["gateway_id".into()],
            time_column: "date".into(),
            encoding: ReadingEncoding::Cumulative,
            columns: vec!["ipTx".into(), "ipRx".into()],
            late: LatePolicy::Fold,
            allowed_lateness_ms: 120_000,
            ttl_ms: 2 * DAY_MS,
            wrap_bits: 32,
            max_keys: 1_000,
        })
        .project_named([
            (col("gateway_id"), "gateway_id"),
            (col("date"), "date"),
            (col("date").divide(lit(DAY_MS)), "day"),
            (col("ipTx").add(col("ipRx")), "bytes"),
        ])
        .exchange(["day"], 2)
        .keyed_aggregate(KeyedAggregateSpec {
            keys: vec!["day".into(), "gateway_id".into()],
            aggregates: vec![Aggregate::sum("bytes", "total")],
            time_column: "date".into(),
            ttl_ms: 2 * DAY_MS,
            max_keys: 1_000,
        })
        .top_k(TopKSpec {
            group: vec!["day".into()],
            keys: vec!["gateway_id".into()],
            order_by: "total".into(),
            k: 2,
            ranking: sleet_plan::Ranking::RowNumber,
            time_column: "date".into(),
            ttl_ms: 2 * DAY_MS,
            max_keys: 1_000,
        })
        .sink(SinkSpec::Discard)
        .build()
        .expect("the gateway plan is valid")
}

fn records(readings: &[(&str, i64, f64, f64)]) -> RawRecords {
    let mut records = RawRecords::new();
    for (id, date, tx, rx) in readings {
        records.push(format!(r#"{{"gateway_id":"{id}","date":{date},"ipTx":{tx},"ipRx":{rx}}}"#).as_bytes());
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

    /// Runs one batch through both stages; returns the top-k rows `(day, rank, gateway, total)`.
    fn run(&mut self, input: RawRecords, batch: u64) -> BTreeSet<(i64, i64, String, i64)> {
        let map = self.map.run(&StageInputData::Raw(input), batch).expect("map stage runs");
        assert!(map.dead_letters.is_empty());
        let mut rows = BTreeSet::new();
        for (partition, reduce) in self.reduce.iter_mut().enumerate() {
            let blocks: Vec<RecordBatch> =
                map.blocks.iter().filter(|(to, _)| *to as usize == partition).map(|(_, block)| block.clone()).collect();
            let output =
                reduce.run(&StageInputData::Blocks { blocks, progress: None }, batch).expect("reduce stage runs");
            let Some(sink) = output.sink_rows else { continue };
            let names: Vec<String> = sink.schema().fields().iter().map(|field| field.name().clone()).collect();
            assert_eq!(names, ["day", "rank", "gateway_id", "total"]);
            for row in 0..sink.num_rows() {
                rows.insert((
                    sink.column(0).as_primitive::<Int64Type>().value(row),
                    sink.column(1).as_primitive::<Int64Type>().value(row),
                    sink.column(2).as_string::<i32>().value(row).to_string(),
                    sink.column(3).as_primitive::<Float64Type>().value(row) as i64,
                ));
            }
        }
        rows
    }
}

fn ranked(rows: &[(i64, i64, &str, i64)]) -> BTreeSet<(i64, i64, String, i64)> {
    rows.iter().map(|(day, rank, id, total)| (*day, *rank, id.to_string(), *total)).collect()
}

#[test]
fn the_gateway_plan_ranks_each_days_gateways_by_their_traffic() {
    let physical = plan_stages(&gateway_plan(), true).expect("plans");
    assert_eq!(physical.stages.len(), 2);
    assert!(physical.stages.iter().all(StagePlan::is_stateful), "both stages keep state");

    let wrap = 4_294_967_296.0;
    // Day 0: g1 adds 150 then 200 (350); g2 wraps (+96 +100 tx, +10 rx = 206) then adds 220
    // (426); g3 adds 1000.
    let first = records(&[
        ("g1", 0, 0.0, 0.0),
        ("g2", 0, wrap - 96.0, 0.0),
        ("g3", 0, 0.0, 0.0),
        ("g1", 60_000, 100.0, 50.0),
        ("g2", 60_000, 100.0, 10.0),
        ("g3", 60_000, 1_000.0, 0.0),
        ("g1", 120_000, 300.0, 50.0),
        ("g2", 180_000, 300.0, 30.0),
    ]);
    // g2's late reading at 120 000 adds 110 and corrects the one at 180 000 by −110: its
    // total stays 426. g3 adds 5 on day 0; on day 1 g1 adds 110 (against its reading at
    // 120 000) and g3 adds 100.
    let second = records(&[
        ("g2", 120_000, 200.0, 20.0),
        ("g3", 120_000, 1_000.0, 5.0),
        ("g1", DAY_MS, 400.0, 60.0),
        ("g3", DAY_MS + 60_000, 1_100.0, 5.0),
    ]);
    let expected_first = ranked(&[(0, 1, "g3", 1_000), (0, 2, "g2", 426)]);
    let expected_second = ranked(&[(0, 1, "g3", 1_005), (0, 2, "g2", 426), (1, 1, "g1", 110), (1, 2, "g3", 100)]);

    let mut straight = Job::new(&physical);
    assert_eq!(straight.run(first.clone(), 0), expected_first);

    // A recovery: every partition restored from the snapshots taken after batch 0.
    let mut restored = Job::new(&physical);
    restored.map.restore_state(&straight.map.snapshot_state().expect("map state")).expect("map restore");
    for (fresh, old) in restored.reduce.iter_mut().zip(&straight.reduce) {
        fresh.restore_state(&old.snapshot_state().expect("reduce state")).expect("reduce restore");
    }

    assert_eq!(straight.run(second.clone(), 1), expected_second);
    assert_eq!(restored.run(second, 1), expected_second);
}
