//! Encoding and decoding shuffle blocks of the shape a ysb exchange carries (window start,
//! campaign id, partial count, latest event time), at the sizes that matter: a few rows, where
//! the fixed cost per block rules, and many, where the per-row cost does.
//!
//! `cargo bench -p sleet-block --bench block_codec`; the figures are in `benchmarks/README.md`.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sleet_block::{decode_block, encode_block_into};

fn block(rows: usize) -> RecordBatch {
    let campaigns: StringArray =
        (0..rows).map(|row| Some(format!("{:08x}-0000-4000-8000-{:012x}", row * 7919, row))).collect();
    let numbers = |base: i64| Arc::new((0..rows as i64).map(|row| base + row).collect::<Int64Array>()) as ArrayRef;
    RecordBatch::try_from_iter([
        ("window_start", numbers(1_700_000_000_000)),
        ("campaign_id", Arc::new(campaigns) as ArrayRef),
        ("count", numbers(1)),
        ("__max_event_time", numbers(1_700_000_009_000)),
    ])
    .expect("columns of one length")
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("block_codec");
    for rows in [16usize, 1024] {
        let input = block(rows);
        group.throughput(Throughput::Elements(rows as u64));
        group.bench_with_input(BenchmarkId::new("encode", rows), &input, |b, input| {
            let mut out = Vec::new();
            b.iter(|| {
                out.clear();
                encode_block_into(input, &mut out).expect("plan types only");
                out.len()
            })
        });
        let mut bytes = Vec::new();
        encode_block_into(&input, &mut bytes).expect("plan types only");
        group.bench_with_input(BenchmarkId::new("decode", rows), &bytes, |b, bytes| {
            b.iter(|| decode_block(bytes).expect("the encoder's own bytes"))
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
