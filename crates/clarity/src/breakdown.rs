//! The latency breakdown of one batch (`docs/design/performance-model.md`, issue 14): an average
//! event's end-to-end latency split into parts that add up to it exactly.
//!
//! ```text
//!  event ... close ──scheduling──▶ first task ──stage 0──▶ ──stage 1──▶ … last task ──report──▶ finished ──commit──▶ committed
//!  └ wait_for_close ┘                          └─ slowest task of each stage, split by its monotasks ─┘
//! ```
//!
//! Between the batch's first task starting and its last task finishing, each stage owns the
//! span from the previous stage's end to the end of its own last task (the critical path).
//! That span is split by what the stage's last-finishing task was doing: each instant goes
//! to the kinds of the monotasks running then (shared evenly when several kinds overlap), or
//! to `waiting` when none ran (queueing, waiting for blocks, handing over between monotasks).
//! Worker and driver clocks are taken as one; skew shows up in `report` and `scheduling`,
//! which are clamped at zero, and the parts still sum exactly to the end-to-end latency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::percentile::Distribution;
use crate::sample::{BatchSample, TaskSample};
use sleet_monotask::MonotaskKind;

/// The part of the critical path one stage owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpan {
    pub stage: u32,
    pub span_us: i64,
    /// The partition of the task that finished the stage.
    pub critical_partition: u32,
}

/// One batch's latency, in parts that sum to `end_to_end_us`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyBreakdown {
    pub batch: u64,
    /// The average event's wait for its batch to close: measured by the sources when they
    /// know their events' times (`BatchSample::event_wait_us`), otherwise half the interval
    /// (events spread uniformly over it).
    pub wait_for_close_us: i64,
    /// Batch closed → its first task runs (including waiting for the group).
    pub scheduling_us: i64,
    pub source_read_us: i64,
    pub map_compute_us: i64,
    /// Fetching shuffle blocks; announcing them is not a monotask and counts as `waiting`.
    pub shuffle_fetch_us: i64,
    pub reduce_compute_us: i64,
    pub sink_write_us: i64,
    /// State snapshots and checkpoint writes at group boundaries.
    pub checkpoint_us: i64,
    /// Critical-path time with no monotask of the critical task running.
    pub waiting_us: i64,
    /// Last task finished → the driver saw the batch finished.
    pub report_us: i64,
    /// Finished → the driver published the commit that admitted the batch's output (a job
    /// whose sink commits: until then a reader of committed output does not see it). Zero
    /// when the batch has no commit time.
    #[serde(default)]
    pub commit_us: i64,
    pub end_to_end_us: i64,
    pub stages: Vec<StageSpan>,
}

