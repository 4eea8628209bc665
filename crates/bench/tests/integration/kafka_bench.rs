//! `sleet-bench ysb --source kafka` against a real Kafka broker (started by
//! `scripts/kafka.sh`): a drained backlog and a live stream counted exactly, and a broker
//! stopped for 10 s in the middle of a run.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::kafka::{broker_dir, brokers, kafka_script, repo_root};
use common::{assert_success, dead_letters, read_json, run_with_limit, sleet_bench, test_dir, wait_with_limit, Reaper};

#[test]
fn a_preloaded_topic_is_drained_exactly_into_a_kafka_sink_with_bad_records_in_the_dead_letters() {
    let dir = test_dir("kafka-drain");
    let result = dir.join("drain.json");
    let mut bench = sleet_bench();
    bench.args(["ysb", "--source", "kafka", "--brokers", brokers(), "--preload", "300000"]);
    bench.args(["--rate", "100000", "--batch-interval", "50ms", "--bad-fraction", "0.01", "--workers", "2"]);
    // The results go to a Kafka topic too, and are checked read back from it.
    bench.arg("--sink-kafka");
    bench.arg("--json").arg(&result).arg("--out").arg(dir.join("out"));
    let output = run_with_limit(bench, Duration::from_secs(180));
    assert_success(&output, "bench ysb --source kafka --preload");
    let json = read_json(&result);
    assert_eq!(json["correct"], true, "{json:#}");
    assert_eq!(json["events_in"], 300_000);
    assert_eq!(json["config"]["sink"], "kafka");
    assert!(json["dead_letters"].as_u64().expect("dead letters") > 1_000, "1 % of 300 000 are bad");
    assert_eq!(json["dead_letters"], json["dead_letters_expected"]);
    assert!(json["kafka"]["drain"]["events_per_s"].as_f64().expect("drain rate") > 0.0);
    assert!(json["kafka"]["cpu_us_per_event"]["sleet"].as_f64().expect("sleet cpu") > 0.0);
    assert!(json["kafka"]["cpu_us_per_event"]["producer"].as_f64().expect("producer cpu") > 0.0);
    // Every batch logged the offsets it read on each partition, and the ranges of a
    // partition follow each other without gap or overlap.
    assert_eq!(json["kafka"]["offset_ranges"]["contiguous"], true, "{:#}", json["kafka"]["offset_ranges"]);
    // A dead letter says where its record is.
    let letters = dead_letters(&dir.join("out/dead-letters"));
    let letter = letters.first().expect("a dead letter");
    assert!(letter["source"]["topic"].as_str().expect("topic").starts_with("sleet-bench-"), "{letter}");
    assert!(letter["source"]["offset"].as_i64().expect("offset") >= 0, "{letter}");
}

#[test]
fn a_live_stream_is_counted_exactly() {
    let dir = test_dir("kafka-live");
    let result = dir.join("live.json");
    let mut bench = sleet_bench();
    bench.args(["ysb", "--source", "kafka", "--brokers", brokers(), "--rate", "50000"]);
    bench.args(["--batch-interval", "20ms", "--duration", "8s", "--warmup", "2s", "--workers", "2"]);
    bench.arg("--json").arg(&result);
    let output = run_with_limit(bench, Duration::from_secs(120));
    assert_success(&output, "bench ysb --source kafka (live)");
    let json = read_json(&result);
    assert_eq!(json["correct"], true, "{json:#}");
    assert_eq!(json["events_in"], json["kafka"]["events_written"]);
    // Every batch measured its events' wait for the close from their Kafka timestamps (the
    // producer stamps a record when it sends it, a moment after the events' times): about
    // half of the 20 ms interval plus the producer's lag, never hundreds of ms.
    let batches = json["clarity"]["samples"]["batches"].as_array().expect("batch samples");
    let mut waits: Vec<i64> = batches
        .iter()
        .filter(|batch| batch["events"].as_u64() > Some(0))
        .map(|batch| batch["event_wait_us"].as_i64().unwrap_or_else(|| panic!("no measured wait: {batch}")))
        .collect();
    assert!(waits.len() > 100, "{} batches with events", waits.len());
    waits.sort_unstable();
    let median = waits[waits.len() / 2];
    assert!((-20_000..=200_000).contains(&median), "median wait for the close {median} µs");
}

