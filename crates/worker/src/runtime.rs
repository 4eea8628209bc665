//! The worker process: binds its shuffle service, registers with the driver, and serves the
//! driver's connection: jobs registered, groups and tasks handed to the scheduler shell
//! (`launcher`), stops and ends of jobs, shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap as HashMap;
use sleet_clarity::Resource;
use sleet_wire::clock::now_us;
use sleet_wire::{
    BlocksAnnounced, Connection, DriverToWorker, EncodedReport, JobId, Role, TaskId, TaskOutcome, TaskReport,
    WorkerToDriver,
};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

use crate::announce::Announcer;
use crate::bandwidth::BandwidthLimit;
use crate::block_store::BlockStore;
use crate::error::WorkerError;
use crate::job::JobRuntime;
use crate::launcher::{SchedulerEvent, SchedulerShell};
use crate::pool::ResourcePool;
use crate::shuffle::{self, ShuffleClient};
use crate::status::{write_to_driver, Outgoing};
use crate::task::WorkerContext;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub driver_address: String,
    pub cores: u32,
    /// Where the shuffle service listens; port 0 picks a free one.
    pub shuffle_listen: String,
    /// The shuffle address the driver and peers are told: how other machines reach this
    /// one. Default: the bound listen address, which only works when that is not a wildcard.
    pub advertise: Option<String>,
    pub name: String,
    /// Shuffle fetches in flight at once (the network scheduler's bound).
    pub fetches_in_flight_max: usize,
    /// Experiments' limits (`bandwidth`): bytes/s this worker moves over the network (the
    /// shuffle blocks it fetches and its blocking network monotasks, on one link), and
    /// writes to its disk.
    pub net_bytes_per_s: Option<u64>,
    pub disk_bytes_per_s: Option<u64>,
    /// Sync every sink write on the disk to the device before it counts as done.
    pub sync_writes: bool,
}

/// Bound on messages queued towards the driver; a full queue slows task completion.
const OUTBOX_LEN_MAX: usize = 4096;
/// Bound on events queued towards the local scheduler; a full queue slows the driver's
/// connection, which is the backpressure the driver sees.
const SCHEDULER_QUEUE_LEN_MAX: usize = 65_536;
/// Bound on announcement frames queued towards the local scheduler; a full queue slows the
/// peers that push them.
const ANNOUNCEMENT_QUEUE_LEN_MAX: usize = 65_536;
/// Bound on monotasks queued per resource.
const MONOTASK_QUEUE_LEN_MAX: usize = 1024;

/// The address peers are told: `advertise`, or the bound address when it is a real one.
fn advertised_address(bound: SocketAddr, advertise: Option<&str>) -> Result<String, WorkerError> {
    match advertise {
        Some(address) => Ok(address.to_string()),
        None if bound.ip().is_unspecified() => Err(WorkerError::InvalidConfig {
            field: "advertise",
            reason: format!(
                "the shuffle service listens on the wildcard address {bound}, which other machines cannot \
                 connect to; give the address they reach this worker at (--advertise HOST:PORT)"
            ),
        }),
        None => Ok(bound.to_string()),
    }
}

