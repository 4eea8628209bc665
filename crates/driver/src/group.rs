//! The group scheduler (`docs/design/group-scheduling.md`): the driver coordinates once per
//! group of batches instead of once per stage of every batch, so its cost per batch shrinks as
//! the group grows.
//!
//! For each group the driver decides placement (reused while membership is unchanged) and
//! sends one `LaunchGroup` per worker; the workers' local schedulers start each task when its
//! batch closes or its inputs are announced, map tasks push block metadata straight to the
//! reduce side, and completions come back in batched, asynchronous status messages. The
//! driver's decisions happen at group boundaries: when a group completes, it measures that
//! group's coordination overhead, lets the size policy pick the next size, and sends the next
//! group.
//!
//! Why no batch waits for coordination: the driver keeps `GROUPS_IN_FLIGHT` groups out at
//! once, so while it digests group `g` the workers already hold group `g + 1` and run it. A
//! batch waits only if the driver takes longer to react to a whole group than the workers
//! take to run one; that waiting is measured (as idle source partitions) and counted as
//! overhead, which makes the automatic policy grow the group until it stops.
//!
//! Why results equal bsp's: tasks are the same `(stage, partition, batch)` units running the
//! same stage plans; a source task reads exactly its batch's range; a reduce task starts
//! only with every map partition's announcement in hand (asserted by the local scheduler);
//! stateful partitions run batches in order. Only *when* tasks run changes, never *what*.

use std::collections::BTreeMap;
use std::time::Duration;

use sleet_wire::clock::{now_ms, now_us};
use sleet_wire::{DriverToClient, DriverToWorker, GroupRecord, WorkerId};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::batch_ledger::{BatchLedger, CompletedBatch};
use crate::error::DriverError;
use crate::group_plan::{compose_group, group_tasks, GroupSpec};
use crate::group_size::GroupSizePolicy;
use crate::group_tracker::{GroupCost, GroupTracker};
use crate::job_link::{Attempt, JobEvent, JobLink, JobSession, RunningJob};
use crate::membership::EncodedMessage;

/// Groups out at once: the one running and the next, already on the workers.
const GROUPS_IN_FLIGHT: usize = 2;
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// The most batches one catch-up group holds after a recovery.
const CATCH_UP_GROUP_MAX: u32 = 1024;
/// On a stop, batches closing within this margin still run; later ones are dropped. It must
/// cover the time a `Truncate` takes to reach every worker.
const STOP_MARGIN_MS: i64 = 200;

struct GroupScheduler<'a> {
    job: &'a RunningJob,
    attempt: &'a Attempt,
    session: &'a mut JobSession,
    addresses: BTreeMap<WorkerId, String>,
    tracker: GroupTracker,
    policy: GroupSizePolicy,
    next_group: u64,
    next_batch: u64,
    /// No batch at or past this one is sent: the job's end, the batch after a stop, or the
    /// batch after a handoff's checkpoint.
    batch_limit: u64,
    /// Workers joined: the next group sent ends with a checkpoint, and the attempt with it.
    handoff_wanted: bool,
    handoff_after: Option<u64>,
}

