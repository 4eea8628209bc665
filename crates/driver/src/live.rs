//! What the driver shows of itself while it serves: its workers, the running job and the jobs
//! that ended, as the coordinator and the schedulers publish them, for the HTTP API, the
//! dashboard and the metrics (`sleet-console`).
//!
//! A writer holds the lock for a copy and a reader for a clone, so the coordinator never waits
//! on a reader's encoding or network. The samples of the recent batches, which the schedulers
//! gather each second for the progress's bottleneck anyway, are handed over while someone
//! looks (`looked_at`); the reader models them when and as often as it needs, on its side.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use sleet_clarity::RunSamples;
use sleet_plan::JobFile;
use sleet_wire::{
    BatchRecord, GroupRecord, JobId, JobProgress, RebalanceRecord, RecoveryRecord, RestartRecord, WorkerId,
};

use crate::liveness::Liveness;
use crate::membership::WorkerHandle;

/// Jobs that ended, kept for the API (the most recent ones).
pub const ENDED_JOBS_KEPT: usize = 32;
/// Joins and leaves kept for the API (the most recent ones).
pub const MEMBERSHIP_EVENTS_KEPT: usize = 100;
/// Batch and group records kept per job for the API and the dashboard's history.
pub const RECENT_RECORDS_MAX: usize = 600;
/// After someone asked for the model, how long the schedulers keep computing it each second:
/// longer than the dashboard's period, so a page that asks once a second always finds it.
const LOOKING_SPAN_MS: i64 = 5_000;
/// While a job runs, followers (`follow`) are told of its progress at most this often: each
/// wake-up of the dashboard's feed costs the driver's process more than the update it sends,
/// and a plot a person watches loses nothing at 2 s. A start, an end, a join and a leave are
/// told at once.
pub const FEED_PERIOD_MS: i64 = 2_000;
/// Progress is published about once a second, never exactly: a period this much short of
/// `FEED_PERIOD_MS` still counts as one, so the feed keeps to every other publication.
const FEED_SLACK_MS: i64 = 200;

