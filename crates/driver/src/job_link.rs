//! What a running job's scheduler sees of the driver: the events that concern its job, the
//! workers it can send to, and how a failure is told. The coordinator owns the driver's
//! state and lends it here for the length of a job; the schedulers (`bsp`, `group`) depend on
//! this seam and never on the coordinator, which only picks one and runs it.

use std::time::Duration;

use sleet_clarity::ClusterShape;
use sleet_plan::PhysicalPlan;
use sleet_wire::clock::{now_ms, BatchClock};
use sleet_wire::{
    DriverToClient, DriverToWorker, JobId, JobProgress, RestartRecord, StatusBatch, TaskId, TaskReport, TaskStats,
    WorkerId, WorkerToDriver,
};
use tokio::sync::mpsc;

use crate::batch_ledger::CompletedBatch;
use crate::checkpoints::{CheckpointRecord, Checkpoints};
use crate::commits::OutputCommits;
use crate::error::DriverError;
use crate::event::{ClientId, DriverEvent};
use crate::intake::take_reports;
use crate::job_state::{SavedFigures, StateDir, FIGURES_SAVE_INTERVAL_MS, SAVED_REPLAY_ENTRIES_MAX};
use crate::live::{JobUpdate, LiveView};
use crate::membership::{EncodedMessage, Membership};
use crate::placement::Placement;
use crate::progress::JobStats;
use crate::read_bound::{BatchLoad, ReadBound};
use crate::recovery_state::RecoveryState;
use crate::watchers::Watchers;

/// What the running job's scheduler is told by an event that concerns it.
pub enum JobEvent {
    /// Batched progress from a worker, and what decoding it cost the driver.
    Status(StatusBatch, i64),
    Ended {
        worker: WorkerId,
        job: JobId,
    },
    /// The client asked to stop the job, went away, or the driver is shutting down.
    Stop,
    Lost {
        worker: WorkerId,
        name: String,
        pid: u32,
        reason: String,
    },
    /// A worker registered while the job runs; it gets partitions at the next checkpoint.
    Joined {
        worker: WorkerId,
    },
    /// A worker asked to leave; its partitions move at the next checkpoint.
    Leaving {
        worker: WorkerId,
    },
    Timeout,
}

/// A job while it runs: what its scheduler needs to know about it.
pub struct RunningJob {
    /// The id its client knows it by; each attempt runs under an id of its own.
    pub job: JobId,
    pub client: ClientId,
    pub clock: BatchClock,
    pub settings: sleet_plan::JobSettings,
    pub physical: PhysicalPlan,
    /// A stage of one batch taking longer than this fails the job.
    pub stage_timeout: Duration,
}

impl RunningJob {
    /// How many batches the job runs, when it has a duration.
    pub fn batches_total(&self) -> Option<u64> {
        self.settings.duration_ms.map(|duration| self.clock.batches_in(duration))
    }
}

/// One attempt at running a job: the first, or the one that goes on after workers were lost.
/// Every task, block and report of an attempt carries its id, so nothing of an earlier
/// attempt can be mistaken for this one's.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The id on the wire.
    pub job: JobId,
    /// 0 for the first attempt.
    pub number: u32,
    pub placement: Placement,
    /// The first batch it runs: 0, or the one after the checkpoint it resumed from.
    pub first_batch: u64,
}

/// What lasts across the attempts of one job: its figures, its checkpoints, its output
/// commits, what a recovery re-reads and reuses.
pub struct JobSession {
    pub stats: JobStats,
    pub recovery: RecoveryState,
    pub checkpoints: Checkpoints,
    pub commits: OutputCommits,
    /// Complete checkpoints waiting for every batch up to theirs to be committed: a recovery
    /// restarts after its checkpoint, so the output before it must all be committed by then.
    pub pending_checkpoints: Vec<CheckpointRecord>,
    /// The first batch no attempt has sent yet: where a recovery's re-run ends.
    pub next_batch: u64,
    /// Workers that joined while the job ran and hold no partition yet.
    pub joined: Vec<WorkerId>,
    /// Workers that asked to leave and still hold partitions.
    pub leaving: Vec<WorkerId>,
    /// Set by a scheduler that ended its attempt early, at the checkpoint after this batch,
    /// so that the joined workers can take partitions.
    pub handoff_after: Option<u64>,
    /// The latest checkpoint recorded that the attempt's workers have not been told of.
    pub untold_checkpoint: Option<u64>,
    /// Where the figures are saved for a restarted driver, and when they last were.
    pub state: StateDir,
    pub figures_saved_at_ms: i64,
    /// Backpressure's controller, when the job has it on.
    pub read_bound: Option<ReadBound>,
}