/// Runs one attempt of a job until its last batch is done, it is stopped, or it fails; a lost
/// worker ends it with `DriverError::WorkerLost`, from which the coordinator recovers.
pub async fn run(
    link: &mut JobLink<'_>,
    job: &RunningJob,
    attempt: &Attempt,
    session: &mut JobSession,
    replies: &mpsc::Sender<DriverToClient>,
) -> Result<(), DriverError> {
    let stages = &job.physical.stages;
    let first_stage = stages.first().expect("a plan has a stage").id;
    let last_stage = stages.last().expect("a plan has a stage").id;
    let addresses = attempt
        .placement
        .workers()
        .iter()
        .filter_map(|worker| link.shuffle_address(*worker).map(|address| (*worker, address.to_string())))
        .collect();
    let mut scheduler = GroupScheduler {
        job,
        attempt,
        session,
        addresses,
        tracker: GroupTracker::new(BatchLedger::new(job.clock, first_stage, last_stage)),
        policy: GroupSizePolicy::for_job(&job.settings),
        next_group: 0,
        next_batch: attempt.first_batch,
        batch_limit: job.batches_total().unwrap_or(u64::MAX),
        handoff_wanted: false,
        handoff_after: None,
    };
    scheduler.session.stats.attempt_started(link.cluster_shape(attempt, &job.clock));
    let stage_timeout = job.stage_timeout;
    scheduler.send_groups(link).await?;
    let mut last_activity = Instant::now();
    let mut next_progress = Instant::now() + PROGRESS_EVERY;
    let mut stopping = false;
    while !(scheduler.tracker.is_idle() && scheduler.next_batch >= scheduler.batch_limit) {
        let deadline = next_progress.min(last_activity + stage_timeout);
        match link.next_event(deadline).await {
            JobEvent::Status(status, decode_us) => {
                last_activity = Instant::now();
                let handling_started_us = now_us();
                let now = now_ms();
                for registered in &status.registered {
                    scheduler.tracker.registered(registered);
                }
                let mut batches = Vec::new();
                let tracker = &mut scheduler.tracker;
                let taken = scheduler.session.take_reports(&status, attempt.job, |report, task_stats| {
                    tracker.report(report, task_stats, &mut batches)
                });
                if let Err(failure) = taken {
                    let batch = failure.task.batch;
                    return Err(link.explain_failure(failure, batch).await);
                }
                scheduler.tracker.charge_status(&status, decode_us + (now_us() - handling_started_us));
                for completed in batches {
                    scheduler.batch_completed(completed, now)?;
                }
                link.tell_workers(scheduler.session, scheduler.attempt).await;
                scheduler.close_finished_groups(now);
                scheduler.send_groups(link).await?;
            }
            JobEvent::Stop if !stopping => {
                stopping = true;
                scheduler.stop(link).await;
            }
            JobEvent::Stop | JobEvent::Ended { .. } => {}
            JobEvent::Joined { worker } => {
                if scheduler.session.worker_joined(worker) && !stopping {
                    scheduler.handoff_wanted = true;
                    scheduler.send_groups(link).await?;
                }
            }
            JobEvent::Leaving { worker } => {
                if scheduler.session.worker_leaving(worker) && !stopping {
                    scheduler.handoff_wanted = true;
                    scheduler.send_groups(link).await?;
                }
            }
            JobEvent::Lost { worker, name, pid, reason } => {
                let batch = scheduler.tracker.oldest_open_batch().unwrap_or(scheduler.next_batch);
                return Err(DriverError::WorkerLost { worker, name, pid, batch, reason });
            }
            JobEvent::Timeout => {
                if last_activity.elapsed() >= stage_timeout {
                    if let Some((batch, stage, workers)) = scheduler.tracker.waiting_on() {
                        // A batch still ahead of the clock is not late, only not yet due.
                        if job.clock.end_ms(batch) + (stage_timeout.as_millis() as i64) < now_ms() {
                            return Err(DriverError::StageTimeout {
                                stage,
                                batch,
                                timeout_s: stage_timeout.as_secs(),
                                workers,
                            });
                        }
                    }
                    last_activity = Instant::now();
                }
            }
        }
        if Instant::now() >= next_progress {
            next_progress = Instant::now() + PROGRESS_EVERY;
            let group_size = scheduler.policy.size();
            let overhead =
                scheduler.session.stats.last_group().map(|group| group.overhead_average.unwrap_or(group.overhead));
            link.publish_progress(scheduler.session, attempt, replies, |progress| {
                (progress.group_size, progress.overhead) = (Some(group_size), overhead);
            });
        }
    }
    // Ended early for joined workers: the coordinator moves partitions to them and goes on.
    let job_end = job.batches_total().unwrap_or(u64::MAX);
    if !stopping && scheduler.handoff_after.is_some_and(|batch| batch + 1 < job_end) {
        scheduler.session.handoff_after = scheduler.handoff_after;
    }
    Ok(())
}

