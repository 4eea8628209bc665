//! sleet against a real Kafka broker (started by `scripts/kafka.sh`): records from a producer
//! that is not sleet's counted against a naive reference with their garbage in the dead
//! letters, bad sources refused before anything runs, and event times taken from the
//! records' Kafka timestamps (the benchmark's drained backlog, live stream and stopped broker
//! are in crates/bench/tests/integration/kafka_bench.rs). The same records in JSON-lines files, read by the file
//! source, count the same.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::kafka::{brokers, fresh_topic, kafka_script, repo_root};
use common::recovery::{signal, sleep_until};
use common::{
    assert_success, dead_letters, read_json, run_with_limit, sleet, start_local_driver, start_worker, test_dir,
    wait_with_limit, Reaper,
};

/// A driver and one worker on loopback; the reaper stops them.
fn cluster() -> (Reaper, String) {
    let (driver, address) = start_local_driver(&[]);
    let worker = start_worker(&address, &["--cores", "2"]);
    (Reaper(vec![driver, worker]), address)
}

fn job_file(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let mut job = sleet();
    job.args(["job", "ysb"]).args(args);
    job.arg("--sink-dir").arg(dir.join(format!("{name}-results")));
    job.arg("--dead-letter-dir").arg(dir.join("dead-letters"));
    let output = run_with_limit(job, Duration::from_secs(30));
    assert_success(&output, "sleet job ysb");
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &output.stdout).expect("job file");
    path
}

fn submit(job: &Path, driver: &str, limit: Duration) -> std::process::Output {
    let mut submit = sleet();
    submit.arg("submit").arg(job).args(["--driver", driver]);
    run_with_limit(submit, limit)
}

fn produce_events(topic: &str, partitions: u32, count: u32) {
    let mut gen = sleet();
    gen.args(["gen", "ysb", "--brokers", brokers(), "--topic", topic, "--partitions", &partitions.to_string()]);
    gen.args(["--count", &count.to_string(), "--campaigns-out"]).arg(std::env::temp_dir().join(format!("{topic}.csv")));
    assert_success(&run_with_limit(gen, Duration::from_secs(60)), "sleet gen ysb");
}

#[test]
fn bad_sources_are_refused_before_anything_runs_naming_what_is_wrong() {
    let dir = test_dir("kafka-refused");
    let (_cluster, driver) = cluster();

    let unreachable =
        job_file(&dir, "unreachable", &["--source", "kafka", "--brokers", "127.0.0.1:1", "--topic", "ysb"]);
    let output = submit(&unreachable, &driver, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("127.0.0.1:1") && stderr.contains("rejected"), "{stderr}");

    let missing =
        job_file(&dir, "missing", &["--source", "kafka", "--brokers", brokers(), "--topic", "no-such-topic-here"]);
    let output = submit(&missing, &driver, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`no-such-topic-here` does not exist"), "{stderr}");

    // A job planned for 3 partitions of a topic that has 2.
    let topic = fresh_topic("resized");
    produce_events(&topic, 2, 100);
    let planned = job_file(&dir, "planned", &["--source", "kafka", "--brokers", brokers(), "--topic", &topic]);
    let text = std::fs::read_to_string(&planned).expect("job file");
    let mut job: serde_json::Value = serde_json::from_str(&text).expect("job JSON");
    job["plan"]["nodes"][0]["operator"]["source"]["spec"]["partitions"] = serde_json::json!(3);
    std::fs::write(&planned, job.to_string()).expect("job file");
    let output = submit(&planned, &driver, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("`{topic}` has 2 partitions, the job was planned for 3")), "{stderr}");

    // Offsets the broker no longer has (records deleted, as retention does) are refused,
    // never skipped silently.
    let deletion = dir.join("delete.json");
    std::fs::write(
        &deletion,
        format!(r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"offset":20}}]}}"#),
    )
    .expect("deletion file");
    let deletion = deletion.display().to_string();
    kafka_script(&[
        "tool",
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        brokers(),
        "--offset-json-file",
        &deletion,
    ]);
    job["plan"]["nodes"][0]["operator"]["source"]["spec"]["partitions"] = serde_json::json!(2);
    job["plan"]["nodes"][0]["operator"]["source"]["spec"]["start"] = serde_json::json!({"offsets": [5, 0]});
    std::fs::write(&planned, job.to_string()).expect("job file");
    let output = submit(&planned, &driver, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{topic}/0: offset 5 is no longer on the broker (the log starts at 20")),
        "{stderr}"
    );
}

