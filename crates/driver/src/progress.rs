//! What the driver knows about a running job's output: totals, per-batch records, window
//! latencies, monotask records and the performance model's samples, folded into progress
//! reports (with the live bottleneck) and the final summary. Pure.
//!
//! Only figures: nothing here decides what a recovery re-reads or reuses (that is
//! `recovery_state`'s), so every bound below may drop records without changing results.

use std::collections::VecDeque;

use sleet_clarity::{percentile, ClusterShape, MonotaskTotals};
use sleet_plan::SchedulerKind;
use sleet_wire::{
    BatchRecord, GroupRecord, JobId, JobProgress, JobSummary, RebalanceRecord, RecoveryRecord, RestartRecord,
    StateFigures, TaskReport, TaskStats,
};

use crate::batch_ledger::CompletedBatch;
use crate::job_state::SavedFigures;
use crate::live::{JobUpdate, RECENT_RECORDS_MAX};
use crate::samples::SampleLog;

/// Progress reports cover the windows closed in this much recent time.
const RECENT_LATENCY_SPAN_MS: i64 = 10_000;
/// Batch records kept for the summary (the most recent ones): half a day of 500 ms batches
/// or a quarter of an hour of 10 ms ones. The summary travels as one JSON frame, which at
/// 200 000 records of 16 source ranges outgrew the frame limit (256 MiB) and the client lost it.
const BATCH_RECORDS_MAX: usize = 100_000;
/// Source ranges kept with those records (about 60 bytes of JSON each): past it, the oldest
/// records go, so a job with many partitions keeps fewer batches and its summary stays near
/// 50 MB at most.
const SOURCE_RANGES_KEPT_MAX: usize = 400_000;
/// Window latencies kept for the summary (the most recent ones).
const WINDOW_LATENCIES_MAX: usize = 1_000_000;
/// Recovery, rebalance and restart records kept for the summary (the first ones): each is
/// a failure, a worker joining or leaving, or a driver restart, so a job that reaches this
/// has bigger problems than a summary cut short; the state directory saves them all.
const EVENT_RECORDS_MAX: usize = 1_000;
/// Group records kept for the summary (the most recent ones); at least one batch each.
const GROUP_RECORDS_MAX: usize = 200_000;
/// The live bottleneck is the model of the batches that closed in this much recent time…
const LIVE_MODEL_SPAN_US: i64 = 10_000_000;
/// …and of at most this many of them: progress is computed about once a second on the
/// driver's one thread, and the model's cost grows with the tasks it reads (about 1 ms for
/// 500 batches of 4 tasks).
const LIVE_MODEL_BATCHES_MAX: usize = 500;
/// Operators named as full (at their `max_keys`) kept for progress and the summary: a plan
/// has a few keyed operators, so only a damaged report could name more.
const STATE_FULL_NAMES_MAX: usize = 16;

#[derive(Debug, Default)]
pub struct JobStats {
    pub job: JobId,
    pub start_ms: i64,
    batches: VecDeque<BatchRecord>,
    /// The source ranges of `batches`, summed.
    kept_source_ranges: usize,
    batches_total: u64,
    batches_before_restart: u64,
    pub events_in: u64,
    pub dead_letters: u64,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    /// A stateful job's counts so far and its size after its newest batch (`None`: the job
    /// keeps no state, and progress says nothing of it).
    state: Option<StateFigures>,
    /// The batch whose size `state` holds: batches may complete out of order.
    state_size_batch: Option<u64>,
    /// Keyed operators found at their `max_keys`, in the order they first were.
    state_full: Vec<String>,
    pub sink_rows: u64,
    window_latencies_ms: VecDeque<i64>,
    /// (closed at, latency) for the recent-latency figures.
    recent_latencies: VecDeque<(i64, i64)>,
    /// Every monotask of the job, summed as it arrives: constant space however long it runs.
    monotasks: MonotaskTotals,
    pub scheduler: String,
    pub launch_messages: u64,
    first_launch_at_us: Option<i64>,
    groups: VecDeque<GroupRecord>,
    /// What the latest source report said its source waits for; cleared by one without.
    source_waiting: Option<String>,
    /// Batches already counted, so that one re-run after a failure is not counted twice.
    counted: CountedBatches,
    /// Batches that completed a second time, in a later attempt of the job.
    pub batches_rerun: u64,
    recoveries: Vec<RecoveryRecord>,
    rebalances: Vec<RebalanceRecord>,
    restarts: Vec<RestartRecord>,
    /// The model's input: the most recent batches' task and batch samples.
    samples: SampleLog,
    /// Batch and group records pushed so far, and as many as the live view has been given:
    /// each update carries only what is new.
    records_pushed: (u64, u64),
    records_published: (u64, u64),
}

