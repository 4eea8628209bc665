//! What follows the end of an attempt: the job is over, or it goes on under a new attempt
//! (after a lost worker, or at the checkpoint where workers join or leave), or no worker is
//! left to go on with. Pure: the coordinator's shell gathers the facts, asks here, and does
//! the sending, saving and logging the answer calls for.
//!
//! ```text
//!  scheduler returns ─▶ classify_end ─▶ Over (finished, stopped, failed) ─▶ summary or error
//!                                    ─▶ Lost / Handoff ─▶ plan_next ─▶ None: no worker left
//!                                                                   ─▶ NextAttempt: new id,
//!                                       placement, record, who leaves now, what survivors keep
//!  the job's result ─▶ client_outcome ─▶ Finished or Failed, to every client following it
//! ```
//!
//! A loss always wins over a handoff: a scheduler that lost a worker returns the loss
//! whether or not it had ended early for joined workers, and a recovery covers the move to
//! them too (`plan_recovery` takes both).

use sleet_wire::{DriverToClient, JobId, JobSummary, RebalanceRecord, RecoveryRecord, WorkerId};

use crate::checkpoints::CheckpointRecord;
use crate::error::DriverError;
use crate::job_link::Attempt;
use crate::recovery::{plan_recovery, PlannedReuse, RecoveryPlan};
use crate::surviving_outputs::SurvivingOutputs;

/// How an attempt's scheduler returned, as the coordinator acts on it.
#[derive(Debug)]
pub enum AttemptEnd {
    /// The job is over: its last batch is done, it was stopped, or it failed in a way a new
    /// attempt cannot mend.
    Over(Result<(), DriverError>),
    /// A worker was lost: the job goes on without it if anyone is left.
    Lost { worker: WorkerId, error: DriverError },
    /// The scheduler ended the attempt at a checkpoint so that partitions can move to workers
    /// that joined or off workers that asked to leave.
    Handoff,
}

/// `handoff`: the scheduler ended the attempt early at a checkpoint (`JobSession::handoff_after`).
pub fn classify_end(result: Result<(), DriverError>, handoff: bool) -> AttemptEnd {
    match result {
        Err(DriverError::WorkerLost { worker, name, pid, batch, reason }) => {
            AttemptEnd::Lost { worker, error: DriverError::WorkerLost { worker, name, pid, batch, reason } }
        }
        Ok(()) if handoff => AttemptEnd::Handoff,
        other => AttemptEnd::Over(other),
    }
}

/// What the coordinator knows when an attempt ended short of the job's end.
pub struct EndedAttempt<'a> {
    pub attempt: &'a Attempt,
    /// The lost worker, and why as the log and the recovery record say it.
    pub lost: Option<(WorkerId, String)>,
    /// Workers that joined during the attempt and are still connected.
    pub joined: Vec<WorkerId>,
    /// Workers that asked to leave during the attempt.
    pub leaving: Vec<WorkerId>,
    /// The latest recorded checkpoint: where the next attempt's state comes from.
    pub checkpoint: Option<&'a CheckpointRecord>,
    /// The first batch no attempt has sent yet.
    pub next_batch: u64,
    pub surviving: &'a SurvivingOutputs,
    /// The id the next attempt runs under.
    pub next_job: JobId,
    pub decided_at_ms: i64,
}

/// How the job goes on after an attempt ended short of its end.
#[derive(Debug, PartialEq)]
pub struct NextAttempt {
    pub attempt: Attempt,
    pub plan: RecoveryPlan,
    /// What the summary keeps of the change.
    pub record: PlacementChange,
    /// Why the placement changes, for the log.
    pub cause: String,
    /// After a loss the ended attempt's survivors keep their map outputs, for the next
    /// attempt to take over (`reuse`); after a handoff its workers flush and let go.
    pub keep_map_outputs: bool,
    pub reuse: Option<(JobId, Vec<PlannedReuse>)>,
    /// Workers let go now: they asked to leave and their partitions moved off at a handoff.
    pub released: Vec<WorkerId>,
    /// Workers that asked to leave and stay until the job ends, because nobody else would
    /// be left to take their partitions over.
    pub still_leaving: Vec<WorkerId>,
}

