//! The group scheduler against the bsp baseline on real processes: the same input gives the
//! same output row for row, the driver sends one message per worker per group (not one per
//! task), and the automatic group size grows when coordination is what the workers wait for.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{run_with_limit, sleet_bench, test_dir};
use sleet_plan::YsbSourceSpec;
use sleet_workloads::ysb_check::ground_truth;

const RATE: u64 = 20_000;
const SEED: u64 = 11;
const DURATION_S: u64 = 20;

fn run_json(command: std::process::Command, json: &Path, limit: Duration) -> serde_json::Value {
    let output = run_with_limit(command, limit);
    let stderr = String::from_utf8_lossy(&output.stderr);
    serde_json::from_slice(&std::fs::read(json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no result JSON; exit {:?}\nstderr:\n{stderr}", output.status))
}

/// Every row the sink wrote, without its processing time: (campaign, window, count) with how
/// often it appears.
fn sink_rows(dir: &Path) -> BTreeMap<(String, i64, i64), usize> {
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("reading sink files");
    let mut counted = BTreeMap::new();
    for row in rows {
        *counted.entry((row.campaign_id, row.window_start, row.count)).or_insert(0) += 1;
    }
    counted
}

/// ysb over a fixed past range: both schedulers replay exactly the same input as a backlog.
fn replay_ysb(name: &str, start_ms: i64, scheduler: &[&str]) -> (serde_json::Value, std::path::PathBuf) {
    let dir = test_dir(name);
    let json = dir.join("result.json");
    let mut command = sleet_bench();
    command.args(["ysb", "--workers", "2", "--batch-interval", "100", "--warmup", "0"]);
    command.args(["--rate", &RATE.to_string(), "--duration", &DURATION_S.to_string(), "--seed", &SEED.to_string()]);
    command.args(["--start-ms", &start_ms.to_string()]);
    command.arg("--json").arg(&json).arg("--out").arg(&dir);
    command.args(scheduler);
    (run_json(command, &json, Duration::from_secs(DURATION_S + 120)), dir)
}

#[test]
fn both_schedulers_write_the_same_rows_for_the_same_input() {
    let now_ms = sleet_wire::clock::now_ms();
    // Aligned to the window size and far enough back that every batch has closed.
    let start_ms = (now_ms - 60_000) / 10_000 * 10_000;
    let (bsp, bsp_dir) = replay_ysb("schedulers_same_rows_bsp", start_ms, &["--scheduler", "bsp"]);
    // An odd group size, so group boundaries fall across windows and the end of the job.
    let (group, group_dir) =
        replay_ysb("schedulers_same_rows_group", start_ms, &["--scheduler", "group", "--group-size", "7"]);
    assert_eq!(bsp["config"]["scheduler"], "bsp");
    assert_eq!(group["config"]["scheduler"], "group");
    for result in [&bsp, &group] {
        assert_eq!(result["start_ms"].as_i64(), Some(start_ms));
        assert_eq!(result["correct"], true, "the bench's own check failed: {result}");
    }

    let spec = YsbSourceSpec { seed: SEED, rate_per_s: RATE, partitions: 2, bad_fraction: 0.0, pre_decoded: false };
    let end_ms = start_ms + DURATION_S as i64 * 1000;
    let truth = ground_truth(&spec, start_ms, end_ms);
    let (bsp_rows, group_rows) = (sink_rows(&bsp_dir), sink_rows(&group_dir));
    assert!(bsp_rows.len() > truth.len(), "windows are updated more than once: {} rows", bsp_rows.len());
    let differing: Vec<_> = bsp_rows
        .iter()
        .filter(|(row, times)| group_rows.get(*row) != Some(*times))
        .chain(group_rows.iter().filter(|(row, _)| !bsp_rows.contains_key(*row)))
        .take(5)
        .collect();
    assert!(differing.is_empty(), "rows differ between the schedulers, e.g. {differing:?}");
    let mut finals: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for (campaign, window, count) in group_rows.keys() {
        let entry = finals.entry((campaign.clone(), *window)).or_insert(0);
        *entry = (*entry).max(*count);
    }
    let wrong: Vec<_> =
        truth.iter().filter(|(key, count)| finals.get(*key) != Some(&(**count as i64))).take(5).collect();
    assert!(wrong.is_empty(), "final counts differ from the ground truth, e.g. {wrong:?}");
}

fn sched_run(name: &str, shape: &str, workers: u32, batches: u32, scheduler: &[&str]) -> serde_json::Value {
    let dir = test_dir(name);
    let json = dir.join("result.json");
    let mut command = sleet_bench();
    command.args([shape, "--workers", &workers.to_string(), "--batches", &batches.to_string()]);
    command.args(["--runs", "1"]).arg("--json").arg(&json).arg("--out").arg(&dir);
    command.args(scheduler);
    run_json(command, &json, Duration::from_secs(120))
}

#[test]
fn the_driver_sends_one_message_per_worker_per_group() {
    const WORKERS: u64 = 4;
    const BATCHES: u64 = 100;
    const GROUP_SIZE: u64 = 10;
    const REDUCE_TASKS: u64 = 16;
    let group = sched_run(
        "messages_shuffle_group",
        "shuffle",
        WORKERS as u32,
        BATCHES as u32,
        &["--scheduler", "group", "--group-size", &GROUP_SIZE.to_string()],
    );
    assert_eq!(group["complete"], true, "{group}");
    let groups = BATCHES / GROUP_SIZE;
    let tasks = BATCHES * (WORKERS + REDUCE_TASKS);
    assert_eq!(group["launch_messages"].as_u64(), Some(WORKERS * groups), "one message per worker per group");
    assert!(WORKERS * groups * 10 < tasks, "the count is far from one per task ({tasks})");

    let bsp = sched_run("messages_shuffle_bsp", "shuffle", WORKERS as u32, BATCHES as u32, &["--scheduler", "bsp"]);
    assert_eq!(bsp["complete"], true, "{bsp}");
    assert_eq!(bsp["launch_messages"].as_u64(), Some(tasks), "bsp sends each task on its own");
}

#[test]
fn the_automatic_group_size_grows_while_workers_wait_for_coordination() {
    // A backlog of tiny batches: at one batch per group the workers finish each batch long
    // before the driver's next group can reach them, so coordination dominates.
    let run = sched_run("auto_group_size", "sched", 2, 400, &["--scheduler", "group", "--group-size", "auto"]);
    assert_eq!(run["complete"], true, "{run}");
    let sizes: Vec<u64> =
        run["group_sizes"].as_array().expect("group sizes").iter().filter_map(serde_json::Value::as_u64).collect();
    assert_eq!(sizes.first(), Some(&1), "the automatic size starts at one batch: {sizes:?}");
    let largest = sizes.iter().copied().max().unwrap_or(0);
    assert!(largest >= 4, "the size should have doubled at least twice: {sizes:?}");
    assert_eq!(sizes.iter().sum::<u64>(), 400, "the groups cover every batch once: {sizes:?}");
}

#[test]
fn a_latency_target_stops_the_automatic_group_size_at_its_share() {
    // The same backlog that makes the size double without a target: 40 ms × 0.5 allows two
    // batches of 10 ms per group, so the size climbs to two and stays there.
    let run = sched_run(
        "latency_bounded_group_size",
        "sched",
        2,
        400,
        &["--scheduler", "group", "--group-size", "auto", "--latency-target", "40ms", "--group-latency-share", "0.5"],
    );
    assert_eq!(run["complete"], true, "{run}");
    assert_eq!(run["config"]["latency_target"], serde_json::json!({"target_ms": 40, "group_share": 0.5}));
    let sizes: Vec<u64> =
        run["group_sizes"].as_array().expect("group sizes").iter().filter_map(serde_json::Value::as_u64).collect();
    assert_eq!(sizes.iter().copied().max(), Some(2), "grown to the bound and never past it: {sizes:?}");
    assert_eq!(sizes.iter().sum::<u64>(), 400, "the groups cover every batch once: {sizes:?}");
}
