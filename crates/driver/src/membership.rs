//! The workers the driver knows: how to reach each one and what it offers.

use std::collections::BTreeMap;

use sleet_wire::{DriverToWorker, WorkerId};
use tokio::sync::mpsc;

#[derive(Debug, Clone)]
pub struct WorkerHandle {
    pub id: WorkerId,
    pub name: String,
    pub shuffle_address: String,
    pub cores: u32,
    pub pid: u32,
    /// Messages to this worker; a writer task owns the socket.
    pub outbox: mpsc::Sender<DriverToWorker>,
}

#[derive(Debug, Default)]
pub struct Membership {
    workers: BTreeMap<WorkerId, WorkerHandle>,
}

impl Membership {
    pub fn join(&mut self, handle: WorkerHandle) {
        self.workers.insert(handle.id, handle);
    }

    pub fn leave(&mut self, worker: WorkerId) -> Option<WorkerHandle> {
        self.workers.remove(&worker)
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