impl JobSession {
    /// A worker joined: whether the running attempt should now end at a checkpoint to give
    /// it partitions (only when checkpoints carry state across; otherwise it waits for the
    /// next job).
    pub fn worker_joined(&mut self, worker: WorkerId) -> bool {
        if !self.checkpoints.enabled() {
            eprintln!("sleet driver: worker {worker} joined; checkpoints are off, so it gets work with the next job");
            return false;
        }
        self.joined.push(worker);
        true
    }

    /// A worker asked to leave: whether the running attempt should now end at a checkpoint
    /// to move its partitions off. Without checkpoints it cannot hand state over; it is let
    /// go when the job ends.
    pub fn worker_leaving(&mut self, worker: WorkerId) -> bool {
        if !self.checkpoints.enabled() {
            eprintln!(
                "sleet driver: worker {worker} asks to leave; checkpoints are off, so it leaves when the job ends"
            );
        }
        self.leaving.push(worker);
        self.checkpoints.enabled()
    }

    /// `intake::take_reports` into this session's figures and recovery state, the one place
    /// that hands a status to both.
    pub fn take_reports(
        &mut self,
        status: &StatusBatch,
        attempt_job: JobId,
        accept: impl FnMut(&TaskReport, &TaskStats) -> bool,
    ) -> Result<(), TaskFailure> {
        take_reports(status, attempt_job, &mut self.stats, &mut self.recovery, accept)
    }

    /// A batch is done: its output counts, it may commit output and complete a checkpoint.
    pub fn batch_completed(
        &mut self,
        mut completed: CompletedBatch,
        attempt_job: JobId,
        coordination_us: Option<i64>,
        now_ms: i64,
    ) -> Result<(), DriverError> {
        self.commits.completed(completed.record.batch);
        if let Some(read_bound) = &mut self.read_bound {
            // The bound the batch most likely read under: the one in force as it ends.
            completed.record.read_bound = read_bound.bound();
            read_bound.observe(BatchLoad::of(&completed.record));
        }
        if let Some(checkpoint) = self.checkpoints.completed(&completed, attempt_job, now_ms) {
            self.pending_checkpoints.push(checkpoint);
        }
        self.stats.push_batch(completed, coordination_us, now_ms);
        let committed = self.commits.committed_in_memory();
        if self.pending_checkpoints.iter().any(|pending| Some(pending.batch) <= committed) {
            self.pending_checkpoints.sort_by_key(|pending| pending.batch);
            let ready = self.pending_checkpoints.iter().take_while(|pending| Some(pending.batch) <= committed).count();
            // The manifest on disk first: what a restarted driver finds committed must reach
            // at least the checkpoint it resumes from. So must the figures: it re-runs only
            // batches after the checkpoint, and counts only those the figures do not.
            self.commits.publish_if_behind().map_err(DriverError::Commit)?;
            self.save_figures(now_ms)?;
            for checkpoint in self.pending_checkpoints.drain(..ready) {
                self.recovery.checkpoint_recorded(checkpoint.batch);
                self.untold_checkpoint = Some(checkpoint.batch);
                self.checkpoints.record(checkpoint).map_err(DriverError::Checkpoint)?;
            }
        }
        self.commits.publish_if_due(now_ms).map_err(DriverError::Commit)?;
        self.stamp_commits();
        if now_ms.saturating_sub(self.figures_saved_at_ms) >= FIGURES_SAVE_INTERVAL_MS {
            self.save_figures(now_ms)?;
        }
        Ok(())
    }

    /// Gives the batches the latest published manifest admitted their commit time, for the
    /// latency breakdown. Called after anything that may publish.
    pub fn stamp_commits(&mut self) {
        if let Some((through, at_us)) = self.commits.take_publication() {
            self.stats.committed_through(through, at_us);
        }
    }

