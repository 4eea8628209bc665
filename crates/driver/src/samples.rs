//! The performance model's samples (`sleet_clarity::RunSamples`), taken from what the driver
//! already receives: a `TaskSample` per accepted task report, a `BatchSample` per batch at its
//! first completion, its coordination filled in when its group closes. Pure.
//!
//! ```text
//!  TaskReport ──task()──▶ pending[batch] ──batch_completed()──▶ log (most recent batches)
//!  GroupRecord ──group_closed()──▶ coordination ÷ size onto the group's batches in the log
//!  log ──run_samples()──▶ JobSummary.samples      log ──recent()──▶ the live model
//! ```

use std::collections::{BTreeMap, VecDeque};

use sleet_clarity::{BatchSample, ClusterShape, MonotaskRecord, RunSamples, TaskSample};
use sleet_wire::{BatchRecord, GroupRecord, TaskReport, TaskStats};

/// Batches whose samples are kept (the most recent ones). The summary carries them to the
/// client and the bench writes them into its result file, so `sleet explain` can answer new
/// questions later: a ysb batch on 2 workers is 4 tasks of 2–3 monotasks, about 2 KB of JSON,
/// so 2 000 batches (200 s of 100 ms batches, 20 s of 10 ms ones: enough for every analysis's
/// percentiles) keep a summary at a few MB.
pub const SAMPLE_BATCHES_MAX: usize = 2_000;
/// Task samples kept, whatever the batches: a cluster with many partitions has many tasks
/// per batch, and this keeps its summary as small as ysb's on 2 workers.
pub const SAMPLE_TASKS_MAX: usize = 8_000;
/// Task samples of batches not yet complete. Open batches are bounded by the schedulers (two
/// groups in flight, a catch-up group of up to 1024 batches), so this is only a backstop: past
/// it, the oldest open batch's samples are dropped and that batch gets none.
const PENDING_TASKS_MAX: usize = 64_000;

/// One completed batch with its tasks.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    batch: BatchSample,
    /// The group it ran in, until the group's record gave the batch its coordination.
    awaiting_group: Option<u64>,
    tasks: BatchTasks,
}

/// A batch's task samples with their monotask records side by side, in two lists per batch.
/// A list of records per task made an allocation per report, made on the thread that decoded
/// the report and freed, hundreds of batches later, on the one that evicts the sample: those
/// frees across threads were a tenth of the driver's time at 16 workers and 0.04 ms batches.
#[derive(Debug, Clone, Default, PartialEq)]
struct BatchTasks {
    /// Each task's sample, its `monotasks` left empty, and where its records end in `monotasks`.
    tasks: Vec<(TaskSample, usize)>,
    monotasks: Vec<MonotaskRecord>,
}

impl BatchTasks {
    fn with_capacity(tasks: usize, monotasks: usize) -> Self {
        BatchTasks { tasks: Vec::with_capacity(tasks), monotasks: Vec::with_capacity(monotasks) }
    }

    fn push(&mut self, sample: TaskSample, monotasks: &[MonotaskRecord]) {
        self.monotasks.extend_from_slice(monotasks);
        self.tasks.push((sample, self.monotasks.len()));
    }

    fn len(&self) -> usize {
        self.tasks.len()
    }

    fn started_at_us(&self) -> impl Iterator<Item = i64> + '_ {
        self.tasks.iter().map(|(task, _)| task.started_at_us)
    }

    /// The samples whole, each with its own records.
    fn samples(&self) -> impl Iterator<Item = TaskSample> + '_ {
        let starts = std::iter::once(0).chain(self.tasks.iter().map(|(_, end)| *end));
        self.tasks
            .iter()
            .zip(starts)
            .map(|((task, end), start)| TaskSample { monotasks: self.monotasks[start..*end].to_vec(), ..task.clone() })
    }
}

#[derive(Debug, Default)]
pub struct SampleLog {
    shape: Option<ClusterShape>,
    pending: BTreeMap<u64, BatchTasks>,
    pending_tasks: usize,
    /// The last completed batch's task and monotask counts: a new batch's lists are sized for
    /// as many, instead of growing from four a push at a time (five allocations at 32 tasks).
    batch_size_hint: (usize, usize),
    log: VecDeque<Entry>,
    logged_tasks: usize,
}

