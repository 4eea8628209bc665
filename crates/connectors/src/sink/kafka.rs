//! Result rows to a Kafka topic: one JSON record per row (the same object the JSON-lines sink
//! writes), keyed by the row's group key and window, through an idempotent producer. A batch's
//! records are acknowledged by the broker before `write` returns, so the batch counts as done
//! only once its output is in Kafka.
//!
//! Reduce partition `p` writes to topic partition `p mod partitions`, so every update of a
//! key lands, in batch order, in one topic partition. Exactly-once (a transaction per group
//! with a stable transactional id per sink partition) builds on this: the producer already
//! carries the sequence numbers a transactional producer needs.

use std::sync::Mutex;

use arrow_array::RecordBatch;
use sleet_clarity::Resource;
use sleet_kafka::batch_builder::BatchBuilder;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::fetch::{FetchSettings, PartitionReader};
use sleet_kafka::offsets::OffsetQuery;
use sleet_kafka::producer::Producer;

use super::{format_json_key, format_json_lines, Sink, SinkRow};
use crate::error::ConnectorError;

/// Uncompressed bytes per produce request, under a broker's default 1 MiB batch limit.
const BATCH_BYTES_MAX: usize = 900 << 10;

pub struct KafkaSink {
    brokers: String,
    topic: String,
    key_columns: Vec<String>,
    partition: u32,
    /// Opened on the first write, on the network scheduler: opening talks to the broker.
    producer: Mutex<Option<Producer>>,
}

impl KafkaSink {
    pub fn new(brokers: &str, topic: &str, key_columns: &[String], partition: u32) -> Self {
        KafkaSink {
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            key_columns: key_columns.to_vec(),
            partition,
            producer: Mutex::new(None),
        }
    }

    fn error(&self, reason: String) -> ConnectorError {
        ConnectorError::External { what: format!("Kafka sink `{}` on {}", self.topic, self.brokers), reason }
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

    fn write(&self, _batch: u64, encoded: &[u8]) -> Result<(), ConnectorError> {
        let mut producer = self.producer.lock().expect("producer lock");
        if producer.is_none() {
            *producer = Some(Producer::new(&self.brokers, &self.topic).map_err(|error| self.error(error.to_string()))?);
        }
        let producer = producer.as_mut().expect("opened above");
        let target = self.partition % producer.partitions();
        let timestamp = now_ms();
        let mut batch = Producer::new_batch();
        let mut rest = encoded;
        while !rest.is_empty() {
            let (key, after) = take_part(rest).ok_or_else(|| self.error("malformed encoded rows (internal)".into()))?;
            let (value, after) =
                take_part(after).ok_or_else(|| self.error("malformed encoded rows (internal)".into()))?;
            rest = after;
            batch.push(timestamp, Some(key), value);
            if batch.bytes() >= BATCH_BYTES_MAX {
                send(producer, target, &mut batch).map_err(|error| self.error(error))?;
            }
        }
        send(producer, target, &mut batch).map_err(|error| self.error(error))
    }

    fn flush(&self) -> Result<(), ConnectorError> {
        // Every write waited for its acknowledgement: nothing is buffered.
        Ok(())
    }
}

fn send(producer: &mut Producer, partition: u32, batch: &mut BatchBuilder) -> Result<(), String> {
    producer.send(partition, batch).map(|_| ()).map_err(|error| error.to_string())
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
