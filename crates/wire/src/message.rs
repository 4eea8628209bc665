//! The control messages of sleet, grouped by connection: driver↔worker, client↔driver,
//! worker↔worker (block announcements and shuffle fetches). Tasks name a registered stage by
//! id; no plan is re-sent.

use serde::{Deserialize, Serialize};
use sleet_monotask::MonotaskRecord;
use sleet_plan::{JobFile, SourceRange, StageId, StagePlan};

use crate::clock::BatchClock;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLocation {
    pub block: BlockId,
    pub worker: WorkerId,
    /// The holder's shuffle address, so the reducer can pull without asking the driver.
    pub address: String,
    pub rows: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskInput {
    /// A source task: the worker that owns the partition chooses what its batch reads (the
    /// generator's time range, later a Kafka offset range) and reports it in the batch log.
    /// The driver never chooses, under either scheduler, so it never touches source I/O.
    Source,
    /// A reduce task: every non-empty block it reads, with where each lives.
    Shuffle { blocks: Vec<BlockLocation> },
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

// Nearly every outcome is a success: boxing its stats would add an allocation per task on
// the worker's hot path to shrink the rare failure.
#[allow(clippy::large_enum_variant)]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientRequest {
    Submit(Box<JobFile>),
    Stop {
        job: JobId,
    },
    /// Follow a job submitted earlier (over a connection that was lost, or to a driver that
    /// restarted since): the driver answers with its progress and its end as it would the
    /// submitter, or `Rejected` when it does not know the job.
    Attach {
        job: JobId,
    },
    /// Stop every job, tell the workers to exit, then exit.
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverToClient {
    Accepted { job: JobId, workers: u32, start_ms: i64 },
    Rejected { reason: String },
    Progress(JobProgress),
    Finished(Box<JobSummary>),
    Failed { job: JobId, reason: String },
}

/// Sent about once a second while a job runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobProgress {
    pub job: JobId,
    pub batches_done: u64,
    pub events_in: u64,
    pub events_per_s: f64,
    pub dead_letters: u64,
    /// Over windows closed in the last ten seconds.
    pub window_latency_ms_p50: Option<f64>,
    pub window_latency_ms_p99: Option<f64>,
    /// How far the last finished batch ended behind its scheduled end.
    pub lag_ms: i64,
    /// Group scheduling: the current group size and the latest smoothed overhead.
    #[serde(default)]
    pub group_size: Option<u32>,
    #[serde(default)]
    pub overhead: Option<f64>,
    /// A source waiting for something outside (a Kafka broker down): batches run empty or
    /// late until it is back.
    #[serde(default)]
    pub source_waiting: Option<String>,
    /// What limits the job now, by the model of its recent batches: `cpu`, `net`, `disk`,
    /// `coordination` or `source`; `None` until a batch's samples are in.
    #[serde(default)]
    pub bottleneck: Option<String>,
}

/// One batch as the driver saw it; times in ms since the epoch. Both schedulers take every
/// time here from the task reports, at the same points, so their records compare.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub batch: u64,
    /// The group it ran in; `None` under bsp.
    #[serde(default)]
    pub group: Option<u64>,
    pub scheduled_end_ms: i64,
    /// When its first task started on a worker.
    pub launched_at_ms: i64,
    /// When its last task ended on its worker.
    pub finished_at_ms: i64,
    /// `finished_at_ms` in µs: sub-millisecond batches need it.
    #[serde(default)]
    pub finished_at_us: i64,
    /// When the last of its sink output became visible to readers, in µs (a 100 ms batch's
    /// results take 5–10 ms to appear, so whole milliseconds blur a 1.2× latency threshold);
    /// its end when it wrote none.
    #[serde(default)]
    pub results_visible_at_us: i64,
    pub events_in: u64,
    /// Its events' wait for its close, summed over the source tasks that measured it; `None`
    /// when no source knew its events' times.
    #[serde(default)]
    pub event_wait: Option<sleet_monotask::EventWait>,
    pub dead_letters: u64,
    pub map_stage_ms: f64,
    pub reduce_stage_ms: f64,
    /// What each source partition read, as `(partition, range)`: replaying the batch reads
    /// exactly these again.
    #[serde(default)]
    pub source_ranges: Vec<(u32, SourceRange)>,
}

