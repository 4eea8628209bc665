//! Avro single-object decoding of gateway records beside JSON decoding of the same rows.
//!
//! Measured 2026-11-27 on the 2-core development VM under other builds (load average 7-9, the
//! bench at nice 19), `cargo bench -p sleet-exec --bench kernels -- gateway_decode`, 100
//! samples each, 10 000 records, all four columns: Avro 2.95 ms (3.39 M records/s, 95 %
//! interval 3.07-3.76 M), JSON 14.8 ms (674 K records/s, 610-746 K): Avro about 5x JSON.
//! Read the ratio more than the rates, which a quiet machine would raise.

use criterion::{BenchmarkId, Criterion, Throughput};
use sleet_avro::{RecordSchema, Value, GATEWAY_SCHEMA};
use sleet_exec::avro::AvroDecoder;
use sleet_exec::json::JsonDecoder;
use sleet_exec::RawRecords;
use sleet_plan::avro::decoded_schema;

/// `events` gateway readings, as Avro single-object records and as JSON lines of the same
/// values: 200 gateways, a reading every 10 ms, counters that grow by pseudo-random steps.
fn gateway_records(schema: &RecordSchema, events: u64) -> (RawRecords, RawRecords) {
    let (mut avro, mut json) = (RawRecords::new(), RawRecords::new());
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut encoded = Vec::new();
    for event in 0..events {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let id = format!("gw-{:05}", event % 200);
        let date = 1_700_000_000_000 + event as i64 * 10;
        let tx = (state >> 11) as f64 / 1024.0;
        let rx = (state >> 20) as f64 / 512.0;
        encoded.clear();
        let values = [Value::String(&id), Value::Long(date), Value::Double(tx), Value::Double(rx)];
        schema.encode_single_object(&values, &mut encoded).expect("the values fit the schema");
        avro.push(&encoded);
        let line = serde_json::json!({"gateway_id": id, "date": date, "ipTx": tx, "ipRx": rx}).to_string();
        json.push(line.as_bytes());
    }
    (avro, json)
}

pub fn decode(c: &mut Criterion) {
    let schema = RecordSchema::parse(GATEWAY_SCHEMA).expect("the shipped schema parses");
    let schema_json: serde_json::Value = serde_json::from_str(GATEWAY_SCHEMA).expect("JSON");
    let columns = decoded_schema(&schema);
    let projection: Vec<String> = columns.names().into_iter().map(String::from).collect();
    let avro_decoder = AvroDecoder::new(&schema_json, &projection, 4096).expect("the projection names fields");
    let json_decoder = JsonDecoder::new(&columns, &projection, 4096).expect("the projection names fields");
    let events = 10_000u64;
    let (avro, json) = gateway_records(&schema, events);
    let mut group = c.benchmark_group("gateway_decode");
    group.throughput(Throughput::Elements(events));
    group.bench_with_input(BenchmarkId::new("avro", events), &avro, |b, records| {
        b.iter(|| {
            let output = avro_decoder.decode(records);
            assert!(output.dead_letters.is_empty());
            output.batch
        })
    });
    group.bench_with_input(BenchmarkId::new("json", events), &json, |b, records| {
        b.iter(|| {
            let output = json_decoder.decode(records);
            assert!(output.dead_letters.is_empty());
            output.batch
        })
    });
    group.finish();
}
