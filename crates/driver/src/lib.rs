//! The driver: the single coordinator of a sleet cluster. It is never on the data path, and
//! links neither Arrow nor the Kafka client: it checks a job's connectors through the
//! `ConnectorCheck` the binary gives it, and keeps its files through `sleet-durable`.
//!
//! ```text
//!  clients / workers ──TCP──▶ server (frames → DriverEvent) ──▶ coordinator (owns state)
//!                                                 lends it as a JobLink │ per job, one of:
//!                                                                       ▼
//!  group: per group ─ LaunchGroup × workers ─▶ workers ─ Status (batched, async) ─▶ tracker
//!         group_plan · group_tracker · group_size (AIMD) · placement          (all pure)
//!  bsp:   per batch ─ LaunchTask × tasks ─▶ workers ─ Status ─▶ barrier ─▶ next stage
//!         placement · barrier                                                 (all pure)
//!  both:  Status ─▶ intake (failures, figures) ─▶ batch_ledger (batch records) ─▶ progress
//!         intake ─▶ recovery_state (offsets to replay, outputs to reuse, until a checkpoint)
//!         batch ends a checkpoint ─▶ checkpoints (snapshots + source positions, in the store)
//!  heartbeats ─▶ liveness (timeout, fence) ─▶ WorkerLost ─▶ coordinator
//!  attempt ends ─▶ attempt_end (pure: job over, or plan_next ─▶ recovery) ─▶ coordinator:
//!         a new attempt on the survivors (and joined workers), from the latest checkpoint
//! ```

pub mod attempt_end;
pub mod barrier;
pub mod batch_ledger;
pub mod bsp;
pub mod checkpoints;
pub mod commits;
pub mod connector_check;
pub mod coordinator;
pub mod dir_lock;
pub mod error;
pub mod event;
pub mod group;
pub mod group_plan;
pub mod group_size;
pub mod group_tracker;
pub mod intake;
pub mod interval_controller;
pub mod job_link;
pub mod job_state;
pub mod live;
pub mod liveness;
pub mod membership;
pub mod placement;
pub mod progress;
pub mod read_bound;
pub mod recovery;
pub mod recovery_state;
pub mod replay_log;
pub mod samples;
pub mod server;
pub mod surviving_outputs;
pub mod watchers;

pub use connector_check::ConnectorCheck;
pub use coordinator::{run, run_observed, DriverConfig, DriverHandles};
pub use error::DriverError;
pub use liveness::HeartbeatSettings;
