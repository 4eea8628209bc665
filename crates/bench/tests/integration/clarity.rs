//! The performance model end to end: a short `sleet-bench ysb` on a driver and 2 worker
//! processes writes a `clarity` section whose samples match the run (every task of every
//! batch, the events the batch took in), whose latency breakdown adds up, and whose model
//! names a bottleneck; `sleet explain` reads the file back and answers what-if questions;
//! and it refuses files it cannot explain, saying why.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use common::{run_with_limit, sleet, sleet_bench, test_dir};

const DURATION_S: u64 = 6;
const INTERVAL_US: i64 = 100_000;
const BOTTLENECKS: [&str; 5] = ["cpu", "net", "disk", "coordination", "source"];

struct Bench {
    json: PathBuf,
    result: serde_json::Value,
    stderr: String,
}

fn bench(name: &str, extra: &[&str]) -> Bench {
    let dir = test_dir(name);
    let json = dir.join("result.json");
    let mut command = sleet_bench();
    command.args(["ysb", "--workers", "2", "--batch-interval", "100", "--rate", "100000"]);
    command.args(["--duration", &DURATION_S.to_string(), "--warmup", "2"]);
    command.arg("--json").arg(&json).arg("--out").arg(&dir).args(extra);
    let output = run_with_limit(command, Duration::from_secs(DURATION_S + 60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "bench ysb failed: {:?}\n{stderr}", output.status);
    let result = serde_json::from_slice(&std::fs::read(&json).expect("the result file")).expect("JSON");
    Bench { json, result, stderr }
}

fn number(value: &serde_json::Value, what: &str) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {value}"))
}

/// The section's samples describe the run, its analyses agree with them, and the status line
/// named the live bottleneck.
fn check_clarity(bench: &Bench) {
    let clarity = &bench.result["clarity"];
    let analysis = &clarity["analysis"];
    let samples = &clarity["samples"];
    let bottleneck = clarity["bottleneck"].as_str().expect("a bottleneck name");
    assert!(BOTTLENECKS.contains(&bottleneck), "bottleneck `{bottleneck}`");
    assert_eq!(analysis["model"]["bottleneck"], bottleneck);
    assert!(number(&analysis["model"]["modelled_us"], "modelled_us") > 0.0, "{}", analysis["model"]);
    assert!(
        bench.stderr.lines().any(|line| {
            // One `|`-separated part of the line, wherever it stands (the state's size may follow).
            line.split(" | ").any(|part| BOTTLENECKS.iter().any(|name| part.trim() == format!("bottleneck {name}")))
        }),
        "no status line names the live bottleneck:\n{}",
        bench.stderr
    );

    // Every batch has the tasks of both stages on both partitions, and its map tasks read
    // exactly the events it took in.
    let batches = samples["batches"].as_array().expect("batch samples");
    let tasks = samples["tasks"].as_array().expect("task samples");
    assert!(batches.len() >= 30, "{} batches after a 2 s warm-up of 6 s at 100 ms", batches.len());
    assert_eq!(analysis["batches"], batches.len());
    let mut per_batch: BTreeMap<u64, (Vec<(u64, u64)>, u64)> = BTreeMap::new();
    for task in tasks {
        let entry = per_batch.entry(task["batch"].as_u64().expect("batch")).or_default();
        entry.0.push((task["stage"].as_u64().expect("stage"), task["partition"].as_u64().expect("partition")));
        if task["stage"] == 0 {
            entry.1 += task["records_in"].as_u64().expect("records_in");
        }
    }
    for batch in batches {
        let id = batch["batch"].as_u64().expect("batch");
        let (mut ran, events) = per_batch.remove(&id).unwrap_or_default();
        ran.sort_unstable();
        assert_eq!(ran, vec![(0, 0), (0, 1), (1, 0), (1, 1)], "tasks of batch {id}");
        assert_eq!(events, batch["events"].as_u64().expect("events"), "events of batch {id}");
    }
    assert!(per_batch.is_empty(), "tasks of batches without a batch sample: {:?}", per_batch.keys());

    // Per batch, the parts sum to the end-to-end latency within 5 %, and that latency is the
    // sample's: its events' measured wait for the close plus close → finish.
    let columns = analysis["breakdown"]["batches"].as_object().expect("breakdown columns");
    let column = |name: &str| -> Vec<i64> {
        columns[name]
            .as_array()
            .unwrap_or_else(|| panic!("column {name}"))
            .iter()
            .map(|v| v.as_i64().expect("µs"))
            .collect()
    };
    let end_to_end = column("end_to_end_us");
    let parts: Vec<Vec<i64>> = columns
        .keys()
        .filter(|name| !matches!(name.as_str(), "batch" | "end_to_end_us"))
        .map(|name| column(name))
        .collect();
    assert_eq!(parts.len(), 11, "parts: {:?}", columns.keys());
    let commit = column("commit_us");
    for (index, batch) in batches.iter().enumerate() {
        let sum: i64 = parts.iter().map(|part| part[index]).sum();
        let total = end_to_end[index];
        assert!(
            (sum - total).abs() as f64 <= 0.05 * total as f64,
            "batch {}: parts {sum} µs, end to end {total} µs",
            batch["batch"]
        );
        let closed = batch["closed_at_us"].as_i64().expect("closed");
        let finished = batch["finished_at_us"].as_i64().expect("finished").max(closed);
        let wait = batch["event_wait_us"].as_i64().unwrap_or_else(|| panic!("no measured wait: {batch}"));
        assert!((0..=INTERVAL_US).contains(&wait), "batch {}: events waited {wait} µs", batch["batch"]);
        // The job writes files, so every batch was committed by a manifest the driver
        // published after its end (the last ones at the job's end).
        let committed = batch["committed_at_us"].as_i64().unwrap_or_else(|| panic!("no commit time: {batch}"));
        assert_eq!(commit[index], committed.max(finished) - finished, "commit part of batch {}", batch["batch"]);
        assert_eq!(total, wait + committed.max(finished) - closed, "end to end of batch {}", batch["batch"]);
    }
    let names: Vec<&str> =
        analysis["breakdown"]["parts"].as_array().expect("parts").iter().filter_map(|p| p["part"].as_str()).collect();
    assert_eq!(names.last(), Some(&"end_to_end"));

    check_end_to_end(bench);

    let stragglers = &analysis["stragglers"];
    let counted: u64 = stragglers["counts"].as_object().expect("counts").values().filter_map(|v| v.as_u64()).sum();
    assert_eq!(Some(counted), stragglers["stragglers"].as_u64(), "straggler counts");
    assert_eq!(analysis["blocked"].as_array().map(Vec::len), Some(3), "net, disk and coordination");
    let used = analysis["utilization"].as_array().expect("utilization");
    assert!(used.iter().any(|u| u["resource"] == "cpu"), "cpu use per worker: {used:?}");
    for u in used {
        let busy = number(&u["utilization_max"], "utilization_max");
        assert!((0.0..=1.05).contains(&busy), "utilization {busy} of {u}");
    }
}

