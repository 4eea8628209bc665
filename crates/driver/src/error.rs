//! Errors of the driver, by who is at fault.

use sleet_wire::{TaskId, WireError, WorkerId};

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The submitted job cannot run: the reason names the offending node and field.
    #[error("the job was rejected")]
    Plan(#[from] sleet_plan::PlanError),
    #[error("no worker registered within {waited_s} s (expected {expected})")]
    NoWorkers { expected: u32, waited_s: u64 },
    /// A worker process went away; without recovery (a later feature) the job cannot finish.
    #[error("worker {worker} ({name}, pid {pid}) was lost during batch {batch}: {reason}; the job is stopped because recovery from a lost worker is not implemented yet")]
    WorkerLost { worker: WorkerId, name: String, pid: u32, batch: u64, reason: String },
    #[error("{task} failed on worker {worker}: {reason}")]
    TaskFailed { task: TaskId, worker: WorkerId, reason: String },
    #[error("{stage} of batch {batch} did not finish within {timeout_s} s; waiting on workers {workers:?}")]
    StageTimeout { stage: sleet_plan::StageId, batch: u64, timeout_s: u64, workers: Vec<WorkerId> },
    #[error("connection failed")]
    Wire(#[from] WireError),
    #[error("I/O failed")]
    Io(#[from] std::io::Error),
}
