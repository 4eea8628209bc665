//! What a task did, as workers report it in their status (`StatusBatch`, encoded by
//! `report_codec`): its outcome, the figures the driver sums, the blocks it wrote and its
//! monotasks.

use serde::{Deserialize, Serialize};
use sleet_monotask::MonotaskRecord;
use sleet_plan::SourceRange;

use super::{PartitionSnapshot, TaskId, WorkerId};

/// Serialized by `report_codec`, which sends its times relative to the task's start.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "crate::report_codec::TaskReportWire")]
pub struct TaskReport {
    pub task: TaskId,
    pub worker: WorkerId,
    /// The group the task was launched in; `None` under bsp.
    pub group: Option<u64>,
    pub outcome: TaskOutcome,
    pub monotasks: Vec<MonotaskRecord>,
    /// When the local scheduler started the task and when its last step ended (µs since the
    /// epoch, worker clock).
    pub started_at_us: i64,
    pub finished_at_us: i64,
}

#[allow(
    clippy::large_enum_variant,
    reason = "nearly every outcome is a success: boxing its stats would add an allocation per task on the worker's hot path to shrink the rare failure"
)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    Succeeded(TaskStats),
    Failed { reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockMeta {
    pub reduce_partition: u32,
    pub rows: u64,
    pub bytes: u64,
}

/// What a task did. Its size does not grow with the data: a few counters, one entry per
/// reduce partition it wrote a block for, one per window it closed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    /// The source range actually read (the batch log), for source tasks.
    pub source_range: Option<SourceRange>,
    /// What the source was waiting for when the batch closed (a broker down), if anything.
    #[serde(default)]
    pub source_waiting: Option<String>,
    pub records_in: u64,
    pub dead_letters: u64,
    pub rows_out: u64,
    pub blocks: Vec<BlockMeta>,
    /// Behind a window's watermark or a keyed operator's lateness horizon or TTL.
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    /// What the stage's stateful operators did and hold after the batch (zero for a
    /// stateless stage).
    pub state: StateFigures,
    /// A keyed operator that refused rows of new keys in this batch, as the plan names it:
    /// its state is at its `max_keys`.
    pub state_full: Option<String>,
    /// For each window this task closed: when the sink output of the last batch that
    /// updated any of its keys on this partition became visible, minus the window's end.
    pub window_latencies_ms: Vec<i64>,
    pub sink_rows: u64,
    /// When this task's sink output became visible to readers (µs since the epoch, worker
    /// clock): the write returned. `None` when it wrote nothing.
    pub sink_visible_at_us: Option<i64>,
    /// The snapshot this task wrote of its partition's state, when its batch ends a
    /// checkpoint.
    #[serde(default)]
    pub snapshot: Option<PartitionSnapshot>,
    /// The worker keeps this map task's output until a checkpoint covers its batch, so a
    /// recovery can reuse it instead of running the task again.
    #[serde(default)]
    pub retained: bool,
    /// For a source task whose source knows its events' times: how long they waited for the
    /// batch to close (the first part of their end-to-end latency).
    #[serde(default)]
    pub event_wait: Option<sleet_monotask::EventWait>,
    /// For a map task whose output feeds an event-time window: the largest event time among
    /// the rows it wrote (`None`: it wrote none). The reduce side takes its watermark from
    /// the least of these over the map partitions, so one partition running ahead cannot
    /// make another's rows late.
    #[serde(default)]
    pub event_time_ms: Option<i64>,
}

/// What the operators that keep state across batches did and hold: rows they used out of
/// order or could not use, keys they let go, and their size. A task's figures cover its
/// batch on its partition; a batch's are its tasks' summed (its size, too: over stages and
/// partitions); a job's sum its batches' counts and hold its newest batch's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFigures {
    /// Older than their key's newest reading but within its allowed lateness, and folded in
    /// where they belong (increments with `late: fold`).
    pub late_rows_folded: u64,
    /// Readings whose key and event time the state already held.
    pub duplicate_rows_dropped: u64,
    /// Rows without an event time, or without a value to fold.
    pub invalid_rows_dropped: u64,
    /// Rows of new keys refused while an operator held its `max_keys` keys.
    pub refused_rows: u64,
    /// Keys (or top-k groups) forgotten because their TTL passed.
    pub expired_keys: u64,
    /// Keys held (and open window groups), and an estimate of their bytes in memory.
    pub state_keys: u64,
    pub state_bytes: u64,
}

impl StateFigures {
    /// Another task of the same batch: everything adds up.
    pub fn add_task(&mut self, task: &StateFigures) {
        self.add_counts(task);
        self.state_keys += task.state_keys;
        self.state_bytes += task.state_bytes;
    }

    /// Only the counts of `other`, the size left as it is.
    pub fn add_counts(&mut self, other: &StateFigures) {
        self.late_rows_folded += other.late_rows_folded;
        self.duplicate_rows_dropped += other.duplicate_rows_dropped;
        self.invalid_rows_dropped += other.invalid_rows_dropped;
        self.refused_rows += other.refused_rows;
        self.expired_keys += other.expired_keys;
    }
}
