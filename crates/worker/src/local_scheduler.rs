//! The worker's local scheduler: which received tasks may start now. Pure: no clock, no I/O.
//!
//! The rules are the worker's, not the driver's, so that a driver may send tasks early (group
//! scheduling pre-sends whole groups) and correctness still holds:
//! - a task that reads a shuffle waits until every map partition it reads has announced its
//!   output for it (an empty output counts: it is announced with zero rows);
//! - a source task waits until its batch has closed on this worker's clock;
//! - tasks of a stateful stage start in batch order per partition, at most `ordered_ahead`
//!   at once: each batch's state update must see the one before it, which the task itself
//!   ensures by taking its turn before it touches the state (see `turn`), but the fetches
//!   before that may overlap, so one slow round trip does not stall the partition.
//!
//! A task moves through three places: `entries` holds every task not yet started; those
//! whose inputs are all announced and that wait only for the clock sit in `timed`; those
//! free of inputs and clock are startable (`ready`), except that a stateful partition's
//! tasks wait in `held_by_order` until they are that partition's next batch. Each event
//! touches only the tasks it can change, so a long queue of pre-scheduled tasks costs
//! nothing per event. Announcements can overtake the task they feed (a map task on another
//! worker may finish before this worker has read its own copy of the group), so inputs for
//! unknown tasks wait in `early_inputs` until the task arrives.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use sleet_plan::StageId;
use sleet_wire::{JobId, TaskId};

#[derive(Debug, Clone, PartialEq)]
pub struct PendingTask<T> {
    pub task: TaskId,
    /// A source task may start at this time (the end of its batch); `None` for others.
    pub not_before_ms: Option<i64>,
    /// Announcements the task needs before it can start: one per upstream map partition.
    pub inputs_expected: usize,
    /// Runs only after the same stage and partition finished the previous batch.
    pub ordered: bool,
    pub payload: T,
}

/// A task taken to run, with the inputs announced for it, keyed by the map partition that
/// sent each.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadyTask<T, I> {
    pub task: TaskId,
    /// Whether the task's stage is stateful (as submitted).
    pub ordered: bool,
    pub payload: T,
    pub inputs: Vec<(u32, I)>,
}

/// What became of an announced input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announced {
    /// Counted for a waiting task.
    Accepted,
    /// The task has not arrived; the input waits for it.
    Early,
    /// The task will never run here (its job ended or was truncated before its batch).
    Dropped,
    /// The early buffer is full: a peer announces for tasks that never come.
    Overflow,
}

/// Batch order first, so `ready` yields older batches before newer ones.
type Key = (JobId, u64, StageId, u32);
type Slot = (JobId, StageId, u32);

fn key(task: &TaskId) -> Key {
    (task.job, task.batch, task.stage, task.partition)
}

fn slot(task: &TaskId) -> Slot {
    (task.job, task.stage, task.partition)
}

fn task_of(task_key: &Key) -> TaskId {
    TaskId { job: task_key.0, batch: task_key.1, stage: task_key.2, partition: task_key.3 }
}

struct Entry<T, I> {
    pending: PendingTask<T>,
    inputs: Vec<(u32, I)>,
}

/// Bound on inputs buffered for tasks that have not arrived. Announcements only run ahead of
/// a group by the time its launch message takes to reach this worker, so a legitimate buffer
/// holds at most a few groups' worth.
pub const EARLY_INPUTS_MAX: usize = 1 << 20;

