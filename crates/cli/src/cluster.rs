//! A local cluster for `demo`, the benchmarks and tests: a driver and workers as child
//! processes of the `sleet` binary (`sleet_exe`) on 127.0.0.1, and, as a component a job's
//! input comes through, a `sleet ingest` server (`start_ingest`). Every child is stopped by
//! the PID this process started.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::worker_limits::WorkerLimits;

pub struct LocalCluster {
    pub driver_address: String,
    /// Where the driver serves its dashboard, API and metrics, when asked to.
    pub http_address: Option<String>,
    driver: Child,
    workers: Vec<Child>,
    pub log_dir: PathBuf,
    /// The binary the cluster runs, resolved once: a rebuild that replaces the file while
    /// the cluster runs must not stop it from starting one more worker.
    exe: PathBuf,
    /// Every worker's resource limits, replacements included.
    limits: WorkerLimits,
    /// Workers the driver waits for before a job starts (and a restarted one before it
    /// resumes its job).
    expect_workers: u32,
    /// Whether the workers started with the cluster each run on cpus of their own.
    pinned: bool,
    /// The ingest server, once started, and the thread copying its stdout to `ingest.out`.
    ingest: Option<(Child, JoinHandle<()>)>,
    /// Starts every child of the cluster (declared last: dropped after they are killed).
    spawner: Spawner,
}

/// A `sleet ingest` server as a cluster component (`docs/ingest.md`, "In a local cluster").
#[derive(Debug, Clone)]
pub struct IngestSpec {
    /// `host:port`; port 0 picks a free one, which `start_ingest` returns.
    pub listen: String,
    pub brokers: String,
    pub topic: String,
    pub format: sleet_ingest::args::FormatArg,
    /// A plan schema (`{"fields": [...]}`) for JSON, an `.avsc` for Avro.
    pub schema: PathBuf,
    /// The field whose string keys each record.
    pub key: String,
    /// Further `sleet ingest` flags (`--partitions 4`, limits, `--token-file`).
    pub extra_args: Vec<String>,
}

/// Where a local cluster's workers run.
#[derive(Debug, Clone, Copy, Default, PartialEq, clap::Args)]
pub struct Placement {
    /// Leave the local cluster's workers free to run on any core. By default, when the
    /// workers' cores fit the host's, each worker runs on cores of its own (`sleet worker
    /// --cpus`): workers that all start a batch at one instant otherwise share a core while
    /// another idles, now and then.
    #[arg(long)]
    pub unpinned: bool,
}

impl Placement {
    /// Each worker's cpus, in start order: consecutive slices of the cpus this process may
    /// use, `cores_per_worker` each. `None` for all when unpinned, or when the slices do not
    /// fit (more cores asked for than the host has: the kernel then spreads the load better
    /// than fixed slices that overlap).
    fn worker_cpus(self, workers: u32, cores_per_worker: u32) -> Vec<Option<Vec<usize>>> {
        let cores = cores_per_worker.max(1) as usize;
        let allowed = sleet_worker::cpu_pin::allowed_cpus().unwrap_or_default();
        let fits = workers as usize * cores <= allowed.len();
        (0..workers as usize)
            .map(|index| (!self.unpinned && fits).then(|| allowed[index * cores..(index + 1) * cores].to_vec()))
            .collect()
    }
}

/// How long children get to exit after a shutdown request before they are killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

impl LocalCluster {
    pub fn start(workers: u32, cores_per_worker: u32, log_dir: &Path) -> Result<LocalCluster> {
        LocalCluster::start_limited(workers, cores_per_worker, log_dir, &WorkerLimits::default(), Placement::default())
    }

    /// A cluster whose workers run under `limits` (experiments' bandwidth limits), placed
    /// on the host's cpus as `placement` says.
    pub fn start_limited(
        workers: u32,
        cores_per_worker: u32,
        log_dir: &Path,
        limits: &WorkerLimits,
        placement: Placement,
    ) -> Result<LocalCluster> {
        LocalCluster::start_with(workers, cores_per_worker, log_dir, limits, placement, None)
    }

