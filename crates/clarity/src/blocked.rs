//! Blocked-time analysis (`docs/design/performance-model.md`): how much faster each batch
//! would be if the network, the disk or coordination took no time.
//!
//! Each task is modelled as its resources used one after another: per resource, the time in
//! which one of its monotasks on that resource was queued or running (concurrent fetches
//! count once). A stage takes as long as its slowest task and stages follow each other, so
//!
//! ```text
//!   batch = coordination + Σ_stages max_tasks Σ_resources busy(task, resource)
//! ```
//!
//! Removing a resource drops its term from every task. The speed-up is taken against this
//! simulated batch time, not the measured one, so the simulation's own error does not count
//! as a resource's importance; and it is a best case, because time spent on one resource
//! might have overlapped another.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sample::{union_us, BatchSample, TaskSample};
use sleet_monotask::Resource;

/// What the analysis takes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    Net,
    Disk,
    Coordination,
}

impl Blocker {
    pub const ALL: [Blocker; 3] = [Blocker::Net, Blocker::Disk, Blocker::Coordination];
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchBlocked {
    pub batch: u64,
    pub simulated_us: i64,
    /// Per blocker, the simulated batch time without it.
    pub without_us: BTreeMap<Blocker, i64>,
}

impl BatchBlocked {
    /// 1 − without ÷ simulated: the share of the batch time the blocker costs.
    pub fn speedup(&self, blocker: Blocker) -> f64 {
        match (self.simulated_us, self.without_us.get(&blocker)) {
            (simulated, Some(&without)) if simulated > 0 => 1.0 - without as f64 / simulated as f64,
            _ => 0.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockerSpeedup {
    pub blocker: Blocker,
    pub median: f64,
    pub mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockedReport {
    pub batches: Vec<BatchBlocked>,
    pub speedups: Vec<BlockerSpeedup>,
}

/// The analysis for every batch sample with the tasks that ran it.
pub fn blocked(batches: &[BatchSample], tasks: &[TaskSample]) -> BlockedReport {
    let mut by_batch: BTreeMap<u64, Vec<&TaskSample>> = BTreeMap::new();
    for task in tasks {
        by_batch.entry(task.batch).or_default().push(task);
    }
    let analysed: Vec<BatchBlocked> = batches
        .iter()
        .map(|batch| batch_blocked(batch, by_batch.get(&batch.batch).map_or(&[][..], Vec::as_slice)))
        .collect();
    let speedups = Blocker::ALL
        .iter()
        .map(|&blocker| {
            let values: Vec<f64> = analysed.iter().map(|batch| batch.speedup(blocker)).collect();
            BlockerSpeedup {
                blocker,
                median: crate::sample::median(&values).unwrap_or(0.0),
                mean: if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 },
            }
        })
        .collect();
    BlockedReport { batches: analysed, speedups }
}

/// One batch's simulated time, and without each blocker.
pub fn batch_blocked(batch: &BatchSample, tasks: &[&TaskSample]) -> BatchBlocked {
    let coordination_us = batch.coordination_us.max(0);
    let simulate = |without: Option<Resource>| coordination_us + stages_us(tasks, without);
    let with_all = stages_us(tasks, None);
    let without_us = Blocker::ALL
        .iter()
        .map(|&blocker| {
            let time = match blocker {
                Blocker::Net => simulate(Some(Resource::Net)),
                Blocker::Disk => simulate(Some(Resource::Disk)),
                Blocker::Coordination => with_all,
            };
            (blocker, time)
        })
        .collect();
    BatchBlocked { batch: batch.batch, simulated_us: coordination_us + with_all, without_us }
}

/// Σ over stages of the slowest task, each task its resources in sequence.
fn stages_us(tasks: &[&TaskSample], without: Option<Resource>) -> i64 {
    let mut slowest: BTreeMap<u32, i64> = BTreeMap::new();
    for task in tasks {
        let time = Resource::ALL
            .iter()
            .filter(|&&resource| Some(resource) != without)
            .map(|&resource| union_us(task.monotasks_on(resource).map(|m| (m.queued_at_us, m.finished_at_us))))
            .sum::<i64>();
        let stage = slowest.entry(task.stage).or_insert(0);
        *stage = (*stage).max(time);
    }
    slowest.values().sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{batch, monotask, task};
    use sleet_monotask::MonotaskKind::*;
    use sleet_monotask::Resource::*;

    fn check(tasks: &[TaskSample], coordination_us: i64, simulated_us: i64, without: [i64; 3]) {
        let sample = batch(0, 0, 1_000_000, coordination_us);
        let refs: Vec<&TaskSample> = tasks.iter().collect();
        let got = batch_blocked(&sample, &refs);
        assert_eq!(got.simulated_us, simulated_us, "simulated");
        let expected: BTreeMap<Blocker, i64> = Blocker::ALL.into_iter().zip(without).collect();
        assert_eq!(got.without_us, expected, "without each blocker");
    }

    #[test]
    fn removing_a_resource_shortens_the_critical_path() {
        let tasks = vec![
            // Map: one task 30 ms cpu, another 10 ms disk read + 10 ms cpu.
            task(0, 0, 0, vec![monotask(MapCompute, Cpu, 0, [0, 0, 30_000])]),
            task(
                0,
                0,
                1,
                vec![
                    monotask(SourceRead, Disk, 1, [0, 0, 10_000]),
                    monotask(MapCompute, Cpu, 0, [10_000, 10_000, 20_000]),
                ],
            ),
            // Reduce: two concurrent fetches over 0–20 ms (count once) + 5 ms queue and 5 ms
            // cpu + 10 ms disk write.
            task(
                1,
                0,
                0,
                vec![
                    monotask(ShuffleFetch, Net, 1, [30_000, 30_000, 50_000]),
                    monotask(ShuffleFetch, Net, 1, [30_000, 35_000, 45_000]),
                    monotask(ReduceCompute, Cpu, 0, [50_000, 55_000, 60_000]),
                    monotask(SinkWrite, Disk, 1, [60_000, 60_000, 70_000]),
                ],
            ),
        ];
        // Simulated: 4 coordination + 30 (map) + 40 (reduce) = 74 ms.
        // No net: 4 + 30 + 20. No disk: 4 + 30 (the cpu-only map task) + 30. No coordination: 70.
        check(&tasks, 4_000, 74_000, [54_000, 64_000, 70_000]);
    }

    #[test]
    fn medians_and_means_over_batches() {
        let one = |b: u64, net_ms: i64| {
            task(
                0,
                b,
                0,
                vec![
                    monotask(ShuffleFetch, Net, 1, [0, 0, net_ms * 1000]),
                    monotask(MapCompute, Cpu, 0, [net_ms * 1000, net_ms * 1000, 100_000]),
                ],
            )
        };
        let tasks = vec![one(0, 10), one(1, 20), one(2, 60)];
        let batches = vec![batch(0, 0, 0, 0), batch(1, 0, 0, 0), batch(2, 0, 0, 0)];
        let report = blocked(&batches, &tasks);
        let net = report.speedups.iter().find(|s| s.blocker == Blocker::Net).map(|s| (s.median, s.mean));
        // Speed-ups 0.1, 0.2, 0.6: median 0.2, mean 0.3.
        let (median, mean) = net.expect("net speed-up");
        assert!((median - 0.2).abs() < 1e-12 && (mean - 0.3).abs() < 1e-12, "median {median} mean {mean}");
        let disk = report.speedups.iter().find(|s| s.blocker == Blocker::Disk).map(|s| s.mean);
        assert_eq!(disk, Some(0.0));
    }
}
