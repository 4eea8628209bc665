//! The model's input: plain data the driver already holds (task reports, batch and group
//! records, the cluster's shape), and the interval arithmetic every analysis shares.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use sleet_monotask::{MonotaskKind, MonotaskRecord, Resource};

use crate::host::HostCapacity;

/// One task as its worker reported it: one stage of one batch on one partition. Stage 0 is
/// the map (source) stage; later stages reduce. Times are µs since the epoch, worker clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSample {
    pub stage: u32,
    pub partition: u32,
    pub batch: u64,
    pub worker: u32,
    pub started_at_us: i64,
    pub finished_at_us: i64,
    pub records_in: u64,
    pub monotasks: Vec<MonotaskRecord>,
}

impl TaskSample {
    pub fn duration_us(&self) -> i64 {
        self.finished_at_us - self.started_at_us
    }

    /// Bytes the task's monotasks moved or processed, over every resource.
    pub fn bytes(&self) -> u64 {
        self.monotasks.iter().map(|monotask| monotask.bytes).sum()
    }

    pub fn monotasks_on(&self, resource: Resource) -> impl Iterator<Item = &MonotaskRecord> {
        self.monotasks.iter().filter(move |monotask| monotask.resource == resource)
    }
}

/// One batch as the driver saw it. Times are µs since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchSample {
    pub batch: u64,
    /// The scheduled end of the batch's interval: no event of it arrives later.
    pub closed_at_us: i64,
    pub first_task_started_at_us: i64,
    /// When the driver knew the batch finished (or its results became visible, if the
    /// caller prefers that end): the end of every latency this crate reports.
    pub finished_at_us: i64,
    /// Driver scheduling plus waiting for the group, for this batch: a group's coordination
    /// divided by the batches it holds, or under bsp the driver's time launching the batch.
    pub coordination_us: i64,
    pub events: u64,
    /// Mean over the batch's events of (`closed_at_us` − event time), when event times are
    /// known; otherwise the breakdown assumes events spread uniformly over the interval.
    #[serde(default)]
    pub event_wait_us: Option<i64>,
    /// When the driver published the commit that admitted the batch's output: from then a
    /// reader that trusts only committed output sees it. `None` when the job commits nothing
    /// (no file sink), or the commit had not been published when the samples were taken.
    #[serde(default)]
    pub committed_at_us: Option<i64>,
}

impl BatchSample {
    /// Processing time: from when the batch could start (closed, and its first task running)
    /// to its end. A task launched before the close waits for its input, which is not
    /// processing, so the later of the two starts counts.
    pub fn processing_us(&self) -> i64 {
        (self.finished_at_us - self.closed_at_us.max(self.first_task_started_at_us)).max(0)
    }
}

/// The cluster the samples ran on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusterShape {
    pub workers: u32,
    pub cores_per_worker: u32,
    pub batch_interval_ms: u64,
    /// Bytes/s one worker's network or disk sustains, when measured or limited
    /// (`--net-bandwidth`); `None`: derived from the records (see `model::throughputs`).
    #[serde(default)]
    pub net_bytes_per_s: Option<f64>,
    #[serde(default)]
    pub disk_bytes_per_s: Option<f64>,
}

impl ClusterShape {
    pub fn cores(&self) -> f64 {
        f64::from(self.workers.max(1)) * f64::from(self.cores_per_worker.max(1))
    }

    pub fn interval_us(&self) -> f64 {
        self.batch_interval_ms as f64 * 1000.0
    }
}

/// Everything one run left behind, as the analyses take it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSamples {
    pub shape: ClusterShape,
    pub batches: Vec<BatchSample>,
    pub tasks: Vec<TaskSample>,
    /// What the machine offered while the run was measured, when whoever ran it recorded
    /// that (the benchmarks do; the driver cannot see the host); `None` in older results.
    #[serde(default)]
    pub host: Option<HostCapacity>,
}

impl RunSamples {
    /// Mean processing time of the batches (`BatchSample::processing_us`); 0 without any.
    pub fn mean_processing_us(&self) -> f64 {
        if self.batches.is_empty() {
            return 0.0;
        }
        self.batches.iter().map(|batch| batch.processing_us() as f64).sum::<f64>() / self.batches.len() as f64
    }

    /// Whether the records time decoding apart from the rest of map compute: workers do
    /// since `MonotaskKind::Decode` exists; older results hold none.
    pub fn records_decoding(&self) -> bool {
        self.records_kind(MonotaskKind::Decode)
    }

    /// Whether the records time the map-side combine apart (`MonotaskKind::Combine`), which
    /// workers do since it exists, in runs that combine.
    pub fn records_combining(&self) -> bool {
        self.records_kind(MonotaskKind::Combine)
    }

    fn records_kind(&self, kind: MonotaskKind) -> bool {
        self.tasks.iter().flat_map(|task| &task.monotasks).any(|monotask| monotask.kind == kind)
    }

    /// Batches the run's tasks cover; at least 1 so an empty run divides safely.
    pub(crate) fn batch_count(&self) -> f64 {
        let batches: BTreeSet<u64> = self.tasks.iter().map(|task| task.batch).collect();
        batches.len().max(1) as f64
    }

