//! The coordinator: the one task that owns the driver's state (membership, the running job)
//! and reacts to `DriverEvent`s. Jobs run one at a time; a submit while one runs is refused.

use std::time::Duration;

use std::path::PathBuf;
use std::sync::Arc;

use sleet_durable::checkpoint_store::DirectoryStore;
use sleet_plan::{plan_stages, JobFile, PhysicalPlan, SchedulerKind};
use sleet_wire::clock::{now_ms, BatchClock};
use sleet_wire::{
    DriverToClient, DriverToWorker, JobId, JobRegistration, JobSummary, RestartRecord, ReusedOutputs, WorkerId,
    WorkerToDriver,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::attempt_end::{
    classify_end, client_outcome, plan_next, AttemptEnd, EndedAttempt, NextAttempt, PlacementChange,
};
use crate::checkpoints::{CheckpointRecord, Checkpoints};
use crate::commits::{newest_manifest, output_dirs, read_manifests, OutputCommits};
use crate::connector_check::ConnectorCheck;
use crate::error::DriverError;
use crate::event::{ClientId, DriverEvent};
use crate::job_link::{Attempt, JobEvent, JobLink, JobSession, RunningJob};
use crate::job_state::{plan_resume, read_checkpoint, ResumePlan, SavedFigures, SavedJob, StateDir};
use crate::live::{DriverFacts, JobStart, JobState, JobUpdate, LiveView};
use crate::liveness::{watch_heartbeats, HeartbeatSettings, Liveness};
use crate::membership::{EncodedMessage, Membership};
use crate::placement::Placement;
use crate::progress::JobStats;
use crate::read_bound::ReadBound;
use crate::recovery::{resume_source, skip_reused, with_replay, PlannedReuse};
use crate::recovery_state::RecoveryState;
use crate::server::accept_loop;
use crate::watchers::Watchers;

#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub listen: String,
    /// A submitted job starts only once this many workers have registered.
    pub expect_workers: u32,
    /// How long a submitted job waits for `expect_workers` before it fails.
    pub worker_wait_s: u64,
    /// A stage of one batch that takes longer than this fails the job instead of hanging it.
    pub stage_timeout_s: u64,
    pub heartbeats: HeartbeatSettings,
    /// Where checkpoints go: a directory every worker can reach (on one machine, any).
    pub checkpoint_dir: PathBuf,
    /// Where the running job is kept for a restarted driver to resume
    /// (`job_state`); `None`: `driver-state` under the checkpoint directory.
    pub state_dir: Option<PathBuf>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            listen: "127.0.0.1:7077".into(),
            expect_workers: 1,
            worker_wait_s: 30,
            stage_timeout_s: 60,
            heartbeats: HeartbeatSettings::default(),
            checkpoint_dir: PathBuf::from("sleet-checkpoints"),
            state_dir: None,
        }
    }
}

/// Bound on events queued towards the coordinator.
const EVENT_QUEUE_LEN_MAX: usize = 65_536;
/// How long the driver waits for workers to acknowledge the end of a job.
const END_JOB_WAIT: Duration = Duration::from_secs(10);
/// How far ahead of submission batch 0 starts by default: time for every worker to take in
/// the job's registration before its first batch closes.
const REGISTRATION_LEAD_MS: i64 = 300;

/// What the driver hands whoever observes and steers it from outside the wire protocol (the
/// HTTP API): its live state, and the queue its clients' requests go through.
#[derive(Clone)]
pub struct DriverHandles {
    pub live: LiveView,
    pub events: mpsc::Sender<DriverEvent>,
}

/// Binds, prints `sleet driver listening on ADDR` on stdout, and serves until `Shutdown`.
/// `connectors` checks each submitted job's source and sink before it is planned.
pub async fn run(config: DriverConfig, connectors: Arc<dyn ConnectorCheck>) -> Result<(), DriverError> {
    run_observed(config, connectors, |_| {}).await
}