    /// A cluster whose driver serves its dashboard, API and metrics on `http` (a loopback
    /// address; port 0 picks a free one, then in `http_address`).
    pub fn start_serving(workers: u32, cores_per_worker: u32, log_dir: &Path, http: &str) -> Result<LocalCluster> {
        let (limits, placement) = (WorkerLimits::default(), Placement::default());
        LocalCluster::start_with(workers, cores_per_worker, log_dir, &limits, placement, Some(http))
    }

    fn start_with(
        workers: u32,
        cores_per_worker: u32,
        log_dir: &Path,
        limits: &WorkerLimits,
        placement: Placement,
        http: Option<&str>,
    ) -> Result<LocalCluster> {
        std::fs::create_dir_all(log_dir).with_context(|| format!("creating log directory {}", log_dir.display()))?;
        // A new cluster's driver has no job to resume: checkpoints an earlier cluster left
        // here (a run stopped with Ctrl-C) would have it resume that one. `restart_driver`
        // keeps them, as a restarted driver must.
        let checkpoints = log_dir.join("checkpoints");
        if checkpoints.exists() {
            std::fs::remove_dir_all(&checkpoints).with_context(|| format!("clearing {}", checkpoints.display()))?;
        }
        let exe = sleet_exe()?;
        // A fresh log per cluster; a restarted driver appends to it.
        log_file(log_dir, "driver.log")?;
        let spawner = Spawner::start()?;
        let (driver, driver_address, http_address) =
            start_driver(&spawner, &exe, "127.0.0.1:0", http, workers, log_dir)?;
        let mut cluster = LocalCluster {
            driver_address,
            http_address,
            driver,
            workers: Vec::new(),
            log_dir: log_dir.to_path_buf(),
            exe,
            limits: limits.clone(),
            expect_workers: workers,
            pinned: false,
            ingest: None,
            spawner,
        };
        let worker_cpus = placement.worker_cpus(workers, cores_per_worker);
        cluster.pinned = worker_cpus.iter().all(Option::is_some) && !worker_cpus.is_empty();
        for (index, cpus) in (1..=workers).zip(worker_cpus) {
            cluster.start_worker(&format!("worker-{index}"), cores_per_worker, cpus.as_deref())?;
        }
        Ok(cluster)
    }

    /// Whether the workers started with the cluster each run on cpus of their own.
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Starts one more worker (it joins a running job at its next checkpoint), free to run
    /// on any cpu; returns its process id.
    pub fn add_worker(&mut self, name: &str, cores_per_worker: u32) -> Result<u32> {
        self.start_worker(name, cores_per_worker, None)
    }

    fn start_worker(&mut self, name: &str, cores_per_worker: u32, cpus: Option<&[usize]>) -> Result<u32> {
        let log = log_file(&self.log_dir, &format!("{name}.log"))?;
        let cpu_list = cpus.map(|cpus| cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(","));
        let mut command = child_command(&self.exe);
        command
            .args(["worker", "--driver", &self.driver_address, "--cores", &cores_per_worker.to_string()])
            .args(["--name", name])
            .args(cpu_list.iter().flat_map(|list| ["--cpus", list.as_str()]))
            .args(self.limits.worker_args())
            .stdout(Stdio::null())
            .stderr(log);
        let child = self.spawner.spawn(command).with_context(|| format!("starting {name}"))?;
        let pid = child.id();
        self.workers.push(child);
        Ok(pid)
    }

    /// Kills the driver (SIGKILL) and starts a new one at the same address with the same
    /// checkpoint and state directories: it resumes the running job once the workers have
    /// registered again. Returns the new driver's process id.
    pub fn restart_driver(&mut self) -> Result<u32> {
        if let Ok(None) = self.driver.try_wait() {
            signal_process(self.driver.id(), libc::SIGKILL, "the driver")?;
        }
        self.driver.wait().context("waiting for the killed driver")?;
        let http = self.http_address.clone();
        let (driver, address, http_address) = start_driver(
            &self.spawner,
            &self.exe,
            &self.driver_address,
            http.as_deref(),
            self.expect_workers,
            &self.log_dir,
        )?;
        self.http_address = http_address;
        anyhow::ensure!(
            address == self.driver_address,
            "the restarted driver listens on {address}, not {}",
            self.driver_address
        );
        self.driver = driver;
        Ok(self.driver.id())
    }

