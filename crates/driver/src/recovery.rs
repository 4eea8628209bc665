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
//!     → a survivor that still holds its source partition's output of the first re-run
//!       batches (`surviving_outputs.rs`) hands those blocks on instead of reading and
//!       computing them again; its source resumes after the last one it hands on
//! ```
//!
//! The job continues as a new attempt: a new id for every task and block, every partition's
//! state restored from the same checkpoint, so survivors and new owners stand at the same
//! batch. Re-running the stateful stages on survivors too is what keeps this simple and
//! exact: each partition's state after the replay equals the state without a failure,
//! because every batch reads the same input again (generator ranges are a function of the
//! batch; Kafka and file positions resume from the checkpoint), or the very blocks its first
//! run made, and a re-run batch writes the same rows. Only stateless source stages' outputs
//! are reused: they are a function of the batch's input alone.

use std::ops::Range;

use sleet_plan::{KafkaStart, ReplayedBatches, SourceRange, SourceSpec, StageId};
use sleet_wire::clock::BatchClock;
use sleet_wire::{RestorePoint, ReusedRun, WorkerId};

use crate::checkpoints::CheckpointRecord;
use crate::placement::Placement;
use crate::surviving_outputs::SurvivingOutputs;

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
    /// Source partitions whose first re-run batches a survivor hands on from what it holds.
    pub reuse: Vec<PlannedReuse>,
}

/// A run of batches `run.batches` of one source partition that its owner, a survivor,
/// still holds; `last_range` is what the run's last batch read, where the source resumes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedReuse {
    pub run: ReusedRun,
    pub last_range: SourceRange,
}

impl RecoveryPlan {
    /// Source tasks of the re-run batches that hand on a kept output instead of running.
    pub fn reused_map_tasks(&self) -> u64 {
        self.reuse.iter().map(|reuse| reuse.run.batches.end - reuse.run.batches.start).sum()
    }
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
    surviving: &SurvivingOutputs,
) -> Option<RecoveryPlan> {
    let joined: Vec<WorkerId> = joined.iter().copied().filter(|worker| !lost.contains(worker)).collect();
    let after = placement.without(lost)?.with(&joined);
    let resume_batch = checkpoint.map_or(0, |checkpoint| checkpoint.batch + 1);
    let rerun = resume_batch..next_batch.max(resume_batch);
    let reuse = surviving
        .slots()
        .filter_map(|(stage, partition)| reusable_run(surviving, stage, partition, placement, &after, &rerun))
        .collect();
    Some(RecoveryPlan {
        moves: after.moves_from(placement),
        placement: after,
        resume_batch,
        restore: checkpoint.map(CheckpointRecord::restore_point),
        rerun,
        reuse,
    })
}

/// The batches of `rerun`, from its first, that the partition's owner before and after the
/// recovery holds, one after another: a source is read front to back, so it can skip only
/// a run at the start and resume after it.
fn reusable_run(
    surviving: &SurvivingOutputs,
    stage: StageId,
    partition: u32,
    before: &Placement,
    after: &Placement,
    rerun: &Range<u64>,
) -> Option<PlannedReuse> {
    let owner = after.worker_of(partition);
    if before.worker_of(partition) != owner {
        return None;
    }
    let held = surviving.of(stage, partition)?;
    let mut last_range = None;
    let mut end = rerun.start;
    while end < rerun.end {
        match held.get(&end) {
            Some(output) if output.worker == owner && output.range.is_some() => last_range = output.range,
            _ => break,
        }
        end += 1;
    }
    Some(PlannedReuse { run: ReusedRun { stage, partition, batches: rerun.start..end }, last_range: last_range? })
}

