//! An idempotent producer: one producer id, a sequence number per partition, acks from every
//! in-sync replica, and retries that the broker de-duplicates, so a retried send never
//! writes a record twice.
//!
//! `transaction.rs` builds the transactional producer on the same request and retry code.

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{InitProducerIdRequest, ProduceRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::batch_builder::{BatchBuilder, Codec, ProducerStamp};
use crate::cluster::Cluster;
use crate::error::KafkaError;
use crate::retry::retry_transient;

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
        let offset = send_stamped(&mut self.cluster, &self.topic, partition, batch, stamp, None)?;
        self.next_sequence[index] = stamp.base_sequence.wrapping_add(count);
        Ok(offset)
    }
}

/// Encodes `batch` under `stamp` (emptying it) and produces it to `topic`/`partition`,
/// retrying transient failures (a broker restarting, a leader moving) for about a minute;
/// the broker de-duplicates a retried batch by its sequence. Returns the offset of its first
/// record. Shared by the idempotent and the transactional producer.
pub(crate) fn send_stamped(
    cluster: &mut Cluster,
    topic: &str,
    partition: u32,
    batch: &mut BatchBuilder,
    stamp: ProducerStamp,
    transactional_id: Option<&str>,
) -> Result<i64, KafkaError> {
    let mut encoded = Vec::with_capacity(batch.bytes() + 128);
    batch.finish(stamp, &mut encoded);
    let records = bytes::Bytes::from(encoded);
    retry_transient(|| {
        let result = produce(cluster, topic, partition, records.clone(), transactional_id);
        if result.as_ref().is_err_and(KafkaError::is_transient) {
            cluster.invalidate(topic);
        }
        result
    })
}

/// One produce request of `records` to `topic`/`partition`, acknowledged by every in-sync
/// replica; returns the offset of its first record.
fn produce(
    cluster: &mut Cluster,
    topic: &str,
    partition: u32,
    records: bytes::Bytes,
    transactional_id: Option<&str>,
) -> Result<i64, KafkaError> {
    let request = ProduceRequest::default()
        .with_transactional_id(transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.to_string()))))
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition as i32)
                .with_records(Some(records))])]);
    let response = cluster.call_leader(topic, partition, &request)?;
    let found = response
        .responses
        .iter()
        .flat_map(|found| found.partition_responses.iter())
        .find(|found| found.index == partition as i32)
        .ok_or_else(|| KafkaError::Protocol {
            broker: cluster.brokers(),
            reason: format!("no produce response for {topic}/{partition}"),
        })?;
    // A retry of a batch the broker already has: written once, as it should be.
    let tolerated = [ResponseError::DuplicateSequenceNumber];
    KafkaError::check("Produce", || format!("{topic}/{partition}"), found.error_code, &tolerated)?;
    Ok(found.base_offset)
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