    /// Workers still running, by process id; exited ones are reaped on the way.
    pub fn live_worker_pids(&mut self) -> Vec<u32> {
        self.workers
            .iter_mut()
            .filter_map(|worker| matches!(worker.try_wait(), Ok(None)).then(|| worker.id()))
            .collect()
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The driver's and every worker's process id.
    pub fn pids(&self) -> Vec<u32> {
        std::iter::once(self.driver.id()).chain(self.workers.iter().map(Child::id)).collect()
    }

    pub fn worker_pids(&self) -> Vec<u32> {
        self.workers.iter().map(Child::id).collect()
    }

    /// Starts the cluster's ingest server and returns the address it serves on, once it
    /// listens. Its stderr goes to `ingest.log`, its stdout (the address, then its final
    /// figures as JSON) to `ingest.out`, in the log directory. One server at a time: start
    /// another only after the first has exited (a benchmark SIGKILLs it by `ingest_pid`).
    pub fn start_ingest(&mut self, spec: &IngestSpec) -> Result<String> {
        if let Some((running, _)) = &mut self.ingest {
            anyhow::ensure!(
                !matches!(running.try_wait(), Ok(None)),
                "the cluster's ingest server (pid {}) still runs",
                running.id()
            );
        }
        let format = match spec.format {
            sleet_ingest::args::FormatArg::Json => "json",
            sleet_ingest::args::FormatArg::Avro => "avro",
        };
        let log = log_file(&self.log_dir, "ingest.log")?;
        let mut command = child_command(&self.exe);
        command
            .args(["ingest", "--listen", &spec.listen, "--brokers", &spec.brokers, "--topic", &spec.topic])
            .args(["--format", format, "--key", &spec.key])
            .arg("--schema")
            .arg(&spec.schema)
            .args(&spec.extra_args)
            .stdout(Stdio::piped())
            .stderr(log);
        let mut child = self.spawner.spawn(command).context("starting the ingest server")?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("ingest stdout is not piped"))?;
        let out = log_file(&self.log_dir, "ingest.out")?;
        let first_line = read_first_line(stdout, Box::new(out), Duration::from_secs(15), "the ingest server");
        match first_line {
            Ok((address, copier)) => {
                self.ingest = Some((child, copier));
                Ok(address)
            }
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(error.context(format!("see {}", self.log_dir.join("ingest.log").display())))
            }
        }
    }

    /// The ingest server's process id while it has not been reaped.
    pub fn ingest_pid(&self) -> Option<u32> {
        self.ingest.as_ref().map(|(child, _)| child.id())
    }

    /// Whether the ingest server's process still runs (reaping it if it has exited).
    pub fn ingest_running(&mut self) -> bool {
        matches!(self.ingest.as_mut().map(|(child, _)| child.try_wait()), Some(Ok(None)))
    }

    /// Sends `signal` to the ingest server (a benchmark's SIGKILL).
    pub fn signal_ingest(&self, signal: i32) -> Result<()> {
        let pid = self.ingest_pid().context("the cluster runs no ingest server")?;
        signal_process(pid, signal, "the ingest server")
    }

    /// Stops the ingest server as Ctrl-C would (SIGTERM: it finishes what is in flight),
    /// killing it if it has not exited within its shutdown timeout plus `EXIT_GRACE`; returns
    /// its exit status, or `None` if none runs. When it returns, `ingest.out` holds all the
    /// server printed (its final figures last).
    pub fn stop_ingest(&mut self, shutdown_timeout: Duration) -> Result<Option<std::process::ExitStatus>> {
        let Some((mut child, copier)) = self.ingest.take() else { return Ok(None) };
        if let Ok(None) = child.try_wait() {
            signal_process(child.id(), libc::SIGTERM, "the ingest server")?;
        }
        let deadline = Instant::now() + shutdown_timeout + EXIT_GRACE;
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for the ingest server")? {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                break child.wait().context("waiting for the killed ingest server")?;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Its stdout has closed with it, so the copy is at its end.
        let _ = copier.join();
        Ok(Some(status))
    }

    /// Asks the driver to shut everything down, then makes sure every child has exited.
    pub async fn shutdown(mut self) {
        let _ = self.stop_ingest(Duration::ZERO);
        if let Ok(mut connection) =
            sleet_wire::Connection::connect(&self.driver_address, sleet_wire::Role::Client).await
        {
            let _ = connection.send(&sleet_wire::ClientRequest::Shutdown).await;
        }
        let deadline = Instant::now() + EXIT_GRACE;
        while Instant::now() < deadline && !self.all_exited() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill_remaining();
    }

    fn all_exited(&mut self) -> bool {
        let driver_done = matches!(self.driver.try_wait(), Ok(Some(_)));
        driver_done && self.workers.iter_mut().all(|worker| matches!(worker.try_wait(), Ok(Some(_))))
    }

    fn kill_remaining(&mut self) {
        let ingest = self.ingest.iter_mut().map(|(child, _)| child);
        for child in self.workers.iter_mut().chain(std::iter::once(&mut self.driver)).chain(ingest) {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.kill_remaining();
    }
}

