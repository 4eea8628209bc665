//! What reaches the coordinator from the network edge and the heartbeat watch: one event
//! type in a module of its own, which `server` and `liveness` both send. The arrow between
//! them goes one way: the server hands heartbeats to `liveness` directly, so that a busy
//! event queue never delays them, and `liveness` knows nothing of the server.

use sleet_plan::JobFile;
use sleet_wire::{DriverToClient, JobId, WorkerId, WorkerToDriver};
use tokio::sync::mpsc;

use crate::membership::WorkerHandle;

pub type ClientId = u64;

#[derive(Debug)]
pub enum DriverEvent {
    WorkerJoined(WorkerHandle),
    /// `decode_us`: what decoding the message cost the driver (part of its coordination time).
    FromWorker {
        worker: WorkerId,
        message: WorkerToDriver,
        decode_us: i64,
    },
    WorkerLost {
        worker: WorkerId,
        reason: String,
    },
    Submit {
        client: ClientId,
        job: Box<JobFile>,
        replies: mpsc::Sender<DriverToClient>,
    },
    Stop {
        job: JobId,
    },
    /// A client wants to follow `job` from now on.
    Attach {
        job: JobId,
        replies: mpsc::Sender<DriverToClient>,
    },
    ClientGone {
        client: ClientId,
    },
    Shutdown,
}
