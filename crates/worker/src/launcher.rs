//! The async shell around the local scheduler: it takes in tasks (a group's, or bsp's one by
//! one), block announcements and task ends, launches the tasks the local scheduler releases,
//! and sends each report on its way to the driver. Every decision about *when* a task runs
//! lives in `local_scheduler`; this file only moves events in and tasks out.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rustc_hash::FxHashMap as HashMap;
use sleet_plan::{StageId, StageInput, StageOutput};
use sleet_wire::clock::now_us;
use sleet_wire::{
    BlockLocation, BlocksAnnounced, EncodedReport, GroupLaunch, GroupRegistered, JobId, MapEventTime, MapOutput,
    TaskDescriptor, TaskId, TaskInput, TaskOutcome,
};
use tokio::sync::mpsc;
use tokio::task::coop::Unconstrained;

use crate::alarm::Alarm;
use crate::announce::Downstream;
use crate::job::JobRuntime;
use crate::local_scheduler::{Announced, LocalScheduler, PendingTask, ReadyTask};
use crate::status::Outgoing;
use crate::task::{reuse_task, run_task, WorkerContext};
use crate::turn::StateTurn;

/// Events the scheduler takes in between two scans for ready tasks.
const DRAINED_PER_SCAN_MAX: usize = 1024;

pub enum SchedulerEvent {
    /// bsp: one task, sent by the driver when it is due.
    Task(Arc<JobRuntime>, TaskDescriptor),
    Group {
        job: Arc<JobRuntime>,
        launch: GroupLaunch,
        decode_us: i64,
    },
    Finished(TaskEnd),
    Truncate {
        job: JobId,
        last_batch: u64,
    },
    ForgetJob(JobId),
}

/// A task that ended, as the local scheduler needs to hear of it.
pub struct TaskEnd {
    task: TaskId,
    source: bool,
    finished_at_us: i64,
}

/// What the shell keeps with a task while it waits in the local scheduler.
struct TaskPlan {
    job: Arc<JobRuntime>,
    group: Option<u64>,
    input: PlannedInput,
    /// For a map task of a group: whom to announce its blocks to.
    announce_to: Option<Arc<Downstream>>,
    /// Its batch ends a checkpoint: a stateful task snapshots its state after it.
    checkpoint: bool,
}

enum PlannedInput {
    /// A source task reads its own batch, as this worker decides when the batch closes.
    Source,
    /// bsp: a reduce task with the block locations and the map partitions' progress the
    /// driver collected at its barrier.
    Blocks(Vec<BlockLocation>, Vec<MapEventTime>),
    /// A reduce task reads what its map partitions announced.
    Announced,
}

/// The last batch a source partition finished here, and when: the start of its idle time.
#[derive(Debug, Clone, Copy)]
struct SourceSlot {
    finished_batch: u64,
    finished_at_us: i64,
    running: bool,
}

pub struct SchedulerShell {
    ctx: Arc<WorkerContext>,
    scheduler: LocalScheduler<TaskPlan, MapOutput>,
    events: mpsc::Sender<SchedulerEvent>,
    outgoing: mpsc::Sender<Outgoing>,
    source_slots: HashMap<(JobId, StageId, u32), SourceSlot>,
    /// The state turn of every stateful partition that has run here.
    turns: HashMap<(JobId, StageId, u32), Arc<StateTurn>>,
}

impl SchedulerShell {
    pub fn new(
        ctx: Arc<WorkerContext>,
        events: mpsc::Sender<SchedulerEvent>,
        outgoing: mpsc::Sender<Outgoing>,
    ) -> Self {
        SchedulerShell {
            ctx,
            scheduler: LocalScheduler::default(),
            events,
            outgoing,
            source_slots: HashMap::default(),
            turns: HashMap::default(),
        }
    }

