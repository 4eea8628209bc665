//! Reading one partition by offset: Fetch requests to its leader, records parsed in place.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::Cluster;
use crate::error::KafkaError;
use crate::offsets::{list_offset, OffsetQuery};
use crate::records::{parse_batches, AbortedTransactions, Record};

/// How a partition is read.
#[derive(Debug, Clone, Copy)]
pub struct FetchSettings {
    /// `offsets::READ_COMMITTED` or `READ_UNCOMMITTED`.
    pub isolation_level: i8,
    /// How long the broker may hold a fetch open waiting for data.
    pub max_wait_ms: i32,
    pub max_bytes: i32,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings { isolation_level: crate::offsets::READ_COMMITTED, max_wait_ms: 5, max_bytes: 8 << 20 }
    }
}

pub struct PartitionReader {
    cluster: Cluster,
    topic: String,
    partition: u32,
    settings: FetchSettings,
    scratch: Vec<u8>,
}

impl PartitionReader {
    pub fn new(brokers: &str, topic: &str, partition: u32, settings: FetchSettings) -> Self {
        PartitionReader {
            cluster: Cluster::new(brokers),
            topic: topic.to_string(),
            partition,
            settings,
            scratch: Vec::new(),
        }
    }

    pub fn offset(&mut self, query: OffsetQuery) -> Result<i64, KafkaError> {
        self.offset_at(query, self.settings.isolation_level)
    }

    /// `offset` as a reader at `isolation_level` sees it: for `Latest`, read_uncommitted
    /// gives the end of what was written, read_committed the last stable offset.
    pub fn offset_at(&mut self, query: OffsetQuery, isolation_level: i8) -> Result<i64, KafkaError> {
        list_offset(&mut self.cluster, &self.topic, self.partition, query, isolation_level)
    }

    /// One fetch from `from`, handing every record in `[from, end)` to `visit`; returns the
    /// offset to fetch next. After a transient error (broker down, leader moved) the next
    /// call looks up the leader again.
    pub fn fetch(&mut self, from: i64, end: i64, visit: &mut dyn FnMut(Record<'_>)) -> Result<i64, KafkaError> {
        let result = self.fetch_from_leader(from, end, visit);
        if result.as_ref().is_err_and(KafkaError::is_transient) {
            self.cluster.invalidate(&self.topic);
        }
        result
    }

    fn fetch_from_leader(&mut self, from: i64, end: i64, visit: &mut dyn FnMut(Record<'_>)) -> Result<i64, KafkaError> {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(self.settings.max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(self.settings.max_bytes)
            .with_isolation_level(self.settings.isolation_level)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(self.topic.clone())))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(self.partition as i32)
                    .with_current_leader_epoch(-1)
                    .with_fetch_offset(from)
                    .with_last_fetched_epoch(-1)
                    .with_log_start_offset(-1)
                    .with_partition_max_bytes(self.settings.max_bytes)])]);
        let response = self.cluster.call_leader(&self.topic, self.partition, &request)?;
        KafkaError::check("Fetch", || self.what(), response.error_code, &[])?;
        let data = response
            .responses
            .iter()
            .flat_map(|topic| topic.partitions.iter())
            .find(|data| data.partition_index == self.partition as i32)
            .ok_or_else(|| KafkaError::Protocol {
                broker: self.cluster.brokers(),
                reason: format!("no data for {}", self.what()),
            })?;
        match ResponseError::try_from_code(data.error_code) {
            None => {}
            Some(ResponseError::OffsetOutOfRange) => {
                let log_start = self.offset(OffsetQuery::Earliest).unwrap_or(-1);
                return Err(KafkaError::OffsetOutOfRange {
                    topic: self.topic.clone(),
                    partition: self.partition,
                    offset: from,
                    log_start,
                });
            }
            Some(error) => return Err(KafkaError::Broker { api: "Fetch", what: self.what(), error }),
        }
        let records = data.records.as_deref().unwrap_or(&[]);
        let parsed =
            parse_batches(records, from, end, &mut aborted_in(data), &mut self.scratch, visit).map_err(|reason| {
                KafkaError::BadBatch { topic: self.topic.clone(), partition: self.partition, offset: from, reason }
            })?;
        Ok(parsed.next_offset)
    }

    fn what(&self) -> String {
        format!("{}/{}", self.topic, self.partition)
    }
}

/// The transactions a fetch response says were aborted in a partition's range, as
/// `parse_batches` takes them.
pub fn aborted_in(data: &PartitionData) -> AbortedTransactions {
    let aborted = data.aborted_transactions.iter().flatten();
    AbortedTransactions::new(aborted.map(|aborted| (aborted.producer_id.0, aborted.first_offset)).collect())
}
