//! Driver restarts and deaths at the edges of the commit protocol, end to end with real
//! processes. The driver is killed (SIGKILL, or a failpoint right before or after it writes a
//! checkpoint record or a commit manifest) and started again with the same state directory:
//! its workers re-register, the job resumes from the last checkpoint, the submitting client
//! follows it to the end through the restart, and every (campaign, window) count equals the
//! ground truth with no committed row twice and the manifest covering every batch. A worker
//! dying between its sink write and its report is recovered the ordinary way.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use common::recovery::{
    assert_checkpoints_removed, assert_exact, assert_segments_cover_the_job, output_of, signal, sleep_until, submit,
    worker, worker_armed, ysb_job, Job,
};
use common::{test_dir, Reaper};

/// The exit code of a process a failpoint ended (`sleet_failpoint::EXIT_CODE`).
const FAILPOINT_EXIT_CODE: i32 = 86;
const WORKERS: u32 = 3;

/// Starts a driver on `listen` with the test's checkpoint and state directories, its log
/// appended to `dir/driver.log`, `failpoints` armed.
fn driver(dir: &Path, listen: &str, failpoints: &str) -> (Child, String) {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("driver.log")).expect("driver log");
    let checkpoints = dir.join("checkpoints").display().to_string();
    let state = dir.join("state").display().to_string();
    let expected = WORKERS.to_string();
    let extra = [
        "--expect-workers",
        expected.as_str(),
        "--checkpoint-dir",
        checkpoints.as_str(),
        "--state-dir",
        state.as_str(),
    ];
    common::start_driver_armed(listen, &extra, log, failpoints)
}

/// A driver (with `failpoints` armed) and `WORKERS` workers; the driver is `processes.0[0]`.
fn cluster(dir: &Path, failpoints: &str) -> (Reaper, String) {
    let (driver, address) = driver(dir, "127.0.0.1:0", failpoints);
    let mut processes = Reaper(vec![driver]);
    for index in 1..=WORKERS {
        processes.0.push(worker(dir, &address, index));
    }
    (processes, address)
}

