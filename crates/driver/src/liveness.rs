//! Which workers are alive: the time of each one's last heartbeat, and a fence that cuts a
//! worker off once it is declared lost.
//!
//! A closed connection says at once that a process died; a frozen one (SIGSTOP, a machine
//! that stopped answering) keeps its sockets open and only goes silent, which the timeout
//! catches. Correctness does not rest on the timeout being right: a worker declared lost is
//! fenced (its connections are closed and everything it sends later is dropped), and the job
//! goes on under a new attempt id that the lost worker's late messages cannot match.
//!
//! Heartbeats are read on their own connections by the server's tasks and land here directly,
//! not through the coordinator's queue, so a busy coordinator cannot make a live worker look
//! silent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap as HashMap;
use sleet_wire::WorkerId;
use tokio::sync::{mpsc, Notify};

use crate::event::DriverEvent;

#[derive(Debug, Clone, Copy)]
pub struct HeartbeatSettings {
    /// How often workers send one.
    pub interval: Duration,
    /// Silence longer than this marks a worker lost.
    pub timeout: Duration,
}

impl Default for HeartbeatSettings {
    fn default() -> Self {
        HeartbeatSettings { interval: Duration::from_millis(100), timeout: Duration::from_millis(500) }
    }
}

struct Watched {
    last_beat: Instant,
    fence: Arc<Notify>,
}

#[derive(Default)]
pub struct Liveness {
    workers: Mutex<HashMap<WorkerId, Watched>>,
}

impl Liveness {
    /// Starts watching a worker that just registered; the returned fence fires when it is
    /// declared lost.
    pub fn watch(&self, worker: WorkerId) -> Arc<Notify> {
        let fence = Arc::new(Notify::new());
        let watched = Watched { last_beat: Instant::now(), fence: Arc::clone(&fence) };
        self.workers.lock().expect("liveness lock").insert(worker, watched);
        fence
    }

    /// A heartbeat; false when the worker is not watched (never registered, or fenced), and
    /// its heartbeat connection should be closed.
    pub fn beat(&self, worker: WorkerId) -> bool {
        match self.workers.lock().expect("liveness lock").get_mut(&worker) {
            Some(watched) => {
                watched.last_beat = Instant::now();
                true
            }
            None => false,
        }
    }

    /// Stops watching `worker` and fires its fence; false when it was not watched.
    pub fn fence(&self, worker: WorkerId) -> bool {
        let Some(watched) = self.workers.lock().expect("liveness lock").remove(&worker) else { return false };
        // `notify_one` keeps a permit if its connection task is not waiting at this moment.
        watched.fence.notify_one();
        true
    }

    /// Every watched worker's silence so far, in ms, for whoever shows the cluster.
    pub fn heartbeat_ages_ms(&self) -> HashMap<WorkerId, i64> {
        let now = Instant::now();
        let workers = self.workers.lock().expect("liveness lock");
        workers
            .iter()
            .map(|(worker, watched)| (*worker, now.saturating_duration_since(watched.last_beat).as_millis() as i64))
            .collect()
    }

    /// When the first watched worker's silence will pass `timeout` unless it beats first;
    /// `None` when none is watched.
    fn first_deadline(&self, timeout: Duration) -> Option<Instant> {
        let workers = self.workers.lock().expect("liveness lock");
        workers.values().map(|watched| watched.last_beat + timeout).min()
    }

    /// Workers silent for longer than `timeout` at `now`, with how long.
    fn silent(&self, now: Instant, timeout: Duration) -> Vec<(WorkerId, Duration)> {
        let workers = self.workers.lock().expect("liveness lock");
        let mut silent: Vec<(WorkerId, Duration)> = workers
            .iter()
            .map(|(worker, watched)| (*worker, now.saturating_duration_since(watched.last_beat)))
            .filter(|(_, silence)| *silence > timeout)
            .collect();
        silent.sort_unstable();
        silent
    }
}

/// Wakes when the first worker's silence passes the timeout (or at the latest after
/// `IDLE_CHECK`, for workers that registered since), rather than on a fixed tick: a tick
/// would add up to its own length to every detection, and a frozen worker is seen at best
/// 0–1 heartbeat interval before the timeout's end, so the margin to a 0.5 s detection is
/// a few milliseconds.
pub async fn watch_heartbeats(liveness: Arc<Liveness>, settings: HeartbeatSettings, events: mpsc::Sender<DriverEvent>) {
    const IDLE_CHECK: Duration = Duration::from_millis(25);
    // Silence must exceed the timeout; the timer's millisecond granularity may wake it early.
    const PAST_DEADLINE: Duration = Duration::from_millis(1);
    // Long enough for the runtime to poll the heartbeat sockets once more.
    const STALL_GRACE: Duration = Duration::from_millis(10);
    loop {
        let latest = Instant::now() + IDLE_CHECK;
        let wake =
            liveness.first_deadline(settings.timeout).map_or(latest, |deadline| (deadline + PAST_DEADLINE).min(latest));
        tokio::time::sleep_until(tokio::time::Instant::from_std(wake)).await;
        // Woken far too late, the driver itself was stalled (a slow disk under its state
        // file, an overloaded host), and beats may wait unread in their sockets: judging now
        // would blame a worker for the driver's own pause. Let them be read first.
        if Instant::now().saturating_duration_since(wake) > settings.timeout / 5 {
            tokio::time::sleep(STALL_GRACE).await;
        }
        for (worker, silence) in liveness.silent(Instant::now(), settings.timeout) {
            if liveness.fence(worker) {
                let reason = format!(
                    "no heartbeat for {} ms (timeout {} ms): frozen, partitioned or overloaded",
                    silence.as_millis(),
                    settings.timeout.as_millis()
                );
                if events.send(DriverEvent::WorkerLost { worker, reason }).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_past_the_timeout_is_found_and_a_fenced_worker_beats_no_more() {
        let liveness = Liveness::default();
        assert_eq!(liveness.first_deadline(Duration::from_millis(500)), None, "nobody to wait for");
        let fence = liveness.watch(4);
        liveness.watch(5);
        let first = liveness.first_deadline(Duration::from_millis(500)).expect("two watched");
        assert!(
            first <= Instant::now() + Duration::from_millis(500) && first > Instant::now(),
            "worker 4's silence ends first"
        );
        let later = Instant::now() + Duration::from_millis(600);
        assert!(liveness.beat(5));
        let silent = liveness.silent(later, Duration::from_millis(500));
        assert_eq!(silent.iter().map(|(worker, _)| *worker).collect::<Vec<_>>(), vec![4, 5]);
        assert!(liveness.silent(Instant::now(), Duration::from_millis(500)).is_empty());
        assert!(liveness.fence(4));
        assert!(!liveness.fence(4), "fenced once");
        assert!(!liveness.beat(4), "a fenced worker's beats are refused");
        // The permit waits for the connection task even though nobody listened yet.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), fence.notified()).await.expect("the fence fired");
        });
    }
}
