//! ysb end to end: a driver and 2 worker processes run 30 s of batches; every
//! (campaign, window) count must equal the ground truth computed from the generator function
//! directly, never through the engine's operators. The runs cover both schedulers: group with
//! the automatic size (the default), bsp, and group with a fixed size.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{run_with_limit, sleet_bench, test_dir};
use sleet_connectors::ysb::{event, event_range};
use sleet_plan::YsbSourceSpec;
use sleet_workloads::ysb_check::ground_truth;

const RATE: u64 = 20_000;
const DURATION_S: u64 = 30;
const SEED: u64 = 7;

struct Run {
    spec: YsbSourceSpec,
    result: serde_json::Value,
}

fn run_ysb(name: &str, extra: &[&str], bad_fraction: f64) -> (Run, std::path::PathBuf) {
    let dir = test_dir(name);
    let json = dir.join("result.json");
    let mut command = sleet_bench();
    command.args(["ysb", "--workers", "2", "--batch-interval", "100", "--warmup", "5"]);
    command.args(["--rate", &RATE.to_string(), "--duration", &DURATION_S.to_string(), "--seed", &SEED.to_string()]);
    command.args(["--bad-fraction", &bad_fraction.to_string()]);
    command.arg("--json").arg(&json).arg("--out").arg(&dir);
    command.args(extra);
    let output = run_with_limit(command, Duration::from_secs(DURATION_S + 90));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no result JSON; exit {:?}\nstderr:\n{stderr}", output.status));
    let partitions = result["config"]["partitions"].as_u64().expect("partitions") as u32;
    let spec = YsbSourceSpec { seed: SEED, rate_per_s: RATE, partitions, bad_fraction, pre_decoded: false };
    (Run { spec, result }, dir)
}

/// Last count written per (campaign, window), read straight from the sink files.
fn sink_counts(dir: &Path) -> BTreeMap<(String, i64), u64> {
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("reading sink files");
    let finals = sleet_connectors::sink::final_counts(&rows);
    finals.into_iter().map(|(key, (count, _))| (key, count as u64)).collect()
}

fn assert_exact(run: &Run, dir: &Path) {
    let start_ms = run.result["start_ms"].as_i64().expect("start_ms");
    let end_ms = run.result["end_ms"].as_i64().expect("end_ms");
    assert!(end_ms - start_ms >= DURATION_S as i64 * 1000, "ran only {} ms of batches", end_ms - start_ms);
    let expected = ground_truth(&run.spec, start_ms, end_ms);
    let actual = sink_counts(dir);
    assert!(expected.len() >= 300, "30 s over 100 campaigns spans at least 3 windows each");
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(key, count)| actual.get(*key) != Some(*count))
        .take(5)
        .map(|(key, count)| format!("{key:?}: engine {:?}, truth {count}", actual.get(key)))
        .collect();
    assert!(wrong.is_empty(), "counts differ from the ground truth, e.g. {wrong:?}");
    let extra: Vec<_> = actual.keys().filter(|key| !expected.contains_key(*key)).take(5).collect();
    assert!(extra.is_empty(), "windows with no generated events appear in the output: {extra:?}");
    assert_eq!(run.result["correct"], true, "the bench's own check disagrees: {}", run.result);
}

#[test]
fn ysb_counts_equal_ground_truth_with_partial_aggregation() {
    let (run, dir) = run_ysb("ysb_combine", &[], 0.0);
    assert_exact(&run, &dir);
    assert_eq!(run.result["config"]["combine"], true);
    assert_eq!(run.result["config"]["scheduler"], "group");
    assert_eq!(run.result["config"]["group_size"], "auto");
    let groups = run.result["groups"]["count"].as_u64().expect("group records");
    assert!((1..=300).contains(&groups), "300 batches ran in {groups} groups");
    assert_memory_reported(&run.result["memory"]);
}

/// Every process of the cluster has a peak and a sample a second, and the sum is of those peaks.
fn assert_memory_reported(memory: &serde_json::Value) {
    let processes = memory["processes"].as_array().expect("memory per process");
    let roles: Vec<&str> = processes.iter().filter_map(|process| process["role"].as_str()).collect();
    assert_eq!(roles, ["driver", "worker-1", "worker-2"], "{memory}");
    let mut sum = 0.0;
    for process in processes {
        let peak = process["peak_rss_mb"].as_f64().expect("a peak");
        let samples: Vec<f64> =
            process["rss_mb"].as_array().expect("samples").iter().filter_map(|mb| mb.as_f64()).collect();
        // A process of this size holds more than a megabyte, and far less than a gigabyte.
        assert!((1.0..1_000.0).contains(&peak), "{process}");
        assert!(samples.len() as u64 >= DURATION_S, "about one sample a second: {process}");
        assert!(samples.iter().all(|mb| *mb > 0.0 && *mb <= peak), "{process}");
        sum += peak;
    }
    let reported = memory["peak_rss_mb_sum"].as_f64().expect("the sum");
    assert!((reported - sum).abs() < 1e-6, "{reported} against {sum}");
}

#[test]
fn ysb_counts_equal_ground_truth_under_bsp_without_partial_aggregation() {
    let (run, dir) = run_ysb("ysb_bsp_no_combine", &["--no-combine", "--scheduler", "bsp"], 0.0);
    assert_exact(&run, &dir);
    assert_eq!(run.result["config"]["combine"], false);
    assert_eq!(run.result["config"]["scheduler"], "bsp");
    assert_eq!(run.result["launch_messages"].as_u64(), Some(300 * 4), "bsp sends 2 map + 2 reduce tasks per batch");
}

