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
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
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
}