/// A set of batch numbers that stays small over a long job: batches complete almost in
/// order, so everything below `below` is in, and only the few that completed ahead of an
/// older one are kept one by one.
#[derive(Debug, Default)]
pub(crate) struct CountedBatches {
    below: u64,
    ahead: std::collections::BTreeSet<u64>,
}

impl CountedBatches {
    /// A set holding every batch below `below`.
    pub(crate) fn below(below: u64) -> Self {
        CountedBatches { below, ahead: std::collections::BTreeSet::new() }
    }

    /// The first batch not in: every one before it is.
    pub(crate) fn first_missing(&self) -> u64 {
        self.below
    }

    /// Adds `batch`; false when it was already in.
    pub(crate) fn insert(&mut self, batch: u64) -> bool {
        if batch < self.below || !self.ahead.insert(batch) {
            return false;
        }
        while self.ahead.first() == Some(&self.below) {
            self.ahead.pop_first();
            self.below += 1;
        }
        true
    }

    fn contains(&self, batch: u64) -> bool {
        batch < self.below || self.ahead.contains(&batch)
    }
}

impl JobStats {
    pub fn new(job: JobId, start_ms: i64, scheduler: SchedulerKind) -> Self {
        JobStats { job, start_ms, scheduler: scheduler.to_string(), ..JobStats::default() }
    }

    /// The job has stateful operators: its progress and summary carry their figures.
    pub fn keeps_state(mut self) -> Self {
        self.state.get_or_insert_with(StateFigures::default);
        self
    }

    /// A task's work: every monotask counts, a re-run's too, since it was really done. Its
    /// sample is kept only while its batch has not completed yet: a batch's samples are those
    /// of its first completion, as its figures are.
    pub fn add_task(&mut self, report: &TaskReport, stats: &TaskStats) {
        if stats.source_range.is_some() {
            self.source_waiting.clone_from(&stats.source_waiting);
        }
        for monotask in &report.monotasks {
            self.monotasks.add(monotask);
        }
        if !self.counted.contains(report.task.batch) {
            self.samples.task(report, stats, &report.monotasks);
        }
    }

    /// What the state directory keeps of these figures for a restarted driver; the replay
    /// log saved with them is `RecoveryState`'s (`JobSession::save_figures` adds it).
    pub fn figures(&self) -> SavedFigures {
        SavedFigures {
            batches_total: self.batches_total,
            batches_rerun: self.batches_rerun,
            events_in: self.events_in,
            dead_letters: self.dead_letters,
            late_rows_dropped: self.late_rows_dropped,
            unmatched_lookup_rows: self.unmatched_lookup_rows,
            state: self.state,
            state_full: self.state_full.clone(),
            sink_rows: self.sink_rows,
            launch_messages: self.launch_messages,
            counted_below: self.counted.below,
            counted_ahead: self.counted.ahead.iter().copied().collect(),
            recoveries: self.recoveries.clone(),
            rebalances: self.rebalances.clone(),
            restarts: self.restarts.clone(),
            replay: Vec::new(),
        }
    }

