//! What the window aggregates' tests share: rows of a key `k`, an event time `t` and a value
//! `v`, the four aggregates over them, and random batches of such rows.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use proptest::prelude::*;
use sleet_plan::Aggregate;

/// (key, event time, value).
pub(crate) type TestRow = (String, i64, Option<i64>);

pub(crate) fn aggregates() -> Vec<Aggregate> {
    vec![Aggregate::count("n"), Aggregate::sum("v", "total"), Aggregate::min("v", "low"), Aggregate::max("v", "high")]
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
