//! Hopping and session window jobs end to end through `StagePipeline`s (stage 0 → stage 1):
//! the columns they output, a session emitted once on hand-made rows, and the reduce stage's
//! state snapshotted and restored mid-stream giving the same rows as a run straight through.

use crate::pipeline::{StageInputData, StagePipeline};
use crate::RawRecords;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::RecordBatch;
use sleet_plan::*;

fn window_plan(window: WindowSpec) -> PhysicalPlan {
    let source = SourceSpec::Files(FileSourceSpec {
        path: "rows.jsonl".into(),
        max_records_per_partition_per_batch: 1_000,
        partitions: 1,
        start_bytes: Vec::new(),
    });
    let schema = Schema::new(vec![
        Field::new("k", DataType::Utf8),
        Field::new("t", DataType::Int64),
        Field::new("v", DataType::Int64),
    ]);
    let plan = PlanBuilder::source("windows", source)
        .decode_json(schema)
        .exchange(["k"], 1)
        .window_aggregate(window, ["k"], [Aggregate::count("n"), Aggregate::avg("v", "mean")])
        .sink(SinkSpec::Discard)
        .build()
        .expect("the plan is valid");
    plan_stages(&plan, true).expect("plans")
}

fn records(rows: &[(&str, i64, i64)]) -> RawRecords {
    let mut records = RawRecords::new();
    for (key, time, value) in rows {
        records.push(format!(r#"{{"k":"{key}","t":{time},"v":{value}}}"#).as_bytes());
    }
    records
}

struct Job {
    map: StagePipeline,
    reduce: StagePipeline,
}

/// One output row: (window_start, window_end, k, n, mean).
type Row = (i64, i64, String, i64, f64);

impl Job {
    fn new(physical: &PhysicalPlan) -> Job {
        let no_table = |_: &TableSpec| -> Result<RecordBatch, String> { unreachable!("no lookups") };
        Job {
            map: StagePipeline::new(&physical.stages[0], &no_table).expect("map stage"),
            reduce: StagePipeline::new(&physical.stages[1], &no_table).expect("reduce stage"),
        }
    }

    fn run(&mut self, rows: &[(&str, i64, i64)], batch: u64) -> Vec<Row> {
        let map = self.map.run(&StageInputData::Raw(records(rows)), batch).expect("map stage runs");
        let blocks = map.blocks.into_iter().map(|(_, block)| block).collect();
        let output =
            self.reduce.run(&StageInputData::Blocks { blocks, progress: None }, batch).expect("reduce stage runs");
        let Some(sink) = output.sink_rows else { return Vec::new() };
        let names: Vec<&str> = sink.schema_ref().fields().iter().map(|field| field.name().as_str()).collect();
        assert_eq!(names, ["window_start", "window_end", "k", "n", "mean"]);
        (0..sink.num_rows())
            .map(|row| {
                (
                    sink.column(0).as_primitive::<Int64Type>().value(row),
                    sink.column(1).as_primitive::<Int64Type>().value(row),
                    sink.column(2).as_string::<i32>().value(row).to_string(),
                    sink.column(3).as_primitive::<Int64Type>().value(row),
                    sink.column(4).as_primitive::<Float64Type>().value(row),
                )
            })
            .collect()
    }
}

const BATCHES: [&[(&str, i64, i64)]; 4] = [
    &[("a", 0, 1), ("a", 20, 3), ("b", 5, 10)],
    &[("a", 45, 5), ("b", 70, 20), ("a", 10, 2)],
    &[("a", 140, 7), ("b", 90, 30)],
    &[("b", 400, 0)],
];

/// Every batch's rows from a straight run, and from one whose reduce stage is restored from a
/// snapshot taken after batch 1.
fn straight_and_restored(physical: &PhysicalPlan) -> (Vec<Vec<Row>>, Vec<Vec<Row>>) {
    let mut straight = Job::new(physical);
    let mut restored = Job::new(physical);
    let (mut straight_rows, mut restored_rows) = (Vec::new(), Vec::new());
    for (batch, rows) in BATCHES.iter().enumerate() {
        straight_rows.push(straight.run(rows, batch as u64));
        restored_rows.push(restored.run(rows, batch as u64));
        if batch == 1 {
            let state = straight.reduce.snapshot_state().expect("the reduce stage keeps state");
            restored = Job::new(physical);
            restored.reduce.restore_state(&state).expect("restores");
        }
    }
    (straight_rows, restored_rows)
}

#[test]
fn a_session_job_emits_each_session_once_and_survives_a_restore() {
    let physical = window_plan(WindowSpec::session("t", 30, 0));
    assert!(
        physical.stages[0].ops.iter().all(|op| op.kind() != "partial_window_aggregate"),
        "no map-side partial before a session window"
    );
    let (straight, restored) = straight_and_restored(&physical);
    assert_eq!(straight, restored);
    let row = |start, end, key: &str, count, mean| (start, end, key.to_string(), count, mean);
    assert_eq!(
        straight,
        vec![
            vec![],
            vec![row(5, 35, "b", 1, 10.0)],
            vec![row(0, 75, "a", 4, 2.75), row(70, 120, "b", 2, 25.0)],
            vec![row(140, 170, "a", 1, 7.0)],
        ],
        "a's row at 10 is behind the watermark (20) but inside its open session"
    );
}

#[test]
fn a_hopping_job_combines_per_pane_and_survives_a_restore() {
    let physical = window_plan(WindowSpec::hopping("t", 100, 50, 0));
    assert_eq!(physical.stages[0].ops.last().map(PhysicalOp::kind), Some("partial_window_aggregate"));
    let (straight, restored) = straight_and_restored(&physical);
    assert_eq!(straight, restored);
    let last_of_a: Vec<&Row> = straight[1].iter().filter(|row| row.2 == "a").collect();
    assert_eq!(
        last_of_a,
        [&(-50, 50, "a".to_string(), 4, 2.75), &(0, 100, "a".to_string(), 4, 2.75)],
        "the rows at 0, 10, 20 and 45 are in both windows covering them"
    );
}