impl LatencyBreakdown {
    /// Every part in pipeline order, by name.
    pub fn parts(&self) -> [(&'static str, i64); 11] {
        [
            ("wait_for_close", self.wait_for_close_us),
            ("scheduling", self.scheduling_us),
            ("source_read", self.source_read_us),
            ("map_compute", self.map_compute_us),
            ("shuffle_fetch", self.shuffle_fetch_us),
            ("reduce_compute", self.reduce_compute_us),
            ("sink_write", self.sink_write_us),
            ("checkpoint", self.checkpoint_us),
            ("waiting", self.waiting_us),
            ("report", self.report_us),
            ("commit", self.commit_us),
        ]
    }

    fn add(&mut self, kind: MonotaskKind, us: i64) {
        let part = match kind {
            MonotaskKind::SourceRead => &mut self.source_read_us,
            // Decoding and combining are parts of the map's compute; the breakdown keeps them as one.
            MonotaskKind::MapCompute | MonotaskKind::Decode | MonotaskKind::Combine => &mut self.map_compute_us,
            MonotaskKind::ShuffleFetch => &mut self.shuffle_fetch_us,
            MonotaskKind::ReduceCompute => &mut self.reduce_compute_us,
            MonotaskKind::SinkWrite => &mut self.sink_write_us,
            MonotaskKind::StateSnapshot | MonotaskKind::CheckpointWrite => &mut self.checkpoint_us,
        };
        *part += us;
    }
}

/// The breakdown of every batch sample, with the tasks that ran it.
pub fn breakdowns(batches: &[BatchSample], tasks: &[TaskSample], interval_ms: u64) -> Vec<LatencyBreakdown> {
    let mut by_batch: BTreeMap<u64, Vec<&TaskSample>> = BTreeMap::new();
    for task in tasks {
        by_batch.entry(task.batch).or_default().push(task);
    }
    batches
        .iter()
        .map(|batch| breakdown(batch, by_batch.get(&batch.batch).map_or(&[][..], Vec::as_slice), interval_ms))
        .collect()
}

/// One batch's breakdown. End to end is `wait_for_close + (committed − closed)`, or to
/// `finished` for a batch without a commit time; a batch the driver recorded as finishing
/// before it closed counts as finishing at the close.
pub fn breakdown(batch: &BatchSample, tasks: &[&TaskSample], interval_ms: u64) -> LatencyBreakdown {
    let closed = batch.closed_at_us;
    let finished = batch.finished_at_us.max(closed);
    let start = batch.first_task_started_at_us.clamp(closed, finished);
    let mut out = LatencyBreakdown {
        batch: batch.batch,
        wait_for_close_us: batch.event_wait_us.unwrap_or(interval_ms as i64 * 1000 / 2).max(0),
        scheduling_us: start - closed,
        ..LatencyBreakdown::default()
    };
    let mut by_stage: BTreeMap<u32, Vec<&TaskSample>> = BTreeMap::new();
    for task in tasks {
        by_stage.entry(task.stage).or_default().push(task);
    }
    let mut boundary = start;
    for (stage, stage_tasks) in by_stage {
        let Some(critical) =
            stage_tasks.iter().copied().max_by_key(|task| (task.finished_at_us, std::cmp::Reverse(task.partition)))
        else {
            continue;
        };
        let end = critical.finished_at_us.clamp(boundary, finished);
        attribute(&mut out, critical, (boundary, end));
        out.stages.push(StageSpan { stage, span_us: end - boundary, critical_partition: critical.partition });
        boundary = end;
    }
    out.report_us = finished - boundary;
    let committed = batch.committed_at_us.map_or(finished, |at| at.max(finished));
    out.commit_us = committed - finished;
    out.end_to_end_us = out.wait_for_close_us + committed - closed;
    let sum: i64 = out.parts().iter().map(|(_, us)| us).sum();
    assert_eq!(sum, out.end_to_end_us, "the parts of batch {} must sum to its end-to-end latency", batch.batch);
    out
}

/// Splits `[from, to)` among the kinds of the task's monotasks running at each instant.
fn attribute(out: &mut LatencyBreakdown, task: &TaskSample, (from, to): (i64, i64)) {
    let runs: Vec<(i64, i64, MonotaskKind)> = task
        .monotasks
        .iter()
        .map(|m| (m.started_at_us.max(from), m.finished_at_us.min(to), m.kind))
        .filter(|(start, end, _)| end > start)
        .collect();
    let mut points: Vec<i64> = runs.iter().flat_map(|&(start, end, _)| [start, end]).chain([from, to]).collect();
    points.sort_unstable();
    points.dedup();
    for window in points.windows(2) {
        let (start, end) = (window[0], window[1]);
        let mut kinds: Vec<MonotaskKind> =
            runs.iter().filter(|run| run.0 <= start && end <= run.1).map(|run| run.2).collect();
        kinds.sort_unstable();
        kinds.dedup();
        share(out, &kinds, end - start);
    }
}

/// `us` split evenly over `kinds` in whole µs, the remainder to the first ones, so nothing
/// is lost to rounding; all of it to `waiting` when no kind ran.
fn share(out: &mut LatencyBreakdown, kinds: &[MonotaskKind], us: i64) {
    if kinds.is_empty() {
        out.waiting_us += us;
        return;
    }
    let count = kinds.len() as i64;
    for (index, &kind) in kinds.iter().enumerate() {
        out.add(kind, us / count + i64::from((index as i64) < us % count));
    }
}

/// One part's distribution over batches, in ms. Serialize only, as `Distribution` is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartDistribution {
    pub part: String,
    pub ms: Distribution,
}