/// One record as another producer might write it: keys in another order, event time bare or
/// quoted, extra fields.
fn foreign_record(index: u32, ads: &[String], base_ms: i64) -> (String, Option<(String, i64)>) {
    let ad = &ads[(index as usize * 7) % ads.len()];
    let event_type = ["view", "click", "purchase"][(index % 3) as usize];
    // Mostly increasing, a little out of order, as real event times are.
    let time = base_ms + index as i64 * 13 - (index as i64 % 7) * 50;
    let line = if index.is_multiple_of(2) {
        format!(
            r#"{{"event_time":{time},"ad_id":"{ad}","event_type":"{event_type}","user_id":"u{index}","page_id":"p","ad_type":"banner","ip_address":"1.2.3.4","extra":[1,2]}}"#
        )
    } else {
        format!(
            r#"{{"ip_address":"1.2.3.4","ad_type":"mail","page_id":"p","user_id":"u{index}","event_type":"{event_type}","ad_id":"{ad}","event_time":"{time}"}}"#
        )
    };
    (line, (event_type == "view").then(|| (ad.clone(), time)))
}

#[test]
fn records_from_another_producer_are_counted_exactly_and_garbage_is_dead_lettered() {
    let dir = test_dir("kafka-foreign");
    let topic = fresh_topic("foreign");
    // The topic and its partitions come from sleet's producer, so the console producer
    // (which would auto-create nothing: the broker refuses that) has somewhere to write.
    produce_events(&topic, 2, 0);
    let campaigns = write_campaigns(&dir);
    let (lines, expected, garbage) = foreign_records(3_000);
    let mut console = Command::new(repo_root().join("scripts/kafka.sh"))
        .args(["tool", "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", brokers(), "--topic", &topic])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Kafka's console producer");
    {
        let mut stdin = console.stdin.take().expect("stdin");
        for line in &lines {
            writeln!(stdin, "{line}").expect("writing to the console producer");
        }
    }
    let status = wait_with_limit(&mut console, Duration::from_secs(60));
    assert!(status.success(), "the console producer failed");

    let (_cluster, driver) = cluster();
    let campaigns_arg = campaigns.display().to_string();
    let job = job_file(
        &dir,
        "foreign",
        &[
            "--source",
            "kafka",
            "--brokers",
            brokers(),
            "--topic",
            &topic,
            "--start",
            "earliest",
            "--campaigns",
            &campaigns_arg,
            "--duration",
            "6s",
        ],
    );
    let output = submit(&job, &driver, Duration::from_secs(60));
    assert_success(&output, "sleet submit");

    assert_eq!(final_counts(&dir.join("foreign-results")), expected);
    let letters = dead_letters(&dir.join("dead-letters"));
    assert_eq!(letters.len(), garbage, "{letters:#?}");
    for letter in &letters {
        assert_eq!(letter["source"]["topic"], topic.as_str(), "{letter}");
        assert!(letter["source"]["offset"].as_i64().is_some(), "{letter}");
    }
}

