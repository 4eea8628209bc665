//! The process harness of the integration tests, shared by the product's (crates/cli/tests)
//! and the benchmarks' (crates/bench/tests, which include this file): run the real `sleet`
//! and `sleet-bench` binaries with a time bound, signal them, read what they print.

#![allow(dead_code, reason = "two test crates include this harness, and each uses only part of it")]

pub mod kafka;
pub mod recovery;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `sleet` binary of this build: the product's own tests know it; the benchmarks' tests
/// find it beside `sleet-bench`, as `sleet-bench` does.
pub fn sleet_exe() -> PathBuf {
    match (option_env!("CARGO_BIN_EXE_sleet"), option_env!("CARGO_BIN_EXE_sleet-bench")) {
        (Some(sleet), _) => PathBuf::from(sleet),
        (None, Some(bench)) => Path::new(bench).with_file_name("sleet"),
        (None, None) => unreachable!("the harness serves the tests of sleet-cli and sleet-bench"),
    }
}

pub fn sleet() -> Command {
    Command::new(sleet_exe())
}

/// The `sleet-bench` binary; only the benchmarks' tests (crates/bench/tests) have it.
pub fn sleet_bench() -> Command {
    match option_env!("CARGO_BIN_EXE_sleet-bench") {
        Some(bench) => Command::new(bench),
        None => unreachable!("sleet-bench is built for crates/bench's tests only"),
    }
}

/// A fresh directory under the target dir for one test's files.
pub fn test_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the test directory");
    dir
}

/// Runs `command` to completion, killing it if it takes longer than `limit`.
pub fn run_with_limit(mut command: Command, limit: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting sleet");
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let status = wait_with_limit(&mut child, limit);
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

pub fn wait_with_limit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("polling the child") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not finish within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        bytes
    })
}

/// Kills the children it holds when dropped, so a failing test leaves no process behind.
pub struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `sleet driver --listen 127.0.0.1:0 EXTRA…` and returns it with the address it printed.
pub fn start_local_driver(extra: &[&str]) -> (Child, String) {
    start_driver_on("127.0.0.1:0", extra)
}

/// Starts `sleet driver --listen LISTEN EXTRA…` and returns it with the address it printed.
pub fn start_driver_on(listen: &str, extra: &[&str]) -> (Child, String) {
    start_driver_logged(listen, extra, Stdio::null())
}

/// As `start_driver_on`, its log going to `log`.
pub fn start_driver_logged(listen: &str, extra: &[&str], log: impl Into<Stdio>) -> (Child, String) {
    start_driver_armed(listen, extra, log, "")
}

/// As `start_driver_logged`, with the failpoints of `failpoints` (`SLEET_FAILPOINTS`) armed.
pub fn start_driver_armed(listen: &str, extra: &[&str], log: impl Into<Stdio>, failpoints: &str) -> (Child, String) {
    let mut command = sleet();
    command.args(["driver", "--listen", listen]).args(extra);
    // Tests run side by side, and one checkpoint directory holds one driver.
    if !extra.contains(&"--checkpoint-dir") {
        command.arg("--checkpoint-dir").arg(own_checkpoint_dir());
    }
    let mut driver = command
        .env("SLEET_FAILPOINTS", failpoints)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("starting the driver");
    let address =
        sleet_cli::cluster::read_driver_address(driver.stdout.take().expect("piped")).expect("the driver's address");
    (driver, address)
}

/// Starts `sleet driver --listen 127.0.0.1:0 --http 127.0.0.1:0 EXTRA…`: returns it with its
/// address and its console's (`host:port`).
pub fn start_serving_driver(extra: &[&str]) -> (Child, String, String) {
    let mut command = sleet();
    command.args(["driver", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]).args(extra);
    command.arg("--checkpoint-dir").arg(own_checkpoint_dir());
    let mut driver = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("starting the serving driver");
    let (address, http) = sleet_cli::cluster::read_driver_addresses(driver.stdout.take().expect("piped"), true)
        .expect("the driver's addresses");
    (driver, address, http.expect("the console's address"))
}

/// A checkpoint directory no other driver of this test run uses; under the target's
/// temporary directory, which `cargo clean` removes.
fn own_checkpoint_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let index = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("driver-checkpoints")
        .join(format!("{}-{index}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Starts `sleet worker --driver DRIVER EXTRA…`, its output discarded.
pub fn start_worker(driver: &str, extra: &[&str]) -> Child {
    sleet()
        .args(["worker", "--driver", driver])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting a worker")
}

/// The exit code of a process stopped by Ctrl-C (SIGINT).
pub const INTERRUPTED: i32 = 130;

/// Sends Ctrl-C (SIGINT) to `child`.
pub fn interrupt(child: &Child) {
    // SAFETY: kill(2) on a child this test started and still owns.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks whether the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// The processes whose parent is `parent`, read from /proc.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(processes) = procfs::process::all_processes() else { return Vec::new() };
    processes
        .filter_map(Result::ok)
        .filter(|process| process.stat().is_ok_and(|stat| stat.ppid as u32 == parent))
        .map(|process| process.pid as u32)
        .collect()
}

/// Reads `child`'s stderr lines until one contains `needle`, within `limit`; returns the lines.
pub fn stderr_until(child: &mut Child, needle: &str, limit: Duration) -> Vec<String> {
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Reads to the end even once nobody listens: a closed pipe would fail the child's
        // next write, which is not what the test is about.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + limit;
    let mut lines = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(needle);
                lines.push(line);
                if found {
                    return lines;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with `{needle}` within {limit:?}: {lines:?}");
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("reading the result")).expect("result JSON")
}

pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn dead_letters(dir: &Path) -> Vec<serde_json::Value> {
    sleet_connectors::dead_letter::read_dead_letters(dir).expect("reading the dead letters")
}

/// A ysb job file (`sleet job ysb --rate 20000 --duration DURATION`) writing its results and
/// dead letters under `dir`, written to `dir/job.json`.
pub fn ysb_job_file(dir: &Path, duration: &str) -> PathBuf {
    let mut command = sleet();
    command.args(["job", "ysb", "--rate", "20000", "--duration", duration]);
    command.arg("--sink-dir").arg(dir.join("results"));
    command.arg("--dead-letter-dir").arg(dir.join("dead-letters"));
    let output = run_with_limit(command, Duration::from_secs(30));
    assert!(output.status.success(), "sleet job ysb failed: {}", String::from_utf8_lossy(&output.stderr));
    let path = dir.join("job.json");
    std::fs::write(&path, &output.stdout).expect("writing the job file");
    path
}

/// Runs `command` with `--scheduler bsp FLAG VALUE` and checks it is refused (exit 1) with a
/// message naming the flag and bsp.
pub fn assert_bsp_refuses(mut command: Command, flag: &str, value: &str) {
    command.args(["--scheduler", "bsp", flag, value]);
    let output = run_with_limit(command, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{flag}: {stderr}");
    assert!(stderr.contains(flag) && stderr.contains("bsp"), "{stderr}");
}