/// The breakdown against the end to end a reader of the sink measured on its own: the
/// sources' waits equal the generator's (to the µs, as both are means of the same event times)
/// and the sums agree with the measurement. The bound is loose on purpose: the 5 % of issue 14
/// is shown by the bench on an idle machine, while this test must not fail when the machine
/// is shared; a breakdown that missed a part (the sink write, a report hop) would still fail it.
fn check_end_to_end(bench: &Bench) {
    let check = &bench.result["end_to_end_check"];
    let compared = check["batches_compared"].as_u64().unwrap_or_else(|| panic!("no end-to-end check: {check}"));
    assert!(compared >= 30, "{compared} batches compared: {check}");
    assert_eq!(check["batches_without_event_wait"], 0, "{check}");
    let wait_error = number(&check["event_wait_error_us"]["max"], "event wait error");
    assert!(wait_error.abs() <= 1.0, "the sources' wait is {wait_error} µs off the generator's");
    let median = number(&check["relative_difference"]["p50"], "median relative difference");
    assert!(median.abs() <= 0.25, "breakdown vs measured end to end: median {median}: {}", check["measured_ms"]);
    let committed = number(&check["committed_ms"]["p50"], "committed latency");
    let measured = number(&check["measured_ms"]["p50"], "measured latency");
    assert!(committed >= measured, "committed at {committed} ms before the rows were visible at {measured} ms");
    // The whole breakdown, its commit part included, against the watcher's sight of the
    // manifest: the driver's publication time is the commit's, a moment before the watcher.
    let median = number(&check["relative_difference_committed"]["p50"], "median difference to the commit");
    assert!(median.abs() <= 0.25, "breakdown with commit vs measured to the commit: median {median}: {check}");
}

