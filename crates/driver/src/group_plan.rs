//! Group composition: what each worker is told for one group of batches. Pure.
//!
//! A group's message to a worker names stages and partitions, the batch range and where
//! each partition of a shuffle-reading stage lives: nothing in it grows with the number of
//! batches, so the driver's cost per group is independent of the group size. Stages are
//! listed downstream first, so a worker holds a batch's reduce tasks before its map tasks
//! can announce anything to them (an announcement that still overtakes its task waits on the
//! worker: see `sleet_worker::local_scheduler`).

use std::collections::BTreeMap;

use sleet_plan::{StageInput, StagePlan};
use sleet_wire::{GroupLaunch, JobId, PartitionOwner, StageOwners, StageTasks, TaskId, WorkerId};

use crate::placement::Placement;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSpec {
    pub job: JobId,
    pub group: u64,
    pub first_batch: u64,
    pub batch_count: u32,
    /// The batch after which stateful partitions snapshot their state, if the group ends a
    /// checkpoint.
    pub checkpoint_after: Option<u64>,
}

impl GroupSpec {
    pub fn batches(&self) -> std::ops::Range<u64> {
        self.first_batch..self.first_batch + self.batch_count as u64
    }
}

/// One launch message per worker that runs any task of the job, in worker id order.
pub fn compose_group(
    spec: &GroupSpec,
    stages: &[StagePlan],
    placement: &Placement,
    addresses: &BTreeMap<WorkerId, String>,
) -> Vec<(WorkerId, GroupLaunch)> {
    assert!(spec.batch_count >= 1, "a group holds at least one batch");
    let downstream: Vec<StageOwners> = stages
        .iter()
        .filter(|stage| matches!(stage.input, StageInput::Shuffle { .. }))
        .map(|stage| StageOwners {
            stage: stage.id,
            owners: (0..stage.partitions)
                .map(|partition| {
                    let worker = placement.worker_of(partition);
                    let address = addresses.get(&worker).unwrap_or_else(|| panic!("worker {worker} has no address"));
                    PartitionOwner { worker, address: address.clone() }
                })
                .collect(),
        })
        .collect();
    let mut tasks_by_worker: BTreeMap<WorkerId, Vec<StageTasks>> = BTreeMap::new();
    for stage in stages.iter().rev() {
        for partition in 0..stage.partitions {
            let tasks = tasks_by_worker.entry(placement.worker_of(partition)).or_default();
            match tasks.last_mut() {
                Some(last) if last.stage == stage.id => last.partitions.push(partition),
                _ => tasks.push(StageTasks { stage: stage.id, partitions: vec![partition] }),
            }
        }
    }
    tasks_by_worker
        .into_iter()
        .map(|(worker, tasks)| {
            let launch = GroupLaunch {
                job: spec.job,
                group: spec.group,
                first_batch: spec.first_batch,
                batch_count: spec.batch_count,
                tasks,
                downstream: downstream.clone(),
                checkpoint_after: spec.checkpoint_after,
            };
            (worker, launch)
        })
        .collect()
}

/// Every task of the group and the worker that runs it: what the driver waits for.
pub fn group_tasks(spec: &GroupSpec, stages: &[StagePlan], placement: &Placement) -> Vec<(TaskId, WorkerId)> {
    spec.batches().flat_map(|batch| placement.batch_tasks(spec.job, batch, stages)).collect()
}

#[cfg(test)]
mod tests {
    use sleet_plan::{SinkSpec, SourceSpec, StageId, StageOutput, YsbSourceSpec};

    use super::*;

    fn two_stages(map_partitions: u32, reduce_partitions: u32) -> Vec<StagePlan> {
        let source = SourceSpec::Ysb(YsbSourceSpec {
            seed: 1,
            rate_per_s: 1,
            partitions: map_partitions,
            bad_fraction: 0.0,
            pre_decoded: false,
        });
        vec![
            StagePlan {
                id: StageId(0),
                partitions: map_partitions,
                input: StageInput::Source(source),
                ops: Vec::new(),
                output: StageOutput::Shuffle {
                    keys: vec!["k".into()],
                    partitions: reduce_partitions,
                    event_time: None,
                },
            },
            StagePlan {
                id: StageId(1),
                partitions: reduce_partitions,
                input: StageInput::Shuffle { from_stage: StageId(0), map_partitions },
                ops: Vec::new(),
                output: StageOutput::Sink(SinkSpec::Discard),
            },
        ]
    }

    fn addresses(workers: &[WorkerId]) -> BTreeMap<WorkerId, String> {
        workers.iter().map(|worker| (*worker, format!("127.0.0.1:{}", 9000 + worker))).collect()
    }

    fn spec(batch_count: u32) -> GroupSpec {
        GroupSpec { job: 3, group: 5, first_batch: 40, batch_count, checkpoint_after: None }
    }

    #[test]
    fn one_message_per_worker_whatever_the_group_size() {
        let workers = [1, 2, 3, 4];
        let placement = Placement::new(workers.to_vec(), 16);
        let stages = two_stages(4, 16);
        for batch_count in [1, 10, 100] {
            let messages = compose_group(&spec(batch_count), &stages, &placement, &addresses(&workers));
            assert_eq!(messages.iter().map(|(worker, _)| *worker).collect::<Vec<_>>(), workers);
            let tasks = group_tasks(&spec(batch_count), &stages, &placement);
            assert_eq!(tasks.len(), batch_count as usize * 20, "4 map + 16 reduce tasks per batch");
            // The message names the batch range, never the batches one by one.
            let sizes: Vec<usize> =
                messages.iter().map(|(_, launch)| serde_json::to_vec(launch).expect("encodes").len()).collect();
            let single = compose_group(&spec(1), &stages, &placement, &addresses(&workers));
            let single_sizes: Vec<usize> =
                single.iter().map(|(_, launch)| serde_json::to_vec(launch).expect("encodes").len()).collect();
            assert!(
                sizes.iter().zip(&single_sizes).all(|(size, one)| size.abs_diff(*one) <= 3),
                "message size grows with the group: {sizes:?} vs {single_sizes:?}"
            );
        }
    }

    #[test]
    fn downstream_stages_come_first_and_owners_follow_placement() {
        let placement = Placement::new(vec![7, 9], 3);
        let messages = compose_group(&spec(10), &two_stages(2, 3), &placement, &addresses(&[7, 9]));
        let (worker, launch) = &messages[0];
        assert_eq!(*worker, 7);
        assert_eq!(launch.batches(), 40..50);
        let order: Vec<(u32, Vec<u32>)> =
            launch.tasks.iter().map(|stage| (stage.stage.0, stage.partitions.clone())).collect();
        assert_eq!(order, vec![(1, vec![0, 2]), (0, vec![0])], "reduce partitions 0 and 2, then map partition 0");
        assert_eq!(launch.downstream.len(), 1);
        let owners: Vec<WorkerId> = launch.downstream[0].owners.iter().map(|owner| owner.worker).collect();
        assert_eq!(owners, vec![7, 9, 7]);
        assert_eq!(launch.downstream[0].owners[1].address, "127.0.0.1:9009");
    }

    #[test]
    fn a_worker_with_no_partition_gets_no_message() {
        let placement = Placement::new(vec![1, 2, 3], 2);
        let messages = compose_group(&spec(1), &two_stages(2, 2), &placement, &addresses(&[1, 2, 3]));
        assert_eq!(messages.iter().map(|(worker, _)| *worker).collect::<Vec<_>>(), vec![1, 2]);
    }
}
