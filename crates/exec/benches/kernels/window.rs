//! The window update on both sides of the exchange, with ysb's shape: count per campaign in
//! 10 s windows.

use criterion::{BenchmarkId, Criterion, Throughput};
use sleet_exec::window::{PartialWindowAggregateExec, WindowAggregateExec};
use sleet_plan::physical::AggregateInput;
use sleet_plan::{Aggregate, WindowSpec};

use crate::events::campaign_rows;

fn spec() -> (WindowSpec, Vec<String>, Vec<Aggregate>) {
    let window = WindowSpec::tumbling("event_time", 10_000, 0);
    (window, vec!["campaign_id".into()], vec![Aggregate::count("count")])
}

pub fn update(c: &mut Criterion) {
    let mut group = c.benchmark_group("window_update");
    // A map task's rows after the filter and the lookup.
    let rows = 4096u64;
    let input = campaign_rows(rows);
    let (window, keys, aggregates) = spec();
    let mut partial = PartialWindowAggregateExec::new(window.clone(), keys.clone(), aggregates.clone());
    group.throughput(Throughput::Elements(rows));
    group.bench_with_input(BenchmarkId::new("partial_rows", rows), &input, |b, input| {
        b.iter(|| partial.execute(input).expect("the columns are there"))
    });
    // A reduce task: the partial rows of four map tasks folded into the keyed state, every
    // key already there (the steady state inside a window).
    let blocks: Vec<_> = (0..4).map(|_| partial.execute(&input).expect("the columns are there")).collect();
    let partial_rows: u64 = blocks.iter().map(|block| block.num_rows() as u64).sum();
    let mut state = WindowAggregateExec::new(window, keys, aggregates, AggregateInput::Partials);
    let mut batch = 0u64;
    group.throughput(Throughput::Elements(partial_rows));
    group.bench_with_input(BenchmarkId::new("final_partials", partial_rows), &blocks, |b, blocks| {
        b.iter(|| {
            batch += 1;
            state.process(blocks, batch).expect("the columns are there")
        })
    });
    group.finish();
}
