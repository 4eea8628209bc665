//! `sleet gen gateway`: the home-gateway generator's records sent to a transport, keyed by
//! `gateway_id`, live at `--speedup` (or `--rate`) or, with `--count`, as a backlog as fast as
//! the transport takes it. Generator partition `p` goes to Kafka partition `p`, which is where
//! Kafka's default partitioner puts each of its gateways.
//!
//! The gateways report from the start until the event time the run covers, then stop; the run
//! goes on for `--max-delay` of simulated time so every late reading arrives, which makes
//! each gateway's readings complete and the truth (`gateway_check::ground_truth` over the
//! printed spec and delivery range) what a job must compute under any encoding.
//!
//! A transport is a `RecordSender`, one per partition thread: Kafka's producer, or a client of
//! the ingest server over HTTP or WebSocket (`ingest_client.rs`), which then writes to Kafka.
//! `--format avro` writes each record as a single-object Avro datum of `schemas/gateway.avsc`
//! on every transport.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sleet_connectors::gateway::{date_ms, profile, GatewayGenerator, Profile};
use sleet_exec::RawRecords;
use sleet_kafka::admin::ensure_topic;
use sleet_kafka::batch_builder::BatchBuilder;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::producer::Producer;
use sleet_plan::{GatewayEncoding, GatewayFormat, GatewaySourceSpec};
use sleet_wire::clock::now_ms;

use crate::gen_ysb::BATCH_BYTES_MAX;
use crate::ingest_client::{ClientSettings, HttpSender, WsSender};

/// Wall time covered by one send per partition when live.
const LIVE_STEP_MS: i64 = 10;
/// Records a backlog send aims at per partition: large requests, few round trips.
const BACKLOG_RECORDS_PER_SEND: u64 = 5_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Kafka,
    /// `POST /v1/records` of a `sleet ingest` server at `--address`.
    Http,
    /// `GET /v1/stream` of a `sleet ingest` server at `--address`.
    Ws,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EncodingArg {
    Cumulative,
    Counter,
    Rate,
}

