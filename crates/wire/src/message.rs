//! The control messages of sleet, grouped by connection: driver↔worker, client↔driver,
//! worker↔worker (shuffle fetch). Tasks name a registered stage by id; no plan is re-sent.

use serde::{Deserialize, Serialize};
use sleet_clarity::MonotaskRecord;
use sleet_plan::{JobFile, StageId, StagePlan};

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
    /// A source task reading the range the driver chose.
    SourceRange { start_ms: i64, end_ms: i64 },
    /// A reduce task: every block it reads, with where each lives.
    Shuffle { blocks: Vec<BlockLocation> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskDescriptor {
    pub task: TaskId,
    pub input: TaskInput,
}

/// Sent to every worker once per job: the stage plans that tasks will name by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRegistration {
    pub job: JobId,
    pub name: String,
    pub stages: Vec<StagePlan>,
    pub batch_interval_ms: u64,
    /// Start of batch 0 (ms since the epoch); batch `b` covers `[start + b*T, start + (b+1)*T)`.
    pub start_ms: i64,
    pub dead_letter_dir: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverToWorker {
    Welcome {
        worker: WorkerId,
    },
    RegisterJob(JobRegistration),
    LaunchTask(TaskDescriptor),
    /// Flush sinks, drop the job's state and blocks, then answer `JobEnded`.
    EndJob {
        job: JobId,
    },
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerToDriver {
    Register { name: String, shuffle_address: String, cores: u32, pid: u32 },
    TaskFinished(TaskReport),
    JobEnded { job: JobId },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    pub task: TaskId,
    pub worker: WorkerId,
    pub outcome: TaskOutcome,
    pub monotasks: Vec<MonotaskRecord>,
}

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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    /// The source range actually read (the batch log), for source tasks.
    pub source_range: Option<(i64, i64)>,
    pub records_in: u64,
    pub dead_letters: u64,
    pub rows_out: u64,
    pub blocks: Vec<BlockMeta>,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    /// Latency (last update − window end) of each (window, key) this task closed.
    pub window_latencies_ms: Vec<i64>,
    pub sink_rows: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientRequest {
    Submit(Box<JobFile>),
    Stop {
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
}

/// One batch as the driver saw it; times in ms since the epoch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub batch: u64,
    pub scheduled_end_ms: i64,
    pub launched_at_ms: i64,
    pub finished_at_ms: i64,
    pub events_in: u64,
    pub dead_letters: u64,
    pub map_stage_ms: f64,
    pub reduce_stage_ms: f64,
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
    pub events_in: u64,
    pub dead_letters: u64,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    pub sink_rows: u64,
    pub window_latencies_ms: Vec<i64>,
    /// Busy and queued time per monotask kind and resource, over the whole job.
    pub monotask_summary: std::collections::BTreeMap<String, sleet_clarity::ResourceSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchRequest {
    pub blocks: Vec<BlockId>,
}

/// Header of each data frame answering a `FetchRequest`; the body is Arrow IPC stream bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchedBlock {
    Found { block: BlockId, rows: u64 },
    Missing { block: BlockId },
}