/// A task's report as the model takes it, without its monotask records: the log keeps those
/// beside the sample (`BatchTasks`) and puts them back when it hands samples out.
fn task_sample(report: &TaskReport, stats: &TaskStats) -> TaskSample {
    TaskSample {
        stage: report.task.stage.0,
        partition: report.task.partition,
        batch: report.task.batch,
        worker: report.worker,
        started_at_us: report.started_at_us,
        finished_at_us: report.finished_at_us,
        records_in: stats.records_in,
        monotasks: Vec::new(),
    }
}

/// A completed batch as the model takes it. It closed at its scheduled end and finished when
/// its last task ended on its worker, not when the driver heard of it: status messages are
/// batched (up to a second under group scheduling), and that delay is not a reader's latency,
/// since the results were visible in the sink before. Its first task's start comes from the
/// task samples, in µs; without any, from the record, in ms. Its events' wait for the close is
/// the events-weighted mean its sources measured, when they did.
pub fn batch_sample(
    record: &BatchRecord,
    task_started_at_us: impl Iterator<Item = i64>,
    coordination_us: i64,
) -> BatchSample {
    BatchSample {
        batch: record.batch,
        closed_at_us: record.scheduled_end_ms * 1000,
        first_task_started_at_us: task_started_at_us.min().unwrap_or(record.launched_at_ms * 1000),
        finished_at_us: record.finished_at_us,
        coordination_us,
        events: record.events_in,
        event_wait_us: record.event_wait.and_then(|wait| wait.mean_us()),
        committed_at_us: None,
    }
}

impl SampleLog {
    /// The cluster an attempt runs on; the latest one describes the samples.
    pub fn set_shape(&mut self, shape: ClusterShape) {
        self.shape = Some(shape);
    }

    /// A task of a batch not yet counted.
    pub fn task(&mut self, report: &TaskReport, stats: &TaskStats, monotasks: &[MonotaskRecord]) {
        let (tasks, records) = self.batch_size_hint;
        self.pending
            .entry(report.task.batch)
            .or_insert_with(|| BatchTasks::with_capacity(tasks, records))
            .push(task_sample(report, stats), monotasks);
        self.pending_tasks += 1;
        while self.pending_tasks > PENDING_TASKS_MAX {
            let Some((_, dropped)) = self.pending.pop_first() else { break };
            self.pending_tasks -= dropped.len();
        }
    }

    /// An attempt failed: the tasks its open batches ran are redone by the next attempt, and
    /// a batch's sample holds the tasks of the run that completed it.
    pub fn attempt_failed(&mut self) {
        self.pending.clear();
        self.pending_tasks = 0;
    }

    /// A batch completed again (a re-run): its first completion's sample stands.
    pub fn discard(&mut self, batch: u64) {
        if let Some(dropped) = self.pending.remove(&batch) {
            self.pending_tasks -= dropped.len();
        }
    }

    /// A batch's first completion. `coordination_us` is known under bsp (the driver's time on
    /// the batch); under group scheduling it comes with the group's record (`group_closed`).
    pub fn batch_completed(&mut self, record: &BatchRecord, coordination_us: Option<i64>) {
        let tasks = self.pending.remove(&record.batch).unwrap_or_default();
        self.pending_tasks -= tasks.len();
        self.batch_size_hint = (tasks.len(), tasks.monotasks.len());
        let awaiting_group = if coordination_us.is_some() { None } else { record.group };
        let batch = batch_sample(record, tasks.started_at_us(), coordination_us.unwrap_or(0));
        self.logged_tasks += tasks.len();
        self.log.push_back(Entry { batch, awaiting_group, tasks });
        while self.log.len() > SAMPLE_BATCHES_MAX || (self.logged_tasks > SAMPLE_TASKS_MAX && self.log.len() > 1) {
            let evicted = self.log.pop_front().expect("not empty");
            self.logged_tasks -= evicted.tasks.len();
        }
    }