    /// This driver resumed the job after a restart (`restart`): it goes on from the figures
    /// the driver before it saved, if any. Batches before the resume point that those
    /// figures do not count (none saved, or saved by a driver that kept none) are
    /// `batches_before_restart`: they ran, and no figure here says what they did.
    pub fn resumed(&mut self, saved: Option<SavedFigures>, mut restart: RestartRecord) {
        restart.figures_restored = saved.is_some();
        if let Some(saved) = saved {
            self.batches_total = saved.batches_total;
            self.batches_rerun = saved.batches_rerun;
            self.events_in = saved.events_in;
            self.dead_letters = saved.dead_letters;
            self.late_rows_dropped = saved.late_rows_dropped;
            self.unmatched_lookup_rows = saved.unmatched_lookup_rows;
            // The size is the next batch's; the counts go on from the saved ones.
            if let (Some(state), Some(saved)) = (&mut self.state, saved.state) {
                state.add_counts(&saved);
            }
            self.state_full = saved.state_full;
            self.sink_rows = saved.sink_rows;
            self.launch_messages = saved.launch_messages;
            self.counted = CountedBatches::below(saved.counted_below);
            for batch in saved.counted_ahead {
                self.counted.insert(batch);
            }
            self.recoveries = saved.recoveries;
            self.rebalances = saved.rebalances;
            self.restarts = saved.restarts;
        }
        self.batches_before_restart = restart.resume_batch.saturating_sub(self.counted.first_missing());
        restart.restart = self.restarts.len() as u32 + 1;
        push_bounded(&mut self.restarts, restart);
    }

    /// An attempt starts on this cluster.
    pub fn attempt_started(&mut self, shape: ClusterShape) {
        self.samples.set_shape(shape);
    }

    /// Notes a launch; the first one is the job's start of work.
    pub fn launched(&mut self, at_us: i64) {
        self.launch_messages += 1;
        self.first_launch_at_us.get_or_insert(at_us);
    }

    pub fn push_group(&mut self, record: GroupRecord) {
        self.samples.group_closed(&record);
        self.records_pushed.1 += 1;
        if self.groups.len() == GROUP_RECORDS_MAX {
            self.groups.pop_front();
        }
        self.groups.push_back(record);
    }

    /// A recovery, marked with the driver restarts before it.
    pub fn recovered(&mut self, recovery: RecoveryRecord) {
        self.samples.attempt_failed();
        let driver_restarts = self.restarts.len() as u32;
        push_bounded(&mut self.recoveries, RecoveryRecord { driver_restarts, ..recovery });
    }

    /// How many source tasks the attempt after the latest recovery took over from survivors.
    pub fn reused_in_last_recovery(&mut self, tasks: u64) {
        if let Some(recovery) = self.recoveries.last_mut().filter(|_| tasks > 0) {
            recovery.reused_map_tasks = tasks;
        }
    }

    /// A placement change, marked with the driver restarts before it.
    pub fn rebalanced(&mut self, rebalance: RebalanceRecord) {
        let driver_restarts = self.restarts.len() as u32;
        push_bounded(&mut self.rebalances, RebalanceRecord { driver_restarts, ..rebalance });
    }

    pub fn last_group(&self) -> Option<&GroupRecord> {
        self.groups.back()
    }

    /// Every batch up to `through` is committed, as of `at_us` (those not stamped before).
    pub fn committed_through(&mut self, through: u64, at_us: i64) {
        self.samples.committed_through(through, at_us);
    }