    pub async fn run(
        mut self,
        mut events_rx: mpsc::Receiver<SchedulerEvent>,
        mut announced_rx: mpsc::Receiver<BlocksAnnounced>,
    ) {
        // Wakes the loop when the next batch closes.
        let alarm = Alarm::start().expect("spawning the alarm thread");
        loop {
            let now_us = now_us();
            for ready in self.scheduler.take_ready(now_us.div_euclid(1000)) {
                self.launch(ready);
            }
            // In µs, on the alarm's own timer (see `alarm`): tokio's rounds up to whole
            // milliseconds, and every batch's latency would carry up to two of them.
            let wait = self
                .scheduler
                .next_wakeup_ms()
                .map(|at| Duration::from_micros(at.saturating_mul(1000).saturating_sub(now_us).max(0) as u64))
                .unwrap_or(Duration::from_secs(3600));
            let wake_at = std::time::Instant::now() + wait;
            tokio::select! {
                event = events_rx.recv() => match event {
                    Some(event) => self.handle(event).await,
                    None => return,
                },
                announcement = announced_rx.recv() => match announcement {
                    Some(announcement) => self.take_announcement(announcement),
                    None => return,
                },
                _ = alarm.wait_until(wake_at) => {}
            }
            self.drain(&mut events_rx, &mut announced_rx).await;
        }
    }

    /// Takes in what is already queued before looking for ready tasks again. Events come in
    /// bursts (the announcements of a peer's map tasks, the ends of tasks that fetched, a bsp
    /// stage's launches), and a scan for ready tasks, a clock read and a fresh timer per
    /// event would cost more than the events themselves. Bounded, so a flood of
    /// announcements cannot hold back tasks that are ready.
    async fn drain(
        &mut self,
        events_rx: &mut mpsc::Receiver<SchedulerEvent>,
        announced_rx: &mut mpsc::Receiver<BlocksAnnounced>,
    ) {
        for _ in 0..DRAINED_PER_SCAN_MAX {
            if let Ok(event) = events_rx.try_recv() {
                self.handle(event).await;
            } else if let Ok(announcement) = announced_rx.try_recv() {
                self.take_announcement(announcement);
            } else {
                return;
            }
        }
    }

    async fn handle(&mut self, event: SchedulerEvent) {
        match event {
            SchedulerEvent::Task(job, descriptor) => {
                let task = descriptor.task;
                let (input, not_before_ms) = match descriptor.input {
                    TaskInput::Source => (PlannedInput::Source, Some(job.clock().end_ms(task.batch))),
                    // The bsp driver hands a reduce task every block location at once.
                    TaskInput::Shuffle { blocks, event_times } => (PlannedInput::Blocks(blocks, event_times), None),
                };
                let ordered = job.runs_in_batch_order(task.stage);
                let checkpoint = descriptor.checkpoint;
                let plan = TaskPlan { job, group: None, input, announce_to: None, checkpoint };
                self.scheduler.submit(PendingTask { task, not_before_ms, inputs_expected: 0, ordered, payload: plan });
            }
            SchedulerEvent::Group { job, launch, decode_us } => self.register_group(job, launch, decode_us).await,
            SchedulerEvent::Finished(end) => self.task_ended(end),
            SchedulerEvent::Truncate { job, last_batch } => self.scheduler.truncate(job, last_batch),
            SchedulerEvent::ForgetJob(job) => {
                self.scheduler.forget_job(job);
                self.source_slots.retain(|slot, _| slot.0 != job);
                self.turns.retain(|slot, _| slot.0 != job);
            }
        }
    }

    fn task_ended(&mut self, TaskEnd { task, source, finished_at_us }: TaskEnd) {
        self.scheduler.finished(&task);
        if source {
            let slot = self.source_slots.entry((task.job, task.stage, task.partition)).or_insert(SourceSlot {
                finished_batch: task.batch,
                finished_at_us,
                running: false,
            });
            if task.batch >= slot.finished_batch {
                *slot = SourceSlot { finished_batch: task.batch, finished_at_us, running: false };
            }
        }
    }

    fn take_announcement(&mut self, announcement: BlocksAnnounced) {
        for (reduce_task, map_partition, location) in announcement.inputs() {
            if self.scheduler.announce(&reduce_task, map_partition, location) == Announced::Overflow {
                eprintln!(
                    "sleet worker {}: dropped an announcement for {reduce_task}: too many for tasks that never arrived",
                    self.ctx.worker
                );
            }
        }
    }

