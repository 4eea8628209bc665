//! Folding monotask records into "where the time goes": busy and queued time per kind.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use sleet_monotask::{MonotaskKind, MonotaskRecord, Resource};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    pub monotasks: u64,
    pub run_ms: f64,
    pub queue_ms: f64,
    pub bytes: u64,
}

/// Sums run and queue time per monotask kind, and per resource under the key `"<resource>"`.
pub fn summarize<'a>(records: impl IntoIterator<Item = &'a MonotaskRecord>) -> BTreeMap<String, ResourceSummary> {
    let mut totals = MonotaskTotals::default();
    for record in records {
        totals.add(record);
    }
    totals.summary()
}

/// Running sums per monotask kind and resource, in constant space: what `summarize` returns,
/// for a stream of records too long to keep. Adding a record is a few additions, which
/// matters to the driver, which adds every monotask of the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonotaskTotals {
    by_kind: [[KindTotals; Resource::ALL.len()]; MonotaskKind::ALL.len()],
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct KindTotals {
    monotasks: u64,
    run_us: i64,
    queue_us: i64,
    bytes: u64,
}

impl MonotaskTotals {
    pub fn add(&mut self, record: &MonotaskRecord) {
        let totals = &mut self.by_kind[record.kind as usize][record.resource as usize];
        totals.monotasks += 1;
        totals.run_us += record.run_us();
        totals.queue_us += record.queue_us();
        totals.bytes += record.bytes;
    }

    /// Per kind and per resource, only those that ran at least one monotask.
    pub fn summary(&self) -> BTreeMap<String, ResourceSummary> {
        let mut out: BTreeMap<String, ResourceSummary> = BTreeMap::new();
        for (kind, by_resource) in MonotaskKind::ALL.iter().zip(&self.by_kind) {
            for (resource, totals) in Resource::ALL.iter().zip(by_resource) {
                if totals.monotasks == 0 {
                    continue;
                }
                for key in [kind_name(*kind), resource_name(*resource)] {
                    let entry = out.entry(key.to_string()).or_default();
                    entry.monotasks += totals.monotasks;
                    entry.run_ms += totals.run_us as f64 / 1000.0;
                    entry.queue_ms += totals.queue_us as f64 / 1000.0;
                    entry.bytes += totals.bytes;
                }
            }
        }
        out
    }
}

fn kind_name(kind: MonotaskKind) -> &'static str {
    match kind {
        MonotaskKind::SourceRead => "source_read",
        MonotaskKind::MapCompute => "map_compute",
        MonotaskKind::ShuffleFetch => "shuffle_fetch",
        MonotaskKind::ReduceCompute => "reduce_compute",
        MonotaskKind::SinkWrite => "sink_write",
        MonotaskKind::StateSnapshot => "state_snapshot",
        MonotaskKind::CheckpointWrite => "checkpoint_write",
        MonotaskKind::Decode => "decode",
        MonotaskKind::Combine => "combine",
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

    fn record(kind: MonotaskKind, resource: Resource, queued: i64, started: i64, finished: i64) -> MonotaskRecord {
        MonotaskRecord {
            kind,
            resource,
            bytes: 10,
            queued_at_us: queued,
            started_at_us: started,
            finished_at_us: finished,
        }
    }

    #[test]
    fn sums_per_kind_and_per_resource() {
        let records = [
            record(MonotaskKind::MapCompute, Resource::Cpu, 0, 1000, 3000),
            record(MonotaskKind::ReduceCompute, Resource::Cpu, 0, 0, 500),
            record(MonotaskKind::ShuffleFetch, Resource::Net, 0, 2000, 2500),
            record(MonotaskKind::SourceRead, Resource::Disk, 0, 100, 400),
        ];
        let summary = summarize(&records);
        assert_eq!(summary["map_compute"].run_ms, 2.0);
        assert_eq!(summary["map_compute"].queue_ms, 1.0);
        assert_eq!(summary["cpu"].run_ms, 2.5);
        assert_eq!(summary["cpu"].monotasks, 2);
        assert_eq!(summary["net"].bytes, 10);
        assert_eq!(summary["disk"].run_ms, 0.3, "a source read counts under the resource it used");
        assert_eq!(summary["source_read"].run_ms, 0.3);
    }

    #[test]
    fn totals_added_one_by_one_equal_the_summary_of_all() {
        let records: Vec<MonotaskRecord> = (0..500)
            .map(|i| {
                let kind = MonotaskKind::ALL[i % MonotaskKind::ALL.len()];
                let resource = Resource::ALL[i % Resource::ALL.len()];
                record(kind, resource, i as i64, 3 * i as i64, 7 * i as i64)
            })
            .collect();
        let mut totals = MonotaskTotals::default();
        records.iter().for_each(|record| totals.add(record));
        let summary = totals.summary();
        assert_eq!(summary, summarize(&records));
        assert_eq!(summary["cpu"].monotasks, 167);
        assert_eq!(summary["disk"].monotasks, 166);
        // 500 records over 9 kinds: 56 of each of the first 5, 55 of the rest.
        assert_eq!(summary["map_compute"].monotasks, 56);
        assert_eq!(summary["checkpoint_write"].monotasks, 55);
        assert_eq!(summary["combine"].monotasks, 55);
    }
}
