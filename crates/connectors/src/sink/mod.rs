//! Sinks: where a job's result rows go.
//!
//! ```text
//!  reduce task ── cpu monotask: Sink::encode(batch, rows) ──▶ bytes
//!              ── monotask on Sink::resource(): Sink::write(batch, bytes) ──▶ visible to readers
//! ```
//!
//! A sink is split in two halves so that each runs on the monotask of the resource it uses:
//! formatting is cpu work, writing is I/O (disk for files, network for Kafka). A sink writes
//! rows tagged with their batch and nothing that depends on when they were written, so a
//! batch written twice (a replay after a failure) writes the same bytes.

mod json_lines;
mod kafka;
mod ysb_rows;

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use sleet_monotask::Resource;
use sleet_plan::SinkSpec;

use crate::error::ConnectorError;

pub use json_lines::{format_json_key, format_json_lines, sink_file_path, JsonLinesSink};
pub use kafka::{marker_topic, read_ysb_topic, KafkaSink};
pub use ysb_rows::{final_counts, read_ysb_sink, SinkRow};

/// Where the result rows of one reduce partition go. Shared by the tasks of that partition,
/// which write in batch order.
pub trait Sink: Send + Sync {
    /// The resource `write` uses; its monotask runs on that resource's scheduler.
    fn resource(&self) -> Resource;

    /// Appends the rows `batch` produced, in this sink's encoding. Pure cpu work.
    fn encode(&self, batch: u64, rows: &RecordBatch, out: &mut Vec<u8>);

    /// Writes what `encode` produced for `batch`. When it returns, readers can see the rows.
    fn write(&self, batch: u64, encoded: &[u8]) -> Result<(), ConnectorError>;

    /// Makes everything written so far durable; called when the job ends.
    fn flush(&self) -> Result<(), ConnectorError>;
}

/// Which sink partition of which job a sink writes for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkContext {
    /// The reduce partition, and how many the stage has.
    pub partition: u32,
    pub partitions: u32,
    /// 0 for the job's first run, then one more per recovery.
    pub attempt: u32,
    /// Names this run of the job, the same in every attempt and different for every run
    /// (the job's name and its start): what an exactly-once sink keys its commits by.
    pub run: String,
}

/// The sink a spec names for one reduce partition in one attempt of the job; `None` when
/// the spec keeps no output.
pub fn open_sink(spec: &SinkSpec, context: SinkContext) -> Result<Option<Arc<dyn Sink>>, ConnectorError> {
    Ok(match spec {
        SinkSpec::JsonLines { dir } => {
            Some(Arc::new(JsonLinesSink::open(&PathBuf::from(dir), context.partition, context.attempt)?))
        }
        SinkSpec::Stdout => Some(Arc::new(JsonLinesSink::stdout())),
        SinkSpec::Discard => None,
        SinkSpec::Kafka { brokers, topic, key_columns } => {
            Some(Arc::new(KafkaSink::new(brokers, topic, key_columns, context)))
        }
    })
}

/// Two ysb result rows, for the tests of the sink and its reader.
#[cfg(test)]
pub(crate) fn sample_ysb_rows() -> RecordBatch {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    RecordBatch::try_from_iter([
        ("window_start", Arc::new(Int64Array::from(vec![0, 10_000])) as ArrayRef),
        ("campaign_id", Arc::new(StringArray::from(vec!["c1", "c2"])) as ArrayRef),
        ("count", Arc::new(Int64Array::from(vec![3, 4])) as ArrayRef),
    ])
    .expect("rows")
}
