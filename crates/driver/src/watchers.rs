//! Who hears about the running job: the client that submitted it and any client that
//! attached later (`ClientRequest::Attach`), such as a `sleet submit` that lost its
//! connection when the driver restarted, or the only listener of a job a restarted driver
//! resumed.
//!
//! The schedulers send to one channel; a forwarding task copies every message to each
//! watcher, so a client attaching in the middle of a job needs no change to them.

use std::sync::{Arc, Mutex};

use sleet_wire::DriverToClient;
use tokio::sync::mpsc;

/// Bound on messages queued towards the forwarder.
const QUEUE_LEN_MAX: usize = 4096;

#[derive(Clone, Default)]
pub struct Watchers {
    list: Arc<Mutex<Vec<mpsc::Sender<DriverToClient>>>>,
}

impl Watchers {
    /// Starts forwarding to `first` (if any) and whoever `add`s later; returns the sender
    /// the job's scheduler talks to. The forwarder ends when that sender is dropped.
    pub fn start(first: Option<mpsc::Sender<DriverToClient>>) -> (Watchers, mpsc::Sender<DriverToClient>) {
        let watchers = Watchers { list: Arc::new(Mutex::new(first.into_iter().collect())) };
        let (replies, mut replies_rx) = mpsc::channel::<DriverToClient>(QUEUE_LEN_MAX);
        let forwarding = watchers.clone();
        tokio::spawn(async move {
            while let Some(message) = replies_rx.recv().await {
                let list = forwarding.list.lock().expect("watchers lock").clone();
                for watcher in list {
                    // A watcher that went away only stops hearing; the job goes on.
                    let _ = watcher.send(message.clone()).await;
                }
            }
        });
        (watchers, replies)
    }

    pub fn add(&self, watcher: mpsc::Sender<DriverToClient>) {
        let mut list = self.list.lock().expect("watchers lock");
        list.retain(|existing| !existing.is_closed());
        list.push(watcher);
    }
}
