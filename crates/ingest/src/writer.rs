//! The Kafka writer: one thread that owns sleet's blocking idempotent producer. Requests hand
//! it `Submission`s through a bounded channel; it gathers those that arrive within the linger
//! (or until a round is full) into one batch per partition, writes them, and only then
//! answers every submission of the round.
//!
//! ```text
//!  handlers ──Submission──▶ sync_channel ──▶ gather (linger) ──▶ BatchBuilder per partition
//!     ▲                                                              │ Producer::send
//!     └────────── oneshot reply: Ok once Kafka acknowledged ◀────────┘
//! ```
//!
//! Invariant: a submission is answered `Ok` only after every partition batch holding one of
//! its records was acknowledged by Kafka. Any failure refuses the whole round, and the
//! producer is dropped: a new one (new producer id) must not reuse the failed batch's
//! sequence numbers, or the broker could take a different batch for a duplicate of one it
//! already has and the server would acknowledge records it never wrote.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sleet_exec::RawRecords;
use sleet_kafka::admin::ensure_topic_with;
use sleet_kafka::batch_builder::BatchBuilder;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::partitioner::murmur2_partition;
use sleet_kafka::producer::Producer;
use sleet_kafka::KafkaError;
use tokio::sync::oneshot;

use crate::admission::Admission;
use crate::refusal::Refusal;
use crate::stats::Stats;

/// One request's (or WebSocket message's) records on their way to Kafka.
pub struct Submission {
    /// What is written, byte for byte, as each Kafka record's value.
    pub values: RawRecords,
    /// Each record's key, the key field's string.
    pub keys: RawRecords,
    pub received: Instant,
    /// Held until the writer is done with the records.
    pub admission: Admission,
    /// Dropped by a request that stopped waiting (timed out, client gone): its records are
    /// then not written at all if they have not been yet.
    pub reply: oneshot::Sender<Result<(), Refusal>>,
}

impl Submission {
    fn bytes(&self) -> usize {
        self.values.data.len() + self.keys.data.len()
    }
}

#[derive(Debug, Clone)]
pub struct WriterSettings {
    pub brokers: String,
    pub topic: String,
    /// Create the topic with this many partitions when it does not exist.
    pub create_partitions: Option<u32>,
    /// How long a round waits for more submissions after its first.
    pub linger: Duration,
    /// A round stops gathering at this many bytes; one partition's batch is sent when it
    /// reaches this size (below the broker's default 1 MiB message limit once compressed).
    pub batch_bytes_max: usize,
    /// After failing to reach Kafka, refuse at once for this long instead of trying again
    /// for every round.
    pub reconnect_backoff: Duration,
}

/// Starts the writer thread. It ends when every sender is dropped and the queue is empty.
pub fn spawn_writer(
    settings: WriterSettings,
    stats: Arc<Stats>,
    queue_capacity: usize,
) -> std::io::Result<(SyncSender<Submission>, std::thread::JoinHandle<()>)> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(queue_capacity);
    let thread = std::thread::Builder::new().name("kafka-writer".to_string()).spawn(move || {
        Writer { settings, stats, producer: None, failed_at: None, builders: Vec::new() }.run(receiver)
    })?;
    Ok((sender, thread))
}

struct Writer {
    settings: WriterSettings,
    stats: Arc<Stats>,
    producer: Option<Producer>,
    /// When the last attempt to reach Kafka failed, and why.
    failed_at: Option<(Instant, String)>,
    builders: Vec<BatchBuilder>,
}