impl From<EncodingArg> for GatewayEncoding {
    fn from(encoding: EncodingArg) -> Self {
        match encoding {
            EncodingArg::Cumulative => GatewayEncoding::Cumulative,
            EncodingArg::Counter => GatewayEncoding::Counter,
            EncodingArg::Rate => GatewayEncoding::Rate,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Json,
    Avro,
}

impl From<FormatArg> for GatewayFormat {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Json => GatewayFormat::Json,
            FormatArg::Avro => GatewayFormat::Avro,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct GenGatewayArgs {
    /// Where the records go.
    #[arg(long, value_enum, default_value_t = Transport::Kafka)]
    pub to: Transport,
    /// Kafka brokers, `host:port[,host:port…]` (`--to kafka`).
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// The topic written (`--to kafka`); with `--to http|ws` the server's, for the record.
    #[arg(long, default_value = "gateway")]
    pub topic: String,
    /// The ingest server, `host:port` (`--to http|ws`). Its bearer token, if it wants one,
    /// comes from SLEET_INGEST_TOKEN.
    #[arg(long, default_value = "127.0.0.1:8480")]
    pub address: String,
    /// Records per HTTP request or WebSocket message.
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// Per partition: HTTP requests in flight (one connection each), or WebSocket messages
    /// not yet acknowledged.
    #[arg(long, default_value_t = 4)]
    pub in_flight: usize,
    /// Retries of one request or message the server refused with 503 (or whose connection
    /// broke) before the run gives up, with backoff from 50 ms doubling to 2 s.
    #[arg(long, default_value_t = 10)]
    pub retries: u32,
    /// Partitions of the topic (created with this many if missing; an existing topic must
    /// have this many).
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    #[arg(long, value_enum, default_value_t = FormatArg::Json)]
    pub format: FormatArg,
    #[arg(long, value_enum, default_value_t = EncodingArg::Cumulative)]
    pub encoding: EncodingArg,
    #[arg(long, default_value_t = 200)]
    pub gateways: u32,
    /// Simulated time per wall-clock time.
    #[arg(long, conflicts_with = "rate")]
    pub speedup: Option<u32>,
    /// Records per second over all gateways: sets the speedup to the nearest whole number
    /// that gives it (a gateway reports once a minute of simulated time).
    #[arg(long)]
    pub rate: Option<u64>,
    /// How long the gateways report live (wall time); the late readings then still arrive,
    /// for --max-delay of simulated time. A bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "60s")]
    pub duration: Duration,
    /// Instead of sending live, send the first this many readings (rounded up to a whole ms
    /// of event time) as fast as the transport takes them.
    #[arg(long)]
    pub count: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share of readings delivered late.
    #[arg(long, default_value_t = sleet_plan::gateway::default_late_fraction())]
    pub late_fraction: f64,
    /// The most a late reading is delayed, in simulated time; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "2m")]
    pub max_delay: Duration,
    /// Simulated time of the start (ms since the epoch); default now (live) or, with --count,
    /// the backlog's length before now.
    #[arg(long)]
    pub start_ms: Option<i64>,
}

/// Default speedup: an hour of simulated time per wall minute.
const DEFAULT_SPEEDUP: u32 = 60;

/// What was sent: with `gateway_check::ground_truth(&spec, delivered_start_ms,
/// delivered_end_ms)`, everything a checker needs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Produced {
    pub to: Transport,
    pub topic: String,
    pub spec: GatewaySourceSpec,
    /// The simulated delivery range sent: every reading the gateways took.
    pub delivered_start_ms: i64,
    pub delivered_end_ms: i64,
    pub records: u64,
    pub elapsed_s: f64,
}

/// A transport for one generator partition's records. `send` returns once the transport has
/// acknowledged every record, so a caller that counts them counts only what arrived (and the
/// progress lines show records acknowledged).
pub trait RecordSender: Send {
    /// `records[i]` keyed by `keys[i]`, all of generator partition `partition`, in delivery
    /// order; `timestamp_ms` is the transport's record time where it has one.
    fn send(&mut self, partition: u32, records: &RawRecords, keys: &[String], timestamp_ms: i64) -> Result<()>;
}

struct KafkaSender {
    producer: Producer,
    batch: BatchBuilder,
}

impl RecordSender for KafkaSender {
    fn send(&mut self, partition: u32, records: &RawRecords, keys: &[String], timestamp_ms: i64) -> Result<()> {
        for (index, (record, key)) in records.iter().zip(keys).enumerate() {
            self.batch.push(timestamp_ms, Some(key.as_bytes()), record);
            if self.batch.bytes() >= BATCH_BYTES_MAX || index + 1 == records.len() {
                self.producer.send(partition, &mut self.batch)?;
            }
        }
        Ok(())
    }
}

/// Opens one partition thread's sender.
type OpenSender = Box<dyn Fn() -> Result<Box<dyn RecordSender>> + Send + Sync>;

/// Prepares the transport (creates the topic) and returns how to open one sender.
fn prepare(args: &GenGatewayArgs) -> Result<OpenSender> {
    match args.to {
        Transport::Kafka => {
            let mut cluster = Cluster::new(&args.brokers);
            ensure_topic(&mut cluster, &args.topic, args.partitions)
                .with_context(|| format!("preparing topic `{}` on {}", args.topic, args.brokers))?;
            let (brokers, topic) = (args.brokers.clone(), args.topic.clone());
            Ok(Box::new(move || {
                let producer = Producer::new(&brokers, &topic).with_context(|| format!("a producer for `{topic}`"))?;
                Ok(Box::new(KafkaSender { producer, batch: Producer::new_batch() }) as Box<dyn RecordSender>)
            }))
        }
        Transport::Http | Transport::Ws => {
            anyhow::ensure!(args.batch >= 1, "--batch must be at least 1");
            anyhow::ensure!(args.in_flight >= 1, "--in-flight must be at least 1");
            let settings = ClientSettings {
                address: args.address.clone(),
                avro: args.format == FormatArg::Avro,
                batch: args.batch,
                in_flight: args.in_flight,
                retries: args.retries,
                token: std::env::var("SLEET_INGEST_TOKEN").ok().filter(|token| !token.is_empty()),
            };
            let websocket = args.to == Transport::Ws;
            Ok(Box::new(move || {
                Ok(if websocket {
                    Box::new(WsSender::new(settings.clone())?) as Box<dyn RecordSender>
                } else {
                    Box::new(HttpSender::new(settings.clone())?)
                })
            }))
        }
    }
}

/// Where the records go, as the progress lines and errors name it.
fn destination(args: &GenGatewayArgs) -> String {
    match args.to {
        Transport::Kafka => format!("Kafka {}/{}", args.brokers, args.topic),
        Transport::Http => format!("http://{}/v1/records", args.address),
        Transport::Ws => format!("ws://{}/v1/stream", args.address),
    }
}

/// The speedup that gives `rate` records/s from `gateways` gateways reporting once per
/// `report_interval_ms` of simulated time.
pub fn speedup_for_rate(rate: u64, gateways: u32, report_interval_ms: i64) -> u32 {
    let per_wall_s_at_speedup_1 = gateways as f64 * 1_000.0 / report_interval_ms as f64;
    (rate as f64 / per_wall_s_at_speedup_1).round().clamp(1.0, u32::MAX as f64) as u32
}

/// How many readings the gateways take before simulated time `until_ms`.
pub fn readings_before(spec: &GatewaySourceSpec, profiles: &[Profile], until_ms: i64) -> u64 {
    profiles
        .iter()
        .map(|profile| {
            // Reading i is dated before `start + (i + 1)·interval + 2·jitter`, so those with
            // that bound at or below `until_ms` surely count; of the rest, at most the next
            // two or so do, found by walking (dates increase with the index).
            let (interval, jitter) = (spec.report_interval_ms as i128, spec.jitter_ms as i128);
            let sure = (until_ms as i128 - spec.start_ms as i128 - 2 * jitter - interval).div_euclid(interval) + 1;
            let mut count = sure.max(0) as u64;
            while date_ms(spec, profile, count) < until_ms {
                count += 1;
            }
            count
        })
        .sum()
}

/// The shortest simulated length from the start whose readings number at least `count`.
fn length_for_count(spec: &GatewaySourceSpec, count: u64) -> i64 {
    let profiles: Vec<Profile> = (0..spec.gateways).map(|gateway| profile(spec, gateway)).collect();
    crate::backlog::shortest_length(count, |length| readings_before(spec, &profiles, spec.start_ms + length))
}

fn spec_of(args: &GenGatewayArgs) -> Result<GatewaySourceSpec> {
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    anyhow::ensure!(args.gateways >= 1, "--gateways must be at least 1");
    anyhow::ensure!((0.0..=1.0).contains(&args.late_fraction), "--late-fraction must be in [0, 1]");
    let report_interval_ms = sleet_plan::gateway::default_report_interval_ms();
    let speedup = match (args.speedup, args.rate) {
        (Some(speedup), _) => speedup,
        (None, Some(rate)) => speedup_for_rate(rate, args.gateways, report_interval_ms),
        (None, None) => DEFAULT_SPEEDUP,
    };
    anyhow::ensure!(speedup >= 1, "--speedup must be at least 1");
    let max_delay_ms = args.max_delay.as_millis() as i64;
    anyhow::ensure!(max_delay_ms <= 86_400_000, "--max-delay must be at most a day");
    Ok(GatewaySourceSpec {
        seed: args.seed,
        gateways: args.gateways,
        partitions: args.partitions,
        encoding: args.encoding.into(),
        format: args.format.into(),
        start_ms: 0,
        stop_ms: None,
        speedup,
        report_interval_ms,
        jitter_ms: sleet_plan::gateway::default_jitter_ms(),
        late_fraction: args.late_fraction,
        max_delay_ms,
    })
}

pub fn run(args: &GenGatewayArgs) -> Result<Produced> {
    let mut spec = spec_of(args)?;
    let live = args.count.is_none();
    match args.count {
        Some(count) => {
            // Where the readings fall relative to the start does not depend on the start.
            let length = length_for_count(&spec, count);
            spec.start_ms = args.start_ms.unwrap_or_else(|| now_ms() - length - spec.max_delay_ms);
            spec.stop_ms = Some(spec.start_ms + length);
        }
        None => {
            spec.start_ms = args.start_ms.unwrap_or_else(now_ms);
            let simulated = args.duration.as_millis() as i64 * spec.speedup as i64;
            spec.stop_ms = Some(spec.start_ms + simulated);
        }
    }
    anyhow::ensure!(spec.start_ms >= 0, "--start-ms must not be before the epoch");
    let drained = spec.drained_ms().expect("the run stops");
    // Live, the run ends at the first wall instant whose simulated time has drained it.
    let (delivered_start_ms, delivered_end_ms) =
        if live { (spec.start_ms, spec.simulated_ms(spec.wall_ms(drained))) } else { (spec.start_ms, drained) };
    let profiles: Vec<Profile> = (0..spec.gateways).map(|gateway| profile(&spec, gateway)).collect();
    let expected = readings_before(&spec, &profiles, spec.stop_ms.expect("the run stops"));
    eprintln!(
        "gen gateway: {expected} {} {} readings of {} gateways, simulated [{}, {}) ms at speedup {}, to {} ({} partitions){}",
        spec.encoding.as_str(),
        spec.format.as_str(),
        spec.gateways,
        spec.start_ms,
        delivered_end_ms,
        spec.speedup,
        destination(args),
        args.partitions,
        if live { ", live" } else { ", as fast as the transport takes them" }
    );
    let open_sender = Arc::new(prepare(args)?);
    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..args.partitions)
        .map(|partition| {
            let (spec, open_sender, sent) = (spec.clone(), Arc::clone(&open_sender), Arc::clone(&sent));
            std::thread::spawn(move || -> Result<()> {
                let mut sender = open_sender()?;
                let generator = GatewayGenerator::new(&spec, partition);
                let range = (delivered_start_ms, delivered_end_ms);
                send_partition(&generator, &spec, partition, range, live, sender.as_mut(), &sent)
            })
        })
        .collect();
    let progress = {
        let (sent, done) = (Arc::clone(&sent), Arc::clone(&done));
        std::thread::spawn(move || report_progress(&sent, &done, started))
    };
    let failure = crate::threads::join_all(handles, "sender");
    done.store(true, Ordering::SeqCst);
    let _ = progress.join();
    if let Some(error) = failure {
        return Err(error.context(format!("sending to {}", destination(args))));
    }
    let records = sent.load(Ordering::SeqCst);
    anyhow::ensure!(records == expected, "sent {records} readings, expected {expected}");
    let elapsed_s = started.elapsed().as_secs_f64();
    eprintln!("gen gateway: sent {records} records in {elapsed_s:.1} s ({:.0} records/s)", records as f64 / elapsed_s);
    Ok(Produced {
        to: args.to,
        topic: args.topic.clone(),
        spec,
        delivered_start_ms,
        delivered_end_ms,
        records,
        elapsed_s,
    })
}

fn report_progress(sent: &AtomicU64, done: &AtomicBool, started: Instant) {
    let mut last = 0;
    loop {
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(100));
            if done.load(Ordering::SeqCst) {
                return;
            }
        }
        let now = sent.load(Ordering::Relaxed);
        eprintln!("  [{:>4} s] {now:>11} records sent ({:>9} /s)", started.elapsed().as_secs(), now - last);
        last = now;
    }
}