pub struct LocalScheduler<T, I> {
    entries: HashMap<TaskId, Entry<T, I>>,
    timed: BTreeSet<(i64, Key)>,
    ready: BTreeSet<Key>,
    /// Stateful tasks free of inputs and clock, per partition, waiting for their turn.
    held_by_order: HashMap<Slot, BTreeSet<u64>>,
    /// Per stateful partition, the batch put in `ready` and not yet taken.
    released_ordered: HashMap<Slot, u64>,
    /// Stateful tasks of one partition started and not finished, at most this many.
    ordered_ahead: usize,
    early_inputs: HashMap<TaskId, Vec<(u32, I)>>,
    early_inputs_len: usize,
    /// For ordered stages: the last batch started, the batches running, the batches waiting.
    last_started: HashMap<Slot, u64>,
    running_ordered: HashMap<Slot, BTreeSet<u64>>,
    waiting_ordered: HashMap<Slot, BTreeSet<u64>>,
    /// Per job, the last batch that may still run (after a stop).
    last_batch: HashMap<JobId, u64>,
    /// Jobs forgotten here: a failed attempt's tasks and announcements that arrive late (from
    /// a peer that had not heard yet, or a frozen worker waking up) are dropped, not kept.
    ended: std::collections::HashSet<JobId>,
}

/// How many batches of one stateful partition may run at once by default: enough to keep
/// fetches in flight through a few milliseconds of round trip, few enough that the blocks
/// they pull ahead stay small.
pub const ORDERED_AHEAD_DEFAULT: usize = 16;

impl<T, I> Default for LocalScheduler<T, I> {
    fn default() -> Self {
        Self::with_ordered_ahead(ORDERED_AHEAD_DEFAULT)
    }
}

impl<T, I> LocalScheduler<T, I> {
    pub fn with_ordered_ahead(ordered_ahead: usize) -> Self {
        assert!(ordered_ahead >= 1, "a stateful partition runs at least one batch at a time");
        LocalScheduler {
            entries: HashMap::default(),
            timed: BTreeSet::new(),
            ready: BTreeSet::new(),
            held_by_order: HashMap::default(),
            released_ordered: HashMap::default(),
            ordered_ahead,
            early_inputs: HashMap::default(),
            early_inputs_len: 0,
            last_started: HashMap::default(),
            running_ordered: HashMap::default(),
            waiting_ordered: HashMap::default(),
            last_batch: HashMap::default(),
            ended: std::collections::HashSet::new(),
        }
    }
}

impl<T, I> LocalScheduler<T, I> {
    /// Takes a task in. Returns false (and drops it) when its batch lies past a truncation.
    pub fn submit(&mut self, pending: PendingTask<T>) -> bool {
        let task = pending.task;
        if self.is_truncated(&task) {
            return false;
        }
        assert!(!self.entries.contains_key(&task), "{task} submitted twice");
        let inputs = self.early_inputs.remove(&task).unwrap_or_default();
        self.early_inputs_len -= inputs.len();
        assert!(
            inputs.len() <= pending.inputs_expected,
            "{task} has {} inputs announced but reads only {}",
            inputs.len(),
            pending.inputs_expected
        );
        let ordered = pending.ordered;
        if ordered {
            self.waiting_ordered.entry(slot(&task)).or_default().insert(task.batch);
        }
        self.entries.insert(task, Entry { pending, inputs });
        self.place_if_inputs_complete(&task);
        if ordered {
            // An earlier batch arriving late takes its turn back from a later one.
            self.release_next_in_order(slot(&task));
        }
        true
    }

    /// One map partition announced its output for `task`.
    pub fn announce(&mut self, task: &TaskId, map_partition: u32, input: I) -> Announced {
        if self.is_truncated(task) {
            return Announced::Dropped;
        }
        let Some(entry) = self.entries.get_mut(task) else {
            if self.early_inputs_len >= EARLY_INPUTS_MAX {
                return Announced::Overflow;
            }
            let inputs = self.early_inputs.entry(*task).or_default();
            assert!(
                inputs.iter().all(|(from, _)| *from != map_partition),
                "{task}: map partition {map_partition} announced twice"
            );
            inputs.push((map_partition, input));
            self.early_inputs_len += 1;
            return Announced::Early;
        };
        assert!(
            entry.inputs.iter().all(|(from, _)| *from != map_partition),
            "{task}: map partition {map_partition} announced twice"
        );
        assert!(
            entry.inputs.len() < entry.pending.inputs_expected,
            "{task} got more inputs than the {} it reads",
            entry.pending.inputs_expected
        );
        entry.inputs.push((map_partition, input));
        self.place_if_inputs_complete(task);
        Announced::Accepted
    }

