//! Parsing a fetch response's record batches in place, uncompressed and lz4 (what sleet's
//! producer writes), with values of a ysb event's size.
//!
//! `cargo bench -p sleet-kafka --bench record_batches`; the figures are in `benchmarks/README.md`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sleet_kafka::batch_builder::{BatchBuilder, Codec, ProducerStamp};
use sleet_kafka::records::{parse_batches, AbortedTransactions};

const BATCHES: i64 = 20;
const RECORDS_PER_BATCH: i64 = 500;

/// `BATCHES` batches at consecutive offsets, as a broker returns them.
fn fetch_data(codec: Codec) -> Vec<u8> {
    let stamp = ProducerStamp { producer_id: -1, producer_epoch: -1, base_sequence: -1, transactional: false };
    let mut builder = BatchBuilder::new(codec);
    let mut data = Vec::new();
    for batch in 0..BATCHES {
        for record in 0..RECORDS_PER_BATCH {
            let offset = batch * RECORDS_PER_BATCH + record;
            let value = format!(
                "{{\"user_id\": \"{offset:036}\", \"page_id\": \"{:036}\", \"ad_id\": \"{:036}\", \
                 \"ad_type\": \"banner\", \"event_type\": \"view\", \"event_time\": \"{}\", \"ip_address\": \"1.2.3.4\"}}",
                offset * 31 % 1000,
                offset * 17 % 1000,
                1_700_000_000_000 + offset,
            );
            builder.push(1_700_000_000_000 + offset, None, value.as_bytes());
        }
        let start = data.len();
        builder.finish(stamp, &mut data);
        // The broker assigns base offsets; the CRC does not cover them.
        data[start..start + 8].copy_from_slice(&(batch * RECORDS_PER_BATCH).to_be_bytes());
    }
    data
}

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("kafka_record_batches");
    let records = (BATCHES * RECORDS_PER_BATCH) as u64;
    group.throughput(Throughput::Elements(records));
    for (name, codec) in [("none", Codec::None), ("lz4", Codec::Lz4)] {
        let data = fetch_data(codec);
        group.bench_with_input(BenchmarkId::new("parse", name), &data, |b, data| {
            let mut scratch = Vec::new();
            b.iter(|| {
                let mut bytes = 0usize;
                let parsed = parse_batches(
                    data,
                    0,
                    i64::MAX,
                    &mut AbortedTransactions::default(),
                    &mut scratch,
                    &mut |record| bytes += record.value.map_or(0, <[u8]>::len),
                )
                .expect("the builder's own batches");
                assert_eq!(parsed.records, records);
                bytes
            })
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
