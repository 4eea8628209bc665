//! Folding monotask records into "where the time goes": busy and queued time per kind.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{MonotaskKind, MonotaskRecord, Resource};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    pub monotasks: u64,
    pub run_ms: f64,
    pub queue_ms: f64,
    pub bytes: u64,
}

/// Sums run and queue time per monotask kind, and per resource under the key `"<resource>"`.
pub fn summarize<'a>(records: impl IntoIterator<Item = &'a MonotaskRecord>) -> BTreeMap<String, ResourceSummary> {
    let mut out: BTreeMap<String, ResourceSummary> = BTreeMap::new();
    for record in records {
        for key in [kind_name(record.kind), resource_name(record.resource)] {
            let entry = out.entry(key.to_string()).or_default();
            entry.monotasks += 1;
            entry.run_ms += record.run_us() as f64 / 1000.0;
            entry.queue_ms += record.queue_us() as f64 / 1000.0;
            entry.bytes += record.bytes;
        }
    }
    out
}

fn kind_name(kind: MonotaskKind) -> &'static str {
    match kind {
        MonotaskKind::SourceRead => "source_read",
        MonotaskKind::MapCompute => "map_compute",
        MonotaskKind::ShuffleFetch => "shuffle_fetch",
        MonotaskKind::ReduceCompute => "reduce_compute",
        MonotaskKind::SinkWrite => "sink_write",
    }
}

fn resource_name(resource: Resource) -> &'static str {
    match resource {
        Resource::Cpu => "cpu",
        Resource::Net => "net",
        Resource::Disk => "disk",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: MonotaskKind, queued: i64, started: i64, finished: i64) -> MonotaskRecord {
        MonotaskRecord {
            kind,
            resource: kind.resource(),
            bytes: 10,
            queued_at_us: queued,
            started_at_us: started,
            finished_at_us: finished,
        }
    }

    #[test]
    fn sums_per_kind_and_per_resource() {
        let records = [
            record(MonotaskKind::MapCompute, 0, 1000, 3000),
            record(MonotaskKind::ReduceCompute, 0, 0, 500),
            record(MonotaskKind::ShuffleFetch, 0, 2000, 2500),
        ];
        let summary = summarize(&records);
        assert_eq!(summary["map_compute"].run_ms, 2.0);
        assert_eq!(summary["map_compute"].queue_ms, 1.0);
        assert_eq!(summary["cpu"].run_ms, 2.5);
        assert_eq!(summary["cpu"].monotasks, 2);
        assert_eq!(summary["net"].bytes, 10);
        assert!(!summary.contains_key("disk"));
    }
}
