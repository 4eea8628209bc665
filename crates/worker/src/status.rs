//! The worker's one writer towards the driver, and how it batches status.
//!
//! Under group scheduling a worker holds the reports of a group's tasks until the last of
//! them is in, then sends them in one `Status` with the group's registration: the driver
//! receives O(workers) status messages per group, not one per task, so status handling is
//! amortized by the group size like the launch is. A group that runs long is reported at
//! least every `HELD_REPORTS_MAX_AGE`, so progress stays visible; a failed task is reported
//! at once. bsp tasks are reported as soon as they end, since the bsp driver waits on each.
//! Whatever else is queued while a message is being written goes out in the next one.
//! Reports arrive encoded (`EncodedReport`, made where the task ended), so holding and
//! sending them moves bytes, never whole reports.

use std::collections::BTreeMap;
use std::time::Duration;

use sleet_wire::{encode_status, EncodedReport, FrameKind, GroupRegistered, JobId, WireError, WorkerToDriver};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Bound on the entries one status message carries, so a backlog cannot build a huge frame.
const STATUS_ENTRIES_MAX: usize = 4096;
/// The longest a report waits for the rest of its group.
const HELD_REPORTS_MAX_AGE: Duration = Duration::from_secs(1);

pub enum Outgoing {
    /// A group's tasks were taken in; `tasks` of them will report.
    Registered {
        registered: GroupRegistered,
        tasks: usize,
    },
    Report(EncodedReport),
    /// Anything else, sent as is, after every status queued before it.
    Message(WorkerToDriver),
}

/// The reports of one group not sent yet.
struct HeldGroup {
    registered: Option<GroupRegistered>,
    /// Known once the registration is in: reports still to come.
    tasks_missing: Option<usize>,
    reports: Reports,
    held_since: Instant,
}

/// Encoded reports back to back, and how many.
#[derive(Debug, Default, PartialEq)]
struct Reports {
    count: usize,
    bytes: Vec<u8>,
}

impl Reports {
    fn push(&mut self, report: &EncodedReport) {
        self.count += 1;
        self.bytes.extend_from_slice(&report.bytes);
    }

    fn append(&mut self, other: &mut Reports) {
        self.count += std::mem::take(&mut other.count);
        self.bytes.append(&mut other.bytes);
    }
}

/// The next status message.
#[derive(Debug, Default, PartialEq)]
struct ReadyStatus {
    registered: Vec<GroupRegistered>,
    reports: Reports,
}

/// Pure bookkeeping of what is held and what is ready to send.
#[derive(Default)]
struct StatusBuffer {
    held: BTreeMap<(JobId, u64), HeldGroup>,
    ready: ReadyStatus,
}

impl StatusBuffer {
    fn take(&mut self, item: Outgoing, now: Instant) -> Option<WorkerToDriver> {
        match item {
            Outgoing::Registered { registered, tasks } => {
                let group = self.group(registered.job, registered.group, now);
                let reported = group.reports.count;
                group.tasks_missing = Some(tasks.saturating_sub(reported));
                group.registered = Some(registered);
                self.release_if_complete(registered.job, registered.group);
            }
            Outgoing::Report(report) => match report.group {
                None => self.ready.reports.push(&report),
                Some(group_id) => {
                    let (job, failed) = (report.job, report.failed);
                    let group = self.group(job, group_id, now);
                    group.reports.push(&report);
                    if let Some(missing) = group.tasks_missing.as_mut() {
                        *missing = missing.saturating_sub(1);
                    }
                    if failed {
                        self.release(job, group_id);
                    } else {
                        self.release_if_complete(job, group_id);
                    }
                }
            },
            Outgoing::Message(message) => {
                self.release_all();
                return Some(message);
            }
        }
        None
    }

    fn release_all(&mut self) {
        let all: Vec<(JobId, u64)> = self.held.keys().copied().collect();
        for (job, group) in all {
            self.release(job, group);
        }
    }

    fn group(&mut self, job: JobId, group: u64, now: Instant) -> &mut HeldGroup {
        self.held.entry((job, group)).or_insert_with(|| HeldGroup {
            registered: None,
            tasks_missing: None,
            reports: Reports::default(),
            held_since: now,
        })
    }

