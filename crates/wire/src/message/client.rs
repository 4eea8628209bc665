//! Client ↔ driver, on a client connection (JSON): submit, stop, attach, shut down; and
//! back the job's acceptance, its progress about once a second, and its summary with the
//! records of its batches, groups, recoveries, rebalances and restarts.

use serde::{Deserialize, Serialize};
use sleet_plan::{JobFile, SourceRange};

use super::{JobId, WorkerId};

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
    Accepted {
        job: JobId,
        workers: u32,
        start_ms: i64,
    },
    Rejected {
        reason: String,
    },
    /// Boxed as the summary is: a stateful job's figures make it several times the size of
    /// the other replies.
    Progress(Box<JobProgress>),
    Finished(Box<JobSummary>),
    Failed {
        job: JobId,
        reason: String,
    },
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
    /// Backpressure: the records each source partition may read per batch now; `None` when
    /// the job keeps up (or backpressure is off).
    #[serde(default)]
    pub read_bound: Option<u32>,
    /// What limits the job now, by the model of its recent batches: `cpu`, `net`, `disk`,
    /// `coordination` or `source`; `None` until a batch's samples are in.
    #[serde(default)]
    pub bottleneck: Option<String>,
    /// Rows behind a window's watermark or a keyed operator's lateness horizon, so far.
    #[serde(default)]
    pub late_rows_dropped: u64,
    /// For a job with stateful operators: their counts so far and their size after the
    /// newest batch; `None` for a stateless job.
    #[serde(default)]
    pub state: Option<super::StateFigures>,
    /// Every keyed operator that has refused rows of new keys at its `max_keys`, named as
    /// the plan has it, in the order they first did.
    #[serde(default)]
    pub state_full: Vec<String>,
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
    /// Backpressure's bound on what each source partition reads, as it stood when the batch
    /// completed (the bound the batch read under, but for one that changed while it ran);
    /// `None`: none.
    #[serde(default)]
    pub read_bound: Option<u32>,
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
    /// As in `JobProgress`: a stateful job's counts and its size after its newest batch.
    #[serde(default)]
    pub state: Option<super::StateFigures>,
    #[serde(default)]
    pub state_full: Vec<String>,
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
