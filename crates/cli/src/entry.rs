//! The frame of a sleet process (`sleet`, `sleet-bench`): the async runtime, Ctrl-C, and the
//! exit codes a shell sees.

use std::future::Future;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::interrupt;

/// After Ctrl-C, how long a command gets to stop its job and print what ran before the
/// process exits anyway.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

static PROGRAM: OnceLock<&'static str> = OnceLock::new();

/// The running binary's name as its `Frame` gave it, for messages printed away from `run`
/// (`sleet` before `run` started, as in unit tests).
pub fn program() -> &'static str {
    PROGRAM.get().copied().unwrap_or("sleet")
}

/// How a command runs.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// `sleet`, `sleet-bench`: the prefix of the process's own messages.
    pub program: &'static str,
    /// One async thread (a worker: its compute runs on its own monotask pools, and its async
    /// side only moves messages) instead of two.
    pub current_thread: bool,
    /// How long the command gets after Ctrl-C (zero: it ends at once).
    pub grace: Duration,
}

/// Runs `command` on a fresh runtime until it ends or Ctrl-C, and turns its outcome into the
/// process's exit code: 130 after an interrupt, 1 on an error (printed), else the command's.
pub fn run<F>(frame: Frame, command: impl FnOnce() -> F) -> ExitCode
where
    F: Future<Output = Result<ExitCode>>,
{
    // Before the runtime's threads start and the heap grows.
    crate::memory::small_pages_only();
    let Frame { program, current_thread, grace } = frame;
    let _ = PROGRAM.set(program);
    let mut builder = if current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            say(&format!("{program}: cannot start the async runtime: {error}"));
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        interrupt::install().context("listening for Ctrl-C")?;
        let command = command();
        tokio::pin!(command);
        tokio::select! {
            outcome = &mut command => outcome,
            _ = interrupt::wait() => match tokio::time::timeout(grace, &mut command).await {
                Ok(outcome) => outcome,
                Err(_) => Err(interrupt::Interrupted.into()),
            },
        }
    });
    // Dropping the runtime here also drops any local cluster, which kills its processes.
    drop(runtime);
    match outcome {
        _ if interrupt::fired() => {
            say(&format!("{program}: interrupted"));
            ExitCode::from(interrupt::EXIT_CODE)
        }
        Ok(code) => code,
        Err(error) => {
            say(&format!("{program}: error: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Writes a line to stderr, or nothing if no one reads it any more (`sleet submit … 2>&1 |
/// head`): `eprintln!` would panic there and turn a clean stop or a finished job into exit
/// code 101.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Parses the command line, keeping clap's usage errors an ordinary failure: exit code 2 is
/// sleet's for results that do not match their ground truth.
pub fn parse<P: clap::Parser>() -> Result<P, ExitCode> {
    P::try_parse().map_err(|error| {
        let _ = error.print();
        if error.use_stderr() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    })
}
