//! The bsp scheduler: Spark Streaming's way of running a batch, kept as the baseline.
//!
//! Per batch: wait for the batch to close, send every task of stage 0 in its own message with
//! the source range the driver chose, wait at a barrier until all report, then send the next
//! stage's tasks with the block locations the barrier collected, and so on. The driver pays
//! one message per task and one round trip per stage; that cost is what group scheduling
//! removes.

use std::time::Duration;

use sleet_plan::StageInput;
use sleet_wire::clock::now_ms;
use sleet_wire::{
    BatchRecord, DriverToClient, DriverToWorker, JobSummary, TaskDescriptor, TaskId, TaskInput, TaskOutcome, WorkerId,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::barrier::StageBarrier;
use crate::coordinator::{Coordinator, JobEvent, RunningJob};
use crate::error::DriverError;
use crate::membership::EncodedMessage;
use crate::placement::Placement;
use crate::progress::JobStats;

const PROGRESS_EVERY_MS: i64 = 1000;

pub async fn run(
    coordinator: &mut Coordinator,
    job: &RunningJob,
    workers: &[WorkerId],
    replies: &mpsc::Sender<DriverToClient>,
) -> Result<JobSummary, DriverError> {
    let placement = Placement::new(workers.to_vec());
    let mut stats = JobStats::new(job.job, job.start_ms, job.settings.scheduler);
    let batches_total = job.batches_total().map(|total| total as i64);
    let stage_timeout = Duration::from_secs(coordinator.config.stage_timeout_s);
    let mut last_progress_ms = now_ms();
    let mut batch: u64 = 0;
    'batches: loop {
        if batches_total.is_some_and(|total| batch as i64 >= total) {
            break;
        }
        let (batch_start_ms, batch_end_ms) = job.batch_range_ms(batch);
        // The batch closes at its end; until then the driver only listens.
        while now_ms() < batch_end_ms {
            let wake = Instant::now() + Duration::from_millis((batch_end_ms - now_ms()).max(0) as u64);
            match coordinator.next_job_event(job.job, job.client, wake).await {
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
            }
        }
        let launched_at_ms = now_ms();
        let mut record =
            BatchRecord { batch, scheduled_end_ms: batch_end_ms, launched_at_ms, ..BatchRecord::default() };
        let mut upstream: Option<StageBarrier> = None;
        let stage_count = job.physical.stages.len();
        for (stage_index, stage) in job.physical.stages.iter().enumerate() {
            let stage_started_ms = now_ms();
            let mut tasks = Vec::with_capacity(stage.partitions as usize);
            for partition in 0..stage.partitions {
                let task = TaskId { job: job.job, stage: stage.id, partition, batch };
                let input = match &stage.input {
                    StageInput::Source(_) => TaskInput::SourceRange { start_ms: batch_start_ms, end_ms: batch_end_ms },
                    StageInput::Shuffle { .. } => TaskInput::Shuffle {
                        blocks: upstream
                            .as_mut()
                            .and_then(|barrier| barrier.blocks_by_reduce_partition.remove(&partition))
                            .unwrap_or_default(),
                    },
                };
                let worker = placement.worker_of(partition);
                stats.launched(sleet_wire::clock::now_us());
                let launch = EncodedMessage::new(&DriverToWorker::LaunchTask(TaskDescriptor { task, input }));
                coordinator.send_to(worker, launch, batch).await?;
                tasks.push((task, worker));
            }
            let mut barrier = StageBarrier::new(tasks);
            let deadline = Instant::now() + stage_timeout;
            while !barrier.is_done() {
                match coordinator.next_job_event(job.job, job.client, deadline).await {
                    JobEvent::Status(status, _) => {
                        for report in status.reports {
                            let worker = report.worker;
                            match report.outcome {
                                TaskOutcome::Succeeded(task_stats) => {
                                    let address = coordinator
                                        .membership
                                        .get(worker)
                                        .map(|handle| handle.shuffle_address.clone())
                                        .unwrap_or_default();
                                    let (events, dead_letters) =
                                        stats.add_task(&task_stats, &report.monotasks, now_ms());
                                    record.events_in += events;
                                    record.dead_letters += dead_letters;
                                    record.finished_at_us = record.finished_at_us.max(report.finished_at_us);
                                    barrier.complete(report.task, task_stats, worker, &address);
                                }
                                TaskOutcome::Failed { reason } => {
                                    return Err(coordinator
                                        .explain_failure(job, report.task, worker, reason, batch)
                                        .await)
                                }
                            }
                        }
                    }
                    // A stop waits for the batch in flight, so the output ends on a batch boundary.
                    JobEvent::Stop => {
                        return finish_after_stop(coordinator, job, barrier, stats, deadline).await;
                    }
                    JobEvent::Lost { worker, name, pid, reason } => {
                        return Err(DriverError::WorkerLost { worker, name, pid, batch, reason })
                    }
                    JobEvent::Timeout => {
                        return Err(DriverError::StageTimeout {
                            stage: stage.id,
                            batch,
                            timeout_s: stage_timeout.as_secs(),
                            workers: barrier.waiting_on(),
                        })
                    }
                    JobEvent::Ended { .. } => {}
                }
            }
            let stage_ms = (now_ms() - stage_started_ms) as f64;
            if stage_index == 0 {
                record.map_stage_ms = stage_ms;
            }
            if stage_index + 1 == stage_count && stage_count > 1 {
                record.reduce_stage_ms = stage_ms;
            }
            upstream = Some(barrier);
        }
        record.finished_at_ms = now_ms();
        stats.push_batch(record);
        batch += 1;
        let now = now_ms();
        if now - last_progress_ms >= PROGRESS_EVERY_MS {
            last_progress_ms = now;
            let _ = replies.try_send(DriverToClient::Progress(stats.progress(now)));
        }
    }
    Ok(stats.summary(now_ms()))
}

/// A stop arrived mid-batch: the batch still completes (its later stages are not launched,
/// so it is dropped from the record) and the job ends cleanly.
async fn finish_after_stop(
    coordinator: &mut Coordinator,
    job: &RunningJob,
    mut barrier: StageBarrier,
    mut stats: JobStats,
    deadline: Instant,
) -> Result<JobSummary, DriverError> {
    while !barrier.is_done() {
        match coordinator.next_job_event(job.job, job.client, deadline).await {
            JobEvent::Status(status, _) => {
                for report in status.reports {
                    if let TaskOutcome::Succeeded(task_stats) = report.outcome {
                        stats.add_task(&task_stats, &report.monotasks, now_ms());
                        barrier.complete(report.task, task_stats, report.worker, "");
                    }
                }
            }
            JobEvent::Timeout | JobEvent::Lost { .. } => break,
            JobEvent::Stop | JobEvent::Ended { .. } => {}
        }
    }
    Ok(stats.summary(now_ms()))
}
