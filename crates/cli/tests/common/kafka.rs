//! The Kafka broker of the integration tests: started once per test run by `scripts/test.sh`
//! (and stopped by it); a test run without it starts the same broker through the same script
//! on first use. Tests that stop a broker start one of their own on another port.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const TEST_BROKER_PORT: u16 = 19092;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// `scripts/kafka.sh ARGS`, which must succeed; its stdout.
pub fn kafka_script(args: &[&str]) -> String {
    let output =
        Command::new(repo_root().join("scripts/kafka.sh")).args(args).output().expect("running scripts/kafka.sh");
    assert!(
        output.status.success(),
        "scripts/kafka.sh {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

pub fn broker_dir(port: u16) -> String {
    repo_root().join(format!("target/kafka-test-{port}")).display().to_string()
}

/// The shared test broker's address, starting it if this run has none.
pub fn brokers() -> &'static str {
    static BROKERS: OnceLock<String> = OnceLock::new();
    BROKERS.get_or_init(|| match std::env::var("SLEET_KAFKA_BROKERS") {
        Ok(brokers) if !brokers.is_empty() => brokers,
        _ => {
            let port = TEST_BROKER_PORT.to_string();
            kafka_script(&["start", "--port", &port, "--dir", &broker_dir(TEST_BROKER_PORT)])
        }
    })
}

/// A topic name no other test (or earlier run) uses.
pub fn fresh_topic(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("time").as_millis()
    )
}

/// Every record of `partition` of `topic` on the shared broker, as `(key, value)`, in offset
/// order; every record must have a UTF-8 key and a value.
pub fn read_partition(topic: &str, partition: u32) -> Vec<(String, Vec<u8>)> {
    let mut records = Vec::new();
    for_each_record(topic, partition, |key, value| {
        let key = String::from_utf8(key.expect("a keyed record").to_vec()).expect("a utf-8 key");
        records.push((key, value.to_vec()));
    });
    records
}

/// The values of every record of `partition` of `topic` on the shared broker, keyed or not,
/// in offset order.
pub fn read_values(topic: &str, partition: u32) -> Vec<Vec<u8>> {
    let mut values = Vec::new();
    for_each_record(topic, partition, |_, value| values.push(value.to_vec()));
    values
}

/// Calls `visit(key, value)` for every record of `partition` of `topic`, in offset order;
/// every record must have a value.
fn for_each_record(topic: &str, partition: u32, mut visit: impl FnMut(Option<&[u8]>, &[u8])) {
    use sleet_kafka::fetch::{FetchSettings, PartitionReader};
    use sleet_kafka::offsets::OffsetQuery;

    let mut reader = PartitionReader::new(brokers(), topic, partition, FetchSettings::default());
    let end = reader.offset(OffsetQuery::Latest).expect("end offset");
    let mut position = reader.offset(OffsetQuery::Earliest).expect("earliest offset");
    for _ in 0..10_000 {
        if position >= end {
            break;
        }
        position = reader
            .fetch(position, end, &mut |record| visit(record.key, record.value.expect("a value")))
            .expect("fetch");
    }
    assert_eq!(position, end, "partition {partition} read to its end");
}
