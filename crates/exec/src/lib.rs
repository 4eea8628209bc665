//! Operators and expression evaluation over Arrow `RecordBatch`es. No I/O. The one clock read is
//! `StagePipeline::run_rows` timing the map-side combine with a monotonic `Instant`: the combine
//! runs between other operators, so a caller could not time it apart, and the what-if for turning
//! it off needs its time. Nothing here depends on the wall clock.
//!
//! ```text
//!  RawRecords ──json::JsonDecoder──▶ RecordBatch ─┬─▶ dead letters (record, reason)
//!            (or avro::AvroDecoder)               ▼
//!        ops::FilterExec / ProjectExec / LookupExec (Arrow compute kernels)
//!                                                 ▼
//!        window::PartialWindowAggregateExec ──partition::partition_batch──▶ blocks
//!                                                                            │ shuffle
//!        blocks ──concat──▶ window::WindowAggregateExec (keyed state) ──▶ updates
//!               (session windows: rows ──▶ session::SessionWindowAggregateExec ──▶ closed sessions)
//!
//!  keyed state across batches (any stage; snapshots joined by state.rs, event time and TTL
//!  kept by state_clock.rs):
//!        increments::IncrementsExec     readings ──▶ increments (+ corrections)
//!        keyed_aggregate::KeyedAggregateExec  rows ──▶ changed keys' totals
//!        top_k::TopKExec                totals ──▶ changed groups' rankings
//!        top_rows::TopRowsExec          rows ──▶ changed windows' top rows
//!                 (map side: top_rows::PartialTopRowsExec, each batch's top rows per window)
//!        window_join::WindowJoinExec    both sides' rows ──▶ pairs of one window and key
//! ```
//!
//! `pipeline::StagePipeline` strings these together for one stage of a physical plan.

mod aggregate;
pub mod avro;
mod cell;
mod changelog;
pub mod decoder;
pub mod error;
pub mod expr_eval;
pub mod increments;
pub mod json;
pub mod key;
pub mod keyed_aggregate;
pub mod ops;
pub mod partition;
pub mod partition_progress;
pub mod pipeline;
mod ranking;

pub mod records;
mod scalar_functions;
pub mod session;
pub mod state;
mod state_clock;
pub mod top_k;
pub mod top_rows;
pub mod types;
pub mod window;
pub mod window_join;
#[cfg(test)]
mod window_testing;

pub use error::ExecError;
pub use records::RawRecords;

#[cfg(test)]
mod api_tests;
