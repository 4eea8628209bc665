//! Ctrl-C, seen by every part of the CLI: the signal is caught from the start of `main`, so
//! a Ctrl-C in any phase (starting processes, waiting for workers, running) reaches the code
//! that stops the job, and the process ends with the shell's code for an interrupt, 130.

use std::sync::OnceLock;

use tokio::sync::watch;

/// The exit code of a process stopped by SIGINT, as shells report it.
pub const EXIT_CODE: u8 = 130;

static INTERRUPTED: OnceLock<watch::Sender<bool>> = OnceLock::new();

/// An interrupt from the user: the run stopped because of Ctrl-C, not because it failed.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

fn sender() -> &'static watch::Sender<bool> {
    INTERRUPTED.get_or_init(|| watch::channel(false).0)
}

/// Starts listening for Ctrl-C; call once, inside the runtime, before any other work.
pub fn install() -> std::io::Result<()> {
    let sender = sender();
    // Registered now, not lazily in each waiter: a Ctrl-C during a blocking start-up phase
    // then lands on this handler instead of killing the process outright.
    let mut signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    tokio::spawn(async move {
        if signal.recv().await.is_some() {
            sender.send_replace(true);
        }
    });
    Ok(())
}

pub fn fired() -> bool {
    *sender().borrow()
}

/// Resolves once Ctrl-C has been pressed (at once if it already was).
pub async fn wait() {
    let mut receiver = sender().subscribe();
    let _ = receiver.wait_for(|fired| *fired).await;
}

/// `Err(Interrupted)` if Ctrl-C has been pressed: for the points where a command decides
/// whether to go on.
pub fn check() -> anyhow::Result<()> {
    if fired() {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// Resolves on Ctrl-C or when `stop` is notified: what a benchmark hands `run_job` when it
/// may end a run itself (a hopeless probe, a drained backlog).
pub async fn or_notified(stop: std::sync::Arc<tokio::sync::Notify>) {
    tokio::select! {
        _ = wait() => {}
        _ = stop.notified() => {}
    }
}