    /// A group closed: each of its batches gets an equal share of its coordination. Its
    /// batches are among the most recent (groups close once all their batches are done, and
    /// batches complete almost in order), so only the last few entries are looked at.
    pub fn group_closed(&mut self, group: &GroupRecord) {
        let coordination_us = group.schedule_us + group.register_us + group.status_us + group.coordination_wait_us;
        let share_us = coordination_us.max(0) / i64::from(group.size.max(1));
        let look_back = 2 * group.size as usize + 64;
        for entry in self.log.iter_mut().rev().take(look_back) {
            if entry.awaiting_group == Some(group.group) {
                entry.batch.coordination_us = share_us;
                entry.awaiting_group = None;
            }
        }
    }

    /// A published commit admitted every batch up to `through`: those without a commit time
    /// get `at_us`. Commits only move forward, so the walk from the newest entry stops at the
    /// first one at or below `through` that a publication stamped before.
    pub fn committed_through(&mut self, through: u64, at_us: i64) {
        for entry in self.log.iter_mut().rev() {
            if entry.batch.batch > through {
                continue;
            }
            if entry.batch.committed_at_us.is_some() {
                break;
            }
            entry.batch.committed_at_us = Some(at_us);
        }
    }

    /// Every kept sample, batches in order; `None` before an attempt started or without batches.
    pub fn run_samples(&self) -> Option<RunSamples> {
        self.samples(self.log.iter())
    }

    /// The samples of the most recent batches (at most `batches_max`) that closed within
    /// `span_us` of the newest one and whose coordination is known: what the live model
    /// reads. Cloning them costs as much as the model itself, so the caller bounds both.
    pub fn recent(&self, span_us: i64, batches_max: usize) -> Option<RunSamples> {
        let newest = self.log.iter().map(|entry| entry.batch.closed_at_us).max()?;
        let recent = self
            .log
            .iter()
            .rev()
            .filter(|entry| entry.awaiting_group.is_none() && entry.batch.closed_at_us >= newest - span_us)
            .take(batches_max);
        self.samples(recent)
    }

    fn samples<'a>(&self, entries: impl Iterator<Item = &'a Entry>) -> Option<RunSamples> {
        let shape = self.shape?;
        let mut batches = Vec::new();
        let mut tasks = Vec::new();
        for entry in entries {
            batches.push(entry.batch.clone());
            tasks.extend(entry.tasks.samples());
        }
        if batches.is_empty() {
            return None;
        }
        batches.sort_by_key(|batch| batch.batch);
        Some(RunSamples { shape, batches, tasks, host: None })
    }
}

#[cfg(test)]
mod tests {
    use sleet_clarity::{EventWait, MonotaskKind, Resource};
    use sleet_plan::StageId;
    use sleet_wire::{TaskId, TaskOutcome};

    use super::*;

    fn report(stage: u32, partition: u32, batch: u64, span: (i64, i64)) -> TaskReport {
        let monotask = MonotaskRecord {
            kind: MonotaskKind::MapCompute,
            resource: Resource::Cpu,
            bytes: 64,
            queued_at_us: span.0,
            started_at_us: span.0 + 10,
            finished_at_us: span.1,
        };
        TaskReport {
            task: TaskId { job: 1, stage: StageId(stage), partition, batch },
            worker: 7 + partition,
            group: Some(3),
            outcome: TaskOutcome::Succeeded(TaskStats::default()),
            monotasks: vec![monotask],
            started_at_us: span.0,
            finished_at_us: span.1,
        }
    }

    fn sample_of(report: &TaskReport, stats: &TaskStats) -> TaskSample {
        TaskSample { monotasks: report.monotasks.clone(), ..task_sample(report, stats) }
    }

    fn log_task(log: &mut SampleLog, report: &TaskReport, stats: &TaskStats) {
        log.task(report, stats, &report.monotasks);
    }

    fn stats(records_in: u64) -> TaskStats {
        TaskStats { records_in, ..TaskStats::default() }
    }

    fn record(batch: u64, group: Option<u64>) -> BatchRecord {
        BatchRecord {
            batch,
            group,
            scheduled_end_ms: 1_000 + 100 * batch as i64,
            launched_at_ms: 1_000 + 100 * batch as i64,
            finished_at_us: 1_000_000 + 100_000 * batch as i64 + 30_000,
            events_in: 500,
            event_wait: Some(EventWait { events: 500, wait_sum_ms: 25_001 }),
            ..BatchRecord::default()
        }
    }