    fn place_if_inputs_complete(&mut self, task: &TaskId) {
        let entry = &self.entries[task];
        if entry.inputs.len() < entry.pending.inputs_expected {
            return;
        }
        match entry.pending.not_before_ms {
            Some(not_before) => {
                self.timed.insert((not_before, key(task)));
            }
            None => self.free(task),
        }
    }

    /// `task` waits for nothing but, if stateful, its turn.
    fn free(&mut self, task: &TaskId) {
        if self.entries[task].pending.ordered {
            let slot = slot(task);
            self.held_by_order.entry(slot).or_default().insert(task.batch);
            self.release_next_in_order(slot);
        } else {
            self.ready.insert(key(task));
        }
    }

    /// Makes a stateful partition's next batch startable, if it is free and the partition
    /// has room for one more running batch.
    fn release_next_in_order(&mut self, slot: Slot) {
        let running = self.running_ordered.get(&slot).map_or(0, BTreeSet::len);
        if running >= self.ordered_ahead {
            return;
        }
        // After a started batch comes the one after it. Before any, the smallest batch here
        // goes first, which can change while the released one has not started yet.
        let next = match self.last_started.get(&slot) {
            Some(last) => Some(last + 1),
            None => self.waiting_ordered.get(&slot).and_then(|waiting| waiting.first().copied()),
        };
        if let Some(&released) = self.released_ordered.get(&slot) {
            if Some(released) == next {
                return;
            }
            self.ready.remove(&(slot.0, released, slot.1, slot.2));
            self.held_by_order.entry(slot).or_default().insert(released);
            self.released_ordered.remove(&slot);
        }
        let Some(next) = next else { return };
        if let Some(held) = self.held_by_order.get_mut(&slot) {
            if held.remove(&next) {
                self.ready.insert((slot.0, next, slot.1, slot.2));
                self.released_ordered.insert(slot, next);
            }
        }
    }

    /// Takes every task that may start at `now_ms`, older batches first.
    pub fn take_ready(&mut self, now_ms: i64) -> Vec<ReadyTask<T, I>> {
        while let Some(&(not_before, task_key)) = self.timed.first() {
            if not_before > now_ms {
                break;
            }
            self.timed.pop_first();
            self.free(&task_of(&task_key));
        }
        let mut ready = Vec::with_capacity(self.ready.len());
        // At most one batch per stateful partition is in `ready` at a time (see
        // `release_next_in_order`); taking it releases the next, which this loop then takes
        // too, up to the partition's limit.
        while let Some(task_key) = self.ready.pop_first() {
            let task = task_of(&task_key);
            let Entry { pending, inputs } = self.entries.remove(&task).expect("a ready task is an entry");
            // The invariant pre-scheduling rests on: a reduce task never reads a partial input.
            assert_eq!(inputs.len(), pending.inputs_expected, "{task} started before all its inputs were announced");
            assert!(
                pending.not_before_ms.is_none_or(|not_before| not_before <= now_ms),
                "{task} started before its batch closed"
            );
            if pending.ordered {
                let slot = slot(&task);
                assert_eq!(self.released_ordered.remove(&slot), Some(task.batch), "{task} started out of its turn");
                let running = self.running_ordered.entry(slot).or_default();
                assert!(running.last().is_none_or(|last| *last < task.batch), "{task} started after a later batch");
                running.insert(task.batch);
                assert!(running.len() <= self.ordered_ahead, "{task}'s partition runs too many batches at once");
                self.last_started.insert(slot, task.batch);
                if let Some(waiting) = self.waiting_ordered.get_mut(&slot) {
                    waiting.remove(&task.batch);
                }
                self.release_next_in_order(slot);
            }
            ready.push(ReadyTask { task, ordered: pending.ordered, payload: pending.payload, inputs });
        }
        ready
    }

    pub fn finished(&mut self, task: &TaskId) {
        let slot = slot(task);
        if self.running_ordered.get_mut(&slot).is_some_and(|running| running.remove(&task.batch)) {
            self.release_next_in_order(slot);
        }
    }

