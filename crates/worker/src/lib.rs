//! The worker runtime: a process that runs tasks as monotask DAGs and serves shuffle blocks.
//!
//! ```text
//!  driver ──LaunchTask──▶ runtime ──▶ local_scheduler (ready?) ──▶ task: monotask DAG
//!                                                                  │ cpu pool │ net │ disk │
//!            TaskFinished + monotask records ◀────────────────────┘
//!  map output ──▶ block_store ◀──fetch── shuffle service ◀── reducers on other workers
//! ```

pub mod block_store;
pub mod error;
pub mod job;
pub mod local_scheduler;
pub mod pool;
pub mod runtime;
pub mod shuffle;
pub mod task;

pub use error::WorkerError;
pub use runtime::{run, WorkerConfig};
