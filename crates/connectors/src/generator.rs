//! One type for every generated source, so a worker holds whichever the job's plan names
//! without knowing the kinds.

use arrow_array::RecordBatch;
use sleet_exec::RawRecords;
use sleet_monotask::Resource;
use sleet_plan::SourceRange;

use crate::error::ConnectorError;
use crate::gateway::GatewayGenerator;
use crate::nexmark::NexmarkGenerator;
use crate::numbers::NumbersGenerator;
use crate::source::Source;
use crate::ysb::YsbGenerator;

pub enum Generator {
    Ysb(YsbGenerator),
    Numbers(NumbersGenerator),
    Gateway(GatewayGenerator),
    /// Boxed: the generator carries the crate's whole configuration, word lists included.
    Nexmark(Box<NexmarkGenerator>),
}

impl Generator {
    /// Appends this partition's records for `[start_ms, end_ms)`; returns how many.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        match self {
            Generator::Ysb(generator) => generator.generate(start_ms, end_ms, out),
            Generator::Numbers(generator) => generator.generate(start_ms, end_ms, out),
            Generator::Gateway(generator) => generator.generate(start_ms, end_ms, out),
            Generator::Nexmark(generator) => generator.generate(start_ms, end_ms, out),
        }
    }
}

/// A generator computes its records from `(seed, partition, time range)`: the batch's time
/// range is all there is to choose, and generating is cpu work.
impl Source for Generator {
    fn resource(&self) -> Resource {
        Resource::Cpu
    }

    fn read(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> Result<SourceRange, ConnectorError> {
        self.generate(start_ms, end_ms, out);
        Ok(SourceRange::Time { start_ms, end_ms })
    }

    fn read_decoded(&self, start_ms: i64, end_ms: i64) -> Option<Result<(RecordBatch, SourceRange), ConnectorError>> {
        match self {
            Generator::Ysb(generator) if generator.pre_decoded() => {
                Some(Ok((generator.generate_decoded(start_ms, end_ms), SourceRange::Time { start_ms, end_ms })))
            }
            _ => None,
        }
    }
}
