//! The command line as a new user meets it: Ctrl-C in each phase exits 130 and leaves no
//! process behind, a driver short of workers says who joined, workers on other addresses
//! advertise where they listen, a checkpoint directory holds one driver, flags that do not
//! apply are refused, durations take units, `--out` never deletes what sleet did not write,
//! a bad job file is explained once, and a client whose status reader went away still runs
//! its job to the end.

use crate::common;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::{
    assert_bsp_refuses, interrupt, run_with_limit, sleet, start_worker, stderr_until, test_dir, wait_with_limit,
    ysb_job_file, Reaper, INTERRUPTED,
};

/// `sleet submit JOB` to the driver at `address`, its stdout and stderr piped to the test.
fn spawn_submit(job: &std::path::Path, address: &str) -> Child {
    sleet()
        .arg("submit")
        .arg(job)
        .args(["--driver", address])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("submit")
}

/// Starts a driver on `listen` and returns it with the address it printed.
fn start_driver(listen: &str, extra: &[&str]) -> (Child, String) {
    common::start_driver_on(listen, extra)
}

#[test]
fn ctrl_c_while_the_driver_waits_for_workers_withdraws_the_job_and_exits_130() {
    let dir = test_dir("cli_ctrl_c_waiting");
    let job = ysb_job_file(&dir, "3s");
    let (driver, address) = start_driver("127.0.0.1:0", &["--expect-workers", "2", "--worker-wait", "60s"]);
    let mut processes = Reaper(vec![driver]);
    let mut submit = sleet()
        .arg("submit")
        .arg(&job)
        .args(["--driver", &address])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("submit");
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&submit);
    let status = wait_with_limit(&mut submit, Duration::from_secs(10));
    // Its few lines fit the pipe, so reading them after it exited cannot block it.
    let mut said = String::new();
    if let Some(mut stderr) = submit.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
    }
    assert_eq!(status.code(), Some(INTERRUPTED), "Ctrl-C before the job was accepted; submit said: {said}");

    // The withdrawn job must not hold the driver: with its workers there, the next job runs.
    for index in 1..=2 {
        processes.0.push(start_worker(&address, &["--name", &format!("late-{index}")]));
    }
    let mut again = sleet();
    again.arg("submit").arg(&job).args(["--driver", &address]);
    let output = run_with_limit(again, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("finished: 30 batches"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_while_a_submitted_job_runs_stops_it_and_exits_130() {
    let dir = test_dir("cli_ctrl_c_running");
    let job = ysb_job_file(&dir, "60s");
    let (driver, address) = start_driver("127.0.0.1:0", &[]);
    let processes = Reaper(vec![driver, start_worker(&address, &[])]);
    let mut submit = spawn_submit(&job, &address);
    stderr_until(&mut submit, "events/s", Duration::from_secs(20));
    interrupt(&submit);
    let status = wait_with_limit(&mut submit, Duration::from_secs(15));
    assert_eq!(status.code(), Some(INTERRUPTED));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut submit.stdout.take().expect("piped"), &mut stdout).expect("stdout");
    assert!(stdout.contains("finished:"), "what ran before the stop is summarized: {stdout}");
    drop(processes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_submit_whose_status_reader_goes_away_still_runs_its_job_to_the_end() {
    let dir = test_dir("cli_stderr_closed");
    let job = ysb_job_file(&dir, "3s");
    let (driver, address) = start_driver("127.0.0.1:0", &[]);
    let _processes = Reaper(vec![driver, start_worker(&address, &[])]);
    let mut submit = spawn_submit(&job, &address);
    // As `sleet submit … 2>&1 | head -n 1` does: one status line read, then the pipe closed.
    let mut status_lines = std::io::BufReader::new(submit.stderr.take().expect("piped"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut status_lines, &mut first).expect("a status line");
    drop(status_lines);
    let status = wait_with_limit(&mut submit, Duration::from_secs(30));
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut submit.stdout.take().expect("piped"), &mut stdout).expect("stdout");
    assert_eq!(status.code(), Some(0), "first status line {first:?}; stdout: {stdout}");
    assert!(stdout.contains("finished: 30 batches"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_driver_short_of_workers_fails_the_job_naming_who_joined() {
    let dir = test_dir("cli_too_few_workers");
    let job = ysb_job_file(&dir, "3s");
    let (driver, address) = start_driver("127.0.0.1:0", &["--expect-workers", "2", "--worker-wait", "2s"]);
    let _processes = Reaper(vec![driver, start_worker(&address, &["--name", "lonely-worker"])]);
    let mut submit = sleet();
    submit.arg("submit").arg(&job).args(["--driver", &address]);
    let output = run_with_limit(submit, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("lonely-worker") && stderr.contains('2'),
        "names who joined and how many were expected: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A port that was free on `ip` a moment ago.
fn free_port(ip: &str) -> u16 {
    let listener = std::net::TcpListener::bind((ip, 0)).expect("binding a loopback address");
    listener.local_addr().expect("address").port()
}

#[test]
fn workers_on_other_loopback_addresses_run_a_job_with_the_driver() {
    let dir = test_dir("cli_advertise");
    let job = ysb_job_file(&dir, "3s");
    let (driver, address) = start_driver("127.0.0.2:0", &["--expect-workers", "2"]);
    assert!(address.starts_with("127.0.0.2:"), "{address}");
    let advertised = format!("127.0.0.3:{}", free_port("127.0.0.3"));
    let explicit = start_worker(&address, &["--listen", &advertised, "--advertise", &advertised]);
    let by_default = start_worker(&address, &["--listen", "127.0.0.4:0"]);
    let _processes = Reaper(vec![driver, explicit, by_default]);
    let mut submit = sleet();
    submit.arg("submit").arg(&job).args(["--driver", &address]);
    let output = run_with_limit(submit, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("finished: 30 batches"), "{stdout}");
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("the results");
    assert!(!rows.is_empty(), "shuffled rows reached the sink across addresses");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wildcard_listen_address_needs_advertise() {
    let mut worker = sleet();
    worker.args(["worker", "--driver", "127.0.0.1:9", "--listen", "0.0.0.0:0"]);
    let output = run_with_limit(worker, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--advertise") && stderr.contains("0.0.0.0"), "{stderr}");
}

#[test]
fn a_second_driver_on_a_checkpoint_directory_in_use_is_refused_naming_it() {
    let dir = test_dir("cli_shared_checkpoints");
    let checkpoints = dir.join("checkpoints");
    let checkpoints = checkpoints.to_str().expect("a UTF-8 path");
    let (first, _) = start_driver("127.0.0.1:0", &["--checkpoint-dir", checkpoints]);
    let _processes = Reaper(vec![first]);
    let mut second = sleet();
    second.args(["driver", "--listen", "127.0.0.1:0", "--checkpoint-dir", checkpoints]);
    let output = run_with_limit(second, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("in use") && stderr.contains(checkpoints), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "a refused driver never says it listens: {}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn group_flags_are_refused_under_bsp_naming_the_flag() {
    for (flag, value) in [("--group-size", "4"), ("--overhead-bounds", "0.1,0.2")] {
        let mut command = sleet();
        command.args(["job", "ysb"]);
        assert_bsp_refuses(command, flag, value);
    }
}

fn job_settings(args: &[&str]) -> Result<serde_json::Value, String> {
    let mut command = sleet();
    command.args(["job", "ysb"]).args(args);
    let output = run_with_limit(command, Duration::from_secs(20));
    if !output.status.success() {
        return Err(format!("exit {:?}: {}", output.status.code(), String::from_utf8_lossy(&output.stderr)));
    }
    let job: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a job file");
    Ok(job["settings"].clone())
}

#[test]
fn durations_take_units_and_bare_numbers_keep_their_unit() {
    let settings = job_settings(&["--batch-interval", "10ms", "--duration", "2s"]).expect("units");
    assert_eq!((settings["batch_interval_ms"].as_u64(), settings["duration_ms"].as_u64()), (Some(10), Some(2_000)));
    let settings = job_settings(&["--batch-interval", "25", "--duration", "1m"]).expect("a bare interval is in ms");
    assert_eq!((settings["batch_interval_ms"].as_u64(), settings["duration_ms"].as_u64()), (Some(25), Some(60_000)));
    let settings = job_settings(&["--batch-interval", "1s", "--duration", "3"]).expect("a bare duration is in s");
    assert_eq!((settings["batch_interval_ms"].as_u64(), settings["duration_ms"].as_u64()), (Some(1_000), Some(3_000)));
    let error = job_settings(&["--duration", "5x"]).expect_err("x is not a unit");
    assert!(error.starts_with("exit Some(1)") && error.contains("5x") && error.contains("--duration"), "{error}");
}

#[test]
fn job_ysb_writes_results_to_a_directory_by_default() {
    let mut command = sleet();
    command.args(["job", "ysb"]);
    let output = run_with_limit(command, Duration::from_secs(20));
    let job: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a job file");
    let text = job["plan"].to_string();
    assert!(text.contains("sleet-results"), "the sink is a directory, not stdout: {text}");
}

#[test]
fn out_refuses_a_directory_of_other_files_and_leaves_them() {
    let dir = test_dir("cli_out_foreign");
    std::fs::write(dir.join("notes.txt"), "mine").expect("a file of the user's");
    std::fs::create_dir_all(dir.join("results")).expect("a directory of the user's");
    std::fs::write(dir.join("results").join("keep.jsonl"), "{}").expect("a file of the user's");
    let mut demo = sleet();
    demo.args(["demo", "--rate", "10000", "--duration", "3s"]).arg("--out").arg(&dir);
    let output = run_with_limit(demo, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert!(dir.join("notes.txt").exists() && dir.join("results").join("keep.jsonl").exists(), "nothing deleted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_job_file_is_explained_once() {
    let dir = test_dir("cli_bad_job");
    let job = dir.join("bad.json");
    std::fs::write(&job, "{\n").expect("a truncated job file");
    let mut submit = sleet();
    submit.arg("submit").arg(&job).args(["--driver", "127.0.0.1:9"]);
    let output = run_with_limit(submit, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad.json"), "{stderr}");
    assert_eq!(stderr.matches("EOF while parsing").count(), 1, "the cause once: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
