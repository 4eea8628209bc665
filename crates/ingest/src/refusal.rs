//! Why the server did not acknowledge records, and what each reason means for the client.

/// Records refused after they were well formed: the client may send them again later
/// (except `TooLarge`, which needs a smaller request). None of them was acknowledged; a
/// record refused after it reached the Kafka writer may still have been written (Kafka's
/// answer never came in time), so a retry can duplicate it: delivery is at least once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    TooLarge(String),
    Overloaded(String),
    KafkaUnavailable(String),
    /// Kafka did not acknowledge within the ack timeout.
    Timeout(String),
    ShuttingDown,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge(reason) | Refusal::Overloaded(reason) => f.write_str(reason),
            Refusal::KafkaUnavailable(reason) => write!(f, "Kafka is unavailable: {reason}"),
            Refusal::Timeout(reason) => f.write_str(reason),
            Refusal::ShuttingDown => f.write_str("the server is shutting down"),
        }
    }
}
