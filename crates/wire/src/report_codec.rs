//! How a `TaskReport` travels: its monotask times relative to the task's start.
//! Its outcome travels as `outcome_codec` writes it: only the stats fields a task filled.
//!
//! Reports are the bulk of the status traffic (one per task, a few thousand a second per
//! worker at millisecond batches). Absolute timestamps are microseconds since the epoch,
//! eight bytes each as a varint, and a report carries two of its own plus three per
//! monotask. Sent as offsets from the task's start they take one or two bytes, which
//! halves the report and the work of encoding it on the worker and decoding it on the
//! driver, whose single thread reads every report of the cluster.
//!
//! A worker encodes each report once, when its task ends (`EncodedReport`), and its status
//! writer only concatenates them into a `Status` message (`encode_status`): the report, a
//! few hundred bytes with its heap parts, is freed at once instead of being moved through
//! the writer's queue and buffers, which cost more than encoding it.

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use sleet_monotask::{MonotaskKind, MonotaskRecord, Resource};

use crate::frame::{encode_binary, encode_binary_onto};
use crate::message::{GroupRegistered, JobId, StatusBatch, TaskId, TaskOutcome, TaskReport, WorkerId, WorkerToDriver};
use crate::outcome_codec::{OutcomeFromWire, OutcomeOnWire};

/// One monotask, its times as offsets: queued after the task started, waited, ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct MonotaskSpan {
    kind: MonotaskKind,
    resource: Resource,
    bytes: u64,
    queued_after_us: i64,
    queue_us: i64,
    run_us: i64,
}

// The in-place decode below relies on it; a field added to one and not the other would
// quietly bring back an allocation per report.
const _: () = assert!(
    std::mem::size_of::<MonotaskSpan>() == std::mem::size_of::<MonotaskRecord>()
        && std::mem::align_of::<MonotaskSpan>() == std::mem::align_of::<MonotaskRecord>()
);

impl MonotaskSpan {
    fn of(record: &MonotaskRecord, task_started_at_us: i64) -> Self {
        MonotaskSpan {
            kind: record.kind,
            resource: record.resource,
            bytes: record.bytes,
            queued_after_us: record.queued_at_us - task_started_at_us,
            queue_us: record.started_at_us - record.queued_at_us,
            run_us: record.finished_at_us - record.started_at_us,
        }
    }

    /// `None` when a time falls outside `i64` (a damaged or hostile report).
    fn record(self, task_started_at_us: i64) -> Option<MonotaskRecord> {
        let queued_at_us = task_started_at_us.checked_add(self.queued_after_us)?;
        let started_at_us = queued_at_us.checked_add(self.queue_us)?;
        Some(MonotaskRecord {
            kind: self.kind,
            resource: self.resource,
            bytes: self.bytes,
            queued_at_us,
            started_at_us,
            finished_at_us: started_at_us.checked_add(self.run_us)?,
        })
    }
}

/// The encoded form, field for field; `TaskReportView` writes the same fields from a
/// borrowed report so that sending one copies nothing.
#[derive(Deserialize)]
pub(crate) struct TaskReportWire {
    task: TaskId,
    worker: WorkerId,
    group: Option<u64>,
    outcome: OutcomeFromWire,
    started_at_us: i64,
    run_us: i64,
    monotasks: Vec<MonotaskSpan>,
}

#[derive(Serialize)]
struct TaskReportView<'a> {
    task: &'a TaskId,
    worker: WorkerId,
    group: Option<u64>,
    outcome: OutcomeOnWire<'a>,
    started_at_us: i64,
    run_us: i64,
    monotasks: MonotaskSpans<'a>,
}

struct MonotaskSpans<'a> {
    records: &'a [MonotaskRecord],
    task_started_at_us: i64,
}

impl Serialize for MonotaskSpans<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.records.len()))?;
        for record in self.records {
            seq.serialize_element(&MonotaskSpan::of(record, self.task_started_at_us))?;
        }
        seq.end()
    }
}

impl Serialize for TaskReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TaskReportView {
            task: &self.task,
            worker: self.worker,
            group: self.group,
            outcome: OutcomeOnWire(&self.outcome),
            started_at_us: self.started_at_us,
            run_us: self.finished_at_us - self.started_at_us,
            monotasks: MonotaskSpans { records: &self.monotasks, task_started_at_us: self.started_at_us },
        }
        .serialize(serializer)
    }
}

