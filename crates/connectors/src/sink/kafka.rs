//! Result rows to a Kafka topic, exactly once: one JSON record per row (the same object the
//! JSON-lines sink writes), keyed by the row's group key and window.
//!
//! ```text
//!  write(batch b) of sink partition p, one transaction:
//!    rows ──▶ <topic>/(p mod partitions)
//!    commit marker "b" (key: run/p) ──▶ <topic>.sleet-commits/(p mod marker partitions)
//!  EndTxn(commit): rows and marker visible to read_committed readers together
//! ```
//!
//! Each sink partition writes under a transactional id stable across attempts of the job
//! (`sleet.<run>.<topic>.<p>`), so the owner a recovery opens fences the writer it replaces
//! (a killed or frozen worker) and aborts the transaction that writer left open. The Kafka
//! commit is the batch's commit point: no client can finish another process's transaction,
//! so a batch committed in Kafka whose report never reached the driver is re-run by the next
//! attempt. The marker tells the new owner so: before its first write it reads the last
//! committed marker of its partition and writes nothing for batches up to it. Batches of a
//! partition are written in order, so one number per partition says what is committed.
//!
//! Reduce partition `p` writes to topic partition `p mod partitions`, so every update of a
//! key lands, in batch order, in one topic partition.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use sleet_kafka::admin::ensure_topic_with;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::fetch::{FetchSettings, PartitionReader};
use sleet_kafka::offsets::{OffsetQuery, READ_UNCOMMITTED};
use sleet_kafka::producer::Producer;
use sleet_kafka::retry::retry_transient;
use sleet_kafka::transaction::TransactionalProducer;
use sleet_kafka::KafkaError;
use sleet_monotask::Resource;

use super::{format_json_key, format_json_lines, Sink, SinkContext, SinkRow};
use crate::error::ConnectorError;

/// Uncompressed bytes per produce request, under a broker's default 1 MiB batch limit.
const BATCH_BYTES_MAX: usize = 900 << 10;
/// Longer than any recovery takes: a transaction a killed worker left open stays open (and
/// holds back read_committed readers of its partitions) until the partition's next owner
/// fences it, or this long.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// The topic that holds the commit markers of sinks writing to `topic`.
pub fn marker_topic(topic: &str) -> String {
    format!("{topic}.sleet-commits")
}

pub struct KafkaSink {
    brokers: String,
    topic: String,
    key_columns: Vec<String>,
    context: SinkContext,
    marker_topic: String,
    /// What this partition's commit markers are keyed by: `<run>/<partition>`.
    marker_key: String,
    /// Opened on the first write, on the network scheduler: opening talks to the broker.
    writer: Mutex<Option<TransactionalWriter>>,
}

/// What a sink partition needs once it has talked to the broker.
struct TransactionalWriter {
    producer: TransactionalProducer,
    target: u32,
    marker_partition: u32,
    /// The last batch this partition committed, in this attempt or an earlier one.
    committed_through: Option<u64>,
}

impl KafkaSink {
    pub fn new(brokers: &str, topic: &str, key_columns: &[String], context: SinkContext) -> Self {
        KafkaSink {
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            key_columns: key_columns.to_vec(),
            marker_topic: marker_topic(topic),
            marker_key: format!("{}/{}", context.run, context.partition),
            context,
            writer: Mutex::new(None),
        }
    }

    fn error(&self, reason: String) -> ConnectorError {
        ConnectorError::External { what: format!("Kafka sink `{}` on {}", self.topic, self.brokers), reason }
    }

