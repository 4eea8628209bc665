//! Creating topics, for the producer command and the tests.

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{CreateTopicsRequest, DeleteTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::Cluster;
use crate::error::KafkaError;

/// Creates `topic` with `partitions` partitions (replication 1: the clusters sleet starts
/// have one broker), or accepts it as it is when it exists with that many partitions.
pub fn ensure_topic(cluster: &mut Cluster, topic: &str, partitions: u32) -> Result<(), KafkaError> {
    match cluster.topic(topic) {
        Ok(info) if info.partitions() == partitions => return Ok(()),
        Ok(info) => {
            return Err(KafkaError::PartitionCountChanged {
                topic: topic.to_string(),
                expected: partitions,
                found: info.partitions(),
            })
        }
        Err(KafkaError::UnknownTopic { .. }) => {}
        Err(error) => return Err(error),
    }
    let request = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_num_partitions(partitions as i32)
        .with_replication_factor(1)]);
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
    for _ in 0..100 {
        if let Ok(info) = cluster.topic(topic) {
            if info.partitions() == partitions && info.leaders.iter().all(Option::is_some) {
                return Ok(());
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
