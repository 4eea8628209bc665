//! The recovery planner: what happens after workers are lost. Pure.
//!
//! ```text
//!   lost workers + placement + latest checkpoint + batches sent
//!     → new placement: only the lost workers' partitions move (to the least-loaded survivors)
//!     → resume at the checkpoint's batch + 1; its snapshots are the restore point
//!     → source partitions resume where the checkpoint's batch ended reading
//!     → batches from there to the last one sent are re-run, all closed already, so every
//!       survivor runs them at once, many batches in flight per partition
//!     → a Kafka partition re-reads each re-run batch's offsets as logged (`replay_log.rs`)
//! ```
//!
//! The job continues as a new attempt: a new id for every task and block, every partition's
//! state restored from the same checkpoint, so survivors and new owners stand at the same
//! batch. Re-running the survivors' batches too is what keeps this simple and exact: each
//! partition's state after the replay equals the state without a failure, because every
//! batch reads the same input again (generator ranges are a function of the batch; Kafka
//! and file positions resume from the checkpoint), and a re-run batch writes the same rows.

use std::ops::Range;

use sleet_plan::{KafkaStart, ReplayedBatches, SourceRange, SourceSpec};
use sleet_wire::clock::BatchClock;
use sleet_wire::{RestorePoint, WorkerId};

use crate::checkpoints::CheckpointRecord;
use crate::placement::Placement;

#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryPlan {
    pub placement: Placement,
    /// Partitions that changed owner: `(partition, from, to)`.
    pub moves: Vec<(u32, WorkerId, WorkerId)>,
    /// The first batch the new attempt runs.
    pub resume_batch: u64,
    pub restore: Option<RestorePoint>,
    /// Batches that ran (or were sent) before and run again.
    pub rerun: Range<u64>,
}

/// Also the plan of a placement change for workers that `joined` (with nothing lost): their
/// share of partitions moves to them, from the checkpoint the attempt ended at. `None` when
/// no worker survives.
pub fn plan_recovery(
    placement: &Placement,
    lost: &[WorkerId],
    joined: &[WorkerId],
    checkpoint: Option<&CheckpointRecord>,
    next_batch: u64,
) -> Option<RecoveryPlan> {
    let joined: Vec<WorkerId> = joined.iter().copied().filter(|worker| !lost.contains(worker)).collect();
    let after = placement.without(lost)?.with(&joined);
    let resume_batch = checkpoint.map_or(0, |checkpoint| checkpoint.batch + 1);
    Some(RecoveryPlan {
        moves: after.moves_from(placement),
        placement: after,
        resume_batch,
        restore: checkpoint.map(CheckpointRecord::restore_point),
        rerun: resume_batch..next_batch.max(resume_batch),
    })
}

/// The source a resumed attempt reads: the same, starting where the checkpoint's batch
/// ended on each partition. A generator needs nothing: a batch's events are a function of
/// the batch.
pub fn resume_source(spec: &SourceSpec, checkpoint: &CheckpointRecord) -> SourceSpec {
    let end_of =
        |partition: u32| checkpoint.source_ranges.iter().find(|(read, _)| *read == partition).map(|(_, range)| *range);
    match spec {
        SourceSpec::Kafka(kafka) => {
            let offsets = (0..kafka.partitions)
                .map(|partition| match end_of(partition) {
                    Some(SourceRange::Offsets { end, .. }) => end,
                    _ => panic!("checkpoint after batch {} has no offsets for partition {partition}", checkpoint.batch),
                })
                .collect();
            SourceSpec::Kafka(sleet_plan::KafkaSourceSpec { start: KafkaStart::Offsets(offsets), ..kafka.clone() })
        }
        SourceSpec::Files(files) => {
            let start_bytes = (0..files.partitions)
                .map(|partition| match end_of(partition) {
                    Some(SourceRange::Bytes { end, .. }) => end,
                    _ => panic!("checkpoint after batch {} has no position for file {partition}", checkpoint.batch),
                })
                .collect();
            SourceSpec::Files(sleet_plan::FileSourceSpec { start_bytes, ..files.clone() })
        }
        SourceSpec::Ysb(_) | SourceSpec::Numbers(_) => spec.clone(),
    }
}

