//! `sleet gen gateway` against a real Kafka broker: every record it sends is read back from
//! the topic and compared with the generator function the printed spec names (key, partition,
//! bytes and order), and each key sits in the partition Kafka's default partitioner gives it.

use crate::common;

use std::time::Duration;

use common::kafka::{brokers, fresh_topic, read_partition};
use common::{assert_success, run_with_limit, sleet};
use sleet_connectors::gateway::GatewayGenerator;
use sleet_exec::RawRecords;
use sleet_kafka::partitioner::murmur2_partition;
use sleet_workloads::gen_gateway::Produced;

#[test]
fn gen_gateway_sends_the_generators_records_keyed_to_kafkas_partitions() {
    let topic = fresh_topic("gateway");
    let mut gen = sleet();
    gen.args(["gen", "gateway", "--to", "kafka", "--brokers", brokers(), "--topic", &topic, "--partitions", "3"]);
    gen.args(["--gateways", "60", "--count", "4000", "--encoding", "cumulative", "--late-fraction", "0.1"]);
    gen.args(["--seed", "11", "--max-delay", "3m"]);
    let output = run_with_limit(gen, Duration::from_secs(120));
    assert_success(&output, "sleet gen gateway");
    let produced: Produced = serde_json::from_slice(&output.stdout).expect("the run's JSON on stdout");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("records/s"), "a rate is reported: {stderr}");
    assert!(produced.records >= 4_000 && produced.records < 4_060, "{} records", produced.records);
    assert_eq!(produced.spec.max_delay_ms, 180_000);
    assert_eq!(produced.delivered_end_ms, produced.spec.drained_ms().expect("the run stops"));

    let mut total = 0;
    let mut late = 0;
    for partition in 0..3 {
        let read = read_partition(&topic, partition);
        let generator = GatewayGenerator::new(&produced.spec, partition);
        let (mut expected, mut keys) = (RawRecords::new(), Vec::new());
        generator.generate_simulated(
            produced.delivered_start_ms,
            produced.delivered_end_ms,
            &mut expected,
            Some(&mut keys),
        );
        assert_eq!(read.len(), expected.len(), "partition {partition}");
        for (index, ((key, value), (expected_value, expected_key))) in
            read.iter().zip(expected.iter().zip(&keys)).enumerate()
        {
            assert_eq!(key, expected_key, "partition {partition} record {index}");
            assert_eq!(value.as_slice(), expected_value, "partition {partition} record {index}");
            assert_eq!(murmur2_partition(key.as_bytes(), 3), partition, "key {key}");
        }
        // Records a later-dated one came before: delivered late.
        let mut newest = std::collections::BTreeMap::new();
        for (key, value) in &read {
            let record: serde_json::Value = serde_json::from_slice(value).expect("JSON");
            let date = record["date"].as_i64().expect("date");
            let seen = newest.entry(key.clone()).or_insert(i64::MIN);
            late += usize::from(date < *seen);
            *seen = (*seen).max(date);
        }
        total += read.len();
    }
    assert_eq!(total as u64, produced.records);
    assert!(late > 50, "{late} records arrived after a later one of their gateway");
}