/// `run`, and `observe` is given the driver's handles once it listens, before it serves.
pub async fn run_observed(
    config: DriverConfig,
    connectors: Arc<dyn ConnectorCheck>,
    observe: impl FnOnce(DriverHandles),
) -> Result<(), DriverError> {
    let listener = TcpListener::bind(&config.listen).await?;
    let address = listener.local_addr()?;
    // Workers resolve the path themselves, from wherever they were started.
    std::fs::create_dir_all(&config.checkpoint_dir)?;
    let config = DriverConfig { checkpoint_dir: std::fs::canonicalize(&config.checkpoint_dir)?, ..config };
    let _dir_lock = crate::dir_lock::lock_checkpoint_dir(&config.checkpoint_dir, crate::dir_lock::LOCK_WAIT)?;
    let state = StateDir::new(config.state_dir.clone().unwrap_or_else(|| config.checkpoint_dir.join("driver-state")));
    // Before serving anyone: a state file the driver cannot resume from stops it here, by
    // name, instead of the job being forgotten.
    let resume = match state.load()? {
        Some(saved) => Some(prepare_resume(&config, &state, saved)?),
        None => None,
    };
    let next_job = resume.as_ref().map_or(1, |resume| resume.plan.attempt_job + 1);
    println!("sleet driver listening on {address}");
    use std::io::Write;
    std::io::stdout().flush()?;
    let (events_tx, events) = mpsc::channel(EVENT_QUEUE_LEN_MAX);
    let liveness = Arc::new(Liveness::default());
    let driver =
        DriverFacts { address: address.to_string(), http: None, pid: std::process::id(), started_ms: now_ms() };
    let live = LiveView::new(driver, Arc::clone(&liveness));
    observe(DriverHandles { live: live.clone(), events: events_tx.clone() });
    tokio::spawn(watch_heartbeats(Arc::clone(&liveness), config.heartbeats, events_tx.clone()));
    // Microseconds since the epoch: a restarted driver's is larger than its predecessor's.
    let incarnation = sleet_wire::clock::now_us() as u64;
    tokio::spawn(accept_loop(listener, events_tx, liveness, config.heartbeats, incarnation));
    let coordinator = Coordinator {
        config,
        connectors,
        membership: Membership::observed_by(live.clone()),
        live,
        events,
        next_job,
        shutting_down: false,
        state,
        watching: None,
        last_outcome: None,
    };
    // On a runtime worker rather than the thread that blocks on the driver's future: a status
    // frame a connection task has read then wakes the coordinator on the same thread (the
    // runtime runs a task it just woke next, in place), where waking the blocking thread
    // would cost a cross-thread wake-up per message.
    // Its panic stays the driver's panic, as it was when the coordinator ran in place.
    if let Err(error) = tokio::spawn(coordinator.serve(resume)).await {
        std::panic::resume_unwind(error.into_panic());
    }
    Ok(())
}

/// A job the state directory says was running, and how it goes on.
struct Resume {
    saved: SavedJob,
    physical: PhysicalPlan,
    plan: ResumePlan,
    figures: Option<SavedFigures>,
    /// When this driver read the state directory.
    read_at_ms: i64,
}

/// What `run_attempts` goes on from when it takes over a job from a driver before this one.
struct TakeOver {
    plan: ResumePlan,
    figures: Option<SavedFigures>,
    restart: RestartRecord,
}

/// Reads what the previous driver left (the saved job, its latest checkpoint, the newest
/// commit manifest) and decides how the job goes on.
fn prepare_resume(config: &DriverConfig, state: &StateDir, saved: SavedJob) -> Result<Resume, DriverError> {
    let in_state = |reason: String| DriverError::State { path: state.file(), reason };
    let physical = plan_stages(&saved.job_file.plan, saved.job_file.settings.combine)
        .map_err(|error| in_state(format!("the saved job does not plan: {}", sleet_wire::error_chain(&error))))?;
    let outputs = output_dirs(&physical.stages, saved.job_file.settings.dead_letter_dir.as_deref());
    let manifests = read_manifests(&outputs).map_err(|error| in_state(sleet_wire::error_chain(&error)))?;
    let checkpoint = match saved.job_file.settings.checkpoint_interval_ms {
        0 => None,
        _ => read_checkpoint(&config.checkpoint_dir, saved.job)?,
    };
    let plan = plan_resume(&saved, checkpoint, newest_manifest(manifests), !outputs.is_empty()).map_err(in_state)?;
    let figures = state.load_figures()?;
    Ok(Resume { saved, physical, plan, figures, read_at_ms: now_ms() })
}

/// An attempt about to start, and where its state and sources start: the checkpoint it
/// restores, the output already committed, the survivors' outputs it may take over (from
/// the attempt it replaces).
struct AttemptStart {
    attempt: Attempt,
    restore: Option<CheckpointRecord>,
    output_committed_through: Option<u64>,
    reuse: Option<(JobId, Vec<PlannedReuse>)>,
}