    /// A completed batch's output, counted the first time the batch completes. A batch
    /// re-run after a failure reads the same input and produces the same rows, so its first
    /// record stands: that is when its results became visible. `coordination_us` is the
    /// driver's time on the batch when the scheduler measures it per batch (bsp); under group
    /// scheduling it comes with the group's record (`push_group`).
    pub fn push_batch(&mut self, completed: CompletedBatch, coordination_us: Option<i64>, now_ms: i64) {
        if !self.counted.insert(completed.record.batch) {
            self.samples.discard(completed.record.batch);
            self.batches_rerun += 1;
            return;
        }
        self.samples.batch_completed(&completed.record, coordination_us);
        self.events_in += completed.record.events_in;
        self.dead_letters += completed.record.dead_letters;
        self.late_rows_dropped += completed.late_rows_dropped;
        self.unmatched_lookup_rows += completed.unmatched_lookup_rows;
        self.add_state(completed.record.batch, &completed.state, completed.state_full);
        self.sink_rows += completed.sink_rows;
        for latency in completed.window_latencies_ms {
            self.recent_latencies.push_back((now_ms, latency));
            if self.window_latencies_ms.len() == WINDOW_LATENCIES_MAX {
                self.window_latencies_ms.pop_front();
            }
            self.window_latencies_ms.push_back(latency);
        }
        while self.recent_latencies.front().is_some_and(|(at, _)| *at < now_ms - RECENT_LATENCY_SPAN_MS) {
            self.recent_latencies.pop_front();
        }
        self.kept_source_ranges += completed.record.source_ranges.len();
        self.batches.push_back(completed.record);
        self.records_pushed.0 += 1;
        while self.batches.len() > BATCH_RECORDS_MAX
            || (self.kept_source_ranges > SOURCE_RANGES_KEPT_MAX && self.batches.len() > 1)
        {
            let dropped = self.batches.pop_front().expect("not empty");
            self.kept_source_ranges -= dropped.source_ranges.len();
        }
        self.batches_total += 1;
    }

    /// A completed batch's state figures: its counts add up, its size is the job's if no
    /// newer batch completed before it.
    fn add_state(&mut self, batch: u64, figures: &StateFigures, full: Option<String>) {
        let Some(state) = &mut self.state else { return };
        state.add_counts(figures);
        if self.state_size_batch.is_none_or(|newest| batch > newest) {
            self.state_size_batch = Some(batch);
            (state.state_keys, state.state_bytes) = (figures.state_keys, figures.state_bytes);
        }
        if let Some(name) = full {
            if !self.state_full.contains(&name) && self.state_full.len() < STATE_FULL_NAMES_MAX {
                self.state_full.push(name);
            }
        }
    }

    pub fn progress(&self, now_ms: i64) -> JobProgress {
        let bottleneck = self.live_bottleneck();
        self.progress_with(now_ms, bottleneck)
    }

    /// Progress, and what the live view shows beyond it: the records new since the last
    /// update and, when someone is `looking`, the samples of the recent batches the progress's
    /// bottleneck was modelled from (gathered anyway, so handing them over costs nothing).
    pub fn live_tick(&mut self, now_ms: i64, looking: bool) -> (JobProgress, JobUpdate) {
        let recent = self.samples.recent(LIVE_MODEL_SPAN_US, LIVE_MODEL_BATCHES_MAX);
        let bottleneck = recent.as_ref().map(|recent| sleet_clarity::model(recent).bottleneck.to_string());
        let progress = self.progress_with(now_ms, bottleneck);
        // The live view keeps the newest `RECENT_RECORDS_MAX`: at tens of thousands of batches a
        // second, copying every new record (each with its source ranges) only to drop most
        // of them would cost the scheduling path.
        let newest = |pushed: u64, published: u64, kept: usize| {
            (pushed - published).min(kept.min(RECENT_RECORDS_MAX) as u64) as usize
        };
        let batches_kept = self.batches.len();
        let new_batches = newest(self.records_pushed.0, self.records_published.0, batches_kept);
        let new_groups = newest(self.records_pushed.1, self.records_published.1, self.groups.len());
        self.records_published = self.records_pushed;
        let update = JobUpdate {
            progress: progress.clone(),
            batches: self.batches.iter_mut().skip(batches_kept - new_batches).map(copy_without_source_ranges).collect(),
            groups: self.groups.iter().skip(self.groups.len() - new_groups).cloned().collect(),
            recoveries: self.recoveries.clone(),
            rebalances: self.rebalances.clone(),
            restarts: self.restarts.clone(),
            recent: recent.filter(|_| looking),
            ..JobUpdate::default()
        };
        (progress, update)
    }

