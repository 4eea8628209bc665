//! `sleet gen ysb`: writes the built-in generator's ysb events to a Kafka topic (generator
//! partition `p` to topic partition `p`) and the campaigns table to a CSV file, live at a
//! rate or, with `--count`, as a backlog as fast as the broker takes it.
//!
//! What it wrote is a pure function of (seed, rate, partitions, time range), all printed as
//! one JSON object on stdout at the end: a checker recomputes every count from it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sleet_connectors::ysb::{event_range, Campaigns, YsbGenerator, ADS_PER_CAMPAIGN, CAMPAIGNS};
use sleet_exec::RawRecords;
use sleet_kafka::admin::ensure_topic;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::producer::Producer;
use sleet_plan::YsbSourceSpec;
use sleet_wire::clock::now_ms;

/// Event time covered by one produce request per partition when live.
const LIVE_STEP_MS: i64 = 5;
/// Event time per request when preloading: large requests, few round trips.
const PRELOAD_STEP_MS: i64 = 50;
/// A request carries at most this many bytes of records before compression, well under a
/// broker's default 1 MiB limit per batch even if lz4 gains nothing.
pub(crate) const BATCH_BYTES_MAX: usize = 900 << 10;

#[derive(Debug, Clone, clap::Args)]
pub struct GenYsbArgs {
    /// Kafka brokers, `host:port[,host:port…]`.
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    #[arg(long, default_value = "ysb")]
    pub topic: String,
    /// Partitions of the topic (created with this many if missing; an existing topic must
    /// have this many).
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    /// Events per second over all partitions; with --count, the rate the events' times
    /// are spaced at.
    #[arg(long, default_value_t = crate::ysb_job::DEFAULT_RATE)]
    pub rate: u64,
    /// How long to produce live; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "60s")]
    pub duration: Duration,
    /// Instead of producing live, write this many events (rounded up to a whole ms of
    /// event time) as fast as the broker takes them; 0 only creates the topic.
    #[arg(long)]
    pub count: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share of events replaced by malformed, mistyped or oversized records.
    #[arg(long, default_value_t = 0.0)]
    pub bad_fraction: f64,
    /// Event time of the first event (ms since the epoch); default now (live) or now minus
    /// the backlog's length (--count).
    #[arg(long)]
    pub start_ms: Option<i64>,
    /// Where to write the campaigns table (CSV `ad_id,campaign_id`) for `--campaigns`.
    #[arg(long, default_value = "ysb-campaigns.csv")]
    pub campaigns_out: PathBuf,
}

/// What was written, for a checker.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Produced {
    pub topic: String,
    pub spec: YsbSourceSpec,
    pub start_ms: i64,
    pub end_ms: i64,
    pub events: u64,
    pub elapsed_s: f64,
}

pub fn write_campaigns_csv(seed: u64, path: &std::path::Path) -> Result<()> {
    let campaigns = Campaigns::new(seed);
    let mut text = String::from("ad_id,campaign_id\n");
    for ad in 0..(CAMPAIGNS * ADS_PER_CAMPAIGN) as u32 {
        text.push_str(&format!("{},{}\n", campaigns.ad_id(ad), campaigns.campaign_id(campaigns.campaign_of(ad))));
    }
    std::fs::write(path, text).with_context(|| format!("writing the campaigns table to {}", path.display()))
}

pub fn run(args: &GenYsbArgs) -> Result<Produced> {
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    anyhow::ensure!(args.rate >= 1, "--rate must be at least 1");
    anyhow::ensure!((0.0..1.0).contains(&args.bad_fraction), "--bad-fraction must be in [0, 1)");
    let spec = YsbSourceSpec {
        seed: args.seed,
        rate_per_s: args.rate,
        partitions: args.partitions,
        bad_fraction: args.bad_fraction,
        pre_decoded: false,
    };
    let mut cluster = Cluster::new(&args.brokers);
    ensure_topic(&mut cluster, &args.topic, args.partitions)
        .with_context(|| format!("preparing topic `{}`", args.topic))?;
    write_campaigns_csv(args.seed, &args.campaigns_out)?;

    let (start_ms, end_ms, live) = match args.count {
        Some(count) => {
            let length_ms = (count as u128 * 1000).div_ceil(args.rate as u128) as i64;
            let start = args.start_ms.unwrap_or_else(|| now_ms() - length_ms);
            (start, end_for_count(&spec, start, count), false)
        }
        None => {
            let start = args.start_ms.unwrap_or_else(now_ms);
            (start, start + args.duration.as_millis() as i64, true)
        }
    };
    let events: u64 = (0..args.partitions).map(|p| event_range(&spec, p, start_ms, end_ms).count() as u64).sum();
    let run = ProduceRun {
        command: "gen ysb",
        brokers: &args.brokers,
        topic: &args.topic,
        partitions: args.partitions,
        range: (start_ms, end_ms),
        live_rate: live.then_some(args.rate),
        records: events,
        what: format!("{events} events"),
    };
    let elapsed_s = run.produce(|partition| YsbGenerator::new(&spec, partition))?;
    Ok(Produced { topic: args.topic.clone(), spec, start_ms, end_ms, events, elapsed_s })
}

/// The smallest end (whole ms) whose range from `start` holds at least `count` events.
fn end_for_count(spec: &YsbSourceSpec, start: i64, count: u64) -> i64 {
    let total =
        |end: i64| -> u64 { (0..spec.partitions).map(|p| event_range(spec, p, start, end).count() as u64).sum() };
    start + crate::backlog::shortest_length(count, |length| total(start + length))
}

/// One generator partition's records of an event-time range, as a `gen` command writes them.
pub(crate) trait PartitionGenerator: Send + 'static {
    fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64;
}