/// Sends one partition's records of the simulated delivery range: live, each step once its
/// wall-clock time has passed; as a backlog, in steps of about `BACKLOG_RECORDS_PER_SEND`.
fn send_partition(
    generator: &GatewayGenerator,
    spec: &GatewaySourceSpec,
    partition: u32,
    (start_ms, end_ms): (i64, i64),
    live: bool,
    sender: &mut dyn RecordSender,
    sent: &AtomicU64,
) -> Result<()> {
    let gateways = generator.gateways().count().max(1) as u64;
    let backlog_step_ms =
        (BACKLOG_RECORDS_PER_SEND * spec.report_interval_ms as u64 / gateways).max(1_000).min(i64::MAX as u64) as i64;
    let (mut records, mut keys) = (RawRecords::new(), Vec::new());
    let mut from = start_ms;
    while from < end_ms {
        let to = if live {
            // Behind (a slow transport): catch up with the whole of the time passed.
            let wall_to = (spec.wall_ms(from) + LIVE_STEP_MS).max(now_ms());
            let wait = wall_to - now_ms();
            if wait > 0 {
                std::thread::sleep(Duration::from_millis(wait as u64));
            }
            spec.simulated_ms(wall_to).min(end_ms)
        } else {
            from.saturating_add(backlog_step_ms).min(end_ms)
        };
        records.data.clear();
        records.offsets.truncate(1);
        keys.clear();
        let count = generator.generate_simulated(from, to, &mut records, Some(&mut keys));
        // The time of sending, even for a backlog: simulated dates may lie weeks back, and a
        // broker deletes records whose timestamps are past its retention.
        sender.send(partition, &records, &keys, now_ms())?;
        sent.fetch_add(count, Ordering::Relaxed);
        from = to;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_before_counts_what_the_reading_function_dates() {
        for seed in 0..5 {
            let spec = GatewaySourceSpec {
                seed,
                gateways: 30,
                partitions: 1,
                encoding: GatewayEncoding::Counter,
                format: GatewayFormat::Json,
                start_ms: 1_000_000,
                stop_ms: None,
                speedup: 1,
                report_interval_ms: 60_000,
                jitter_ms: 20_000,
                late_fraction: 0.0,
                max_delay_ms: 0,
            };
            let profiles: Vec<Profile> = (0..30).map(|gateway| profile(&spec, gateway)).collect();
            for until in [999_999, 1_000_000, 1_030_000, 1_090_001, 5_000_000, 50_000_000] {
                let brute: u64 = profiles
                    .iter()
                    .map(|profile| (0..).take_while(|index| date_ms(&spec, profile, *index) < until).count() as u64)
                    .sum();
                assert_eq!(readings_before(&spec, &profiles, until), brute, "seed {seed} until {until}");
            }
            let length = length_for_count(&spec, 1_000);
            assert!(readings_before(&spec, &profiles, spec.start_ms + length) >= 1_000);
            assert!(readings_before(&spec, &profiles, spec.start_ms + length - 1) < 1_000);
        }
    }

    #[test]
    fn a_rate_sets_the_nearest_speedup() {
        // 200 gateways once a minute: 3.33 records/s at speedup 1.
        assert_eq!(speedup_for_rate(100_000, 200, 60_000), 30_000);
        assert_eq!(speedup_for_rate(1, 200, 60_000), 1);
    }
}