    fn progress_with(&self, now_ms: i64, bottleneck: Option<String>) -> JobProgress {
        let recent: Vec<f64> = self.recent_latencies.iter().map(|(_, latency)| *latency as f64).collect();
        let last_second: u64 = self
            .batches
            .iter()
            .rev()
            .take_while(|batch| batch.finished_at_ms >= now_ms - 1000)
            .map(|batch| batch.events_in)
            .sum();
        JobProgress {
            job: self.job,
            batches_done: self.batches_total,
            events_in: self.events_in,
            events_per_s: last_second as f64,
            dead_letters: self.dead_letters,
            window_latency_ms_p50: percentile(&recent, 0.5),
            window_latency_ms_p99: percentile(&recent, 0.99),
            lag_ms: self.batches.back().map_or(0, |batch| batch.finished_at_ms - batch.scheduled_end_ms),
            group_size: None,
            overhead: None,
            source_waiting: self.source_waiting.clone(),
            read_bound: None,
            bottleneck,
            late_rows_dropped: self.late_rows_dropped,
            state: self.state,
            state_full: self.state_full.clone(),
        }
    }

    /// The model of the recent batches names what limits the job now.
    fn live_bottleneck(&self) -> Option<String> {
        let recent = self.samples.recent(LIVE_MODEL_SPAN_US, LIVE_MODEL_BATCHES_MAX)?;
        Some(sleet_clarity::model(&recent).bottleneck.to_string())
    }

    pub fn summary(self, end_ms: i64) -> JobSummary {
        let samples = self.samples.run_samples();
        // Under group scheduling batches can complete slightly out of order.
        let mut batches: Vec<BatchRecord> = self.batches.into();
        batches.sort_by_key(|batch| batch.batch);
        JobSummary {
            job: self.job,
            start_ms: self.start_ms,
            end_ms,
            batches,
            batches_total: self.batches_total,
            batches_before_restart: self.batches_before_restart,
            events_in: self.events_in,
            dead_letters: self.dead_letters,
            late_rows_dropped: self.late_rows_dropped,
            unmatched_lookup_rows: self.unmatched_lookup_rows,
            state: self.state,
            state_full: self.state_full,
            sink_rows: self.sink_rows,
            window_latencies_ms: self.window_latencies_ms.into(),
            monotask_summary: self.monotasks.summary(),
            scheduler: self.scheduler,
            first_launch_at_us: self.first_launch_at_us.unwrap_or(0),
            launch_messages: self.launch_messages,
            groups: self.groups.into(),
            recoveries: self.recoveries,
            batches_rerun: self.batches_rerun,
            rebalances: self.rebalances,
            restarts: self.restarts,
            samples,
        }
    }
}

fn push_bounded<T>(records: &mut Vec<T>, record: T) {
    if records.len() < EVENT_RECORDS_MAX {
        records.push(record);
    }
}

/// A copy of `record` without its source ranges, which it keeps: the live view lists batches,
/// not what they read (a job of many partitions would make every answer mostly source ranges),
/// and copying the ranges only to drop them would cost the scheduling path.
fn copy_without_source_ranges(record: &mut BatchRecord) -> BatchRecord {
    let ranges = std::mem::take(&mut record.source_ranges);
    let copy = record.clone();
    record.source_ranges = ranges;
    copy
}

#[cfg(test)]
mod tests {
    use sleet_clarity::{MonotaskKind, MonotaskRecord, Resource};
    use sleet_plan::{SourceRange, StageId};
    use sleet_wire::{TaskId, TaskOutcome, WorkerId};