    fn shape() -> ClusterShape {
        ClusterShape {
            workers: 2,
            cores_per_worker: 1,
            batch_interval_ms: 100,
            net_bytes_per_s: None,
            disk_bytes_per_s: None,
        }
    }

    #[test]
    fn a_report_becomes_a_task_sample_field_for_field() {
        let got = sample_of(&report(1, 2, 9, (1_000, 1_500)), &stats(42));
        let expected = TaskSample {
            stage: 1,
            partition: 2,
            batch: 9,
            worker: 9,
            started_at_us: 1_000,
            finished_at_us: 1_500,
            records_in: 42,
            monotasks: vec![MonotaskRecord {
                kind: MonotaskKind::MapCompute,
                resource: Resource::Cpu,
                bytes: 64,
                queued_at_us: 1_000,
                started_at_us: 1_010,
                finished_at_us: 1_500,
            }],
        };
        assert_eq!(got, expected);
    }

    #[test]
    fn a_batch_closes_at_its_scheduled_end_and_starts_with_its_first_task_in_us() {
        let tasks = [
            sample_of(&report(0, 0, 0, (1_000_700, 1_010_000)), &stats(1)),
            sample_of(&report(0, 1, 0, (1_000_300, 1_012_000)), &stats(1)),
        ];
        let got = batch_sample(&record(0, Some(3)), tasks.iter().map(|task| task.started_at_us), 250);
        let expected = BatchSample {
            batch: 0,
            closed_at_us: 1_000_000,
            first_task_started_at_us: 1_000_300,
            finished_at_us: 1_030_000,
            coordination_us: 250,
            events: 500,
            event_wait_us: Some(50_002),
            committed_at_us: None,
        };
        assert_eq!(got, expected);
        assert_eq!(
            batch_sample(&record(0, None), [].into_iter(), 0).first_task_started_at_us,
            1_000_000,
            "from the record"
        );
        let unmeasured = BatchRecord { event_wait: None, ..record(0, None) };
        assert_eq!(
            batch_sample(&unmeasured, [].into_iter(), 0).event_wait_us,
            None,
            "no source knew its events' times"
        );
    }

    #[test]
    fn a_batch_keeps_its_own_tasks_and_its_groups_coordination_share() {
        let mut log = SampleLog::default();
        assert_eq!(log.run_samples(), None, "nothing without a shape");
        log.set_shape(shape());
        log_task(&mut log, &report(0, 0, 0, (1, 2)), &stats(10));
        log_task(&mut log, &report(0, 0, 1, (3, 4)), &stats(11));
        log_task(&mut log, &report(1, 0, 0, (5, 6)), &stats(12));
        log.batch_completed(&record(0, Some(3)), None);
        log.batch_completed(&record(1, Some(3)), None);
        assert_eq!(log.recent(i64::MAX, 10), None, "no batch's coordination is known yet");
        let group = GroupRecord {
            group: 3,
            first_batch: 0,
            size: 2,
            schedule_us: 100,
            register_us: 200,
            status_us: 300,
            coordination_wait_us: 400,
            ..GroupRecord::default()
        };
        log.group_closed(&group);
        let run = log.run_samples().expect("samples");
        let by_batch: Vec<(u64, i64)> = run.batches.iter().map(|b| (b.batch, b.coordination_us)).collect();
        assert_eq!(by_batch, vec![(0, 500), (1, 500)]);
        let tasks: Vec<(u64, u32, u64)> = run.tasks.iter().map(|t| (t.batch, t.stage, t.records_in)).collect();
        assert_eq!(tasks, vec![(0, 0, 10), (0, 1, 12), (1, 0, 11)]);
        assert_eq!(log.recent(i64::MAX, 10).map(|run| run.batches.len()), Some(2));
        assert_eq!(log.recent(50_000, 10).map(|run| run.batches.len()), Some(1), "closed 100 ms apart");
    }

