//! A lean, blocking Kafka client with exactly what sleet needs: cluster metadata, offsets, fetching
//! a partition by offset range (with `read_committed`), creating topics, an idempotent producer and
//! a transactional one. No consumer groups: a direct source assigns itself partitions and keeps its
//! own positions (`docs/design/group-scheduling.md`, direct sources).
//!
//! Message types come from the `kafka-protocol` crate; record batches are parsed and built here, in
//! place, because a general client builds an object per record, and at millions of records per
//! second that per-record cost outweighs the rest of a ysb pipeline.

pub mod admin;
pub mod batch_builder;
pub mod cluster;
pub mod connection;
pub mod error;
pub mod fetch;
pub mod offsets;
pub mod partitioner;
pub mod producer;
pub mod records;
pub mod retry;
mod shape;
pub mod transaction;
mod versions;

/// The API version this client speaks for each request, so the fuzzer decodes responses at
/// the versions a broker actually answers.
#[doc(hidden)]
pub use versions::version_of;

pub use error::KafkaError;