impl GroupScheduler<'_> {
    /// Sends groups until `GROUPS_IN_FLIGHT` are out or the job's batches are all sent.
    async fn send_groups(&mut self, link: &JobLink<'_>) -> Result<(), DriverError> {
        while self.tracker.groups_in_flight() < GROUPS_IN_FLIGHT && self.next_batch < self.batch_limit {
            self.send_group(link).await?;
        }
        Ok(())
    }

    async fn send_group(&mut self, link: &JobLink<'_>) -> Result<(), DriverError> {
        let decided_at_us = now_us();
        let remaining = self.batch_limit - self.next_batch;
        let batch_count = (self.group_size(now_ms()) as u64).min(remaining) as u32;
        let last_batch = self.next_batch + batch_count as u64 - 1;
        let checkpoint_after = if self.handoff_wanted && self.handoff_after.is_none() {
            // The placement changes at a checkpoint: this group ends one and is the last.
            self.handoff_after = self.session.checkpoints.mark(last_batch, &self.job.clock);
            self.batch_limit = self.batch_limit.min(last_batch + 1);
            self.handoff_after
        } else {
            self.session.checkpoints.mark_if_due(last_batch, &self.job.clock)
        };
        let spec = GroupSpec {
            job: self.attempt.job,
            group: self.next_group,
            first_batch: self.next_batch,
            batch_count,
            checkpoint_after,
        };
        let stages = &self.job.physical.stages;
        let placement = &self.attempt.placement;
        let messages = compose_group(&spec, stages, placement, &self.addresses);
        let workers_messaged = messages.len();
        for (worker, launch) in messages {
            let message = EncodedMessage::new(&DriverToWorker::LaunchGroup(launch));
            self.session.stats.launched(now_us());
            link.send_to(worker, message, spec.first_batch).await?;
        }
        let tasks = group_tasks(&spec, stages, placement);
        // The tracker's bookkeeping grows with the group, so it counts as scheduling too.
        self.tracker.launched(spec, tasks, workers_messaged, now_ms());
        self.tracker.charge_schedule(spec.group, now_us() - decided_at_us);
        self.next_group += 1;
        self.next_batch += batch_count as u64;
        self.session.next_batch = self.session.next_batch.max(self.next_batch);
        Ok(())
    }

    /// The policy's size, except while a resumed attempt catches up: batches that closed
    /// while the job recovered go out in one group, so that every partition can run many
    /// of them at once instead of two groups' worth per round trip.
    fn group_size(&self, now_ms: i64) -> u32 {
        let size = self.policy.size();
        if self.attempt.number == 0 || self.job.clock.end_ms(self.next_batch) > now_ms {
            return size;
        }
        let closed = self.job.clock.closed_by(now_ms) + 1 - self.next_batch;
        (closed.min(CATCH_UP_GROUP_MAX as u64) as u32).max(size)
    }

    /// A batch is done: its output counts, and it may complete a checkpoint.
    fn batch_completed(&mut self, completed: CompletedBatch, now_ms: i64) -> Result<(), DriverError> {
        self.session.batch_completed(completed, self.attempt.job, None, now_ms)
    }

    /// Group boundaries: each finished group's measured overhead decides the size of the
    /// next group to send.
    fn close_finished_groups(&mut self, now_ms: i64) {
        for cost in self.tracker.take_finished_groups(now_ms) {
            self.close_group(cost);
        }
    }

    fn close_group(&mut self, cost: GroupCost) {
        let overhead = cost.overhead();
        let (_, overhead_average) = self.policy.observe(overhead, cost.spec.batch_count);
        self.session.stats.push_group(GroupRecord {
            group: cost.spec.group,
            first_batch: cost.spec.first_batch,
            size: cost.spec.batch_count,
            sent_at_ms: cost.sent_at_ms,
            completed_at_ms: cost.completed_at_ms,
            schedule_us: cost.schedule_us,
            register_us: cost.register_us,
            status_us: cost.status_us,
            coordination_wait_us: cost.coordination_wait_us,
            execute_us: cost.execute_us,
            overhead,
            overhead_average,
        });
    }

    /// Ends the job on a batch boundary: batches closing within `STOP_MARGIN_MS` still run,
    /// later ones are dropped on every worker before they can start.
    async fn stop(&mut self, link: &JobLink<'_>) {
        // The batches that close within the margin are as good as started: they still run.
        let due = self.job.clock.closed_by(now_ms() + STOP_MARGIN_MS);
        let last_sent = self.next_batch.saturating_sub(1);
        let last_batch = due.min(last_sent);
        self.batch_limit = self.batch_limit.min(last_batch + 1).min(self.next_batch);
        let truncate = EncodedMessage::new(&DriverToWorker::Truncate { job: self.attempt.job, last_batch });
        for worker in self.attempt.placement.workers() {
            if let Some(handle) = link.membership.get(*worker) {
                let _ = handle.send_encoded(truncate.clone()).await;
            }
        }
        self.tracker.truncate(last_batch);
        self.close_finished_groups(now_ms());
    }
}