    /// The busy cores of `host` that were not the job's cpu monotasks: the driver, the
    /// benchmark, the workers' network and bookkeeping threads, anything else on the
    /// machine. The job's part is its cpu monotasks' run time per batch over the batch
    /// interval (one batch per interval in a run that keeps up).
    pub(crate) fn other_cores(&self, host: &HostCapacity) -> f64 {
        let interval_us = self.shape.interval_us();
        if interval_us <= 0.0 {
            return 0.0;
        }
        let cpu_us: i64 =
            self.tasks.iter().flat_map(|task| task.monotasks_on(Resource::Cpu)).map(|m| m.run_us().max(0)).sum();
        host.other_cores_beside(cpu_us as f64 / self.batch_count() / interval_us)
    }
}

/// The union of half-open intervals `[start, end)` as disjoint intervals in order: time in
/// which at least one of them was in progress. Concurrent monotasks (several fetches at once)
/// count once.
pub fn merged(intervals: impl IntoIterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut sorted: Vec<(i64, i64)> = intervals.into_iter().filter(|(start, end)| end > start).collect();
    sorted.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(sorted.len());
    for (start, end) in sorted {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// Length of the union of half-open intervals: see `merged`.
pub fn union_us(intervals: impl IntoIterator<Item = (i64, i64)>) -> i64 {
    merged(intervals).iter().map(|(start, end)| end - start).sum()
}

/// Overlap of `[start, end)` with `[from, to)`.
pub fn overlap_us((start, end): (i64, i64), (from, to): (i64, i64)) -> i64 {
    (end.min(to) - start.max(from)).max(0)
}

/// The median by nearest rank (the lower middle of an even count), `None` when empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    crate::percentile::percentile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(intervals: &[(i64, i64)], expected: i64) {
        assert_eq!(union_us(intervals.iter().copied()), expected, "union of {intervals:?}");
    }

    #[test]
    fn union_counts_overlapping_time_once() {
        check(&[], 0);
        check(&[(0, 10)], 10);
        check(&[(0, 10), (5, 15)], 15);
        check(&[(0, 10), (20, 25)], 15);
        check(&[(20, 25), (0, 10), (2, 3), (10, 12)], 17);
        check(&[(5, 5), (7, 3)], 0);
    }

    #[test]
    fn overlap_is_clipped_to_the_window() {
        assert_eq!(overlap_us((0, 10), (5, 20)), 5);
        assert_eq!(overlap_us((0, 10), (10, 20)), 0);
        assert_eq!(overlap_us((3, 4), (0, 20)), 1);
    }

    #[test]
    fn other_load_is_the_host_busy_time_the_job_did_not_use() {
        // One 100 ms batch with 30 ms of cpu monotasks (20 map + 10 reduce) and a 5 ms
        // fetch: the job kept 0.3 cores busy; the host 0.45: other load 0.15.
        let monotask = |kind, resource, [started, finished]: [i64; 2]| MonotaskRecord {
            kind,
            resource,
            bytes: 0,
            queued_at_us: started,
            started_at_us: started,
            finished_at_us: finished,
        };
        let task = |stage, monotasks: Vec<MonotaskRecord>| TaskSample {
            stage,
            partition: 0,
            batch: 0,
            worker: 0,
            started_at_us: monotasks[0].started_at_us,
            finished_at_us: monotasks[monotasks.len() - 1].finished_at_us,
            records_in: 100,
            monotasks,
        };
        let run = RunSamples {
            shape: ClusterShape {
                workers: 1,
                cores_per_worker: 1,
                batch_interval_ms: 100,
                net_bytes_per_s: None,
                disk_bytes_per_s: None,
            },
            batches: vec![],
            tasks: vec![
                task(0, vec![monotask(MonotaskKind::MapCompute, Resource::Cpu, [0, 20_000])]),
                task(
                    1,
                    vec![
                        monotask(MonotaskKind::ShuffleFetch, Resource::Net, [20_000, 25_000]),
                        monotask(MonotaskKind::ReduceCompute, Resource::Cpu, [25_000, 35_000]),
                    ],
                ),
            ],
            host: None,
        };
        let host = |busy_cores| HostCapacity {
            cores: 2,
            busy_cores,
            all_busy_core_speed: 1.0,
            link_bytes_per_s: None,
            map_task_fixed: None,
        };
        let other = run.other_cores(&host(0.45));
        assert!((other - 0.15).abs() < 1e-12, "{other}");
        // A host reading below the job's own use is noise, not negative load.
        assert_eq!(run.other_cores(&host(0.1)), 0.0);
    }

    #[test]
    fn processing_starts_at_the_later_of_close_and_first_task() {
        let batch = |closed, first| BatchSample {
            batch: 0,
            closed_at_us: closed,
            first_task_started_at_us: first,
            finished_at_us: 100,
            coordination_us: 0,
            events: 0,
            event_wait_us: None,
            committed_at_us: None,
        };
        assert_eq!(batch(10, 30).processing_us(), 70);
        assert_eq!(batch(30, 10).processing_us(), 70);
        assert_eq!(batch(130, 10).processing_us(), 0);
    }
}