/// A report whose offsets put a time outside `i64` is refused: it cannot come from a worker's
/// clock, and adding them up would overflow.
impl TryFrom<TaskReportWire> for TaskReport {
    type Error = String;

    fn try_from(wire: TaskReportWire) -> Result<Self, String> {
        let task = wire.task;
        let overflow = || format!("task {task}: a time in its report overflows");
        // Consumed, not borrowed: a span and a record have one size and alignment, so the
        // collect rewrites the decoded list in place instead of allocating a second one per
        // report on the driver's busiest thread.
        let monotasks = wire
            .monotasks
            .into_iter()
            .map(|span| span.record(wire.started_at_us))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(overflow)?;
        Ok(TaskReport {
            task,
            worker: wire.worker,
            group: wire.group,
            finished_at_us: wire.started_at_us.checked_add(wire.run_us).ok_or_else(overflow)?,
            outcome: wire.outcome.0,
            monotasks,
            started_at_us: wire.started_at_us,
        })
    }
}

/// A task's report in its wire encoding, with what the status writer needs to know of it.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedReport {
    pub job: JobId,
    /// The report's group; `None` under bsp.
    pub group: Option<u64>,
    pub failed: bool,
    pub bytes: Vec<u8>,
}

impl EncodedReport {
    pub fn new(report: &TaskReport) -> Self {
        EncodedReport {
            job: report.task.job,
            group: report.group,
            failed: matches!(report.outcome, TaskOutcome::Failed { .. }),
            bytes: encode_binary(report),
        }
    }
}

