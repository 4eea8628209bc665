//! The product's integration tests: real `sleet` driver, worker, ingest and client processes
//! on 127.0.0.1, and a real Kafka broker where a test needs one (`scripts/test.sh` starts it).
//!
//! One test binary rather than one per file: each binary is a full link of the engine with
//! thin LTO in the release profile the tests run in, and binaries run one after another, so
//! a single one both builds faster and lets `--test-threads` keep two tests running across
//! what used to be separate files. Run one file's tests with a filter on its module,
//! e.g. `cargo test --release -p sleet-cli --test integration -- recovery::`.

/// Only this crate's tests drive a browser: the benchmarks' include `common` without it.
#[path = "../common/browser.rs"]
mod browser;
#[path = "../common/mod.rs"]
mod common;

mod cli;
mod console;
mod failures;
mod gateway;
mod gateway_job;
mod ingest;
mod kafka;
mod nexmark;
mod nexmark_sql;
mod recovery;
mod restart;
mod sql;
mod state_counters;
mod state_recovery;
mod tls;
mod watermark;
