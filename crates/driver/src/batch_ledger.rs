//! The open batches of a job: which of their tasks are still out, and each batch's record as
//! its reports come in. Both schedulers keep their batches here, so a batch's times mean the
//! same under bsp and group: launched when its first task started on a worker, finished when
//! its last task ended, results visible when its last sink write returned — all read off the
//! task reports, on the workers' clocks. Pure.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use sleet_plan::StageId;
use sleet_wire::clock::BatchClock;
use sleet_wire::{BatchRecord, PartitionSnapshot, StateFigures, TaskId, TaskReport, TaskStats, WorkerId};

/// What a report did to the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// Not a task the ledger waits for (a repeat, or past a stop): nothing changed.
    Ignored,
    /// Counted; its batch still has tasks out.
    Counted,
    /// Counted, and it was its batch's last task. Boxed: the record is ten times the size of
    /// the other variants, and a batch completes once per hundreds of reports.
    Completed(Box<CompletedBatch>),
}

/// A batch whose every task reported: its record, and what its tasks produced beyond it.
/// The job's figures take a batch's output whole, once, when it completes: a batch re-run
/// after a failure then counts once however many of its tasks ran twice.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletedBatch {
    pub record: BatchRecord,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    /// Its tasks' state figures summed: counts, and the size over stages and partitions.
    pub state: StateFigures,
    /// The first keyed operator one of its tasks found at its `max_keys`.
    pub state_full: Option<String>,
    pub sink_rows: u64,
    pub window_latencies_ms: Vec<i64>,
    /// The state snapshots its tasks wrote, when it ends a checkpoint.
    pub snapshots: Vec<PartitionSnapshot>,
}

/// A task within its batch: its stage and partition, one word. A ledger serves one job and
/// a batch's tasks share their batch number, so the rest of a `TaskId` would only lengthen
/// every hash and comparison of the busiest lookup on the driver.
type TaskInBatch = u64;

fn task_in_batch(task: &TaskId) -> TaskInBatch {
    (u64::from(task.stage.0) << 32) | u64::from(task.partition)
}

fn stage_of(task: TaskInBatch) -> StageId {
    StageId((task >> 32) as u32)
}

#[derive(Debug)]
struct OpenBatch {
    /// Hashed, not ordered: every task of every batch goes in and out once, and only the
    /// rare `waiting_on` looks at them as a whole.
    outstanding: FxHashMap<TaskInBatch, WorkerId>,
    completed: CompletedBatch,
    launched_at_us: i64,
    visible_at_us: Option<i64>,
    /// Per stage: the first task start and the last task end (µs). A list, not a map: a plan
    /// has a stage or two, and this is touched once per task.
    stage_spans: Vec<(StageId, (i64, i64))>,
}

#[derive(Debug)]
pub struct BatchLedger {
    clock: BatchClock,
    /// Boxed: a record is a few hundred bytes, and the map's nodes move their values on
    /// every insert and removal, once per batch each.
    batches: BTreeMap<u64, Box<OpenBatch>>,
    first_stage: StageId,
    /// The stage whose span is the batch's reduce time, when there are two or more.
    reduce_stage: Option<StageId>,
}

impl BatchLedger {
    pub fn new(clock: BatchClock, first_stage: StageId, last_stage: StageId) -> Self {
        let reduce_stage = (last_stage != first_stage).then_some(last_stage);
        BatchLedger { clock, batches: BTreeMap::new(), first_stage, reduce_stage }
    }

    /// Starts waiting for `batch`'s `tasks`: every task of every stage, so that the batch
    /// completes only with its last stage.
    pub fn open(&mut self, batch: u64, group: Option<u64>, tasks: impl IntoIterator<Item = (TaskId, WorkerId)>) {
        let outstanding: FxHashMap<TaskInBatch, WorkerId> = tasks
            .into_iter()
            .map(|(task, worker)| {
                assert_eq!(task.batch, batch, "batch {batch} opened with another batch's task");
                (task_in_batch(&task), worker)
            })
            .collect();
        // Sized once: each source task adds its range, and growing the list a push at a time
        // reallocated it four times per batch at 16 partitions.
        let sources = outstanding.keys().filter(|task| stage_of(**task) == self.first_stage).count();
        let record = BatchRecord {
            batch,
            group,
            scheduled_end_ms: self.clock.end_ms(batch),
            source_ranges: Vec::with_capacity(sources),
            ..BatchRecord::default()
        };
        let state = Box::new(OpenBatch {
            outstanding,
            completed: CompletedBatch { record, ..CompletedBatch::default() },
            launched_at_us: i64::MAX,
            visible_at_us: None,
            stage_spans: Vec::new(),
        });
        assert!(self.batches.insert(batch, state).is_none(), "batch {batch} opened twice");
    }