/// Event times that live only in the Kafka records' timestamps (the values carry none): a
/// source with `event_time: record_timestamp` puts them in the column the windows use.
#[test]
fn record_timestamps_can_be_the_event_time() {
    let dir = test_dir("kafka-record-timestamp");
    let topic = fresh_topic("timestamps");
    produce_events(&topic, 2, 0);
    let campaigns = write_campaigns(&dir);
    let ads = ads();
    let base_ms = 1_700_000_000_000_i64;
    let mut expected: BTreeMap<(String, i64), u64> = BTreeMap::new();
    let mut producer = sleet_kafka::producer::Producer::new(brokers(), &topic).expect("a producer");
    for partition in 0..2u32 {
        let mut batch = sleet_kafka::producer::Producer::new_batch();
        for index in 0..1_500u32 {
            let ad = &ads[((index + partition) as usize * 3) % ads.len()];
            let event_type = ["view", "click", "purchase", "view"][(index % 4) as usize];
            // Across several windows, and a little out of order within a partition.
            let time = base_ms + index as i64 * 29 - (index as i64 % 5) * 40;
            let value = format!(
                r#"{{"ad_id":"{ad}","event_type":"{event_type}","user_id":"u{index}","page_id":"p","ad_type":"banner","ip_address":"1.2.3.4"}}"#
            );
            batch.push(time, None, value.as_bytes());
            if event_type == "view" {
                *expected.entry((campaign_of(ad), time - time.rem_euclid(10_000))).or_default() += 1;
            }
        }
        producer.send(partition, &mut batch).expect("writing the records");
    }

    let (_cluster, driver) = cluster();
    let campaigns_arg = campaigns.display().to_string();
    let args = ["--source", "kafka", "--brokers", brokers(), "--topic", &topic, "--start", "earliest"];
    let job = job_file(&dir, "timestamps", &[&args[..], &["--campaigns", &campaigns_arg, "--duration", "6s"]].concat());
    let mut plan: serde_json::Value = read_json(&job);
    let spec = &mut plan["plan"]["nodes"][0]["operator"]["source"]["spec"];
    assert_eq!(spec["event_time"], "field", "the job's default: {spec}");
    spec["event_time"] = serde_json::json!({"record_timestamp": "event_time"});
    std::fs::write(&job, plan.to_string()).expect("job file");
    let output = submit(&job, &driver, Duration::from_secs(60));
    assert_success(&output, "sleet submit");

    assert_eq!(final_counts(&dir.join("timestamps-results")), expected);
    assert!(!dir.join("dead-letters").exists() || dead_letters(&dir.join("dead-letters")).is_empty());
}

/// The (campaign, window) counts a results directory ends with: per key, the committed row
/// of the highest batch.
fn final_counts(results: &Path) -> BTreeMap<(String, i64), u64> {
    let rows = sleet_connectors::sink::read_ysb_sink(results).expect("reading the results");
    let finals = sleet_connectors::sink::final_counts(&rows);
    finals.into_iter().map(|(key, (count, _))| (key, count as u64)).collect()
}

fn campaign_of(ad: &str) -> String {
    format!("campaign-{}", ad[3..].parse::<u32>().expect("ad number") % 5)
}

fn ads() -> Vec<String> {
    (0..20).map(|ad| format!("ad-{ad:02}")).collect()
}

/// The ad → campaign table of the foreign records, as a CSV file in `dir`.
fn write_campaigns(dir: &Path) -> std::path::PathBuf {
    let mut csv = String::from("ad_id,campaign_id\n");
    for ad in ads() {
        csv.push_str(&format!("{ad},{}\n", campaign_of(&ad)));
    }
    let campaigns = dir.join("campaigns.csv");
    std::fs::write(&campaigns, csv).expect("campaigns");
    campaigns
}

