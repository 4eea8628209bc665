//! `sleet gen nexmark`: writes the Nexmark generator's events to a Kafka topic (generator
//! partition `p`, events `p, p + P, …`, to topic partition `p`), one JSON record per event, live
//! at a rate or, with `--count`, the first N events as fast as the broker takes them.
//!
//! What it wrote is the generator's spec (its `max_events` set to the events drawn) over the
//! printed time range, all in the JSON object printed on stdout at the end:
//! `nexmark_check::events(&spec, start_ms, end_ms)` recomputes every event from it.

use std::time::Duration;

use anyhow::{Context, Result};
use sleet_connectors::nexmark::{emitted_count, event_range, event_time_ms, NexmarkGenerator};
use sleet_exec::RawRecords;
use sleet_kafka::admin::ensure_topic;
use sleet_kafka::cluster::Cluster;
use sleet_plan::{NexmarkSourceSpec, NexmarkTable};
use sleet_wire::clock::now_ms;

use crate::gen_ysb::{PartitionGenerator, ProduceRun};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableArg {
    Person,
    Auction,
    Bid,
}

impl From<TableArg> for NexmarkTable {
    fn from(table: TableArg) -> Self {
        match table {
            TableArg::Person => NexmarkTable::Person,
            TableArg::Auction => NexmarkTable::Auction,
            TableArg::Bid => NexmarkTable::Bid,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct GenNexmarkArgs {
    /// Kafka brokers, `host:port[,host:port…]`.
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    #[arg(long, default_value = "nexmark")]
    pub topic: String,
    /// Partitions of the topic (created with this many if missing; an existing topic must
    /// have this many).
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    /// Events per second over all partitions (every kind counts, emitted or not); with
    /// --count, the rate the events' times are spaced at.
    #[arg(long, default_value_t = sleet_plan::nexmark::default_rate_per_s())]
    pub rate: u64,
    /// How long to produce live; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "60s")]
    pub duration: Duration,
    /// Instead of producing live, draw the first this many events and write those of the
    /// chosen kinds as fast as the broker takes them.
    #[arg(long)]
    pub count: Option<u64>,
    /// The kinds written, comma-separated; the others are drawn (ids and times stay those of
    /// the full stream) but not written.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TableArg::Person, TableArg::Auction, TableArg::Bid])]
    pub tables: Vec<TableArg>,
    /// Event time of the first event (ms since the epoch); default now (live) or now minus
    /// the backlog's length (--count).
    #[arg(long)]
    pub start_ms: Option<i64>,
}

/// What was written: with `nexmark_check::events(&spec, start_ms, end_ms)`, everything a
/// checker needs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Produced {
    pub topic: String,
    pub spec: NexmarkSourceSpec,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Events drawn, of every kind: `spec.max_events`.
    pub events: u64,
    /// Records written, the events of the kinds in `spec.tables`.
    pub records: u64,
    pub elapsed_s: f64,
}

impl PartitionGenerator for NexmarkGenerator {
    fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        NexmarkGenerator::generate(self, start_ms, end_ms, out)
    }
}

fn spec_of(args: &GenNexmarkArgs) -> Result<NexmarkSourceSpec> {
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    anyhow::ensure!(args.rate >= 1, "--rate must be at least 1");
    anyhow::ensure!(!args.tables.is_empty(), "--tables must name at least one of person, auction, bid");
    let mut tables: Vec<NexmarkTable> = args.tables.iter().map(|table| NexmarkTable::from(*table)).collect();
    tables.sort();
    tables.dedup();
    Ok(NexmarkSourceSpec { rate_per_s: args.rate, partitions: args.partitions, tables, ..NexmarkSourceSpec::new(0) })
}

pub fn run(args: &GenNexmarkArgs) -> Result<Produced> {
    let mut spec = spec_of(args)?;
    let live = args.count.is_none();
    // Where events fall relative to the start does not depend on the start.
    let (start_ms, end_ms) = match args.count {
        Some(count) => {
            let length_ms = if count == 0 { 0 } else { event_time_ms(&spec, count - 1) + 1 };
            let start = args.start_ms.unwrap_or_else(|| now_ms() - length_ms);
            (start, start + length_ms)
        }
        None => {
            let start = args.start_ms.unwrap_or_else(now_ms);
            (start, start + args.duration.as_millis() as i64)
        }
    };
    anyhow::ensure!(start_ms >= 0, "--start-ms must not be before the epoch");
    spec.start_ms = start_ms;
    // Events after the N-th may share its millisecond: the bound keeps them out.
    spec.max_events = args.count;
    let drawn = event_range(&spec, start_ms, end_ms);
    spec.max_events = Some(drawn.end);
    let records = emitted_count(&spec, drawn.clone());
    let mut cluster = Cluster::new(&args.brokers);
    ensure_topic(&mut cluster, &args.topic, args.partitions)
        .with_context(|| format!("preparing topic `{}` on {}", args.topic, args.brokers))?;
    let kinds: Vec<&str> = spec.tables.iter().map(|table| table.as_str()).collect();
    let run = ProduceRun {
        command: "gen nexmark",
        brokers: &args.brokers,
        topic: &args.topic,
        partitions: args.partitions,
        range: (start_ms, end_ms),
        live_rate: live.then_some(args.rate),
        records,
        what: format!("{records} {} records of {} events", kinds.join("+"), drawn.end),
    };
    let elapsed_s = run.produce(|partition| NexmarkGenerator::new(&spec, partition))?;
    Ok(Produced { topic: args.topic.clone(), spec, start_ms, end_ms, events: drawn.end, records, elapsed_s })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: GenNexmarkArgs,
    }

    #[test]
    fn flags_make_the_spec_with_the_kinds_named_once_each() {
        let args = Command::parse_from(["gen", "--tables", "bid,person,bid", "--rate", "5000"]).args;
        let spec = spec_of(&args).expect("valid");
        assert_eq!(spec.tables, [NexmarkTable::Person, NexmarkTable::Bid]);
        assert_eq!((spec.rate_per_s, spec.partitions), (5_000, 2));
        let all = Command::parse_from(["gen"]).args;
        assert_eq!(spec_of(&all).expect("valid").tables, NexmarkTable::ALL);
    }
}
