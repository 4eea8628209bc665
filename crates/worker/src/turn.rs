//! The order in which a stateful partition's batches touch its state.
//!
//! Several batches of one stateful partition may run at once (the local scheduler starts
//! them in batch order, a bounded number ahead), so that their fetches overlap. Their state
//! updates must not: batch `b` merges into the windows batch `b − 1` left, and writes its
//! output after it. Each such task waits for its turn before its compute monotask and passes
//! the turn on after its output is written.

use tokio::sync::watch;

pub struct StateTurn {
    /// The batch whose turn it is.
    next: watch::Sender<u64>,
}

impl StateTurn {
    /// `first_batch`: the first batch this partition runs here (the local scheduler starts
    /// the smallest first).
    pub fn new(first_batch: u64) -> Self {
        StateTurn { next: watch::Sender::new(first_batch) }
    }

    pub async fn wait(&self, batch: u64) {
        let mut next = self.next.subscribe();
        let turn = *next.wait_for(|next| *next >= batch).await.expect("the sender lives in self");
        assert_eq!(turn, batch, "batch {batch} missed its turn: the partition is already at {turn}");
    }

    /// Waits for `batch`'s turn; the turn passes on when the guard drops, also when the task
    /// fails, so later batches are not left waiting on a dead one.
    pub async fn take(&self, batch: u64) -> TurnGuard<'_> {
        self.wait(batch).await;
        TurnGuard { turn: self, batch }
    }

    pub fn pass(&self, batch: u64) {
        self.next.send_modify(|next| {
            assert_eq!(*next, batch, "batch {batch} passed a turn that was not its own");
            *next = batch + 1;
        });
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
}