    use super::*;

    fn completed(batch: u64, events_in: u64, latencies: Vec<i64>) -> CompletedBatch {
        let record = BatchRecord {
            batch,
            events_in,
            source_ranges: vec![(0, SourceRange::Time { start_ms: 0, end_ms: 100 })],
            ..BatchRecord::default()
        };
        CompletedBatch { record, window_latencies_ms: latencies, ..CompletedBatch::default() }
    }

    #[test]
    fn the_summary_keeps_the_newest_records_within_the_source_range_bound() {
        let partitions = 64;
        let batches = (SOURCE_RANGES_KEPT_MAX / partitions + 100) as u64;
        let mut stats = JobStats::new(1, 0, SchedulerKind::Group);
        for batch in 0..batches {
            let mut done = completed(batch, 1, vec![]);
            done.record.source_ranges = (0..partitions as u32)
                .map(|partition| (partition, SourceRange::Time { start_ms: 0, end_ms: 10 }))
                .collect();
            stats.push_batch(done, None, 0);
        }
        let summary = stats.summary(0);
        let kept_ranges: usize = summary.batches.iter().map(|record| record.source_ranges.len()).sum();
        assert!(kept_ranges <= SOURCE_RANGES_KEPT_MAX, "{kept_ranges} source ranges kept");
        assert_eq!(summary.batches.len(), SOURCE_RANGES_KEPT_MAX / partitions);
        assert_eq!(summary.batches.last().map(|record| record.batch), Some(batches - 1), "the newest stays");
        assert_eq!((summary.batches_total, summary.events_in), (batches, batches), "totals count every batch");
    }

    #[test]
    fn the_live_update_carries_only_the_newest_records_the_live_view_keeps() {
        let mut stats = JobStats::new(1, 0, SchedulerKind::Group);
        let burst = RECENT_RECORDS_MAX as u64 * 3;
        for batch in 0..burst {
            stats.push_batch(completed(batch, 1, vec![]), None, 0);
        }
        let (_, update) = stats.live_tick(0, false);
        assert!(update.batches.iter().all(|record| record.source_ranges.is_empty()), "no source ranges");
        assert!(stats.batches.iter().all(|record| record.source_ranges.len() == 1), "the job keeps its own");
        let sent: Vec<u64> = update.batches.iter().map(|record| record.batch).collect();
        assert_eq!(sent, (burst - RECENT_RECORDS_MAX as u64..burst).collect::<Vec<_>>());
        stats.push_batch(completed(burst, 1, vec![]), None, 0);
        let (_, update) = stats.live_tick(0, false);
        assert_eq!(
            update.batches.iter().map(|record| record.batch).collect::<Vec<_>>(),
            vec![burst],
            "only what is new"
        );
        assert!(stats.live_tick(0, false).1.batches.is_empty());
    }

    #[test]
    fn a_batch_counts_once_however_often_it_completes_and_recent_latency_forgets_old_windows() {
        let mut stats = JobStats::new(1, 0, SchedulerKind::Bsp);
        stats.push_batch(completed(0, 50, vec![120]), None, 1_000);
        stats.push_batch(completed(2, 30, vec![]), None, 1_000);
        assert_eq!(stats.progress(1_000).window_latency_ms_p50, Some(120.0));
        // Re-run after a failure: batch 2 again, then batch 1 for the first time.
        stats.push_batch(completed(2, 30, vec![999]), None, 2_000);
        stats.push_batch(completed(1, 20, vec![]), None, 2_000);
        assert_eq!((stats.events_in, stats.batches_total, stats.batches_rerun), (100, 3, 1));
        stats.push_batch(completed(0, 50, vec![]), None, 2_500);
        assert_eq!(stats.batches_rerun, 2, "a batch below the contiguous mark is known too");
        stats.push_batch(completed(3, 10, vec![80]), None, 20_000);
        assert_eq!(stats.progress(20_000).window_latency_ms_p99, Some(80.0));
        assert_eq!(stats.window_latencies_ms, [120, 80]);
    }

