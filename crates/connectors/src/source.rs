//! Sources: where a job's records come from.
//!
//! ```text
//!  batch b closes on the worker ── monotask on Source::resource(): Source::read ──▶ RawRecords
//!                                       (or Source::read_decoded ──▶ rows) └──▶ SourceRange (the batch log)
//! ```
//!
//! The worker that owns a source partition reads each batch itself and says what it read; the
//! driver never chooses a range (`docs/design/group-scheduling.md`, direct sources). The read runs
//! on the scheduler of the resource it uses, so its monotask record is true: generating records is
//! cpu work, reading Kafka is network, reading a file is disk.

use arrow_array::RecordBatch;
use sleet_exec::RawRecords;
use sleet_monotask::Resource;
use sleet_plan::SourceRange;

use crate::error::ConnectorError;

/// One partition of a source.
pub trait Source: Send + Sync {
    /// The resource `read` uses.
    fn resource(&self) -> Resource;

    /// Appends the records of the batch covering `[start_ms, end_ms)` to `out` and returns
    /// what it read. Reads of one partition come in batch order. An error is one that
    /// waiting cannot fix; a source outside the process waits out the rest (a broker
    /// restarting) with empty batches and says so in `waiting`. A source that knows its
    /// records' event times without decoding them adds their wait for `end_ms`, the batch's
    /// close, to `out.event_wait` (one addition per record: this is the hot path).
    fn read(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> Result<SourceRange, ConnectorError>;

    /// `read`, taking at most `bound` records when the driver holds reading back
    /// (backpressure); only Kafka does, since its re-run batches read the ranges the batch log
    /// recorded. A generator makes each batch from its time range alone and a file re-reads a
    /// batch by its count of lines, so they ignore the bound and keep their batches' size: the
    /// job's schedule slips instead.
    fn read_bounded(
        &self,
        start_ms: i64,
        end_ms: i64,
        _bound: Option<u32>,
        out: &mut RawRecords,
    ) -> Result<SourceRange, ConnectorError> {
        self.read(start_ms, end_ms, out)
    }

    /// The batch's records as rows the plan's decode operator would have made of them, for
    /// a source that holds its input decoded; `None` (the usual case): `read` hands raw
    /// records. Takes `read`'s place for that batch: same contract, same range.
    fn read_decoded(&self, _start_ms: i64, _end_ms: i64) -> Option<Result<(RecordBatch, SourceRange), ConnectorError>> {
        None
    }

    /// Where a record at `position` (from `RawRecords::positions`) lives, for its dead letter.
    fn locate(&self, _position: i64) -> Option<serde_json::Value> {
        None
    }

    /// What the source is waiting for, if anything (for the status line).
    fn waiting(&self) -> Option<String> {
        None
    }
}