    /// Saves the figures and the replay log to the state directory. The replay log on disk
    /// is what lets a restarted driver re-run the batches after the checkpoint on the Kafka
    /// offsets they read before; saving at the manifest's cadence keeps it at most that far
    /// behind the source reports (which arrive before the batches' sink writes finish).
    pub fn save_figures(&mut self, now_ms: i64) -> Result<(), DriverError> {
        self.figures_saved_at_ms = now_ms;
        let figures =
            SavedFigures { replay: self.recovery.saved_replay(SAVED_REPLAY_ENTRIES_MAX), ..self.stats.figures() };
        self.state.save_figures(&figures)
    }

    /// This driver took the job over after a restart (`restart`), from what the driver
    /// before it saved, if anything: its figures and its replay log.
    pub fn resumed(&mut self, saved: Option<SavedFigures>, restart: RestartRecord) {
        if let Some(saved) = &saved {
            self.recovery = RecoveryState::restored(&saved.replay, restart.checkpoint_batch);
        }
        self.stats.resumed(saved, restart);
    }
}

/// The driver's state as a running job's scheduler may use it.
pub struct JobLink<'a> {
    pub events: &'a mut mpsc::Receiver<DriverEvent>,
    pub membership: &'a mut Membership,
    pub shutting_down: &'a mut bool,
    pub job: JobId,
    pub client: ClientId,
    /// Clients following the job; one that attaches now joins them.
    pub watchers: Watchers,
    /// What the API and the dashboard show.
    pub live: LiveView,
}

