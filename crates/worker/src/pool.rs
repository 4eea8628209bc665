//! Per-resource monotask schedulers for cpu and disk: a fixed set of threads per resource,
//! each running one monotask at a time, fed by a bounded queue.
//!
//! Running one monotask per core (and one writer per disk) is what makes a monotask's run
//! time a clean measure of its resource use: it never shares the core with another.
//!
//! A worker with one core runs its cpu monotasks inline, on the thread of its event loop.
//! That thread is the core: a pool thread beside it would only share the same core, and each
//! monotask would pay two thread hand-offs (a wake-up of the pool thread, then one of the
//! event loop), which for a monotask of a few microseconds cost more than its work. One
//! monotask still runs at a time, and each keeps its record. The price: while a monotask
//! runs, this worker's network I/O (serving fetches, reading announcements) waits for it,
//! as it would for the core under a pool.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use sleet_monotask::{MonotaskKind, MonotaskRecord, Resource};
use tokio::sync::{oneshot, Semaphore};

use sleet_wire::clock::now_us;

use crate::bandwidth::BandwidthLimit;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The scheduler of one resource. Every monotask it runs is recorded under that resource:
/// what a monotask used is where it ran, so the records cannot say otherwise.
pub struct ResourcePool {
    resource: Resource,
    runner: Runner,
    /// An experiment's bandwidth limit: a monotask ends only when its bytes have had their
    /// time on the resource (`bandwidth`), and that time is part of its run time.
    limit: Option<Arc<BandwidthLimit>>,
}

enum Runner {
    Threads {
        queue: Arc<JobQueue>,
        /// Bounds the queue: a submitter waits for a slot instead of growing the queue.
        slots: Arc<Semaphore>,
    },
    /// On the caller's thread, which must be the only one submitting (a current-thread
    /// runtime): that is what keeps it to one monotask at a time.
    Inline,
}

/// The value a monotask body returns, with the bytes it processed for its record.
pub struct Measured<T> {
    pub value: T,
    pub bytes: u64,
}

impl ResourcePool {
    pub fn new(resource: Resource, threads: usize, queue_len_max: usize) -> Self {
        ResourcePool::pinned(resource, threads, queue_len_max, &[])
    }

