//! A lean, blocking Kafka client with exactly what sleet needs: cluster metadata, offsets,
//! fetching a partition by offset range (with `read_committed`), creating topics, an
//! idempotent producer and a transactional one. No consumer groups: a direct source assigns itself partitions and
//! keeps its own positions (DESIGN §4.5).
//!
//! Message types come from the `kafka-protocol` crate; record batches are parsed and built
//! here, in place, because the per-record cost of a general client is more than the rest of
//! a ysb pipeline (see `../shared/FACTS.md`).

pub mod admin;
pub mod batch_builder;
pub mod cluster;
pub mod connection;
pub mod error;
pub mod fetch;
pub mod offsets;
pub mod producer;
pub mod records;
pub mod retry;
pub mod transaction;
mod versions;

pub use error::KafkaError;