/// Percentiles of each part over `breakdowns` (for the bench JSON: the caller picks the
/// batches, e.g. those of one second), in pipeline order, with end to end last.
pub fn part_distributions(breakdowns: &[LatencyBreakdown]) -> Vec<PartDistribution> {
    let names = LatencyBreakdown::default().parts().map(|(name, _)| name);
    let column = |index: Option<usize>| -> Vec<f64> {
        breakdowns.iter().map(|b| index.map_or(b.end_to_end_us, |index| b.parts()[index].1) as f64 / 1000.0).collect()
    };
    names
        .iter()
        .enumerate()
        .map(|(index, name)| (name.to_string(), column(Some(index))))
        .chain([("end_to_end".to_string(), column(None))])
        .map(|(part, values)| PartDistribution { part, ms: Distribution::of(&values) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::monotask;
    use proptest::prelude::*;
    use sleet_monotask::MonotaskKind::*;
    use sleet_monotask::MonotaskRecord;
    use sleet_monotask::Resource::*;

    fn task(stage: u32, partition: u32, span: (i64, i64), monotasks: Vec<MonotaskRecord>) -> TaskSample {
        TaskSample {
            stage,
            partition,
            batch: 7,
            worker: 0,
            started_at_us: span.0,
            finished_at_us: span.1,
            records_in: 1,
            monotasks,
        }
    }

    fn sample(closed: i64, first: i64, finished: i64, event_wait_us: Option<i64>) -> BatchSample {
        BatchSample {
            batch: 7,
            closed_at_us: closed,
            first_task_started_at_us: first,
            finished_at_us: finished,
            coordination_us: 0,
            events: 10,
            event_wait_us,
            committed_at_us: None,
        }
    }

    /// Expected parts in `LatencyBreakdown::parts` order, in ms.
    fn check(batch: &BatchSample, tasks: &[TaskSample], expected_ms: [i64; 11], stages: &[(u32, i64, u32)]) {
        let refs: Vec<&TaskSample> = tasks.iter().collect();
        let got = breakdown(batch, &refs, 100);
        let parts: Vec<(&str, i64)> = got.parts().to_vec();
        let names = got.parts().map(|(name, _)| name);
        let expected: Vec<(&str, i64)> = names.into_iter().zip(expected_ms.map(|ms| ms * 1000)).collect();
        assert_eq!(parts, expected);
        assert_eq!(got.end_to_end_us, expected_ms.iter().sum::<i64>() * 1000);
        let spans: Vec<(u32, i64, u32)> =
            got.stages.iter().map(|s| (s.stage, s.span_us, s.critical_partition)).collect();
        let stages: Vec<(u32, i64, u32)> =
            stages.iter().map(|&(stage, ms, partition)| (stage, ms * 1000, partition)).collect();
        assert_eq!(spans, stages);
    }

    const MS: i64 = 1000;

    #[test]
    fn a_two_stage_batch_splits_along_its_slowest_tasks() {
        let tasks = vec![
            // Map: partition 0 ends at 115 ms (2 ms read, 1 ms queued, 9 ms compute);
            // partition 1 ends at 110 ms and is off the critical path.
            task(
                0,
                0,
                (103 * MS, 115 * MS),
                vec![
                    monotask(SourceRead, Cpu, 0, [103 * MS, 103 * MS, 105 * MS]),
                    monotask(MapCompute, Cpu, 0, [105 * MS, 106 * MS, 115 * MS]),
                ],
            ),
            task(0, 1, (103 * MS, 110 * MS), vec![monotask(MapCompute, Cpu, 0, [103 * MS, 103 * MS, 110 * MS])]),
            // Reduce: the fetch queued from 113 ms counts only from the map stage's end.
            task(
                1,
                0,
                (113 * MS, 132 * MS),
                vec![
                    monotask(ShuffleFetch, Net, 1, [113 * MS, 115 * MS, 120 * MS]),
                    monotask(ReduceCompute, Cpu, 0, [120 * MS, 120 * MS, 128 * MS]),
                    monotask(SinkWrite, Disk, 1, [128 * MS, 128 * MS, 131 * MS]),
                ],
            ),
        ];
        // Closed at 100, first task 103, driver saw it at 134; wait 50 (half of 100 ms).
        check(
            &sample(100 * MS, 103 * MS, 134 * MS, None),
            &tasks,
            [50, 3, 2, 9, 5, 8, 3, 0, 2, 2, 0],
            &[(0, 12, 0), (1, 17, 0)],
        );
    }

    #[test]
    fn a_committed_batch_ends_at_its_commit_and_an_early_commit_time_counts_as_none() {
        let tasks =
            vec![task(0, 0, (100 * MS, 106 * MS), vec![monotask(MapCompute, Cpu, 0, [100 * MS, 100 * MS, 106 * MS])])];
        // Finished at 108 (report 2), the manifest admitting it published at 170: commit 62.
        let committed =
            BatchSample { committed_at_us: Some(170 * MS), ..sample(100 * MS, 100 * MS, 108 * MS, Some(20 * MS)) };
        check(&committed, &tasks, [20, 0, 0, 6, 0, 0, 0, 0, 0, 2, 62], &[(0, 6, 0)]);
        // A commit stamped before the finish (clock skew between threads) is no wait at all.
        let skewed = BatchSample { committed_at_us: Some(107 * MS), ..committed };
        check(&skewed, &tasks, [20, 0, 0, 6, 0, 0, 0, 0, 0, 2, 0], &[(0, 6, 0)]);
    }

    #[test]
    fn overlapping_kinds_share_time_and_measured_waits_are_used() {
        // A task pre-launched before the close (clamped: no negative scheduling) whose
        // snapshot overlaps its sink write for 2 ms: 1 ms each.
        let tasks = vec![task(
            0,
            3,
            (90 * MS, 110 * MS),
            vec![
                monotask(MapCompute, Cpu, 0, [90 * MS, 90 * MS, 104 * MS]),
                monotask(SinkWrite, Disk, 1, [104 * MS, 104 * MS, 108 * MS]),
                monotask(StateSnapshot, Cpu, 1, [106 * MS, 106 * MS, 110 * MS]),
            ],
        )];
        check(
            &sample(100 * MS, 90 * MS, 111 * MS, Some(20 * MS)),
            &tasks,
            [20, 0, 0, 4, 0, 0, 3, 3, 0, 1, 0],
            &[(0, 10, 3)],
        );
    }

    #[test]
    fn percentiles_of_each_part() {
        let breakdowns: Vec<LatencyBreakdown> = (1..=4)
            .map(|i| LatencyBreakdown {
                scheduling_us: i * MS,
                end_to_end_us: 10 * i * MS,
                ..LatencyBreakdown::default()
            })
            .collect();
        let parts = part_distributions(&breakdowns);
        let find = |name: &str| parts.iter().find(|p| p.part == name).map(|p| (p.ms.p50, p.ms.max));
        assert_eq!(find("scheduling"), Some((Some(2.0), Some(4.0))));
        assert_eq!(find("end_to_end"), Some((Some(20.0), Some(40.0))));
        assert_eq!(find("report"), Some((Some(0.0), Some(0.0))));
        assert_eq!(parts.len(), 12);
    }

    proptest! {
        /// Whatever the records (overlapping, out of order, skewed clocks), the parts sum to
        /// the end-to-end latency; `breakdown` asserts it, and the test checks each batch.
        #[test]
        fn parts_always_sum_to_end_to_end(
            run in crate::whatif::tests::arbitrary_run(),
            first in -50_000i64..50_000,
            commit in -5_000i64..200_000,
        ) {
            let batches: Vec<BatchSample> = run.batches.iter().enumerate().map(|(i, batch)| BatchSample {
                batch: i as u64,
                first_task_started_at_us: batch.closed_at_us + first,
                committed_at_us: (i % 2 == 0).then_some(batch.finished_at_us + commit),
                ..batch.clone()
            }).collect();
            for got in breakdowns(&batches, &run.tasks, run.shape.batch_interval_ms) {
                let sum: i64 = got.parts().iter().map(|(_, us)| us).sum();
                prop_assert_eq!(sum, got.end_to_end_us);
                prop_assert!(got.parts().iter().all(|(_, us)| *us >= 0), "{:?}", got);
            }
        }
    }
}