/// The source of an attempt that re-runs batches: a Kafka source told where each re-run
/// batch ended the first time (`replay`: per partition, `(batch, end offset)` from the
/// `ReplayLog`). Other sources read the same records again by themselves.
pub fn with_replay(spec: &SourceSpec, replay: &[(u32, Vec<(u64, i64)>)], clock: &BatchClock) -> SourceSpec {
    match spec {
        SourceSpec::Kafka(kafka) if !replay.is_empty() => SourceSpec::Kafka(sleet_plan::KafkaSourceSpec {
            replay: replay
                .iter()
                .map(|(partition, ends)| ReplayedBatches {
                    partition: *partition,
                    ends: ends.iter().map(|(batch, end)| (clock.end_ms(*batch), *end)).collect(),
                })
                .collect(),
            ..kafka.clone()
        }),
        _ => spec.clone(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_plan::{EventTimeSource, KafkaSourceSpec, StageId};
    use sleet_wire::PartitionSnapshot;

    use super::*;

    fn checkpoint(batch: u64, partitions: u32) -> CheckpointRecord {
        CheckpointRecord {
            job: 1,
            attempt_job: 1,
            batch,
            snapshots: (0..partitions)
                .map(|partition| PartitionSnapshot {
                    stage: StageId(1),
                    partition,
                    path: format!("s1-p{partition}"),
                    bytes: 8,
                })
                .collect(),
            source_ranges: (0..partitions)
                .map(|partition| (partition, SourceRange::Offsets { start: 100, end: 150 + partition as i64 }))
                .collect(),
            recorded_at_ms: 0,
        }
    }

    #[test]
    fn kafka_resumes_at_the_end_of_the_checkpointed_batch() {
        let spec = SourceSpec::Kafka(KafkaSourceSpec {
            brokers: "127.0.0.1:9092".into(),
            topic: "t".into(),
            start: KafkaStart::Earliest,
            max_records_per_partition_per_batch: 10,
            event_time: EventTimeSource::Field,
            read_committed: true,
            partitions: 2,
            replay: Vec::new(),
        });
        let SourceSpec::Kafka(resumed) = resume_source(&spec, &checkpoint(7, 2)) else { panic!("kafka") };
        assert_eq!(resumed.start, KafkaStart::Offsets(vec![150, 151]));
        // Batches 8 and 9 of partition 1 re-read what they read before, by their ends.
        let clock = BatchClock::new(1_000, 100);
        let SourceSpec::Kafka(replayed) = with_replay(&spec, &[(1, vec![(8, 160), (9, 171)])], &clock) else {
            panic!("kafka")
        };
        assert_eq!(replayed.replay, vec![ReplayedBatches { partition: 1, ends: vec![(1_900, 160), (2_000, 171)] }]);
        assert_eq!(with_replay(&spec, &[], &clock), spec, "nothing to replay changes nothing");
    }

    #[test]
    fn a_joined_worker_takes_its_share_at_the_checkpoint_the_attempt_ended_at() {
        let placement = Placement::new(vec![1, 2], 4);
        let record = checkpoint(9, 4);
        let plan = plan_recovery(&placement, &[], &[3], Some(&record), 10).expect("a plan");
        assert_eq!(plan.placement.workers(), &[1, 2, 3]);
        assert_eq!(plan.moves, vec![(3, 2, 3)]);
        assert_eq!((plan.resume_batch, plan.rerun.clone()), (10, 10..10), "nothing runs again");
        // Lost and joined at once: the joined worker shares the lost one's partitions.
        let plan = plan_recovery(&placement, &[1], &[3], Some(&record), 12).expect("a plan");
        assert_eq!(plan.placement.workers(), &[2, 3]);
        assert_eq!(plan.rerun, 10..12);
    }

    proptest! {
        /// For any placement, loss and checkpoint: every partition has exactly one owner, a
        /// live one; only the lost workers' partitions moved; the batches re-run are exactly
        /// those after the checkpoint up to the last one sent.
        #[test]
        fn the_plan_reruns_what_the_checkpoint_does_not_cover_and_owns_every_partition_once(
            workers in 1u32..7,
            partitions in 1u32..24,
            lost_mask in 1u16..u16::MAX,
            checkpoint_batch in proptest::option::of(0u64..500),
            sent_beyond in 0u64..300,
        ) {
            let all: Vec<WorkerId> = (1..=workers).collect();
            let lost: Vec<WorkerId> = all.iter().copied().filter(|worker| lost_mask & (1 << worker) != 0).collect();
            let placement = Placement::new(all.clone(), partitions);
            let record = checkpoint_batch.map(|batch| checkpoint(batch, partitions));
            let next_batch = checkpoint_batch.map_or(0, |batch| batch + 1) + sent_beyond;
            let Some(plan) = plan_recovery(&placement, &lost, &[], record.as_ref(), next_batch) else {
                prop_assert_eq!(lost.len(), all.len());
                return Ok(());
            };
            for partition in 0..partitions {
                let owner = plan.placement.worker_of(partition);
                prop_assert!(all.contains(&owner) && !lost.contains(&owner));
            }
            for (partition, from, to) in &plan.moves {
                prop_assert!(lost.contains(from), "partition {} moved off a survivor", partition);
                prop_assert_ne!(from, to);
            }
            let moved = plan.moves.len() as u32;
            let on_lost = (0..partitions).filter(|p| lost.contains(&placement.worker_of(*p))).count() as u32;
            prop_assert_eq!(moved, on_lost);
            let covered = checkpoint_batch.map_or(0, |batch| batch + 1);
            prop_assert_eq!(plan.resume_batch, covered);
            prop_assert_eq!(plan.rerun.clone(), covered..next_batch);
            prop_assert_eq!(plan.restore.map(|restore| restore.batch), checkpoint_batch);
        }
    }
}