/// The gateway pipeline through Kafka with a worker SIGKILLed mid-run: every final day's top
/// 10 equals the generator's ground truth (checked inside the benchmark against
/// `gateway_check`, which sums the generator's traffic, not what the job decodes).
#[test]
fn the_gateway_bench_stays_exact_through_kafka_when_a_worker_is_killed() {
    let dir = test_dir("kafka-gateway");
    let result = dir.join("gateway.json");
    let mut bench = sleet_bench();
    // 400 gateways reporting once a simulated minute at 20 000 records/s: a day in 28.8 s, so
    // the run crosses at least one midnight.
    bench.args(["gateway", "--feed", "kafka", "--brokers", brokers(), "--encoding", "counter"]);
    bench.args(["--gateways", "400", "--rate", "20000", "--duration", "40s", "--batch-interval", "100ms"]);
    bench.args(["--workers", "2", "--cores-per-worker", "1", "--kill-worker-at", "15s"]);
    bench.arg("--json").arg(&result).arg("--out").arg(dir.join("out"));
    let output = run_with_limit(bench, Duration::from_secs(240));
    assert_success(&output, "bench gateway --feed kafka --kill-worker-at");
    let json = read_json(&result);
    let run = &json["run"];
    assert_eq!(run["exact"], true, "{run:#}");
    assert!(run["final_days"].as_array().expect("final days").len() >= 2, "{run:#}");
    let read = run["records_read"].as_u64().expect("records read");
    assert!(read >= run["records_delivered"].as_u64().expect("records delivered"), "{run:#}");
    assert!(run["recoveries"].as_u64().expect("recoveries") >= 1, "the worker's loss was recovered: {run:#}");
    assert!(run["cpu_us_per_record"]["sleet"].as_f64().expect("sleet cpu") > 0.0);
}

fn start_own_broker(port: u16) -> String {
    kafka_script(&["start", "--port", &port.to_string(), "--dir", &broker_dir(port)])
}

/// Stops the test's own broker even when the test fails, and removes its data: its port,
/// and so its directory, differs from run to run.
struct OwnBroker(u16);

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let stopped = Command::new(repo_root().join("scripts/kafka.sh"))
            .args(["stop", "--port", &self.0.to_string(), "--dir", &broker_dir(self.0)])
            .status();
        if stopped.is_ok_and(|status| status.success()) {
            let _ = std::fs::remove_dir_all(broker_dir(self.0));
        }
    }
}

/// A port `p` with `p + 1` (the broker's controller) free too, found by binding both: a fixed
/// one may be taken by whatever else runs on the machine. Released before the broker binds
/// them, so another process could take one in between; the broker would then fail to start,
/// naming the port.
fn free_port_pair() -> u16 {
    for _ in 0..100 {
        let first = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a free port");
        let port = first.local_addr().expect("its address").port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free neighbouring ports on 127.0.0.1 in 100 tries");
}

#[test]
fn a_broker_stopped_for_ten_seconds_mid_run_loses_and_doubles_nothing() {
    let port = free_port_pair();
    let _ = std::fs::remove_dir_all(broker_dir(port));
    let address = start_own_broker(port);
    let _broker = OwnBroker(port);
    let dir = test_dir("kafka-restart");
    let result = dir.join("restart.json");
    let bench: Child = sleet_bench()
        .args(["ysb", "--source", "kafka", "--brokers", &address, "--rate", "20000"])
        .args(["--batch-interval", "50ms", "--duration", "30s", "--warmup", "2s", "--workers", "2"])
        .arg("--json")
        .arg(&result)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bench");
    let mut reaper = Reaper(vec![bench]);
    std::thread::sleep(Duration::from_secs(7));
    kafka_script(&["stop", "--port", &port.to_string(), "--dir", &broker_dir(port)]);
    std::thread::sleep(Duration::from_secs(10));
    start_own_broker(port);
    let status = wait_with_limit(&mut reaper.0[0], Duration::from_secs(150));
    let mut stderr = String::new();
    std::io::Read::read_to_string(reaper.0[0].stderr.as_mut().expect("piped"), &mut stderr).expect("stderr");
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("source waiting"), "the status line says the source waits:\n{stderr}");
    let json = read_json(&result);
    assert_eq!(json["correct"], true, "{json:#}");
    assert_eq!(json["events_in"], json["kafka"]["events_written"]);
}