    fn release_if_complete(&mut self, job: JobId, group: u64) {
        if self.held.get(&(job, group)).is_some_and(|held| held.tasks_missing == Some(0)) {
            self.release(job, group);
        }
    }

    /// Moves what a group holds into the next message; the group stays tracked until its
    /// last report is in.
    fn release(&mut self, job: JobId, group: u64) {
        let Some(held) = self.held.get_mut(&(job, group)) else { return };
        self.ready.registered.extend(held.registered.take());
        self.ready.reports.append(&mut held.reports);
        if held.tasks_missing == Some(0) {
            self.held.remove(&(job, group));
        }
    }

    /// Releases groups held longer than `HELD_REPORTS_MAX_AGE`; returns when the next one is due.
    fn release_overdue(&mut self, now: Instant) -> Option<Instant> {
        let overdue: Vec<(JobId, u64)> = self
            .held
            .iter()
            .filter(|(_, held)| now.duration_since(held.held_since) >= HELD_REPORTS_MAX_AGE)
            .map(|(key, _)| *key)
            .collect();
        for (job, group) in overdue {
            self.release(job, group);
            if let Some(held) = self.held.get_mut(&(job, group)) {
                held.held_since = now;
            }
        }
        self.held.values().map(|held| held.held_since + HELD_REPORTS_MAX_AGE).min()
    }

    fn ready_len(&self) -> usize {
        self.ready.registered.len() + self.ready.reports.count
    }
}

pub async fn write_to_driver<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut queue: mpsc::Receiver<Outgoing>,
) -> Result<(), WireError> {
    let mut buffer = StatusBuffer::default();
    let mut closed = false;
    while !closed {
        let next_due = buffer.release_overdue(Instant::now());
        let first = match next_due {
            Some(due) => tokio::select! {
                item = queue.recv() => item,
                _ = tokio::time::sleep_until(due) => {
                    buffer.release_overdue(Instant::now());
                    send_ready(&mut writer, &mut buffer.ready).await?;
                    writer.flush().await?;
                    continue;
                }
            },
            None => queue.recv().await,
        };
        let mut next = first;
        if next.is_none() {
            // The runtime is shutting down: everything held goes out now.
            closed = true;
            buffer.release_all();
        }
        // One clock read per burst: `now` only dates when a group started being held.
        let now = Instant::now();
        while let Some(item) = next {
            if let Some(message) = buffer.take(item, now) {
                send_ready(&mut writer, &mut buffer.ready).await?;
                sleet_wire::write_binary(&mut writer, &message).await?;
            }
            if buffer.ready_len() >= STATUS_ENTRIES_MAX {
                send_ready(&mut writer, &mut buffer.ready).await?;
            }
            next = queue.try_recv().ok();
        }
        send_ready(&mut writer, &mut buffer.ready).await?;
        writer.flush().await?;
    }
    Ok(())
}

async fn send_ready<W: AsyncWrite + Unpin>(writer: &mut W, ready: &mut ReadyStatus) -> Result<(), WireError> {
    if ready.registered.is_empty() && ready.reports.count == 0 {
        return Ok(());
    }
    let ReadyStatus { registered, reports } = std::mem::take(ready);
    let payload = encode_status(&registered, reports.count, &reports.bytes);
    sleet_wire::write_frame(writer, FrameKind::Binary, &payload).await
}

#[cfg(test)]
mod tests {
    use sleet_plan::StageId;
    use sleet_wire::{decode_binary, TaskId, TaskOutcome, TaskReport, TaskStats};

    use super::*;

    fn report(group: Option<u64>, batch: u64, failed: bool) -> Outgoing {
        let outcome = if failed {
            TaskOutcome::Failed { reason: "boom".into() }
        } else {
            TaskOutcome::Succeeded(TaskStats::default())
        };
        Outgoing::Report(EncodedReport::new(&TaskReport {
            task: TaskId { job: 1, stage: StageId(0), partition: 0, batch },
            worker: 1,
            group,
            outcome,
            monotasks: Vec::new(),
            started_at_us: 0,
            finished_at_us: 0,
        }))
    }

