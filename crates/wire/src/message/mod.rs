//! The messages of sleet, a module per conversation: `control` (driver ↔ worker),
//! `shuffle` (worker ↔ worker: block announcements and fetches), `client` (client ↔
//! driver, with the job's progress and summary) and `reports` (what a task did, in the
//! workers' status). Here are the names every conversation uses. Tasks name a registered
//! stage by id; no plan is re-sent.
//!
//! Everything is re-exported, so `sleet_wire::X` and `sleet_wire::message::X` name every
//! type wherever it lives. Moving a type between these modules changes no byte on the wire:
//! neither postcard nor JSON carries a type's path.

use serde::{Deserialize, Serialize};
use sleet_plan::StageId;

pub mod client;
pub mod control;
pub mod reports;
pub mod shuffle;

pub use client::*;
pub use control::*;
pub use reports::*;
pub use shuffle::*;

pub type JobId = u64;
pub type WorkerId = u32;

/// One stage of one batch on one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskId {
    pub job: JobId,
    pub stage: StageId,
    pub partition: u32,
    pub batch: u64,
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job {} {} partition {} batch {}", self.job, self.stage, self.partition, self.batch)
    }
}

/// The output of one map task destined for one reduce partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlockId {
    pub job: JobId,
    pub stage: StageId,
    pub map_partition: u32,
    pub batch: u64,
    pub reduce_partition: u32,
}

impl BlockId {
    /// The block map task `map_task` wrote for `reduce_partition`.
    pub fn of(map_task: TaskId, reduce_partition: u32) -> Self {
        BlockId {
            job: map_task.job,
            stage: map_task.stage,
            map_partition: map_task.partition,
            batch: map_task.batch,
            reduce_partition,
        }
    }
}

/// The largest event time among the rows map partition `map_partition` wrote for a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEventTime {
    pub map_partition: u32,
    pub max_ms: i64,
}

/// What a reduce task learns of one map partition's output for its batch: where its block
/// lives (none when it is empty) and the map task's event-time progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapOutput {
    pub location: Option<BlockLocation>,
    pub event_time_ms: Option<i64>,
}

/// Where a block lives: what a holder's announcement says (`shuffle`), and under bsp what a
/// reduce task's launch carries (`control`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLocation {
    pub block: BlockId,
    pub worker: WorkerId,
    /// The holder's shuffle address, so the reducer can pull without asking the driver.
    pub address: String,
    pub rows: u64,
    pub bytes: u64,
}