#[test]
fn a_bench_result_explains_where_the_time_went_and_what_if() {
    let bench = bench("clarity_group", &[]);
    check_clarity(&bench);

    let mut command = sleet();
    command.arg("explain").arg(&bench.json).args(["--what-if", "cores=2,workers=2"]);
    let output = run_with_limit(command, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "explain failed: {}", String::from_utf8_lossy(&output.stderr));
    let named = stdout.lines().find_map(|line| line.trim().strip_prefix("bottleneck: "));
    let named =
        named.and_then(|rest| rest.split_whitespace().next()).unwrap_or_else(|| panic!("no bottleneck:\n{stdout}"));
    assert_eq!(named, bench.result["clarity"]["bottleneck"], "explain and the bench disagree");
    for scenario in ["cores=2", "workers=2", "cores=2 + workers=2"] {
        let line =
            stdout.lines().find(|line| line.trim_start().starts_with(&format!("{scenario}: predicted batch time ")));
        assert!(line.is_some(), "no prediction for {scenario}:\n{stdout}");
    }
    for part in ["wait_for_close", "scheduling", "map_compute", "end_to_end"] {
        assert!(
            stdout.lines().any(|line| line.trim_start().starts_with(part)),
            "no {part} in the breakdown:\n{stdout}"
        );
    }
}

#[test]
fn under_bsp_each_batch_carries_the_drivers_coordination() {
    let bench = bench("clarity_bsp", &["--scheduler", "bsp"]);
    check_clarity(&bench);
    let batches = bench.result["clarity"]["samples"]["batches"].as_array().expect("batch samples");
    let without: Vec<&serde_json::Value> =
        batches.iter().filter(|batch| batch["coordination_us"].as_i64().unwrap_or(0) <= 0).collect();
    assert!(without.is_empty(), "bsp batches without the driver's time: {without:?}");
}

fn explain_fails(path: &std::path::Path, expected: &[&str]) {
    let mut command = sleet();
    command.arg("explain").arg(path);
    let output = run_with_limit(command, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "explain of {} succeeded", path.display());
    for text in expected {
        assert!(stderr.contains(text), "`{text}` not in:\n{stderr}");
    }
}

#[test]
fn explain_says_why_it_cannot_read_a_file() {
    let dir = test_dir("clarity_explain_errors");
    let missing = dir.join("missing.json");
    explain_fails(&missing, &["reading", "missing.json"]);

    let old = dir.join("old.json");
    std::fs::write(&old, r#"{"benchmark": "ysb", "engine": "sleet", "version": "0.0.9", "config": {}}"#)
        .expect("write");
    explain_fails(&old, &["old.json", "clarity.samples", "written by sleet 0.0.9"]);

    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"anything": 1}"#).expect("write");
    explain_fails(&other, &["other.json", "not a result of `sleet-bench ysb --json`"]);

    let text = dir.join("text.json");
    std::fs::write(&text, "batches: 12").expect("write");
    explain_fails(&text, &["text.json", "is not a JSON result file"]);

    let mut command = sleet();
    command.arg("explain").arg(&old).args(["--what-if", "cores=two"]);
    let output = run_with_limit(command, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("`cores=two`"), "a bad scenario: {stderr}");
}

/// The workers' bandwidth limits end to end: `sleet-bench bottleneck` engineers a network- and
/// a disk-bound run, the model names each, and the throughput it derives from the records
/// never exceeds the limit (the limiter's waiting is inside the monotasks).
#[test]
fn bandwidth_limits_make_the_model_name_the_network_and_the_disk() {
    let dir = test_dir("clarity_bottleneck");
    let json = dir.join("bottleneck.json");
    let mut command = sleet_bench();
    command.args(["bottleneck", "--cases", "net,disk", "--repeats", "1"]);
    command.args(["--duration", &DURATION_S.to_string(), "--warmup", "2"]);
    command.arg("--json").arg(&json).arg("--out").arg(&dir);
    let output = run_with_limit(command, Duration::from_secs(2 * DURATION_S + 90));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench bottleneck failed: {:?}\n{stderr}", output.status);
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("the result file")).expect("JSON");
    let runs = result["runs"].as_array().expect("runs");
    let named: Vec<(&str, &str)> = runs
        .iter()
        .map(|run| (run["expected"].as_str().unwrap_or("?"), run["named"].as_str().unwrap_or("?")))
        .collect();
    assert_eq!(named, [("net", "net"), ("disk", "disk")], "{result}");
    for (run, field, limit) in [(&runs[0], "net_bytes_per_s", 1e6), (&runs[1], "disk_bytes_per_s", 80e3)] {
        let derived = number(&run["model"]["throughputs"][field], field);
        assert!(derived <= 1.05 * limit, "{field} {derived} over the limit {limit}");
    }
}
