//! The worker runtime: a process that runs tasks as monotask DAGs and serves shuffle blocks.
//!
//! ```text
//!  driver ──LaunchGroup / LaunchTask──▶ runtime ──▶ local_scheduler (ready?) ──▶ task: monotask DAG
//!                                          ▲                                   │ cpu pool │ net │ disk │
//!        announcements (push metadata) ────┘                                   │
//!  driver ◀── Status (batched reports) ◀── status writer ◀─────────────────────┤
//!  peers  ◀── BlocksAnnounced ◀── announce ◀── map output ──▶ block_store      │
//!  map output ──▶ block_store ◀──fetch (pull data)── reducers on other workers ◀┘
//!  driver ◀── Heartbeat (own connection, own thread) ◀── heartbeat
//! ```

pub mod alarm;
pub mod announce;
pub mod bandwidth;
pub mod block_store;
pub mod cpu_pin;
pub mod error;
pub mod heartbeat;
pub mod job;
pub mod launcher;
pub mod leave;
pub mod local_scheduler;
pub mod pool;
pub mod retained;
pub mod runtime;
pub mod shuffle;
pub mod status;
pub mod task;
pub mod turn;
pub mod visibility;

pub use error::WorkerError;
pub use runtime::{run, WorkerConfig};
