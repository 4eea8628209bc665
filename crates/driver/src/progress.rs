//! What the driver knows about a running job's output: totals, per-batch records, window
//! latencies and monotask records, folded into progress reports and the final summary. Pure.

use std::collections::VecDeque;

use sleet_clarity::{percentile, MonotaskRecord, MonotaskTotals};
use sleet_plan::SchedulerKind;
use sleet_wire::{BatchRecord, GroupRecord, JobId, JobProgress, JobSummary, TaskStats};

/// Progress reports cover the windows closed in this much recent time.
const RECENT_LATENCY_SPAN_MS: i64 = 10_000;
/// Batch records kept for the summary (the most recent ones): about a day of 500 ms
/// batches or half an hour of 10 ms ones, at under 100 bytes each.
const BATCH_RECORDS_MAX: usize = 200_000;
/// Window latencies kept for the summary (the most recent ones).
const WINDOW_LATENCIES_MAX: usize = 1_000_000;
/// Group records kept for the summary (the most recent ones); at least one batch each.
const GROUP_RECORDS_MAX: usize = 200_000;

#[derive(Debug, Default)]
pub struct JobStats {
    pub job: JobId,
    pub start_ms: i64,
    batches: VecDeque<BatchRecord>,
    batches_total: u64,
    pub events_in: u64,
    pub dead_letters: u64,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
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
}

impl JobStats {
    pub fn new(job: JobId, start_ms: i64, scheduler: SchedulerKind) -> Self {
        JobStats { job, start_ms, scheduler: scheduler.to_string(), ..JobStats::default() }
    }

    pub fn add_task(&mut self, stats: &TaskStats, monotasks: &[MonotaskRecord], now_ms: i64) {
        if stats.source_range.is_some() {
            self.events_in += stats.records_in;
            self.source_waiting.clone_from(&stats.source_waiting);
        }
        self.dead_letters += stats.dead_letters;
        self.late_rows_dropped += stats.late_rows_dropped;
        self.unmatched_lookup_rows += stats.unmatched_lookup_rows;
        self.sink_rows += stats.sink_rows;
        for latency in &stats.window_latencies_ms {
            self.recent_latencies.push_back((now_ms, *latency));
            if self.window_latencies_ms.len() == WINDOW_LATENCIES_MAX {
                self.window_latencies_ms.pop_front();
            }
            self.window_latencies_ms.push_back(*latency);
        }
        while self.recent_latencies.front().is_some_and(|(at, _)| *at < now_ms - RECENT_LATENCY_SPAN_MS) {
            self.recent_latencies.pop_front();
        }
        for monotask in monotasks {
            self.monotasks.add(monotask);
        }
    }

    /// Notes a launch; the first one is the job's start of work.
    pub fn launched(&mut self, at_us: i64) {
        self.launch_messages += 1;
        self.first_launch_at_us.get_or_insert(at_us);
    }

    pub fn push_group(&mut self, record: GroupRecord) {
        if self.groups.len() == GROUP_RECORDS_MAX {
            self.groups.pop_front();
        }
        self.groups.push_back(record);
    }

    pub fn last_group(&self) -> Option<&GroupRecord> {
        self.groups.back()
    }

    pub fn push_batch(&mut self, record: BatchRecord) {
        if self.batches.len() == BATCH_RECORDS_MAX {
            self.batches.pop_front();
        }
        self.batches.push_back(record);
        self.batches_total += 1;
    }

    pub fn progress(&self, now_ms: i64) -> JobProgress {
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
        }
    }

    pub fn summary(self, end_ms: i64) -> JobSummary {
        // Under group scheduling batches can complete slightly out of order.
        let mut batches: Vec<BatchRecord> = self.batches.into();
        batches.sort_by_key(|batch| batch.batch);
        JobSummary {
            job: self.job,
            start_ms: self.start_ms,
            end_ms,
            batches,
            batches_total: self.batches_total,
            events_in: self.events_in,
            dead_letters: self.dead_letters,
            late_rows_dropped: self.late_rows_dropped,
            unmatched_lookup_rows: self.unmatched_lookup_rows,
            sink_rows: self.sink_rows,
            window_latencies_ms: self.window_latencies_ms.into(),
            monotask_summary: self.monotasks.summary(),
            scheduler: self.scheduler,
            first_launch_at_us: self.first_launch_at_us.unwrap_or(0),
            launch_messages: self.launch_messages,
            groups: self.groups.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use sleet_plan::SourceRange;

    use super::*;

    #[test]
    fn counts_source_events_once_and_recent_latency_forgets_old_windows() {
        let mut stats = JobStats::new(1, 0, SchedulerKind::Bsp);
        let source = TaskStats {
            source_range: Some(SourceRange::Time { start_ms: 0, end_ms: 100 }),
            records_in: 50,
            dead_letters: 2,
            ..TaskStats::default()
        };
        let reduce = TaskStats { records_in: 10, window_latencies_ms: vec![120], ..TaskStats::default() };
        stats.add_task(&source, &[], 1_000);
        stats.add_task(&reduce, &[], 1_000);
        assert_eq!(stats.events_in, 50, "reduce-side rows are not input events");
        assert_eq!(stats.progress(1_000).window_latency_ms_p50, Some(120.0));
        let later = TaskStats { window_latencies_ms: vec![80], ..TaskStats::default() };
        stats.add_task(&later, &[], 20_000);
        assert_eq!(stats.progress(20_000).window_latency_ms_p99, Some(80.0));
        assert_eq!(stats.window_latencies_ms, [120, 80]);
    }
}
