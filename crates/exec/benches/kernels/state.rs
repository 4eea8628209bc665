//! The keyed state across batches with the home-gateway job's shape: 1 000 gateways' cumulative
//! counters, one reading each a minute, into increments; (day, gateway) totals; the top 10 per day.
//! Each iteration is the next minute's batch, so every key is already held (the steady state).

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use sleet_exec::increments::IncrementsExec;
use sleet_exec::keyed_aggregate::KeyedAggregateExec;
use sleet_exec::top_k::TopKExec;
use sleet_plan::{Aggregate, IncrementsSpec, KeyedAggregateSpec, LatePolicy, ReadingEncoding, TopKSpec};

use crate::events::{id, mix};

const GATEWAYS: u64 = 1_000;
const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

/// Minute `minute`'s readings of every gateway, rows in a shuffled order and times jittered
/// within the minute, as they arrive.
fn readings(ids: &[String], minute: i64) -> RecordBatch {
    let order: Vec<usize> = {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|index| mix(*index as u64 ^ (minute as u64) << 20));
        order
    };
    let ids_column = StringArray::from(order.iter().map(|index| ids[*index].as_str()).collect::<Vec<_>>());
    let times = Int64Array::from(
        order
            .iter()
            .map(|index| minute * MINUTE_MS + (mix(*index as u64 + minute as u64) % 20_000) as i64)
            .collect::<Vec<_>>(),
    );
    let counter = |salt: u64| {
        Float64Array::from(
            order
                .iter()
                .map(|index| ((minute as u64 * 1_000 + mix(*index as u64 ^ salt) % 1_000) % (1 << 32)) as f64)
                .collect::<Vec<_>>(),
        )
    };
    RecordBatch::try_from_iter([
        ("gateway_id", Arc::new(ids_column) as ArrayRef),
        ("date", Arc::new(times) as ArrayRef),
        ("ipTx", Arc::new(counter(1)) as ArrayRef),
        ("ipRx", Arc::new(counter(2)) as ArrayRef),
    ])
    .expect("readings")
}

/// What the keyed aggregate sees: the day, the gateway, its bytes, the time.
fn totals_input(increments: &RecordBatch) -> RecordBatch {
    let times = increments.column(1).as_any().downcast_ref::<Int64Array>().expect("int64 times");
    let tx = increments.column(2).as_any().downcast_ref::<Float64Array>().expect("float64 tx");
    let rx = increments.column(3).as_any().downcast_ref::<Float64Array>().expect("float64 rx");
    let days = Int64Array::from(times.iter().map(|time| time.map(|time| time / DAY_MS)).collect::<Vec<_>>());
    let bytes: Float64Array = tx.iter().zip(rx.iter()).map(|(tx, rx)| Some(tx? + rx?)).collect();
    RecordBatch::try_from_iter([
        ("day", Arc::new(days) as ArrayRef),
        ("gateway_id", Arc::clone(increments.column(0))),
        ("bytes", Arc::new(bytes) as ArrayRef),
        ("date", Arc::clone(increments.column(1))),
    ])
    .expect("totals input")
}

pub fn gateway(c: &mut Criterion) {
    let ids: Vec<String> = (0..GATEWAYS).map(|index| id(7, index)).collect();
    let mut increments = IncrementsExec::new(IncrementsSpec {
        keys: vec!["gateway_id".into()],
        time_column: "date".into(),
        encoding: ReadingEncoding::Cumulative,
        columns: vec!["ipTx".into(), "ipRx".into()],
        late: LatePolicy::Fold,
        allowed_lateness_ms: 2 * MINUTE_MS,
        ttl_ms: 2 * DAY_MS,
        wrap_bits: 32,
        max_keys: 1_000_000,
    });
    let mut totals = KeyedAggregateExec::new(KeyedAggregateSpec {
        keys: vec!["day".into(), "gateway_id".into()],
        aggregates: vec![Aggregate::sum("bytes", "total")],
        time_column: "date".into(),
        ttl_ms: 2 * DAY_MS,
        max_keys: 1_000_000,
    });
    let mut top = TopKExec::new(TopKSpec {
        group: vec!["day".into()],
        keys: vec!["gateway_id".into()],
        order_by: "total".into(),
        k: 10,
        ranking: sleet_plan::Ranking::RowNumber,
        time_column: "date".into(),
        ttl_ms: 2 * DAY_MS,
        max_keys: 1_000_000,
    });
    // Warm up: every gateway has a history and a total.
    for minute in 0..4 {
        let output = increments.process(&[readings(&ids, minute)]).expect("increments");
        let changed = totals.process(&[totals_input(&output.rows)]).expect("totals");
        top.process(&[changed.updates]).expect("top-k");
    }
    let mut group = c.benchmark_group("gateway_state");
    group.throughput(Throughput::Elements(GATEWAYS));
    // Times must advance, so each iteration takes the next minute's readings, made (untimed)
    // by the setup.
    let mut minute = 4i64;
    group.bench_function(BenchmarkId::new("increments", GATEWAYS), |b| {
        b.iter_batched(
            || {
                minute += 1;
                readings(&ids, minute)
            },
            |batch| increments.process(&[batch]).expect("increments"),
            BatchSize::SmallInput,
        )
    });
    let day_rows = totals_input(&increments.process(&[readings(&ids, minute + 1)]).expect("increments").rows);
    group.bench_function(BenchmarkId::new("keyed_aggregate", GATEWAYS), |b| {
        b.iter(|| totals.process(std::slice::from_ref(&day_rows)).expect("totals"))
    });
    let changed = totals.process(std::slice::from_ref(&day_rows)).expect("totals").updates;
    group.bench_function(BenchmarkId::new("top_k", GATEWAYS), |b| {
        b.iter(|| top.process(std::slice::from_ref(&changed)).expect("top-k"))
    });
    group.finish();
}
