//! The per-row key encoding (`sleet_exec::key`) against the `arrow-row` crate on the same keys,
//! each followed by the hash a group table takes of the bytes, and the exchange's partition hash.

use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_row::{RowConverter, SortField};
use criterion::{BenchmarkId, Criterion, Throughput};
use rustc_hash::FxBuildHasher;
use sleet_exec::key::KeyColumns;
use sleet_exec::partition::partition_of_row;

use crate::events::{campaign_rows, mix};

const ROWS: u64 = 4096;

/// The ysb grouping key (a campaign id), and a two-column key (campaign id, an integer) for a
/// wider one.
fn key_sets() -> Vec<(&'static str, Vec<ArrayRef>)> {
    let rows: RecordBatch = campaign_rows(ROWS);
    let campaign = Arc::clone(rows.column(0));
    let numbers: Int64Array = (0..ROWS).map(|row| (mix(row) % 1000) as i64).collect();
    vec![("utf8", vec![Arc::clone(&campaign)]), ("utf8_int64", vec![campaign, Arc::new(numbers) as ArrayRef])]
}

pub fn encode_and_hash(c: &mut Criterion) {
    let mut group = c.benchmark_group("key_encode_hash");
    group.throughput(Throughput::Elements(ROWS));
    for (name, columns) in key_sets() {
        group.bench_with_input(BenchmarkId::new("sleet", name), &columns, |b, columns| {
            let mut key = Vec::with_capacity(64);
            b.iter(|| {
                let keys = KeyColumns::new(columns);
                let mut sum = 0u64;
                for row in 0..ROWS as usize {
                    key.clear();
                    keys.encode(row, &mut key);
                    sum = sum.wrapping_add(FxBuildHasher.hash_one(key.as_slice()));
                }
                sum
            })
        });
        let fields = columns.iter().map(|column| SortField::new(column.data_type().clone())).collect();
        let converter = RowConverter::new(fields).expect("arrow-row supports the key types");
        group.bench_with_input(BenchmarkId::new("arrow_row", name), &columns, |b, columns| {
            // Reused across batches, as a stage would reuse it.
            let mut rows = converter.empty_rows(ROWS as usize, ROWS as usize * 64);
            b.iter(|| {
                rows.clear();
                converter.append(&mut rows, columns).expect("same types as the converter's");
                let mut sum = 0u64;
                for row in rows.iter() {
                    sum = sum.wrapping_add(FxBuildHasher.hash_one(row.as_ref()));
                }
                sum
            })
        });
    }
    group.finish();
}

/// The exchange's hash of a row's key to its reduce partition.
pub fn partition(c: &mut Criterion) {
    let mut group = c.benchmark_group("partition_hash");
    group.throughput(Throughput::Elements(ROWS));
    for (name, columns) in key_sets() {
        group.bench_with_input(BenchmarkId::new("fnv", name), &columns, |b, columns| {
            b.iter(|| (0..ROWS as usize).map(|row| partition_of_row(columns, row, 16) as u64).sum::<u64>())
        });
    }
    group.finish();
}
