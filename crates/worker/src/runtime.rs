//! The worker's async shell: registers with the driver, receives jobs and tasks, hands tasks
//! to the local scheduler, launches the ready ones and reports each completion.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sleet_wire::clock::now_ms;
use sleet_wire::{
    Connection, DriverToWorker, JobId, Role, TaskDescriptor, TaskId, TaskInput, TaskReport, WorkerToDriver,
};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

use crate::block_store::BlockStore;
use crate::error::WorkerError;
use crate::job::JobRuntime;
use crate::local_scheduler::{LocalScheduler, PendingTask};
use crate::pool::ResourcePool;
use crate::shuffle::{self, ShuffleClient};
use crate::task::{run_task, WorkerContext};

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub driver_address: String,
    pub cores: u32,
    /// Where the shuffle service listens; port 0 picks a free one.
    pub shuffle_listen: String,
    pub name: String,
    /// Shuffle fetches in flight at once (the network scheduler's bound).
    pub fetches_in_flight_max: usize,
}

/// Bound on messages queued towards the driver; a full queue slows task completion.
const OUTBOX_LEN_MAX: usize = 4096;
/// Bound on events queued towards the local scheduler; a full queue slows the driver's
/// connection, which is the backpressure the driver sees.
const SCHEDULER_QUEUE_LEN_MAX: usize = 65_536;
/// Bound on monotasks queued per resource.
const MONOTASK_QUEUE_LEN_MAX: usize = 1024;

enum SchedulerEvent {
    Task(Arc<JobRuntime>, TaskDescriptor),
    Finished(TaskId),
    ForgetJob(JobId),
}

/// Runs until the driver says `Shutdown` or goes away.
pub async fn run(config: WorkerConfig) -> Result<(), WorkerError> {
    let listener = TcpListener::bind(&config.shuffle_listen).await?;
    let shuffle_address = listener.local_addr()?.to_string();
    let store = Arc::new(BlockStore::default());
    tokio::spawn(shuffle::serve(listener, Arc::clone(&store)));

    let mut connection = Connection::connect(&config.driver_address, Role::Worker).await?;
    connection
        .send(&WorkerToDriver::Register {
            name: config.name.clone(),
            shuffle_address: shuffle_address.clone(),
            cores: config.cores,
            pid: std::process::id(),
        })
        .await?;
    let welcome = connection.recv().await?.ok_or(sleet_wire::WireError::Truncated)?;
    let DriverToWorker::Welcome { worker } = welcome.control("welcome")? else {
        return Err(WorkerError::Internal("the driver did not answer the registration with a welcome".into()));
    };
    eprintln!("sleet worker {worker}: registered with {} (shuffle on {shuffle_address})", config.driver_address);

    let ctx = Arc::new(WorkerContext {
        worker,
        shuffle_address,
        cpu: ResourcePool::new("cpu", config.cores.max(1) as usize, MONOTASK_QUEUE_LEN_MAX),
        disk: ResourcePool::new("disk", 1, MONOTASK_QUEUE_LEN_MAX),
        net: Arc::new(Semaphore::new(config.fetches_in_flight_max.max(1))),
        store,
        shuffle: Arc::new(ShuffleClient::default()),
    });

    let (mut reader, mut writer) = connection.into_split();
    let (outbox, mut outbox_rx) = mpsc::channel::<WorkerToDriver>(OUTBOX_LEN_MAX);
    let writer_task = tokio::spawn(async move {
        while let Some(message) = outbox_rx.recv().await {
            sleet_wire::write_control(&mut writer, &message).await?;
            if outbox_rx.is_empty() {
                tokio::io::AsyncWriteExt::flush(&mut writer).await?;
            }
        }
        Ok::<(), sleet_wire::WireError>(())
    });

    let (events, events_rx) = mpsc::channel::<SchedulerEvent>(SCHEDULER_QUEUE_LEN_MAX);
    tokio::spawn(scheduler_loop(Arc::clone(&ctx), events_rx, events.clone(), outbox.clone()));

    let mut jobs: HashMap<JobId, Arc<JobRuntime>> = HashMap::new();
    loop {
        let Some(frame) = sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await? else {
            eprintln!("sleet worker {worker}: the driver closed the connection; exiting");
            break;
        };
        match frame.control::<DriverToWorker>("driver message")? {
            DriverToWorker::Welcome { .. } => {}
            DriverToWorker::RegisterJob(registration) => {
                jobs.insert(registration.job, Arc::new(JobRuntime::new(registration)));
            }
            DriverToWorker::LaunchTask(descriptor) => {
                let Some(job) = jobs.get(&descriptor.task.job) else {
                    let report = TaskReport {
                        task: descriptor.task,
                        worker,
                        outcome: sleet_wire::TaskOutcome::Failed {
                            reason: WorkerError::UnknownJob(descriptor.task.job).to_string(),
                        },
                        monotasks: Vec::new(),
                    };
                    let _ = outbox.send(WorkerToDriver::TaskFinished(report)).await;
                    continue;
                };
                let _ = events.send(SchedulerEvent::Task(Arc::clone(job), descriptor)).await;
            }
            DriverToWorker::EndJob { job } => {
                if let Some(runtime) = jobs.remove(&job) {
                    if let Err(error) = runtime.flush() {
                        eprintln!("sleet worker {worker}: flushing job {job} output failed: {error}");
                    }
                }
                ctx.store.drop_job(job);
                let _ = events.send(SchedulerEvent::ForgetJob(job)).await;
                let _ = outbox.send(WorkerToDriver::JobEnded { job }).await;
            }
            DriverToWorker::Shutdown => {
                eprintln!("sleet worker {worker}: shutting down at the driver's request");
                break;
            }
        }
    }
    for job in jobs.values() {
        let _ = job.flush();
    }
    drop(outbox);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer_task).await;
    Ok(())
}

