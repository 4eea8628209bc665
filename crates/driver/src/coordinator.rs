//! The coordinator: the one task that owns the driver's state (membership, the running job)
//! and reacts to `DriverEvent`s. Jobs run one at a time; a submit while one runs is refused.

use std::time::Duration;

use sleet_plan::SchedulerKind;
use sleet_plan::{plan_stages, JobFile, PhysicalPlan};
use sleet_wire::clock::now_ms;
use sleet_wire::{DriverToClient, DriverToWorker, JobId, JobRegistration, StatusBatch, WorkerId, WorkerToDriver};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::error::DriverError;
use crate::membership::{EncodedMessage, Membership};
use crate::server::{accept_loop, ClientId, DriverEvent};

#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub listen: String,
    /// A submitted job waits (up to `worker_wait_s`) until this many workers have registered.
    pub expect_workers: u32,
    pub worker_wait_s: u64,
    /// A stage of one batch that takes longer than this fails the job instead of hanging it.
    pub stage_timeout_s: u64,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig { listen: "127.0.0.1:7077".into(), expect_workers: 1, worker_wait_s: 30, stage_timeout_s: 60 }
    }
}

/// Bound on events queued towards the coordinator.
const EVENT_QUEUE_LEN_MAX: usize = 65_536;
/// How long the driver waits for workers to acknowledge the end of a job.
const END_JOB_WAIT: Duration = Duration::from_secs(10);

/// Binds, prints `sleet driver listening on ADDR` on stdout, and serves until `Shutdown`.
pub async fn run(config: DriverConfig) -> Result<(), DriverError> {
    let listener = TcpListener::bind(&config.listen).await?;
    let address = listener.local_addr()?;
    println!("sleet driver listening on {address}");
    use std::io::Write;
    std::io::stdout().flush()?;
    let (events_tx, events) = mpsc::channel(EVENT_QUEUE_LEN_MAX);
    tokio::spawn(accept_loop(listener, events_tx));
    Coordinator { config, membership: Membership::default(), events, next_job: 1, shutting_down: false }.serve().await;
    Ok(())
}

pub struct Coordinator {
    pub config: DriverConfig,
    pub membership: Membership,
    pub events: mpsc::Receiver<DriverEvent>,
    next_job: JobId,
    pub shutting_down: bool,
}

/// What the running job's loop is told by an event it did not handle itself.
pub enum JobEvent {
    /// Batched progress from a worker, and what decoding it cost the driver.
    Status(StatusBatch, i64),
    Ended {
        worker: WorkerId,
        job: JobId,
    },
    Stop,
    Lost {
        worker: WorkerId,
        name: String,
        pid: u32,
        reason: String,
    },
    Timeout,
}