/// The payload of `WorkerToDriver::Status` with `registered` and the `report_count` reports
/// encoded back to back in `reports`: byte for byte the encoding of the message itself, which
/// postcard lays out as the variant, each sequence's length, then its elements.
pub fn encode_status(registered: &[GroupRegistered], report_count: usize, reports: &[u8]) -> Vec<u8> {
    let head = StatusBatch { registered: registered.to_vec(), reports: Vec::new() };
    let mut out = encode_binary(&WorkerToDriver::Status(head));
    assert_eq!(out.pop(), Some(0), "the message ends with the length of its empty report sequence");
    out.reserve(10 + reports.len());
    out = encode_binary_onto(&(report_count as u64), out);
    out.extend_from_slice(reports);
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_plan::StageId;

    use super::*;
    use crate::frame::{decode_binary, encode_binary};
    use sleet_plan::SourceRange;

    use crate::message::{BlockMeta, TaskStats};

    fn report(started_at_us: i64, times: &[(usize, u64, i64, i64, i64)], finished_at_us: i64) -> TaskReport {
        TaskReport {
            task: TaskId { job: 3, stage: StageId(1), partition: 7, batch: 123_456 },
            worker: 2,
            group: Some(99),
            outcome: TaskOutcome::Succeeded(TaskStats {
                source_range: Some(SourceRange::Time { start_ms: 1_790_000_000_000, end_ms: 1_790_000_000_010 }),
                records_in: 12,
                blocks: vec![BlockMeta { reduce_partition: 4, rows: 3, bytes: 96 }],
                window_latencies_ms: vec![5, -1],
                ..TaskStats::default()
            }),
            monotasks: times
                .iter()
                .map(|&(kind, bytes, queued_at_us, started_at_us, finished_at_us)| MonotaskRecord {
                    kind: MonotaskKind::ALL[kind],
                    resource: Resource::ALL[kind % Resource::ALL.len()],
                    bytes,
                    queued_at_us,
                    started_at_us,
                    finished_at_us,
                })
                .collect(),
            started_at_us,
            finished_at_us,
        }
    }

    #[test]
    fn relative_times_take_a_report_under_three_fifths_of_its_absolute_size() {
        let start = 1_790_000_000_000_000;
        let original = report(
            start,
            &[(0, 100, start, start + 1, start + 40), (1, 80, start + 40, start + 41, start + 90)],
            start + 95,
        );
        let encoded = encode_binary(&original);
        assert_eq!(decode_binary::<TaskReport>(&encoded, "report").expect("decodes"), original);
        // The bytes of the times alone: the same report at time 0 has them all at one byte
        // each, so the rest of the report (which grows with its stats) cancels out.
        let time_fields = 2 + 3 * original.monotasks.len();
        let untimed = encode_binary(&report(0, &[(0, 100, 0, 0, 0), (1, 80, 0, 0, 0)], 0)).len() - time_fields;
        let time_bytes = encoded.len() - untimed;
        assert!(2 * time_bytes <= 8 * time_fields, "{time_bytes} bytes of times, {} as absolute µs", 8 * time_fields);
    }

    #[test]
    fn a_status_assembled_from_encoded_reports_is_the_status_message() {
        let start = 1_790_000_000_000_000;
        let reports: Vec<TaskReport> = (0..300)
            .map(|i| {
                let mut one = report(
                    start + i,
                    &[(i as usize % 5, i as u64, start + i, start + i, start + 2 * i)],
                    start + 3 * i,
                );
                one.task.batch = i as u64;
                one.outcome =
                    if i % 7 == 0 { TaskOutcome::Failed { reason: format!("failure {i}") } } else { one.outcome };
                one
            })
            .collect();
        let registered: Vec<GroupRegistered> = (0..3)
            .map(|group| GroupRegistered { job: 3, group, register_us: 10 * group as i64, coordination_wait_us: 7 })
            .collect();
        let mut encoded = Vec::new();
        for report in &reports {
            let one = EncodedReport::new(report);
            assert_eq!((one.job, one.group, one.failed), (3, Some(99), report.task.batch % 7 == 0));
            encoded.extend_from_slice(&one.bytes);
        }
        let message = WorkerToDriver::Status(StatusBatch { registered: registered.clone(), reports });
        assert_eq!(encode_status(&registered, 300, &encoded), encode_binary(&message));
        assert_eq!(encode_status(&[], 0, &[]), encode_binary(&WorkerToDriver::Status(StatusBatch::default())));
    }

    /// Found while writing the `frame_decode` fuzz target: a report's times are offsets from
    /// its start, and decoding added them without a check (a panic with overflow checks,
    /// wrapped times without). Such a report is now a decoding error.
    #[test]
    fn a_report_whose_times_overflow_is_refused() {
        let start = 1_790_000_000_000_000;
        let fine = report(start, &[(0, 100, start, start + 1, start + 40)], start + 95);
        let encoded = |wire: &TaskReportView<'_>| encode_binary(wire);
        let view = |run_us: i64, started_at_us: i64| TaskReportView {
            task: &fine.task,
            worker: fine.worker,
            group: fine.group,
            outcome: OutcomeOnWire(&fine.outcome),
            started_at_us,
            run_us,
            monotasks: MonotaskSpans { records: &fine.monotasks, task_started_at_us: start },
        };
        assert_eq!(decode_binary::<TaskReport>(&encoded(&view(95, start)), "report").expect("decodes"), fine);
        for (run_us, started_at_us) in [(i64::MAX, start), (0, i64::MAX), (i64::MIN, -1)] {
            // postcard keeps no message of its own for an error the type raises.
            decode_binary::<TaskReport>(&encoded(&view(run_us, started_at_us)), "report").expect_err("times past i64");
        }
    }

    proptest! {
        #[test]
        fn any_report_round_trips(
            started_at_us in -(1i64 << 52)..(1i64 << 52),
            offsets in proptest::collection::vec((0usize..5, any::<u64>(), -1_000_000i64..1_000_000_000, 0i64..1_000_000, 0i64..1_000_000), 0..6),
            run_us in -1_000i64..10_000_000,
        ) {
            // Clocks can step back, so offsets may be negative.
            let times: Vec<_> = offsets
                .iter()
                .map(|&(kind, bytes, queued, waited, ran)| {
                    let queued_at = started_at_us + queued;
                    (kind, bytes, queued_at, queued_at + waited, queued_at + waited + ran)
                })
                .collect();
            let original = report(started_at_us, &times, started_at_us + run_us);
            prop_assert_eq!(decode_binary::<TaskReport>(&encode_binary(&original), "report").expect("decodes"), original);
        }
    }
}
