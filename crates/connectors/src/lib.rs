//! Sources, static tables and sinks.
//!
//! ```text
//!  source::Source (one partition) ──read(batch range)──▶ RawRecords + SourceRange ──▶ worker
//!    ├─ generator::Generator (seed, partition, time range), cpu
//!    │    ├─ ysb::YsbGenerator          ysb events at a fixed rate
//!    │    ├─ numbers::NumbersGenerator  per batch, a fixed count of numbers summed per key
//!    │    ├─ gateway::GatewayGenerator  gateways' traffic readings, some late, by delivery time
//!    │    └─ nexmark::NexmarkGenerator  Nexmark's persons, auctions and bids, by event time
//!    ├─ kafka_source::KafkaSource       a topic partition by offset range, prefetched, net
//!    └─ file_source::FileSource         a JSON-lines file by byte range, disk
//!  open::open_source(spec, partition) ──▶ the source above (the one module that knows them all)
//!  resolve::resolve_source(spec)        partition counts looked up and checked at submission
//!  table::load_table(TableSpec) ──▶ RecordBatch (broadcast to lookups)
//!  worker ──rows──▶ sink::Sink: encode (cpu) ──▶ write (its resource)
//!    └─ JsonLinesSink (part-<p>.jsonl or stdout, disk)
//!  worker ──bad records──▶ dead_letter::DeadLetterWriter
//!  sinks name their files per attempt (sleet_durable::manifest::attempt_file_name); the driver's
//!  manifest says which rows count, and readers here trust only it (sleet_durable::committed)
//! ```
//!
//! The generators here are what a job runs; the results they must give (their ground truth)
//! are recomputed from the same functions in `sleet-workloads`, never through the engine.

pub mod dead_letter;
pub mod error;
pub mod file_source;
pub mod gateway;
pub mod generator;
pub mod kafka_source;
pub mod nexmark;
pub mod numbers;
pub mod open;
pub mod resolve;
pub mod sink;
pub mod source;
pub mod table;
pub mod ysb;

pub use error::ConnectorError;

/// For tests of writers and readers: a manifest that commits every batch of attempt 0.
#[cfg(test)]
pub(crate) fn commit_first_attempt(dir: &std::path::Path) {
    use sleet_durable::manifest::{write_manifest, CommitManifest, CommittedSegment};
    let segment = CommittedSegment { attempt: 0, first_batch: 0, last_batch: Some(u64::MAX) };
    write_manifest(dir, &CommitManifest { job: 0, segments: vec![segment], finished: true }).expect("manifest");
}
