//! A job's source checked against the world before anything runs: the Kafka topic exists
//! and has the partitions the plan says (or they are filled in), offsets asked for are
//! still on the broker, the files are there. Each error names the broker, topic, partition
//! or file.

use sleet_kafka::cluster::Cluster;
use sleet_kafka::offsets::{list_offset, OffsetQuery, READ_UNCOMMITTED};
use sleet_kafka::KafkaError;
use sleet_plan::{KafkaSourceSpec, KafkaStart, SinkSpec, SourceSpec};

use crate::error::ConnectorError;
use crate::file_source::partitions_of;

/// Fills in the partition count of a source that has one outside the process, and checks
/// one that was given. Blocking: it talks to brokers and the file system.
pub fn resolve_source(spec: &mut SourceSpec) -> Result<(), ConnectorError> {
    match spec {
        SourceSpec::Ysb(_) | SourceSpec::Numbers(_) | SourceSpec::Gateway(_) | SourceSpec::Nexmark(_) => Ok(()),
        SourceSpec::Kafka(kafka) => resolve_kafka(kafka).map_err(|error| ConnectorError::External {
            what: format!("Kafka source (topic `{}` on {})", kafka.topic, kafka.brokers),
            reason: error.to_string(),
        }),
        SourceSpec::Files(files) => {
            let found = partitions_of(&files.path)?.len() as u32;
            if files.partitions != 0 && files.partitions != found {
                return Err(ConnectorError::External {
                    what: format!("file source {}", files.path),
                    reason: format!("holds {found} files, the job was planned for {}", files.partitions),
                });
            }
            files.partitions = found;
            Ok(())
        }
    }
}

fn resolve_kafka(spec: &mut KafkaSourceSpec) -> Result<(), KafkaError> {
    let mut cluster = Cluster::new(&spec.brokers);
    let topic = cluster.topic(&spec.topic)?;
    let found = topic.partitions();
    if spec.partitions != 0 && spec.partitions != found {
        return Err(KafkaError::PartitionCountChanged { topic: spec.topic.clone(), expected: spec.partitions, found });
    }
    spec.partitions = found;
    if let KafkaStart::Offsets(offsets) = &spec.start {
        if offsets.len() != found as usize {
            return Err(KafkaError::PartitionCountChanged {
                topic: spec.topic.clone(),
                expected: offsets.len() as u32,
                found,
            });
        }
        for (partition, &offset) in offsets.iter().enumerate() {
            let partition = partition as u32;
            let log_start = list_offset(&mut cluster, &spec.topic, partition, OffsetQuery::Earliest, READ_UNCOMMITTED)?;
            if offset < log_start {
                return Err(KafkaError::OffsetOutOfRange { topic: spec.topic.clone(), partition, offset, log_start });
            }
        }
    }
    Ok(())
}

/// Checks a sink outside the process before anything runs: a Kafka sink's topic exists.
pub fn resolve_sink(spec: &SinkSpec) -> Result<(), ConnectorError> {
    match spec {
        SinkSpec::Kafka { brokers, topic, .. } => {
            Cluster::new(brokers).topic(topic).map(|_| ()).map_err(|error| ConnectorError::External {
                what: format!("Kafka sink (topic `{topic}` on {brokers})"),
                reason: error.to_string(),
            })
        }
        SinkSpec::Stdout | SinkSpec::JsonLines { .. } | SinkSpec::Discard => Ok(()),
    }
}