impl JobLink<'_> {
    /// Waits for the next event that concerns the job, handling the others here: workers
    /// joining, submits (refused while a job runs), other clients' requests.
    pub async fn next_event(&mut self, deadline: tokio::time::Instant) -> JobEvent {
        loop {
            let event = match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Err(_) => return JobEvent::Timeout,
                Ok(None) => return JobEvent::Stop,
                Ok(Some(event)) => event,
            };
            match event {
                DriverEvent::WorkerJoined(handle) => {
                    let worker = handle.id;
                    self.membership.join(handle);
                    return JobEvent::Joined { worker };
                }
                DriverEvent::WorkerLost { worker, reason } => {
                    if let Some(handle) = self.membership.leave(worker) {
                        return JobEvent::Lost { worker, name: handle.name, pid: handle.pid, reason };
                    }
                }
                DriverEvent::FromWorker { message: WorkerToDriver::Status(status), decode_us, .. } => {
                    return JobEvent::Status(status, decode_us)
                }
                DriverEvent::FromWorker { worker, message: WorkerToDriver::JobEnded { job }, .. } => {
                    return JobEvent::Ended { worker, job }
                }
                DriverEvent::FromWorker { message: WorkerToDriver::Leaving { worker }, .. } => {
                    return JobEvent::Leaving { worker }
                }
                DriverEvent::FromWorker { .. } => {}
                DriverEvent::Submit { replies, .. } => {
                    let reason = format!("the driver is busy running job {}; submit again when it ends", self.job);
                    let _ = replies.send(DriverToClient::Rejected { reason }).await;
                }
                DriverEvent::Attach { job, replies } if job == self.job => self.watchers.add(replies),
                DriverEvent::Attach { job, replies } => {
                    let reason = format!("the driver runs job {}, not job {job}", self.job);
                    let _ = replies.send(DriverToClient::Rejected { reason }).await;
                }
                DriverEvent::Stop { job } if job == self.job => return self.stop(),
                DriverEvent::Stop { .. } => {}
                DriverEvent::ClientGone { client } if client == self.client => return self.stop(),
                DriverEvent::ClientGone { .. } => {}
                DriverEvent::Shutdown => {
                    *self.shutting_down = true;
                    return self.stop();
                }
            }
        }
    }

    fn stop(&self) -> JobEvent {
        self.live.stop_requested(self.job);
        JobEvent::Stop
    }

    /// About once a second: the job's progress to its clients, and everything the live view
    /// shows of it. `decorate` adds what only the scheduler knows (the group size).
    pub fn publish_progress(
        &self,
        session: &mut JobSession,
        attempt: &Attempt,
        replies: &mpsc::Sender<DriverToClient>,
        decorate: impl FnOnce(&mut JobProgress),
    ) {
        let now = now_ms();
        let (mut progress, update) = session.stats.live_tick(now, self.live.looked_at(now));
        progress.read_bound = session.read_bound.as_ref().and_then(ReadBound::bound);
        decorate(&mut progress);
        let _ = replies.try_send(DriverToClient::Progress(Box::new(progress.clone())));
        let update = JobUpdate {
            progress,
            workers: attempt.placement.workers().to_vec(),
            checkpoints: session.checkpoints.figures(),
            ..update
        };
        self.live.job_updated(self.job, update);
    }

    /// Tells the attempt's workers what changed since the last call: the checkpoint recorded,
    /// so they drop the map outputs they kept for batches it covers, and backpressure's new
    /// read bound. Best effort: a worker that missed a checkpoint keeps those outputs until its
    /// job ends, within its bound; one that missed a bound reads by the one before.
    pub async fn tell_workers(&self, session: &mut JobSession, attempt: &Attempt) {
        let checkpoint = session
            .untold_checkpoint
            .take()
            .map(|batch| DriverToWorker::CheckpointRecorded { job: attempt.job, batch });
        let read_bound = session
            .read_bound
            .as_mut()
            .and_then(|read_bound| read_bound.untold(attempt.job))
            .map(|records| DriverToWorker::ReadBound { job: attempt.job, records });
        for message in [checkpoint, read_bound].into_iter().flatten() {
            let message = EncodedMessage::new(&message);
            for worker in attempt.placement.workers() {
                if let Some(handle) = self.membership.get(*worker) {
                    let _ = handle.send_encoded(message.clone()).await;
                }
            }
        }
    }

    /// Sends a message to a worker of the job; a worker that is gone or whose connection
    /// closed is lost, which fails the job at `batch`.
    pub async fn send_to(&self, worker: WorkerId, message: EncodedMessage, batch: u64) -> Result<(), DriverError> {
        let Some(handle) = self.membership.get(worker) else {
            let (name, pid, reason) = ("unknown".into(), 0, "it is gone".into());
            return Err(DriverError::WorkerLost { worker, name, pid, batch, reason });
        };
        if handle.send_encoded(message).await {
            return Ok(());
        }
        let (name, pid, reason) = (handle.name.clone(), handle.pid, "its connection closed".into());
        Err(DriverError::WorkerLost { worker, name, pid, batch, reason })
    }

    /// The cluster an attempt runs on, as the performance model takes it: its workers and
    /// their cores per worker (the mean, rounded down: the model spreads CPU work over every
    /// core of the cluster, so the total is what matters).
    pub fn cluster_shape(&self, attempt: &Attempt, clock: &BatchClock) -> ClusterShape {
        let workers = attempt.placement.workers();
        let cores: u32 =
            workers.iter().filter_map(|worker| self.membership.get(*worker)).map(|handle| handle.cores.max(1)).sum();
        let count = workers.len().max(1) as u32;
        ClusterShape {
            workers: count,
            cores_per_worker: (cores / count).max(1),
            batch_interval_ms: clock.interval_ms as u64,
            net_bytes_per_s: None,
            disk_bytes_per_s: None,
        }
    }

    /// The shuffle address of a worker, where its blocks are pulled from.
    pub fn shuffle_address(&self, worker: WorkerId) -> Option<&str> {
        self.membership.get(worker).map(|handle| handle.shuffle_address.as_str())
    }

    /// A task that fails because a peer vanished (a fetch from a dead worker) is a symptom;
    /// the worker's lost connection, which follows within moments, is the cause worth
    /// reporting.
    pub async fn explain_failure(&mut self, failure: TaskFailure, batch: u64) -> DriverError {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            match self.next_event(deadline).await {
                JobEvent::Lost { worker, name, pid, reason } => {
                    return DriverError::WorkerLost { worker, name, pid, batch, reason }
                }
                JobEvent::Timeout | JobEvent::Stop => {
                    return DriverError::TaskFailed {
                        task: failure.task,
                        worker: failure.worker,
                        reason: failure.reason,
                    }
                }
                JobEvent::Status(..) | JobEvent::Ended { .. } | JobEvent::Joined { .. } | JobEvent::Leaving { .. } => {}
            }
        }
    }
}

/// A task that reported failure.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskFailure {
    pub task: TaskId,
    pub worker: WorkerId,
    pub reason: String,
}
