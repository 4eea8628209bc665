//! The brokers of a cluster, who leads which partition, and a connection to each.

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rustc_hash::FxHashMap as HashMap;

use crate::connection::Connection;
use crate::error::KafkaError;

/// A topic as the cluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    /// Partition `p`'s leader, `None` while it has none (a broker restarting).
    pub leaders: Vec<Option<i32>>,
}

impl TopicInfo {
    pub fn partitions(&self) -> u32 {
        self.leaders.len() as u32
    }
}

pub struct Cluster {
    bootstrap: Vec<String>,
    /// Broker id → `host:port`, from the last metadata response.
    addresses: HashMap<i32, String>,
    connections: HashMap<i32, Connection>,
    /// The connection metadata requests go to, by address.
    any: Option<Connection>,
}

impl Cluster {
    /// `brokers` is a comma-separated `host:port` list; nothing is contacted yet.
    pub fn new(brokers: &str) -> Self {
        let bootstrap =
            brokers.split(',').map(str::trim).filter(|broker| !broker.is_empty()).map(String::from).collect();
        Cluster { bootstrap, addresses: HashMap::default(), connections: HashMap::default(), any: None }
    }

    pub fn brokers(&self) -> String {
        self.bootstrap.join(",")
    }

    /// The topic's partitions and their leaders; an error naming the topic when it does not
    /// exist, naming the brokers when none answers.
    pub fn topic(&mut self, topic: &str) -> Result<TopicInfo, KafkaError> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(topic.to_string()))))
            ]))
            .with_allow_auto_topic_creation(false);
        let response = self.any_call(&request)?;
        for broker in &response.brokers {
            self.addresses.insert(broker.node_id.0, format!("{}:{}", broker.host, broker.port));
        }
        let Some(found) =
            response.topics.iter().find(|found| found.name.as_ref().is_some_and(|name| name.0.as_str() == topic))
        else {
            return Err(self.unknown_topic(topic));
        };
        match ResponseError::try_from_code(found.error_code) {
            None => {}
            Some(ResponseError::UnknownTopicOrPartition) => return Err(self.unknown_topic(topic)),
            Some(error) => return Err(KafkaError::Broker { api: "Metadata", what: format!("topic `{topic}`"), error }),
        }
        let mut leaders = vec![None; found.partitions.len()];
        for partition in &found.partitions {
            let index = partition.partition_index as usize;
            if index >= leaders.len() {
                return Err(KafkaError::Protocol {
                    broker: self.brokers(),
                    reason: format!("topic `{topic}` lists partition {index} of {}", leaders.len()),
                });
            }
            leaders[index] = (partition.leader_id.0 >= 0 && partition.error_code == 0).then_some(partition.leader_id.0);
        }
        Ok(TopicInfo { name: topic.to_string(), leaders })
    }

    fn unknown_topic(&self, topic: &str) -> KafkaError {
        KafkaError::UnknownTopic { topic: topic.to_string(), brokers: self.brokers() }
    }

    /// Sends a request to any broker that answers, bootstrap brokers first.
    pub fn any_call<R: kafka_protocol::protocol::Request>(&mut self, request: &R) -> Result<R::Response, KafkaError> {
        if let Some(connection) = self.any.as_mut() {
            match connection.call(request) {
                Ok(response) => return Ok(response),
                Err(error) if error.is_transient() => self.any = None,
                Err(error) => return Err(error),
            }
        }
        let mut reasons = Vec::new();
        let candidates: Vec<String> = self.bootstrap.iter().chain(self.addresses.values()).cloned().collect();
        for broker in candidates {
            match Connection::open(&broker).and_then(|mut connection| {
                let response = connection.call(request)?;
                Ok((connection, response))
            }) {
                Ok((connection, response)) => {
                    self.any = Some(connection);
                    return Ok(response);
                }
                Err(error) if error.is_transient() => reasons.push(error.to_string()),
                Err(error) => return Err(error),
            }
        }
        Err(KafkaError::NoBroker { brokers: self.brokers(), reason: reasons.join("; ") })
    }

    /// A connection to broker `id`, opened on first use.
    pub fn broker(&mut self, id: i32) -> Result<&mut Connection, KafkaError> {
        if !self.connections.contains_key(&id) {
            let address = self.addresses.get(&id).cloned().ok_or_else(|| KafkaError::Protocol {
                broker: self.brokers(),
                reason: format!("no address known for broker {id}"),
            })?;
            let connection = Connection::open(&address)?;
            self.connections.insert(id, connection);
        }
        Ok(self.connections.get_mut(&id).expect("inserted above"))
    }

    /// Drops the connection to broker `id` after an error, so the next use reconnects.
    pub fn forget(&mut self, id: i32) {
        self.connections.remove(&id);
    }

    /// The leader of `topic`/`partition`, from fresh metadata.
    pub fn leader(&mut self, topic: &str, partition: u32) -> Result<i32, KafkaError> {
        let info = self.topic(topic)?;
        match info.leaders.get(partition as usize) {
            Some(Some(leader)) => Ok(*leader),
            Some(None) => Err(KafkaError::Broker {
                api: "Metadata",
                what: format!("{topic}/{partition}"),
                error: ResponseError::LeaderNotAvailable,
            }),
            None => Err(KafkaError::PartitionCountChanged {
                topic: topic.to_string(),
                expected: partition + 1,
                found: info.partitions(),
            }),
        }
    }
}
