//! Errors of the worker runtime, by who is at fault.

use sleet_wire::{BlockId, WireError};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker was started with settings it cannot run with; names the setting.
    #[error("invalid worker setting `{field}`: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
    /// The job's plan or input cannot run here (a bad expression, a table that fails to load).
    #[error("task failed")]
    Exec(#[from] sleet_exec::ExecError),
    #[error("connector failed")]
    Connector(#[from] sleet_connectors::ConnectorError),
    /// The checkpoint store refused a snapshot's read or write.
    #[error("checkpoint store failed")]
    Checkpoint(#[from] sleet_durable::DurableError),
    /// A peer worker did not answer a fetch; it may have died.
    #[error("fetching shuffle blocks from {address} failed")]
    Fetch {
        address: String,
        /// Shared: one failed round trip fails every fetch it carried.
        #[source]
        source: std::sync::Arc<WireError>,
    },
    /// The queue towards a peer is closed: its connection failed, so it may have died.
    #[error("announcing blocks to worker {worker} at {address} failed")]
    Announce { worker: sleet_wire::WorkerId, address: String },
    #[error("block {0:?} is not on the worker that was said to hold it")]
    MissingBlock(BlockId),
    #[error("connection to the driver failed")]
    Wire(#[from] WireError),
    /// No driver listened at the address within the reconnect time; a retry later may help.
    #[error("no driver could be reached at {address} within {waited_s} s (--driver-reconnect)")]
    DriverGone {
        address: String,
        waited_s: u64,
        #[source]
        source: WireError,
    },
    #[error("job {0} is not registered on this worker")]
    UnknownJob(u64),
    #[error("internal: {0}")]
    Internal(String),
    #[error("I/O failed")]
    Io(#[from] std::io::Error),
}
