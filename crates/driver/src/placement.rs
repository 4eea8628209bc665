//! Placement: which worker runs each partition of a stage. Pure.
//!
//! Partitions go round-robin over the workers in id order, so a partition stays on the same
//! worker for the whole job: its keyed state and its sink file never move.

use sleet_plan::StagePlan;
use sleet_wire::{JobId, TaskId, WorkerId};

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

    /// Every task of one batch, of every stage, and the worker that runs it.
    pub fn batch_tasks(&self, job: JobId, batch: u64, stages: &[StagePlan]) -> Vec<(TaskId, WorkerId)> {
        stages
            .iter()
            .flat_map(|stage| {
                (0..stage.partitions).map(move |partition| {
                    (TaskId { job, stage: stage.id, partition, batch }, self.worker_of(partition))
                })
            })
            .collect()
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
