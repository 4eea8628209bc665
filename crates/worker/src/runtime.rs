//! The worker process: binds its shuffle service, registers with the driver, and serves the
//! driver's connection: jobs registered, groups and tasks handed to the scheduler shell
//! (`launcher`), stops and ends of jobs, shutdown.
//!
//! A registration lives as long as its connection: a *session*. When the driver goes away
//! the session ends, and everything of it (jobs, blocks, tasks in flight, the shuffle
//! service) goes with its runtime; the worker then tries for `driver_reconnect` to register
//! afresh, as a new member, with a restarted driver at the same address. A driver that
//! itself cut the worker off (declared it lost) refuses it, and the worker exits: a frozen
//! process that wakes up must not come back as if nothing happened.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap as HashMap;
use sleet_monotask::Resource;
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
use crate::retained::{RetainedOutputs, RETAINED_BYTES_MAX};
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
    /// Send each task's monotask records with its report (the default).
    pub report_monotasks: bool,
    /// How long to keep trying to reach a driver that went away; zero: exit at once.
    pub driver_reconnect: Duration,
    /// The cpus this worker runs on (the caller pins the process before it starts threads);
    /// cpu pool thread `i` takes `cpus[i % len]`. Empty: not pinned.
    pub cpus: Vec<usize>,
}

/// How often a worker that lost its driver tries to connect again.
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);

/// How a session with a driver ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionEnd {
    /// The driver said `Shutdown`.
    Shutdown,
    /// The connection to the driver of this incarnation closed or failed.
    DriverGone { incarnation: u64 },
    /// A driver that declared this worker lost refused it.
    Refused,
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

/// Runs until the driver says `Shutdown`, refuses the worker, or stays away longer than
/// `driver_reconnect`.
pub async fn run(config: WorkerConfig) -> Result<(), WorkerError> {
    let mut previous_driver: Option<u64> = None;
    loop {
        // Each session on a thread and runtime of its own: dropping the runtime at its end
        // cancels every task it spawned, so nothing of a forgotten session runs on.
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
        let session_config = config.clone();
        std::thread::Builder::new().name("sleet-worker-session".into()).spawn(move || {
            let ended = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(WorkerError::Io)
                .and_then(|runtime| runtime.block_on(session(session_config, previous_driver)));
            let _ = ended_tx.send(ended);
        })?;
        let ended = ended_rx.await.map_err(|_| WorkerError::Internal("the worker's session thread died".into()))??;
        match ended {
            SessionEnd::Shutdown => return Ok(()),
            SessionEnd::Refused => {
                eprintln!("sleet worker: the driver declared this worker lost and refuses it; exiting");
                return Ok(());
            }
            SessionEnd::DriverGone { .. } if config.driver_reconnect.is_zero() => {
                eprintln!("sleet worker: the driver closed the connection; exiting");
                return Ok(());
            }
            SessionEnd::DriverGone { incarnation } => {
                eprintln!(
                    "sleet worker: lost the driver at {}; trying to register again for up to {} s",
                    config.driver_address,
                    config.driver_reconnect.as_secs_f64()
                );
                previous_driver = Some(incarnation);
            }
        }
    }
}

/// Connects to the driver, trying again for up to `retry_for` while nothing listens there.
async fn connect_driver(address: &str, retry_for: Duration) -> Result<Connection, WorkerError> {
    let deadline = tokio::time::Instant::now() + retry_for;
    let mut said = false;
    loop {
        match Connection::connect(address, Role::Worker).await {
            Ok(connection) => return Ok(connection),
            // A secret that does not match stays wrong: waiting would only hide it.
            Err(error @ sleet_wire::WireError::Unauthenticated(_)) => return Err(error.into()),
            Err(error) if tokio::time::Instant::now() >= deadline => {
                return Err(WorkerError::DriverGone {
                    address: address.to_string(),
                    waited_s: retry_for.as_secs(),
                    source: error,
                })
            }
            Err(error) => {
                if !said {
                    eprintln!(
                        "sleet worker: no driver at {address} yet ({error}); trying for up to {} s",
                        retry_for.as_secs()
                    );
                    said = true;
                }
                tokio::time::sleep(RECONNECT_PAUSE).await
            }
        }
    }
}

