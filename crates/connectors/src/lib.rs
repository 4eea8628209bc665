//! Sources, static tables and sinks.
//!
//! ```text
//!  source::Source (one partition) ──read(batch range)──▶ RawRecords + SourceRange ──▶ worker
//!    └─ generator::Generator (seed, partition, time range), cpu
//!         ├─ ysb::YsbGenerator          ysb events at a fixed rate
//!         └─ numbers::NumbersGenerator  per batch, a fixed count of numbers summed per key
//!  table::load_table(TableSpec) ──▶ RecordBatch (broadcast to lookups)
//!  worker ──rows──▶ sink::Sink: encode (cpu) ──▶ write (its resource)
//!    └─ JsonLinesSink (part-<p>.jsonl or stdout, disk)
//!  worker ──bad records──▶ dead_letter::DeadLetterWriter
//! ```
//!
//! `ysb::ground_truth` and `numbers::expected_sums` compute from the generator functions
//! directly, never through JSON or the engine's operators, so tests can compare against them.

pub mod dead_letter;
pub mod error;
pub mod files;
pub mod generator;
pub mod numbers;
pub mod sink;
pub mod source;
pub mod table;
pub mod ysb;

pub use error::ConnectorError;