    /// Takes a group's tasks in (downstream stages first, as the launch lists them) and
    /// reports the registration with what coordinating it cost here.
    async fn register_group(&mut self, job: Arc<JobRuntime>, launch: GroupLaunch, decode_us: i64) {
        let started_us = now_us();
        let owners: HashMap<StageId, Arc<Downstream>> = launch
            .downstream
            .iter()
            .map(|stage| (stage.stage, Arc::new(Downstream::new(stage.stage, &stage.owners))))
            .collect();
        let mut idle_source_slots = Vec::new();
        let mut tasks_taken = 0;
        for stage_tasks in &launch.tasks {
            let stage = match job.stage(stage_tasks.stage) {
                Ok(stage) => stage,
                Err(error) => {
                    eprintln!(
                        "sleet worker {}: group {} names {}: {error}",
                        self.ctx.worker, launch.group, stage_tasks.stage
                    );
                    continue;
                }
            };
            let announce_to = match stage.output {
                StageOutput::Shuffle { .. } => {
                    job.consumer_of(stage.id).and_then(|consumer| owners.get(&consumer).cloned())
                }
                StageOutput::Sink(_) => None,
            };
            let is_source = matches!(stage.input, StageInput::Source(_));
            let inputs_expected = match stage.input {
                StageInput::Source(_) => 0,
                StageInput::Shuffle { map_partitions, .. } => map_partitions as usize,
            };
            let ordered = job.runs_in_batch_order(stage.id);
            for &partition in &stage_tasks.partitions {
                if is_source {
                    idle_source_slots.push((stage.id, partition));
                }
                for batch in launch.batches() {
                    let task = TaskId { job: launch.job, stage: stage.id, partition, batch };
                    let not_before_ms = is_source.then(|| job.clock().end_ms(batch));
                    let input = if is_source { PlannedInput::Source } else { PlannedInput::Announced };
                    let plan = TaskPlan {
                        job: Arc::clone(&job),
                        group: Some(launch.group),
                        input,
                        announce_to: announce_to.clone(),
                        checkpoint: launch.checkpoint_after == Some(batch),
                    };
                    if self.scheduler.submit(PendingTask {
                        task,
                        not_before_ms,
                        inputs_expected,
                        ordered,
                        payload: plan,
                    }) {
                        tasks_taken += 1;
                    }
                }
            }
        }
        let registered_us = now_us();
        let coordination_wait_us = idle_source_slots
            .into_iter()
            .map(|(stage, partition)| self.coordination_wait_us(&job, &launch, stage, partition, registered_us))
            .sum();
        let registered = GroupRegistered {
            job: launch.job,
            group: launch.group,
            register_us: decode_us + (registered_us - started_us),
            coordination_wait_us,
        };
        // The driver closes a group only with every registration in, so this one must not be
        // dropped: a full queue makes the scheduler wait instead.
        let _ = self.outgoing.send(Outgoing::Registered { registered, tasks: tasks_taken }).await;
    }

    /// How long a source partition sat with the group's first batch closed and nothing else
    /// to run, for want of this group's tasks. Zero when the group arrived in time or the
    /// partition was still busy with an earlier batch.
    fn coordination_wait_us(
        &self,
        job: &JobRuntime,
        launch: &GroupLaunch,
        stage: StageId,
        partition: u32,
        registered_us: i64,
    ) -> i64 {
        // The slot is a map lookup, the earlier-task check a scan: the cheap test goes first.
        let idle_since_us = match self.source_slots.get(&(launch.job, stage, partition)) {
            None => job.registered_at_us,
            Some(slot) if !slot.running && slot.finished_batch + 1 == launch.first_batch => slot.finished_at_us,
            Some(_) => return 0,
        };
        let first = TaskId { job: launch.job, stage, partition, batch: launch.first_batch };
        if self.scheduler.has_earlier(&first) {
            return 0;
        }
        let closed_at_us = job.clock().end_ms(launch.first_batch) * 1000;
        (registered_us - idle_since_us.max(closed_at_us)).max(0)
    }