    /// The batches of the reports in `ready`, read back from the status message it makes.
    fn batches(ready: &ReadyStatus) -> Vec<u64> {
        let payload = encode_status(&ready.registered, ready.reports.count, &ready.reports.bytes);
        match decode_binary::<WorkerToDriver>(&payload, "status").expect("a status decodes") {
            WorkerToDriver::Status(status) => status.reports.iter().map(|report| report.task.batch).collect(),
            other => panic!("not a status: {other:?}"),
        }
    }

    fn registered(group: u64, tasks: usize) -> Outgoing {
        Outgoing::Registered {
            registered: GroupRegistered { job: 1, group, register_us: 5, coordination_wait_us: 0 },
            tasks,
        }
    }

    /// Feeds items and returns, after each, the batches of the reports ready to send (and
    /// whether a registration is among them), emptying the ready batch.
    fn check(items: Vec<Outgoing>, expected: &[(&[u64], bool)]) {
        let mut buffer = StatusBuffer::default();
        let now = Instant::now();
        let mut seen = Vec::new();
        for item in items {
            buffer.take(item, now);
            let ready = std::mem::take(&mut buffer.ready);
            seen.push((batches(&ready), !ready.registered.is_empty()));
        }
        let expected: Vec<(Vec<u64>, bool)> = expected.iter().map(|(b, r)| (b.to_vec(), *r)).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_group_is_reported_once_its_last_task_is_in() {
        check(
            vec![registered(3, 2), report(Some(3), 30, false), report(Some(3), 31, false)],
            &[(&[], false), (&[], false), (&[30, 31], true)],
        );
    }

    #[test]
    fn reports_overtaking_their_registration_wait_for_it() {
        check(vec![report(Some(3), 30, false), registered(3, 1)], &[(&[], false), (&[30], true)]);
    }

    #[test]
    fn bsp_reports_and_failures_go_at_once() {
        check(
            vec![report(None, 7, false), registered(4, 3), report(Some(4), 40, true)],
            &[(&[7], false), (&[], false), (&[40], true)],
        );
    }

    #[test]
    fn a_long_group_is_reported_at_least_every_max_age() {
        let mut buffer = StatusBuffer::default();
        let start = Instant::now();
        buffer.take(registered(5, 3), start);
        buffer.take(report(Some(5), 50, false), start);
        assert_eq!(buffer.ready.reports.count, 0);
        let due = buffer.release_overdue(start).expect("a group is held");
        assert_eq!(due, start + HELD_REPORTS_MAX_AGE);
        buffer.release_overdue(due);
        assert_eq!(batches(&buffer.ready), vec![50]);
        assert_eq!(buffer.ready.registered.len(), 1);
        buffer.ready = ReadyStatus::default();
        buffer.take(report(Some(5), 51, false), due);
        buffer.take(report(Some(5), 52, false), due);
        assert_eq!(batches(&buffer.ready), vec![51, 52], "the rest follows when the group completes");
        assert!(buffer.held.is_empty());
    }

    #[test]
    fn other_messages_release_everything_held_first() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let written = runtime.block_on(async {
            let (queue_tx, queue) = mpsc::channel(16);
            queue_tx.send(registered(0, 5)).await.expect("queued");
            queue_tx.send(report(Some(0), 0, false)).await.expect("queued");
            queue_tx.send(report(None, 9, false)).await.expect("queued");
            queue_tx.send(Outgoing::Message(WorkerToDriver::JobEnded { job: 1 })).await.expect("queued");
            drop(queue_tx);
            let mut bytes = Vec::new();
            write_to_driver(&mut bytes, queue).await.expect("written");
            bytes
        });
        let mut reader = &written[..];
        let mut shape = Vec::new();
        runtime.block_on(async {
            while let Some(frame) =
                sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await.expect("frame")
            {
                shape.push(match frame.binary::<WorkerToDriver>("status").expect("decodes") {
                    WorkerToDriver::Status(status) => format!(
                        "status {} {:?}",
                        status.registered.len(),
                        status.reports.iter().map(|r| r.task.batch).collect::<Vec<_>>()
                    ),
                    WorkerToDriver::JobEnded { .. } => "ended".into(),
                    WorkerToDriver::Register { .. }
                    | WorkerToDriver::Heartbeat { .. }
                    | WorkerToDriver::Leaving { .. } => "other".into(),
                });
            }
        });
        assert_eq!(shape, vec!["status 1 [9, 0]", "ended"]);
    }
}
