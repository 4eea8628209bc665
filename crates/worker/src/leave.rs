//! Leaving on SIGTERM: the worker asks the driver to move its partitions off at the next
//! checkpoint and goes on working until the driver lets it go with `Shutdown`, so a planned
//! removal replays nothing. The wait is bounded: a driver that never answers does not keep
//! the process alive, and a second SIGTERM ends it at once.

use std::time::Duration;

use sleet_wire::{WorkerId, WorkerToDriver};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::status::Outgoing;

/// A checkpoint comes every second by default and a handoff waits for one group to finish:
/// a minute covers slow checkpoints with room to spare.
const RELEASE_WAIT: Duration = Duration::from_secs(60);
/// What a shell reports for a process ended by SIGTERM.
const TERMINATED_EXIT_CODE: i32 = 128 + 15;

/// Starts watching for SIGTERM; call inside the runtime once the worker is registered.
pub fn on_terminate(worker: WorkerId, outgoing: mpsc::Sender<Outgoing>) -> std::io::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        if terminate.recv().await.is_none() {
            return;
        }
        eprintln!("sleet worker {worker}: SIGTERM: asking the driver to move my partitions off, then exiting");
        let _ = outgoing.send(Outgoing::Message(WorkerToDriver::Leaving { worker })).await;
        tokio::select! {
            _ = terminate.recv() => eprintln!("sleet worker {worker}: a second SIGTERM: exiting now"),
            _ = tokio::time::sleep(RELEASE_WAIT) => {
                eprintln!("sleet worker {worker}: the driver did not let me go within {} s; exiting", RELEASE_WAIT.as_secs())
            }
        }
        std::process::exit(TERMINATED_EXIT_CODE);
    });
    Ok(())
}