#[test]
fn ysb_bad_records_become_dead_letters_and_good_counts_stay_exact() {
    let (run, dir) = run_ysb("ysb_bad_records", &["--scheduler", "group", "--group-size", "5"], 0.01);
    assert_exact(&run, &dir);
    let start_ms = run.result["start_ms"].as_i64().expect("start_ms");
    let end_ms = run.result["end_ms"].as_i64().expect("end_ms");
    let bad_generated: usize = (0..run.spec.partitions)
        .map(|p| event_range(&run.spec, p, start_ms, end_ms).filter(|k| event(&run.spec, p, *k).bad.is_some()).count())
        .sum();
    assert!(bad_generated > 1000, "1% of 600k events are bad");
    let letters = sleet_connectors::dead_letter::read_dead_letters(&dir.join("dead-letters")).expect("dead letters");
    assert_eq!(letters.len(), bad_generated, "every bad record is in a dead-letter file, once");
    for letter in &letters {
        let reason = letter["reason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "a dead letter without a reason: {letter}");
    }
    assert_eq!(run.result["dead_letters"].as_u64(), Some(bad_generated as u64));
}

#[test]
fn ysb_is_exact_on_workers_of_two_cores() {
    let (run, dir) = run_ysb("ysb_two_cores", &["--cores-per-worker", "2"], 0.0);
    assert_exact(&run, &dir);
    assert_eq!(run.result["config"]["cores_per_worker"], 2);
    assert_eq!(run.result["config"]["partitions"], 4, "one partition per core by default");
}

#[test]
fn ysb_is_exact_with_more_partitions_than_cores() {
    let (run, dir) = run_ysb("ysb_more_partitions", &["--partitions", "5", "--scheduler", "bsp"], 0.0);
    assert_exact(&run, &dir);
    assert_eq!(run.result["config"]["partitions"], 5);
    let files = sleet_durable::file::list_files(&dir.join("results"), "part-", "listing").expect("the sink files");
    assert_eq!(files.len(), 5, "one sink file per reduce partition");
    assert_figures_state_their_sample_counts(&run.result);
}

fn assert_figures_state_their_sample_counts(result: &serde_json::Value) {
    assert_eq!(result["offered_events_per_s"].as_u64(), Some(RATE));
    let measured_batches = result["throughput"]["measured"]["batches"].as_u64().expect("measured batches");
    assert_eq!(measured_batches, 250, "the 250 batches after the 5 s warm-up");
    assert_eq!(result["throughput"]["measured"]["events"].as_u64().map(|events| events > 0), Some(true));
    assert_eq!(result["lag_ms"]["samples"].as_u64(), Some(measured_batches));
    assert!(result["lag_ms"]["slope_ms_per_s"].is_number(), "{}", result["lag_ms"]);
    // Windows ending in [5 s, 30 s] after the start: 10 s, 20 s and 30 s — too few for a tail.
    let windows = result["latency_ms"]["samples"].as_u64().expect("latency samples");
    assert!((2..=3).contains(&windows), "{}", result["latency_ms"]);
    assert!(result["latency_ms"]["p99"].is_null(), "no p99 from {windows} samples");
    assert!(result["latency_ms"]["note"].as_str().is_some_and(|note| note.contains("too few")));
}

#[test]
fn find_max_rate_answers_with_a_confirmed_probe() {
    let dir = test_dir("ysb_find_max_rate");
    let json = dir.join("result.json");
    let mut command = sleet_bench();
    command.args(["ysb", "--find-max-rate", "--workers", "1", "--batch-interval", "100"]);
    command.args(["--rate", "50000", "--probe-duration", "4", "--probe-warmup", "1", "--duration", "6"]);
    command.args(["--warmup", "2", "--max-probes", "2", "--tolerance", "0.4"]);
    command.arg("--json").arg(&json);
    let output = run_with_limit(command, Duration::from_secs(240));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no result JSON; exit {:?}\nstderr:\n{stderr}", output.status));
    let probes = result["searches"][0]["probes"].as_array().expect("the probes of the search");
    let searched = probes.iter().filter(|probe| probe["kind"] != "confirmation").count();
    assert!((1..=2).contains(&searched), "at most --max-probes probes: {searched}");
    let rates: Vec<u64> = probes.iter().map(|probe| probe["rate"].as_u64().expect("a probe's rate")).collect();
    assert_eq!(rates[0], 50_000, "the search starts at --rate");
    match result["sustainable_events_per_s"].as_f64() {
        Some(rate) => {
            assert!(output.status.success(), "found a rate but exited {:?}", output.status);
            let last = probes.last().expect("a probe");
            assert_eq!(last["kind"], "confirmation", "the answer is confirmed by the last run");
            assert_eq!(last["kept_up"], true);
            assert_eq!(last["rate"].as_f64(), Some(rate));
            assert_eq!(last["duration_s"].as_f64(), Some(6.0), "a confirmation runs the full --duration");
        }
        None => assert_eq!(output.status.code(), Some(1), "no rate found is an error, not a mismatch"),
    }
    for probe in probes {
        let kept_up = probe["kept_up"].as_bool().expect("kept_up");
        assert_eq!(kept_up, probe["stable"] == true && probe["correct"] == true, "{probe}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
