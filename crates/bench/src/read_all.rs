//! Ends a Kafka-fed job once it has read everything its producer wrote. How much that is is
//! known only when the producer has finished (a live one) or from the start (a preload).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Result;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::producer_process::{ProducerProcess, ProducerRun};

/// Progress counts records as the map tasks read them; the batches that read the last ones
/// complete (reduce, sink) a little later, which this many more reports cover.
const REPORTS_AFTER_ALL_READ: u32 = 3;

pub struct ReadAll {
    written: Arc<AtomicU64>,
    reports_since_all_read: u32,
    stop: Arc<Notify>,
}

impl ReadAll {
    /// `written` when already known (a preload), otherwise learnt from `follow`.
    pub fn new(written: Option<u64>) -> ReadAll {
        ReadAll {
            written: Arc::new(AtomicU64::new(written.unwrap_or(u64::MAX))),
            reports_since_all_read: 0,
            stop: Arc::new(Notify::new()),
        }
    }

    /// Waits for `producer` in a task of its own, and learns from what it produced
    /// (`records`) how much the job must read.
    pub fn follow<Produced: DeserializeOwned + Send + 'static>(
        &self,
        producer: ProducerProcess<Produced>,
        records: fn(&Produced) -> u64,
    ) -> JoinHandle<Result<ProducerRun<Produced>>> {
        let written = Arc::clone(&self.written);
        tokio::spawn(async move {
            let run = producer.finish().await;
            if let Ok(run) = &run {
                written.store(records(&run.produced), Ordering::SeqCst);
            }
            run
        })
    }

    /// Called with every progress report's records read so far.
    pub fn observe(&mut self, events_in: u64) {
        if events_in >= self.written.load(Ordering::SeqCst) {
            self.reports_since_all_read += 1;
            if self.reports_since_all_read == REPORTS_AFTER_ALL_READ {
                self.stop.notify_one();
            }
        }
    }

    /// Resolves once everything was read, or on Ctrl-C: the `stop` of `client::run_job`.
    pub fn stopped(&self) -> impl Future<Output = ()> + use<> {
        crate::interrupt::or_notified(Arc::clone(&self.stop))
    }
}
