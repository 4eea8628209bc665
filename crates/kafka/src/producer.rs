//! An idempotent producer: one producer id, a sequence number per partition, acks from every
//! in-sync replica, and retries that the broker de-duplicates, so a retried send never
//! writes a record twice.
//!
//! Transactions (next: exactly-once sinks) add a `transactional_id` to `InitProducerId`,
//! AddPartitionsToTxn before a partition's first send, and EndTxn; the sequence bookkeeping
//! here stays as it is.

use std::time::Duration;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{InitProducerIdRequest, ProduceRequest, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::batch_builder::{BatchBuilder, Codec, ProducerStamp};
use crate::cluster::Cluster;
use crate::error::KafkaError;

/// With the backoff, about a minute: long enough to ride out a broker restart.
const SEND_ATTEMPTS: u32 = 240;
const RETRY_BACKOFF: Duration = Duration::from_millis(250);

pub struct Producer {
    cluster: Cluster,
    topic: String,
    partitions: u32,
    producer_id: i64,
    producer_epoch: i16,
    next_sequence: Vec<i32>,
}

impl Producer {
    /// A producer for `topic`, which must exist.
    pub fn new(brokers: &str, topic: &str) -> Result<Self, KafkaError> {
        let mut cluster = Cluster::new(brokers);
        let info = cluster.topic(topic)?;
        let (producer_id, producer_epoch) = init_producer_id(&mut cluster, topic)?;
        Ok(Producer {
            cluster,
            topic: topic.to_string(),
            partitions: info.partitions(),
            producer_id,
            producer_epoch,
            next_sequence: vec![0; info.partitions() as usize],
        })
    }

    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    pub fn new_batch() -> BatchBuilder {
        BatchBuilder::new(Codec::Lz4)
    }

    /// Writes `batch` to `partition`, retrying transient failures (a broker restarting) for
    /// about a minute, and empties it. Returns the offset of its first record.
    pub fn send(&mut self, partition: u32, batch: &mut BatchBuilder) -> Result<i64, KafkaError> {
        if batch.is_empty() {
            return Ok(-1);
        }
        let index = partition as usize;
        let count = batch.len() as i32;
        let stamp = ProducerStamp {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.next_sequence[index],
            transactional: false,
        };
        let mut encoded = Vec::with_capacity(batch.bytes() + 128);
        batch.finish(stamp, &mut encoded);
        let records = bytes::Bytes::from(encoded);
        let offset = retry_transient(|| {
            let result = self.send_once(partition, records.clone());
            if result.as_ref().is_err_and(KafkaError::is_transient) {
                self.cluster.invalidate(&self.topic);
            }
            result
        })?;
        self.next_sequence[index] = self.next_sequence[index].wrapping_add(count);
        Ok(offset)
    }

    fn send_once(&mut self, partition: u32, records: bytes::Bytes) -> Result<i64, KafkaError> {
        let request = ProduceRequest::default()
            .with_transactional_id(None)
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(self.topic.clone())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition as i32)
                    .with_records(Some(records))])]);
        let response = self.cluster.call_leader(&self.topic, partition, &request)?;
        let found = response
            .responses
            .iter()
            .flat_map(|topic| topic.partition_responses.iter())
            .find(|found| found.index == partition as i32)
            .ok_or_else(|| KafkaError::Protocol {
                broker: self.cluster.brokers(),
                reason: format!("no produce response for {}/{partition}", self.topic),
            })?;
        // A retry of a batch the broker already has: written once, as it should be.
        let tolerated = [ResponseError::DuplicateSequenceNumber];
        KafkaError::check("Produce", || format!("{}/{partition}", self.topic), found.error_code, &tolerated)?;
        Ok(found.base_offset)
    }
}

/// A producer id for an idempotent producer. A fresh broker answers "coordinator loading"
/// for its first second or so: retried, bounded.
fn init_producer_id(cluster: &mut Cluster, topic: &str) -> Result<(i64, i16), KafkaError> {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(i32::MAX)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    retry_transient(|| {
        let response = cluster.any_call(&request)?;
        KafkaError::check("InitProducerId", || format!("topic `{topic}`"), response.error_code, &[])?;
        Ok((response.producer_id.0, response.producer_epoch))
    })
}

/// Runs `attempt` until it succeeds, fails for good, or has failed transiently
/// `SEND_ATTEMPTS` times, `RETRY_BACKOFF` apart.
fn retry_transient<T>(mut attempt: impl FnMut() -> Result<T, KafkaError>) -> Result<T, KafkaError> {
    let mut failures = 0;
    loop {
        match attempt() {
            Err(error) if error.is_transient() && failures + 1 < SEND_ATTEMPTS => {
                failures += 1;
                std::thread::sleep(RETRY_BACKOFF);
            }
            outcome => return outcome,
        }
    }
}