    /// When `take_ready` next has something to give: `i64::MIN` (at once) when a task is
    /// already startable, which a task's end can cause between two scans (it releases the
    /// next batch of its stateful partition); else when the earliest timed task's batch
    /// closes; `None` while only an event can make a task startable.
    pub fn next_wakeup_ms(&self) -> Option<i64> {
        if !self.ready.is_empty() {
            return Some(i64::MIN);
        }
        self.timed.first().map(|(not_before, _)| *not_before)
    }

    /// Whether a task of the same stage and partition from an earlier batch is still here,
    /// waiting or running (an ordered one).
    pub fn has_earlier(&self, task: &TaskId) -> bool {
        let slot = slot(task);
        self.running_ordered.get(&slot).and_then(|running| running.first()).is_some_and(|first| *first < task.batch)
            || self.entries.keys().any(|other| self::slot(other) == slot && other.batch < task.batch)
    }

    /// A stop: tasks of `job` past `last_batch` that have not started are dropped, and so is
    /// anything announced for them later.
    pub fn truncate(&mut self, job: JobId, last_batch: u64) {
        let limit = self.last_batch.entry(job).or_insert(last_batch);
        *limit = (*limit).min(last_batch);
        let limit = *limit;
        let dropped: Vec<TaskId> =
            self.entries.keys().filter(|task| task.job == job && task.batch > limit).copied().collect();
        for task in dropped {
            self.remove_entry(&task);
        }
        self.drop_early_inputs(|task| task.job == job && task.batch > limit);
    }

    pub fn forget_job(&mut self, job: JobId) {
        let dropped: Vec<TaskId> = self.entries.keys().filter(|task| task.job == job).copied().collect();
        for task in dropped {
            self.remove_entry(&task);
        }
        self.drop_early_inputs(|task| task.job == job);
        self.last_started.retain(|slot, _| slot.0 != job);
        self.running_ordered.retain(|slot, _| slot.0 != job);
        self.waiting_ordered.retain(|slot, _| slot.0 != job);
        self.held_by_order.retain(|slot, _| slot.0 != job);
        self.released_ordered.retain(|slot, _| slot.0 != job);
        self.last_batch.remove(&job);
        self.ended.insert(job);
    }

    fn remove_entry(&mut self, task: &TaskId) {
        let Some(entry) = self.entries.remove(task) else { return };
        let task_key = key(task);
        self.ready.remove(&task_key);
        if let Some(not_before) = entry.pending.not_before_ms {
            self.timed.remove(&(not_before, task_key));
        }
        if let Some(waiting) = self.waiting_ordered.get_mut(&slot(task)) {
            waiting.remove(&task.batch);
        }
        if let Some(held) = self.held_by_order.get_mut(&slot(task)) {
            held.remove(&task.batch);
        }
        if self.released_ordered.get(&slot(task)) == Some(&task.batch) {
            self.released_ordered.remove(&slot(task));
        }
    }

    fn drop_early_inputs(&mut self, matches: impl Fn(&TaskId) -> bool) {
        let mut removed = 0;
        self.early_inputs.retain(|task, inputs| {
            let keep = !matches(task);
            if !keep {
                removed += inputs.len();
            }
            keep
        });
        self.early_inputs_len -= removed;
    }

    fn is_truncated(&self, task: &TaskId) -> bool {
        self.ended.contains(&task.job) || self.last_batch.get(&task.job).is_some_and(|last| task.batch > *last)
    }

    pub fn waiting_len(&self) -> usize {
        self.entries.len()
    }