impl BatchRecord {
    /// `results_visible_at_us` in whole ms, for figures kept at that resolution.
    pub fn results_visible_at_ms(&self) -> i64 {
        self.results_visible_at_us.div_euclid(1000)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    pub job: JobId,
    pub start_ms: i64,
    pub end_ms: i64,
    /// The most recent batches (older ones are dropped on very long jobs).
    pub batches: Vec<BatchRecord>,
    /// Every batch the job completed, including those no longer in `batches`.
    #[serde(default)]
    pub batches_total: u64,
    /// Batches before the point a restarted driver resumed at that no figure here counts:
    /// they ran under an earlier driver whose figures the state directory did not keep. 0
    /// when the driver that ends the job also started it, or took over its figures.
    #[serde(default)]
    pub batches_before_restart: u64,
    /// Every time a driver restarted from its state directory and resumed the job, in order.
    #[serde(default)]
    pub restarts: Vec<RestartRecord>,
    pub events_in: u64,
    pub dead_letters: u64,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    pub sink_rows: u64,
    pub window_latencies_ms: Vec<i64>,
    /// Busy and queued time per monotask kind and resource, over the whole job.
    pub monotask_summary: std::collections::BTreeMap<String, sleet_clarity::ResourceSummary>,
    #[serde(default)]
    pub scheduler: String,
    /// When the driver sent the job's first task or group (µs since the epoch).
    #[serde(default)]
    pub first_launch_at_us: i64,
    /// Messages the driver sent to workers to launch work: one per task under bsp, one per
    /// worker per group under group scheduling.
    #[serde(default)]
    pub launch_messages: u64,
    /// The most recent groups, in order (group scheduling only).
    #[serde(default)]
    pub groups: Vec<GroupRecord>,
    /// Every recovery from a lost worker, in order.
    #[serde(default)]
    pub recoveries: Vec<RecoveryRecord>,
    /// Batches that completed again in a later attempt (their first completion counts).
    #[serde(default)]
    pub batches_rerun: u64,
    /// Every change of placement for workers that joined while the job ran, in order.
    #[serde(default)]
    pub rebalances: Vec<RebalanceRecord>,
    /// The performance model's input for the most recent batches (their first completion);
    /// `None` from a driver that did not record them, or a job that completed no batch.
    #[serde(default)]
    pub samples: Option<sleet_clarity::RunSamples>,
}

/// Workers joined or left a running job: at a checkpoint, partitions moved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RebalanceRecord {
    pub joined: Vec<WorkerId>,
    /// Workers that asked to leave (SIGTERM) and handed their partitions off.
    #[serde(default)]
    pub left: Vec<WorkerId>,
    /// When the driver moved the partitions (ms since the epoch, driver clock).
    pub at_ms: i64,
    /// The checkpoint the moved partitions' state came from: the boundary of the change.
    pub checkpoint_batch: u64,
    pub resume_batch: u64,
    /// Batches that had been sent past the checkpoint and ran again (0 when the change
    /// waited for the boundary, as it does).
    pub rerun_batches: u64,
    /// `(partition, from, to)`.
    pub moves: Vec<(u32, WorkerId, WorkerId)>,
    pub workers: Vec<WorkerId>,
    /// Driver restarts before this change: 0 under the driver that started the job, `n`
    /// under the one that came back after the `n`-th restart (`JobSummary::restarts`).
    #[serde(default)]
    pub driver_restarts: u32,
}

/// A driver restarted from its state directory and resumed the job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RestartRecord {
    /// 1 for the first restart of the job's driver, 2 for the second, …
    pub restart: u32,
    /// When the restarted driver read its state directory (ms since the epoch, its clock).
    pub at_ms: i64,
    /// The checkpoint it resumed from; `None`: the job's start.
    pub checkpoint_batch: Option<u64>,
    pub resume_batch: u64,
    /// The number of the attempt it started.
    pub attempt: u32,
    /// Whether the figures of the drivers before it (counts, recoveries, rebalances) were in
    /// the state directory; when not, the summary counts from the restart.
    pub figures_restored: bool,
}

/// One recovery from a lost worker, as the driver decided it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRecord {
    pub lost_worker: WorkerId,
    pub reason: String,
    /// When the driver declared the worker lost (ms since the epoch, driver clock).
    pub detected_at_ms: i64,
    /// The checkpoint it resumed from; `None`: the job's start.
    pub checkpoint_batch: Option<u64>,
    pub resume_batch: u64,
    /// Batches that had been sent and run again.
    pub rerun_batches: u64,
    /// Of the re-run batches' source tasks, how many handed on a survivor's kept output
    /// instead of running again.
    #[serde(default)]
    pub reused_map_tasks: u64,
    /// `(partition, from, to)`.
    pub moves: Vec<(u32, WorkerId, WorkerId)>,
    /// The workers the job went on with.
    pub workers: Vec<WorkerId>,
    /// Driver restarts before this recovery: 0 under the driver that started the job, `n`
    /// under the one that came back after the `n`-th restart (`JobSummary::restarts`).
    #[serde(default)]
    pub driver_restarts: u32,
}

/// One group as the driver saw it: its size and what coordinating it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub group: u64,
    pub first_batch: u64,
    pub size: u32,
    pub sent_at_ms: i64,
    pub completed_at_ms: i64,
    /// The driver deciding and sending the group.
    pub schedule_us: i64,
    /// Workers decoding and registering it, summed.
    pub register_us: i64,
    /// The driver decoding and handling its status messages.
    #[serde(default)]
    pub status_us: i64,
    /// Source partitions idle for want of the group's tasks, summed.
    pub coordination_wait_us: i64,
    /// Monotask run time of the group's tasks, summed: the work coordination serves.
    pub execute_us: i64,
    /// Coordination ÷ (coordination + execution) over this group.
    pub overhead: f64,
    /// The exponential average the size controller acted on, when the size is automatic.
    pub overhead_average: Option<f64>,
}

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
    /// For every entry: the reduce task it feeds, the map partition it comes from and, for
    /// a non-empty block, where to pull it.
    pub fn inputs(&self) -> impl Iterator<Item = (TaskId, u32, Option<BlockLocation>)> + '_ {
        self.entries.iter().map(move |entry| {
            let location = (entry.meta.rows > 0).then(|| BlockLocation {
                block: BlockId::of(entry.map_task, entry.meta.reduce_partition),
                worker: self.holder,
                address: self.holder_address.clone(),
                rows: entry.meta.rows,
                bytes: entry.meta.bytes,
            });
            (entry.reduce_task(), entry.map_task.partition, location)
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
