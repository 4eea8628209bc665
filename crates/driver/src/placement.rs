//! Placement: which worker runs each partition of a stage. Pure.
//!
//! Partition `p` of every stage runs on one worker, so a map partition's blocks for its own
//! reduce partition never cross the network and a stateful partition's state and sink file
//! stay put. A job starts round-robin over the workers in id order, which spreads any
//! partition count evenly. When a worker is lost only its partitions move, each to the
//! survivor that holds the fewest at that moment: every other partition keeps its owner,
//! its state and its warm caches, and the load stays as even as the counts allow.

use sleet_plan::StagePlan;
use sleet_wire::{JobId, TaskId, WorkerId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Index = partition.
    owners: Vec<WorkerId>,
    /// Every worker that may be given partitions, sorted.
    workers: Vec<WorkerId>,
}

impl Placement {
    /// Partitions `0..partitions` round-robin over `workers` in id order.
    pub fn new(mut workers: Vec<WorkerId>, partitions: u32) -> Self {
        assert!(!workers.is_empty(), "placement needs at least one worker");
        workers.sort_unstable();
        workers.dedup();
        let owners = (0..partitions as usize).map(|partition| workers[partition % workers.len()]).collect();
        Placement { owners, workers }
    }

    /// The placement of every partition of `stages`.
    pub fn for_stages(workers: Vec<WorkerId>, stages: &[StagePlan]) -> Self {
        Placement::new(workers, stages.iter().map(|stage| stage.partitions).max().unwrap_or(1))
    }

    pub fn worker_of(&self, partition: u32) -> WorkerId {
        self.owners[partition as usize]
    }

    pub fn workers(&self) -> &[WorkerId] {
        &self.workers
    }

    /// The placement once `lost` are gone: their partitions go, one by one in partition
    /// order, to the survivor holding the fewest (the lowest id on a tie); every other
    /// partition stays. `None` when no worker survives.
    pub fn without(&self, lost: &[WorkerId]) -> Option<Placement> {
        let survivors: Vec<WorkerId> = self.workers.iter().copied().filter(|worker| !lost.contains(worker)).collect();
        if survivors.is_empty() {
            return None;
        }
        let mut owners = self.owners.clone();
        let mut load: Vec<(WorkerId, usize)> =
            survivors.iter().map(|worker| (*worker, owners.iter().filter(|owner| *owner == worker).count())).collect();
        for owner in owners.iter_mut().filter(|owner| lost.contains(owner)) {
            let least = load.iter_mut().min_by_key(|(worker, count)| (*count, *worker)).expect("survivors");
            *owner = least.0;
            least.1 += 1;
        }
        Some(Placement { owners, workers: survivors })
    }

    /// Partitions whose owner differs from `before`'s, with the old and new owner.
    pub fn moves_from(&self, before: &Placement) -> Vec<(u32, WorkerId, WorkerId)> {
        before
            .owners
            .iter()
            .zip(&self.owners)
            .enumerate()
            .filter(|(_, (old, new))| old != new)
            .map(|(partition, (old, new))| (partition as u32, *old, *new))
            .collect()
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
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn partitions_spread_round_robin_in_worker_id_order() {
        let placement = Placement::new(vec![7, 3, 5], 6);
        let owners: Vec<WorkerId> = (0..6).map(|partition| placement.worker_of(partition)).collect();
        assert_eq!(owners, vec![3, 5, 7, 3, 5, 7]);
    }

    #[test]
    fn a_lost_workers_partitions_go_to_the_least_loaded_survivors() {
        let placement = Placement::new(vec![1, 2, 3], 6);
        let after = placement.without(&[2]).expect("survivors");
        assert_eq!(after.moves_from(&placement), vec![(1, 2, 1), (4, 2, 3)]);
        assert_eq!(after.workers(), &[1, 3]);
        assert!(placement.without(&[1, 2, 3]).is_none());
    }

    proptest! {
        #[test]
        fn only_lost_partitions_move_and_the_load_stays_even(
            workers in 1u32..9,
            partitions in 1u32..40,
            lost_mask in any::<u16>(),
        ) {
            let all: Vec<WorkerId> = (1..=workers).collect();
            let lost: Vec<WorkerId> = all.iter().copied().filter(|worker| lost_mask & (1 << worker) != 0).collect();
            let placement = Placement::new(all.clone(), partitions);
            match placement.without(&lost) {
                None => prop_assert_eq!(lost.len(), all.len()),
                Some(after) => {
                    for partition in 0..partitions {
                        let (old, new) = (placement.worker_of(partition), after.worker_of(partition));
                        prop_assert!(!lost.contains(&new), "partition {} left on a lost worker", partition);
                        if !lost.contains(&old) {
                            prop_assert_eq!(old, new, "partition {} of a survivor moved", partition);
                        }
                    }
                    let counts: Vec<usize> = after
                        .workers()
                        .iter()
                        .map(|worker| (0..partitions).filter(|p| after.worker_of(*p) == *worker).count())
                        .collect();
                    let (least, most) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                    prop_assert!(most - least <= 1, "uneven load {:?}", counts);
                }
            }
        }
    }
}