    /// Takes a successful task's report.
    pub fn report(&mut self, report: &TaskReport, stats: &TaskStats) -> Taken {
        let task = report.task;
        let Some(batch) = self.batches.get_mut(&task.batch) else { return Taken::Ignored };
        if batch.outstanding.remove(&task_in_batch(&task)).is_none() {
            return Taken::Ignored;
        }
        let completed = &mut batch.completed;
        if let Some(range) = stats.source_range {
            completed.record.events_in += stats.records_in;
            completed.record.source_ranges.push((task.partition, range));
        }
        if let Some(wait) = stats.event_wait {
            completed.record.event_wait = Some(completed.record.event_wait.unwrap_or_default().merge(wait));
        }
        completed.record.dead_letters += stats.dead_letters;
        completed.late_rows_dropped += stats.late_rows_dropped;
        completed.unmatched_lookup_rows += stats.unmatched_lookup_rows;
        completed.state.add_task(&stats.state);
        if completed.state_full.is_none() {
            completed.state_full.clone_from(&stats.state_full);
        }
        completed.sink_rows += stats.sink_rows;
        completed.window_latencies_ms.extend_from_slice(&stats.window_latencies_ms);
        completed.snapshots.extend(stats.snapshot.clone());
        batch.launched_at_us = batch.launched_at_us.min(report.started_at_us);
        completed.record.finished_at_us = completed.record.finished_at_us.max(report.finished_at_us);
        if let Some(visible_at_us) = stats.sink_visible_at_us {
            batch.visible_at_us = Some(batch.visible_at_us.map_or(visible_at_us, |seen| seen.max(visible_at_us)));
        }
        match batch.stage_spans.iter_mut().find(|(stage, _)| *stage == task.stage) {
            Some((_, span)) => {
                span.0 = span.0.min(report.started_at_us);
                span.1 = span.1.max(report.finished_at_us);
            }
            None => batch.stage_spans.push((task.stage, (report.started_at_us, report.finished_at_us))),
        }
        if !batch.outstanding.is_empty() {
            return Taken::Counted;
        }
        let batch = self.batches.remove(&task.batch).expect("present");
        Taken::Completed(Box::new(self.finish_record(batch)))
    }

    fn finish_record(&self, batch: Box<OpenBatch>) -> CompletedBatch {
        let span_ms = |stage: StageId| {
            batch
                .stage_spans
                .iter()
                .find(|(spanned, _)| *spanned == stage)
                .map_or(0.0, |(_, (start, end))| (end - start).max(0) as f64 / 1000.0)
        };
        let mut completed = batch.completed;
        let record = &mut completed.record;
        record.source_ranges.sort_unstable_by_key(|(partition, _)| *partition);
        record.launched_at_ms = batch.launched_at_us / 1000;
        record.finished_at_ms = record.finished_at_us / 1000;
        record.results_visible_at_us = batch.visible_at_us.unwrap_or(record.finished_at_us);
        record.map_stage_ms = span_ms(self.first_stage);
        record.reduce_stage_ms = self.reduce_stage.map_or(0.0, span_ms);
        completed
    }

    /// Stops waiting for every batch past `last_batch` (a stop); returns the groups of the
    /// batches dropped, one entry per batch.
    pub fn truncate(&mut self, last_batch: u64) -> Vec<Option<u64>> {
        let dropped = self.batches.split_off(&(last_batch + 1));
        dropped.into_values().map(|batch| batch.completed.record.group).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    pub fn oldest_open_batch(&self) -> Option<u64> {
        self.batches.keys().next().copied()
    }

    /// The oldest open batch's outstanding tasks: their earliest stage and who runs it.
    pub fn waiting_on(&self) -> Option<(u64, StageId, Vec<WorkerId>)> {
        let (batch, state) = self.batches.iter().next()?;
        let stage = state.outstanding.keys().map(|task| stage_of(*task)).min()?;
        let mut workers: Vec<WorkerId> =
            state.outstanding.iter().filter(|(task, _)| stage_of(**task) == stage).map(|(_, worker)| *worker).collect();
        workers.sort_unstable();
        workers.dedup();
        Some((*batch, stage, workers))
    }
}

#[cfg(test)]
mod tests {
    use sleet_clarity::EventWait;
    use sleet_plan::SourceRange;
    use sleet_wire::TaskOutcome;

