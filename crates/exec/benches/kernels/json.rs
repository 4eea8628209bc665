use criterion::{BenchmarkId, Criterion, Throughput};
use sleet_exec::json::JsonDecoder;
use sleet_plan::{DataType, Field, Schema};

use crate::events::{json_events, json_events_timestamped};

/// The ysb events' fields, decoded with the projection the ysb plan pushes into the decoder.
pub fn decode(c: &mut Criterion) {
    let utf8 = |name: &str| Field::new(name, DataType::Utf8);
    let schema = Schema::new(vec![
        utf8("user_id"),
        utf8("page_id"),
        utf8("ad_id"),
        utf8("ad_type"),
        utf8("event_type"),
        Field::new("event_time", DataType::Int64),
        utf8("ip_address"),
    ]);
    let projection = ["ad_id", "event_type", "event_time"].map(String::from);
    let decoder = JsonDecoder::new(&schema, &projection, 4096).expect("the projection names fields");
    let mut group = c.benchmark_group("json_decode");
    // About a ysb map task's input at 300 000 events/s in 100 ms batches on 2 partitions.
    let events = 10_000u64;
    let records = json_events(events);
    group.throughput(Throughput::Elements(events));
    group.bench_with_input(BenchmarkId::new("ysb_events", events), &records, |b, records| {
        b.iter(|| {
            let output = decoder.decode(records);
            assert!(output.dead_letters.is_empty());
            output.batch
        })
    });
    // The same events with their event time beside them, as a Kafka source hands over record
    // timestamps, and the decoder taking the column from there.
    let records = json_events_timestamped(events);
    let decoder = decoder.with_record_timestamps("event_time");
    group.bench_with_input(BenchmarkId::new("ysb_events_record_timestamps", events), &records, |b, records| {
        b.iter(|| {
            let output = decoder.decode(records);
            assert!(output.dead_letters.is_empty());
            output.batch
        })
    });
    group.finish();
}