/// The one task that owns the driver's state; a running job's scheduler borrows it through
/// a `JobLink`.
struct Coordinator {
    config: DriverConfig,
    connectors: Arc<dyn ConnectorCheck>,
    membership: Membership,
    live: LiveView,
    events: mpsc::Receiver<DriverEvent>,
    next_job: JobId,
    shutting_down: bool,
    state: StateDir,
    /// The job that runs or waits for workers, and the clients following it.
    watching: Option<(JobId, Watchers)>,
    /// How the last job ended, for a client that attaches after the end.
    last_outcome: Option<(JobId, DriverToClient)>,
}

impl Coordinator {
    async fn serve(mut self, resume: Option<Resume>) {
        if let Some(resume) = resume {
            self.resume_job(resume).await;
        }
        while !self.shutting_down {
            let Some(event) = self.events.recv().await else { break };
            match event {
                DriverEvent::WorkerJoined(handle) => self.membership.join(handle),
                DriverEvent::WorkerLost { worker, reason } => {
                    self.membership.leave(worker);
                    eprintln!("sleet driver: worker {worker} left: {reason}");
                }
                DriverEvent::Submit { client, job, replies } => self.run_job(client, *job, replies).await,
                DriverEvent::FromWorker { message: WorkerToDriver::Leaving { worker }, .. } => {
                    self.release(&[worker]).await
                }
                DriverEvent::Attach { job, replies } => self.attach(job, replies).await,
                DriverEvent::FromWorker { .. } | DriverEvent::Stop { .. } | DriverEvent::ClientGone { .. } => {}
                DriverEvent::Shutdown => self.shutting_down = true,
            }
        }
        for handle in self.membership.handles() {
            let _ = handle.send(&DriverToWorker::Shutdown).await;
        }
        // Give the writer tasks a moment to put the shutdown on the wire.
        tokio::time::sleep(Duration::from_millis(200)).await;
        eprintln!("sleet driver: shut down");
    }

    async fn run_job(&mut self, client: ClientId, job_file: JobFile, replies: mpsc::Sender<DriverToClient>) {
        let submitted_ms = now_ms();
        let job_file = match check_outside_systems(job_file, Arc::clone(&self.connectors)).await {
            Ok(job_file) => job_file,
            Err(reason) => {
                eprintln!("sleet driver: refused a job: {reason}");
                let _ = replies.send(DriverToClient::Rejected { reason }).await;
                return;
            }
        };
        let physical = match plan_stages(&job_file.plan, job_file.settings.combine) {
            Ok(physical) => physical,
            Err(error) => {
                let _ = replies.send(DriverToClient::Rejected { reason: error.to_string() }).await;
                return;
            }
        };
        match self.wait_for_workers(client).await {
            Ok(WorkersWaited::Enough) => {}
            Ok(WorkersWaited::Cancelled) => {
                eprintln!("sleet driver: a submitted job was cancelled while it waited for workers");
                return;
            }
            Err(error) => {
                eprintln!("sleet driver: a submitted job did not start: {error}");
                let _ = replies.send(DriverToClient::Rejected { reason: error.to_string() }).await;
                return;
            }
        }
        let job = self.next_job;
        self.next_job += 1;
        let interval_ms = job_file.settings.batch_interval_ms.max(1) as i64;
        // By default batch 0 starts on an interval boundary a little ahead, so every worker
        // has the registration before the first batch closes.
        let clock = match job_file.settings.start_ms {
            Some(start_ms) => BatchClock::new(start_ms, interval_ms),
            None => BatchClock::aligned_after(now_ms() + REGISTRATION_LEAD_MS, interval_ms),
        };
        let workers = self.membership.ids();
        let accepted = DriverToClient::Accepted { job, workers: workers.len() as u32, start_ms: clock.start_ms };
        let _ = replies.send(accepted).await;
        let scheduler = job_file.settings.scheduler;
        let start = JobStart {
            id: job,
            job_file: job_file.clone(),
            workers: workers.clone(),
            submitted_ms,
            start_ms: clock.start_ms,
        };
        self.live.job_started(start, scheduler.to_string());
        eprintln!(
            "sleet driver: job {job} `{}` starts at {} on workers {workers:?} ({scheduler} scheduler)",
            job_file.plan.name, clock.start_ms
        );
        let context = RunningJob {
            job,
            client,
            clock,
            settings: job_file.settings.clone(),
            physical,
            stage_timeout: Duration::from_secs(self.config.stage_timeout_s),
        };
        let (watchers, replies) = Watchers::start(Some(replies));
        self.watching = Some((job, watchers));
        self.run_to_end(&context, &job_file, workers, replies, None).await;
    }

