//! Helpers shared by the integration tests: run the real `sleet` binary with a time bound.

#![allow(dead_code)]

pub mod kafka;
pub mod recovery;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn sleet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sleet"))
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
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(driver.stdout.take().expect("piped")), &mut line)
        .expect("the driver's address");
    let address = line.trim().strip_prefix("sleet driver listening on ").expect("an address line").to_string();
    (driver, address)
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
