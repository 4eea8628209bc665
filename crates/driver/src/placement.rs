//! Placement: which worker runs each partition of a stage. Pure.
//!
//! Partitions go round-robin over the workers in id order, so a partition stays on the same
//! worker for the whole job: its keyed state and its sink file never move.

use sleet_wire::WorkerId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    workers: Vec<WorkerId>,
}

impl Placement {
    pub fn new(mut workers: Vec<WorkerId>) -> Self {
        assert!(!workers.is_empty(), "placement needs at least one worker");
        workers.sort_unstable();
        workers.dedup();
        Placement { workers }
    }

    pub fn worker_of(&self, partition: u32) -> WorkerId {
        self.workers[partition as usize % self.workers.len()]
    }

    pub fn workers(&self) -> &[WorkerId] {
        &self.workers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_spread_round_robin_in_worker_id_order() {
        let placement = Placement::new(vec![7, 3, 5]);
        let owners: Vec<WorkerId> = (0..6).map(|partition| placement.worker_of(partition)).collect();
        assert_eq!(owners, vec![3, 5, 7, 3, 5, 7]);
    }
}
