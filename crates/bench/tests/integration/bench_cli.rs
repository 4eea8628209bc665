//! The benchmarks' command line: Ctrl-C stops a benchmark and every process it started, and
//! group flags that do not apply are refused.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    alive, assert_bsp_refuses, children_of, interrupt, sleet_bench, stderr_until, test_dir, wait_with_limit,
    INTERRUPTED,
};

#[test]
fn ctrl_c_stops_a_benchmark_and_every_process_it_started() {
    let dir = test_dir("cli_ctrl_c_bench");
    let mut bench = sleet_bench()
        .args(["ysb", "--rate", "20000", "--duration", "60s", "--warmup", "5s"])
        .arg("--out")
        .arg(dir.join("run"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bench");
    stderr_until(&mut bench, "events/s  batches", Duration::from_secs(30));
    let children = children_of(bench.id());
    assert!(children.len() >= 3, "a driver and 2 workers: {children:?}");
    interrupt(&bench);
    let status = wait_with_limit(&mut bench, Duration::from_secs(20));
    assert_eq!(status.code(), Some(INTERRUPTED), "an interrupt, not a results mismatch");
    let deadline = Instant::now() + Duration::from_secs(5);
    while children.iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<_> = children.iter().filter(|pid| alive(**pid)).collect();
    assert!(left.is_empty(), "processes outlived the benchmark: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn group_flags_are_refused_under_bsp_naming_the_flag() {
    for (benchmark, flag, value) in [("ysb", "--group-size", "4"), ("sched", "--group-size", "10")] {
        let mut command = sleet_bench();
        command.arg(benchmark);
        assert_bsp_refuses(command, flag, value);
    }
}
