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
    let expected: u64 = (0..args.partitions).map(|p| event_range(&spec, p, start_ms, end_ms).count() as u64).sum();
    eprintln!(
        "gen ysb: {} events of [{start_ms}, {end_ms}) ms to {}/{} ({} partitions){}",
        expected,
        args.brokers,
        args.topic,
        args.partitions,
        if live { format!(", live at {} events/s", args.rate) } else { ", as fast as the broker takes them".into() }
    );
    let written = Arc::new(AtomicU64::new(0));
    let behind_ms = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..args.partitions)
        .map(|partition| {
            let (spec, brokers, topic) = (spec.clone(), args.brokers.clone(), args.topic.clone());
            let (written, behind_ms) = (Arc::clone(&written), Arc::clone(&behind_ms));
            std::thread::spawn(move || -> Result<()> {
                let mut producer = Producer::new(&brokers, &topic)?;
                produce_partition(&mut producer, &spec, partition, start_ms, end_ms, live, &written, &behind_ms)
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
                    "  [{:>4} s] {now:>11} events written ({:>9} /s){}",
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
        return Err(error.context(format!("producing to {}/{}", args.brokers, args.topic)));
    }
    let events = written.load(Ordering::SeqCst);
    anyhow::ensure!(events == expected, "wrote {events} events, expected {expected}");
    let elapsed_s = started.elapsed().as_secs_f64();
    eprintln!("gen ysb: wrote {events} events in {elapsed_s:.1} s ({:.0} events/s)", events as f64 / elapsed_s);
    Ok(Produced { topic: args.topic.clone(), spec, start_ms, end_ms, events, elapsed_s })
}

/// The smallest end (whole ms) whose range from `start` holds at least `count` events.
fn end_for_count(spec: &YsbSourceSpec, start: i64, count: u64) -> i64 {
    let total =
        |end: i64| -> u64 { (0..spec.partitions).map(|p| event_range(spec, p, start, end).count() as u64).sum() };
    start + crate::backlog::shortest_length(count, |length| total(start + length))
}

#[allow(
    clippy::too_many_arguments,
    reason = "a partition thread's whole input: a struct of it would be built and taken apart at the one call"
)]
fn produce_partition(
    producer: &mut Producer,
    spec: &YsbSourceSpec,
    partition: u32,
    start_ms: i64,
    end_ms: i64,
    live: bool,
    written: &AtomicU64,
    behind_ms: &AtomicI64,
) -> Result<()> {
    let generator = YsbGenerator::new(spec, partition);
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