/// Runs until the driver says `Shutdown` or goes away.
pub async fn run(config: WorkerConfig) -> Result<(), WorkerError> {
    let listener = TcpListener::bind(&config.shuffle_listen).await?;
    let shuffle_address = advertised_address(listener.local_addr()?, config.advertise.as_deref())?;
    let store = Arc::new(BlockStore::default());
    let (announced_tx, announced_rx) = mpsc::channel::<BlocksAnnounced>(ANNOUNCEMENT_QUEUE_LEN_MAX);
    tokio::spawn(shuffle::serve(listener, Arc::clone(&store), announced_tx.clone()));

    let mut connection = Connection::connect(&config.driver_address, Role::Worker).await?;
    connection
        .send_binary(&WorkerToDriver::Register {
            name: config.name.clone(),
            shuffle_address: shuffle_address.clone(),
            cores: config.cores,
            pid: std::process::id(),
        })
        .await?;
    let welcome = connection.recv().await?.ok_or(sleet_wire::WireError::Truncated)?;
    let DriverToWorker::Welcome { worker, heartbeat_interval_ms } = welcome.binary("welcome")? else {
        return Err(WorkerError::Internal("the driver did not answer the registration with a welcome".into()));
    };
    eprintln!("sleet worker {worker}: registered with {} (shuffle on {shuffle_address})", config.driver_address);
    crate::heartbeat::start(
        config.driver_address.clone(),
        worker,
        Duration::from_millis(heartbeat_interval_ms.max(1)),
    )?;

    // One link for every network monotask of the worker: fetches and blocking transfers share it.
    let net_limit = BandwidthLimit::new(config.net_bytes_per_s).map(Arc::new);
    let ctx = Arc::new(WorkerContext {
        worker,
        shuffle_address: shuffle_address.clone(),
        cpu: match config.cores {
            0 | 1 => ResourcePool::inline(Resource::Cpu),
            cores => ResourcePool::new(Resource::Cpu, cores as usize, MONOTASK_QUEUE_LEN_MAX),
        },
        disk: ResourcePool::new(Resource::Disk, 1, MONOTASK_QUEUE_LEN_MAX)
            .with_limit(BandwidthLimit::new(config.disk_bytes_per_s).map(Arc::new)),
        net: Arc::new(Semaphore::new(config.fetches_in_flight_max.max(1))),
        // Two threads: a source partition's read overlaps another's, or a sink's write.
        net_blocking: ResourcePool::new(Resource::Net, 2, MONOTASK_QUEUE_LEN_MAX).with_limit(net_limit.clone()),
        net_limit,
        sync_writes: config.sync_writes,
        store,
        shuffle: Arc::new(ShuffleClient::default()),
        announcer: Announcer::new(worker, shuffle_address, announced_tx),
    });

    let (mut reader, writer) = connection.into_split();
    let (outgoing, outgoing_rx) = mpsc::channel::<Outgoing>(OUTBOX_LEN_MAX);
    let writer_task = tokio::spawn(write_to_driver(writer, outgoing_rx));
    crate::leave::on_terminate(worker, outgoing.clone())?;

    let (events, events_rx) = mpsc::channel::<SchedulerEvent>(SCHEDULER_QUEUE_LEN_MAX);
    let shell = SchedulerShell::new(Arc::clone(&ctx), events.clone(), outgoing.clone());
    tokio::spawn(shell.run(events_rx, announced_rx));

    let mut jobs: HashMap<JobId, Arc<JobRuntime>> = HashMap::default();
    loop {
        let Some(frame) = sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await? else {
            eprintln!("sleet worker {worker}: the driver closed the connection; exiting");
            break;
        };
        let decode_started_us = now_us();
        let message = frame.binary::<DriverToWorker>("driver message")?;
        let decode_us = now_us() - decode_started_us;
        match message {
            DriverToWorker::Welcome { .. } => {}
            DriverToWorker::RegisterJob(registration) => {
                jobs.insert(registration.job, Arc::new(JobRuntime::new(registration)));
            }
            DriverToWorker::LaunchTask(descriptor) => match jobs.get(&descriptor.task.job) {
                Some(job) => {
                    let _ = events.send(SchedulerEvent::Task(Arc::clone(job), descriptor)).await;
                }
                None => report_unknown_job(&outgoing, worker, descriptor.task, None).await,
            },
            DriverToWorker::LaunchGroup(launch) => match jobs.get(&launch.job) {
                Some(job) => {
                    let job = Arc::clone(job);
                    let _ = events.send(SchedulerEvent::Group { job, launch, decode_us }).await;
                }
                None => {
                    let Some(first) = launch.tasks.first().and_then(|stage| {
                        stage.partitions.first().map(|partition| TaskId {
                            job: launch.job,
                            stage: stage.stage,
                            partition: *partition,
                            batch: launch.first_batch,
                        })
                    }) else {
                        continue;
                    };
                    report_unknown_job(&outgoing, worker, first, Some(launch.group)).await;
                }
            },
            DriverToWorker::Truncate { job, last_batch } => {
                let _ = events.send(SchedulerEvent::Truncate { job, last_batch }).await;
            }
            DriverToWorker::EndJob { job } => {
                if let Some(runtime) = jobs.remove(&job) {
                    if let Err(error) = runtime.flush() {
                        eprintln!("sleet worker {worker}: flushing job {job} output failed: {error}");
                    }
                }
                ctx.store.drop_job(job);
                let _ = events.send(SchedulerEvent::ForgetJob(job)).await;
                let _ = outgoing.send(Outgoing::Message(WorkerToDriver::JobEnded { job })).await;
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
    drop(outgoing);
    drop(events);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer_task).await;
    Ok(())
}

async fn report_unknown_job(outgoing: &mpsc::Sender<Outgoing>, worker: u32, task: TaskId, group: Option<u64>) {
    let report = TaskReport {
        task,
        worker,
        group,
        outcome: TaskOutcome::Failed { reason: WorkerError::UnknownJob(task.job).to_string() },
        monotasks: Vec::new(),
        started_at_us: now_us(),
        finished_at_us: now_us(),
    };
    let _ = outgoing.send(Outgoing::Report(EncodedReport::new(&report))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_listen_address_needs_an_advertised_one() {
        let bound: SocketAddr = "0.0.0.0:4000".parse().expect("address");
        let error = advertised_address(bound, None).expect_err("a wildcard cannot be advertised").to_string();
        assert!(error.contains("advertise") && error.contains("0.0.0.0:4000"), "{error}");
        assert_eq!(advertised_address(bound, Some("10.0.0.5:4000")).expect("given"), "10.0.0.5:4000");
        let loopback: SocketAddr = "127.0.0.3:4000".parse().expect("address");
        assert_eq!(advertised_address(loopback, None).expect("bound"), "127.0.0.3:4000");
    }
}