    #[test]
    fn a_restarted_driver_takes_the_figures_and_records_over_and_marks_which_driver_saw_what() {
        let mut first = JobStats::new(1, 0, SchedulerKind::Group);
        for batch in 0..5 {
            first.push_batch(completed(batch, 10, vec![]), None, 0);
        }
        first.recovered(RecoveryRecord { lost_worker: 2, resume_batch: 3, ..RecoveryRecord::default() });
        first.push_batch(completed(3, 10, vec![]), None, 0);
        first.push_batch(completed(6, 10, vec![]), None, 0);
        // The driver dies; the next one resumes after the checkpoint after batch 3.
        let restart = RestartRecord {
            at_ms: 9,
            checkpoint_batch: Some(3),
            resume_batch: 4,
            attempt: 2,
            ..RestartRecord::default()
        };
        let mut second = JobStats::new(1, 0, SchedulerKind::Group);
        second.resumed(Some(first.figures()), restart.clone());
        for batch in 4..8 {
            second.push_batch(completed(batch, 10, vec![]), None, 0);
        }
        second.rebalanced(RebalanceRecord { joined: vec![7], ..RebalanceRecord::default() });
        let summary = second.summary(10);
        // Batches 0..8 once each; 3 re-ran under the first driver, 4 and 6 under the second.
        let figures = (summary.batches_total, summary.events_in, summary.batches_rerun, summary.batches_before_restart);
        assert_eq!(figures, (8, 80, 3, 0));
        let recoveries: Vec<(WorkerId, u32)> =
            summary.recoveries.iter().map(|r| (r.lost_worker, r.driver_restarts)).collect();
        assert_eq!(recoveries, vec![(2, 0)], "the recovery before the restart, marked as such");
        assert_eq!(summary.rebalances.iter().map(|r| r.driver_restarts).collect::<Vec<_>>(), vec![1]);
        let expected = RestartRecord { restart: 1, figures_restored: true, ..restart.clone() };
        assert_eq!(summary.restarts, vec![expected]);
        // A state directory without figures (a driver that kept none): the summary counts
        // from the restart and says how many batches it leaves out.
        let mut without = JobStats::new(1, 0, SchedulerKind::Group);
        without.resumed(None, restart);
        let summary = without.summary(10);
        assert_eq!((summary.batches_total, summary.batches_before_restart), (0, 4));
        assert!(!summary.restarts[0].figures_restored);
    }

    fn with_state(batch: u64, counts: u64, keys: u64, full: Option<&str>) -> CompletedBatch {
        let state = StateFigures {
            late_rows_folded: counts,
            duplicate_rows_dropped: 2 * counts,
            invalid_rows_dropped: 3 * counts,
            refused_rows: 4 * counts,
            expired_keys: 5 * counts,
            state_keys: keys,
            state_bytes: 100 * keys,
        };
        CompletedBatch { state, state_full: full.map(String::from), ..completed(batch, 1, vec![]) }
    }