    /// Goes on with the job a driver before this one was running, once enough workers have
    /// (re)registered. Nobody follows it until a client attaches.
    async fn resume_job(&mut self, resume: Resume) {
        let Resume { saved, physical, plan, figures, read_at_ms } = resume;
        let job = saved.job;
        eprintln!(
            "sleet driver: resuming job {job} `{}` from {}: attempt {} from batch {} ({}), waiting for {} workers",
            saved.job_file.plan.name,
            self.state.file().display(),
            plan.attempt,
            plan.resume_batch,
            plan.restore
                .as_ref()
                .map_or("no checkpoint yet".to_string(), |c| format!("the checkpoint after batch {}", c.batch)),
            self.config.expect_workers
        );
        let (watchers, replies) = Watchers::start(None);
        self.watching = Some((job, watchers));
        // The job's client id: none, since no client submitted it to this driver (ids of
        // real clients start at 1, so no `ClientGone` can stop it).
        let client = 0;
        match self.wait_for_workers(client).await {
            Ok(WorkersWaited::Enough) => {}
            Ok(WorkersWaited::Cancelled) => {
                // Shutting down: the state stays, and the next driver resumes the job.
                self.watching = None;
                return;
            }
            Err(error) => {
                self.watching = None;
                self.job_ended(job, &replies, Err(error)).await;
                return;
            }
        }
        let context = RunningJob {
            job,
            client,
            clock: saved.clock,
            settings: saved.job_file.settings.clone(),
            physical,
            stage_timeout: Duration::from_secs(self.config.stage_timeout_s),
        };
        let workers = self.membership.ids();
        let start = JobStart {
            id: job,
            job_file: saved.job_file.clone(),
            workers: workers.clone(),
            submitted_ms: read_at_ms,
            start_ms: saved.clock.start_ms,
        };
        self.live.job_started(start, saved.job_file.settings.scheduler.to_string());
        let restart = RestartRecord {
            restart: 0,
            at_ms: read_at_ms,
            checkpoint_batch: plan.restore.as_ref().map(|checkpoint| checkpoint.batch),
            resume_batch: plan.resume_batch,
            attempt: plan.attempt,
            figures_restored: false,
        };
        let take_over = TakeOver { plan, figures, restart };
        self.run_to_end(&context, &saved.job_file, workers, replies, Some(take_over)).await;
    }

    async fn run_to_end(
        &mut self,
        job: &RunningJob,
        job_file: &JobFile,
        workers: Vec<WorkerId>,
        replies: mpsc::Sender<DriverToClient>,
        resume: Option<TakeOver>,
    ) {
        let result = self.run_attempts(job, job_file, workers, &replies, resume).await;
        self.watching = None;
        self.job_ended(job.job, &replies, result).await;
    }

    /// The job is over: its state is removed and its clients told.
    async fn job_ended(
        &mut self,
        job: JobId,
        replies: &mpsc::Sender<DriverToClient>,
        result: Result<JobSummary, DriverError>,
    ) {
        if let Err(error) = self.state.clear() {
            eprintln!("sleet driver: {}", sleet_wire::error_chain(&error));
        }
        let outcome = client_outcome(job, result);
        self.show_end(job, &outcome);
        match &outcome {
            DriverToClient::Finished(summary) => {
                eprintln!("sleet driver: job {job} finished after {} batches", summary.batches_total)
            }
            DriverToClient::Failed { reason, .. } => eprintln!("sleet driver: job {job} failed: {reason}"),
            _ => {}
        }
        let _ = replies.send(outcome.clone()).await;
        self.last_outcome = Some((job, outcome));
    }

    /// The live view's last word on a job: the summary's totals, and how it ended.
    fn show_end(&self, job: JobId, outcome: &DriverToClient) {
        let now = now_ms();
        match outcome {
            DriverToClient::Finished(summary) => {
                if let Some(mut view) = self.live.job_figures(job) {
                    let mut progress = view.progress.take().unwrap_or_default();
                    progress.job = job;
                    progress.batches_done = summary.batches_total;
                    progress.events_in = summary.events_in;
                    progress.dead_letters = summary.dead_letters;
                    progress.late_rows_dropped = summary.late_rows_dropped;
                    let update = JobUpdate {
                        progress,
                        workers: view.workers,
                        checkpoints: view.checkpoints,
                        recoveries: summary.recoveries.clone(),
                        rebalances: summary.rebalances.clone(),
                        restarts: summary.restarts.clone(),
                        ..JobUpdate::default()
                    };
                    self.live.job_updated(job, update);
                }
                self.live.job_ended(job, JobState::Finished, None, now);
            }
            DriverToClient::Failed { reason, .. } => {
                self.live.job_ended(job, JobState::Failed, Some(reason.clone()), now)
            }
            _ => {}
        }
    }

