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

    /// The placement once `joined` workers are added: partitions move one at a time from the
    /// worker holding the most (its highest partition; the highest id on a tie) to the
    /// joined worker holding the fewest, until no worker holds two more than another. Only
    /// partitions that must move to even the load do, and only to joined workers.
    pub fn with(&self, joined: &[WorkerId]) -> Placement {
        let mut workers = self.workers.clone();
        workers.extend(joined.iter().filter(|worker| !self.workers.contains(worker)));
        workers.sort_unstable();
        workers.dedup();
        let mut owners = self.owners.clone();
        let count = |owners: &[WorkerId], worker: WorkerId| owners.iter().filter(|owner| **owner == worker).count();
        loop {
            let most = *workers.iter().max_by_key(|worker| (count(&owners, **worker), **worker)).expect("workers");
            let Some(least) = workers
                .iter()
                .filter(|worker| !self.workers.contains(worker))
                .min_by_key(|worker| (count(&owners, **worker), **worker))
                .copied()
            else {
                break;
            };
            if count(&owners, most) <= count(&owners, least) + 1 {
                break;
            }
            let partition = owners.iter().rposition(|owner| *owner == most).expect("the most loaded holds one");
            owners[partition] = least;
        }
        Placement { owners, workers }
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

    /// How many partitions each worker holds, in worker order.
    fn loads(placement: &Placement, partitions: u32) -> Vec<usize> {
        let held = |worker: &WorkerId| (0..partitions).filter(|p| placement.worker_of(*p) == *worker).count();
        placement.workers().iter().map(held).collect()
    }

    #[test]
    fn a_joined_worker_takes_partitions_from_the_most_loaded() {
        let placement = Placement::new(vec![1, 2], 6);
        let after = placement.with(&[3]);
        assert_eq!(after.workers(), &[1, 2, 3]);
        assert_eq!(after.moves_from(&placement), vec![(4, 1, 3), (5, 2, 3)]);
        assert_eq!(placement.with(&[1]), placement, "a worker already placed changes nothing");
    }

    proptest! {
        #[test]
        fn joined_workers_take_only_what_evens_the_load(
            workers in 1u32..6,
            partitions in 1u32..40,
            joined in 1u32..4,
        ) {
            let placement = Placement::new((1..=workers).collect(), partitions);
            let new: Vec<WorkerId> = (workers + 1..=workers + joined).collect();
            let after = placement.with(&new);
            let counts = loads(&after, partitions);
            let (least, most) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(most - least <= 1, "uneven load {:?}", counts);
            let moves = after.moves_from(&placement);
            for (_, _, to) in &moves {
                prop_assert!(new.contains(to), "a partition moved between old workers");
            }
            // Each joined worker holds at most the larger even share, and took nothing more.
            let share_max = partitions.div_ceil(workers + joined) as usize;
            prop_assert!(moves.len() <= share_max * joined as usize);
        }

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
                    let counts = loads(&after, partitions);
                    let (least, most) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                    prop_assert!(most - least <= 1, "uneven load {:?}", counts);
                }
            }
        }
    }
}