/// The source of `stage` for an attempt that reuses `reuse`, and the runs it can reuse: a
/// reused Kafka or file partition starts where its last reused batch ended and replays only
/// the batches after it; a generator needs nothing (a batch's events are a function of the
/// batch). A Kafka source with no checkpoint behind it starts from a policy (earliest, a
/// time), not per-partition offsets, so it reuses nothing.
pub fn skip_reused(
    spec: &SourceSpec,
    stage: StageId,
    reuse: &[PlannedReuse],
    clock: &BatchClock,
) -> (SourceSpec, Vec<ReusedRun>) {
    let mut spec = spec.clone();
    let mut applied = Vec::new();
    for reused in reuse.iter().filter(|reused| reused.run.stage == stage) {
        let partition = reused.run.partition as usize;
        let positioned = match (&mut spec, reused.last_range) {
            (SourceSpec::Kafka(kafka), SourceRange::Offsets { end, .. }) => match &mut kafka.start {
                KafkaStart::Offsets(offsets) if partition < offsets.len() => {
                    offsets[partition] = end;
                    let last_end_ms = clock.end_ms(reused.run.batches.end - 1);
                    for replayed in kafka.replay.iter_mut().filter(|replayed| replayed.partition as usize == partition)
                    {
                        replayed.ends.retain(|(batch_end_ms, _)| *batch_end_ms > last_end_ms);
                    }
                    kafka.replay.retain(|replayed| !replayed.ends.is_empty());
                    true
                }
                _ => false,
            },
            (SourceSpec::Files(files), SourceRange::Bytes { end, .. }) if partition < files.start_bytes.len() => {
                files.start_bytes[partition] = end;
                true
            }
            (
                SourceSpec::Ysb(_) | SourceSpec::Numbers(_) | SourceSpec::Gateway(_) | SourceSpec::Nexmark(_),
                SourceRange::Time { .. },
            ) => true,
            _ => false,
        };
        if positioned {
            applied.push(reused.run.clone());
        }
    }
    (spec, applied)
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
        SourceSpec::Ysb(_) | SourceSpec::Numbers(_) | SourceSpec::Gateway(_) | SourceSpec::Nexmark(_) => spec.clone(),
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
    use crate::surviving_outputs::HeldOutput;

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
        // A survivor hands on partition 1's batch 8: it resumes after it and replays only 9.
        let reuse = PlannedReuse {
            run: ReusedRun { stage: StageId(0), partition: 1, batches: 8..9 },
            last_range: SourceRange::Offsets { start: 151, end: 160 },
        };
        let resumed = resume_source(&spec, &checkpoint(7, 2));
        let replaying = with_replay(&resumed, &[(1, vec![(8, 160), (9, 171)])], &clock);
        let (skipping, applied) = skip_reused(&replaying, StageId(0), std::slice::from_ref(&reuse), &clock);
        let SourceSpec::Kafka(skipping) = skipping else { panic!("kafka") };
        assert_eq!(skipping.start, KafkaStart::Offsets(vec![150, 160]));
        assert_eq!(skipping.replay, vec![ReplayedBatches { partition: 1, ends: vec![(2_000, 171)] }]);
        assert_eq!(applied, vec![reuse.run.clone()]);
        // Without a checkpoint the source starts from a policy: nothing can be skipped.
        let (unchanged, applied) = skip_reused(&spec, StageId(0), &[reuse], &clock);
        assert_eq!((unchanged, applied), (spec, vec![]));
    }

    #[test]
    fn a_joined_worker_takes_its_share_at_the_checkpoint_the_attempt_ended_at() {
        let placement = Placement::new(vec![1, 2], 4);
        let record = checkpoint(9, 4);
        let plan =
            plan_recovery(&placement, &[], &[3], Some(&record), 10, &SurvivingOutputs::default()).expect("a plan");
        assert_eq!(plan.placement.workers(), &[1, 2, 3]);
        assert_eq!(plan.moves, vec![(3, 2, 3)]);
        assert_eq!((plan.resume_batch, plan.rerun.clone()), (10, 10..10), "nothing runs again");
        // Lost and joined at once: the joined worker shares the lost one's partitions.
        let plan =
            plan_recovery(&placement, &[1], &[3], Some(&record), 12, &SurvivingOutputs::default()).expect("a plan");
        assert_eq!(plan.placement.workers(), &[2, 3]);
        assert_eq!(plan.rerun, 10..12);
    }

    /// Workers, partitions, which workers are lost (bit w), the checkpoint's batch and how
    /// many batches were sent past it.
    fn loss(
        partitions_max: u32,
        checkpoint_max: u64,
        sent_max: u64,
    ) -> impl Strategy<Value = (u32, u32, u16, Option<u64>, u64)> {
        (1u32..7, 1u32..partitions_max, 1u16..u16::MAX, proptest::option::of(0u64..checkpoint_max), 0u64..sent_max)
    }

    fn cluster_after_loss(
        workers: u32,
        partitions: u32,
        lost_mask: u16,
        checkpoint_batch: Option<u64>,
    ) -> (Vec<WorkerId>, Vec<WorkerId>, Placement, Option<CheckpointRecord>) {
        let all: Vec<WorkerId> = (1..=workers).collect();
        let lost = all.iter().copied().filter(|worker| lost_mask & (1 << worker) != 0).collect();
        let placement = Placement::new(all.clone(), partitions);
        (all, lost, placement, checkpoint_batch.map(|batch| checkpoint(batch, partitions)))
    }

    proptest! {
        /// For any placement, loss and checkpoint: every partition has exactly one owner, a
        /// live one; only the lost workers' partitions moved; the batches re-run are exactly
        /// those after the checkpoint up to the last one sent.
        #[test]
        fn the_plan_reruns_what_the_checkpoint_does_not_cover_and_owns_every_partition_once(
            (workers, partitions, lost_mask, checkpoint_batch, sent_beyond) in loss(24, 500, 300),
        ) {
            let (all, lost, placement, record) = cluster_after_loss(workers, partitions, lost_mask, checkpoint_batch);
            let next_batch = checkpoint_batch.map_or(0, |batch| batch + 1) + sent_beyond;
            let Some(plan) = plan_recovery(&placement, &lost, &[], record.as_ref(), next_batch, &SurvivingOutputs::default()) else {
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

        /// With outputs held: a source task of a re-run batch is reused exactly when its
        /// partition's owner survives and held every batch of the partition from the first
        /// re-run one through it; every other source task of the re-run batches runs again.
        /// The outputs held of batches the checkpoint covers are never used.
        #[test]
        fn source_tasks_run_again_exactly_where_the_checkpoint_and_the_survivors_outputs_do_not_cover_them(
            (workers, partitions, lost_mask, checkpoint_batch, sent_beyond) in loss(16, 50, 12),
            held_bits in proptest::collection::vec(any::<u16>(), 16),
            foreign_bits in proptest::collection::vec(any::<u16>(), 16),
        ) {
            let (all, lost, placement, record) = cluster_after_loss(workers, partitions, lost_mask, checkpoint_batch);
            let covered = checkpoint_batch.map_or(0, |batch| batch + 1);
            let next_batch = covered + sent_beyond;
            // Bit i of a partition's mask: batch `first_held + i` is held, by its owner or, when
            // the foreign bit is set, by another worker (a partition that moved before).
            let first_held = covered.saturating_sub(2);
            let holder = |partition: u32, batch: u64| -> Option<WorkerId> {
                let bit = batch.checked_sub(first_held).filter(|bit| *bit < 16)?;
                (held_bits[partition as usize] & (1 << bit) != 0).then(|| {
                    let owner = placement.worker_of(partition);
                    if foreign_bits[partition as usize] & (1 << bit) != 0 { owner % workers + 1 } else { owner }
                })
            };
            let mut surviving = SurvivingOutputs::default();
            for partition in 0..partitions {
                for batch in first_held..next_batch {
                    if let Some(worker) = holder(partition, batch) {
                        let range = Some(SourceRange::Time { start_ms: batch as i64, end_ms: batch as i64 + 1 });
                        surviving.record(StageId(0), partition, batch, HeldOutput { worker, range });
                    }
                }
            }
            let Some(plan) = plan_recovery(&placement, &lost, &[], record.as_ref(), next_batch, &surviving) else {
                prop_assert_eq!(lost.len(), all.len());
                return Ok(());
            };
            let reused = |partition: u32, batch: u64| {
                plan.reuse.iter().any(|reuse| reuse.run.partition == partition && reuse.run.batches.contains(&batch))
            };
            let mut run_again = 0;
            for partition in 0..partitions {
                let owner = placement.worker_of(partition);
                prop_assert_eq!(plan.placement.worker_of(partition) == owner, !lost.contains(&owner));
                for batch in 0..next_batch + 2 {
                    let expected = batch >= covered
                        && batch < next_batch
                        && !lost.contains(&owner)
                        && (covered..=batch).all(|earlier| holder(partition, earlier) == Some(owner));
                    prop_assert_eq!(reused(partition, batch), expected, "partition {} batch {}", partition, batch);
                    if plan.rerun.contains(&batch) && !expected {
                        run_again += 1;
                    }
                }
            }
            prop_assert_eq!(plan.reused_map_tasks() + run_again, (plan.rerun.end - plan.rerun.start) * partitions as u64);
            for reuse in &plan.reuse {
                prop_assert!(!reuse.run.batches.is_empty());
                let last = reuse.run.batches.end - 1;
                prop_assert_eq!(reuse.last_range, SourceRange::Time { start_ms: last as i64, end_ms: last as i64 + 1 });
            }
        }
    }
}
