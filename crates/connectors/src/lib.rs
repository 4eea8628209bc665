//! Sources, static tables and sinks.
//!
//! ```text
//!  ysb::YsbGenerator (seed, partition, time range) ──JSON records──▶ RawRecords ──▶ worker
//!  table::load_table(TableSpec) ──▶ RecordBatch (broadcast to lookups)
//!  worker ──rows──▶ sink::format_json_lines ──▶ JsonLinesSink (part-<p>.jsonl)
//!  worker ──bad records──▶ dead_letter::DeadLetterWriter
//! ```
//!
//! `ysb::ground_truth` counts from the generator function directly, never through JSON or
//! the engine's operators, so tests can compare against it.

pub mod dead_letter;
pub mod error;
pub mod files;
pub mod sink;
pub mod table;
pub mod ysb;

pub use error::ConnectorError;
