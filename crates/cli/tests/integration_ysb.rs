//! ysb end to end: a driver and 2 worker processes run 30 s of batches; every
//! (campaign, window) count must equal the ground truth computed from the generator function
//! directly, never through the engine's operators. The runs cover both schedulers: group with
//! the automatic size (the default), bsp, and group with a fixed size.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{run_with_limit, sleet, test_dir};
use sleet_connectors::ysb::{event, event_range, ground_truth};
use sleet_plan::YsbSourceSpec;

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
    let mut command = sleet();
    command.args(["bench", "ysb", "--workers", "2", "--batch-interval", "100", "--warmup", "5"]);
    command.args(["--rate", &RATE.to_string(), "--duration", &DURATION_S.to_string(), "--seed", &SEED.to_string()]);
    command.args(["--bad-fraction", &bad_fraction.to_string()]);
    command.arg("--json").arg(&json).arg("--out").arg(&dir);
    command.args(extra);
    let output = run_with_limit(command, Duration::from_secs(DURATION_S + 90));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no result JSON; exit {:?}\nstderr:\n{stderr}", output.status));
    let partitions = result["config"]["partitions"].as_u64().expect("partitions") as u32;
    let spec = YsbSourceSpec { seed: SEED, rate_per_s: RATE, partitions, bad_fraction };
    (Run { spec, result }, dir)
}

/// Last count written per (campaign, window), read straight from the sink files.
fn sink_counts(dir: &Path) -> BTreeMap<(String, i64), u64> {
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("reading sink files");
    rows.into_iter().map(|row| ((row.campaign_id, row.window_start), row.count as u64)).collect()
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