impl Writer {
    fn run(mut self, receiver: Receiver<Submission>) {
        while let Some(round) = self.gather(&receiver) {
            // Requests that stopped waiting are not written: nobody would be told.
            let round: Vec<Submission> = round.into_iter().filter(|submission| !submission.reply.is_closed()).collect();
            if round.is_empty() {
                continue;
            }
            let outcome = self.write(&round);
            let answered = Instant::now();
            for submission in round {
                if outcome.is_ok() {
                    let latency = answered.duration_since(submission.received);
                    self.stats.accepted(submission.values.len(), submission.values.data.len(), latency);
                }
                // The records are out of flight before their client hears so: a client that
                // sends again the moment it is answered finds their share free.
                let Submission { admission, reply, .. } = submission;
                drop(admission);
                // A request that gave up meanwhile counts itself as refused.
                let _ = reply.send(outcome.clone());
            }
        }
    }

    /// The next round: a first submission (waiting as long as it takes), then whatever
    /// arrives within the linger, up to `batch_bytes_max`. `None` once the queue is closed
    /// and empty.
    fn gather(&self, receiver: &Receiver<Submission>) -> Option<Vec<Submission>> {
        let first = receiver.recv().ok()?;
        let deadline = Instant::now() + self.settings.linger;
        let mut bytes = first.bytes();
        let mut round = vec![first];
        while bytes < self.settings.batch_bytes_max {
            match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(submission) => {
                    bytes += submission.bytes();
                    round.push(submission);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        Some(round)
    }

    fn write(&mut self, round: &[Submission]) -> Result<(), Refusal> {
        self.connect()?;
        let producer = self.producer.as_mut().expect("connect leaves a producer or refuses");
        let result = write_round(producer, round, &mut self.builders, self.settings.batch_bytes_max, &self.stats);
        result.map_err(|error| {
            self.producer = None;
            self.builders.clear();
            self.failed_at = Some((Instant::now(), error.to_string()));
            Refusal::KafkaUnavailable(error.to_string())
        })
    }

    fn connect(&mut self) -> Result<(), Refusal> {
        if self.producer.is_none() {
            if let Some((at, reason)) = &self.failed_at {
                if at.elapsed() < self.settings.reconnect_backoff {
                    return Err(Refusal::KafkaUnavailable(reason.clone()));
                }
            }
            match open_producer(&self.settings) {
                Ok(producer) => {
                    self.failed_at = None;
                    self.producer = Some(producer);
                }
                Err(error) => {
                    self.failed_at = Some((Instant::now(), error.to_string()));
                    return Err(Refusal::KafkaUnavailable(error.to_string()));
                }
            }
        }
        Ok(())
    }
}

fn open_producer(settings: &WriterSettings) -> Result<Producer, KafkaError> {
    if let Some(partitions) = settings.create_partitions {
        ensure_topic_with(&mut Cluster::new(&settings.brokers), &settings.topic, partitions, &[])?;
    }
    Producer::new(&settings.brokers, &settings.topic)
}

/// Writes every record of `round`, keyed, each to the partition Kafka's default partitioner
/// picks for its key: one batch per partition, split where a batch reaches `batch_bytes_max`.
fn write_round(
    producer: &mut Producer,
    round: &[Submission],
    builders: &mut Vec<BatchBuilder>,
    batch_bytes_max: usize,
    stats: &Stats,
) -> Result<(), KafkaError> {
    let partitions = producer.partitions();
    builders.resize_with(partitions as usize, Producer::new_batch);
    let timestamp_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as i64);
    let mut send = |partition: u32, builder: &mut BatchBuilder| {
        producer.send(partition, builder)?;
        stats.batches_written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok::<(), KafkaError>(())
    };
    for submission in round {
        assert_eq!(submission.keys.len(), submission.values.len(), "one key per record");
        for (key, value) in submission.keys.iter().zip(submission.values.iter()) {
            let partition = murmur2_partition(key, partitions);
            let builder = &mut builders[partition as usize];
            builder.push(timestamp_ms, Some(key), value);
            if builder.bytes() >= batch_bytes_max {
                send(partition, builder)?;
            }
        }
    }
    for (partition, builder) in builders.iter_mut().enumerate() {
        if !builder.is_empty() {
            send(partition as u32, builder)?;
        }
    }
    Ok(())
}
