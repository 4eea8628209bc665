//! The worker's local scheduler: which received tasks may start now. Pure: no clock, no I/O.
//!
//! The rules are the worker's, not the driver's, so that a driver may send tasks early (group
//! scheduling pre-sends a whole group) and correctness still holds:
//! - a source task waits until its batch has closed on this worker's clock;
//! - a shuffle-reading task waits until every block it reads has been announced;
//! - tasks of a stateful stage run in batch order per partition, since each batch's state
//!   update must see the one before it.

use std::collections::HashMap;

use sleet_plan::StageId;
use sleet_wire::{JobId, TaskId};

#[derive(Debug, Clone, PartialEq)]
pub struct PendingTask<T> {
    pub task: TaskId,
    /// A source task may start at this time (the end of its batch); `None` for others.
    pub not_before_ms: Option<i64>,
    /// Inputs not announced yet; the task cannot start until this is 0.
    pub inputs_missing: usize,
    /// Runs only after the same stage and partition finished the previous batch.
    pub ordered: bool,
    pub payload: T,
}

#[derive(Debug)]
pub struct LocalScheduler<T> {
    waiting: Vec<PendingTask<T>>,
    /// For ordered stages: the last batch finished per (job, stage, partition).
    last_finished: HashMap<(JobId, StageId, u32), u64>,
    /// Ordered tasks currently running, so a second batch of the same partition waits.
    running_ordered: HashMap<(JobId, StageId, u32), u64>,
}

impl<T> Default for LocalScheduler<T> {
    fn default() -> Self {
        LocalScheduler { waiting: Vec::new(), last_finished: HashMap::new(), running_ordered: HashMap::new() }
    }
}

fn slot(task: &TaskId) -> (JobId, StageId, u32) {
    (task.job, task.stage, task.partition)
}

impl<T> LocalScheduler<T> {
    pub fn submit(&mut self, task: PendingTask<T>) {
        self.waiting.push(task);
    }

    /// Takes every task that may start at `now_ms`, in batch order.
    pub fn take_ready(&mut self, now_ms: i64) -> Vec<PendingTask<T>> {
        self.waiting.sort_by_key(|pending| (pending.task.batch, pending.task.stage, pending.task.partition));
        let mut ready = Vec::new();
        let mut index = 0;
        while index < self.waiting.len() {
            if self.may_start(&self.waiting[index], now_ms) {
                let pending = self.waiting.remove(index);
                assert_eq!(pending.inputs_missing, 0, "{} started before all its inputs were announced", pending.task);
                if pending.ordered {
                    self.running_ordered.insert(slot(&pending.task), pending.task.batch);
                }
                ready.push(pending);
            } else {
                index += 1;
            }
        }
        ready
    }

    fn may_start(&self, pending: &PendingTask<T>, now_ms: i64) -> bool {
        if pending.inputs_missing > 0 {
            return false;
        }
        if pending.not_before_ms.is_some_and(|not_before| now_ms < not_before) {
            return false;
        }
        if pending.ordered {
            let key = slot(&pending.task);
            if self.running_ordered.contains_key(&key) {
                return false;
            }
            // The first batch a partition sees starts it; later ones follow in order.
            if let Some(last) = self.last_finished.get(&key) {
                if pending.task.batch != last + 1 {
                    return false;
                }
            } else if self
                .waiting
                .iter()
                .any(|other| other.ordered && slot(&other.task) == key && other.task.batch < pending.task.batch)
            {
                return false;
            }
        }
        true
    }

    /// One more input of `task` was announced.
    pub fn announce_input(&mut self, task: &TaskId) {
        if let Some(pending) = self.waiting.iter_mut().find(|pending| pending.task == *task) {
            assert!(pending.inputs_missing > 0, "{task} got more inputs than it reads");
            pending.inputs_missing -= 1;
        }
    }

    pub fn finished(&mut self, task: &TaskId) {
        let key = slot(task);
        if self.running_ordered.get(&key) == Some(&task.batch) {
            self.running_ordered.remove(&key);
            self.last_finished.insert(key, task.batch);
        }
    }

    /// The earliest time a waiting task becomes ready by the clock alone.
    pub fn next_wakeup_ms(&self) -> Option<i64> {
        self.waiting
            .iter()
            .filter(|pending| pending.inputs_missing == 0)
            .filter_map(|pending| pending.not_before_ms)
            .min()
    }

    pub fn forget_job(&mut self, job: JobId) {
        self.waiting.retain(|pending| pending.task.job != job);
        self.last_finished.retain(|key, _| key.0 != job);
        self.running_ordered.retain(|key, _| key.0 != job);
    }

    pub fn waiting_len(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(stage: u32, partition: u32, batch: u64) -> TaskId {
        TaskId { job: 1, stage: StageId(stage), partition, batch }
    }

    fn pending(task: TaskId, not_before_ms: Option<i64>, inputs_missing: usize, ordered: bool) -> PendingTask<()> {
        PendingTask { task, not_before_ms, inputs_missing, ordered, payload: () }
    }

    fn ready_ids(scheduler: &mut LocalScheduler<()>, now_ms: i64) -> Vec<TaskId> {
        scheduler.take_ready(now_ms).into_iter().map(|pending| pending.task).collect()
    }

    #[test]
    fn source_task_waits_for_its_batch_to_close() {
        let mut scheduler = LocalScheduler::default();
        scheduler.submit(pending(task(0, 0, 5), Some(1_000), 0, false));
        assert!(ready_ids(&mut scheduler, 999).is_empty());
        assert_eq!(scheduler.next_wakeup_ms(), Some(1_000));
        assert_eq!(ready_ids(&mut scheduler, 1_000), vec![task(0, 0, 5)]);
    }

    #[test]
    fn reduce_task_waits_for_every_input() {
        let mut scheduler = LocalScheduler::default();
        let reduce = task(1, 0, 0);
        scheduler.submit(pending(reduce, None, 2, false));
        scheduler.announce_input(&reduce);
        assert!(ready_ids(&mut scheduler, 0).is_empty(), "one input still missing");
        scheduler.announce_input(&reduce);
        assert_eq!(ready_ids(&mut scheduler, 0), vec![reduce]);
    }

    #[test]
    fn ordered_stage_runs_batches_in_order_one_at_a_time() {
        let mut scheduler = LocalScheduler::default();
        scheduler.submit(pending(task(1, 0, 4), None, 0, true));
        scheduler.submit(pending(task(1, 0, 3), None, 0, true));
        scheduler.submit(pending(task(1, 1, 3), None, 0, true));
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 3), task(1, 1, 3)]);
        assert!(ready_ids(&mut scheduler, 0).is_empty(), "batch 4 waits for batch 3 of its partition");
        scheduler.finished(&task(1, 0, 3));
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 4)]);
    }

    #[test]
    fn ordered_stage_skipping_a_batch_waits() {
        let mut scheduler = LocalScheduler::default();
        scheduler.submit(pending(task(1, 0, 0), None, 0, true));
        assert_eq!(ready_ids(&mut scheduler, 0).len(), 1);
        scheduler.finished(&task(1, 0, 0));
        scheduler.submit(pending(task(1, 0, 2), None, 0, true));
        assert!(ready_ids(&mut scheduler, 0).is_empty(), "batch 1 has not run");
    }
}
