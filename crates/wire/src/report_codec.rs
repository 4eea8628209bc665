//! How a `TaskReport` travels: its monotask times relative to the task's start.
//!
//! Reports are the bulk of the status traffic (one per task, a few thousand a second per
//! worker at millisecond batches). Absolute timestamps are microseconds since the epoch,
//! eight bytes each as a varint, and a report carries two of its own plus three per
//! monotask. Sent as offsets from the task's start they take one or two bytes, which
//! halves the report and the work of encoding it on the worker and decoding it on the
//! driver, whose single thread reads every report of the cluster. A monotask's resource is
//! not sent: it follows from its kind.

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use sleet_clarity::{MonotaskKind, MonotaskRecord};

use crate::message::{TaskId, TaskOutcome, TaskReport, WorkerId};

/// One monotask, its times as offsets: queued after the task started, waited, ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct MonotaskSpan {
    kind: MonotaskKind,
    bytes: u64,
    queued_after_us: i64,
    queue_us: i64,
    run_us: i64,
}

impl MonotaskSpan {
    fn of(record: &MonotaskRecord, task_started_at_us: i64) -> Self {
        debug_assert_eq!(record.resource, record.kind.resource(), "a monotask uses its kind's resource");
        MonotaskSpan {
            kind: record.kind,
            bytes: record.bytes,
            queued_after_us: record.queued_at_us - task_started_at_us,
            queue_us: record.started_at_us - record.queued_at_us,
            run_us: record.finished_at_us - record.started_at_us,
        }
    }

    fn record(self, task_started_at_us: i64) -> MonotaskRecord {
        let queued_at_us = task_started_at_us + self.queued_after_us;
        let started_at_us = queued_at_us + self.queue_us;
        MonotaskRecord {
            kind: self.kind,
            resource: self.kind.resource(),
            bytes: self.bytes,
            queued_at_us,
            started_at_us,
            finished_at_us: started_at_us + self.run_us,
        }
    }
}

/// The encoded form, field for field; `TaskReportView` writes the same fields from a
/// borrowed report so that sending one copies nothing.
#[derive(Deserialize)]
pub(crate) struct TaskReportWire {
    task: TaskId,
    worker: WorkerId,
    group: Option<u64>,
    outcome: TaskOutcome,
    started_at_us: i64,
    run_us: i64,
    monotasks: Vec<MonotaskSpan>,
}

#[derive(Serialize)]
struct TaskReportView<'a> {
    task: &'a TaskId,
    worker: WorkerId,
    group: Option<u64>,
    outcome: &'a TaskOutcome,
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
            outcome: &self.outcome,
            started_at_us: self.started_at_us,
            run_us: self.finished_at_us - self.started_at_us,
            monotasks: MonotaskSpans { records: &self.monotasks, task_started_at_us: self.started_at_us },
        }
        .serialize(serializer)
    }
}

impl From<TaskReportWire> for TaskReport {
    fn from(wire: TaskReportWire) -> Self {
        TaskReport {
            task: wire.task,
            worker: wire.worker,
            group: wire.group,
            outcome: wire.outcome,
            monotasks: wire.monotasks.into_iter().map(|span| span.record(wire.started_at_us)).collect(),
            started_at_us: wire.started_at_us,
            finished_at_us: wire.started_at_us + wire.run_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_plan::StageId;

    use super::*;
    use crate::frame::{decode_binary, encode_binary};
    use crate::message::{BlockMeta, TaskStats};

    fn report(started_at_us: i64, times: &[(usize, u64, i64, i64, i64)], finished_at_us: i64) -> TaskReport {
        TaskReport {
            task: TaskId { job: 3, stage: StageId(1), partition: 7, batch: 123_456 },
            worker: 2,
            group: Some(99),
            outcome: TaskOutcome::Succeeded(TaskStats {
                source_range: Some((1_790_000_000_000, 1_790_000_000_010)),
                records_in: 12,
                blocks: vec![BlockMeta { reduce_partition: 4, rows: 3, bytes: 96 }],
                window_latencies_ms: vec![5, -1],
                ..TaskStats::default()
            }),
            monotasks: times
                .iter()
                .map(|&(kind, bytes, queued_at_us, started_at_us, finished_at_us)| MonotaskRecord {
                    kind: MonotaskKind::ALL[kind],
                    resource: MonotaskKind::ALL[kind].resource(),
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
    fn a_report_is_half_the_size_with_relative_times() {
        let start = 1_790_000_000_000_000;
        let original = report(
            start,
            &[(0, 100, start, start + 1, start + 40), (1, 80, start + 40, start + 41, start + 90)],
            start + 95,
        );
        let encoded = encode_binary(&original);
        assert_eq!(decode_binary::<TaskReport>(&encoded, "report").expect("decodes"), original);
        let absolute_times_bytes = 8 * (2 + 3 * original.monotasks.len());
        assert!(encoded.len() < absolute_times_bytes, "{} bytes encoded", encoded.len());
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
