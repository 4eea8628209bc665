//! The bsp scheduler: Spark Streaming's way of running a batch, kept as the baseline.
//!
//! Per batch: wait for the batch to close, send every task of stage 0 in its own message,
//! wait at a barrier until all report, then send the next stage's tasks with the block
//! locations the barrier collected, and so on. The driver pays one message per task and one
//! round trip per stage; that cost is what group scheduling removes. As under group
//! scheduling, a source task's worker chooses what the batch reads and reports it; the
//! driver only decides when the task is sent.

use std::time::Duration;

use sleet_plan::StageInput;
use sleet_wire::clock::{now_ms, now_us};
use sleet_wire::{DriverToClient, DriverToWorker, TaskDescriptor, TaskId, TaskInput};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::barrier::StageBarrier;
use crate::batch_ledger::{BatchLedger, CompletedBatch, Taken};
use crate::error::DriverError;
use crate::job_link::{Attempt, JobEvent, JobLink, JobSession, RunningJob};
use crate::membership::EncodedMessage;

const PROGRESS_EVERY_MS: i64 = 1000;

/// Runs one attempt of a job until its last batch is done, it is stopped, or it fails; a lost
/// worker ends it with `DriverError::WorkerLost`, from which the coordinator recovers.
pub async fn run(
    link: &mut JobLink<'_>,
    job: &RunningJob,
    attempt: &Attempt,
    session: &mut JobSession,
    replies: &mpsc::Sender<DriverToClient>,
) -> Result<(), DriverError> {
    let placement = &attempt.placement;
    let stages = &job.physical.stages;
    let first_stage = stages.first().expect("a plan has a stage").id;
    let last_stage = stages.last().expect("a plan has a stage").id;
    let mut ledger = BatchLedger::new(job.clock, first_stage, last_stage);
    session.stats.attempt_started(link.cluster_shape(attempt, &job.clock));
    let mut last_progress_ms = now_ms();
    let mut batch: u64 = attempt.first_batch;
    // Workers joined: the next batch ends with a checkpoint, and the attempt with it.
    let mut handoff_wanted = false;
    'batches: loop {
        if job.batches_total().is_some_and(|total| batch >= total) {
            break;
        }
        let batch_end_ms = job.clock.end_ms(batch);
        // The batch closes at its end; until then the driver only listens.
        while now_ms() < batch_end_ms {
            let wake = Instant::now() + Duration::from_millis((batch_end_ms - now_ms()).max(0) as u64);
            match link.next_event(wake).await {
                JobEvent::Timeout => {}
                JobEvent::Stop => break 'batches,
                JobEvent::Lost { worker, name, pid, reason } => {
                    return Err(DriverError::WorkerLost { worker, name, pid, batch, reason })
                }
                JobEvent::Status(status, _) => {
                    if let Some(report) = status.reports.first() {
                        return Err(DriverError::TaskFailed {
                            task: report.task,
                            worker: report.worker,
                            reason: "reported a task that was not running".into(),
                        });
                    }
                }
                JobEvent::Ended { .. } => {}
                JobEvent::Joined { worker } => handoff_wanted |= session.worker_joined(worker),
                JobEvent::Leaving { worker } => handoff_wanted |= session.worker_leaving(worker),
            }
        }
        ledger.open(batch, None, placement.batch_tasks(attempt.job, batch, stages));
        session.next_batch = session.next_batch.max(batch + 1);
        let handoff = handoff_wanted && job.batches_total().is_none_or(|total| batch + 1 < total);
        let checkpoint = if handoff {
            session.checkpoints.mark(batch, &job.clock).is_some()
        } else {
            session.checkpoints.mark_if_due(batch, &job.clock).is_some()
        };
        let mut completed: Option<CompletedBatch> = None;
        let mut upstream: Option<StageBarrier> = None;
        // The driver's own time on this batch: composing and sending its launches, decoding
        // and taking in its reports. The performance model's coordination term, as a group's
        // schedule and status time is under group scheduling.
        let mut coordination_us = 0;
        for stage in stages {
            let launch_started_us = now_us();
            let mut tasks = Vec::with_capacity(stage.partitions as usize);
            for partition in 0..stage.partitions {
                let task = TaskId { job: attempt.job, stage: stage.id, partition, batch };
                let input = match &stage.input {
                    StageInput::Source(_) => TaskInput::Source,
                    StageInput::Shuffle { .. } => TaskInput::Shuffle {
                        blocks: upstream
                            .as_mut()
                            .and_then(|barrier| barrier.blocks_by_reduce_partition.remove(&partition))
                            .unwrap_or_default(),
                        event_times: upstream.as_ref().map(|barrier| barrier.event_times.clone()).unwrap_or_default(),
                    },
                };
                let worker = placement.worker_of(partition);
                session.stats.launched(now_us());
                let descriptor = TaskDescriptor { task, input, checkpoint };
                let launch = EncodedMessage::new(&DriverToWorker::LaunchTask(descriptor));
                link.send_to(worker, launch, batch).await?;
                tasks.push((task, worker));
            }
            coordination_us += now_us() - launch_started_us;
            let mut barrier = StageBarrier::new(tasks);
            let deadline = Instant::now() + job.stage_timeout;
            while !barrier.is_done() {
                match link.next_event(deadline).await {
                    JobEvent::Status(status, decode_us) => {
                        let handling_started_us = now_us();
                        let taken = session.take_reports(&status, attempt.job, |report, task_stats| {
                            let address = link.shuffle_address(report.worker).unwrap_or_default();
                            barrier.complete(report.task, task_stats, report.worker, address);
                            match ledger.report(report, task_stats) {
                                Taken::Ignored => false,
                                Taken::Counted => true,
                                Taken::Completed(record) => {
                                    completed = Some(*record);
                                    true
                                }
                            }
                        });
                        if let Err(failure) = taken {
                            return Err(link.explain_failure(failure, batch).await);
                        }
                        coordination_us += decode_us + (now_us() - handling_started_us);
                    }
                    // A stop waits for the batch in flight, so the output ends on a batch boundary.
                    JobEvent::Stop => {
                        return finish_after_stop(link, attempt, barrier, &mut ledger, session, deadline).await;
                    }
                    JobEvent::Lost { worker, name, pid, reason } => {
                        return Err(DriverError::WorkerLost { worker, name, pid, batch, reason })
                    }
                    JobEvent::Timeout => {
                        return Err(DriverError::StageTimeout {
                            stage: stage.id,
                            batch,
                            timeout_s: job.stage_timeout.as_secs(),
                            workers: barrier.waiting_on(),
                        })
                    }
                    JobEvent::Ended { .. } => {}
                    JobEvent::Joined { worker } => handoff_wanted |= session.worker_joined(worker),
                    JobEvent::Leaving { worker } => handoff_wanted |= session.worker_leaving(worker),
                }
            }
            upstream = Some(barrier);
        }
        let completed = completed.expect("the last stage's last report completes the batch");
        let now = now_ms();
        session.batch_completed(completed, attempt.job, Some(coordination_us), now)?;
        link.tell_workers(session, attempt).await;
        if handoff {
            // The placement changes at this checkpoint; the coordinator goes on from it.
            session.handoff_after = Some(batch);
            return Ok(());
        }
        batch += 1;
        if now - last_progress_ms >= PROGRESS_EVERY_MS {
            last_progress_ms = now;
            link.publish_progress(session, attempt, replies, |_| {});
        }
    }
    Ok(())
}

/// A stop arrived mid-batch: the stage in flight still completes (the later stages are not
/// launched, so the batch is dropped from the record) and the job ends cleanly.
async fn finish_after_stop(
    link: &mut JobLink<'_>,
    attempt: &Attempt,
    mut barrier: StageBarrier,
    ledger: &mut BatchLedger,
    session: &mut JobSession,
    deadline: Instant,
) -> Result<(), DriverError> {
    while !barrier.is_done() {
        match link.next_event(deadline).await {
            JobEvent::Status(status, _) => {
                let taken = session.take_reports(&status, attempt.job, |report, task_stats| {
                    barrier.complete(report.task, task_stats, report.worker, "")
                        && ledger.report(report, task_stats) != Taken::Ignored
                });
                if taken.is_err() {
                    break;
                }
            }
            JobEvent::Timeout | JobEvent::Lost { .. } => break,
            JobEvent::Stop | JobEvent::Ended { .. } | JobEvent::Joined { .. } | JobEvent::Leaving { .. } => {}
        }
    }
    Ok(())
}