    /// A client asks to follow `job`: it joins the running job's watchers, or hears how the
    /// job ended, or that this driver does not know it.
    async fn attach(&mut self, job: JobId, replies: mpsc::Sender<DriverToClient>) {
        if let Some((_, watchers)) = self.watching.as_ref().filter(|(watched, _)| *watched == job) {
            watchers.add(replies);
            return;
        }
        let answer = match &self.last_outcome {
            Some((ended, outcome)) if *ended == job => outcome.clone(),
            _ => DriverToClient::Rejected {
                reason: format!(
                    "this driver knows no job {job}: it is not running, and it is not the last job to end here \
                     (a finished job's committed output is listed in its sink directory's _manifest.json)"
                ),
            },
        };
        let _ = replies.send(answer).await;
    }

    /// Runs a job's attempts: the first, and after each lost worker or handoff one that goes
    /// on from the latest checkpoint, until the job ends or no worker is left.
    async fn run_attempts(
        &mut self,
        job: &RunningJob,
        job_file: &JobFile,
        workers: Vec<WorkerId>,
        replies: &mpsc::Sender<DriverToClient>,
        resume: Option<TakeOver>,
    ) -> Result<JobSummary, DriverError> {
        let (mut session, mut start) = self.open_session(job, workers, resume)?;
        loop {
            self.start_attempt(job, job_file, &mut session, &start).await?;
            let attempt = &start.attempt;
            let mut link = self.link(job.job, job.client);
            let result = match job.settings.scheduler {
                SchedulerKind::Bsp => crate::bsp::run(&mut link, job, attempt, &mut session, replies).await,
                SchedulerKind::Group => crate::group::run(&mut link, job, attempt, &mut session, replies).await,
            };
            let lost = match classify_end(result, session.handoff_after.is_some()) {
                AttemptEnd::Over(result) => return self.finish_job(job, attempt, session, result).await,
                AttemptEnd::Lost { worker, error } => Some((worker, error)),
                AttemptEnd::Handoff => None,
            };
            start = self.next_attempt(job, attempt, &mut session, lost).await?;
        }
    }

    /// The job's session and its first attempt: attempt 0 on `workers`, or the one that
    /// takes over from a driver before this one.
    fn open_session(
        &self,
        job: &RunningJob,
        workers: Vec<WorkerId>,
        resume: Option<TakeOver>,
    ) -> Result<(JobSession, AttemptStart), DriverError> {
        let stages = &job.physical.stages;
        let stateful_partitions =
            stages.iter().filter(|stage| stage.is_stateful()).map(|stage| stage.partitions as usize).sum();
        let store = (job.settings.checkpoint_interval_ms > 0).then(|| DirectoryStore::new(&self.config.checkpoint_dir));
        let outputs = output_dirs(stages, job.settings.dead_letter_dir.as_deref());
        let mut session = JobSession {
            stats: match stateful_partitions {
                0 => JobStats::new(job.job, job.clock.start_ms, job.settings.scheduler),
                _ => JobStats::new(job.job, job.clock.start_ms, job.settings.scheduler).keeps_state(),
            },
            recovery: RecoveryState::default(),
            checkpoints: Checkpoints::new(job.job, job.settings.checkpoint_interval_ms, stateful_partitions, store),
            commits: OutputCommits::new(job.job, outputs.clone()),
            pending_checkpoints: Vec::new(),
            next_batch: 0,
            joined: Vec::new(),
            leaving: Vec::new(),
            handoff_after: None,
            untold_checkpoint: None,
            state: self.state.clone(),
            figures_saved_at_ms: i64::MIN,
            read_bound: ReadBound::for_job(&job.settings, stages),
        };
        let attempt =
            Attempt { job: job.job, number: 0, placement: Placement::for_stages(workers, stages), first_batch: 0 };
        let Some(TakeOver { plan, figures, restart }) = resume else {
            return Ok((session, AttemptStart { attempt, restore: None, output_committed_through: None, reuse: None }));
        };
        // As after a lost worker, with every worker new: the resumed attempt restores the
        // checkpoint, re-runs what came after it, and writes only past the manifest.
        session.checkpoints.adopt(plan.restore.clone(), plan.attempt_jobs);
        session.commits = OutputCommits::resumed(outputs, plan.manifest);
        let committed = session.commits.start_attempt(plan.attempt).map_err(DriverError::Commit)?;
        session.checkpoints.resume(plan.attempt_job, job.clock.end_ms(plan.resume_batch.max(1) - 1));
        session.next_batch = plan.resume_batch;
        session.resumed(figures, restart);
        let attempt =
            Attempt { job: plan.attempt_job, number: plan.attempt, first_batch: plan.resume_batch, ..attempt };
        let start = AttemptStart { attempt, restore: plan.restore, output_committed_through: committed, reuse: None };
        Ok((session, start))
    }