    /// A pool whose thread `i` runs only on `cpus[i % cpus.len()]` (none: anywhere the
    /// process may). Threads released together, as a batch's tasks are, then never land on
    /// one core while another idles (`cpu_pin`).
    pub fn pinned(resource: Resource, threads: usize, queue_len_max: usize, cpus: &[usize]) -> Self {
        assert!(threads > 0, "a resource pool needs at least one thread");
        let queue = Arc::new(JobQueue::default());
        for index in 0..threads {
            let queue = Arc::clone(&queue);
            let cpu = (!cpus.is_empty()).then(|| cpus[index % cpus.len()]);
            thread::Builder::new()
                .name(format!("sleet-{}-{index}", resource_name(resource)))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        if let Err(error) = crate::cpu_pin::pin_this_thread(&[cpu]) {
                            eprintln!("sleet worker: could not pin a pool thread to cpu {cpu}: {error}");
                        }
                    }
                    never_preempt_wakers();
                    while let Some(job) = queue.take() {
                        job();
                    }
                })
                .expect("spawning a pool thread");
        }
        ResourcePool {
            resource,
            runner: Runner::Threads { queue, slots: Arc::new(Semaphore::new(queue_len_max)) },
            limit: None,
        }
    }

    /// A pool for one core that runs each monotask on the submitting thread (see the module
    /// docs for when that is the better choice).
    pub fn inline(resource: Resource) -> Self {
        ResourcePool { resource, runner: Runner::Inline, limit: None }
    }

    /// The same pool with its monotasks held to `limit` bytes per second.
    pub fn with_limit(self, limit: Option<Arc<BandwidthLimit>>) -> Self {
        ResourcePool { limit, ..self }
    }

    pub fn resource(&self) -> Resource {
        self.resource
    }

    /// Queues `body` as one monotask of `kind` and resolves when it has run.
    pub async fn run<T: Send + 'static>(
        &self,
        kind: MonotaskKind,
        body: impl FnOnce() -> Measured<T> + Send + 'static,
    ) -> (T, MonotaskRecord) {
        let resource = self.resource;
        let limit = self.limit.clone();
        self.dispatch(move |queued_at_us, started_at_us| {
            let measured = body();
            if let Some(limit) = &limit {
                limit.wait_blocking(started_at_us, measured.bytes);
            }
            (measured.value, finished_record(kind, resource, measured.bytes, queued_at_us, started_at_us))
        })
        .await
    }

    /// Runs `first`, then `second` on its output, as two monotasks of this resource on one
    /// thread: the second is queued the moment the first ends and starts at once. Each keeps
    /// its own record. One dispatch instead of two saves a round trip between threads, which
    /// for a tiny task costs more than its work; the price is that the second monotask does
    /// not queue behind monotasks submitted while the first ran.
    pub async fn run_chain<A: Send + 'static, B: Send + 'static>(
        &self,
        first_kind: MonotaskKind,
        first: impl FnOnce() -> Measured<A> + Send + 'static,
        second_kind: MonotaskKind,
        second: impl FnOnce(A) -> Measured<B> + Send + 'static,
    ) -> (B, [MonotaskRecord; 2]) {
        // A chain records its second monotask's start without a clock read, which a limit's
        // waiting would make wrong; chains run on the cpu, which has no limit.
        assert!(self.limit.is_none(), "a chain runs on a pool without a bandwidth limit");
        let resource = self.resource;
        self.dispatch(move |queued_at_us, started_at_us| {
            let measured = first();
            let first_record = finished_record(first_kind, resource, measured.bytes, queued_at_us, started_at_us);
            let output = second(measured.value);
            // The second monotask was ready, and started, the moment the first ended.
            let second_started_us = first_record.finished_at_us;
            let second_record =
                finished_record(second_kind, resource, output.bytes, second_started_us, second_started_us);
            (output.value, [first_record, second_record])
        })
        .await
    }

    /// Waits for a queue slot, runs `work` (given when it was queued and when it started) on
    /// a pool thread, and resolves with its result. The slot is freed before the result is
    /// handed back. Inline, a monotask starts the moment it is queued: one clock read serves
    /// both, and at a few microseconds a monotask a read is worth saving.
    async fn dispatch<R: Send + 'static>(&self, work: impl FnOnce(i64, i64) -> R + Send + 'static) -> R {
        let queued_at_us = now_us();
        let (queue, slots) = match &self.runner {
            Runner::Threads { queue, slots } => (queue, slots),
            Runner::Inline => return work(queued_at_us, queued_at_us),
        };
        let permit = Arc::clone(slots).acquire_owned().await.expect("pool semaphore is never closed");
        let (done_tx, done_rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let result = work(queued_at_us, now_us());
            drop(permit);
            let _ = done_tx.send(result);
        });
        let name = resource_name(self.resource);
        queue.put(job);
        done_rx.await.unwrap_or_else(|_| panic!("a {name} monotask panicked"))
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Runner::Threads { queue, .. } = self {
            queue.close();
        }
    }
}

/// The jobs waiting for a pool thread. Every idle thread waits on the queue itself, so two
/// jobs queued together wake two threads at once; a channel receiver shared under a mutex
/// woke them one after the other (the second only once the first had taken its job and let
/// the lock go), two wake-ups in a row before the second job could start.
#[derive(Default)]
struct JobQueue {
    jobs: Mutex<QueuedJobs>,
    queued: Condvar,
}

#[derive(Default)]
struct QueuedJobs {
    waiting: VecDeque<Job>,
    closed: bool,
}

impl JobQueue {
    fn put(&self, job: Job) {
        self.jobs.lock().expect("pool queue lock").waiting.push_back(job);
        self.queued.notify_one();
    }

