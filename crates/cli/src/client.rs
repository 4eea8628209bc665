//! Talking to a driver as a client: submit a job, follow its progress, stop it.

use std::future::Future;

use anyhow::{bail, Context, Result};
use sleet_plan::JobFile;
use sleet_wire::{ClientRequest, Connection, DriverToClient, JobProgress, JobSummary, Role};

use crate::interrupt::Interrupted;

/// Runs `job` until it ends or Ctrl-C, printing a status line for each progress report
/// once batches complete: what the benchmarks show while they run.
pub async fn run_job_with_status(driver_address: &str, job: JobFile) -> Result<JobSummary> {
    let started = std::time::Instant::now();
    let on_progress = |progress: &JobProgress| {
        if progress.batches_done > 0 {
            eprintln!("{}", crate::bench_ysb::status_line(started.elapsed(), progress));
        }
    };
    run_job(driver_address, job, on_progress, crate::interrupt::wait()).await
}

/// Submits `job` and waits for its end. `stop` resolving (e.g. on Ctrl-C) asks the driver to
/// stop the job, and the summary of what ran still arrives; before the driver has accepted the
/// job (it may be waiting for workers) there is nothing to summarize, so the connection is
/// dropped, which withdraws the job, and the result is `Interrupted`.
pub async fn run_job(
    driver_address: &str,
    job: JobFile,
    mut on_progress: impl FnMut(&JobProgress),
    stop: impl Future<Output = ()>,
) -> Result<JobSummary> {
    let mut connection = Connection::connect(driver_address, Role::Client)
        .await
        .with_context(|| format!("connecting to the driver at {driver_address}"))?;
    connection.send(&ClientRequest::Submit(Box::new(job))).await.context("submitting the job")?;
    tokio::pin!(stop);
    let mut stop_sent = false;
    let mut job_id = None;
    loop {
        let frame = tokio::select! {
            frame = connection.recv() => frame.context("reading from the driver")?,
            _ = &mut stop, if !stop_sent => {
                stop_sent = true;
                let Some(job) = job_id else { return Err(Interrupted.into()) };
                connection.send(&ClientRequest::Stop { job }).await.context("asking the driver to stop")?;
                continue;
            }
        };
        let Some(frame) = frame else { bail!("the driver closed the connection before the job ended") };
        match frame.control::<DriverToClient>("driver reply")? {
            DriverToClient::Accepted { job, .. } => job_id = Some(job),
            DriverToClient::Rejected { reason } => bail!("the driver rejected the job: {reason}"),
            DriverToClient::Progress(progress) => on_progress(&progress),
            DriverToClient::Finished(summary) => return Ok(*summary),
            DriverToClient::Failed { job, reason } => bail!("job {job} failed: {reason}"),
        }
    }
}

/// One line on a recovery, for people: what was lost, where the job resumed, what ran again.
/// One line about workers that joined or left a running job and the partitions that moved.
pub fn describe_rebalance(rebalance: &sleet_wire::RebalanceRecord) -> String {
    let mut who = Vec::new();
    if !rebalance.joined.is_empty() {
        who.push(format!("workers {:?} joined", rebalance.joined));
    }
    if !rebalance.left.is_empty() {
        who.push(format!("workers {:?} left", rebalance.left));
    }
    format!(
        "{}: at the checkpoint after batch {}, partitions {:?} moved; the job went on at batch {} on workers {:?}, {} batches re-run",
        who.join(" and "),
        rebalance.checkpoint_batch,
        rebalance.moves.iter().map(|(partition, _, _)| *partition).collect::<Vec<_>>(),
        rebalance.resume_batch,
        rebalance.workers,
        rebalance.rerun_batches
    )
}

pub fn describe_recovery(recovery: &sleet_wire::RecoveryRecord) -> String {
    let from = match recovery.checkpoint_batch {
        Some(batch) => format!("the checkpoint after batch {batch}"),
        None => "the job's start (no checkpoint yet)".to_string(),
    };
    format!(
        "recovered from losing worker {} ({}): resumed at batch {} from {} on workers {:?}, {} batches re-run, {} partitions moved",
        recovery.lost_worker,
        recovery.reason,
        recovery.resume_batch,
        from,
        recovery.workers,
        recovery.rerun_batches,
        recovery.moves.len()
    )
}