/// `count` records as another producer would write them, 1 % garbage, with the
/// (campaign, window) counts a naive reference computes from them, and the garbage count.
fn foreign_records(count: u32) -> (Vec<String>, BTreeMap<(String, i64), u64>, usize) {
    let ads = ads();
    let base_ms = 1_700_000_000_000;
    let garbage_kinds = [
        "{\"ad_id\": \"ad-01\", \"event_time\": ",
        "not json at all",
        "{\"event_time\":\"soon\",\"ad_id\":\"ad-02\",\"event_type\":\"view\"}",
    ];
    let mut lines = Vec::new();
    let mut expected: BTreeMap<(String, i64), u64> = BTreeMap::new();
    let mut garbage = 0;
    for index in 0..count {
        if index % 100 == 42 {
            lines.push(garbage_kinds[(index / 100 % 3) as usize].to_string());
            garbage += 1;
            continue;
        }
        let (line, view) = foreign_record(index, &ads, base_ms);
        if let Some((ad, time)) = view {
            *expected.entry((campaign_of(&ad), time - time.rem_euclid(10_000))).or_default() += 1;
        }
        lines.push(line);
    }
    (lines, expected, garbage)
}

#[test]
fn json_lines_files_are_a_source_counted_exactly() {
    let dir = test_dir("files-source");
    let campaigns = write_campaigns(&dir);
    let (lines, expected, garbage) = foreign_records(2_000);
    let input = dir.join("input");
    std::fs::create_dir_all(&input).expect("input dir");
    // Two files, so two partitions; the second ends without a newline, as files often do.
    let (first, second) = lines.split_at(lines.len() / 2);
    std::fs::write(input.join("a.jsonl"), first.join("\n") + "\n").expect("file a");
    std::fs::write(input.join("b.jsonl"), second.join("\n")).expect("file b");
    let (_cluster, driver) = cluster();
    let (input_arg, campaigns_arg) = (input.display().to_string(), campaigns.display().to_string());
    let job = job_file(
        &dir,
        "files",
        &[
            "--source",
            "files",
            "--input",
            &input_arg,
            "--max-records-per-batch",
            "300",
            "--campaigns",
            &campaigns_arg,
            "--duration",
            "4s",
        ],
    );
    assert_success(&submit(&job, &driver, Duration::from_secs(60)), "sleet submit");
    assert_eq!(final_counts(&dir.join("files-results")), expected);
    let letters = dead_letters(&dir.join("dead-letters"));
    assert_eq!(letters.len(), garbage, "{letters:#?}");
    assert!(letters.iter().all(|letter| letter["source"]["byte"].as_i64().is_some()), "{letters:#?}");
}

/// Kafka in and Kafka out while workers die: one killed, one frozen until the driver has cut
/// it off. A `read_committed` read of the output topic must equal a naive count of the input
/// records, with no (campaign, window, batch) row twice: batches the new owners re-run were
/// either committed by the dead worker (its commit marker says so, nothing is written again)
/// or aborted with its open transaction.
#[test]
fn kafka_in_and_out_stay_exact_through_a_killed_and_a_frozen_worker() {
    let (stdout, _) = run_kafka_recovery("kafka-recovery", "", "", |run, processes| {
        sleep_until(run.start_ms + 3_000);
        signal(&processes.0[1], libc::SIGKILL);
        sleep_until(run.start_ms + 6_500);
        signal(&processes.0[2], libc::SIGSTOP);
        sleep_until(run.start_ms + 8_000);
        signal(&processes.0[2], libc::SIGCONT);
    });
    assert!(stdout.matches("recovered").count() >= 2, "two recoveries: {stdout}");
    // While the frozen worker is not yet declared lost, the survivors run on: their Kafka
    // partitions resume after the outputs they hand on, and the counts above stay exact.
    assert!(common::recovery::reused_source_tasks(&stdout) > 0, "no survivor's output was reused: {stdout}");
}