/// A recovery or a rebalance, as `JobStats` records it.
#[derive(Debug, PartialEq)]
pub enum PlacementChange {
    Recovered(RecoveryRecord),
    Rebalanced(RebalanceRecord),
}

/// The next attempt after `ended`, or `None` when no worker is left to run it. Workers that
/// asked to leave go with the change unless nobody would be left (then they stay until the
/// job ends); with a loss they are counted as gone too.
pub fn plan_next(ended: EndedAttempt<'_>) -> Option<NextAttempt> {
    let EndedAttempt { attempt, lost, joined, mut leaving, checkpoint, next_batch, surviving, next_job, decided_at_ms } =
        ended;
    let remaining = attempt.placement.workers().iter().filter(|worker| !leaving.contains(worker)).count();
    let mut still_leaving = Vec::new();
    if remaining + joined.len() == 0 && lost.is_none() {
        still_leaving = std::mem::take(&mut leaving);
    }
    let mut gone: Vec<WorkerId> = lost.iter().map(|(worker, _)| *worker).collect();
    gone.extend(&leaving);
    let plan = plan_recovery(&attempt.placement, &gone, &joined, checkpoint, next_batch, surviving)?;
    let cause = match &lost {
        Some((_, reason)) => reason.clone(),
        None => {
            let joined = (!joined.is_empty()).then(|| format!("workers {joined:?} joined"));
            let left = (!leaving.is_empty()).then(|| format!("workers {leaving:?} leave"));
            joined.into_iter().chain(left).collect::<Vec<_>>().join(" and ")
        }
    };
    let rerun_batches = plan.rerun.end - plan.rerun.start;
    let keep_map_outputs = lost.is_some();
    let record = match lost {
        Some((lost_worker, reason)) => PlacementChange::Recovered(RecoveryRecord {
            lost_worker,
            reason,
            detected_at_ms: decided_at_ms,
            checkpoint_batch: checkpoint.map(|c| c.batch),
            resume_batch: plan.resume_batch,
            rerun_batches,
            // Counted once the next attempt is registered: what it could take over.
            reused_map_tasks: 0,
            moves: plan.moves.clone(),
            workers: plan.placement.workers().to_vec(),
            driver_restarts: 0,
        }),
        None => PlacementChange::Rebalanced(RebalanceRecord {
            joined,
            left: leaving.clone(),
            at_ms: decided_at_ms,
            checkpoint_batch: checkpoint.map_or(0, |c| c.batch),
            resume_batch: plan.resume_batch,
            rerun_batches,
            moves: plan.moves.clone(),
            workers: plan.placement.workers().to_vec(),
            driver_restarts: 0,
        }),
    };
    let next = Attempt {
        job: next_job,
        number: attempt.number + 1,
        placement: plan.placement.clone(),
        first_batch: plan.resume_batch,
    };
    Some(NextAttempt {
        attempt: next,
        reuse: keep_map_outputs.then(|| (attempt.job, plan.reuse.clone())),
        plan,
        record,
        cause,
        keep_map_outputs,
        released: if keep_map_outputs { Vec::new() } else { leaving },
        still_leaving,
    })
}

/// What every client following `job` is told at its end.
pub fn client_outcome(job: JobId, result: Result<JobSummary, DriverError>) -> DriverToClient {
    match result {
        Ok(summary) => DriverToClient::Finished(Box::new(summary)),
        Err(error) => DriverToClient::Failed { job, reason: sleet_wire::error_chain(&error) },
    }
}

#[cfg(test)]
mod tests {
    use sleet_plan::{SourceRange, StageId};
    use sleet_wire::ReusedRun;

    use super::*;
    use crate::placement::Placement;
    use crate::surviving_outputs::HeldOutput;

    fn lost_error(worker: WorkerId) -> DriverError {
        let (name, reason) = (format!("w{worker}"), "its connection closed".to_string());
        DriverError::WorkerLost { worker, name, pid: 7, batch: 12, reason }
    }

