//! Talking to a driver as a client: submit a job, follow its progress, stop it.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sleet_plan::JobFile;
use sleet_wire::{ClientRequest, Connection, DriverToClient, JobId, JobProgress, JobSummary, Role};

use crate::interrupt::Interrupted;

/// Runs `job` until it ends or Ctrl-C, printing a status line for each progress report
/// once batches complete: what the benchmarks show while they run.
pub async fn run_job_with_status(driver_address: &str, job: JobFile) -> Result<JobSummary> {
    let started = std::time::Instant::now();
    let mut notices = crate::state_report::StateFullNotices::default();
    let on_progress = |progress: &JobProgress| {
        if progress.batches_done > 0 {
            crate::entry::say(&status_line(started.elapsed(), progress));
        }
        for notice in notices.new_notices(progress) {
            crate::entry::say(&format!("  {notice}"));
        }
    };
    run_job(driver_address, job, on_progress, crate::interrupt::wait()).await
}

/// `" | group 8, overhead 6.1% | bottleneck cpu | state 1 200 keys 96.0 kB"` for status lines:
/// the group under group scheduling (nothing under bsp), what limits the job now, once the
/// driver knows, and the size of a stateful job's state.
pub fn status_tail(progress: &JobProgress) -> String {
    let group = match (progress.group_size, progress.overhead) {
        (Some(size), Some(overhead)) => format!(" | group {size}, overhead {:.1}%", overhead * 100.0),
        (Some(size), None) => format!(" | group {size}"),
        _ => String::new(),
    };
    let bottleneck = progress.bottleneck.as_ref().map_or(String::new(), |name| format!(" | bottleneck {name}"));
    // Rows behind the watermark are lost to the results: shown as soon as there is one, since
    // a source whose partitions drift apart loses them with no other sign (docs/jobs.md).
    let late = match progress.late_rows_dropped {
        0 => String::new(),
        rows => format!(" | late rows dropped {rows}"),
    };
    // Backpressure holding the sources back: the job cannot keep up with its input.
    let bound = progress.read_bound.map_or(String::new(), |records| format!(" | reading ≤ {records}/partition"));
    group + &bound + &bottleneck + &late + &crate::state_report::state_status(progress.state.as_ref())
}

/// A running job's status line, printed on each progress report: the last second's rate, the
/// totals so far, the lag, the recent window latency, the scheduler's group and what the
/// source waits for, if anything.
pub fn status_line(elapsed: Duration, progress: &JobProgress) -> String {
    format!(
        "  [{:>4} s] {:>9.0} events/s  batches {:>6}  events in {:>10}  lag {:>6} ms  window p99 {}  dead letters {}{}{}",
        elapsed.as_secs(),
        progress.events_per_s,
        progress.batches_done,
        progress.events_in,
        progress.lag_ms,
        progress.window_latency_ms_p99.map_or("-".into(), |v| format!("{v:.0} ms")),
        progress.dead_letters,
        status_tail(progress),
        progress.source_waiting.as_ref().map_or(String::new(), |note| format!("  | source waiting: {note}"))
    )
}

/// How long a client that lost its driver keeps trying to reach it again: a restarted
/// driver resumes the job once its workers re-register, which they try for 30 s by default.
pub const DRIVER_RECONNECT: Duration = Duration::from_secs(60);
/// Pause between attempts to reach a driver that went away.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// Submits `job` and waits for its end. `stop` resolving (e.g. on Ctrl-C) asks the driver to
/// stop the job, and the summary of what ran still arrives; before the driver has accepted the
/// job (it may be waiting for workers) there is nothing to summarize, so the connection is
/// dropped, which withdraws the job, and the result is `Interrupted`.
///
/// A connection lost after the job was accepted is not the job's end: the driver may have
/// died and be restarted with its state directory, which resumes the job. The client then
/// reconnects for up to `DRIVER_RECONNECT` and attaches to the job, so the summary still
/// arrives here; failing that, it says how to follow the job later (`sleet attach`).
pub async fn run_job(
    driver_address: &str,
    job: JobFile,
    on_progress: impl FnMut(&JobProgress),
    stop: impl Future<Output = ()>,
) -> Result<JobSummary> {
    follow(driver_address, ClientRequest::Submit(Box::new(job)), None, on_progress, stop).await
}

/// Follows a job submitted earlier, to a driver that may have restarted since, until it ends.
pub async fn attach_job(
    driver_address: &str,
    job: JobId,
    on_progress: impl FnMut(&JobProgress),
    stop: impl Future<Output = ()>,
) -> Result<JobSummary> {
    follow(driver_address, ClientRequest::Attach { job }, Some(job), on_progress, stop).await
}

