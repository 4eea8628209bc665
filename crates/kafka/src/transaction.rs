//! A transactional producer: records sent to several partitions become visible to
//! `read_committed` readers together, when `commit` returns, or never.
//!
//! ```text
//!  new:    FindCoordinator(transactional id) ─▶ InitProducerId (fences every earlier producer
//!          with this id and aborts its open transaction)
//!  write:  AddPartitionsToTxn ─▶ Produce … (sequence per partition, as the idempotent producer)
//!  commit: EndTxn(commit)
//! ```
//!
//! A stable transactional id is what makes a restarted writer safe: the new producer's
//! `InitProducerId` bumps the epoch, so a writer that was only frozen gets `ProducerFenced`
//! on its next request instead of committing late.

use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest, ProducerId, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rustc_hash::FxHashMap as HashMap;

use crate::batch_builder::{BatchBuilder, ProducerStamp};
use crate::cluster::Cluster;
use crate::error::KafkaError;
use crate::producer::send_stamped;
use crate::retry::retry_while;

/// FindCoordinator's key type for a transactional id.
const TRANSACTION_COORDINATOR: i8 = 1;

pub struct TransactionalProducer {
    cluster: Cluster,
    transactional_id: String,
    /// The coordinator's broker id, looked up again after it answers "not coordinator".
    coordinator: Option<i32>,
    producer_id: i64,
    producer_epoch: i16,
    next_sequence: HashMap<(String, u32), i32>,
    /// Partitions added to the open transaction; empty when none is open.
    in_transaction: Vec<(String, u32)>,
}

