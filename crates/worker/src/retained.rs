//! Map outputs kept after their reducers read them, so that a recovery re-runs on survivors only
//! what the lost worker held: reading and decoding a batch's input again is most of a ysb
//! batch's work, and since a batch is a pure function of its input, a survivor's outputs are
//! what a re-run would produce (`docs/design/recovery.md`).
//!
//! ```text
//!  source task of a stateless stage ends ─▶ keep (blocks, stats)   [if under the byte bound]
//!  driver: checkpoint after batch c recorded ─▶ drop kept outputs up to c
//!  driver: attempt A ends for a recovery ─▶ A's kept outputs wait for the next attempt
//!  attempt B registers, reusing runs of A ─▶ the rest of A's go; B's source tasks of those
//!                                            batches take A's outputs and keep them as B's
//! ```
//!
//! What a report says is kept stays kept until a checkpoint covers it or the job ends: the
//! bound only refuses new outputs, so the driver never asks for an output that is gone.

use std::collections::BTreeMap;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use rustc_hash::FxHashSet as HashSet;
use sleet_plan::StageId;
use sleet_wire::{JobId, ReusedOutputs, TaskId, TaskStats};

/// Bytes of kept blocks at most per worker: about a checkpoint interval of map output at
/// millions of events per second after map-side combining. Past it, outputs are not kept
/// and a recovery runs their tasks again.
pub const RETAINED_BYTES_MAX: u64 = 512 << 20;

/// One source task's output as it first ran.
#[derive(Debug, Clone)]
pub struct RetainedOutput {
    /// `(reduce partition, block)`.
    pub blocks: Vec<(u32, RecordBatch)>,
    pub stats: TaskStats,
    bytes: u64,
}

type Key = (JobId, StageId, u32, u64);

#[derive(Default)]
pub struct RetainedOutputs {
    inner: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    outputs: BTreeMap<Key, RetainedOutput>,
    bytes: u64,
    bytes_max: u64,
}

impl RetainedOutputs {
    pub fn new(bytes_max: u64) -> Self {
        RetainedOutputs { inner: Mutex::new(Kept { bytes_max, ..Kept::default() }) }
    }

    /// Keeps `task`'s output if it fits; whether it was kept goes into the task's report.
    pub fn keep(&self, task: TaskId, blocks: Vec<(u32, RecordBatch)>, stats: TaskStats) -> bool {
        let bytes = blocks.iter().map(|(_, block)| block.get_array_memory_size() as u64).sum::<u64>();
        let mut kept = self.inner.lock().expect("retained outputs lock");
        if kept.bytes + bytes > kept.bytes_max {
            return false;
        }
        kept.bytes += bytes;
        let key = (task.job, task.stage, task.partition, task.batch);
        if let Some(previous) = kept.outputs.insert(key, RetainedOutput { blocks, stats, bytes }) {
            kept.bytes -= previous.bytes;
        }
        true
    }

    /// The output of `(stage, partition, batch)` as attempt `from_job` ran it, kept again as
    /// `task`'s (the reusing attempt may itself fail and be recovered).
    pub fn hand_over(&self, from_job: JobId, task: TaskId) -> Option<RetainedOutput> {
        let mut kept = self.inner.lock().expect("retained outputs lock");
        let output = kept.outputs.remove(&(from_job, task.stage, task.partition, task.batch))?;
        kept.outputs.insert((task.job, task.stage, task.partition, task.batch), output.clone());
        Some(output)
    }

    /// A checkpoint after `batch` is recorded for `job`.
    pub fn drop_through(&self, job: JobId, batch: u64) {
        self.retain(|(kept_job, _, _, kept_batch)| *kept_job != job || *kept_batch > batch);
    }

    pub fn drop_job(&self, job: JobId) {
        self.retain(|(kept_job, ..)| *kept_job != job);
    }

    /// A job registers: outputs of any job that is neither running here (`running`) nor the
    /// one it takes over (`from`) can never be asked for again.
    pub fn keep_only(&self, running: &HashSet<JobId>, from: Option<&ReusedOutputs>) {
        self.retain(|(job, stage, partition, batch)| {
            running.contains(job)
                || from.is_some_and(|reuse| {
                    *job == reuse.from_job
                        && reuse.runs.iter().any(|run| {
                            run.stage == *stage && run.partition == *partition && run.batches.contains(batch)
                        })
                })
        });
    }

    pub fn bytes(&self) -> u64 {
        self.inner.lock().expect("retained outputs lock").bytes
    }

    pub fn len(&self) -> usize {
        self.inner.lock().expect("retained outputs lock").outputs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn retain(&self, mut keep: impl FnMut(&Key) -> bool) {
        let mut kept = self.inner.lock().expect("retained outputs lock");
        let mut freed = 0;
        kept.outputs.retain(|key, output| {
            let stays = keep(key);
            if !stays {
                freed += output.bytes;
            }
            stays
        });
        kept.bytes -= freed;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use sleet_wire::ReusedRun;

    use super::*;

    fn block(rows: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..rows))]).expect("a block")
    }

    fn task(job: JobId, partition: u32, batch: u64) -> TaskId {
        TaskId { job, stage: StageId(0), partition, batch }
    }

    #[test]
    fn kept_outputs_go_at_their_checkpoint_and_move_to_the_attempt_that_reuses_them() {
        let kept = RetainedOutputs::new(u64::MAX);
        for batch in 0..6 {
            assert!(kept.keep(task(1, 0, batch), vec![(0, block(10))], TaskStats::default()));
        }
        kept.drop_through(1, 2);
        assert_eq!(kept.len(), 3, "batches 3, 4, 5 stay");
        let reuse =
            ReusedOutputs { from_job: 1, runs: vec![ReusedRun { stage: StageId(0), partition: 0, batches: 3..5 }] };
        kept.keep_only(&HashSet::default(), Some(&reuse));
        assert_eq!(kept.len(), 2, "batch 5 is not reused, so it goes");
        let handed = kept.hand_over(1, task(2, 0, 3)).expect("batch 3 is kept");
        assert_eq!(handed.blocks[0].1.num_rows(), 10);
        assert!(kept.hand_over(1, task(2, 0, 3)).is_none(), "handed over once");
        assert!(kept.hand_over(2, task(3, 0, 3)).is_some(), "kept again under the attempt that took it");
        kept.drop_job(3);
        kept.drop_job(1);
        assert!(kept.is_empty());
        assert_eq!(kept.bytes(), 0, "every byte accounted for");
    }

    #[test]
    fn the_bound_refuses_new_outputs_and_never_drops_kept_ones() {
        let one = block(1000).get_array_memory_size() as u64;
        let kept = RetainedOutputs::new(one * 2);
        assert!(kept.keep(task(1, 0, 0), vec![(0, block(1000))], TaskStats::default()));
        assert!(kept.keep(task(1, 0, 1), vec![(0, block(1000))], TaskStats::default()));
        assert!(!kept.keep(task(1, 0, 2), vec![(0, block(1000))], TaskStats::default()));
        assert_eq!(kept.len(), 2);
        kept.drop_through(1, 0);
        assert!(kept.keep(task(1, 0, 2), vec![(0, block(1000))], TaskStats::default()), "room again");
    }
}