/// The edge the commit marker exists for: a worker dies after its Kafka transaction
/// committed a batch and before its report reached the driver, so the driver re-runs a batch
/// that is already in the topic. Its new owner must find the marker and write nothing.
#[test]
fn a_batch_committed_to_kafka_by_a_worker_that_died_before_reporting_it_is_not_written_again() {
    let failpoint = "worker-after-sink-write=exit@30";
    let (stdout, _) = run_kafka_recovery("kafka-recovery-failpoint", failpoint, "", |_, processes| {
        wait_for_exit(&mut processes.0[3], Duration::from_secs(60));
    });
    assert!(stdout.contains("recovered from losing worker"), "{stdout}");
}

/// The driver SIGKILLed in the middle of a Kafka-to-Kafka job, once a checkpoint is recorded,
/// and started again on the same address with the same state directory: the workers
/// re-register, the job resumes from the checkpoint, and the batches the first driver's
/// workers had already committed to the output topic are neither written again nor cut
/// differently when they re-run (the restarted driver replays their offsets from the state
/// directory; otherwise their state would be rebuilt from other records).
#[test]
fn kafka_in_and_out_stay_exact_through_a_killed_and_restarted_driver() {
    let (stdout, log) = run_kafka_recovery("kafka-driver-restart", "", "", |run, processes| {
        run.wait_for_checkpoint();
        // Some batches past the checkpoint run, and commit, before the kill.
        std::thread::sleep(Duration::from_millis(700));
        signal(&processes.0[0], libc::SIGKILL);
        let _ = processes.0[0].wait();
        processes.0[0] = run.driver("").0;
    });
    assert!(stdout.contains("the driver restarted"), "the summary tells of the restart: {stdout}");
    let resumed = log.split("resuming job").nth(1).unwrap_or_else(|| panic!("the driver resumed: {log}"));
    assert!(resumed.contains("at the offsets they first read"), "the re-run replays the saved offsets: {log}");
}

/// The driver dies at a failpoint right after it recorded a checkpoint, before the commit
/// manifest that follows: the Kafka sinks have committed batches past both by then.
#[test]
fn kafka_in_and_out_stay_exact_when_the_driver_dies_right_after_a_checkpoint_record() {
    let failpoint = "driver-after-checkpoint-record=exit@2";
    let (stdout, _) = run_kafka_recovery("kafka-driver-failpoint", "", failpoint, |run, processes| {
        wait_for_exit(&mut processes.0[0], Duration::from_secs(60));
        let log = std::fs::read_to_string(run.dir.join("driver.log")).expect("driver log");
        assert!(log.contains("failpoint driver-after-checkpoint-record at hit"), "the failpoint ended it: {log}");
        processes.0[0] = run.driver("").0;
    });
    assert!(stdout.contains("the driver restarted"), "the summary tells of the restart: {stdout}");
}

