//! What the recovery and restart tests share: a ysb job whose batch 0 starts at a time the
//! test knows, processes to start and signal, and the checks of exactly-once output against
//! the ground truth computed from the generator function.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use sleet_plan::YsbSourceSpec;
use sleet_workloads::ysb_check::ground_truth;

use super::{run_with_limit, sleet, wait_with_limit};

pub const RATE: u64 = 30_000;
pub const SEED: u64 = 11;
pub const BATCH_INTERVAL_MS: i64 = 100;

pub struct Job {
    pub path: PathBuf,
    pub start_ms: i64,
    pub end_ms: i64,
    pub partitions: u32,
}

/// A ysb job file whose batch 0 starts a little ahead, at a time the test knows.
pub fn ysb_job(dir: &Path, scheduler: &str, partitions: u32, duration_s: u64) -> Job {
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
    let path: PathBuf = dir.join("job.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&job).expect("serializes")).expect("writing the job file");
    Job { path, start_ms, end_ms: start_ms + duration_s as i64 * 1_000, partitions }
}

/// Worker number `index` of the cluster at `address`, its log in `dir`.
pub fn worker(dir: &Path, address: &str, index: u32) -> Child {
    worker_armed(dir, address, index, "")
}

/// As `worker`, with the failpoints of `failpoints` (`SLEET_FAILPOINTS`) armed.
pub fn worker_armed(dir: &Path, address: &str, index: u32, failpoints: &str) -> Child {
    let log = std::fs::File::create(dir.join(format!("worker-{index}.log"))).expect("worker log");
    sleet()
        .args(["worker", "--driver", address, "--name", &format!("worker-{index}")])
        .env("SLEET_FAILPOINTS", failpoints)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting a worker")
}

pub fn submit(job: &Job, address: &str) -> Child {
    submit_file(&job.path, address)
}

/// `sleet submit` of the job file at `path`, its output piped for `output_of`.
pub fn submit_file(path: &Path, address: &str) -> Child {
    sleet()
        .arg("submit")
        .arg(path)
        .args(["--driver", address])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("submit")
}

pub fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child this test started and still owns (not yet reaped).
    let sent = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(sent, 0, "signal {signal} to pid {}", child.id());
}

/// Sleeps until `at_ms` on the wall clock.
pub fn sleep_until(at_ms: i64) {
    let wait = at_ms - sleet_wire::clock::now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

pub fn output_of(mut child: Child, limit: Duration) -> (bool, String, String) {
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
pub fn assert_segments_cover_the_job(dir: &Path, job: &Job) {
    let manifest = sleet_durable::manifest::read_manifest(&dir.join("results")).expect("read").expect("manifest");
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

/// Exactly once: a batch re-run after a failure adds no second copy of a committed row (a
/// (campaign, window) row is written once per batch that updates it).
pub fn assert_no_row_twice(rows: &[sleet_connectors::sink::SinkRow]) {
    let mut seen = std::collections::BTreeSet::new();
    let twice: Vec<_> = rows
        .iter()
        .filter(|row| !seen.insert((row.campaign_id.clone(), row.window_start, row.batch)))
        .take(5)
        .collect();
    assert!(twice.is_empty(), "committed rows appear twice: {twice:?}");
}

pub fn assert_exact(job: &Job, dir: &Path) {
    let spec = YsbSourceSpec {
        seed: SEED,
        rate_per_s: RATE,
        partitions: job.partitions,
        bad_fraction: 0.0,
        pre_decoded: false,
    };
    let expected = ground_truth(&spec, job.start_ms, job.end_ms);
    let rows = sleet_connectors::sink::read_ysb_sink(&dir.join("results")).expect("reading sink files");
    assert_no_row_twice(&rows);
    let manifest = sleet_durable::manifest::read_manifest(&dir.join("results"))
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

/// A finished job leaves nothing in the checkpoint directory: no snapshot, no record, and
/// no driver state (which defaults to a folder in it). The driver's lock file stays: it
/// marks the directory as one driver's, not as a job's.
pub fn assert_checkpoints_removed(dir: &Path) {
    let checkpoints = dir.join("checkpoints");
    let lock = sleet_driver::dir_lock::lock_path(&checkpoints);
    let left: Vec<_> = std::fs::read_dir(&checkpoints)
        .map(|entries| entries.flatten().map(|entry| entry.path()).filter(|path| *path != lock).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "a finished job's checkpoints are removed: {left:?}");
}

/// The source tasks a job summary's recovery lines say were reused from survivors' outputs.
pub fn reused_source_tasks(summary: &str) -> u64 {
    let pieces: Vec<&str> = summary.split(" source tasks reused").collect();
    pieces[..pieces.len() - 1]
        .iter()
        .map(|before| before.rsplit('(').next().and_then(|count| count.trim().parse::<u64>().ok()).expect("a count"))
        .sum()
}
