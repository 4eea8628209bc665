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
    /// Each topic as the last lookup found it, so a request finds its partition's leader
    /// without a round trip; dropped by `invalidate` when a call shows it may be stale.
    topics: HashMap<String, TopicInfo>,
}

impl Cluster {
    /// `brokers` is a comma-separated `host:port` list; nothing is contacted yet.
    pub fn new(brokers: &str) -> Self {
        let bootstrap =
            brokers.split(',').map(str::trim).filter(|broker| !broker.is_empty()).map(String::from).collect();
        Cluster {
            bootstrap,
            addresses: HashMap::default(),
            connections: HashMap::default(),
            any: None,
            topics: HashMap::default(),
        }
    }

    pub fn brokers(&self) -> String {
        self.bootstrap.join(",")
    }

    /// The topic's partitions and their leaders, asked afresh; an error naming the topic when
    /// it does not exist, naming the brokers when none answers.
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
        let info = TopicInfo { leaders };
        self.topics.insert(topic.to_string(), info.clone());
        Ok(info)
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

    /// Remembers where broker `id` listens (a coordinator lookup names it).
    pub fn learn_broker(&mut self, id: i32, address: String) {
        if self.addresses.get(&id) != Some(&address) {
            self.connections.remove(&id);
            self.addresses.insert(id, address);
        }
    }

    /// Sends `request` to broker `id`; a call that fails on the wire drops the connection.
    pub fn call_broker<R: kafka_protocol::protocol::Request>(
        &mut self,
        id: i32,
        request: &R,
    ) -> Result<R::Response, KafkaError> {
        let result = self.broker(id).and_then(|connection| connection.call(request));
        if result.is_err() {
            self.connections.remove(&id);
        }
        result
    }

    /// A connection to broker `id`, opened on first use.
    fn broker(&mut self, id: i32) -> Result<&mut Connection, KafkaError> {
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

    /// Sends `request` to the leader of `topic`/`partition`. A call that fails on the wire
    /// drops that connection and what is known of the topic, so the next call reconnects to
    /// whoever leads then.
    pub fn call_leader<R: kafka_protocol::protocol::Request>(
        &mut self,
        topic: &str,
        partition: u32,
        request: &R,
    ) -> Result<R::Response, KafkaError> {
        let leader = self.leader(topic, partition)?;
        let result = self.call_broker(leader, request);
        if result.is_err() {
            self.invalidate(topic);
        }
        result
    }

    /// Forgets what is known of `topic`: after an answer such as "not the leader", the next
    /// call asks for metadata again.
    pub fn invalidate(&mut self, topic: &str) {
        self.topics.remove(topic);
    }

    /// The leader of `topic`/`partition`, from the last lookup or a fresh one.
    fn leader(&mut self, topic: &str, partition: u32) -> Result<i32, KafkaError> {
        let info = match self.topics.get(topic) {
            Some(info) if info.leaders.get(partition as usize).is_some_and(Option::is_some) => info.clone(),
            _ => self.topic(topic)?,
        };
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