    fn checkpoint_after(batch: u64) -> CheckpointRecord {
        CheckpointRecord {
            job: 1,
            attempt_job: 1,
            batch,
            snapshots: Vec::new(),
            source_ranges: Vec::new(),
            recorded_at_ms: 0,
        }
    }

    /// Attempt 0 of job 1 on workers 1, 2, 3 with six partitions, ended at `next_batch` 14
    /// after the checkpoint `checkpoint`; the next id free is 5.
    fn check(
        lost: Option<WorkerId>,
        joined: &[WorkerId],
        leaving: &[WorkerId],
        checkpoint: Option<u64>,
        surviving: &SurvivingOutputs,
    ) -> Option<NextAttempt> {
        let attempt = Attempt { job: 1, number: 0, placement: Placement::new(vec![1, 2, 3], 6), first_batch: 0 };
        let checkpoint = checkpoint.map(checkpoint_after);
        plan_next(EndedAttempt {
            attempt: &attempt,
            lost: lost.map(|worker| (worker, sleet_wire::error_chain(&lost_error(worker)))),
            joined: joined.to_vec(),
            leaving: leaving.to_vec(),
            checkpoint: checkpoint.as_ref(),
            next_batch: 14,
            surviving,
            next_job: 5,
            decided_at_ms: 900,
        })
    }

    #[test]
    fn a_loss_ends_the_attempt_before_a_handoff_and_a_stop_or_finish_ends_the_job() {
        assert!(matches!(classify_end(Err(lost_error(2)), false), AttemptEnd::Lost { worker: 2, .. }));
        assert!(matches!(classify_end(Err(lost_error(2)), true), AttemptEnd::Lost { worker: 2, .. }));
        assert!(matches!(classify_end(Ok(()), true), AttemptEnd::Handoff));
        // A finished or stopped attempt returns without a handoff.
        assert!(matches!(classify_end(Ok(()), false), AttemptEnd::Over(Ok(()))));
        let timeout = DriverError::StageTimeout { stage: StageId(1), batch: 3, timeout_s: 60, workers: vec![2] };
        assert!(
            matches!(
                classify_end(Err(timeout), true),
                AttemptEnd::Over(Err(DriverError::StageTimeout { batch: 3, .. }))
            ),
            "no new attempt mends a stage timeout"
        );
    }

    #[test]
    fn a_worker_lost_mid_group_moves_its_partitions_and_survivors_hand_on_what_they_hold() {
        // Worker 1 holds partition 0's source output of batches 10 and 11; worker 2 held
        // partition 1's, which is lost with it.
        let mut surviving = SurvivingOutputs::default();
        for (partition, worker) in [(0, 1), (1, 2)] {
            for batch in [10, 11] {
                let range = Some(SourceRange::Offsets { start: 0, end: batch as i64 });
                surviving.record(StageId(0), partition, batch, HeldOutput { worker, range });
            }
        }
        let next = check(Some(2), &[], &[], Some(9), &surviving).expect("two workers survive");
        assert_eq!((next.attempt.job, next.attempt.number, next.attempt.first_batch), (5, 1, 10));
        assert_eq!(next.attempt.placement.workers(), [1, 3]);
        assert_eq!(next.plan.moves, vec![(1, 2, 1), (4, 2, 3)]);
        let expected = RecoveryRecord {
            lost_worker: 2,
            reason: "worker 2 (w2, pid 7) was lost during batch 12: its connection closed".into(),
            detected_at_ms: 900,
            checkpoint_batch: Some(9),
            resume_batch: 10,
            rerun_batches: 4,
            reused_map_tasks: 0,
            moves: vec![(1, 2, 1), (4, 2, 3)],
            workers: vec![1, 3],
            driver_restarts: 0,
        };
        assert_eq!(next.record, PlacementChange::Recovered(expected));
        assert_eq!(next.cause, "worker 2 (w2, pid 7) was lost during batch 12: its connection closed");
        assert!(next.keep_map_outputs);
        let (from_job, reuse) = next.reuse.expect("survivors keep their outputs");
        let runs: Vec<&ReusedRun> = reuse.iter().map(|reuse| &reuse.run).collect();
        assert_eq!(from_job, 1);
        assert_eq!(runs, vec![&ReusedRun { stage: StageId(0), partition: 0, batches: 10..12 }]);
    }