    /// Saves where the job stands for a restarted driver, then registers the attempt with
    /// its workers.
    async fn start_attempt(
        &mut self,
        job: &RunningJob,
        job_file: &JobFile,
        session: &mut JobSession,
        start: &AttemptStart,
    ) -> Result<(), DriverError> {
        let attempt = &start.attempt;
        // Before any worker hears of the attempt: a driver restarted from here numbers
        // its attempt past this one, so it never writes into this attempt's files.
        self.state.save(&SavedJob {
            job: job.job,
            job_file: job_file.clone(),
            clock: job.clock,
            attempt: attempt.number,
            attempt_jobs: session.checkpoints.attempts().to_vec(),
            next_job: self.next_job,
        })?;
        // With the recovery or restart that led to this attempt.
        session.save_figures(now_ms())?;
        let replay = session.recovery.replay_from(attempt.first_batch);
        if let Some(last) = replay.iter().filter_map(|(_, ends)| ends.last().map(|(batch, _)| *batch)).max() {
            eprintln!(
                "sleet driver: job {}: attempt {} re-reads batches {}..={last} of {} Kafka partitions at the offsets they first read",
                job.job,
                attempt.number,
                attempt.first_batch,
                replay.len()
            );
        }
        let reused = self.register_attempt(job, &job_file.plan.name, start, &replay).await;
        if reused > 0 {
            eprintln!(
                "sleet driver: job {}: survivors hand on {reused} source tasks' outputs instead of running them again",
                attempt.job
            );
        }
        session.stats.reused_in_last_recovery(reused);
        Ok(())
    }

    /// The job is over (finished, stopped, or failed in a way no new attempt mends): its
    /// workers flush and let go, and its output commits are sealed.
    async fn finish_job(
        &mut self,
        job: &RunningJob,
        attempt: &Attempt,
        mut session: JobSession,
        result: Result<(), DriverError>,
    ) -> Result<JobSummary, DriverError> {
        self.end_job(attempt.job, job.client, attempt.placement.workers()).await;
        let leaving = std::mem::take(&mut session.leaving);
        self.release(&leaving).await;
        session.checkpoints.discard();
        // After the workers flushed: what the last manifest admits is on disk.
        let finished = session.commits.finish().map_err(DriverError::Commit);
        session.stamp_commits();
        result.and(finished).map(|()| session.stats.summary(now_ms()))
    }

