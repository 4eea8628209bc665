//! The check of a job's source and sink against the world outside the process, which the
//! driver runs at submission but does not implement.
//!
//! It stays in the driver, before planning, because that is the one place every job passes
//! whoever submitted it (`sleet submit`, the demo, a benchmark, another client) and because
//! planning needs what the check fills in (a Kafka topic's partition count, a directory's
//! files). Done by the client instead, a job from any other client would go unchecked and a
//! client's view of the brokers could differ from the cluster's; done by the workers, a
//! missing topic would surface only after the job was accepted and placed. The check itself
//! needs the Kafka client and the file sources' rules, which live in `sleet-connectors`
//! beside Arrow, so the driver names it as a trait and the binary that links the connectors
//! (`sleet`) supplies it: the control plane links neither.

use sleet_plan::{SinkSpec, SourceSpec};

/// Blocking: an implementation talks to brokers and reads the file system; the driver calls
/// it off its event loop. An error says what is wrong by name (the topic and brokers, the
/// file), since it becomes the job's rejection as it is.
pub trait ConnectorCheck: Send + Sync {
    /// Fills in the partition count of a source that has one outside the process, and checks
    /// one that was given.
    fn check_source(&self, spec: &mut SourceSpec) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;

    /// Checks that a sink outside the process can be written (a Kafka sink's topic exists).
    fn check_sink(&self, spec: &SinkSpec) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}