    pub fn early_inputs_len(&self) -> usize {
        self.early_inputs_len
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn task(stage: u32, partition: u32, batch: u64) -> TaskId {
        TaskId { job: 1, stage: StageId(stage), partition, batch }
    }

    fn pending(task: TaskId, not_before_ms: Option<i64>, inputs_expected: usize, ordered: bool) -> PendingTask<()> {
        PendingTask { task, not_before_ms, inputs_expected, ordered, payload: () }
    }

    fn ready_ids(scheduler: &mut LocalScheduler<(), u32>, now_ms: i64) -> Vec<TaskId> {
        scheduler.take_ready(now_ms).into_iter().map(|ready| ready.task).collect()
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
    fn reduce_task_waits_for_every_input_and_receives_them() {
        let mut scheduler = LocalScheduler::default();
        let reduce = task(1, 0, 0);
        scheduler.submit(pending(reduce, None, 2, false));
        assert_eq!(scheduler.announce(&reduce, 1, 11), Announced::Accepted);
        assert!(ready_ids(&mut scheduler, 0).is_empty(), "one input still missing");
        assert_eq!(scheduler.announce(&reduce, 0, 10), Announced::Accepted);
        let ready = scheduler.take_ready(0);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].inputs, vec![(1, 11), (0, 10)]);
    }

    #[test]
    fn inputs_announced_before_the_task_arrives_are_kept_for_it() {
        let mut scheduler = LocalScheduler::default();
        let reduce = task(1, 3, 7);
        assert_eq!(scheduler.announce(&reduce, 0, 1), Announced::Early);
        assert_eq!(scheduler.announce(&reduce, 1, 2), Announced::Early);
        assert_eq!(scheduler.early_inputs_len(), 2);
        scheduler.submit(pending(reduce, None, 2, false));
        assert_eq!(scheduler.early_inputs_len(), 0);
        assert_eq!(ready_ids(&mut scheduler, 0), vec![reduce], "both inputs were already here");
    }

    #[test]
    #[should_panic(expected = "announced twice")]
    fn a_map_partition_announcing_twice_is_a_bug() {
        let mut scheduler = LocalScheduler::default();
        let reduce = task(1, 0, 0);
        scheduler.submit(pending(reduce, None, 3, false));
        scheduler.announce(&reduce, 2, 0);
        scheduler.announce(&reduce, 2, 0);
    }

