//! Recovery from a lost worker, end to end with real processes: a worker killed (SIGKILL) or
//! frozen (SIGSTOP) in the middle of a ysb job is detected, the job resumes on the survivors
//! from its latest checkpoint, and every (campaign, window) count still equals the ground
//! truth computed from the generator function, with no committed row twice. A frozen worker that wakes up finds itself
//! fenced and exits; a job whose last worker dies fails with a clear error.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{run_with_limit, sleet, test_dir, wait_with_limit, Reaper};
use sleet_connectors::ysb::ground_truth;
use sleet_plan::YsbSourceSpec;

const RATE: u64 = 30_000;
const SEED: u64 = 11;
const BATCH_INTERVAL_MS: i64 = 100;

struct Job {
    path: std::path::PathBuf,
    start_ms: i64,
    end_ms: i64,
    partitions: u32,
}

/// A ysb job file whose batch 0 starts a little ahead, at a time the test knows.
fn ysb_job(dir: &Path, scheduler: &str, partitions: u32, duration_s: u64) -> Job {
    let mut command = sleet();
    command.args(["job", "ysb", "--rate", &RATE.to_string(), "--seed", &SEED.to_string()]);
    command.args(["--batch-interval", &BATCH_INTERVAL_MS.to_string(), "--duration", &duration_s.to_string()]);
    command.args(["--scheduler", scheduler, "--partitions", &partitions.to_string()]);
    command.arg("--sink-dir").arg(dir.join("results"));
    command.arg("--dead-letter-dir").arg(dir.join("dead-letters"));
    let output = run_with_limit(command, Duration::from_secs(30));
    assert!(output.status.success(), "sleet job ysb failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut job: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a job file");
    let now_ms = sleet_wire::clock::now_ms();
    // Workers take a moment to register: batch 0 starts well after that.
    let start_ms = (now_ms + 3_000) / BATCH_INTERVAL_MS * BATCH_INTERVAL_MS;
    job["settings"]["start_ms"] = start_ms.into();
    let path = dir.join("job.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&job).expect("serializes")).expect("writing the job file");
    Job { path, start_ms, end_ms: start_ms + duration_s as i64 * 1_000, partitions }
}

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

/// Worker number `index` of the cluster at `address`, its log in `dir`.
fn worker(dir: &Path, address: &str, index: u32) -> Child {
    let log = std::fs::File::create(dir.join(format!("worker-{index}.log"))).expect("worker log");
    sleet()
        .args(["worker", "--driver", address, "--name", &format!("worker-{index}")])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting a worker")
}

fn submit(job: &Job, address: &str) -> Child {
    sleet()
        .arg("submit")
        .arg(&job.path)
        .args(["--driver", address])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("submit")
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child this test started and still owns (not yet reaped).
    let sent = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(sent, 0, "signal {signal} to pid {}", child.id());
}

/// Sleeps until `at_ms` on the wall clock.
fn sleep_until(at_ms: i64) {
    let wait = at_ms - sleet_wire::clock::now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

fn output_of(mut child: Child, limit: Duration) -> (bool, String, String) {
    let status = wait_with_limit(&mut child, limit);
    let mut stdout = String::new();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("piped"), &mut stdout).expect("stdout");
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr).expect("stderr");
    (status.success(), stdout, stderr)
}

/// Every (campaign, window) count must equal the ground truth; the value of a key is its row
/// of the highest batch, in whichever attempt's file it was written.
/// The manifest has a segment per attempt, in order, and the committed ones follow each other
/// without gap or overlap from batch 0 to the job's last batch. (A loaded machine may add a
/// recovery of its own, from a missed heartbeat: so the count of attempts is not fixed.)
fn assert_segments_cover_the_job(dir: &Path, job: &Job) {
    let manifest = sleet_connectors::manifest::read_manifest(&dir.join("results")).expect("read").expect("manifest");
    let attempts: Vec<u32> = manifest.segments.iter().map(|segment| segment.attempt).collect();
    assert!(attempts.len() >= 2 && attempts.windows(2).all(|pair| pair[0] < pair[1]), "{manifest:?}");
    let mut next = 0;
    for segment in manifest.segments.iter().filter(|segment| segment.last_batch.is_some()) {
        assert_eq!(segment.first_batch, next, "committed segments follow each other: {manifest:?}");
        next = segment.last_batch.expect("filtered") + 1;
    }
    let batches = ((job.end_ms - job.start_ms) / BATCH_INTERVAL_MS) as u64;
    assert_eq!(next, batches, "every batch is committed: {manifest:?}");
}

fn assert_exact(job: &Job, dir: &Path) {
    let spec = YsbSourceSpec { seed: SEED, rate_per_s: RATE, partitions: job.partitions, bad_fraction: 0.0 };
    let expected = ground_truth(&spec, job.start_ms, job.end_ms);
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("reading sink files");
    // Exactly once: a batch re-run after the failure adds no second copy of a committed row.
    let mut seen = std::collections::BTreeSet::new();
    let twice: Vec<_> = rows
        .iter()
        .filter(|row| !seen.insert((row.campaign_id.clone(), row.window_start, row.batch)))
        .take(5)
        .collect();
    assert!(twice.is_empty(), "committed rows appear twice: {twice:?}");
    let manifest = sleet_connectors::manifest::read_manifest(&dir.join("results"))
        .expect("reading the manifest")
        .expect("a finished job leaves a commit manifest");
    assert!(manifest.finished, "{manifest:?}");
    let actual = sleet_connectors::sink::final_counts(&rows);
    assert!(expected.len() >= 100, "the run spans at least one window per campaign");
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(key, count)| actual.get(*key).map(|(found, _)| *found as u64) != Some(**count))
        .take(5)
        .map(|(key, count)| format!("{key:?}: engine {:?}, truth {count}", actual.get(key)))
        .collect();
    assert!(wrong.is_empty(), "counts differ from the ground truth after recovery, e.g. {wrong:?}");
    let extra: Vec<_> = actual.keys().filter(|key| !expected.contains_key(*key)).take(5).collect();
    assert!(extra.is_empty(), "windows with no generated events appear in the output: {extra:?}");
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
    let checkpoints = dir.join("checkpoints");
    let left: Vec<_> = std::fs::read_dir(&checkpoints).map(|entries| entries.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "a finished job's checkpoints are removed: {left:?}");
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

/// The short chaos run CI does: four workers lost at random times (killed or frozen), each
/// replaced by one that joins; the counts equal the ground truth, no committed row appears
/// twice, and every signal led to a recovery.
#[test]
fn a_short_chaos_run_stays_exact_with_no_committed_row_twice() {
    let dir = test_dir("chaos_short");
    let result = dir.join("chaos.json");
    let mut command = sleet();
    command.args(["bench", "chaos", "--duration", "40s", "--kills", "4", "--rate", "30000"]);
    command.arg("--json").arg(&result).arg("--out").arg(dir.join("out")).arg("--force");
    let output = run_with_limit(command, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench chaos failed:\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&result).expect("the result file")).expect("result JSON");
    assert_eq!(json["ground_truth_matches"], true, "{json:#}");
    assert_eq!(json["duplicate_committed_rows"], 0, "{json:#}");
    let signals = json["signals"].as_array().expect("signals").len();
    assert_eq!(signals, 4, "{json:#}");
    assert_eq!(json["recoveries"].as_array().expect("recoveries").len(), signals, "every loss recovered: {json:#}");
}
