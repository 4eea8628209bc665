//! The files sleet keeps across a crash: what the driver and the sinks commit, and where
//! checkpoints live.
//!
//! ```text
//!  file::replace_file(path, bytes, Durability)   a reader finds the old file or the new one
//!    ├─ manifest::write_manifest ──▶ dir/_manifest.json   driver: which batches of which attempt count
//!    ├─ checkpoint_store::DirectoryStore::put             workers: snapshots; driver: checkpoint records
//!    └─ the driver's state files (job.json, …)            through read_json_file / replace_file
//!  committed::read_json_lines(dir) ── manifest::read_manifest ──▶ only the rows a manifest admits
//! ```
//!
//! Plain files and JSON, so that the driver, which commits output and records checkpoints but
//! never reads a row of data, links no Arrow and no Kafka client. It must never learn what a
//! row means, open a network connection, or depend on another sleet crate.

pub mod checkpoint_store;
pub mod committed;
pub mod error;
pub mod file;
pub mod manifest;

pub use error::DurableError;
