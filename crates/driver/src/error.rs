//! Errors of the driver, by who is at fault.

use sleet_wire::{TaskId, WireError, WorkerId};

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The submitted job cannot run: the reason names the offending node and field.
    #[error("the job was rejected")]
    Plan(#[from] sleet_plan::PlanError),
    /// The job needs more workers than joined; the message names those that did.
    #[error("{} of {expected} expected workers joined within {waited_s} s{}; the job did not start (start more workers, or lower --expect-workers)", joined.len(), joined_list(joined))]
    TooFewWorkers { expected: u32, joined: Vec<String>, waited_s: u64 },
    /// A worker process went away or went silent. The coordinator recovers from this while
    /// workers survive; it is the job's error only when none does.
    #[error("worker {worker} ({name}, pid {pid}) was lost during batch {batch}: {reason}")]
    WorkerLost { worker: WorkerId, name: String, pid: u32, batch: u64, reason: String },
    /// Every worker of the job is gone.
    #[error("{0}; no worker is left to recover on")]
    NoWorkerLeft(Box<DriverError>),
    #[error("recording a checkpoint failed")]
    Checkpoint(#[source] sleet_durable::DurableError),
    #[error("publishing which output is committed failed")]
    Commit(#[source] sleet_durable::DurableError),
    #[error("{task} failed on worker {worker}: {reason}")]
    TaskFailed { task: TaskId, worker: WorkerId, reason: String },
    #[error("{stage} of batch {batch} did not finish within {timeout_s} s; waiting on workers {workers:?}")]
    StageTimeout { stage: sleet_plan::StageId, batch: u64, timeout_s: u64, workers: Vec<WorkerId> },
    /// The driver's state directory holds something it cannot resume from; names the file.
    #[error("the driver's state file {}: {reason}", path.display())]
    State { path: std::path::PathBuf, reason: String },
    /// Another driver holds the checkpoint directory.
    #[error("the checkpoint directory is in use: {holder} holds {}; give this driver its own --checkpoint-dir (two drivers sharing one would overwrite each other's checkpoints and take each other's jobs)", path.display())]
    DirInUse { path: std::path::PathBuf, holder: String },
    #[error("locking the checkpoint directory through {} failed", path.display())]
    DirLock { path: std::path::PathBuf, source: std::io::Error },
    #[error("connection failed")]
    Wire(#[from] WireError),
    #[error("I/O failed")]
    Io(#[from] std::io::Error),
}

fn joined_list(joined: &[String]) -> String {
    if joined.is_empty() {
        String::new()
    } else {
        format!(": {}", joined.join(", "))
    }
}