    /// Goes on after `ended` stopped short of the job's end, with a worker `lost` or at a
    /// handoff: `plan_next` decides the next attempt, and this carries it out.
    async fn next_attempt(
        &mut self,
        job: &RunningJob,
        ended: &Attempt,
        session: &mut JobSession,
        lost: Option<(WorkerId, DriverError)>,
    ) -> Result<AttemptStart, DriverError> {
        if let Some((worker, _)) = &lost {
            // A loss found by a failed send leaves the worker a member; its closed
            // connection then reports the same loss again, which must not be taken for a
            // second one (a second recovery of the new attempt). Out of the membership, it
            // is fenced as one lost by its connection is.
            self.membership.leave(*worker);
        }
        let checkpoint = session.checkpoints.latest().cloned();
        let next = plan_next(EndedAttempt {
            attempt: ended,
            lost: lost.as_ref().map(|(worker, error)| (*worker, sleet_wire::error_chain(error))),
            // Joined workers still connected take partitions now, whether or not one was lost.
            joined: session.joined.drain(..).filter(|worker| self.membership.get(*worker).is_some()).collect(),
            leaving: std::mem::take(&mut session.leaving),
            checkpoint: checkpoint.as_ref(),
            next_batch: session.next_batch,
            surviving: session.recovery.surviving(),
            next_job: self.next_job,
            decided_at_ms: now_ms(),
        });
        session.recovery.attempt_ended();
        let Some(next) = next else {
            session.checkpoints.discard();
            if let Err(commit_error) = session.commits.finish() {
                eprintln!("sleet driver: job {}: {}", job.job, sleet_wire::error_chain(&commit_error));
            }
            let (_, error) = lost.expect("only a loss leaves no worker");
            return Err(DriverError::NoWorkerLeft(Box::new(error)));
        };
        let NextAttempt { attempt, plan, record, cause, keep_map_outputs, reuse, released, still_leaving } = next;
        if !still_leaving.is_empty() {
            eprintln!(
                "sleet driver: workers {still_leaving:?} cannot all leave while the job runs; they leave when it ends"
            );
        }
        session.leaving = still_leaving;
        // Checkpoints wait for their output to be committed; the ended attempt's pending
        // ones never will be.
        session.pending_checkpoints.clear();
        session.handoff_after = None;
        let committed = session.commits.start_attempt(attempt.number).map_err(DriverError::Commit)?;
        session.stamp_commits();
        let from = checkpoint
            .as_ref()
            .map_or("the start (no checkpoint yet)".to_string(), |c| format!("the checkpoint after batch {}", c.batch));
        let moves: Vec<(u32, WorkerId)> = plan.moves.iter().map(|(partition, _, to)| (*partition, *to)).collect();
        eprintln!(
            "sleet driver: job {}: {cause}; going on with workers {:?} from {from}, moving partitions {moves:?}, re-running batches {}..{}",
            job.job,
            attempt.placement.workers(),
            plan.rerun.start,
            plan.rerun.end,
        );
        if keep_map_outputs {
            // Survivors drop the failed attempt's tasks, state and blocks, but keep the map
            // outputs the next attempt may take over; its late messages carry an id
            // nothing waits for any more.
            for survivor in ended.placement.workers() {
                if let Some(handle) = self.membership.get(*survivor) {
                    let _ = handle.send(&DriverToWorker::EndJob { job: ended.job, keep_map_outputs: true }).await;
                }
            }
        } else {
            // The attempt ended whole at its checkpoint: its workers flush and let go.
            self.end_job(ended.job, job.client, ended.placement.workers()).await;
            self.release(&released).await;
        }
        match record {
            PlacementChange::Recovered(recovery) => session.stats.recovered(recovery),
            PlacementChange::Rebalanced(rebalance) => session.stats.rebalanced(rebalance),
        }
        session.checkpoints.resume(attempt.job, job.clock.end_ms(attempt.first_batch.max(1) - 1));
        self.next_job += 1;
        Ok(AttemptStart { attempt, restore: checkpoint, output_committed_through: committed, reuse })
    }

    /// Tells every worker of the attempt its stage plans, and where to restore state from;
    /// returns how many source tasks it takes over from survivors.
    async fn register_attempt(
        &mut self,
        job: &RunningJob,
        name: &str,
        start: &AttemptStart,
        replay: &[(u32, Vec<(u64, i64)>)],
    ) -> u64 {
        let AttemptStart { attempt, restore, output_committed_through, reuse } = start;
        let mut stages = job.physical.stages.clone();
        let mut reused_runs = Vec::new();
        for stage in &mut stages {
            if let sleet_plan::StageInput::Source(spec) = &mut stage.input {
                if let Some(checkpoint) = restore {
                    *spec = resume_source(spec, checkpoint);
                }
                *spec = with_replay(spec, replay, &job.clock);
                if let Some((_, planned)) = reuse {
                    let (skipping, runs) = skip_reused(spec, stage.id, planned, &job.clock);
                    *spec = skipping;
                    reused_runs.extend(runs);
                }
            }
        }
        let reused_tasks = reused_runs.iter().map(|run| run.batches.end - run.batches.start).sum();
        let registration = JobRegistration {
            job: attempt.job,
            name: name.to_string(),
            stages,
            clock: job.clock,
            dead_letter_dir: job.settings.dead_letter_dir.clone(),
            attempt: attempt.number,
            checkpoint_dir: (job.settings.checkpoint_interval_ms > 0)
                .then(|| self.config.checkpoint_dir.to_string_lossy().into_owned()),
            restore: restore.as_ref().map(CheckpointRecord::restore_point),
            output_committed_through: *output_committed_through,
            reuse: reuse
                .as_ref()
                .filter(|_| !reused_runs.is_empty())
                .map(|(from_job, _)| ReusedOutputs { from_job: *from_job, runs: reused_runs }),
            last_batch: job.batches_total().and_then(|batches| batches.checked_sub(1)),
        };
        let register = EncodedMessage::new(&DriverToWorker::RegisterJob(registration));
        for worker in attempt.placement.workers() {
            if let Some(handle) = self.membership.get(*worker) {
                let _ = handle.send_encoded(register.clone()).await;
            }
        }
        reused_tasks
    }