/// Waits (bounded) for a process a failpoint ends.
fn wait_for_exit(process: &mut Child, limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    while process.try_wait().expect("polling the process").is_none() {
        assert!(std::time::Instant::now() < deadline, "the armed process still runs after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One Kafka recovery run: where its files are and when its batch 0 starts.
struct KafkaRun {
    dir: std::path::PathBuf,
    start_ms: i64,
    /// The driver's address once it listens; a restarted driver takes the same one.
    address: String,
}

impl KafkaRun {
    /// A driver for three workers on `address`, with the run's checkpoint and state
    /// directories, its log appended to `driver.log`, `failpoints` armed; and the address it
    /// listens on.
    fn driver(&self, failpoints: &str) -> (Child, String) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("driver.log"))
            .expect("driver log");
        let checkpoints = self.dir.join("checkpoints").display().to_string();
        let state = self.dir.join("state").display().to_string();
        let extra = ["--expect-workers", "3", "--checkpoint-dir", &checkpoints, "--state-dir", &state];
        common::start_driver_armed(&self.address, &extra, log, failpoints)
    }

    /// Waits (bounded) until the job has a checkpoint record, so that a restart resumes
    /// from one.
    fn wait_for_checkpoint(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let recorded = || {
            std::fs::read_dir(self.dir.join("checkpoints")).into_iter().flatten().flatten().any(|entry| {
                entry.file_name().to_string_lossy().starts_with("job-") && entry.path().join("checkpoint.json").exists()
            })
        };
        while !recorded() {
            assert!(std::time::Instant::now() < deadline, "no checkpoint was recorded within 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Writes `per_partition` ysb events to each partition of `topic`, spread in order over six
/// 10 s windows, and returns the view count per (campaign, window) they make.
fn write_six_windows(topic: &str, partitions: u32, per_partition: u32) -> BTreeMap<(String, i64), u64> {
    let ads = ads();
    let base_ms = 1_700_000_000_000_i64;
    let mut expected: BTreeMap<(String, i64), u64> = BTreeMap::new();
    let mut producer = sleet_kafka::producer::Producer::new(brokers(), topic).expect("a producer");
    for partition in 0..partitions {
        let mut batch = sleet_kafka::producer::Producer::new_batch();
        for index in 0..per_partition {
            let ad = &ads[((index * 7 + partition) as usize) % ads.len()];
            let event_type = ["view", "click", "purchase", "view"][(index % 4) as usize];
            let time = base_ms + index as i64 * 60_000 / per_partition as i64;
            let value = format!(
                r#"{{"ad_id":"{ad}","event_type":"{event_type}","event_time":{time},"user_id":"u{index}","page_id":"p","ad_type":"banner","ip_address":"1.2.3.4"}}"#
            );
            batch.push(time, None, value.as_bytes());
            if batch.bytes() > 512 << 10 {
                producer.send(partition, &mut batch).expect("writing the records");
            }
            if event_type == "view" {
                *expected.entry((campaign_of(ad), time - time.rem_euclid(10_000))).or_default() += 1;
            }
        }
        producer.send(partition, &mut batch).expect("writing the records");
    }
    expected
}

/// Runs the Kafka-to-Kafka ysb job on a driver (`driver_failpoints` armed) and three workers
/// (the third armed with `worker_failpoints`), lets `strike` hurt them, and checks the output
/// topic read with `read_committed` against the naive count of the input. Returns the
/// client's output and the driver's log.
fn run_kafka_recovery(
    name: &str,
    worker_failpoints: &str,
    driver_failpoints: &str,
    strike: impl FnOnce(&KafkaRun, &mut Reaper),
) -> (String, String) {
    let dir = test_dir(name);
    let input = fresh_topic("recovery-in");
    let output = fresh_topic("recovery-out");
    const PARTITIONS: u32 = 4;
    produce_events(&input, PARTITIONS, 0);
    produce_events(&output, PARTITIONS, 0);
    let campaigns = write_campaigns(&dir);
    let expected = write_six_windows(&input, PARTITIONS, 40_000);

    // 500 records per partition per 100 ms batch: the 160 000 records take 8 s to read, long
    // enough for failures to strike in the middle.
    let campaigns_arg = campaigns.display().to_string();
    let args = [
        "--source",
        "kafka",
        "--brokers",
        brokers(),
        "--topic",
        &input,
        "--start",
        "earliest",
        "--max-records-per-batch",
        "500",
        "--campaigns",
        &campaigns_arg,
        "--duration",
        "14s",
        "--batch-interval",
        "100ms",
        "--partitions",
        "4",
        "--sink-topic",
        &output,
    ];
    let job = job_file(&dir, "recovery", &args);
    let mut plan: serde_json::Value = read_json(&job);
    let start_ms = (sleet_wire::clock::now_ms() + 3_000) / 100 * 100;
    plan["settings"]["start_ms"] = start_ms.into();
    std::fs::write(&job, plan.to_string()).expect("job file");

    let mut run = KafkaRun { dir: dir.clone(), start_ms, address: "127.0.0.1:0".into() };
    let (driver, address) = run.driver(driver_failpoints);
    run.address = address;
    let mut processes = Reaper(vec![driver]);
    for index in 1..=3 {
        let armed = if index == 3 { worker_failpoints } else { "" };
        processes.0.push(common::recovery::worker_armed(&dir, &run.address, index, armed));
    }
    let submit = common::recovery::submit_file(&job, &run.address);
    strike(&run, &mut processes);

    let (succeeded, stdout, stderr) = common::recovery::output_of(submit, Duration::from_secs(120));
    let driver_log = std::fs::read_to_string(dir.join("driver.log")).expect("driver log");
    assert!(succeeded, "the job failed:\n{stdout}\n{stderr}\ndriver log:\n{driver_log}");

    let rows = sleet_connectors::sink::read_ysb_topic(brokers(), &output).expect("read_committed read of the output");
    common::recovery::assert_no_row_twice(&rows);
    let finals = sleet_connectors::sink::final_counts(&rows);
    let actual: BTreeMap<(String, i64), u64> =
        finals.into_iter().map(|(key, (count, _))| (key, count as u64)).collect();
    assert_eq!(actual, expected);
    assert!(!driver_log.contains("replay mismatch"), "re-run batches read what they read before: {driver_log}");
    (stdout, driver_log)
}

/// The transactional producer the Kafka sink writes with, against the real broker: an
/// aborted transaction is invisible to `read_committed`, and a new producer under the same
/// transactional id aborts what the old one left open and fences it.
#[test]
fn a_transaction_is_read_whole_or_not_at_all_and_a_new_producer_fences_the_old_one() {
    use sleet_kafka::fetch::{FetchSettings, PartitionReader};
    use sleet_kafka::offsets::OffsetQuery;
    use sleet_kafka::transaction::TransactionalProducer;

    let topic = fresh_topic("transactions");
    produce_events(&topic, 1, 0);
    let id = format!("{topic}-writer");
    let timeout = Duration::from_secs(60);
    let write = |producer: &mut TransactionalProducer, value: &str| {
        let mut batch = sleet_kafka::producer::Producer::new_batch();
        batch.push(0, None, value.as_bytes());
        producer.send(&topic, 0, &mut batch)
    };
    let mut first = TransactionalProducer::new(brokers(), &id, timeout).expect("a transactional producer");
    write(&mut first, "committed").expect("send");
    first.commit().expect("commit");
    write(&mut first, "aborted").expect("send");
    first.abort().expect("abort");
    write(&mut first, "left open").expect("send");

    let mut second = TransactionalProducer::new(brokers(), &id, timeout).expect("the producer that takes over");
    let late = write(&mut first, "from the fenced one").and_then(|_| first.commit());
    assert!(late.is_err(), "the old producer is fenced");
    write(&mut second, "after the takeover").expect("send");
    second.commit().expect("commit");

    // The broker writes a commit's markers after EndTxn answers, so the stable end may
    // trail the commit by a moment: read again (bounded) until the last commit shows.
    let expected = ["committed", "after the takeover"];
    let mut reader = PartitionReader::new(brokers(), &topic, 0, FetchSettings::default());
    let mut values = Vec::new();
    for _ in 0..100 {
        values.clear();
        let end = reader.offset(OffsetQuery::Latest).expect("last stable offset");
        let mut position = reader.offset(OffsetQuery::Earliest).expect("earliest");
        for _ in 0..100 {
            if position >= end {
                break;
            }
            position = reader
                .fetch(position, end, &mut |record| {
                    values.push(String::from_utf8_lossy(record.value.unwrap_or_default()).into_owned())
                })
                .expect("fetch");
        }
        if values == expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(values, expected);
}

/// A re-run batch of a Kafka partition ends exactly where its first run ended, past the
/// per-batch record limit if the first run read more, and batches after the replay read on
/// under the limit.
#[test]
fn a_replayed_kafka_batch_reads_exactly_the_offsets_of_its_first_run() {
    use sleet_connectors::source::Source;

    let topic = fresh_topic("replay");
    produce_events(&topic, 1, 0);
    let mut producer = sleet_kafka::producer::Producer::new(brokers(), &topic).expect("a producer");
    let mut batch = sleet_kafka::producer::Producer::new_batch();
    for index in 0..1_000 {
        batch.push(0, None, format!("{{\"n\":{index}}}").as_bytes());
    }
    producer.send(0, &mut batch).expect("writing the records");
    let spec = sleet_plan::KafkaSourceSpec {
        brokers: brokers().to_string(),
        topic: topic.clone(),
        start: sleet_plan::KafkaStart::Offsets(vec![100]),
        max_records_per_partition_per_batch: 50,
        event_time: sleet_plan::EventTimeSource::Field,
        read_committed: true,
        partitions: 1,
        replay: vec![sleet_plan::ReplayedBatches {
            partition: 0,
            ends: vec![(1_100, 150), (1_200, 400), (1_300, 401)],
        }],
    };
    let source = sleet_connectors::kafka_source::KafkaSource::new(&spec, 0);
    let read = |end_ms: i64| {
        let mut records = sleet_exec::RawRecords::new();
        let range = source.read(end_ms - 100, end_ms, &mut records).expect("read");
        (range, records.len())
    };
    let offsets = |start, end| sleet_plan::SourceRange::Offsets { start, end };
    assert_eq!(read(1_100), (offsets(100, 150), 50));
    assert_eq!(read(1_200), (offsets(150, 400), 250), "the first run read past the limit: so does the replay");
    assert_eq!(read(1_300), (offsets(400, 401), 1));
    let (after, records) = read(1_400);
    assert_eq!((after, records), (offsets(401, 451), 50), "after the replay, the limit holds again");
}

/// Backpressure through a real broker: a backlog far larger than one 10 ms batch can take.
/// The batches that overran their interval make the driver bound what each partition reads;
/// the bounded batches appear in the summary, and every count still equals the count of the
/// records written.
#[test]
fn backpressure_bounds_the_reads_of_an_overloaded_job_and_loses_nothing() {
    let dir = test_dir("kafka-backpressure");
    let topic = fresh_topic("backpressure");
    const PARTITIONS: u32 = 2;
    const PER_PARTITION: u32 = 150_000;
    produce_events(&topic, PARTITIONS, 0);
    let campaigns = write_campaigns(&dir);
    let expected = write_six_windows(&topic, PARTITIONS, PER_PARTITION);

    let (_cluster, driver) = cluster();
    let campaigns_arg = campaigns.display().to_string();
    let args = [
        "--source",
        "kafka",
        "--brokers",
        brokers(),
        "--topic",
        &topic,
        "--start",
        "earliest",
        "--campaigns",
        &campaigns_arg,
        "--partitions",
        "2",
        "--batch-interval",
        "10ms",
        "--duration",
        "12s",
        "--backpressure",
    ];
    let job = job_file(&dir, "backpressure", &args);
    assert_eq!(read_json(&job)["settings"]["backpressure"], true, "the flag reaches the job file");
    let mut submit = sleet();
    submit.arg("submit").arg(&job).args(["--driver", &driver, "--json"]);
    let output = run_with_limit(submit, Duration::from_secs(90));
    assert_success(&output, "sleet submit --json");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: serde_json::Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|line| line.get("summary").cloned())
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"));
    let bounded = summary["read_bound"]["batches_bounded"].as_u64().expect("a count of bounded batches");
    assert!(bounded > 0, "an overloaded job reads under a bound: {summary}");
    let bound_min = summary["read_bound"]["bound_min"].as_u64().expect("the smallest bound");
    assert!(bound_min < 100_000, "a bound below the sources' own limit: {summary}");
    assert_eq!(summary["late_rows_dropped"], 0, "{summary}");
    assert_eq!(final_counts(&dir.join("backpressure-results")), expected);
}