    /// The next job, or `None` once the pool is gone and nothing waits.
    fn take(&self) -> Option<Job> {
        let mut jobs = self.jobs.lock().expect("pool queue lock");
        loop {
            if let Some(job) = jobs.waiting.pop_front() {
                return Some(job);
            }
            if jobs.closed {
                return None;
            }
            jobs = self.queued.wait(jobs).expect("pool queue lock");
        }
    }

    fn close(&self) {
        self.jobs.lock().expect("pool queue lock").closed = true;
        self.queued.notify_all();
    }
}

/// Puts this pool thread in the batch scheduling class, whose threads never preempt the one
/// that woke them. A task's launch queues its first monotask and wakes a pool thread; a
/// normal woken thread took the event loop's core on the spot, and the loop, halfway through
/// launching a batch's tasks, waited for a core again, so the second of two source tasks due
/// at one close started late (measured, see docs/experiments/2026-11-27-comment-figures.md).
/// Compute threads are throughput work; the loop that feeds them is not.
fn never_preempt_wakers() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes only the calling thread's policy; SCHED_BATCH needs no privilege.
    let refused = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0;
    if refused {
        eprintln!("sleet worker: could not put a pool thread in SCHED_BATCH: {}", std::io::Error::last_os_error());
    }
}

fn resource_name(resource: Resource) -> &'static str {
    match resource {
        Resource::Cpu => "cpu",
        Resource::Net => "net",
        Resource::Disk => "disk",
    }
}

/// The record of a monotask that has just finished.
fn finished_record(
    kind: MonotaskKind,
    resource: Resource,
    bytes: u64,
    queued_at_us: i64,
    started_at_us: i64,
) -> MonotaskRecord {
    MonotaskRecord { kind, resource, bytes, queued_at_us, started_at_us, finished_at_us: now_us() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_queue_and_run_time_in_order() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let pool = ResourcePool::new(Resource::Disk, 1, 4);
        let (value, record) = runtime.block_on(pool.run(MonotaskKind::SinkWrite, || {
            thread::sleep(std::time::Duration::from_millis(5));
            Measured { value: 7, bytes: 42 }
        }));
        assert_eq!(value, 7);
        assert_eq!((record.bytes, record.resource), (42, Resource::Disk), "recorded under the pool's resource");
        assert!(record.queued_at_us <= record.started_at_us);
        assert!(record.run_us() >= 5_000, "run time {} us covers the sleep", record.run_us());
    }

    #[test]
    fn an_inline_pool_runs_on_the_calling_thread_and_keeps_records() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let pool = ResourcePool::inline(Resource::Cpu);
        let caller = thread::current().id();
        let (ran_on, record) = runtime.block_on(pool.run(MonotaskKind::MapCompute, move || {
            thread::sleep(std::time::Duration::from_millis(2));
            Measured { value: thread::current().id(), bytes: 9 }
        }));
        assert_eq!(ran_on, caller);
        assert_eq!((record.kind, record.bytes), (MonotaskKind::MapCompute, 9));
        assert!(record.queued_at_us <= record.started_at_us && record.run_us() >= 2_000);
    }

    #[test]
    fn a_chain_records_two_monotasks_back_to_back() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let pool = ResourcePool::new(Resource::Cpu, 1, 4);
        let (value, [first, second]) = runtime.block_on(pool.run_chain(
            MonotaskKind::SourceRead,
            || Measured { value: 20, bytes: 3 },
            MonotaskKind::MapCompute,
            |input: i32| {
                thread::sleep(std::time::Duration::from_millis(2));
                Measured { value: input + 1, bytes: 5 }
            },
        ));
        assert_eq!(value, 21);
        assert_eq!(
            (first.kind, first.bytes, second.kind, second.bytes),
            (MonotaskKind::SourceRead, 3, MonotaskKind::MapCompute, 5)
        );
        assert_eq!(second.queued_at_us, first.finished_at_us, "the second is queued when the first ends");
        assert!(second.started_at_us >= second.queued_at_us && second.run_us() >= 2_000);
    }
}