/// One registration with a driver, from connecting to the end of its connection.
async fn session(config: WorkerConfig, previous_driver: Option<u64>) -> Result<SessionEnd, WorkerError> {
    let listener = TcpListener::bind(&config.shuffle_listen).await?;
    let shuffle_address = advertised_address(listener.local_addr()?, config.advertise.as_deref())?;
    let store = Arc::new(BlockStore::default());
    let (announced_tx, announced_rx) = mpsc::channel::<BlocksAnnounced>(ANNOUNCEMENT_QUEUE_LEN_MAX);
    tokio::spawn(shuffle::serve(listener, Arc::clone(&store), announced_tx.clone()));

    // A worker started a moment before its driver, or one whose driver restarts, waits for
    // it rather than failing at once; a worker restarted along with the driver is both.
    let mut connection = connect_driver(&config.driver_address, config.driver_reconnect).await?;
    connection
        .send_binary(&WorkerToDriver::Register {
            name: config.name.clone(),
            shuffle_address: shuffle_address.clone(),
            cores: config.cores,
            pid: std::process::id(),
            previous_driver,
        })
        .await?;
    let welcome = match connection.recv().await {
        Ok(Some(welcome)) => welcome,
        // Closed without a welcome: a driver that remembers cutting this worker off.
        Ok(None) | Err(_) if previous_driver.is_some() => return Ok(SessionEnd::Refused),
        Ok(None) => return Err(sleet_wire::WireError::Truncated.into()),
        Err(error) => return Err(error.into()),
    };
    let DriverToWorker::Welcome { worker, heartbeat_interval_ms, driver_incarnation } = welcome.binary("welcome")?
    else {
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
            cores => ResourcePool::pinned(Resource::Cpu, cores as usize, MONOTASK_QUEUE_LEN_MAX, &config.cpus),
        },
        disk: ResourcePool::new(Resource::Disk, 1, MONOTASK_QUEUE_LEN_MAX)
            .with_limit(BandwidthLimit::new(config.disk_bytes_per_s).map(Arc::new)),
        net: Arc::new(Semaphore::new(config.fetches_in_flight_max.max(1))),
        // Two threads: a source partition's read overlaps another's, or a sink's write.
        net_blocking: ResourcePool::new(Resource::Net, 2, MONOTASK_QUEUE_LEN_MAX).with_limit(net_limit.clone()),
        net_limit,
        sync_writes: config.sync_writes,
        report_monotasks: config.report_monotasks,
        store,
        retained: RetainedOutputs::new(RETAINED_BYTES_MAX),
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
    let mut ended = SessionEnd::DriverGone { incarnation: driver_incarnation };
    loop {
        let frame = match sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                eprintln!("sleet worker {worker}: the driver closed the connection; its jobs are forgotten");
                break;
            }
            Err(error) => {
                eprintln!("sleet worker {worker}: the driver connection failed ({error}); its jobs are forgotten");
                break;
            }
        };
        let decode_started_us = now_us();
        let message = frame.binary::<DriverToWorker>("driver message")?;
        let decode_us = now_us() - decode_started_us;
        match message {
            DriverToWorker::Welcome { .. } => {}
            DriverToWorker::RegisterJob(registration) => {
                let running: rustc_hash::FxHashSet<JobId> = jobs.keys().copied().collect();
                ctx.retained.keep_only(&running, registration.reuse.as_ref());
                jobs.insert(registration.job, Arc::new(JobRuntime::new(registration)));
            }
            DriverToWorker::CheckpointRecorded { job, batch } => ctx.retained.drop_through(job, batch),
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
            DriverToWorker::EndJob { job, keep_map_outputs } => {
                if !keep_map_outputs {
                    ctx.retained.drop_job(job);
                }
                if let Some(runtime) = jobs.remove(&job) {
                    if let Err(error) = runtime.flush() {
                        eprintln!("sleet worker {worker}: flushing job {job} output failed: {error}");
                    }
                }
                ctx.store.drop_job(job);
                let _ = events.send(SchedulerEvent::ForgetJob(job)).await;
                let _ = outgoing.send(Outgoing::Message(WorkerToDriver::JobEnded { job })).await;
            }
            DriverToWorker::ReadBound { job, records } => {
                if let Some(runtime) = jobs.get(&job) {
                    runtime.set_read_bound(records);
                }
            }
            DriverToWorker::Shutdown => {
                eprintln!("sleet worker {worker}: shutting down at the driver's request");
                ended = SessionEnd::Shutdown;
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
    Ok(ended)
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
