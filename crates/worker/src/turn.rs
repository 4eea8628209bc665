//! The order in which a stateful partition's batches touch its state.
//!
//! Several batches of one stateful partition may run at once (the local scheduler starts
//! them in batch order, a bounded number ahead), so that their fetches overlap. Their state
//! updates must not: batch `b` merges into the windows batch `b − 1` left, and writes its
//! output after it. Each such task waits for its turn before its compute monotask and passes
//! the turn on after its output is written.
//!
//! A pass wakes the one task whose turn comes next and no other. Up to `ordered_ahead` tasks
//! of a partition wait at once (16 by default; the partitions of Kafka and file sources and of stateful stages are ordered), so a turn
//! that woke every waiter to let each check whether it was its own cost a poll of each of
//! them per batch, and on the inline cpu of a one-core worker those polls were most of a
//! tiny task's cost.

use std::collections::BTreeMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

pub struct StateTurn {
    state: Mutex<TurnState>,
}

struct TurnState {
    /// The batch whose turn it is.
    next: u64,
    /// The tasks waiting for a later turn, by batch: woken one at a time, in batch order.
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
}

impl StateTurn {
    /// `first_batch`: the first batch this partition runs here (the local scheduler starts
    /// the smallest first).
    pub fn new(first_batch: u64) -> Self {
        StateTurn { state: Mutex::new(TurnState { next: first_batch, waiting: BTreeMap::new() }) }
    }

    pub async fn wait(&self, batch: u64) {
        let woken = {
            let mut state = self.state.lock().expect("turn lock");
            if state.next >= batch {
                assert_eq!(
                    state.next, batch,
                    "batch {batch} missed its turn: the partition is already at {}",
                    state.next
                );
                return;
            }
            let (wake, woken) = oneshot::channel();
            // A waiter whose task was dropped (its job forgotten) leaves a closed sender
            // behind; only a live one for the same batch would mean two tasks share a turn.
            if let Some(earlier) = state.waiting.insert(batch, wake) {
                assert!(earlier.is_closed(), "two tasks wait for batch {batch}'s turn");
            }
            woken
        };
        // The sender is dropped only by a pass to this batch or by the turn itself going away,
        // which happens only after every task holding it has ended.
        woken.await.expect("a waiter is woken by the pass before its batch");
        let next = self.state.lock().expect("turn lock").next;
        assert_eq!(next, batch, "batch {batch} was woken for the turn of batch {next}");
    }

    /// Waits for `batch`'s turn; the turn passes on when the guard drops, also when the task
    /// fails, so later batches are not left waiting on a dead one.
    pub async fn take(&self, batch: u64) -> TurnGuard<'_> {
        self.wait(batch).await;
        TurnGuard { turn: self, batch }
    }

    pub fn pass(&self, batch: u64) {
        let mut state = self.state.lock().expect("turn lock");
        assert_eq!(state.next, batch, "batch {batch} passed a turn that was not its own");
        state.next = batch + 1;
        if let Some(wake) = state.waiting.remove(&(batch + 1)) {
            // Its task may be gone (a forgotten job): nobody else needs the wake-up.
            let _ = wake.send(());
        }
    }
}

pub struct TurnGuard<'a> {
    turn: &'a StateTurn,
    batch: u64,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.turn.pass(self.batch);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn later_batches_wait_for_earlier_ones_whatever_order_they_arrive_in() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let order = runtime.block_on(async {
            let turn = Arc::new(StateTurn::new(7));
            let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel();
            let mut tasks = Vec::new();
            for batch in [9, 7, 8] {
                let (turn, done_tx) = (Arc::clone(&turn), done_tx.clone());
                tasks.push(tokio::spawn(async move {
                    turn.wait(batch).await;
                    done_tx.send(batch).expect("open");
                    tokio::task::yield_now().await;
                    turn.pass(batch);
                }));
            }
            for task in tasks {
                task.await.expect("no panic");
            }
            drop(done_tx);
            let mut order = Vec::new();
            while let Some(batch) = done.recv().await {
                order.push(batch);
            }
            order
        });
        assert_eq!(order, vec![7, 8, 9]);
    }

    #[test]
    fn a_pass_wakes_only_the_batch_whose_turn_it_is() {
        use std::future::Future;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let polls = runtime.block_on(async {
            let turn = Arc::new(StateTurn::new(0));
            let waiters = 16u64;
            let polls: Arc<Vec<AtomicUsize>> = Arc::new((0..=waiters).map(|_| AtomicUsize::new(0)).collect());
            let mut tasks = Vec::new();
            for batch in (1..=waiters).rev() {
                let (turn, polls) = (Arc::clone(&turn), Arc::clone(&polls));
                tasks.push(tokio::spawn(async move {
                    let mut wait = Box::pin(turn.wait(batch));
                    std::future::poll_fn(|cx| {
                        polls[batch as usize].fetch_add(1, Ordering::Relaxed);
                        wait.as_mut().poll(cx)
                    })
                    .await;
                    tokio::task::yield_now().await;
                    turn.pass(batch);
                }));
            }
            // Every waiter is parked before the first pass.
            tokio::task::yield_now().await;
            turn.pass(0);
            for task in tasks {
                task.await.expect("no panic");
            }
            polls.iter().skip(1).map(|count| count.load(Ordering::Relaxed)).collect::<Vec<_>>()
        });
        assert_eq!(polls, vec![2; 16], "each waiter is polled once to park and once when its turn comes");
    }
}