    fn launch(&mut self, ready: ReadyTask<TaskPlan, MapOutput>) {
        let ReadyTask { task, ordered, payload: plan, inputs } = ready;
        let source = matches!(plan.input, PlannedInput::Source);
        let input = match plan.input {
            PlannedInput::Source => TaskInput::Source,
            PlannedInput::Blocks(blocks, event_times) => TaskInput::Shuffle { blocks, event_times },
            PlannedInput::Announced => {
                let event_times = inputs
                    .iter()
                    .filter_map(|(map_partition, output)| {
                        Some(MapEventTime { map_partition: *map_partition, max_ms: output.event_time_ms? })
                    })
                    .collect();
                let blocks = inputs.into_iter().filter_map(|(_, output)| output.location).collect();
                TaskInput::Shuffle { blocks, event_times }
            }
        };
        if source {
            if let Some(slot) = self.source_slots.get_mut(&(task.job, task.stage, task.partition)) {
                slot.running = true;
            }
        }
        let (ctx, outgoing) = (Arc::clone(&self.ctx), self.outgoing.clone());
        let announcement_due = plan.announce_to.as_ref().map(|_| ctx.announcer.announcement_due());
        // The local scheduler starts an ordered partition's batches in order, so the first one
        // seen here is where its turns begin.
        let turn = ordered.then(|| {
            Arc::clone(
                self.turns
                    .entry((task.job, task.stage, task.partition))
                    .or_insert_with(|| Arc::new(StateTurn::new(task.batch))),
            )
        });
        let reused_from = if source { plan.job.reused_from(task.stage, task.partition, task.batch) } else { None };
        let build_future = move || async move {
            let descriptor = TaskDescriptor { task, input, checkpoint: plan.checkpoint };
            let mut report = match reused_from {
                Some(from_job) => reuse_task(Arc::clone(&ctx), from_job, descriptor, plan.group, turn).await,
                None => run_task(Arc::clone(&ctx), plan.job, descriptor, plan.group, turn).await,
            };
            if let (TaskOutcome::Succeeded(stats), Some(downstream)) = (&report.outcome, &plan.announce_to) {
                if let Err(error) = ctx.announcer.announce(task, downstream, &stats.blocks, stats.event_time_ms).await {
                    report.outcome = TaskOutcome::Failed { reason: sleet_wire::error_chain(&error) };
                }
                report.finished_at_us = now_us();
            }
            drop(announcement_due);
            let end = TaskEnd { task, source, finished_at_us: report.finished_at_us };
            let encoded = EncodedReport::new(&report);
            // Freed here, on the thread that built it, and not carried across the send.
            drop(report);
            let _ = outgoing.send(Outgoing::Report(encoded)).await;
            end
        };
        if let Some(end) = run_or_spawn(build_future, &self.events) {
            self.task_ended(end);
        }
    }
}

/// Polls a task once on the scheduler's own thread and spawns it only if it has to wait.
///
/// Most tasks of a 1-core worker never wait: their cpu monotasks run inline and their
/// channels have room, so the whole task ends in its first poll, and its end goes straight
/// back to the caller. Spawning each one instead would cost a task allocation, a trip through
/// the runtime's run queue, the bookkeeping of a spawned task and a message back to the
/// scheduler, which for a task of a few microseconds is a fifth of its cost. A task that does
/// wait (a fetch, a disk write, a full queue, a state turn) is spawned as it is and reports
/// its end through `events`: the runtime polls it again at once, which replaces the no-op
/// waker of this first poll with its own, so no wake-up is lost. `unconstrained` keeps the
/// first poll from running out of the scheduler task's cooperative budget, which would
/// otherwise push a long burst of ready tasks to the spawn path for no reason; each task is
/// bounded work, so the scheduler still returns to its events after every burst.
///
/// The future (about 2 KB) is built straight into its heap allocation: the box is allocated
/// first and `build` runs inline, writing into it. Built on the stack and moved in, it was
/// copied once or twice per task, which measured 5 % of a worker's time in `bench sched`.
#[inline(always)]
fn run_or_spawn<F: Future<Output = TaskEnd> + Send + 'static>(
    build: impl FnOnce() -> F,
    events: &mpsc::Sender<SchedulerEvent>,
) -> Option<TaskEnd> {
    let slot = Box::<Unconstrained<F>>::new_uninit();
    let mut future = Box::into_pin(Box::write(slot, tokio::task::unconstrained(build())));
    let mut context = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut context) {
        Poll::Ready(end) => Some(end),
        Poll::Pending => {
            let events = events.clone();
            tokio::spawn(async move {
                let end = future.await;
                let _ = events.send(SchedulerEvent::Finished(end)).await;
            });
            None
        }
    }
}
