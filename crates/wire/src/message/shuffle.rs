//! Worker ↔ worker, on a peer connection (postcard): a map side announces the blocks it
//! holds for a reduce side, which fetches them; each block comes back as a data frame.

use serde::{Deserialize, Serialize};
use sleet_plan::StageId;

use super::{BlockId, BlockLocation, BlockMeta, MapOutput, TaskId, WorkerId};

/// What one worker sends another over a peer connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerRequest {
    /// Answered by one data frame per block, in order.
    Fetch { blocks: Vec<BlockId> },
    /// Pushed metadata; not answered.
    Announce(BlocksAnnounced),
}

/// Map outputs one worker holds for the reduce partitions another worker owns, as many map
/// tasks' as were queued: pushed by the map side as soon as each task ends, so the reduce
/// tasks become ready without asking the driver. Empty outputs are announced too (rows 0): a
/// reducer counts one announcement per map partition and would otherwise wait forever for
/// a partition that produced nothing for it.
///
/// The holder is named once per frame and every entry is a flat, fixed-size record, so a
/// frame of many announcements costs one allocation to decode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlocksAnnounced {
    pub holder: WorkerId,
    /// The holder's shuffle address, where the blocks are pulled from.
    pub holder_address: String,
    pub entries: Vec<AnnouncedBlock>,
}

/// One map task's output for one reduce partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnouncedBlock {
    pub map_task: TaskId,
    pub reduce_stage: StageId,
    pub meta: BlockMeta,
    /// The map task's event-time progress (`TaskStats::event_time_ms`), in every entry, the
    /// empty ones included: a reducer learns how far a partition got even when it sent it
    /// no rows.
    pub event_time_ms: Option<i64>,
}

impl AnnouncedBlock {
    /// The reduce task this entry feeds.
    pub fn reduce_task(&self) -> TaskId {
        TaskId {
            job: self.map_task.job,
            stage: self.reduce_stage,
            partition: self.meta.reduce_partition,
            batch: self.map_task.batch,
        }
    }
}

impl BlocksAnnounced {
    /// For every entry: the reduce task it feeds, the map partition it comes from and what
    /// it learns of it (for a non-empty block, where to pull it).
    pub fn inputs(&self) -> impl Iterator<Item = (TaskId, u32, MapOutput)> + '_ {
        self.entries.iter().map(move |entry| {
            let location = (entry.meta.rows > 0).then(|| BlockLocation {
                block: BlockId::of(entry.map_task, entry.meta.reduce_partition),
                worker: self.holder,
                address: self.holder_address.clone(),
                rows: entry.meta.rows,
                bytes: entry.meta.bytes,
            });
            let output = MapOutput { location, event_time_ms: entry.event_time_ms };
            (entry.reduce_task(), entry.map_task.partition, output)
        })
    }
}

/// Header of each data frame answering a `PeerRequest::Fetch`; the body is Arrow IPC stream bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchedBlock {
    Found { block: BlockId, rows: u64 },
    Missing { block: BlockId },
}
