//! The workers the driver knows: how to reach each one and what it offers.

use std::collections::BTreeMap;

use sleet_wire::{DriverToWorker, WorkerId};

use crate::live::LiveView;
use tokio::sync::mpsc;

/// A control message already encoded by the coordinator. Encoding where the decision is
/// made keeps its cost on the driver's scheduling clock, where it belongs: with many tasks
/// per message it is a large share of what the driver spends per batch.
#[derive(Debug, Clone)]
pub struct EncodedMessage(pub Vec<u8>);

impl EncodedMessage {
    pub fn new(message: &DriverToWorker) -> Self {
        EncodedMessage(sleet_wire::encode_binary(message))
    }
}

#[derive(Debug, Clone)]
pub struct WorkerHandle {
    pub id: WorkerId,
    pub name: String,
    pub shuffle_address: String,
    pub cores: u32,
    pub pid: u32,
    /// Messages to this worker; a writer task owns the socket.
    pub outbox: mpsc::Sender<EncodedMessage>,
}

impl WorkerHandle {
    /// Encodes and queues `message`; false when the worker's connection is gone.
    pub async fn send(&self, message: &DriverToWorker) -> bool {
        self.send_encoded(EncodedMessage::new(message)).await
    }

    pub async fn send_encoded(&self, message: EncodedMessage) -> bool {
        self.outbox.send(message).await.is_ok()
    }
}

#[derive(Debug, Default)]
pub struct Membership {
    workers: BTreeMap<WorkerId, WorkerHandle>,
    /// Told of every join and leave, here where they all happen.
    live: Option<LiveView>,
}

impl Membership {
    pub fn observed_by(live: LiveView) -> Self {
        Membership { workers: BTreeMap::new(), live: Some(live) }
    }

    pub fn join(&mut self, handle: WorkerHandle) {
        if let Some(live) = &self.live {
            live.worker_joined(&handle, sleet_wire::clock::now_ms());
        }
        self.workers.insert(handle.id, handle);
    }

    pub fn leave(&mut self, worker: WorkerId) -> Option<WorkerHandle> {
        let left = self.workers.remove(&worker);
        if let (Some(live), Some(_)) = (&self.live, &left) {
            live.worker_left(worker, sleet_wire::clock::now_ms());
        }
        left
    }

    pub fn get(&self, worker: WorkerId) -> Option<&WorkerHandle> {
        self.workers.get(&worker)
    }

    pub fn ids(&self) -> Vec<WorkerId> {
        self.workers.keys().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    pub fn handles(&self) -> impl Iterator<Item = &WorkerHandle> {
        self.workers.values()
    }
}
