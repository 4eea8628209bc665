//! `sleet gen nexmark` against a real Kafka broker: every record it writes is read back from
//! the topic and compared with the generator the printed spec names (partition, bytes and
//! order), and the records decode to the ground truth's events of the kinds chosen.

use crate::common;

use std::time::Duration;

use common::kafka::{brokers, fresh_topic, read_values};
use common::{assert_success, run_with_limit, sleet};
use sleet_connectors::nexmark::{record_schema, table_of_event, NexmarkGenerator};
use sleet_exec::RawRecords;
use sleet_plan::NexmarkTable;
use sleet_workloads::gen_nexmark::Produced;
use sleet_workloads::nexmark_check;

#[test]
fn gen_nexmark_writes_the_generators_partitions_to_kafkas() {
    let topic = fresh_topic("nexmark");
    let mut gen = sleet();
    gen.args(["gen", "nexmark", "--brokers", brokers(), "--topic", &topic, "--partitions", "3"]);
    gen.args(["--count", "20000", "--rate", "50000", "--tables", "person,bid"]);
    let output = run_with_limit(gen, Duration::from_secs(120));
    assert_success(&output, "sleet gen nexmark");
    let produced: Produced = serde_json::from_slice(&output.stdout).expect("the run's JSON on stdout");
    assert_eq!((produced.events, produced.spec.max_events), (20_000, Some(20_000)));
    assert_eq!(produced.spec.tables, [NexmarkTable::Person, NexmarkTable::Bid]);

    let mut written = RawRecords::new();
    for partition in 0..3 {
        let read = read_values(&topic, partition);
        let generator = NexmarkGenerator::new(&produced.spec, partition);
        let mut expected = RawRecords::new();
        generator.generate(produced.start_ms, produced.end_ms, &mut expected);
        assert_eq!(read.len(), expected.len(), "partition {partition}");
        for (index, (value, expected_value)) in read.iter().zip(expected.iter()).enumerate() {
            assert_eq!(value.as_slice(), expected_value, "partition {partition} record {index}");
            written.push(value);
        }
    }
    // 400 persons and 18 400 bids of the first 20 000 events; no auction.
    let truth: Vec<_> = nexmark_check::events(&produced.spec, produced.start_ms, produced.end_ms)
        .into_iter()
        .filter(|event| table_of_event(event) != NexmarkTable::Auction)
        .collect();
    assert_eq!((written.len() as u64, truth.len()), (produced.records, 18_800));
    let schema = record_schema();
    let names: Vec<String> = schema.fields.iter().map(|field| field.name.clone()).collect();
    let decoded = sleet_exec::json::JsonDecoder::new(&schema, &names, 4096).expect("decoder").decode(&written);
    assert!(decoded.dead_letters.is_empty(), "{:?}", decoded.dead_letters.first());
    assert_eq!(decoded.batch.num_rows(), truth.len());
}
