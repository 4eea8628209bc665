//! What a recovery needs from the attempts before it, kept from the latest checkpoint on:
//! the offsets each batch read (`ReplayLog`) and the source outputs survivors hold
//! (`SurvivingOutputs`). Pure.
//!
//! ```text
//!  accepted source report ─▶ task_succeeded ─▶ replay log (offsets) · surviving outputs (kept)
//!  checkpoint recorded ─▶ checkpoint_recorded ─▶ both drop what it covers
//!  attempt ends ─▶ plan_recovery reads `surviving` ─▶ attempt_ended clears it
//!  next attempt registers ─▶ replay_from(its first batch)
//!  state dir ◀─▶ saved_replay / restored (a restarted driver replays the same offsets)
//! ```
//!
//! This is correctness state, not statistics: exactly-once output to Kafka rests on a re-run
//! batch reading the offsets of its first run. It lives beside `JobStats` in the
//! `JobSession`, so the figures can be cut, bounded or dropped without touching it.

use sleet_wire::{TaskReport, TaskStats};

use crate::replay_log::ReplayLog;
use crate::surviving_outputs::{HeldOutput, SurvivingOutputs};

#[derive(Debug, Default)]
pub struct RecoveryState {
    /// The offsets each batch read since the latest checkpoint, for a recovery to replay.
    replay: ReplayLog,
    /// The source outputs workers keep since the latest checkpoint, for a recovery to reuse.
    surviving: SurvivingOutputs,
}

impl RecoveryState {
    /// The state a driver before this one saved (`SavedFigures::replay`), less what the
    /// checkpoint after `checkpoint_batch` covers. Survivors' outputs are not among it: a
    /// restarted driver's workers are all new to it.
    pub fn restored(saved_replay: &[(u32, Vec<(u64, i64)>)], checkpoint_batch: Option<u64>) -> Self {
        RecoveryState { replay: ReplayLog::restored(saved_replay, checkpoint_batch), ..RecoveryState::default() }
    }

    /// A task's success the scheduler accepted: what its source read, and whether its worker
    /// keeps its output.
    pub fn task_succeeded(&mut self, report: &TaskReport, stats: &TaskStats) {
        if stats.retained {
            let held = HeldOutput { worker: report.worker, range: stats.source_range };
            self.surviving.record(report.task.stage, report.task.partition, report.task.batch, held);
        }
        if let Some(range) = stats.source_range {
            if let Some(logged) = self.replay.record(report.task.partition, report.task.batch, range) {
                eprintln!(
                    "sleet driver: replay mismatch: batch {} of source partition {} re-read {range:?}, its first run ended at {logged}",
                    report.task.batch, report.task.partition
                );
            }
        }
    }

    /// A checkpoint after `batch` is durable: nothing up to it is re-run, and workers drop
    /// the outputs they kept of those batches.
    pub fn checkpoint_recorded(&mut self, batch: u64) {
        self.replay.forget_through(batch);
        self.surviving.forget_through(batch);
    }

    /// What survivors of the running attempt hold, for `plan_recovery`.
    pub fn surviving(&self) -> &SurvivingOutputs {
        &self.surviving
    }

    /// The attempt ended: what it held is either reused by the next one (whose reports say
    /// so again) or dropped by its workers.
    pub fn attempt_ended(&mut self) {
        self.surviving.clear();
    }

    /// Per Kafka partition, the ends of the batches from `first_batch` on that an attempt
    /// starting there re-reads (`ReplayLog::replay_from`).
    pub fn replay_from(&mut self, first_batch: u64) -> Vec<(u32, Vec<(u64, i64)>)> {
        self.replay.replay_from(first_batch)
    }

    /// The replay log as the state directory keeps it, at most `entries_max` entries.
    pub fn saved_replay(&self, entries_max: usize) -> Vec<(u32, Vec<(u64, i64)>)> {
        self.replay.saved(entries_max)
    }
}

#[cfg(test)]
mod tests {
    use sleet_plan::{SourceRange, StageId};
    use sleet_wire::{TaskId, TaskOutcome};

    use super::*;

    /// A source task's report: batch `batch` of partition `partition` on worker 3, which
    /// read offsets `[end - 10, end)` and kept its output when `retained`.
    fn source_report(partition: u32, batch: u64, end: i64, retained: bool) -> (TaskReport, TaskStats) {
        let stats = TaskStats {
            source_range: Some(SourceRange::Offsets { start: end - 10, end }),
            retained,
            ..TaskStats::default()
        };
        let report = TaskReport {
            task: TaskId { job: 1, stage: StageId(0), partition, batch },
            worker: 3,
            group: None,
            outcome: TaskOutcome::Succeeded(stats.clone()),
            monotasks: Vec::new(),
            started_at_us: 0,
            finished_at_us: 1,
        };
        (report, stats)
    }

    fn held_batches(state: &RecoveryState, partition: u32) -> Vec<u64> {
        state.surviving().of(StageId(0), partition).map_or(Vec::new(), |held| held.keys().copied().collect())
    }

    #[test]
    fn a_source_report_is_kept_for_replay_and_reuse_until_a_checkpoint_covers_it() {
        let mut state = RecoveryState::default();
        for batch in 0..4 {
            let (report, stats) = source_report(0, batch, 10 * (batch as i64 + 1), batch != 2);
            state.task_succeeded(&report, &stats);
        }
        assert_eq!(held_batches(&state, 0), vec![0, 1, 3], "batch 2's worker kept nothing");
        state.checkpoint_recorded(1);
        assert_eq!(held_batches(&state, 0), vec![3]);
        assert_eq!(state.saved_replay(usize::MAX), vec![(0, vec![(2, 30), (3, 40)])]);
        state.attempt_ended();
        assert_eq!(held_batches(&state, 0), Vec::<u64>::new(), "a new attempt reports anew");
        assert_eq!(state.replay_from(2), vec![(0, vec![(2, 30), (3, 40)])], "the replay outlives the attempt");
    }

    #[test]
    fn a_restored_state_replays_what_was_saved_past_its_checkpoint() {
        let mut state = RecoveryState::default();
        for batch in 0..5 {
            let (report, stats) = source_report(1, batch, 100 + batch as i64, true);
            state.task_succeeded(&report, &stats);
        }
        let mut restored = RecoveryState::restored(&state.saved_replay(usize::MAX), Some(2));
        assert_eq!(restored.replay_from(3), vec![(1, vec![(3, 103), (4, 104)])]);
        assert!(restored.surviving().slots().next().is_none(), "the workers are new to this driver");
    }
}
