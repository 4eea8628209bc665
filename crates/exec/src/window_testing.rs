//! What the window aggregates' tests share: rows of a key `k`, an event time `t` and a value
//! `v`, the aggregates over them (from the engine's output, and by hand), and random batches
//! of such rows.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use proptest::prelude::*;
use sleet_plan::Aggregate;

use crate::partition_progress::MapProgress;

/// (key, event time, value).
pub(crate) type TestRow = (String, i64, Option<i64>);

/// Every aggregate a map-side partial can take.
pub(crate) fn aggregates() -> Vec<Aggregate> {
    vec![
        Aggregate::count("n"),
        Aggregate::sum("v", "total"),
        Aggregate::min("v", "low"),
        Aggregate::max("v", "high"),
        Aggregate::avg("v", "mean"),
    ]
}

/// `aggregates()` and a distinct count, which no partial takes.
pub(crate) fn all_aggregates() -> Vec<Aggregate> {
    let mut all = aggregates();
    all.push(Aggregate::count_distinct("v", "distinct"));
    all
}

/// (count, sum, min, max, mean, distinct count) of one window and key; the distinct count is
/// `None` when the aggregate was not asked for.
pub(crate) type Aggregates = (i64, Option<i64>, Option<i64>, Option<i64>, Option<f64>, Option<i64>);

/// By hand, from the values of the rows in one window and key.
pub(crate) fn aggregates_of(values: &[Option<i64>], with_distinct: bool) -> Aggregates {
    let present: Vec<i64> = values.iter().flatten().copied().collect();
    let sum = (!present.is_empty()).then(|| present.iter().sum::<i64>());
    let mean = sum.map(|sum| sum as f64 / present.len() as f64);
    let distinct = with_distinct.then(|| present.iter().collect::<BTreeSet<_>>().len() as i64);
    (values.len() as i64, sum, present.iter().min().copied(), present.iter().max().copied(), mean, distinct)
}

/// From row `row` of a window aggregate's output, by column name.
pub(crate) fn output_aggregates(updates: &RecordBatch, row: usize) -> Aggregates {
    let int = |name: &str| {
        let array = updates.column_by_name(name)?.as_primitive::<Int64Type>();
        (!array.is_null(row)).then(|| array.value(row))
    };
    let means = updates.column_by_name("mean").expect("mean").as_primitive::<Float64Type>();
    let mean = (!means.is_null(row)).then(|| means.value(row));
    (int("n").expect("count"), int("total"), int("low"), int("high"), mean, int("distinct"))
}

pub(crate) fn rows(input: &[(&str, i64, Option<i64>)]) -> RecordBatch {
    RecordBatch::try_from_iter([
        ("k", Arc::new(StringArray::from(input.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef),
        ("t", Arc::new(Int64Array::from(input.iter().map(|r| r.1).collect::<Vec<_>>())) as ArrayRef),
        ("v", Arc::new(Int64Array::from(input.iter().map(|r| r.2).collect::<Vec<_>>())) as ArrayRef),
    ])
    .expect("rows")
}

pub(crate) fn to_batch(batch: &[TestRow]) -> RecordBatch {
    let borrowed: Vec<(&str, i64, Option<i64>)> = batch.iter().map(|(k, t, v)| (k.as_str(), *t, *v)).collect();
    rows(&borrowed)
}

/// Up to 8 batches of up to 30 rows of keys `a` to `c`. Batch `b`'s times are drawn from
/// `[b·step, b·step + span)`: they mostly increase batch to batch, some reaching back (late
/// or not).
pub(crate) fn arbitrary_batches(span: i64, step: i64) -> impl Strategy<Value = Vec<Vec<TestRow>>> {
    proptest::collection::vec(
        proptest::collection::vec(("[a-c]", 0..span, proptest::option::of(-20i64..20)), 0..30),
        1..8,
    )
    .prop_map(move |batches| {
        batches
            .into_iter()
            .enumerate()
            .map(|(index, batch)| batch.into_iter().map(|(k, t, v)| (k, t + index as i64 * step, v)).collect())
            .collect()
    })
}

/// Batch by batch, each source partition's rows: `[batch][partition]`.
pub(crate) type PartitionedBatches = Vec<Vec<Vec<TestRow>>>;

/// Three partitions, each moving its own event time forward by a random step every
/// batch (so one may run far ahead of another), its rows out of order by at most
/// `lateness` behind the largest time it has sent.
pub(crate) fn drifting_partitions(lateness: i64) -> impl Strategy<Value = PartitionedBatches> {
    let partition_batch =
        (0i64..400, prop::collection::vec(("[a-c]", 0i64..=1_000, prop::option::of(-20i64..20)), 0..6));
    prop::collection::vec(prop::collection::vec(partition_batch, 3), 1..20).prop_map(move |batches| {
        let mut clocks = [0i64; 3];
        batches
            .into_iter()
            .map(|partitions| {
                partitions
                    .into_iter()
                    .enumerate()
                    .map(|(partition, (step, rows))| {
                        clocks[partition] += step;
                        rows.into_iter()
                            .map(|(key, jitter, value)| (key, clocks[partition] - jitter % (lateness + 1), value))
                            .collect()
                    })
                    .collect()
            })
            .collect()
    })
}

/// Each partition's largest event time in one batch of `drifting_partitions`, as its map task
/// reports it.
pub(crate) fn partitions_progress(partitions: &[Vec<TestRow>], batch_end_ms: i64) -> MapProgress {
    let event_times = partitions
        .iter()
        .enumerate()
        .filter_map(|(partition, rows)| Some((partition as u32, rows.iter().map(|row| row.1).max()?)))
        .collect();
    MapProgress { batch_end_ms, map_partitions: partitions.len() as u32, event_times }
}
