//! Recovery from a lost worker, end to end with real processes: a worker killed (SIGKILL) or
//! frozen (SIGSTOP) in the middle of a ysb job is detected, the job resumes on the survivors
//! from its latest checkpoint, and every (campaign, window) count still equals the ground
//! truth computed from the generator function, with no committed row twice. A frozen worker that wakes up finds itself
//! fenced and exits; a job whose last worker dies fails with a clear error.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::recovery::{
    assert_checkpoints_removed, assert_exact, assert_segments_cover_the_job, output_of, reused_source_tasks, signal,
    sleep_until, submit, worker, ysb_job,
};
use common::{test_dir, wait_with_limit, Reaper};

/// A driver and `workers` workers, the driver's log in `dir`.
fn cluster(dir: &Path, workers: u32) -> (Reaper, String) {
    let log = std::fs::File::create(dir.join("driver.log")).expect("driver log");
    let checkpoints = dir.join("checkpoints").display().to_string();
    let expected = workers.to_string();
    let extra = ["--expect-workers", expected.as_str(), "--checkpoint-dir", checkpoints.as_str()];
    let (driver, address) = common::start_driver_logged("127.0.0.1:0", &extra, log);
    let mut processes = Reaper(vec![driver]);
    for index in 1..=workers {
        processes.0.push(worker(dir, &address, index));
    }
    (processes, address)
}

#[test]
fn a_killed_worker_is_recovered_on_the_survivors_and_every_count_stays_exact() {
    let dir = test_dir("recovery_kill");
    let job = ysb_job(&dir, "group", 3, 14);
    let (processes, address) = cluster(&dir, 3);
    let submit = submit(&job, &address);
    sleep_until(job.start_ms + 5_500);
    signal(&processes.0[2], libc::SIGKILL);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(60));
    assert!(succeeded, "the job survives a lost worker:\n{stdout}\n{stderr}");
    assert!(stdout.contains("recovered from losing worker"), "the summary tells of the recovery: {stdout}");
    assert!(stdout.contains("its connection closed"), "a killed worker is noticed by its connection: {stdout}");
    assert!(stdout.contains("from the checkpoint after batch"), "it resumed from a checkpoint: {stdout}");
    assert_exact(&job, &dir);
    assert_segments_cover_the_job(&dir, &job);
    assert_checkpoints_removed(&dir);
}

#[test]
fn a_frozen_worker_is_caught_by_the_heartbeat_timeout_fenced_and_recovered_under_bsp() {
    let dir = test_dir("recovery_stop");
    let job = ysb_job(&dir, "bsp", 3, 14);
    let (mut processes, address) = cluster(&dir, 3);
    let submit = submit(&job, &address);
    sleep_until(job.start_ms + 5_500);
    signal(&processes.0[2], libc::SIGSTOP);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(60));
    assert!(succeeded, "the job survives a frozen worker:\n{stdout}\n{stderr}");
    assert!(stdout.contains("no heartbeat for"), "the timeout, not a closed connection, caught it: {stdout}");
    // bsp ran the batch in flight's source tasks on the survivors before the loss was
    // found: at least those are handed on, not run again.
    let reused = reused_source_tasks(&stdout);
    assert!(reused > 0, "the survivors' outputs were not reused: {stdout}");
    assert_exact(&job, &dir);
    // Woken up, it reads the end of the connection the driver closed, and exits by itself.
    signal(&processes.0[2], libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(10);
    let woken = &mut processes.0[2];
    while woken.try_wait().expect("poll").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(woken.try_wait().expect("poll").is_some(), "the fenced worker still runs 10 s after waking");
}

#[test]
fn losing_the_only_worker_fails_the_job_naming_it() {
    let dir = test_dir("recovery_none_left");
    let job = ysb_job(&dir, "group", 1, 30);
    let (processes, address) = cluster(&dir, 1);
    let submit = submit(&job, &address);
    sleep_until(job.start_ms + 2_000);
    let victim = processes.0[1].id();
    signal(&processes.0[1], libc::SIGKILL);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(30));
    assert!(!succeeded, "nothing is left to run the job: {stdout}");
    assert!(stderr.contains("no worker is left to recover on"), "the error says why: {stderr}");
    assert!(stderr.contains(&format!("pid {victim}")), "the error names the lost worker: {stderr}");
}

#[test]
fn a_worker_joins_and_another_leaves_a_running_job_at_checkpoints_with_nothing_replayed_and_exact_counts() {
    let dir = test_dir("recovery_join_leave");
    // Six partitions on two workers: a third takes two of them, then the first hands its
    // partitions to the other two when it is asked to stop (SIGTERM).
    let job = ysb_job(&dir, "group", 6, 16);
    let (mut processes, address) = cluster(&dir, 2);
    let submit = submit(&job, &address);
    sleep_until(job.start_ms + 4_500);
    processes.0.push(worker(&dir, &address, 3));
    sleep_until(job.start_ms + 9_000);
    signal(&processes.0[1], libc::SIGTERM);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(60));
    assert!(succeeded, "the job goes on through a join and a leave:\n{stdout}\n{stderr}");
    let changes: Vec<&str> = stdout.lines().filter(|line| line.contains("at the checkpoint after batch")).collect();
    assert_eq!(changes.len(), 2, "one line per change: {stdout}");
    assert!(changes[0].contains("joined") && changes[0].contains("partitions [4, 5] moved"), "{stdout}");
    // The first worker held partitions 0, 2 or 1, 3, depending on which registered first.
    let held = ["partitions [0, 2] moved", "partitions [1, 3] moved"];
    assert!(changes[1].contains("left") && held.iter().any(|moved| changes[1].contains(moved)), "{stdout}");
    assert!(changes.iter().all(|line| line.ends_with(", 0 batches re-run")), "nothing replayed: {stdout}");
    assert!(!stdout.contains("recovered"), "nothing was lost: {stdout}");
    assert_exact(&job, &dir);
    assert_segments_cover_the_job(&dir, &job);
    // Let go by the driver, the leaving worker exits by itself, cleanly.
    let status = wait_with_limit(&mut processes.0[1], Duration::from_secs(10));
    assert!(status.success(), "the worker that left exits cleanly: {status:?}");
}