    #[test]
    fn each_task_gets_back_its_own_monotask_records() {
        let mut log = SampleLog::default();
        log.set_shape(shape());
        let with_records = |partition: u32, count: usize| {
            let mut task = report(0, partition, 0, (100 * i64::from(partition), 100 * i64::from(partition) + 50));
            task.monotasks = (0..count)
                .map(|index| MonotaskRecord { bytes: 10 * u64::from(partition) + index as u64, ..task.monotasks[0] })
                .collect();
            task
        };
        let tasks = [with_records(0, 2), with_records(1, 0), with_records(2, 3)];
        for task in &tasks {
            log_task(&mut log, task, &stats(1));
        }
        log.batch_completed(&record(0, None), Some(0));
        let run = log.run_samples().expect("samples");
        let got: Vec<Vec<u64>> =
            run.tasks.iter().map(|task| task.monotasks.iter().map(|m| m.bytes).collect()).collect();
        assert_eq!(got, vec![vec![0, 1], vec![], vec![20, 21, 22]]);
        assert_eq!(run.tasks, tasks.iter().map(|task| sample_of(task, &stats(1))).collect::<Vec<_>>());
    }

    #[test]
    fn each_batch_takes_the_time_of_the_first_commit_that_admitted_it() {
        let mut log = SampleLog::default();
        log.set_shape(shape());
        // Batch 2 completes before 1; the first publication admits only 0.
        for batch in [0, 2] {
            log.batch_completed(&record(batch, None), Some(0));
        }
        log.committed_through(0, 5_000);
        log.batch_completed(&record(1, None), Some(0));
        log.committed_through(2, 9_000);
        log.batch_completed(&record(3, None), Some(0));
        log.committed_through(2, 12_000);
        let run = log.run_samples().expect("samples");
        let stamps: Vec<(u64, Option<i64>)> = run.batches.iter().map(|b| (b.batch, b.committed_at_us)).collect();
        assert_eq!(stamps, vec![(0, Some(5_000)), (1, Some(9_000)), (2, Some(9_000)), (3, None)]);
    }

    #[test]
    fn a_failed_attempts_tasks_and_a_reruns_are_left_out() {
        let mut log = SampleLog::default();
        log.set_shape(shape());
        log_task(&mut log, &report(0, 0, 4, (1, 2)), &stats(1));
        log.attempt_failed();
        log_task(&mut log, &report(0, 1, 4, (3, 4)), &stats(2));
        log.batch_completed(&record(4, None), Some(70));
        log_task(&mut log, &report(0, 0, 4, (5, 6)), &stats(3));
        log.discard(4);
        let run = log.run_samples().expect("samples");
        assert_eq!(run.batches.iter().map(|b| b.coordination_us).collect::<Vec<_>>(), vec![70]);
        assert_eq!(run.tasks.iter().map(|t| t.records_in).collect::<Vec<_>>(), vec![2]);
        assert_eq!((log.pending_tasks, log.pending.len()), (0, 0));
    }

    #[test]
    fn the_log_keeps_the_most_recent_batches_within_its_bounds() {
        let mut log = SampleLog::default();
        log.set_shape(shape());
        for batch in 0..(SAMPLE_BATCHES_MAX as u64 + 5) {
            log.batch_completed(&record(batch, None), Some(0));
        }
        let run = log.run_samples().expect("samples");
        assert_eq!(run.batches.len(), SAMPLE_BATCHES_MAX);
        assert_eq!(run.batches.first().map(|b| b.batch), Some(5));
        let tasks_per_batch = 5;
        for batch in 10_000..10_000 + (SAMPLE_TASKS_MAX / tasks_per_batch) as u64 + 3 {
            for partition in 0..tasks_per_batch as u32 {
                log_task(&mut log, &report(0, partition, batch, (1, 2)), &stats(1));
            }
            log.batch_completed(&record(batch, None), Some(0));
        }
        let run = log.run_samples().expect("samples");
        assert!(run.tasks.len() <= SAMPLE_TASKS_MAX, "{} tasks kept", run.tasks.len());
        assert_eq!(run.tasks.len(), SAMPLE_TASKS_MAX);
    }
}