/// Sends `signal` to the worker process `pid`, which must be a child this process has not
/// reaped yet, so that the pid cannot name a process that reused it.
pub fn signal_worker(pid: u32, signal: i32) -> Result<()> {
    signal_process(pid, signal, "worker process")
}

fn signal_process(pid: u32, signal: i32, what: &str) -> Result<()> {
    let pid = libc::pid_t::try_from(pid).with_context(|| format!("the process id of {what} does not fit a pid_t"))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("sending signal {signal} to {what} {pid}"));
    }
    Ok(())
}

/// Starts a driver on `listen` (serving its console on `http`, if given) whose checkpoints
/// (and state directory, under them) live in `log_dir`; its log is appended to
/// `log_dir/driver.log`, so a restarted driver's follows its predecessor's. Returns it with
/// the addresses it printed.
fn start_driver(
    spawner: &Spawner,
    exe: &Path,
    listen: &str,
    http: Option<&str>,
    expect_workers: u32,
    log_dir: &Path,
) -> Result<(Child, String, Option<String>)> {
    let log_path = log_dir.join("driver.log");
    let driver_log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = child_command(exe);
    command
        .args(["driver", "--listen", listen, "--expect-workers", &expect_workers.to_string()])
        .arg("--checkpoint-dir")
        .arg(log_dir.join("checkpoints"))
        .stdout(Stdio::piped())
        .stderr(driver_log);
    if let Some(http) = http {
        command.args(["--http", http]);
    }
    let mut driver = spawner.spawn(command).context("starting the driver process")?;
    let stdout = driver.stdout.take().ok_or_else(|| anyhow!("driver stdout is not piped"))?;
    match read_driver_addresses(stdout, http.is_some()) {
        Ok((address, http_address)) => Ok((driver, address, http_address)),
        Err(error) => {
            let _ = driver.kill();
            let _ = driver.wait();
            Err(error.context(format!("see {}", log_path.display())))
        }
    }
}

/// Sleeps until `at_ms` (ms since the epoch) on the wall clock.
pub async fn sleep_until_ms(at_ms: i64) {
    let wait_ms = (at_ms - sleet_wire::clock::now_ms()).max(0) as u64;
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
}

/// The `sleet` binary: this process's own, or the one beside it (`sleet-bench` runs its
/// clusters on the `sleet` of its build, so a benchmark measures the binary a user runs).
pub fn sleet_exe() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating this process's binary")?;
    if exe.file_name().is_some_and(|name| name == "sleet") {
        return Ok(exe);
    }
    let beside = exe.with_file_name("sleet");
    anyhow::ensure!(
        beside.is_file(),
        "{} runs the `sleet` binary beside it, and there is none at {}: build it too (`cargo build --release -p \
         sleet-cli`, or `--workspace`)",
        exe.display(),
        beside.display()
    );
    Ok(beside)
}

pub fn child_command(exe: &Path) -> Command {
    let mut command = Command::new(exe);
    // Own process group: a Ctrl-C in the terminal reaches only this process, which then stops
    // the children in order instead of all of them dying at once.
    command.process_group(0).stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the child when its
    // parent dies first, so no child outlives a crashed parent. The kernel's "parent" is the
    // thread that started the child: a `LocalCluster` starts its children from a thread of
    // its own (`Spawner`); other callers start them from threads that outlive them, never
    // from tokio's blocking pool or inside `block_in_place`, whose threads exit when idle.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    command
}

