//! Checkpoints at group boundaries (`docs/design/recovery.md`): when one is due, the last batch of
//! the next group is marked, every stateful partition snapshots its state right after that batch
//! and writes it to the store, and once the batch completes the driver records the checkpoint: the
//! snapshots' locations and where every source partition stands (the end of what that batch read).
//! Recovery restarts from the latest record; an older one, and its snapshots, are deleted once a
//! newer one is durable.
//!
//! The decisions (when one is due, when one is complete) are pure; `record` does the I/O.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sleet_durable::checkpoint_store::{snapshot_folder, CheckpointStore, DirectoryStore};
use sleet_durable::DurableError;
use sleet_plan::SourceRange;
use sleet_wire::clock::BatchClock;
use sleet_wire::{JobId, PartitionSnapshot, RestorePoint};

use crate::batch_ledger::CompletedBatch;
use crate::live::CheckpointFigures;

/// A complete checkpoint: the state every stateful partition had after `batch`, and where
/// every source partition's next read starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    pub job: JobId,
    /// The attempt whose workers wrote the snapshots.
    pub attempt_job: JobId,
    pub batch: u64,
    pub snapshots: Vec<PartitionSnapshot>,
    /// What `batch` read on each source partition; a resumed job reads on from each end.
    pub source_ranges: Vec<(u32, SourceRange)>,
    pub recorded_at_ms: i64,
}

impl CheckpointRecord {
    pub fn restore_point(&self) -> RestorePoint {
        RestorePoint { batch: self.batch, snapshots: self.snapshots.clone() }
    }
}

pub struct Checkpoints {
    job: JobId,
    /// 0: no checkpoints.
    interval_ms: i64,
    /// Snapshots a complete checkpoint holds: one per stateful partition.
    snapshots_expected: usize,
    /// The scheduled end of the last batch asked to checkpoint.
    last_marked_end_ms: Option<i64>,
    /// Batches marked and not yet complete.
    marked: BTreeSet<u64>,
    latest: Option<CheckpointRecord>,
    store: Option<DirectoryStore>,
    /// Every attempt's id: each may have left snapshots, complete or not.
    attempts: Vec<JobId>,
    /// Checkpoints recorded by this driver.
    recorded: u64,
}

impl Checkpoints {
    pub fn new(job: JobId, interval_ms: u64, snapshots_expected: usize, store: Option<DirectoryStore>) -> Self {
        let interval_ms = if store.is_some() { interval_ms as i64 } else { 0 };
        Checkpoints {
            job,
            interval_ms,
            snapshots_expected,
            last_marked_end_ms: None,
            marked: BTreeSet::new(),
            latest: None,
            store,
            attempts: vec![job],
            recorded: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.interval_ms > 0
    }

    /// Whether the group ending with `last_batch` should end a checkpoint: at least the
    /// interval after the previous one, or the first group after the job starts or resumes
    /// past one interval. Marks it when so.
    pub fn mark_if_due(&mut self, last_batch: u64, clock: &BatchClock) -> Option<u64> {
        if !self.enabled() {
            return None;
        }
        let end_ms = clock.end_ms(last_batch);
        let since = self.last_marked_end_ms.unwrap_or(clock.start_ms);
        if end_ms - since < self.interval_ms {
            return None;
        }
        self.mark(last_batch, clock)
    }

    /// Marks the group ending with `last_batch` to end a checkpoint whether one is due or not
    /// (a placement change waits for one); `None` when checkpoints are off.
    pub fn mark(&mut self, last_batch: u64, clock: &BatchClock) -> Option<u64> {
        if !self.enabled() {
            return None;
        }
        self.last_marked_end_ms = Some(clock.end_ms(last_batch));
        self.marked.insert(last_batch);
        Some(last_batch)
    }

    /// A batch completed: when it was marked and every snapshot came in, the checkpoint it
    /// ends is complete and returned for `record`.
    pub fn completed(&mut self, batch: &CompletedBatch, attempt_job: JobId, now_ms: i64) -> Option<CheckpointRecord> {
        if !self.marked.remove(&batch.record.batch) {
            return None;
        }
        if batch.snapshots.len() != self.snapshots_expected {
            eprintln!(
                "sleet driver: checkpoint after batch {} has {} of {} snapshots; it is skipped",
                batch.record.batch,
                batch.snapshots.len(),
                self.snapshots_expected
            );
            return None;
        }
        let mut snapshots = batch.snapshots.clone();
        snapshots.sort_by_key(|snapshot| (snapshot.stage, snapshot.partition));
        Some(CheckpointRecord {
            job: self.job,
            attempt_job,
            batch: batch.record.batch,
            snapshots,
            source_ranges: batch.record.source_ranges.clone(),
            recorded_at_ms: now_ms,
        })
    }

    /// Makes `record` the latest checkpoint, durably, then drops the one before it. An
    /// older record than the latest (batches complete slightly out of order) is dropped.
    pub fn record(&mut self, record: CheckpointRecord) -> Result<(), DurableError> {
        let Some(store) = &self.store else { return Ok(()) };
        if self.latest.as_ref().is_some_and(|latest| latest.batch >= record.batch) {
            return store.delete_all(&snapshot_folder(record.attempt_job, record.batch));
        }
        let bytes = serde_json::to_vec_pretty(&record).expect("a checkpoint record serializes");
        sleet_failpoint::hit("driver-before-checkpoint-record");
        store.put(&record_name(self.job), &bytes)?;
        sleet_failpoint::hit("driver-after-checkpoint-record");
        self.recorded += 1;
        if let Some(previous) = self.latest.replace(record) {
            store.delete_all(&snapshot_folder(previous.attempt_job, previous.batch))?;
        }
        Ok(())
    }

    /// A restarted driver takes over what the one before it recorded: the latest
    /// checkpoint (its snapshots are dropped once a newer one is recorded) and every
    /// attempt's id (their snapshots are dropped when the job ends).
    pub fn adopt(&mut self, latest: Option<CheckpointRecord>, attempts: Vec<JobId>) {
        self.latest = latest;
        self.attempts = attempts;
    }

    /// Every attempt's id so far, the running one last.
    pub fn attempts(&self) -> &[JobId] {
        &self.attempts
    }

    pub fn latest(&self) -> Option<&CheckpointRecord> {
        self.latest.as_ref()
    }

    /// What the live view shows: how many were recorded, and the latest.
    pub fn figures(&self) -> CheckpointFigures {
        CheckpointFigures {
            taken: self.recorded,
            last_batch: self.latest.as_ref().map(|latest| latest.batch),
            last_at_ms: self.latest.as_ref().map(|latest| latest.recorded_at_ms),
        }
    }

    /// A new attempt starts: marks of the old one will never complete, and the interval
    /// counts from where the new one resumes.
    pub fn resume(&mut self, attempt_job: JobId, from_end_ms: i64) {
        self.marked.clear();
        self.last_marked_end_ms = Some(from_end_ms);
        self.attempts.push(attempt_job);
    }

    /// The job is over: its checkpoints are no longer needed.
    pub fn discard(&mut self) {
        let Some(store) = &self.store else { return };
        self.latest = None;
        for attempt in &self.attempts {
            let _ = store.delete_all(&format!("job-{attempt}"));
        }
    }
}

/// Where the latest checkpoint record of a job lives in the store.
pub fn record_name(job: JobId) -> String {
    format!("job-{job}/checkpoint.json")
}

#[cfg(test)]
mod tests {
    use sleet_plan::StageId;
    use sleet_wire::BatchRecord;

