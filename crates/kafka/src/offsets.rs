//! Where a partition starts and ends: ListOffsets.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::Cluster;
use crate::error::KafkaError;

/// Which offset of a partition to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetQuery {
    /// The first offset still on the broker.
    Earliest,
    /// The offset the next record will get (for `read_committed`, the last stable offset).
    Latest,
    /// The first offset whose record timestamp is at or after this (ms); `Latest` if none is.
    Timestamp(i64),
}

impl OffsetQuery {
    fn wire(self) -> i64 {
        match self {
            OffsetQuery::Earliest => -2,
            OffsetQuery::Latest => -1,
            OffsetQuery::Timestamp(ms) => ms,
        }
    }
}

pub const READ_UNCOMMITTED: i8 = 0;
pub const READ_COMMITTED: i8 = 1;

/// The offset `query` names on `topic`/`partition`, asked of the partition's leader.
pub fn list_offset(
    cluster: &mut Cluster,
    topic: &str,
    partition: u32,
    query: OffsetQuery,
    isolation_level: i8,
) -> Result<i64, KafkaError> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation_level)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition as i32)
                .with_current_leader_epoch(-1)
                .with_timestamp(query.wire())])]);
    let response = cluster.call_leader(topic, partition, &request)?;
    let what = || format!("{topic}/{partition}");
    let found = response
        .topics
        .iter()
        .flat_map(|topic| topic.partitions.iter())
        .find(|found| found.partition_index == partition as i32)
        .ok_or_else(|| KafkaError::Protocol {
            broker: cluster.brokers(),
            reason: format!("no offset for {}", what()),
        })?;
    if let Err(error) = KafkaError::check("ListOffsets", what, found.error_code, &[]) {
        if error.is_transient() {
            cluster.invalidate(topic);
        }
        return Err(error);
    }
    if found.offset < 0 && matches!(query, OffsetQuery::Timestamp(_)) {
        // No record at or after the timestamp: start where the next one will be written.
        return list_offset(cluster, topic, partition, OffsetQuery::Latest, isolation_level);
    }
    Ok(found.offset)
}