async fn scheduler_loop(
    ctx: Arc<WorkerContext>,
    mut events_rx: mpsc::Receiver<SchedulerEvent>,
    events: mpsc::Sender<SchedulerEvent>,
    outbox: mpsc::Sender<WorkerToDriver>,
) {
    let mut scheduler: LocalScheduler<(Arc<JobRuntime>, TaskDescriptor)> = LocalScheduler::default();
    loop {
        for ready in scheduler.take_ready(now_ms()) {
            let (job, descriptor) = ready.payload;
            let (ctx, events, outbox) = (Arc::clone(&ctx), events.clone(), outbox.clone());
            tokio::spawn(async move {
                let task = descriptor.task;
                let report = run_task(ctx, job, descriptor).await;
                let _ = events.send(SchedulerEvent::Finished(task)).await;
                let _ = outbox.send(WorkerToDriver::TaskFinished(report)).await;
            });
        }
        let wait = scheduler
            .next_wakeup_ms()
            .map(|at| Duration::from_millis((at - now_ms()).max(0) as u64))
            .unwrap_or(Duration::from_secs(3600));
        let event = tokio::select! {
            event = events_rx.recv() => event,
            _ = tokio::time::sleep(wait) => continue,
        };
        match event {
            None => return,
            Some(SchedulerEvent::Task(job, descriptor)) => {
                let (not_before_ms, inputs_missing) = match &descriptor.input {
                    TaskInput::SourceRange { end_ms, .. } => (Some(*end_ms), 0),
                    // The bsp driver hands a reduce task every block location at once.
                    TaskInput::Shuffle { .. } => (None, 0),
                };
                let ordered = job.is_stateful(descriptor.task.stage);
                scheduler.submit(PendingTask {
                    task: descriptor.task,
                    not_before_ms,
                    inputs_missing,
                    ordered,
                    payload: (job, descriptor),
                });
            }
            Some(SchedulerEvent::Finished(task)) => scheduler.finished(&task),
            Some(SchedulerEvent::ForgetJob(job)) => scheduler.forget_job(job),
        }
    }
}
