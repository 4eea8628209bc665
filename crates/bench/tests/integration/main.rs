//! The benchmarks' integration tests: `sleet-bench` runs on local clusters of the `sleet`
//! binary, each checked against its workload's ground truth, with the process harness of the
//! product's tests (crates/cli/tests/common).
//!
//! One test binary rather than one per file, for the reasons crates/cli/tests/integration/
//! main.rs gives. Run one file's tests with a filter on its module, e.g.
//! `cargo test --release -p sleet-bench --test integration -- chaos::`.

#[path = "../../../cli/tests/common/mod.rs"]
mod common;

mod bench_cli;
mod chaos;
mod clarity;
mod kafka_bench;
mod schedulers;
mod ysb;