fn log_file(dir: &Path, name: &str) -> Result<File> {
    let path = dir.join(name);
    File::create(&path).with_context(|| format!("creating {}", path.display()))
}

/// The first line `what` prints on stdout (its address), within `limit`, and the thread that
/// copies the rest of its stdout to `rest` as it comes, so the child never blocks on (or
/// dies of) a full or closed pipe; the thread ends when the child's stdout closes.
fn read_first_line(
    stdout: std::process::ChildStdout,
    rest: Box<dyn Write + Send>,
    limit: Duration,
    what: &str,
) -> Result<(String, JoinHandle<()>)> {
    let (mut lines, copier) = read_first_lines(stdout, rest, limit, what, 1)?;
    Ok((lines.remove(0), copier))
}

/// `read_first_line` for the first `count` lines (addresses), each within `limit`.
fn read_first_lines(
    stdout: std::process::ChildStdout,
    mut rest: Box<dyn Write + Send>,
    limit: Duration,
    what: &str,
    count: usize,
) -> Result<(Vec<String>, JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let copier = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..count {
            let mut line = String::new();
            let read = reader.read_line(&mut line).map(|_| line);
            if tx.send(read).is_err() {
                return;
            }
        }
        let _ = std::io::copy(&mut reader, &mut rest);
    });
    let mut lines = Vec::with_capacity(count);
    for _ in 0..count {
        let line = rx
            .recv_timeout(limit)
            .map_err(|_| anyhow!("{what} did not print its address within {limit:?}"))?
            .with_context(|| format!("reading the address of {what}"))?;
        let address = line.trim();
        anyhow::ensure!(!address.is_empty(), "{what} exited before printing its address");
        lines.push(address.to_string());
    }
    Ok((lines, copier))
}

/// The address a driver prints on its first line of stdout, within 15 s.
pub fn read_driver_address(stdout: std::process::ChildStdout) -> Result<String> {
    Ok(read_driver_addresses(stdout, false)?.0)
}

/// The driver's address and, when it `serves` its console, the console's (its second line).
pub fn read_driver_addresses(stdout: std::process::ChildStdout, serves: bool) -> Result<(String, Option<String>)> {
    let count = if serves { 2 } else { 1 };
    let (lines, _copier) =
        read_first_lines(stdout, Box::new(std::io::sink()), Duration::from_secs(15), "the driver", count)?;
    let address = match lines[0].strip_prefix("sleet driver listening on ") {
        Some(address) => address.to_string(),
        None => bail!("the driver printed {:?} instead of its address", lines[0]),
    };
    let http = match lines.get(1) {
        None => None,
        Some(line) => match line.strip_prefix(crate::console::SERVING_PREFIX) {
            Some(url) => Some(url.trim_end_matches('/').to_string()),
            None => bail!("the driver printed {line:?} instead of its console's address"),
        },
    };
    Ok((address, http))
}

/// Starts a cluster's children from one thread that lives as long as the cluster. A child
/// started by `child_command` dies with the *thread* that started it (PR_SET_PDEATHSIG), so
/// one started from a short-lived thread (tokio's blocking pool, `block_in_place`) would die
/// seconds later; through this thread, a cluster's owner may start a worker, a driver or an
/// ingest server from any thread.
struct Spawner {
    requests: std::sync::mpsc::Sender<(Command, std::sync::mpsc::Sender<std::io::Result<Child>>)>,
}

impl Spawner {
    fn start() -> Result<Spawner> {
        let (requests, incoming) = std::sync::mpsc::channel::<(Command, std::sync::mpsc::Sender<_>)>();
        // It ends when the cluster drops its sender, after killing every child.
        std::thread::Builder::new()
            .name("cluster-spawner".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .context("starting the cluster's spawner thread")?;
        Ok(Spawner { requests })
    }

    fn spawn(&self, command: Command) -> std::io::Result<Child> {
        let (reply, answer) = std::sync::mpsc::channel();
        let gone = || std::io::Error::other("the cluster's spawner thread has ended");
        self.requests.send((command, reply)).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}