impl Coordinator {
    async fn serve(mut self) {
        while let Some(event) = self.events.recv().await {
            match event {
                DriverEvent::WorkerJoined(handle) => self.membership.join(handle),
                DriverEvent::WorkerLost { worker, reason } => {
                    self.membership.leave(worker);
                    eprintln!("sleet driver: worker {worker} left: {reason}");
                }
                DriverEvent::Submit { client, job, replies } => self.run_job(client, *job, replies).await,
                DriverEvent::FromWorker { .. } | DriverEvent::Stop { .. } | DriverEvent::ClientGone { .. } => {}
                DriverEvent::Shutdown => self.shutting_down = true,
            }
            if self.shutting_down {
                break;
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
        let physical = match plan_stages(&job_file.plan, job_file.settings.combine) {
            Ok(physical) => physical,
            Err(error) => {
                let _ = replies.send(DriverToClient::Rejected { reason: error.to_string() }).await;
                return;
            }
        };
        if let Err(error) = self.wait_for_workers().await {
            let _ = replies.send(DriverToClient::Rejected { reason: error.to_string() }).await;
            return;
        }
        let job = self.next_job;
        self.next_job += 1;
        let interval = job_file.settings.batch_interval_ms.max(1) as i64;
        // By default batch 0 starts on an interval boundary a little ahead, so every worker
        // has the registration before the first batch closes.
        let start_ms =
            job_file.settings.start_ms.unwrap_or_else(|| (now_ms() + 300 + interval - 1) / interval * interval);
        let registration = JobRegistration {
            job,
            name: job_file.plan.name.clone(),
            stages: physical.stages.clone(),
            batch_interval_ms: interval as u64,
            start_ms,
            dead_letter_dir: job_file.settings.dead_letter_dir.clone(),
        };
        let workers = self.membership.ids();
        let register = crate::membership::EncodedMessage::new(&DriverToWorker::RegisterJob(registration));
        for handle in self.membership.handles() {
            let _ = handle.send_encoded(register.clone()).await;
        }
        let _ = replies.send(DriverToClient::Accepted { job, workers: workers.len() as u32, start_ms }).await;
        let scheduler = job_file.settings.scheduler;
        eprintln!(
            "sleet driver: job {job} `{}` starts at {start_ms} on workers {workers:?} ({scheduler} scheduler)",
            job_file.plan.name
        );

        let context =
            RunningJob { job, client, start_ms, interval_ms: interval, settings: job_file.settings, physical };
        let result = match scheduler {
            SchedulerKind::Bsp => crate::bsp::run(self, &context, &workers, &replies).await,
            SchedulerKind::Group => crate::group::run(self, &context, &workers, &replies).await,
        };
        self.end_job(job, &workers).await;
        match result {
            Ok(summary) => {
                eprintln!("sleet driver: job {job} finished after {} batches", summary.batches_total);
                let _ = replies.send(DriverToClient::Finished(Box::new(summary))).await;
            }
            Err(error) => {
                let reason = sleet_wire::error_chain(&error);
                eprintln!("sleet driver: job {job} failed: {reason}");
                let _ = replies.send(DriverToClient::Failed { job, reason }).await;
            }
        }
    }

    async fn wait_for_workers(&mut self) -> Result<(), DriverError> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(self.config.worker_wait_s);
        while (self.membership.len() as u32) < self.config.expect_workers.max(1) {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(DriverEvent::WorkerJoined(handle))) => self.membership.join(handle),
                Ok(Some(DriverEvent::WorkerLost { worker, .. })) => {
                    self.membership.leave(worker);
                }
                Ok(Some(DriverEvent::Shutdown)) => self.shutting_down = true,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        if self.membership.is_empty() {
            return Err(DriverError::NoWorkers {
                expected: self.config.expect_workers,
                waited_s: self.config.worker_wait_s,
            });
        }
        Ok(())
    }

    /// Tells every worker of the job to flush and drop it, and waits for their answers.
    async fn end_job(&mut self, job: JobId, workers: &[WorkerId]) {
        let mut waiting: Vec<WorkerId> = Vec::new();
        for worker in workers {
            if let Some(handle) = self.membership.get(*worker) {
                if handle.send(&DriverToWorker::EndJob { job }).await {
                    waiting.push(*worker);
                }
            }
        }
        let deadline = tokio::time::Instant::now() + END_JOB_WAIT;
        while !waiting.is_empty() {
            match self.next_job_event(job, 0, deadline).await {
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

    /// Waits for the next event that concerns the running job, handling the others here.
    pub async fn next_job_event(&mut self, job: JobId, client: ClientId, deadline: tokio::time::Instant) -> JobEvent {
        loop {
            let event = match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Err(_) => return JobEvent::Timeout,
                Ok(None) => return JobEvent::Stop,
                Ok(Some(event)) => event,
            };
            match event {
                DriverEvent::WorkerJoined(handle) => self.membership.join(handle),
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
                DriverEvent::FromWorker { .. } => {}
                DriverEvent::Submit { replies, .. } => {
                    let reason = format!("the driver is busy running job {job}; submit again when it ends");
                    let _ = replies.send(DriverToClient::Rejected { reason }).await;
                }
                DriverEvent::Stop { job: stopped } if stopped == job => return JobEvent::Stop,
                DriverEvent::Stop { .. } => {}
                DriverEvent::ClientGone { client: gone } if gone == client => return JobEvent::Stop,
                DriverEvent::ClientGone { .. } => {}
                DriverEvent::Shutdown => {
                    self.shutting_down = true;
                    return JobEvent::Stop;
                }
            }
        }
    }
}

impl Coordinator {
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

    /// A task that fails because a peer vanished (a fetch from a dead worker) is a symptom;
    /// the worker's lost connection, which follows within moments, is the cause worth
    /// reporting.
    pub async fn explain_failure(
        &mut self,
        job: &RunningJob,
        task: sleet_wire::TaskId,
        failed_on: WorkerId,
        failure: String,
        batch: u64,
    ) -> DriverError {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            match self.next_job_event(job.job, job.client, deadline).await {
                JobEvent::Lost { worker, name, pid, reason } => {
                    return DriverError::WorkerLost { worker, name, pid, batch, reason }
                }
                JobEvent::Timeout | JobEvent::Stop => {
                    return DriverError::TaskFailed { task, worker: failed_on, reason: failure }
                }
                JobEvent::Status(..) | JobEvent::Ended { .. } => {}
            }
        }
    }
}

/// A job while it runs: what the scheduler needs to know about it.
pub struct RunningJob {
    pub job: JobId,
    pub client: ClientId,
    pub start_ms: i64,
    pub interval_ms: i64,
    pub settings: sleet_plan::JobSettings,
    pub physical: PhysicalPlan,
}

impl RunningJob {
    /// How many batches the job runs, when it has a duration.
    pub fn batches_total(&self) -> Option<u64> {
        self.settings
            .duration_ms
            .map(|duration| (duration as i64 + self.interval_ms - 1) as u64 / self.interval_ms as u64)
    }

    /// The event-time range `[start, end)` of a batch.
    pub fn batch_range_ms(&self, batch: u64) -> (i64, i64) {
        let start_ms = self.start_ms + batch as i64 * self.interval_ms;
        (start_ms, start_ms + self.interval_ms)
    }

    pub fn batch_end_ms(&self, batch: u64) -> i64 {
        self.batch_range_ms(batch).1
    }
}