    use super::*;

    fn completed(batch: u64, snapshots: usize) -> CompletedBatch {
        CompletedBatch {
            record: BatchRecord {
                batch,
                source_ranges: vec![(0, SourceRange::Offsets { start: 10, end: 20 })],
                ..BatchRecord::default()
            },
            snapshots: (0..snapshots as u32)
                .map(|partition| PartitionSnapshot {
                    stage: StageId(1),
                    partition,
                    path: format!("p{partition}"),
                    bytes: 1,
                })
                .collect(),
            ..CompletedBatch::default()
        }
    }

    #[test]
    fn due_once_per_interval_and_complete_only_with_every_snapshot() {
        let clock = BatchClock::new(0, 100);
        let mut checkpoints = Checkpoints::new(1, 1_000, 2, Some(DirectoryStore::new("/nonexistent")));
        assert_eq!(checkpoints.mark_if_due(4, &clock), None, "500 ms in");
        assert_eq!(checkpoints.mark_if_due(9, &clock), Some(9), "1 s in");
        assert_eq!(checkpoints.mark_if_due(14, &clock), None);
        assert_eq!(checkpoints.mark_if_due(19, &clock), Some(19));
        assert!(checkpoints.completed(&completed(8, 2), 5, 0).is_none(), "not marked");
        assert!(checkpoints.completed(&completed(9, 1), 5, 0).is_none(), "a snapshot is missing");
        let record = checkpoints.completed(&completed(19, 2), 5, 0).expect("complete");
        assert_eq!((record.batch, record.attempt_job, record.snapshots.len()), (19, 5, 2));
        assert_eq!(record.source_ranges, vec![(0, SourceRange::Offsets { start: 10, end: 20 })]);
        let off = Checkpoints::new(1, 1_000, 2, None);
        assert!(!off.enabled(), "no store, no checkpoints");
    }

    #[test]
    fn a_newer_record_replaces_the_older_and_its_snapshots() {
        let root = std::env::temp_dir().join(format!("sleet-checkpoints-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = DirectoryStore::new(&root);
        let first = store.put(&format!("{}/s1-p0.state", snapshot_folder(5, 9)), b"a").expect("put");
        let mut checkpoints = Checkpoints::new(1, 1_000, 0, Some(DirectoryStore::new(&root)));
        let record = |batch| CheckpointRecord {
            job: 1,
            attempt_job: 5,
            batch,
            snapshots: Vec::new(),
            source_ranges: Vec::new(),
            recorded_at_ms: 0,
        };
        checkpoints.record(record(9)).expect("record");
        checkpoints.record(record(19)).expect("record");
        assert!(store.get(&first).is_err(), "the older checkpoint's snapshots are gone");
        let saved: CheckpointRecord =
            serde_json::from_slice(&store.get(&root.join("job-1/checkpoint.json").to_string_lossy()).expect("saved"))
                .expect("parses");
        assert_eq!(saved.batch, 19);
        checkpoints.record(record(14)).expect("an older one is dropped");
        assert_eq!(checkpoints.latest().map(|latest| latest.batch), Some(19));
        checkpoints.discard();
        assert!(!root.join("job-1").exists());
        let _ = std::fs::remove_dir_all(&root);
    }
}
