//! `sleet-bench chaos` end to end: workers (and a driver) lost at random times while ysb runs;
//! the counts equal the ground truth and no committed row appears twice.

use crate::common;

use std::time::Duration;

use common::{run_with_limit, sleet_bench, test_dir};

/// Runs `sleet-bench chaos ARGS…` in a fresh directory named `test` and returns its result
/// JSON, once the run succeeded with counts equal to the ground truth and no committed row
/// twice.
fn run_chaos_exactly(test: &str, args: &[&str]) -> serde_json::Value {
    let dir = test_dir(test);
    let result = dir.join("chaos.json");
    let mut command = sleet_bench();
    command.arg("chaos").args(args);
    command.arg("--json").arg(&result).arg("--out").arg(dir.join("out")).arg("--force");
    let output = run_with_limit(command, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench chaos failed:\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&result).expect("the result file")).expect("result JSON");
    assert_eq!(json["ground_truth_matches"], true, "{json:#}");
    assert_eq!(json["duplicate_committed_rows"], 0, "{json:#}");
    json
}

/// The short chaos run CI does: four workers lost at random times (killed or frozen), each
/// replaced by one that joins; the counts equal the ground truth, no committed row appears
/// twice, and every signal led to a recovery.
#[test]
fn a_short_chaos_run_stays_exact_with_no_committed_row_twice() {
    let json = run_chaos_exactly("chaos_short", &["--duration", "40s", "--kills", "4", "--rate", "30000"]);
    let signals = json["signals"].as_array().expect("signals").len();
    assert_eq!(signals, 4, "{json:#}");
    let recoveries = json["recoveries"].as_array().expect("recoveries");
    assert_eq!(recoveries.len(), signals, "every loss recovered: {json:#}");
    // Survivors hand on what they hold: exactness above holds with outputs reused.
    let reused: u64 = recoveries.iter().map(|recovery| recovery["reused_map_tasks"].as_u64().expect("a count")).sum();
    assert!(reused > 0, "no recovery reused a survivor's output: {json:#}");
}

/// The chaos bench with the driver killed and restarted among the workers' signals: the
/// counts equal the ground truth over every batch of the run, no committed row appears twice.
#[test]
fn a_short_chaos_run_with_a_driver_kill_stays_exact() {
    let args = ["--duration", "30s", "--kills", "2", "--driver-kills", "1", "--rate", "30000"];
    let json = run_chaos_exactly("restart_chaos_short", &args);
    assert_eq!(json["driver_restarts"], 1, "{json:#}");
    assert_eq!(json["batches"], 300, "every batch of the 30 s run counts: {json:#}");
    assert_eq!(json["restarts"].as_array().map(Vec::len), Some(1), "{json:#}");
    assert_eq!(json["restarts"][0]["figures_restored"], true, "{json:#}");
    assert_eq!(json["batches_before_restart"], 0, "the restarted driver took the figures over: {json:#}");
}
