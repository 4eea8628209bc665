//! Driver ↔ worker, on each worker's control connection (postcard): registration, a job's
//! stage plans once per attempt, launches (a group's share, or one task under bsp), the
//! end of a job, and the workers' batched status.

use serde::{Deserialize, Serialize};
use sleet_plan::{StageId, StagePlan};

use super::{BlockLocation, JobId, MapEventTime, TaskId, TaskReport, WorkerId};
use crate::clock::BatchClock;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskInput {
    /// A source task: the worker that owns the partition chooses what its batch reads (the
    /// generator's time range, later a Kafka offset range) and reports it in the batch log.
    /// The driver never chooses, under either scheduler, so it never touches source I/O.
    Source,
    /// A reduce task: every non-empty block it reads, with where each lives, and how far in
    /// event time each map partition that wrote rows got (its `TaskStats::event_time_ms`).
    Shuffle { blocks: Vec<BlockLocation>, event_times: Vec<MapEventTime> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDescriptor {
    pub task: TaskId,
    pub input: TaskInput,
    /// After its batch, a stateful task snapshots its partition's state for a checkpoint.
    #[serde(default)]
    pub checkpoint: bool,
}

/// Sent to every worker once per attempt of a job: the stage plans that tasks will name by
/// id. After a worker is lost the job goes on as a new attempt under a new id, so every
/// task, block and announcement of the old one is told apart and refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRegistration {
    pub job: JobId,
    pub name: String,
    #[serde(with = "crate::json_text")]
    pub stages: Vec<StagePlan>,
    pub clock: BatchClock,
    pub dead_letter_dir: Option<String>,
    /// 0 for the first run of a job, then 1, 2, … after each recovery. Output files carry it
    /// so that a new owner never appends to a file a lost worker may have torn.
    pub attempt: u32,
    /// Where stateful partitions write their checkpoint snapshots; `None`: no checkpoints.
    pub checkpoint_dir: Option<String>,
    /// The checkpoint this attempt starts from: its partitions load these snapshots before
    /// their first batch.
    pub restore: Option<RestorePoint>,
    /// The last batch whose output an earlier attempt committed: this attempt re-runs such
    /// batches only to rebuild state, and writes none of their rows or dead letters again.
    #[serde(default)]
    pub output_committed_through: Option<u64>,
    /// Map outputs of the attempt this one replaces that survivors still hold: their source
    /// tasks hand those blocks on instead of reading and computing the batch again.
    #[serde(default)]
    pub reuse: Option<ReusedOutputs>,
    /// The job's last batch, when it runs for a set duration: its input ends there, so the
    /// windows that emit only as they close are closed in it.
    #[serde(default)]
    pub last_batch: Option<u64>,
}

/// Map outputs a recovery takes over from the attempt `from_job`: for each listed source
/// partition, its batches `batches` (a run from the attempt's first batch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReusedOutputs {
    pub from_job: JobId,
    pub runs: Vec<ReusedRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReusedRun {
    pub stage: StageId,
    pub partition: u32,
    pub batches: std::ops::Range<u64>,
}

/// The state every stateful partition had after `batch`, as written to the checkpoint store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestorePoint {
    pub batch: u64,
    pub snapshots: Vec<PartitionSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSnapshot {
    pub stage: StageId,
    pub partition: u32,
    /// A path in the checkpoint store.
    pub path: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverToWorker {
    Welcome {
        worker: WorkerId,
        /// How often to send a heartbeat on the heartbeat connection.
        heartbeat_interval_ms: u64,
        /// Tells this driver process from a restarted one at the same address: a worker
        /// that loses its connection re-registers only with a driver of another incarnation
        /// (the one it knew died), never with the one that cut it off.
        driver_incarnation: u64,
    },
    RegisterJob(JobRegistration),
    /// bsp: one task, with its input decided by the driver.
    LaunchTask(TaskDescriptor),
    /// Group scheduling: every task this worker runs for a group of batches.
    LaunchGroup(GroupLaunch),
    /// Drop every task of `job` past `last_batch` that has not started (a stop request).
    Truncate {
        job: JobId,
        last_batch: u64,
    },
    /// Flush sinks, drop the job's state and blocks, then answer `JobEnded`.
    EndJob {
        job: JobId,
        /// The job ends for a recovery: keep the map outputs held for reuse until the next
        /// attempt is registered, which says which of them it takes over.
        keep_map_outputs: bool,
    },
    /// The checkpoint after `batch` is recorded: no recovery will re-run a batch up to it,
    /// so the map outputs held for reuse up to it can go.
    CheckpointRecorded {
        job: JobId,
        batch: u64,
    },
    Shutdown,
    /// Backpressure: every source task of `job` that has not read yet reads at most
    /// `records` (per partition, per batch); `None` lifts the bound. It applies at once,
    /// to batches already launched in groups too.
    ReadBound {
        job: JobId,
        records: Option<u32>,
    },
}

/// One worker's share of a group of batches `first_batch .. first_batch + batch_count`: the
/// partitions it runs of each stage (downstream stages first, so a worker registers the
/// tasks that consume blocks before those that produce them) and where every partition of a
/// shuffle-reading stage lives, so map tasks know whom to announce their blocks to. It
/// carries no plan and no per-batch entry: its size does not grow with the group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupLaunch {
    pub job: JobId,
    pub group: u64,
    pub first_batch: u64,
    pub batch_count: u32,
    pub tasks: Vec<StageTasks>,
    pub downstream: Vec<StageOwners>,
    /// Stateful partitions snapshot their state after this batch of the group, for a
    /// checkpoint.
    pub checkpoint_after: Option<u64>,
}

impl GroupLaunch {
    pub fn batches(&self) -> std::ops::Range<u64> {
        self.first_batch..self.first_batch + self.batch_count as u64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTasks {
    pub stage: StageId,
    pub partitions: Vec<u32>,
}

/// Who runs each partition of a stage that reads a shuffle; index = partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageOwners {
    pub stage: StageId,
    pub owners: Vec<PartitionOwner>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionOwner {
    pub worker: WorkerId,
    /// The owner's shuffle address, where announcements are pushed.
    pub address: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerToDriver {
    Register {
        name: String,
        shuffle_address: String,
        cores: u32,
        pid: u32,
        /// The incarnation of the driver this worker was registered with before, if any: a
        /// driver refuses a worker it declared lost itself.
        previous_driver: Option<u64>,
    },
    /// Asynchronous, batched progress: whatever finished since the previous status.
    Status(StatusBatch),
    JobEnded {
        job: JobId,
    },
    /// The worker was asked to stop (SIGTERM): it hands its partitions off at the next
    /// checkpoint and exits when the driver sends `Shutdown`.
    Leaving {
        worker: WorkerId,
    },
    /// Sent on the heartbeat connection only: the first one names the worker, every one
    /// says it is alive.
    Heartbeat {
        worker: WorkerId,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusBatch {
    /// Groups registered since the last status; always before the reports of their tasks.
    pub registered: Vec<GroupRegistered>,
    pub reports: Vec<TaskReport>,
}

/// A worker took a group's tasks into its local scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRegistered {
    pub job: JobId,
    pub group: u64,
    /// Decoding the launch message and registering its tasks.
    pub register_us: i64,
    /// How long source partitions sat idle with their batch closed because this group's
    /// tasks had not arrived yet: time lost waiting for coordination, summed over partitions.
    pub coordination_wait_us: i64,
}