async fn follow(
    driver_address: &str,
    first: ClientRequest,
    mut job_id: Option<JobId>,
    mut on_progress: impl FnMut(&JobProgress),
    stop: impl Future<Output = ()>,
) -> Result<JobSummary> {
    let mut connection = Connection::connect(driver_address, Role::Client)
        .await
        .with_context(|| format!("connecting to the driver at {driver_address}"))?;
    connection.send(&first).await.context("sending the request")?;
    tokio::pin!(stop);
    let mut stop_sent = false;
    loop {
        let frame = tokio::select! {
            frame = connection.recv() => frame,
            _ = &mut stop, if !stop_sent => {
                stop_sent = true;
                let Some(job) = job_id else { return Err(Interrupted.into()) };
                connection.send(&ClientRequest::Stop { job }).await.context("asking the driver to stop")?;
                continue;
            }
        };
        let lost = match frame {
            Ok(Some(frame)) => Ok(frame),
            Ok(None) => Err("it closed the connection".to_string()),
            Err(error) => Err(format!("reading from it failed: {error}")),
        };
        let frame = match lost {
            Ok(frame) => frame,
            Err(reason) => {
                let Some(job) = job_id else {
                    bail!("lost the driver at {driver_address} before it accepted the job: {reason}")
                };
                crate::entry::say(&format!(
                    "sleet: lost the driver at {driver_address} ({reason}); trying for up to {} s to follow job {job} on a restarted driver",
                    DRIVER_RECONNECT.as_secs()
                ));
                connection = reattach(driver_address, job).await?;
                if stop_sent {
                    connection.send(&ClientRequest::Stop { job }).await.context("asking the driver to stop")?;
                }
                continue;
            }
        };
        match frame.control::<DriverToClient>("driver reply")? {
            DriverToClient::Accepted { job, .. } => job_id = Some(job),
            DriverToClient::Rejected { reason } => bail!("the driver rejected the request: {reason}"),
            DriverToClient::Progress(progress) => on_progress(&progress),
            DriverToClient::Finished(summary) => return Ok(*summary),
            DriverToClient::Failed { job, reason } => bail!("job {job} failed: {reason}"),
        }
    }
}

/// Connects again to a driver that went away and asks to follow `job`, for up to
/// `DRIVER_RECONNECT`.
async fn reattach(driver_address: &str, job: JobId) -> Result<Connection> {
    let deadline = tokio::time::Instant::now() + DRIVER_RECONNECT;
    loop {
        match Connection::connect(driver_address, Role::Client).await {
            Ok(mut connection) => {
                connection.send(&ClientRequest::Attach { job }).await.context("attaching to the job")?;
                return Ok(connection);
            }
            Err(error) if tokio::time::Instant::now() >= deadline => {
                return Err(error).with_context(|| {
                    format!(
                        "the driver at {driver_address} did not come back within {} s; if it is restarted with \
                         its state directory it resumes job {job}: follow it with `sleet attach {job} --driver \
                         {driver_address}`",
                        DRIVER_RECONNECT.as_secs()
                    )
                })
            }
            Err(_) => tokio::time::sleep(RECONNECT_PAUSE).await,
        }
    }
}

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

/// One line on a driver restart, for people: when it came back and where the job resumed.
pub fn describe_restart(restart: &sleet_wire::RestartRecord) -> String {
    let from = match restart.checkpoint_batch {
        Some(batch) => format!("the checkpoint after batch {batch}"),
        None => "the job's start (no checkpoint yet)".to_string(),
    };
    let figures = if restart.figures_restored { "" } else { "; the figures before it were not kept" };
    format!(
        "the driver restarted (restart {}) at {} ms and resumed the job at batch {} from {} as attempt {}{figures}",
        restart.restart, restart.at_ms, restart.resume_batch, from, restart.attempt
    )
}

/// Which driver a recovery or rebalance happened under, for a job whose driver restarted.
pub fn under_driver(restarted: bool, driver_restarts: u32) -> String {
    match (restarted, driver_restarts) {
        (false, _) => String::new(),
        (true, 0) => " [before the first driver restart]".to_string(),
        (true, restarts) => format!(" [after driver restart {restarts}]"),
    }
}

/// One line on a recovery, for people: what was lost, where the job resumed, what ran again.
pub fn describe_recovery(recovery: &sleet_wire::RecoveryRecord) -> String {
    let from = match recovery.checkpoint_batch {
        Some(batch) => format!("the checkpoint after batch {batch}"),
        None => "the job's start (no checkpoint yet)".to_string(),
    };
    format!(
        "recovered from losing worker {} ({}): resumed at batch {} from {} on workers {:?}, {} batches re-run ({} source tasks reused from survivors' outputs), {} partitions moved",
        recovery.lost_worker,
        recovery.reason,
        recovery.resume_batch,
        from,
        recovery.workers,
        recovery.rerun_batches,
        recovery.reused_map_tasks,
        recovery.moves.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_rows_appear_in_the_status_once_there_are_any() {
        let mut progress = JobProgress { group_size: Some(4), ..JobProgress::default() };
        assert_eq!(status_tail(&progress), " | group 4");
        progress.late_rows_dropped = 2_600;
        assert_eq!(status_tail(&progress), " | group 4 | late rows dropped 2600");
        assert!(status_line(Duration::from_secs(3), &progress).contains("late rows dropped 2600"));
    }

    #[test]
    fn a_read_bound_shows_while_backpressure_holds_the_sources_back() {
        let progress = JobProgress { group_size: Some(4), read_bound: Some(16_000), ..JobProgress::default() };
        assert_eq!(status_tail(&progress), " | group 4 | reading ≤ 16000/partition");
    }
}