#[derive(Debug, Clone, Serialize)]
pub struct DriverFacts {
    /// Where workers and clients connect.
    pub address: String,
    /// Where the API is served, once it is.
    pub http: Option<String>,
    pub pid: u32,
    pub started_ms: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkerView {
    pub id: WorkerId,
    pub name: String,
    pub pid: u32,
    pub cores: u32,
    pub shuffle_address: String,
    pub joined_ms: i64,
    /// Since the driver last heard its heartbeat; `None` once it is no longer watched.
    pub heartbeat_age_ms: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterView {
    pub api: &'static str,
    pub driver: DriverFacts,
    pub workers: Vec<WorkerView>,
    pub running_job: Option<JobId>,
    /// Workers joining and leaving, the most recent last.
    pub membership: Vec<MembershipEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MembershipEvent {
    pub at_ms: i64,
    pub worker: WorkerId,
    pub name: String,
    /// `joined` or `left` (lost, fenced, or let go).
    pub event: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Running,
    Finished,
    Failed,
    Stopped,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobBrief {
    pub id: JobId,
    pub name: String,
    pub state: JobState,
    pub scheduler: String,
    pub batch_interval_ms: u64,
    pub submitted_ms: i64,
    pub start_ms: i64,
    pub ended_ms: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckpointFigures {
    pub taken: u64,
    pub last_batch: Option<u64>,
    pub last_at_ms: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    #[serde(flatten)]
    pub brief: JobBrief,
    /// Why a failed job failed.
    pub reason: Option<String>,
    pub workers: Vec<WorkerId>,
    pub progress: Option<JobProgress>,
    pub checkpoints: CheckpointFigures,
    pub recoveries: Vec<RecoveryRecord>,
    pub rebalances: Vec<RebalanceRecord>,
    pub restarts: Vec<RestartRecord>,
    /// What the job is; left out where only its figures are wanted (`LiveView::job_figures`).
    #[serde(flatten)]
    pub definition: Option<Arc<JobDefinition>>,
}

/// What a job is, as submitted: it never changes while the job runs.
#[derive(Debug, Clone, Serialize)]
pub struct JobDefinition {
    /// The SQL text the job was compiled from, if it was.
    pub query: Option<String>,
    pub job_file: JobFile,
}

/// A job the coordinator starts.
pub struct JobStart {
    pub id: JobId,
    pub job_file: JobFile,
    pub workers: Vec<WorkerId>,
    pub submitted_ms: i64,
    pub start_ms: i64,
}

/// What a scheduler publishes about once a second.
#[derive(Default)]
pub struct JobUpdate {
    pub progress: JobProgress,
    /// Batches and groups completed since the previous update.
    pub batches: Vec<BatchRecord>,
    pub groups: Vec<GroupRecord>,
    pub workers: Vec<WorkerId>,
    pub checkpoints: CheckpointFigures,
    pub recoveries: Vec<RecoveryRecord>,
    pub rebalances: Vec<RebalanceRecord>,
    pub restarts: Vec<RestartRecord>,
    /// The samples of the recent batches, while someone looks.
    pub recent: Option<RunSamples>,
}

/// One job as the board keeps it.
struct LiveJob {
    view: JobView,
    batches: VecDeque<BatchRecord>,
    groups: VecDeque<GroupRecord>,
    recent: Option<Arc<RunSamples>>,
    /// Updates published so far: a reader that polls tells a new one from the last it saw.
    updates: u64,
    /// Someone asked it to stop: its end is a stop, not a finish.
    stop_requested: bool,
}

struct Board {
    driver: DriverFacts,
    workers: BTreeMap<WorkerId, WorkerView>,
    /// Oldest first; the running job, if any, last.
    jobs: VecDeque<LiveJob>,
    running: Option<JobId>,
    membership: VecDeque<MembershipEvent>,
}

impl Board {
    fn job_mut(&mut self, id: JobId) -> Option<&mut LiveJob> {
        self.jobs.iter_mut().rev().find(|job| job.view.brief.id == id)
    }

    fn job(&self, id: JobId) -> Option<&LiveJob> {
        self.jobs.iter().rev().find(|job| job.view.brief.id == id)
    }
}

struct Shared {
    board: Mutex<Board>,
    liveness: Arc<Liveness>,
    looked_at_ms: AtomicI64,
    /// Bumped whenever followers should look again (`tell_followers`).
    feed: tokio::sync::watch::Sender<u64>,
    fed_at_ms: AtomicI64,
}

/// The driver's live state as its observers read it; cheap to clone.
#[derive(Clone)]
pub struct LiveView {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveView")
    }
}

impl LiveView {
    pub fn new(driver: DriverFacts, liveness: Arc<Liveness>) -> Self {
        let board = Board {
            driver,
            workers: BTreeMap::new(),
            jobs: VecDeque::new(),
            running: None,
            membership: VecDeque::new(),
        };
        LiveView {
            shared: Arc::new(Shared {
                board: Mutex::new(board),
                liveness,
                looked_at_ms: AtomicI64::new(i64::MIN),
                feed: tokio::sync::watch::Sender::new(0),
                fed_at_ms: AtomicI64::new(i64::MIN),
            }),
        }
    }

    /// Tells followers there is something new: at once when `now`, else only when
    /// `FEED_PERIOD_MS` has passed since they were last told.
    fn tell_followers(&self, now: bool) {
        let at_ms = sleet_wire::clock::now_ms();
        let fed_at_ms = self.shared.fed_at_ms.load(Ordering::Relaxed);
        if !now && at_ms.saturating_sub(fed_at_ms) < FEED_PERIOD_MS - FEED_SLACK_MS {
            return;
        }
        self.shared.fed_at_ms.store(at_ms, Ordering::Relaxed);
        self.shared.feed.send_modify(|version| *version = version.wrapping_add(1));
    }

    /// A receiver that changes whenever followers should look again: at each start, end, join
    /// and leave, and every `FEED_PERIOD_MS` while a job publishes progress.
    pub fn follow(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.feed.subscribe()
    }

    fn board(&self) -> MutexGuard<'_, Board> {
        // A panicked writer leaves figures at worst a second stale: still worth showing.
        self.shared.board.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    // ---- written by the driver ----

    pub fn served_at(&self, http: String) {
        self.board().driver.http = Some(http);
    }

    pub fn worker_joined(&self, handle: &WorkerHandle, now_ms: i64) {
        let worker = WorkerView {
            id: handle.id,
            name: handle.name.clone(),
            pid: handle.pid,
            cores: handle.cores,
            shuffle_address: handle.shuffle_address.clone(),
            joined_ms: now_ms,
            heartbeat_age_ms: None,
        };
        let mut board = self.board();
        board.workers.insert(handle.id, worker);
        let joined = MembershipEvent { at_ms: now_ms, worker: handle.id, name: handle.name.clone(), event: "joined" };
        push_recent(&mut board.membership, [joined], MEMBERSHIP_EVENTS_KEPT);
        drop(board);
        self.tell_followers(true);
    }

    pub fn worker_left(&self, worker: WorkerId, now_ms: i64) {
        let mut board = self.board();
        if let Some(gone) = board.workers.remove(&worker) {
            let left = MembershipEvent { at_ms: now_ms, worker, name: gone.name, event: "left" };
            push_recent(&mut board.membership, [left], MEMBERSHIP_EVENTS_KEPT);
        }
        drop(board);
        self.tell_followers(true);
    }

    pub fn job_started(&self, start: JobStart, scheduler: String) {
        let JobStart { id, job_file, workers, submitted_ms, start_ms } = start;
        let view = JobView {
            brief: JobBrief {
                id,
                name: job_file.plan.name.clone(),
                state: JobState::Running,
                scheduler,
                batch_interval_ms: job_file.settings.batch_interval_ms,
                submitted_ms,
                start_ms,
                ended_ms: None,
            },
            reason: None,
            workers,
            definition: Some(Arc::new(JobDefinition { query: job_file.query.clone(), job_file })),
            progress: None,
            checkpoints: CheckpointFigures::default(),
            recoveries: Vec::new(),
            rebalances: Vec::new(),
            restarts: Vec::new(),
        };
        let job = LiveJob {
            view,
            batches: VecDeque::new(),
            groups: VecDeque::new(),
            recent: None,
            updates: 0,
            stop_requested: false,
        };
        let mut board = self.board();
        board.jobs.retain(|kept| kept.view.brief.id != id);
        board.jobs.push_back(job);
        while board.jobs.len() > ENDED_JOBS_KEPT + 1 {
            board.jobs.pop_front();
        }
        board.running = Some(id);
        drop(board);
        self.tell_followers(true);
    }

    pub fn job_updated(&self, id: JobId, update: JobUpdate) {
        let recent = update.recent.map(Arc::new);
        let mut board = self.board();
        let Some(job) = board.job_mut(id) else { return };
        let view = &mut job.view;
        view.progress = Some(update.progress);
        view.workers = update.workers;
        view.checkpoints = update.checkpoints;
        view.recoveries = update.recoveries;
        view.rebalances = update.rebalances;
        view.restarts = update.restarts;
        push_recent(&mut job.batches, update.batches.into_iter().map(without_source_ranges), RECENT_RECORDS_MAX);
        push_recent(&mut job.groups, update.groups, RECENT_RECORDS_MAX);
        if recent.is_some() {
            job.recent = recent;
        }
        job.updates += 1;
        drop(board);
        self.tell_followers(false);
    }

    /// A client, the API or a shutdown asked the job to stop.
    pub fn stop_requested(&self, id: JobId) {
        if let Some(job) = self.board().job_mut(id) {
            job.stop_requested = true;
        }
    }

    /// The job ended: `state` (a finish after a stop request is a stop) and, for a failure,
    /// its `reason`. A final update (with the summary's totals) should come first.
    pub fn job_ended(&self, id: JobId, state: JobState, reason: Option<String>, now_ms: i64) {
        let mut board = self.board();
        if board.running == Some(id) {
            board.running = None;
        }
        let Some(job) = board.job_mut(id) else { return };
        job.view.brief.state = match state {
            JobState::Finished if job.stop_requested => JobState::Stopped,
            state => state,
        };
        job.view.brief.ended_ms = Some(now_ms);
        job.view.reason = reason;
        job.updates += 1;
        drop(board);
        self.tell_followers(true);
    }

    /// Whether anyone asked for the model lately: the schedulers hand over samples only then.
    pub fn looked_at(&self, now_ms: i64) -> bool {
        now_ms.saturating_sub(self.shared.looked_at_ms.load(Ordering::Relaxed)) <= LOOKING_SPAN_MS
    }

    // ---- read by observers ----

    /// Someone reads the model: keep the samples coming for a while.
    pub fn looking(&self, now_ms: i64) {
        self.shared.looked_at_ms.store(now_ms, Ordering::Relaxed);
    }

    pub fn cluster(&self) -> ClusterView {
        let ages = self.shared.liveness.heartbeat_ages_ms();
        let board = self.board();
        let workers = board
            .workers
            .values()
            .map(|worker| WorkerView { heartbeat_age_ms: ages.get(&worker.id).copied(), ..worker.clone() })
            .collect();
        ClusterView {
            api: "v1",
            driver: board.driver.clone(),
            workers,
            running_job: board.running,
            membership: board.membership.iter().cloned().collect(),
        }
    }

    pub fn running_job(&self) -> Option<JobId> {
        self.board().running
    }

    /// The running job, or the one that ended last.
    pub fn current_job(&self) -> Option<JobId> {
        let board = self.board();
        board.running.or_else(|| board.jobs.back().map(|job| job.view.brief.id))
    }

    /// Newest first.
    pub fn jobs(&self) -> Vec<JobBrief> {
        self.board().jobs.iter().rev().map(|job| job.view.brief.clone()).collect()
    }

    pub fn job(&self, id: JobId) -> Option<JobView> {
        self.board().job(id).map(|job| job.view.clone())
    }

    /// The job without its definition: what changes from one second to the next.
    pub fn job_figures(&self, id: JobId) -> Option<JobView> {
        Some(JobView { definition: None, ..self.board().job(id)?.view.clone() })
    }

    /// How many updates the job has had: changes whenever anything about it does.
    pub fn job_updates(&self, id: JobId) -> Option<u64> {
        self.board().job(id).map(|job| job.updates)
    }

    /// The job's recent batches after `after` (all kept when `None`), oldest first.
    pub fn batches(&self, id: JobId, after: Option<u64>) -> Option<Vec<BatchRecord>> {
        let mut batches = Vec::new();
        self.visit_batches(id, after, |batch| batches.push(batch.clone()))?;
        Some(batches)
    }

    /// Shows `visit` the job's recent batches after `after`, oldest first, without copying
    /// them (`None` for an unknown job). The writers wait meanwhile: keep `visit` short.
    pub fn visit_batches(&self, id: JobId, after: Option<u64>, visit: impl FnMut(&BatchRecord)) -> Option<()> {
        newer_than(&self.board().job(id)?.batches, after, |batch| batch.batch).for_each(visit);
        Some(())
    }

    /// The job's recent groups after `after` (all kept when `None`), oldest first.
    pub fn groups(&self, id: JobId, after: Option<u64>) -> Option<Vec<GroupRecord>> {
        let mut groups = Vec::new();
        self.visit_groups(id, after, |group| groups.push(group.clone()))?;
        Some(groups)
    }

    /// As `visit_batches`, for the job's recent groups.
    pub fn visit_groups(&self, id: JobId, after: Option<u64>, visit: impl FnMut(&GroupRecord)) -> Option<()> {
        newer_than(&self.board().job(id)?.groups, after, |group| group.group).for_each(visit);
        Some(())
    }

    /// The samples of the job's recent batches, as last handed over (`None` for an unknown
    /// job; `Some(None)` before anyone looked or before its first batch).
    pub fn recent_samples(&self, id: JobId) -> Option<Option<Arc<RunSamples>>> {
        self.board().job(id).map(|job| job.recent.clone())
    }
}

/// The API lists batches, not what they read: a job of many partitions would make every
/// answer mostly source ranges. (The schedulers' updates come without them already,
/// `JobStats::live_tick`, so this only guards the view.)
fn without_source_ranges(mut batch: BatchRecord) -> BatchRecord {
    batch.source_ranges = Vec::new();
    batch
}

/// The records of `kept` numbered above `after` (all when `None`), oldest first.
fn newer_than<T>(kept: &VecDeque<T>, after: Option<u64>, number: impl Fn(&T) -> u64) -> impl Iterator<Item = &T> {
    kept.iter().filter(move |record| after.is_none_or(|after| number(record) > after))
}

fn push_recent<T>(kept: &mut VecDeque<T>, new: impl IntoIterator<Item = T>, max: usize) {
    for item in new {
        if kept.len() == max {
            kept.pop_front();
        }
        kept.push_back(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> LiveView {
        let driver = DriverFacts { address: "127.0.0.1:7077".into(), http: None, pid: 1, started_ms: 0 };
        LiveView::new(driver, Arc::new(Liveness::default()))
    }

    fn job_file(name: &str) -> JobFile {
        JobFile {
            plan: sleet_plan::Plan { name: name.into(), nodes: Vec::new() },
            settings: sleet_plan::JobSettings::default(),
            query: Some("SELECT 1".into()),
        }
    }

    fn start(live: &LiveView, id: JobId) {
        let start = JobStart { id, job_file: job_file("j"), workers: vec![1], submitted_ms: 10, start_ms: 20 };
        live.job_started(start, "group".into());
    }

    fn batch(batch: u64) -> BatchRecord {
        BatchRecord {
            batch,
            source_ranges: vec![(0, sleet_plan::SourceRange::Offsets { start: 0, end: 5 })],
            ..BatchRecord::default()
        }
    }

    #[test]
    fn a_job_runs_publishes_and_ends() {
        let live = view();
        assert_eq!((live.current_job(), live.running_job()), (None, None));
        start(&live, 3);
        assert_eq!(live.running_job(), Some(3));
        let job = live.job(3).expect("started");
        let query = job.definition.as_ref().and_then(|definition| definition.query.as_deref());
        assert_eq!((job.brief.state, query, job.progress), (JobState::Running, Some("SELECT 1"), None));
        assert!(live.job_figures(3).is_some_and(|figures| figures.definition.is_none()));

        let progress = JobProgress { job: 3, batches_done: 2, ..JobProgress::default() };
        live.job_updated(3, JobUpdate { progress, batches: vec![batch(0), batch(1)], ..JobUpdate::default() });
        assert_eq!(live.job(3).and_then(|job| job.progress).map(|p| p.batches_done), Some(2));
        let batches = live.batches(3, None).expect("known");
        assert_eq!(batches.iter().map(|b| b.batch).collect::<Vec<_>>(), vec![0, 1]);
        assert!(batches.iter().all(|b| b.source_ranges.is_empty()), "ranges are left out");
        assert_eq!(live.batches(3, Some(0)).expect("known").len(), 1);
        assert_eq!(live.job_updates(3), Some(1));

        live.job_ended(3, JobState::Failed, Some("no worker left".into()), 99);
        start(&live, 4);
        live.stop_requested(4);
        live.job_ended(4, JobState::Finished, None, 100);
        assert_eq!(live.job(4).map(|job| job.brief.state), Some(JobState::Stopped), "a finish after a stop");
        let job = live.job(3).expect("kept");
        assert_eq!(
            (job.brief.state, job.brief.ended_ms, job.reason.as_deref()),
            (JobState::Failed, Some(99), Some("no worker left"))
        );
        assert_eq!((live.running_job(), live.current_job()), (None, Some(4)));
        assert!(live.job(5).is_none() && live.batches(5, None).is_none());
    }

    #[test]
    fn followers_hear_of_starts_and_ends_at_once_and_of_progress_every_feed_period() {
        let live = view();
        let follower = live.follow();
        start(&live, 1);
        assert!(follower.has_changed().expect("the view lives"), "a start is told at once");
        let mut follower = live.follow();
        follower.mark_unchanged();
        live.job_updated(1, JobUpdate::default());
        assert!(!follower.has_changed().expect("live"), "progress within the period waits");
        // As if the last telling were a period ago.
        live.shared.fed_at_ms.store(sleet_wire::clock::now_ms() - FEED_PERIOD_MS, Ordering::Relaxed);
        live.job_updated(1, JobUpdate::default());
        assert!(follower.has_changed().expect("live"), "progress a period later is told");
        follower.mark_unchanged();
        live.job_ended(1, JobState::Finished, None, 5);
        assert!(follower.has_changed().expect("live"), "an end is told at once");
    }

    #[test]
    fn history_is_bounded() {
        let live = view();
        for id in 1..=(ENDED_JOBS_KEPT as u64 + 5) {
            start(&live, id);
            live.job_ended(id, JobState::Finished, None, 0);
        }
        let jobs = live.jobs();
        assert_eq!(jobs.len(), ENDED_JOBS_KEPT + 1);
        assert_eq!(jobs.first().map(|job| job.id), Some(ENDED_JOBS_KEPT as u64 + 5), "newest first");

        start(&live, 100);
        for round in 0..3u64 {
            let batches = (0..RECENT_RECORDS_MAX as u64).map(|b| batch(round * 1000 + b)).collect();
            live.job_updated(100, JobUpdate { batches, ..JobUpdate::default() });
        }
        let kept = live.batches(100, None).expect("known");
        assert_eq!(kept.len(), RECENT_RECORDS_MAX);
        assert_eq!(kept.first().map(|b| b.batch), Some(2000), "the newest are kept");
    }

    #[test]
    fn workers_joining_and_leaving_are_shown_and_kept_in_order() {
        let live = view();
        let (outbox, _) = tokio::sync::mpsc::channel(1);
        let handle = |id: WorkerId| WorkerHandle {
            id,
            name: format!("w{id}"),
            shuffle_address: "127.0.0.1:1".into(),
            cores: 2,
            pid: 9,
            outbox: outbox.clone(),
        };
        live.worker_joined(&handle(1), 10);
        live.worker_joined(&handle(2), 11);
        live.worker_left(1, 12);
        live.worker_left(7, 13);
        let cluster = live.cluster();
        assert_eq!(cluster.workers.iter().map(|w| (w.id, w.cores, w.joined_ms)).collect::<Vec<_>>(), vec![(2, 2, 11)]);
        let events: Vec<(i64, WorkerId, &str)> =
            cluster.membership.iter().map(|event| (event.at_ms, event.worker, event.event)).collect();
        assert_eq!(
            events,
            vec![(10, 1, "joined"), (11, 2, "joined"), (12, 1, "left")],
            "an unknown worker leaves no trace"
        );
        for id in 0..(MEMBERSHIP_EVENTS_KEPT as u32 + 5) {
            live.worker_joined(&handle(100 + id), 20);
        }
        assert_eq!(live.cluster().membership.len(), MEMBERSHIP_EVENTS_KEPT);
    }

    #[test]
    fn the_model_is_wanted_only_for_a_while_after_someone_looked() {
        let live = view();
        assert!(!live.looked_at(1_000_000));
        live.looking(1_000_000);
        assert!(live.looked_at(1_000_000 + LOOKING_SPAN_MS));
        assert!(!live.looked_at(1_000_000 + LOOKING_SPAN_MS + 1));
    }
}