    /// Fences earlier writers of this partition, then reads what they committed. In that
    /// order: once the producer is initialised no earlier one can commit any more.
    fn open(&self) -> Result<TransactionalWriter, KafkaError> {
        let mut cluster = Cluster::new(&self.brokers);
        let target = self.context.partition % cluster.topic(&self.topic)?.partitions();
        // Compacted: only each partition's last marker has to stay.
        let marker_partitions = ensure_topic_with(
            &mut cluster,
            &self.marker_topic,
            self.context.partitions.max(1),
            &[("cleanup.policy", "compact")],
        )?;
        let marker_partition = self.context.partition % marker_partitions;
        let transactional_id = format!("sleet.{}.{}.{}", self.context.run, self.topic, self.context.partition);
        let producer = TransactionalProducer::new(&self.brokers, &transactional_id, TRANSACTION_TIMEOUT)?;
        // A marker topic created a moment ago may not have a leader yet.
        let committed_through =
            retry_transient(|| last_marker(&self.brokers, &self.marker_topic, marker_partition, &self.marker_key))?;
        Ok(TransactionalWriter { producer, target, marker_partition, committed_through })
    }

    fn write_in_transaction(
        &self,
        writer: &mut TransactionalWriter,
        batch: u64,
        encoded: &[u8],
    ) -> Result<(), ConnectorError> {
        let failed = |error: KafkaError| self.error(error.to_string());
        writer
            .producer
            .add_partitions(&[(&self.topic, writer.target), (&self.marker_topic, writer.marker_partition)])
            .map_err(failed)?;
        let timestamp = now_ms();
        let mut rows = Producer::new_batch();
        let mut rest = encoded;
        while !rest.is_empty() {
            let (key, after) = take_part(rest).ok_or_else(|| self.error("malformed encoded rows (internal)".into()))?;
            let (value, after) =
                take_part(after).ok_or_else(|| self.error("malformed encoded rows (internal)".into()))?;
            rest = after;
            rows.push(timestamp, Some(key), value);
            if rows.bytes() >= BATCH_BYTES_MAX {
                writer.producer.send(&self.topic, writer.target, &mut rows).map_err(failed)?;
            }
        }
        writer.producer.send(&self.topic, writer.target, &mut rows).map_err(failed)?;
        let mut marker = Producer::new_batch();
        marker.push(timestamp, Some(self.marker_key.as_bytes()), batch.to_string().as_bytes());
        writer.producer.send(&self.marker_topic, writer.marker_partition, &mut marker).map_err(failed)?;
        writer.producer.commit().map_err(failed)
    }
}

impl Sink for KafkaSink {
    fn resource(&self) -> Resource {
        Resource::Net
    }

    /// Each row as `[u32 key length][key][u32 value length][value]`: the key a JSON array of
    /// the key columns' values (a column the rows lack is left out), the value the row's JSON
    /// object with its batch, as the JSON-lines sink writes it.
    fn encode(&self, batch: u64, rows: &RecordBatch, out: &mut Vec<u8>) {
        let schema = rows.schema();
        let key_columns: Vec<usize> =
            self.key_columns.iter().filter_map(|column| schema.index_of(column).ok()).collect();
        let mut lines = Vec::new();
        format_json_lines(rows, batch, &mut lines);
        let mut key = Vec::new();
        for (row, line) in lines.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).enumerate() {
            key.clear();
            format_json_key(rows, &key_columns, row, &mut key);
            for part in [&key[..], line] {
                out.extend_from_slice(&(part.len() as u32).to_le_bytes());
                out.extend_from_slice(part);
            }
        }
    }

    fn write(&self, batch: u64, encoded: &[u8]) -> Result<(), ConnectorError> {
        let mut writer = self.writer.lock().expect("writer lock");
        if writer.is_none() {
            *writer = Some(self.open().map_err(|error| self.error(error.to_string()))?);
        }
        let writer = writer.as_mut().expect("opened above");
        if writer.committed_through.is_some_and(|through| batch <= through) {
            // Committed by an earlier owner whose report was lost with it.
            return Ok(());
        }
        if let Err(error) = self.write_in_transaction(writer, batch, encoded) {
            // Best effort: a producer that failed may be fenced, and then the broker has
            // aborted its transaction already (or will at the timeout).
            let _ = writer.producer.abort();
            return Err(error);
        }
        writer.committed_through = Some(batch);
        Ok(())
    }

    fn flush(&self) -> Result<(), ConnectorError> {
        // Every write committed its transaction before returning: nothing is buffered.
        Ok(())
    }
}