    #[test]
    fn without_a_checkpoint_a_loss_reruns_every_batch_sent() {
        let next = check(Some(3), &[], &[], None, &SurvivingOutputs::default()).expect("two survive");
        assert_eq!((next.attempt.first_batch, next.plan.rerun.clone()), (0, 0..14));
        let PlacementChange::Recovered(record) = next.record else { panic!("a loss is a recovery") };
        assert_eq!((record.checkpoint_batch, record.rerun_batches), (None, 14));
    }

    #[test]
    fn joined_and_leaving_workers_take_and_hand_off_partitions_at_the_checkpoint() {
        let next = check(None, &[4], &[1], Some(13), &SurvivingOutputs::default()).expect("workers remain");
        assert_eq!((next.attempt.job, next.attempt.number, next.attempt.first_batch), (5, 1, 14));
        assert_eq!(next.attempt.placement.workers(), [2, 3, 4]);
        assert_eq!(next.cause, "workers [4] joined and workers [1] leave");
        let PlacementChange::Rebalanced(record) = &next.record else { panic!("nothing was lost") };
        assert_eq!((&record.joined, &record.left, record.checkpoint_batch), (&vec![4], &vec![1], 13));
        assert_eq!(record.rerun_batches, 0, "the handoff waited for the checkpoint");
        // Worker 1's partitions go to the others, then the most loaded hand one each to 4.
        assert_eq!(next.plan.moves, vec![(0, 1, 2), (3, 1, 3), (4, 2, 4), (5, 3, 4)]);
        assert!(!next.keep_map_outputs && next.reuse.is_none());
        assert_eq!((next.released, next.still_leaving), (vec![1], vec![]));
    }

    #[test]
    fn the_last_workers_cannot_all_leave_while_the_job_runs() {
        let next = check(None, &[], &[1, 2, 3], Some(13), &SurvivingOutputs::default()).expect("they stay");
        assert_eq!(next.attempt.placement.workers(), [1, 2, 3]);
        assert_eq!((next.released, next.still_leaving), (vec![], vec![1, 2, 3]));
        let PlacementChange::Rebalanced(record) = &next.record else { panic!("nothing was lost") };
        assert!(record.left.is_empty() && record.moves.is_empty());
    }

    #[test]
    fn no_worker_left_gives_up() {
        let surviving = SurvivingOutputs::default();
        let attempt = Attempt { job: 1, number: 2, placement: Placement::new(vec![4], 2), first_batch: 3 };
        let ended = EndedAttempt {
            attempt: &attempt,
            lost: Some((4, "gone".into())),
            joined: Vec::new(),
            leaving: Vec::new(),
            checkpoint: None,
            next_batch: 5,
            surviving: &surviving,
            next_job: 9,
            decided_at_ms: 0,
        };
        assert_eq!(plan_next(ended), None);
        // With a loss, workers that asked to leave count as gone too.
        assert_eq!(check(Some(1), &[], &[2, 3], Some(9), &surviving), None);
    }

    #[test]
    fn the_client_hears_the_summary_or_the_whole_reason() {
        let summary = JobSummary { job: 1, batches_total: 8, ..JobSummary::default() };
        assert_eq!(client_outcome(1, Ok(summary.clone())), DriverToClient::Finished(Box::new(summary)));
        let error = DriverError::NoWorkerLeft(Box::new(lost_error(2)));
        let expected =
            "worker 2 (w2, pid 7) was lost during batch 12: its connection closed; no worker is left to recover on";
        assert_eq!(client_outcome(1, Err(error)), DriverToClient::Failed { job: 1, reason: expected.into() });
    }
}
