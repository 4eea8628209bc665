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
use sleet_wire::clock::now_ms;
use sleet_wire::{
    BatchRecord, DriverToClient, DriverToWorker, JobSummary, TaskDescriptor, TaskId, TaskInput, WorkerId,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::barrier::StageBarrier;
use crate::batch_ledger::{BatchLedger, Taken};
use crate::error::DriverError;
use crate::intake::take_reports;
use crate::job_link::{JobEvent, JobLink, RunningJob};
use crate::membership::EncodedMessage;
use crate::placement::Placement;
use crate::progress::JobStats;

const PROGRESS_EVERY_MS: i64 = 1000;

pub async fn run(
    link: &mut JobLink<'_>,
    job: &RunningJob,
    workers: &[WorkerId],
    replies: &mpsc::Sender<DriverToClient>,
) -> Result<JobSummary, DriverError> {
    let placement = Placement::new(workers.to_vec());
    let stages = &job.physical.stages;
    let first_stage = stages.first().expect("a plan has a stage").id;
    let last_stage = stages.last().expect("a plan has a stage").id;
    let mut ledger = BatchLedger::new(job.clock, first_stage, last_stage);
    let mut stats = JobStats::new(job.job, job.clock.start_ms, job.settings.scheduler);
    let mut last_progress_ms = now_ms();
    let mut batch: u64 = 0;
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
            }
        }
        ledger.open(batch, None, placement.batch_tasks(job.job, batch, stages));
        let mut completed: Option<BatchRecord> = None;
        let mut upstream: Option<StageBarrier> = None;
        for stage in stages {
            let mut tasks = Vec::with_capacity(stage.partitions as usize);
            for partition in 0..stage.partitions {
                let task = TaskId { job: job.job, stage: stage.id, partition, batch };
                let input = match &stage.input {
                    StageInput::Source(_) => TaskInput::Source,
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
                link.send_to(worker, launch, batch).await?;
                tasks.push((task, worker));
            }
            let mut barrier = StageBarrier::new(tasks);
            let deadline = Instant::now() + job.stage_timeout;
            while !barrier.is_done() {
                match link.next_event(deadline).await {
                    JobEvent::Status(status, _) => {
                        let taken = take_reports(&status, &mut stats, now_ms(), |report, task_stats| {
                            let address = link.shuffle_address(report.worker).unwrap_or_default();
                            barrier.complete(report.task, task_stats, report.worker, address);
                            match ledger.report(report, task_stats) {
                                Taken::Ignored => false,
                                Taken::Counted => true,
                                Taken::Completed(record) => {
                                    completed = Some(record);
                                    true
                                }
                            }
                        });
                        if let Err(failure) = taken {
                            return Err(link.explain_failure(failure, batch).await);
                        }
                    }
                    // A stop waits for the batch in flight, so the output ends on a batch boundary.
                    JobEvent::Stop => {
                        return finish_after_stop(link, barrier, &mut ledger, stats, deadline).await;
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
                }
            }
            upstream = Some(barrier);
        }
        stats.push_batch(completed.expect("the last stage's last report completes the batch"));
        batch += 1;
        let now = now_ms();
        if now - last_progress_ms >= PROGRESS_EVERY_MS {
            last_progress_ms = now;
            let _ = replies.try_send(DriverToClient::Progress(stats.progress(now)));
        }
    }
    Ok(stats.summary(now_ms()))
}

/// A stop arrived mid-batch: the stage in flight still completes (the later stages are not
/// launched, so the batch is dropped from the record) and the job ends cleanly.
async fn finish_after_stop(
    link: &mut JobLink<'_>,
    mut barrier: StageBarrier,
    ledger: &mut BatchLedger,
    mut stats: JobStats,
    deadline: Instant,
) -> Result<JobSummary, DriverError> {
    while !barrier.is_done() {
        match link.next_event(deadline).await {
            JobEvent::Status(status, _) => {
                let taken = take_reports(&status, &mut stats, now_ms(), |report, task_stats| {
                    barrier.complete(report.task, task_stats, report.worker, "")
                        && ledger.report(report, task_stats) != Taken::Ignored
                });
                if taken.is_err() {
                    break;
                }
            }
            JobEvent::Timeout | JobEvent::Lost { .. } => break,
            JobEvent::Stop | JobEvent::Ended { .. } => {}
        }
    }
    Ok(stats.summary(now_ms()))
}
