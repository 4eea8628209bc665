//! The driver's check of a job's source and sink, done by the connectors that will run them
//! (`sleet_driver::connector_check` says why the driver takes it from here).

use sleet_driver::ConnectorCheck;
use sleet_plan::{SinkSpec, SourceSpec};

/// `sleet_connectors::resolve`, behind the driver's trait.
pub struct ConnectorResolver;

impl ConnectorCheck for ConnectorResolver {
    fn check_source(&self, spec: &mut SourceSpec) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(sleet_connectors::resolve::resolve_source(spec)?)
    }

    fn check_sink(&self, spec: &SinkSpec) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(sleet_connectors::resolve::resolve_sink(spec)?)
    }
}
