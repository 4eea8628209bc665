//! What a topic holds, read back `read_committed` after a run: every record counted, and the
//! distinct ones by a hash of their bytes. A reading's bytes name its gateway and its date, so
//! two records with equal bytes are one reading written twice (a retry after the ingest
//! server died before it answered), and fewer distinct records than the generator had
//! acknowledged means an acknowledged record was lost.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use anyhow::{Context, Result};
use sleet_kafka::cluster::Cluster;
use sleet_kafka::fetch::{FetchSettings, PartitionReader};
use sleet_kafka::offsets::OffsetQuery;

#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Census {
    pub records: u64,
    pub distinct: u64,
}

/// Reads every partition of `topic` from its start to its last stable offset.
pub fn take_census(brokers: &str, topic: &str) -> Result<Census> {
    let partitions =
        Cluster::new(brokers).topic(topic).with_context(|| format!("looking up topic {topic}"))?.partitions();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut records = 0u64;
    for partition in 0..partitions {
        let mut reader = PartitionReader::new(brokers, topic, partition, FetchSettings::default());
        let mut position =
            reader.offset(OffsetQuery::Earliest).with_context(|| format!("{topic}/{partition}: earliest offset"))?;
        let end = reader.offset(OffsetQuery::Latest).with_context(|| format!("{topic}/{partition}: end offset"))?;
        while position < end {
            let before = position;
            position = reader
                .fetch(position, end, &mut |record| {
                    records += 1;
                    let mut hasher = std::collections::hash_map::DefaultHasher::new();
                    record.value.unwrap_or_default().hash(&mut hasher);
                    seen.insert(hasher.finish());
                })
                .with_context(|| format!("{topic}/{partition}: fetching at offset {before}"))?;
            anyhow::ensure!(position > before, "{topic}/{partition}: no progress at offset {before} before {end}");
        }
    }
    Ok(Census { records, distinct: seen.len() as u64 })
}
