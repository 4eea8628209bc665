//! Failures a user meets: a plan error is reported before anything runs, naming the node and
//! column; the demo stops every process it started, on its own or on Ctrl-C. (A worker that
//! dies mid-run is recovered from: see `recovery.rs`.)

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{alive, interrupt, run_with_limit, sleet, test_dir, wait_with_limit, ysb_job_file, INTERRUPTED};

#[test]
fn unknown_column_is_rejected_naming_node_and_column() {
    let dir = test_dir("plan_error");
    let job = ysb_job_file(&dir, "5");
    let text = std::fs::read_to_string(&job).expect("job file");
    assert!(text.contains("\"column\": \"event_type\""), "the filter reads event_type");
    std::fs::write(&job, text.replace("\"column\": \"event_type\"", "\"column\": \"event_kind\"")).expect("write");
    let mut command = sleet();
    // No driver listens here: the error must come from validation, before any connection.
    command.arg("submit").arg(&job).args(["--driver", "127.0.0.1:9"]);
    let output = run_with_limit(command, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("node 2 (filter)"), "error names the node: {stderr}");
    assert!(stderr.contains("event_kind"), "error names the column: {stderr}");
}

#[test]
fn the_demo_runs_and_stops_every_process() {
    let dir = test_dir("demo");
    let mut command = sleet();
    command.args(["demo", "--duration", "6", "--rate", "20000"]).arg("--out").arg(&dir);
    let output = run_with_limit(command, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "demo failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let status_lines = stdout.lines().filter(|line| line.contains("events/s | batches")).count();
    assert!(status_lines >= 3, "a status line about every second: {stdout}");
    assert!(stdout.contains("every process has exited"), "{stdout}");
    assert!(
        stdout.lines().nth(1).is_some_and(|line| line.starts_with("sleet demo: dashboard on http://127.0.0.1:")),
        "{stdout}"
    );
}

#[test]
fn ctrl_c_stops_the_demo_and_every_process_it_started() {
    let dir = test_dir("demo_ctrl_c");
    let mut demo = sleet()
        .args(["demo", "--rate", "20000"])
        .arg("--out")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("demo");
    let mut stdout = BufReader::new(demo.stdout.take().expect("piped"));
    let mut banner = String::new();
    stdout.read_line(&mut banner).expect("banner");
    let pids: Vec<u32> = banner
        .split("pids [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the banner lists worker pids")
        .split(", ")
        .map(|pid| pid.trim().parse().expect("pid"))
        .collect();
    assert_eq!(pids.len(), 2, "{banner}");
    std::thread::sleep(Duration::from_secs(4));
    interrupt(&demo);
    let status = wait_with_limit(&mut demo, Duration::from_secs(30));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("stdout");
    assert_eq!(status.code(), Some(INTERRUPTED), "Ctrl-C exits with the interrupt code: {rest}");
    assert!(rest.contains("every process has exited"), "{rest}");
    for pid in pids {
        assert!(!alive(pid), "worker {pid} outlived the demo");
    }
}