/// The batch of the last committed marker under `key` in `topic`/`partition`; `None` if
/// there is none. Other sink partitions may share the marker partition and have a
/// transaction open in it, which holds back what read_committed can read: the read waits
/// (bounded) until it has reached what was written when it began.
fn last_marker(brokers: &str, topic: &str, partition: u32, key: &str) -> Result<Option<u64>, KafkaError> {
    let mut reader = PartitionReader::new(brokers, topic, partition, FetchSettings::default());
    let written = reader.offset_at(OffsetQuery::Latest, READ_UNCOMMITTED)?;
    let mut position = reader.offset(OffsetQuery::Earliest)?;
    let mut last = None;
    let deadline = Instant::now() + TRANSACTION_TIMEOUT * 2;
    while position < written {
        if Instant::now() > deadline {
            return Err(KafkaError::Protocol {
                broker: brokers.to_string(),
                reason: format!(
                    "{topic}/{partition}: reading commit markers did not reach offset {written} (stuck at {position}) \
                     within {} s; an open transaction holds them back",
                    (TRANSACTION_TIMEOUT * 2).as_secs()
                ),
            });
        }
        let stable = reader.offset(OffsetQuery::Latest)?;
        if position >= stable {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        let mut malformed = None;
        position = reader.fetch(position, stable, &mut |record| {
            if record.key != Some(key.as_bytes()) {
                return;
            }
            match std::str::from_utf8(record.value.unwrap_or_default()).ok().and_then(|text| text.parse::<u64>().ok()) {
                Some(batch) => last = Some(last.map_or(batch, |last: u64| last.max(batch))),
                None => malformed = Some(record.offset),
            }
        })?;
        if let Some(offset) = malformed {
            return Err(KafkaError::BadBatch {
                topic: topic.to_string(),
                partition,
                offset,
                reason: format!("the commit marker of `{key}` is not a batch number"),
            });
        }
    }
    Ok(last)
}

fn take_part(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let length = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let part = data.get(4..4 + length)?;
    Some((part, &data[4 + length..]))
}

/// Record timestamps are only metadata (retention by time reads them); the value carries
/// nothing time-dependent.
fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_millis() as i64)
}

/// Every ysb row in `topic`, partition by partition from the earliest offset to the latest:
/// for the benchmark's check. A value that is not a ysb row is an error naming its offset.
pub fn read_ysb_topic(brokers: &str, topic: &str) -> Result<Vec<SinkRow>, ConnectorError> {
    let failed = |reason: String| ConnectorError::External { what: format!("reading Kafka topic `{topic}`"), reason };
    let partitions = Cluster::new(brokers).topic(topic).map_err(|error| failed(error.to_string()))?.partitions();
    let mut rows = Vec::new();
    for partition in 0..partitions {
        let mut reader = PartitionReader::new(brokers, topic, partition, FetchSettings::default());
        let mut position = reader.offset(OffsetQuery::Earliest).map_err(|error| failed(error.to_string()))?;
        let end = reader.offset(OffsetQuery::Latest).map_err(|error| failed(error.to_string()))?;
        let mut bad = None;
        while position < end && bad.is_none() {
            position = reader
                .fetch(position, end, &mut |record| {
                    let value = record.value.unwrap_or_default();
                    match serde_json::from_slice::<serde_json::Value>(value).ok().and_then(|value| ysb_row(&value)) {
                        Some(row) => rows.push(row),
                        None => {
                            bad.get_or_insert(record.offset);
                        }
                    }
                })
                .map_err(|error| failed(error.to_string()))?;
        }
        if let Some(offset) = bad {
            return Err(failed(format!("{topic}/{partition} offset {offset} is not a ysb result row")));
        }
    }
    Ok(rows)
}

fn ysb_row(value: &serde_json::Value) -> Option<SinkRow> {
    Some(SinkRow {
        window_start: value["window_start"].as_i64()?,
        campaign_id: value["campaign_id"].as_str()?.to_string(),
        count: value["count"].as_i64()?,
        batch: value["batch"].as_u64()?,
    })
}
