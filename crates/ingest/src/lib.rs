//! `sleet ingest`: an HTTP and WebSocket server in front of a Kafka topic. Each record, JSON
//! or single-object Avro, is checked by the decoder the job runs
//! (`sleet_exec::json::JsonDecoder`, `sleet_exec::avro::AvroDecoder`), written keyed by
//! its key field to the partition Kafka's default partitioner picks, and acknowledged only
//! once Kafka has acknowledged it.
//!
//! ```text
//!  POST /v1/records ─┐                                    ┌─▶ 200 / ack  (Kafka has it)
//!  GET  /v1/stream  ─┼─▶ split ─▶ decoder check ────▶ InFlight ─▶ writer thread ─▶ Kafka
//!                    │     │ bad: 400 / nack            │ full: 503 / nack   (linger, one
//!                    │     ▼                            ▼                     batch per
//!                    └── nothing of the request is written                    partition)
//! ```
//!
//! Delivery is at least once: an acknowledged record is in Kafka (acks from every in-sync
//! replica), a refused one may or may not be, so a client that retries can duplicate.
//! `docs/ingest.md` is the user's guide.

mod admission;
pub mod args;
mod auth;
pub mod error;
pub mod format;
mod listener;
pub mod refusal;
pub mod server;
pub mod stats;
pub mod writer;
mod ws;

pub use args::IngestArgs;
pub use error::IngestError;
pub use server::{serve, shutdown_signal};
pub use stats::StatsReport;