/// Waits (bounded) for a process armed with `failpoint` to end, and checks that the
/// failpoint ended it: its exit code or abort, and its line in the process's `log`.
fn wait_for_failpoint(process: &mut Child, failpoint: &str, log: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    while process.try_wait().expect("polling the process").is_none() {
        assert!(Instant::now() < deadline, "the process armed with {failpoint} still runs after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = process.wait().expect("the process's status");
    let by_failpoint = status.code() == Some(FAILPOINT_EXIT_CODE) || status.signal() == Some(libc::SIGABRT);
    assert!(by_failpoint, "the failpoint, not something else, ended it: {status:?}");
    let name = failpoint.split('=').next().expect("a name");
    let text = std::fs::read_to_string(log).expect("the process's log");
    assert!(text.contains(&format!("failpoint {name} at hit")), "{name} ended it: {text}");
}

/// What every restart must leave: the client saw the job through, the output is exact and
/// committed once, and nothing of the job is left in the state or checkpoint directories.
/// Returns what the client printed.
fn assert_resumed_exactly(submit: Child, job: &Job, dir: &Path) -> String {
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(90));
    assert!(succeeded, "the client follows the job through the restart:\n{stdout}\n{stderr}");
    assert!(stderr.contains("lost the driver"), "the client says it lost the driver: {stderr}");
    let log = std::fs::read_to_string(dir.join("driver.log")).expect("driver log");
    assert!(log.contains("resuming job"), "the restarted driver resumed the job: {log}");
    assert_exact(job, dir);
    assert_segments_cover_the_job(dir, job);
    assert!(!dir.join("state").exists(), "a finished job's state is removed");
    assert_checkpoints_removed(dir);
    stdout
}

/// A worker is killed and replaced, the driver recovers, then the driver is killed and
/// restarted: the summary the client prints at the end is the whole job's, the recovery
/// before the restart and the restart itself included.
#[test]
fn a_killed_driver_restarted_with_its_state_resumes_the_job_exactly() {
    let dir = test_dir("restart_kill");
    let job = ysb_job(&dir, "group", 3, 12);
    let (mut processes, address) = cluster(&dir, "");
    let submit = submit(&job, &address);
    sleep_until(job.start_ms + 2_000);
    signal(&processes.0[WORKERS as usize], libc::SIGKILL);
    // The restarted driver waits for as many workers as the first did.
    processes.0.push(worker(&dir, &address, WORKERS + 1));
    let recovered = |line: &str| line.contains("going on with workers") && !line.contains("joined");
    wait_for_log(&dir.join("driver.log"), recovered, Duration::from_secs(20));
    sleep_until(job.start_ms + 5_000);
    signal(&processes.0[0], libc::SIGKILL);
    let _ = processes.0[0].wait();
    let (restarted, _) = driver(&dir, &address, "");
    processes.0[0] = restarted;
    let stdout = assert_resumed_exactly(submit, &job, &dir);
    let batches = (job.end_ms - job.start_ms) / common::recovery::BATCH_INTERVAL_MS;
    assert!(stdout.contains(&format!("finished: {batches} batches")), "every batch counts once: {stdout}");
    // Worker ids follow the order of registration; its name is the one the test gave it.
    let killed = format!("(worker-{WORKERS}, pid");
    let recovery = stdout.lines().find(|line| line.contains("recovered from losing worker") && line.contains(&killed));
    let recovery = recovery.unwrap_or_else(|| panic!("the recovery before the restart is listed: {stdout}"));
    assert!(recovery.contains("[before the first driver restart]"), "{recovery}");
    assert!(stdout.contains("the driver restarted (restart 1)"), "the restart is listed: {stdout}");
    assert!(!stdout.contains("figures before it were not kept"), "{stdout}");
}

/// Waits (bounded) until `log` has a line `wanted` accepts.
fn wait_for_log(log: &Path, wanted: impl Fn(&str) -> bool, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !std::fs::read_to_string(log).unwrap_or_default().lines().any(&wanted) {
        assert!(Instant::now() < deadline, "the line waited for is not in {} after {limit:?}", log.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The driver dies at `failpoint` (`name=action@nth`) and is restarted without it.
fn restart_at_failpoint(test: &str, scheduler: &str, failpoint: &str) {
    let dir = test_dir(test);
    let job = ysb_job(&dir, scheduler, 3, 10);
    let (mut processes, address) = cluster(&dir, failpoint);
    let submit = submit(&job, &address);
    wait_for_failpoint(&mut processes.0[0], failpoint, &dir.join("driver.log"), Duration::from_secs(40));
    let (restarted, _) = driver(&dir, &address, "");
    processes.0[0] = restarted;
    assert_resumed_exactly(submit, &job, &dir);
}

#[test]
fn a_driver_dying_before_it_records_a_checkpoint_resumes_from_the_one_before() {
    restart_at_failpoint("restart_before_checkpoint", "group", "driver-before-checkpoint-record=exit@3");
}

#[test]
fn a_driver_dying_right_after_it_records_a_checkpoint_resumes_from_it() {
    restart_at_failpoint("restart_after_checkpoint", "bsp", "driver-after-checkpoint-record=abort@3");
}

#[test]
fn a_driver_dying_between_the_sink_writes_and_the_manifest_commits_nothing_twice() {
    restart_at_failpoint("restart_before_manifest", "group", "driver-before-manifest=exit@30");
}

#[test]
fn a_driver_dying_right_after_publishing_a_manifest_writes_no_committed_batch_again() {
    restart_at_failpoint("restart_after_manifest", "group", "driver-after-manifest=exit@30");
}

#[test]
fn a_worker_dying_between_its_sink_write_and_its_report_is_recovered_exactly() {
    let dir = test_dir("restart_worker_failpoint");
    let job = ysb_job(&dir, "group", 3, 10);
    let (driver, address) = driver(&dir, "127.0.0.1:0", "");
    let mut processes = Reaper(vec![driver]);
    processes.0.push(worker(&dir, &address, 1));
    processes.0.push(worker(&dir, &address, 2));
    let failpoint = "worker-after-sink-write=exit@40";
    processes.0.push(worker_armed(&dir, &address, 3, failpoint));
    let submit = submit(&job, &address);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(90));
    assert!(succeeded, "the job survives the worker's death:\n{stdout}\n{stderr}");
    wait_for_failpoint(&mut processes.0[3], failpoint, &dir.join("worker-3.log"), Duration::from_secs(10));
    assert!(stdout.contains("recovered from losing worker"), "the summary tells of the recovery: {stdout}");
    assert_exact(&job, &dir);
    assert_segments_cover_the_job(&dir, &job);
}

#[test]
fn a_damaged_state_file_stops_the_driver_naming_the_file_and_the_field() {
    let dir = test_dir("restart_damaged_state");
    std::fs::create_dir_all(dir.join("state")).expect("state dir");
    std::fs::write(dir.join("state/job.json"), r#"{"job": 3}"#).expect("a damaged state file");
    let mut command = common::sleet();
    command.args(["driver", "--listen", "127.0.0.1:0", "--state-dir"]).arg(dir.join("state"));
    command.arg("--checkpoint-dir").arg(dir.join("checkpoints"));
    let output = common::run_with_limit(command, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the driver does not start without its job: {stderr}");
    assert!(stderr.contains("state/job.json") && stderr.contains("missing field"), "{stderr}");
}

#[test]
fn attaching_to_a_job_the_driver_does_not_know_is_refused_with_a_reason() {
    let dir = test_dir("restart_attach_unknown");
    let (driver, address) = driver(&dir, "127.0.0.1:0", "");
    let _processes = Reaper(vec![driver]);
    let mut command = common::sleet();
    command.args(["attach", "7", "--driver", &address]);
    let output = common::run_with_limit(command, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("knows no job 7"), "{stderr}");
}