    #[test]
    fn ordered_stage_runs_batches_in_order_one_at_a_time() {
        let mut scheduler = LocalScheduler::with_ordered_ahead(1);
        scheduler.submit(pending(task(1, 0, 4), None, 0, true));
        scheduler.submit(pending(task(1, 0, 3), None, 0, true));
        scheduler.submit(pending(task(1, 1, 3), None, 0, true));
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 3), task(1, 1, 3)]);
        assert!(ready_ids(&mut scheduler, 0).is_empty(), "batch 4 waits for batch 3 of its partition");
        assert!(scheduler.has_earlier(&task(1, 0, 4)));
        assert_eq!(scheduler.next_wakeup_ms(), None, "only an event can start batch 4");
        scheduler.finished(&task(1, 0, 3));
        assert_eq!(scheduler.next_wakeup_ms(), Some(i64::MIN), "the end of batch 3 makes batch 4 startable now");
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 4)]);
    }

    #[test]
    fn ordered_stage_starts_up_to_its_limit_in_batch_order() {
        let mut scheduler = LocalScheduler::with_ordered_ahead(3);
        for batch in [5, 2, 4, 3, 6] {
            scheduler.submit(pending(task(1, 0, batch), None, 0, true));
        }
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 2), task(1, 0, 3), task(1, 0, 4)]);
        scheduler.finished(&task(1, 0, 3));
        assert_eq!(ready_ids(&mut scheduler, 0), vec![task(1, 0, 5)], "room for one more, the next in order");
        assert!(ready_ids(&mut scheduler, 0).is_empty());
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

    #[test]
    fn truncation_drops_later_batches_and_their_announcements() {
        let mut scheduler = LocalScheduler::default();
        for batch in 0..4 {
            scheduler.submit(pending(task(0, 0, batch), Some(batch as i64 * 10 + 10), 0, false));
            scheduler.submit(pending(task(1, 0, batch), None, 1, false));
        }
        scheduler.announce(&task(1, 0, 9), 0, 0);
        scheduler.truncate(1, 1);
        assert_eq!(scheduler.waiting_len(), 4, "batches 0 and 1 stay");
        assert_eq!(scheduler.early_inputs_len(), 0);
        assert_eq!(scheduler.announce(&task(1, 0, 2), 0, 0), Announced::Dropped);
        assert!(!scheduler.submit(pending(task(0, 0, 3), Some(40), 0, false)), "a late copy is refused");
        assert_eq!(ready_ids(&mut scheduler, 100), vec![task(0, 0, 0), task(0, 0, 1)]);
        assert_eq!(scheduler.next_wakeup_ms(), None);
    }

    #[test]
    fn forgetting_a_job_leaves_others_alone() {
        let mut scheduler = LocalScheduler::default();
        scheduler.submit(pending(task(0, 0, 0), Some(5), 0, false));
        let other = TaskId { job: 2, ..task(0, 0, 0) };
        scheduler.submit(pending(other, Some(5), 0, false));
        scheduler.announce(&task(1, 0, 0), 0, 0);
        scheduler.forget_job(1);
        assert_eq!(scheduler.early_inputs_len(), 0);
        assert_eq!(ready_ids(&mut scheduler, 5), vec![other]);
        // A failed attempt's stragglers: its late announcements and tasks are dropped.
        assert_eq!(scheduler.announce(&task(1, 0, 1), 0, 0), Announced::Dropped);
        assert!(!scheduler.submit(pending(task(0, 0, 1), Some(5), 0, false)));
        assert_eq!(scheduler.early_inputs_len(), 0);
    }

    /// One step of a random interleaving of what a worker sees.
    #[derive(Debug, Clone)]
    enum Step {
        Submit { reduce: usize },
        Announce { reduce: usize, map_partition: u32 },
        Take,
    }

    proptest! {
        /// Whatever the order of launches and announcements, a reduce task is taken exactly
        /// once, never before all its map partitions announced, and always once they have.
        #[test]
        fn reduce_tasks_start_exactly_when_every_input_is_in(
            map_partitions in 1u32..6,
            steps in proptest::collection::vec(
                prop_oneof![
                    (0usize..4).prop_map(|reduce| Step::Submit { reduce }),
                    (0usize..4, 0u32..6).prop_map(|(reduce, map_partition)| Step::Announce { reduce, map_partition }),
                    Just(Step::Take),
                ],
                0..60,
            ),
        ) {
            let mut scheduler: LocalScheduler<(), u32> = LocalScheduler::default();
            let reduce_tasks: Vec<TaskId> = (0..4).map(|batch| task(1, 0, batch)).collect();
            let mut submitted = [false; 4];
            let mut announced = vec![std::collections::BTreeSet::new(); 4];
            let mut started = [false; 4];
            let take = |scheduler: &mut LocalScheduler<(), u32>, submitted: &[bool; 4], announced: &[std::collections::BTreeSet<u32>], started: &mut [bool; 4]| {
                for ready in scheduler.take_ready(0) {
                    let index = ready.task.batch as usize;
                    prop_assert!(!started[index], "{} taken twice", ready.task);
                    prop_assert!(submitted[index]);
                    prop_assert_eq!(announced[index].len(), map_partitions as usize);
                    prop_assert_eq!(ready.inputs.len(), map_partitions as usize);
                    started[index] = true;
                }
                for index in 0..4 {
                    let complete = submitted[index] && announced[index].len() == map_partitions as usize;
                    prop_assert_eq!(started[index], complete, "task {} complete {} started {}", index, complete, started[index]);
                }
                Ok(())
            };
            for step in steps {
                match step {
                    Step::Submit { reduce } if !submitted[reduce] => {
                        submitted[reduce] = true;
                        scheduler.submit(pending(reduce_tasks[reduce], None, map_partitions as usize, false));
                    }
                    Step::Announce { reduce, map_partition }
                        if map_partition < map_partitions && !started[reduce] && announced[reduce].insert(map_partition) =>
                    {
                        scheduler.announce(&reduce_tasks[reduce], map_partition, map_partition);
                    }
                    Step::Take => take(&mut scheduler, &submitted, &announced, &mut started)?,
                    _ => {}
                }
            }
            take(&mut scheduler, &submitted, &announced, &mut started)?;
        }
    }
}
