//! The bsp stage barrier: which tasks of a stage are still out, and the block locations
//! their reports announced. Pure.

use std::collections::BTreeMap;

use sleet_wire::{BlockId, BlockLocation, MapEventTime, TaskId, TaskStats, WorkerId};

#[derive(Debug)]
pub struct StageBarrier {
    outstanding: BTreeMap<TaskId, WorkerId>,
    /// Map output per reduce partition, for the next stage's tasks.
    pub blocks_by_reduce_partition: BTreeMap<u32, Vec<BlockLocation>>,
    /// How far in event time each map partition that wrote rows got: every reduce task of
    /// the next stage is told all of them.
    pub event_times: Vec<MapEventTime>,
}

impl StageBarrier {
    pub fn new(tasks: impl IntoIterator<Item = (TaskId, WorkerId)>) -> Self {
        StageBarrier {
            outstanding: tasks.into_iter().collect(),
            blocks_by_reduce_partition: BTreeMap::new(),
            event_times: Vec::new(),
        }
    }

    /// Records a successful report. Returns false for a task this barrier does not wait for.
    pub fn complete(&mut self, task: TaskId, stats: &TaskStats, worker: WorkerId, address: &str) -> bool {
        if self.outstanding.remove(&task).is_none() {
            return false;
        }
        if let Some(max_ms) = stats.event_time_ms {
            self.event_times.push(MapEventTime { map_partition: task.partition, max_ms });
        }
        for meta in &stats.blocks {
            let block = BlockId::of(task, meta.reduce_partition);
            self.blocks_by_reduce_partition.entry(meta.reduce_partition).or_default().push(BlockLocation {
                block,
                worker,
                address: address.to_string(),
                rows: meta.rows,
                bytes: meta.bytes,
            });
        }
        true
    }

    pub fn is_done(&self) -> bool {
        self.outstanding.is_empty()
    }

    pub fn waiting_on(&self) -> Vec<WorkerId> {
        let mut workers: Vec<WorkerId> = self.outstanding.values().copied().collect();
        workers.sort_unstable();
        workers.dedup();
        workers
    }

    pub fn involves(&self, worker: WorkerId) -> bool {
        self.outstanding.values().any(|owner| *owner == worker)
    }
}

#[cfg(test)]
mod tests {
    use sleet_plan::StageId;
    use sleet_wire::BlockMeta;

    use super::*;

    fn task(partition: u32) -> TaskId {
        TaskId { job: 1, stage: StageId(0), partition, batch: 9 }
    }

    #[test]
    fn barrier_opens_after_every_task_and_collects_blocks_per_reduce_partition() {
        let mut barrier = StageBarrier::new([(task(0), 1), (task(1), 2)]);
        let stats = |reduce_partitions: &[u32]| TaskStats {
            blocks: reduce_partitions.iter().map(|&r| BlockMeta { reduce_partition: r, rows: 1, bytes: 8 }).collect(),
            ..TaskStats::default()
        };
        assert!(barrier.complete(task(0), &stats(&[0, 1]), 1, "a:1"));
        assert!(!barrier.is_done());
        assert_eq!(barrier.waiting_on(), vec![2]);
        assert!(!barrier.complete(task(0), &stats(&[0]), 1, "a:1"), "a duplicate report is ignored");
        assert!(barrier.complete(task(1), &stats(&[1]), 2, "b:2"));
        assert!(barrier.is_done());
        assert_eq!(barrier.blocks_by_reduce_partition[&0].len(), 1);
        let holders: Vec<&str> = barrier.blocks_by_reduce_partition[&1].iter().map(|b| b.address.as_str()).collect();
        assert_eq!(holders, vec!["a:1", "b:2"]);
    }
}
