//! Taking in the reports of a status message, the same way under both schedulers: a failure
//! stops the job; a success the scheduler was waiting for counts in the job's figures. Pure.
//!
//! Reports of an earlier attempt of the job (tasks still running on a survivor when a
//! worker was lost, a frozen worker waking up) are dropped unread: that attempt's work is
//! being redone, so neither its results nor its failures count.

use sleet_wire::{JobId, StatusBatch, TaskOutcome, TaskReport, TaskStats};

use crate::job_link::TaskFailure;
use crate::progress::JobStats;
use crate::recovery_state::RecoveryState;

/// Hands every successful report of attempt `job` to `accept`, which says whether the
/// scheduler was waiting for it (a repeat, or a task past a stop, is not counted twice), and
/// adds the accepted ones' work to `stats` and what a recovery needs of them to `recovery`.
/// Stops at the first failure and returns it.
pub fn take_reports(
    status: &StatusBatch,
    job: JobId,
    stats: &mut JobStats,
    recovery: &mut RecoveryState,
    mut accept: impl FnMut(&TaskReport, &TaskStats) -> bool,
) -> Result<(), TaskFailure> {
    for report in status.reports.iter().filter(|report| report.task.job == job) {
        let accepted = match &report.outcome {
            TaskOutcome::Succeeded(task_stats) => accept(report, task_stats),
            TaskOutcome::Failed { reason } => {
                return Err(TaskFailure { task: report.task, worker: report.worker, reason: reason.clone() })
            }
        };
        if let (true, TaskOutcome::Succeeded(task_stats)) = (accepted, &report.outcome) {
            recovery.task_succeeded(report, task_stats);
            stats.add_task(report, task_stats);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sleet_plan::{SchedulerKind, SourceRange, StageId};
    use sleet_wire::TaskId;

    use super::*;

    fn report(partition: u32, outcome: TaskOutcome) -> TaskReport {
        report_of(1, partition, outcome)
    }

    fn report_of(job: u64, partition: u32, outcome: TaskOutcome) -> TaskReport {
        TaskReport {
            task: TaskId { job, stage: StageId(0), partition, batch: 0 },
            worker: 3,
            group: None,
            outcome,
            monotasks: Vec::new(),
            started_at_us: 0,
            finished_at_us: 1,
        }
    }

    #[test]
    fn only_accepted_reports_count_and_a_failure_stops_the_intake() {
        let source = TaskStats {
            source_range: Some(SourceRange::Time { start_ms: 0, end_ms: 10 }),
            records_in: 5,
            retained: true,
            ..TaskStats::default()
        };
        let status = StatusBatch {
            registered: Vec::new(),
            reports: vec![
                report_of(7, 9, TaskOutcome::Failed { reason: "an earlier attempt's".into() }),
                report(0, TaskOutcome::Succeeded(source.clone())),
                report(1, TaskOutcome::Succeeded(source.clone())),
                report(2, TaskOutcome::Failed { reason: "disk full".into() }),
                report(3, TaskOutcome::Succeeded(source)),
            ],
        };
        let mut stats = JobStats::new(1, 0, SchedulerKind::Group);
        let mut recovery = RecoveryState::default();
        let mut seen = Vec::new();
        let failure = take_reports(&status, 1, &mut stats, &mut recovery, |report, _| {
            seen.push(report.task.partition);
            report.task.partition == 1
        })
        .expect_err("partition 2 failed");
        assert_eq!((failure.task.partition, failure.worker, failure.reason.as_str()), (2, 3, "disk full"));
        assert_eq!(seen, vec![0, 1], "nothing after the failure is taken, nothing of another attempt");
        let kept: Vec<(StageId, u32)> = recovery.surviving().slots().collect();
        assert_eq!(kept, vec![(StageId(0), 1)], "only the accepted report's kept output is known");
    }
}