impl TransactionalProducer {
    /// A producer under `transactional_id`; opening it fences every earlier producer with the
    /// same id and aborts the transaction one of them left open. A transaction open longer
    /// than `timeout` is aborted by the broker.
    pub fn new(brokers: &str, transactional_id: &str, timeout: Duration) -> Result<Self, KafkaError> {
        let mut producer = TransactionalProducer {
            cluster: Cluster::new(brokers),
            transactional_id: transactional_id.to_string(),
            coordinator: None,
            producer_id: -1,
            producer_epoch: -1,
            next_sequence: HashMap::default(),
            in_transaction: Vec::new(),
        };
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(producer.wire_id()))
            .with_transaction_timeout_ms(timeout.as_millis().min(i32::MAX as u128) as i32)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let response = producer.coordinator_call("InitProducerId", &request, |response| response.error_code)?;
        producer.producer_id = response.producer_id.0;
        producer.producer_epoch = response.producer_epoch;
        Ok(producer)
    }

    /// Adds partitions to the open transaction (opening one) in one round trip; partitions
    /// already in it are skipped. `send` adds a missing partition itself, one at a time.
    pub fn add_partitions(&mut self, partitions: &[(&str, u32)]) -> Result<(), KafkaError> {
        let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
        let mut added = Vec::new();
        for &(topic, partition) in partitions {
            let key = (topic.to_string(), partition);
            if self.in_transaction.contains(&key) || added.contains(&key) {
                continue;
            }
            let name = TopicName(StrBytes::from_string(topic.to_string()));
            match topics.iter_mut().find(|entry| entry.name == name) {
                Some(entry) => entry.partitions.push(partition as i32),
                None => topics
                    .push(AddPartitionsToTxnTopic::default().with_name(name).with_partitions(vec![partition as i32])),
            }
            added.push(key);
        }
        if added.is_empty() {
            return Ok(());
        }
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(self.wire_id())
            .with_v3_and_below_producer_id(ProducerId(self.producer_id))
            .with_v3_and_below_producer_epoch(self.producer_epoch)
            .with_v3_and_below_topics(topics);
        // The request succeeds or fails as a whole: the first partition error stands for it.
        self.coordinator_call("AddPartitionsToTxn", &request, |response| {
            response
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|topic| topic.results_by_partition.iter())
                .map(|result| result.partition_error_code)
                .find(|code| *code != 0)
                .unwrap_or(response.error_code)
        })?;
        self.in_transaction.extend(added);
        Ok(())
    }

    /// Writes `batch` to `topic`/`partition` inside the open transaction (opening one) and
    /// empties it; returns the offset of its first record.
    pub fn send(&mut self, topic: &str, partition: u32, batch: &mut BatchBuilder) -> Result<i64, KafkaError> {
        if batch.is_empty() {
            return Ok(-1);
        }
        self.add_partitions(&[(topic, partition)])?;
        let key = (topic.to_string(), partition);
        let sequence = self.next_sequence.get(&key).copied().unwrap_or(0);
        let count = batch.len() as i32;
        let stamp = ProducerStamp {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: sequence,
            transactional: true,
        };
        let offset = send_stamped(&mut self.cluster, topic, partition, batch, stamp, Some(&self.transactional_id))?;
        self.next_sequence.insert(key, sequence.wrapping_add(count));
        Ok(offset)
    }

    /// Makes everything sent since the transaction opened visible; nothing to do when none is
    /// open.
    pub fn commit(&mut self) -> Result<(), KafkaError> {
        self.end(true)
    }

    /// Drops everything sent since the transaction opened.
    pub fn abort(&mut self) -> Result<(), KafkaError> {
        self.end(false)
    }

    fn end(&mut self, committed: bool) -> Result<(), KafkaError> {
        if self.in_transaction.is_empty() {
            return Ok(());
        }
        let request = EndTxnRequest::default()
            .with_transactional_id(self.wire_id())
            .with_producer_id(ProducerId(self.producer_id))
            .with_producer_epoch(self.producer_epoch)
            .with_committed(committed);
        self.coordinator_call("EndTxn", &request, |response| response.error_code)?;
        self.in_transaction.clear();
        Ok(())
    }

    fn wire_id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_string(self.transactional_id.clone()))
    }

    /// Sends `request` to the transaction coordinator and checks the error `code_of` reads
    /// from the answer. Retried: a coordinator that moved or is loading (looked up again),
    /// and "concurrent transactions", which means the coordinator is still completing the
    /// previous transaction (or aborting a fenced producer's) and will be done in moments.
    fn coordinator_call<R: kafka_protocol::protocol::Request>(
        &mut self,
        api: &'static str,
        request: &R,
        code_of: impl Fn(&R::Response) -> i16,
    ) -> Result<R::Response, KafkaError> {
        let retry = |error: &KafkaError| {
            error.is_transient()
                || matches!(error, KafkaError::Broker { error: ResponseError::ConcurrentTransactions, .. })
        };
        retry_while(retry, || {
            let coordinator = self.coordinator()?;
            let response = self.cluster.call_broker(coordinator, request);
            let checked = response.and_then(|response| {
                KafkaError::check(
                    api,
                    || format!("transactional id `{}`", self.transactional_id),
                    code_of(&response),
                    &[],
                )
                .map(|()| response)
            });
            if checked.as_ref().is_err_and(KafkaError::is_transient) {
                self.coordinator = None;
            }
            checked
        })
    }

    /// The coordinator of this transactional id, from the last lookup or a fresh one.
    fn coordinator(&mut self) -> Result<i32, KafkaError> {
        if let Some(id) = self.coordinator {
            return Ok(id);
        }
        let key = StrBytes::from_string(self.transactional_id.clone());
        let request =
            FindCoordinatorRequest::default().with_key_type(TRANSACTION_COORDINATOR).with_coordinator_keys(vec![key]);
        let response = self.cluster.any_call(&request)?;
        let found = response.coordinators.first().ok_or_else(|| KafkaError::Protocol {
            broker: self.cluster.brokers(),
            reason: format!("no coordinator in the answer for `{}`", self.transactional_id),
        })?;
        KafkaError::check(
            "FindCoordinator",
            || format!("transactional id `{}`", self.transactional_id),
            found.error_code,
            &[],
        )?;
        self.cluster.learn_broker(found.node_id.0, format!("{}:{}", found.host, found.port));
        self.coordinator = Some(found.node_id.0);
        Ok(found.node_id.0)
    }
}
