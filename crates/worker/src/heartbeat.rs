//! Heartbeats to the driver, on a connection and an OS thread of their own.
//!
//! A one-core worker runs its cpu monotasks inline on the thread that also writes its
//! messages, so a beat sent there would wait behind whatever task is running, and a burst of
//! reports could hold it in the outbox: the driver would take a busy worker for a dead one.
//! A sleeping thread with its own socket is woken by the kernel on time however busy the core
//! is, and stops only when the process stops or is frozen, which is exactly what the driver
//! needs to tell.

use std::time::Duration;

use sleet_wire::{Connection, Role, WorkerId, WorkerToDriver};

pub fn start(driver_address: String, worker: WorkerId, interval: Duration) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("sleet-heartbeat-{worker}")).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => {
                eprintln!("sleet worker {worker}: cannot start the heartbeat thread's runtime: {error}");
                return;
            }
        };
        runtime.block_on(beat(driver_address, worker, interval));
    })?;
    Ok(())
}

const CONNECT_ATTEMPTS_MAX: u32 = 10;

/// Beats until the driver closes the connection (it declared this worker lost, or it exits).
async fn beat(driver_address: String, worker: WorkerId, interval: Duration) {
    // A failed first connection (a driver busy starting a job) is tried again each interval,
    // up to the attempts below; without beats the driver would declare this worker lost.
    let mut attempts = 0;
    let mut connection = loop {
        match Connection::connect(&driver_address, Role::Heartbeat).await {
            Ok(connection) => break connection,
            Err(error) if attempts < CONNECT_ATTEMPTS_MAX => {
                attempts += 1;
                eprintln!(
                    "sleet worker {worker}: no heartbeat connection to {driver_address} yet ({error}); trying again"
                );
                tokio::time::sleep(interval).await;
            }
            Err(error) => {
                eprintln!("sleet worker {worker}: no heartbeat connection to {driver_address}: {error}");
                return;
            }
        }
    };
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if connection.send_binary(&WorkerToDriver::Heartbeat { worker }).await.is_err() {
            return;
        }
    }
}
