//! What can go wrong talking to Kafka, each case naming the broker, topic or partition.

use kafka_protocol::ResponseError;

#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    #[error("Kafka broker {broker} is unreachable: {reason}")]
    Unreachable { broker: String, reason: String },
    #[error("no Kafka broker of {brokers} answered: {reason}")]
    NoBroker { brokers: String, reason: String },
    #[error("Kafka topic `{topic}` does not exist on {brokers}")]
    UnknownTopic { topic: String, brokers: String },
    #[error("Kafka topic `{topic}` has {found} partitions, the job was planned for {expected}")]
    PartitionCountChanged { topic: String, expected: u32, found: u32 },
    #[error("Kafka {topic}/{partition}: offset {offset} is no longer on the broker (the log starts at {log_start}; retention or compaction removed it)")]
    OffsetOutOfRange { topic: String, partition: u32, offset: i64, log_start: i64 },
    #[error("Kafka {api} for {what} failed: {error}")]
    Broker { api: &'static str, what: String, error: ResponseError },
    #[error("Kafka broker {broker} does not support {api} version {version} (it offers {min}..={max})")]
    Unsupported { broker: String, api: &'static str, version: i16, min: i16, max: i16 },
    #[error("Kafka {topic}/{partition} at offset {offset}: {reason}")]
    BadBatch { topic: String, partition: u32, offset: i64, reason: String },
    #[error("talking to Kafka broker {broker}: {reason}")]
    Protocol { broker: String, reason: String },
}

impl KafkaError {
    /// A response's error code as a result: `Ok` for none and for the `tolerated` ones,
    /// otherwise the broker's error for `api` on `what`.
    pub fn check(
        api: &'static str,
        what: impl FnOnce() -> String,
        code: i16,
        tolerated: &[ResponseError],
    ) -> Result<(), Self> {
        match ResponseError::try_from_code(code) {
            Some(error) if !tolerated.contains(&error) => Err(KafkaError::Broker { api, what: what(), error }),
            _ => Ok(()),
        }
    }

    /// Whether trying again later (after a metadata refresh or a reconnect) can succeed:
    /// a broker that is down or restarting, a leader that moved.
    pub fn is_transient(&self) -> bool {
        match self {
            KafkaError::Unreachable { .. } | KafkaError::NoBroker { .. } | KafkaError::Protocol { .. } => true,
            KafkaError::Broker { error, .. } => error.is_retriable(),
            _ => false,
        }
    }
}
