//! Creating topics, for the producer command and the tests.

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{CreateTopicsRequest, DeleteTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::Cluster;
use crate::error::KafkaError;

/// Creates `topic` with `partitions` partitions (replication 1: the clusters sleet starts
/// have one broker), or accepts it as it is when it exists with that many partitions.
pub fn ensure_topic(cluster: &mut Cluster, topic: &str, partitions: u32) -> Result<(), KafkaError> {
    let found = ensure_topic_with(cluster, topic, partitions, &[])?;
    if found != partitions {
        return Err(KafkaError::PartitionCountChanged { topic: topic.to_string(), expected: partitions, found });
    }
    Ok(())
}

/// Creates `topic` with `partitions` partitions and the topic `configs` given, unless it
/// exists; returns how many partitions it has (an existing topic keeps its own count).
pub fn ensure_topic_with(
    cluster: &mut Cluster,
    topic: &str,
    partitions: u32,
    configs: &[(&str, &str)],
) -> Result<u32, KafkaError> {
    match cluster.topic(topic) {
        Ok(info) => return Ok(info.partitions()),
        Err(KafkaError::UnknownTopic { .. }) => {}
        Err(error) => return Err(error),
    }
    let configs = configs
        .iter()
        .map(|(name, value)| {
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string(name.to_string()))
                .with_value(Some(StrBytes::from_string(value.to_string())))
        })
        .collect();
    let request = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_num_partitions(partitions as i32)
        .with_replication_factor(1)
        .with_configs(configs)]);
    let response = cluster.any_call(&request)?;
    for result in &response.topics {
        KafkaError::check(
            "CreateTopics",
            || format!("topic `{topic}`"),
            result.error_code,
            &[ResponseError::TopicAlreadyExists],
        )?;
    }
    // The controller has the topic; wait (bounded) until the metadata shows every leader.
    // Another creator may have won the race with a different count: take what is there.
    for _ in 0..100 {
        if let Ok(info) = cluster.topic(topic) {
            if info.partitions() > 0 && info.leaders.iter().all(Option::is_some) {
                return Ok(info.partitions());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(KafkaError::Broker {
        api: "CreateTopics",
        what: format!("topic `{topic}` (no leaders after 5 s)"),
        error: ResponseError::LeaderNotAvailable,
    })
}

/// Deletes `topic`; one that is already gone is fine.
pub fn delete_topic(cluster: &mut Cluster, topic: &str) -> Result<(), KafkaError> {
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topic_names(vec![TopicName(StrBytes::from_string(topic.to_string()))]);
    let response = cluster.any_call(&request)?;
    for result in &response.responses {
        let tolerated = [ResponseError::UnknownTopicOrPartition];
        KafkaError::check("DeleteTopics", || format!("topic `{topic}`"), result.error_code, &tolerated)?;
    }
    Ok(())
}
