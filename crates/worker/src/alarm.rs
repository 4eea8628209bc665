//! A wake-up at a given microsecond, for the moment a batch closes. Tokio's timer counts
//! whole milliseconds and rounds a deadline up to the next one, so a source task due at a
//! batch's close started up to a couple of milliseconds after it, which every batch's latency
//! carried, and two workers woke at different points of that range, so a batch on two ran as
//! long as the later one (measured, see docs/experiments/2026-11-27-comment-figures.md). A
//! thread of its own sleeps on a condition variable (a high-resolution kernel timer, with its
//! timer slack cut to 1 µs) and wakes the event loop through a `Notify`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long the alarm thread sleeps at most with no deadline set: it only has to notice the
/// alarm being dropped.
const IDLE_WAIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    rang: Notify,
}

#[derive(Default)]
struct State {
    deadline: Option<Instant>,
    closed: bool,
}

/// Owned by the one event loop that waits on it.
pub struct Alarm {
    shared: Arc<Shared>,
}

impl Alarm {
    pub fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let ringer = Arc::clone(&shared);
        std::thread::Builder::new().name("sleet-alarm".into()).spawn(move || ring_at_deadlines(&ringer))?;
        Ok(Alarm { shared })
    }

    /// Resolves at `deadline` (within tens of µs), or earlier when a wake-up is left over
    /// from a deadline set before: callers look at the clock again, as after any wake-up.
    pub async fn wait_until(&self, deadline: Instant) {
        if deadline <= Instant::now() {
            // Already due (a task ready at once): the thread would only be woken to wake us
            // back, a futex and an eventfd round trip. Yielding lets the runtime's other tasks
            // run first, as any wait would.
            tokio::task::yield_now().await;
            return;
        }
        let sooner = {
            let mut state = self.shared.state.lock().expect("alarm lock");
            let sooner = state.deadline.is_none_or(|current| deadline < current);
            state.deadline = Some(deadline);
            sooner
        };
        // The loop sets the same deadline again after each event it handles; only one
        // sooner than what the thread sleeps towards needs it woken (a later one it finds
        // when it wakes, and sleeps on).
        if sooner {
            self.shared.changed.notify_one();
        }
        self.shared.rang.notified().await;
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.shared.state.lock().expect("alarm lock").closed = true;
        self.shared.changed.notify_one();
    }
}

fn ring_at_deadlines(shared: &Shared) {
    cut_timer_slack();
    let mut state = shared.state.lock().expect("alarm lock");
    loop {
        if state.closed {
            return;
        }
        let now = Instant::now();
        match state.deadline {
            Some(deadline) if deadline <= now => {
                state.deadline = None;
                // Stores a permit when nobody waits yet: the waiter set the deadline, so it
                // is about to wait, and must not miss this.
                shared.rang.notify_one();
            }
            Some(deadline) => state = shared.changed.wait_timeout(state, deadline - now).expect("alarm lock").0,
            None => state = shared.changed.wait_timeout(state, IDLE_WAIT).expect("alarm lock").0,
        }
    }
}

/// The kernel may delay a sleeping thread's timer by its slack (50 µs by default) to batch
/// wake-ups; this thread exists to wake on time.
fn cut_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_at_its_deadline_and_again_for_the_next() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let alarm = Alarm::start().expect("alarm thread");
            for wait_ms in [5, 1, 20] {
                let deadline = Instant::now() + Duration::from_millis(wait_ms);
                alarm.wait_until(deadline).await;
                assert!(Instant::now() >= deadline, "woke before a {wait_ms} ms deadline");
            }
        });
    }

    #[test]
    fn a_deadline_already_due_resolves_without_asking_the_thread() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let alarm = Alarm::start().expect("alarm thread");
            alarm.wait_until(Instant::now()).await;
            assert_eq!(
                alarm.shared.state.lock().expect("alarm lock").deadline,
                None,
                "the thread was given a deadline"
            );
        });
    }
}