    fn link(&mut self, job: JobId, client: ClientId) -> JobLink<'_> {
        let watchers = self.watching.as_ref().map(|(_, watchers)| watchers.clone()).unwrap_or_default();
        JobLink {
            events: &mut self.events,
            membership: &mut self.membership,
            shutting_down: &mut self.shutting_down,
            job,
            client,
            watchers,
            live: self.live.clone(),
        }
    }

    /// Holds a submitted job until `expect_workers` workers have joined. After
    /// `worker_wait_s` with fewer, the job fails, naming who did join: running on fewer
    /// workers than the user planned for would quietly change what is measured. The
    /// submitting client going away, or asking to stop, cancels the wait.
    async fn wait_for_workers(&mut self, client: ClientId) -> Result<WorkersWaited, DriverError> {
        let expected = self.config.expect_workers.max(1);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(self.config.worker_wait_s);
        while (self.membership.len() as u32) < expected {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(DriverEvent::WorkerJoined(handle))) => self.membership.join(handle),
                Ok(Some(DriverEvent::WorkerLost { worker, reason })) => {
                    self.membership.leave(worker);
                    eprintln!("sleet driver: worker {worker} left: {reason}");
                }
                Ok(Some(DriverEvent::ClientGone { client: gone })) if gone == client => {
                    return Ok(WorkersWaited::Cancelled)
                }
                Ok(Some(DriverEvent::Shutdown)) => {
                    self.shutting_down = true;
                    return Ok(WorkersWaited::Cancelled);
                }
                Ok(Some(DriverEvent::Submit { replies, .. })) => {
                    let reason = "the driver is busy with a job waiting for workers; submit again when it ends";
                    let _ = replies.send(DriverToClient::Rejected { reason: reason.into() }).await;
                }
                Ok(Some(DriverEvent::Attach { job, replies })) => self.attach(job, replies).await,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    let joined = self
                        .membership
                        .handles()
                        .map(|handle| {
                            format!("{} (pid {}, shuffle on {})", handle.name, handle.pid, handle.shuffle_address)
                        })
                        .collect();
                    return Err(DriverError::TooFewWorkers { expected, joined, waited_s: self.config.worker_wait_s });
                }
            }
        }
        Ok(WorkersWaited::Enough)
    }

    /// Tells every worker of the job to flush and drop it, and waits for their answers.
    /// Lets workers that asked to leave go: they exit on `Shutdown`, and no job uses them.
    async fn release(&mut self, workers: &[WorkerId]) {
        for worker in workers {
            if let Some(handle) = self.membership.leave(*worker) {
                eprintln!("sleet driver: worker {worker} ({}) leaves", handle.name);
                let _ = handle.send(&DriverToWorker::Shutdown).await;
            }
        }
    }

    async fn end_job(&mut self, job: JobId, client: ClientId, workers: &[WorkerId]) {
        let mut waiting: Vec<WorkerId> = Vec::new();
        for worker in workers {
            if let Some(handle) = self.membership.get(*worker) {
                if handle.send(&DriverToWorker::EndJob { job, keep_map_outputs: false }).await {
                    waiting.push(*worker);
                }
            }
        }
        let deadline = tokio::time::Instant::now() + END_JOB_WAIT;
        let mut link = self.link(job, client);
        while !waiting.is_empty() {
            match link.next_event(deadline).await {
                JobEvent::Ended { worker, job: ended } if ended == job => waiting.retain(|w| *w != worker),
                JobEvent::Lost { worker, .. } => waiting.retain(|w| *w != worker),
                JobEvent::Timeout => {
                    eprintln!("sleet driver: workers {waiting:?} did not confirm the end of job {job}");
                    break;
                }
                _ => {}
            }
        }
    }
}

/// How a submitted job's wait for workers ended, when it did not fail.
enum WorkersWaited {
    Enough,
    /// Its client went away or the driver is shutting down: the job never starts.
    Cancelled,
}

/// Looks up and checks the job's source and sink outside the process (Kafka metadata, files)
/// before anything is planned or started: a missing topic or a changed partition count is
/// refused here, by name.
async fn check_outside_systems(mut job_file: JobFile, connectors: Arc<dyn ConnectorCheck>) -> Result<JobFile, String> {
    tokio::task::spawn_blocking(move || {
        for node in &mut job_file.plan.nodes {
            match &mut node.operator {
                sleet_plan::Operator::Source { spec } => {
                    connectors.check_source(spec).map_err(|error| error.to_string())?
                }
                sleet_plan::Operator::Sink { spec } => {
                    connectors.check_sink(spec).map_err(|error| error.to_string())?
                }
                _ => {}
            }
        }
        Ok(job_file)
    })
    .await
    .map_err(|error| format!("checking the job's source and sink failed: {error}"))?
}