    #[test]
    fn state_counts_add_up_over_batches_and_the_size_is_the_newest_batchs() {
        let mut stats = JobStats::new(1, 0, SchedulerKind::Group).keeps_state();
        stats.push_batch(with_state(0, 1, 10, None), None, 0);
        // Out of order: batch 2 before batch 1, whose older size must not replace it.
        stats.push_batch(with_state(2, 1, 30, Some("increments by k (max_keys 30)")), None, 0);
        stats.push_batch(with_state(1, 1, 20, Some("increments by k (max_keys 30)")), None, 0);
        // A re-run of batch 2 counts nothing.
        stats.push_batch(with_state(2, 1, 99, Some("top_k by d, k (max_keys 5)")), None, 0);
        let expected = StateFigures {
            late_rows_folded: 3,
            duplicate_rows_dropped: 6,
            invalid_rows_dropped: 9,
            refused_rows: 12,
            expired_keys: 15,
            state_keys: 30,
            state_bytes: 3_000,
        };
        let progress = stats.progress(0);
        assert_eq!(progress.state, Some(expected));
        assert_eq!(progress.state_full, vec!["increments by k (max_keys 30)".to_string()], "named once");
        // A restarted driver goes on counting from the saved figures.
        let mut second = JobStats::new(1, 0, SchedulerKind::Group).keeps_state();
        second.resumed(Some(stats.figures()), RestartRecord { resume_batch: 3, ..RestartRecord::default() });
        second.push_batch(with_state(3, 1, 7, None), None, 0);
        let summary = second.summary(0);
        let state = summary.state.expect("a stateful job's summary has its state");
        assert_eq!((state.refused_rows, state.state_keys), (16, 7));
        assert_eq!(summary.state_full.len(), 1);
        // A stateless job says nothing of state.
        let mut stateless = JobStats::new(1, 0, SchedulerKind::Group);
        stateless.push_batch(with_state(0, 1, 10, None), None, 0);
        assert_eq!(stateless.progress(0).state, None);
    }

    /// Batch `batch`'s one map task on partition 0: `run_us` of cpu from the batch's close.
    fn map_task(batch: u64, run_us: i64) -> TaskReport {
        let closed_at_us = 100_000 * (batch as i64 + 1);
        let monotask = MonotaskRecord {
            kind: MonotaskKind::MapCompute,
            resource: Resource::Cpu,
            bytes: 0,
            queued_at_us: closed_at_us,
            started_at_us: closed_at_us,
            finished_at_us: closed_at_us + run_us,
        };
        TaskReport {
            task: TaskId { job: 1, stage: StageId(0), partition: 0, batch },
            worker: 1,
            group: None,
            outcome: TaskOutcome::Succeeded(TaskStats::default()),
            monotasks: vec![monotask],
            started_at_us: closed_at_us,
            finished_at_us: closed_at_us + run_us,
        }
    }

    fn completed_at(batch: u64, finished_at_us: i64) -> CompletedBatch {
        let mut done = completed(batch, 50, vec![]);
        done.record.scheduled_end_ms = 100 * (batch as i64 + 1);
        done.record.finished_at_us = finished_at_us;
        done
    }

    #[test]
    fn samples_hold_a_batchs_first_completion_and_progress_names_the_bottleneck() {
        let mut stats = JobStats::new(1, 0, SchedulerKind::Bsp);
        stats.attempt_started(ClusterShape {
            workers: 1,
            cores_per_worker: 1,
            batch_interval_ms: 100,
            net_bytes_per_s: None,
            disk_bytes_per_s: None,
        });
        assert_eq!(stats.progress(0).bottleneck, None, "no batch yet");
        // 90 ms of cpu on one core in a 100 ms interval: cpu-bound.
        let task = map_task(0, 90_000);
        stats.add_task(&task, &TaskStats::default());
        stats.push_batch(completed_at(0, 190_000), Some(1_000), 200);
        // Batch 0 again in a later attempt: neither its task nor its completion count.
        let task = map_task(0, 10_000);
        stats.add_task(&task, &TaskStats::default());
        stats.push_batch(completed_at(0, 110_000), Some(5), 300);
        assert_eq!(stats.progress(300).bottleneck.as_deref(), Some("cpu"));
        let samples = stats.summary(400).samples.expect("samples");
        let tasks: Vec<i64> = samples.tasks.iter().map(|task| task.duration_us()).collect();
        assert_eq!(tasks, vec![90_000]);
        let batches: Vec<(u64, i64, i64)> =
            samples.batches.iter().map(|b| (b.batch, b.processing_us(), b.coordination_us)).collect();
        assert_eq!(batches, vec![(0, 90_000, 1_000)]);
    }
}