impl PartitionGenerator for YsbGenerator {
    fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        YsbGenerator::generate(self, start_ms, end_ms, out)
    }
}

/// A `gen` command's run to Kafka: generator partition `p`'s records of `range` to partition
/// `p` of the topic.
pub(crate) struct ProduceRun<'a> {
    /// How its lines on stderr start (`gen ysb`).
    pub command: &'a str,
    pub brokers: &'a str,
    pub topic: &'a str,
    pub partitions: u32,
    /// Event time, `[start_ms, end_ms)`.
    pub range: (i64, i64),
    /// Live, each step once its time has passed, announced at this rate in events/s; or, if
    /// none, a backlog as fast as the broker takes it.
    pub live_rate: Option<u64>,
    /// The records the range holds over all partitions: the run fails if it wrote others.
    pub records: u64,
    /// What the run writes, for its first line (`1000 events`).
    pub what: String,
}

impl ProduceRun<'_> {
    /// Announces the run, writes it with a thread per partition (progress on stderr every
    /// second), checks that it wrote `records` and says how fast. Returns the seconds it took.
    pub(crate) fn produce<G: PartitionGenerator>(&self, generator_of: impl Fn(u32) -> G) -> Result<f64> {
        let ((start_ms, end_ms), command, what) = (self.range, self.command, &self.what);
        eprintln!(
            "{command}: {what} of [{start_ms}, {end_ms}) ms to {}/{} ({} partitions){}",
            self.brokers,
            self.topic,
            self.partitions,
            match self.live_rate {
                Some(rate) => format!(", live at {rate} events/s"),
                None => ", as fast as the broker takes them".into(),
            }
        );
        let started = Instant::now();
        let written = produce_partitions(self, generator_of)?;
        let expected = self.records;
        anyhow::ensure!(written == expected, "wrote {written} records, expected {expected}");
        let elapsed_s = started.elapsed().as_secs_f64();
        eprintln!(
            "{command}: wrote {written} records in {elapsed_s:.1} s ({:.0} records/s)",
            written as f64 / elapsed_s
        );
        Ok(elapsed_s)
    }
}

/// Returns the records written, or the first partition's failure.
fn produce_partitions<G: PartitionGenerator>(run: &ProduceRun, generator_of: impl Fn(u32) -> G) -> Result<u64> {
    let (brokers, topic, live) = (run.brokers, run.topic, run.live_rate.is_some());
    let (start_ms, end_ms) = run.range;
    let written = Arc::new(AtomicU64::new(0));
    let behind_ms = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..run.partitions)
        .map(|partition| {
            let generator = generator_of(partition);
            let (brokers, topic) = (brokers.to_string(), topic.to_string());
            let (written, behind_ms) = (Arc::clone(&written), Arc::clone(&behind_ms));
            std::thread::spawn(move || -> Result<()> {
                let mut producer = Producer::new(&brokers, &topic)?;
                let range = (start_ms, end_ms);
                produce_partition(&mut producer, &generator, partition, range, live, &written, &behind_ms)
            })
        })
        .collect();
    let progress = {
        let (written, behind_ms, done) = (Arc::clone(&written), Arc::clone(&behind_ms), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut last = 0;
            while !done.load(Ordering::SeqCst) {
                for _ in 0..10 {
                    std::thread::sleep(Duration::from_millis(100));
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                }
                let now = written.load(Ordering::Relaxed);
                eprintln!(
                    "  [{:>4} s] {now:>11} records written ({:>9} /s){}",
                    started.elapsed().as_secs(),
                    now - last,
                    if live { format!(", {} ms behind", behind_ms.load(Ordering::Relaxed)) } else { String::new() }
                );
                last = now;
            }
        })
    };
    let failure = crate::threads::join_all(handles, "producer");
    done.store(true, Ordering::SeqCst);
    let _ = progress.join();
    if let Some(error) = failure {
        return Err(error.context(format!("producing to {brokers}/{topic}")));
    }
    Ok(written.load(Ordering::SeqCst))
}

fn produce_partition(
    producer: &mut Producer,
    generator: &dyn PartitionGenerator,
    partition: u32,
    (start_ms, end_ms): (i64, i64),
    live: bool,
    written: &AtomicU64,
    behind_ms: &AtomicI64,
) -> Result<()> {
    let mut batch = Producer::new_batch();
    let mut records = RawRecords::new();
    let step = if live { LIVE_STEP_MS } else { PRELOAD_STEP_MS };
    let mut from = start_ms;
    while from < end_ms {
        let mut to = (from + step).min(end_ms);
        if live {
            // Behind (the broker was away): catch up in larger requests.
            let behind = now_ms() - to;
            if behind > step {
                to = (from + behind.min(PRELOAD_STEP_MS)).min(end_ms);
            }
            // Events of [from, to) exist once `to` has passed.
            let wait = to - now_ms();
            if partition == 0 {
                behind_ms.store((-wait).max(0), Ordering::Relaxed);
            }
            if wait > 0 {
                std::thread::sleep(Duration::from_millis(wait as u64));
            }
        }
        records.data.clear();
        records.offsets.truncate(1);
        generator.generate(from, to, &mut records);
        let timestamp = if live { now_ms() } else { to };
        for (index, record) in records.iter().enumerate() {
            batch.push(timestamp, None, record);
            if batch.bytes() >= BATCH_BYTES_MAX || index + 1 == records.len() {
                let count = batch.len() as u64;
                producer.send(partition, &mut batch)?;
                written.fetch_add(count, Ordering::Relaxed);
            }
        }
        from = to;
    }
    Ok(())
}
