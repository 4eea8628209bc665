//! The one place a source spec becomes a `Source`: it knows every source, and each source
//! knows only the trait (`source.rs`), so adding a source touches this file and its own.

use std::sync::Arc;

use sleet_plan::SourceSpec;

use crate::file_source::FileSource;
use crate::gateway::GatewayGenerator;
use crate::generator::Generator;
use crate::kafka_source::KafkaSource;
use crate::nexmark::NexmarkGenerator;
use crate::numbers::NumbersGenerator;
use crate::source::Source;
use crate::ysb::YsbGenerator;

/// The partition `partition` of the source `spec` describes.
pub fn open_source(spec: &SourceSpec, partition: u32) -> Arc<dyn Source> {
    match spec {
        SourceSpec::Ysb(ysb) => Arc::new(Generator::Ysb(YsbGenerator::new(ysb, partition))),
        SourceSpec::Numbers(numbers) => Arc::new(Generator::Numbers(NumbersGenerator::new(numbers, partition))),
        SourceSpec::Kafka(kafka) => Arc::new(KafkaSource::new(kafka, partition)),
        SourceSpec::Files(files) => Arc::new(FileSource::new(files, partition)),
        SourceSpec::Gateway(gateway) => Arc::new(Generator::Gateway(GatewayGenerator::new(gateway, partition))),
        SourceSpec::Nexmark(nexmark) => {
            Arc::new(Generator::Nexmark(Box::new(NexmarkGenerator::new(nexmark, partition))))
        }
    }
}