    use super::*;

    fn task(stage: u32, partition: u32, batch: u64) -> TaskId {
        TaskId { job: 1, stage: StageId(stage), partition, batch }
    }

    fn report(task: TaskId, started_us: i64, finished_us: i64) -> TaskReport {
        TaskReport {
            task,
            worker: 1,
            group: None,
            outcome: TaskOutcome::Succeeded(TaskStats::default()),
            monotasks: Vec::new(),
            started_at_us: started_us,
            finished_at_us: finished_us,
        }
    }

    fn ledger() -> BatchLedger {
        BatchLedger::new(BatchClock::new(1_000, 10), StageId(0), StageId(1))
    }

    #[test]
    fn a_batch_record_spans_its_first_start_to_its_last_end_and_visible_results() {
        let mut ledger = ledger();
        ledger.open(2, None, [(task(0, 0, 2), 1), (task(0, 1, 2), 2), (task(1, 0, 2), 1)]);
        let source = |wait_sum_ms| TaskStats {
            source_range: Some(SourceRange::Time { start_ms: 1_020, end_ms: 1_030 }),
            records_in: 40,
            event_wait: Some(EventWait { events: 40, wait_sum_ms }),
            ..TaskStats::default()
        };
        assert_eq!(ledger.report(&report(task(0, 1, 2), 1_031_000, 1_032_000), &source(200)), Taken::Counted);
        assert_eq!(ledger.report(&report(task(0, 0, 2), 1_030_500, 1_033_000), &source(120)), Taken::Counted);
        let sink = TaskStats { records_in: 80, sink_visible_at_us: Some(1_036_900), ..TaskStats::default() };
        let Taken::Completed(completed) = ledger.report(&report(task(1, 0, 2), 1_034_000, 1_037_000), &sink) else {
            panic!("the last task completes the batch")
        };
        let record = completed.record;
        assert_eq!(record.scheduled_end_ms, 1_030);
        assert_eq!(record.events_in, 80, "only source tasks count input events");
        assert_eq!(record.event_wait, Some(EventWait { events: 80, wait_sum_ms: 320 }), "summed over the sources");
        assert_eq!(
            (record.launched_at_ms, record.finished_at_ms, record.results_visible_at_ms()),
            (1_030, 1_037, 1_036)
        );
        assert_eq!(record.results_visible_at_us, 1_036_900, "the sink's moment to the µs");
        assert_eq!((record.map_stage_ms, record.reduce_stage_ms), (2.5, 3.0));
        assert!(ledger.is_empty());
    }

    #[test]
    fn repeats_and_unknown_tasks_are_ignored_and_a_stop_drops_later_batches() {
        let mut ledger = ledger();
        ledger.open(0, Some(4), [(task(0, 0, 0), 1), (task(1, 0, 0), 2)]);
        ledger.open(1, Some(4), [(task(0, 0, 1), 1)]);
        ledger.open(2, Some(5), [(task(0, 0, 2), 1)]);
        let stats = TaskStats::default();
        assert_eq!(ledger.report(&report(task(0, 0, 7), 0, 1), &stats), Taken::Ignored);
        assert_eq!(ledger.report(&report(task(0, 0, 0), 0, 1), &stats), Taken::Counted);
        assert_eq!(ledger.report(&report(task(0, 0, 0), 0, 1), &stats), Taken::Ignored);
        assert_eq!(ledger.waiting_on(), Some((0, StageId(1), vec![2])));
        assert_eq!(ledger.truncate(0), vec![Some(4), Some(5)]);
        assert_eq!(ledger.oldest_open_batch(), Some(0));
        let Taken::Completed(completed) = ledger.report(&report(task(1, 0, 0), 5_000, 9_000), &stats) else {
            panic!("completes")
        };
        let record = completed.record;
        assert_eq!(record.results_visible_at_ms(), 9, "a batch that wrote nothing is visible when it ends");
        assert!(ledger.is_empty());
    }
}
