//! One gateway run: the built-in gateway source, or `sleet gen gateway` writing to a fresh
//! Kafka topic (directly, or through the cluster's `sleet ingest` server over HTTP or
//! WebSocket) while the gateway job reads it; optionally a worker or the ingest server
//! SIGKILLed mid-run (a killed ingest server is started again on its address at once, and the
//! generator's retries carry on). The job's final daily rankings are judged against the
//! generator's ground truth; after an ingest kill, the topic too (`census`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use sleet_cli::client::{run_job, status_line};
use sleet_cli::cluster::{IngestSpec, LocalCluster};
use sleet_ingest::args::FormatArg as IngestFormat;
use sleet_kafka::admin::{delete_topic, ensure_topic};
use sleet_plan::{
    GatewayEncoding, GatewayFormat, GatewaySourceSpec, JobFile, JobSettings, KafkaSourceSpec, KafkaStart, SinkSpec,
    SourceSpec,
};
use sleet_workloads::gateway_check::{self, RankingVerdict, TOP_K};
use sleet_workloads::gateway_job::{gateway_plan, GatewayJob, DAY_MS};
use sleet_workloads::gen_gateway::{speedup_for_rate, Produced};

use super::census::{take_census, Census};
use super::figures::{batch_figures, BatchFigures};
use super::Feed;
use crate::cpu_time::{cpu_seconds, find_kafka_broker, total_cpu_seconds};
use crate::producer_process::ProducerProcess;
use crate::read_all::ReadAll;
use crate::ysb_run::on_brokers;

/// A gateway reports once a minute of simulated time, as in the field study.
pub const REPORT_INTERVAL_MS: i64 = 60_000;
/// A live job runs until it has read every record the producer wrote, at most this long past
/// the producer's planned end.
const LIVE_TAIL_MAX: Duration = Duration::from_secs(60);
/// Share of a run's batches left out of its batch figures: the cluster warming up.
const WARMUP_SHARE: f64 = 0.1;

/// Which process a run SIGKILLs, and when (after the job starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victim {
    Worker,
    Ingest,
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub feed: Feed,
    pub brokers: String,
    pub format: GatewayFormat,
    pub encoding: GatewayEncoding,
    pub partitions: u32,
    pub workers: u32,
    pub cores_per_worker: u32,
    pub rate: u64,
    pub gateways: u32,
    pub duration: Duration,
    pub batch_interval_ms: u64,
    pub checkpoint_interval_ms: u64,
    pub seed: u64,
    pub kill: Option<(Victim, Duration)>,
    /// Records per HTTP request or WebSocket message, and those in flight per partition.
    pub request_records: usize,
    pub in_flight: usize,
}

impl RunConfig {
    pub fn speedup(&self) -> u32 {
        speedup_for_rate(self.rate, self.gateways, REPORT_INTERVAL_MS)
    }

    pub fn label(&self) -> String {
        format!(
            "{} {} {} p{} {} ms",
            self.feed.as_str(),
            self.format.as_str(),
            self.encoding.as_str(),
            self.partitions,
            self.batch_interval_ms
        )
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "feed": self.feed.as_str(),
            "format": self.format.as_str(),
            "encoding": self.encoding.as_str(),
            "partitions": self.partitions,
            "workers": self.workers,
            "cores_per_worker": self.cores_per_worker,
            "rate": self.rate,
            "gateways": self.gateways,
            "speedup": self.speedup(),
            "report_interval_ms": REPORT_INTERVAL_MS,
            "duration_ms": self.duration.as_millis() as u64,
            "batch_interval_ms": self.batch_interval_ms,
            "checkpoint_interval_ms": self.checkpoint_interval_ms,
            "seed": self.seed,
            "request_records": self.request_records,
            "in_flight": self.in_flight,
            "kill": self.kill.map(|(victim, at)| json!({ "victim": format!("{victim:?}").to_lowercase(), "at_ms": at.as_millis() as u64 })),
        })
    }

    fn job(&self) -> GatewayJob {
        GatewayJob {
            encoding: self.encoding.into(),
            format: self.format,
            allowed_lateness_ms: sleet_plan::gateway::default_max_delay_ms(),
            ttl_ms: 2 * DAY_MS,
            top: TOP_K as u32,
            // Every gateway on two days, with room: the bound is there to be reported, not hit.
            max_keys: (self.gateways as u64 * 4).max(10_000),
            reduce_partitions: self.partitions,
        }
    }
}

/// One run's judged outcome.
pub struct RunResult {
    pub json: serde_json::Value,
    pub verdict: RankingVerdict,
    pub figures: BatchFigures,
    /// Records the job read per second of the producer's wall time.
    pub records_per_s: f64,
}

impl RunResult {
    pub fn exact(&self) -> bool {
        self.verdict.exact()
    }
}

/// What a feed leaves behind for judging: the spec and range of what was delivered, and the
/// producer's figures.
struct Delivered {
    spec: GatewaySourceSpec,
    range: (i64, i64),
    records: u64,
    elapsed_s: f64,
    producer_cpu_s: Option<f64>,
}

pub async fn run_once(config: &RunConfig, run_dir: &Path) -> Result<RunResult> {
    let (results_dir, _) = crate::ysb_run::clear_run_outputs(run_dir)?;
    let sink = SinkSpec::JsonLines { dir: results_dir.display().to_string() };
    eprintln!(
        "bench gateway {}: {} records/s from {} gateways (speedup {}) for {}",
        config.label(),
        config.rate,
        config.gateways,
        config.speedup(),
        crate::duration_arg::show(config.duration)
    );
    let (summary, delivered, cpu, ingest) = match config.feed {
        Feed::Builtin => run_builtin(config, run_dir, sink).await?,
        Feed::Kafka | Feed::Http | Feed::Ws => run_kafka(config, run_dir, sink).await?,
    };
    let rankings = gateway_check::read_final_rankings(&results_dir)?;
    let mut verdict = gateway_check::check_rankings(&delivered.spec, delivered.range, &rankings, TOP_K);
    if let Some(census) = ingest.census {
        // Every record the generator counted was acknowledged by the server, so each must be
        // in the topic.
        if census.distinct < delivered.records {
            verdict.mismatches.push(format!(
                "the topic holds {} distinct records of the {} acknowledged: acknowledged records were lost",
                census.distinct, delivered.records
            ));
        }
    }
    let figures = batch_figures(&summary, config.batch_interval_ms, WARMUP_SHARE);
    let records_per_s = summary.events_in as f64 / delivered.elapsed_s.max(1e-9);
    let per_record = |seconds: f64| seconds * 1e6 / summary.events_in.max(1) as f64;
    let json = json!({
        "config": config.json(),
        "exact": verdict.exact(),
        "final_days": verdict.final_days,
        "mismatches": verdict.mismatches.iter().take(20).collect::<Vec<_>>(),
        "records_delivered": delivered.records,
        "records_read": summary.events_in,
        "dead_letters": summary.dead_letters,
        "records_per_s": records_per_s,
        "producer_records_per_s": delivered.records as f64 / delivered.elapsed_s.max(1e-9),
        "batches": figures,
        "state": summary.state,
        "late_rows_dropped": summary.late_rows_dropped,
        "recoveries": summary.recoveries.len(),
        "batches_rerun": summary.batches_rerun,
        "cpu_definition": "CPU seconds (user + system, from /proc) over the job for sleet's driver and workers and for the broker, over its life for the producer; per record read",
        "cpu_seconds": { "sleet": cpu.sleet, "broker": cpu.broker, "producer": delivered.producer_cpu_s, "ingest": cpu.ingest },
        "cpu_us_per_record": {
            "sleet": per_record(cpu.sleet),
            "broker": cpu.broker.map(per_record),
            "producer": delivered.producer_cpu_s.map(per_record),
            "ingest": cpu.ingest.map(per_record),
        },
        "ingest": {
            "stats_of_last_server": ingest.stats,
            "restarts": ingest.restarts,
            "topic_census": ingest.census,
        },
    });
    eprintln!(
        "  {}: {} of {} final days exact; {:.0} records/s read; processing p50 {} ms, delay p99 {} ms, {}; sleet {:.2} µs/record",
        config.label(),
        if verdict.exact() { "all" } else { "NOT all" },
        verdict.final_days.len(),
        records_per_s,
        figures.processing_ms.map_or("-".into(), |spread| format!("{:.1}", spread.p50)),
        figures.delay_ms.map_or("-".into(), |spread| format!("{:.1}", spread.p99)),
        if figures.stable { "stable".to_string() } else { format!("unstable ({})", figures.unstable_because.clone().unwrap_or_default()) },
        per_record(cpu.sleet)
    );
    Ok(RunResult { json, verdict, figures, records_per_s })
}

struct CpuFigures {
    sleet: f64,
    broker: Option<f64>,
    /// The ingest server's, over every process of it the run started.
    ingest: Option<f64>,
}

/// What the run learned about its ingest server: its own figures (the last process's) and,
/// after a kill, what the topic holds.
#[derive(Default)]
struct IngestFigures {
    stats: Option<serde_json::Value>,
    census: Option<Census>,
    restarts: u32,
}

fn start_cluster(config: &RunConfig, run_dir: &Path) -> Result<LocalCluster> {
    LocalCluster::start_limited(
        config.workers,
        config.cores_per_worker,
        &run_dir.join("logs"),
        &Default::default(),
        Default::default(),
    )
}

fn settings(config: &RunConfig, duration_ms: Option<u64>, start_ms: Option<i64>) -> JobSettings {
    JobSettings {
        batch_interval_ms: config.batch_interval_ms,
        duration_ms,
        start_ms,
        checkpoint_interval_ms: config.checkpoint_interval_ms,
        ..JobSettings::default()
    }
}

/// The cluster, shared with the task that kills (and restarts) one of its processes.
type SharedCluster = Arc<std::sync::Mutex<LocalCluster>>;

fn locked(cluster: &SharedCluster) -> std::sync::MutexGuard<'_, LocalCluster> {
    // A panic while holding it would already have failed the run; the cluster is still
    // there to be shut down.
    cluster.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// SIGKILLs the run's victim `at` after `started`, if the config names one. A killed ingest
/// server is started again on the same address, as a supervisor would; returns the CPU
/// seconds the killed process had used.
fn schedule_kill(
    config: &RunConfig,
    cluster: &SharedCluster,
    ingest: Option<IngestSpec>,
    started: Instant,
) -> Option<tokio::task::JoinHandle<Result<f64>>> {
    let (victim, at) = config.kill?;
    let cluster = Arc::clone(cluster);
    Some(tokio::spawn(async move {
        tokio::time::sleep(at.saturating_sub(started.elapsed())).await;
        let pid = match victim {
            Victim::Worker => locked(&cluster).worker_pids().last().copied(),
            Victim::Ingest => locked(&cluster).ingest_pid(),
        }
        .with_context(|| format!("no {victim:?} process to kill"))?;
        let used = cpu_seconds(pid).unwrap_or(0.0);
        eprintln!("  SIGKILL to the {victim:?} (pid {pid}) {:.1} s into the run", started.elapsed().as_secs_f64());
        match victim {
            Victim::Worker => sleet_cli::cluster::signal_worker(pid, libc::SIGKILL)?,
            Victim::Ingest => locked(&cluster).signal_ingest(libc::SIGKILL)?,
        }
        if let (Victim::Ingest, Some(spec)) = (victim, ingest) {
            // Reaped first: the cluster starts one ingest server at a time.
            let deadline = Instant::now() + Duration::from_secs(10);
            while locked(&cluster).ingest_running() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // It waits for the new server's address, up to 15 s.
            let address = tokio::task::block_in_place(|| locked(&cluster).start_ingest(&spec))?;
            eprintln!("  the ingest server serves again on {address}");
        }
        Ok(used)
    }))
}

async fn run_builtin(
    config: &RunConfig,
    run_dir: &Path,
    sink: SinkSpec,
) -> Result<(sleet_wire::JobSummary, Delivered, CpuFigures, IngestFigures)> {
    let start_ms = (sleet_wire::clock::now_ms() + 3_000) / 100 * 100;
    let speedup = config.speedup();
    let spec = GatewaySourceSpec {
        seed: config.seed,
        gateways: config.gateways,
        partitions: config.partitions,
        encoding: config.encoding,
        format: config.format,
        start_ms,
        stop_ms: Some(start_ms + config.duration.as_millis() as i64 * speedup as i64),
        speedup,
        report_interval_ms: REPORT_INTERVAL_MS,
        jitter_ms: sleet_plan::gateway::default_jitter_ms(),
        late_fraction: sleet_plan::gateway::default_late_fraction(),
        max_delay_ms: sleet_plan::gateway::default_max_delay_ms(),
    };
    let drained_ms = spec.drained_ms().context("the gateways stop")?;
    // Every reading is delivered by the drain; a second more lets the last batches finish.
    let duration_ms = (spec.wall_ms(drained_ms) - start_ms + 1_000) as u64;
    let duration_ms = duration_ms.div_ceil(config.batch_interval_ms) * config.batch_interval_ms;
    let plan = gateway_plan(SourceSpec::Gateway(spec.clone()), &config.job(), sink)?;
    let job = JobFile { plan, settings: settings(config, Some(duration_ms), Some(start_ms)), query: None };
    let cluster = Arc::new(std::sync::Mutex::new(start_cluster(config, run_dir)?));
    let (address, pids) = {
        let cluster = locked(&cluster);
        (cluster.driver_address.clone(), cluster.pids())
    };
    let sleet_before = total_cpu_seconds(&pids);
    let started = Instant::now();
    let kill = schedule_kill(config, &cluster, None, started);
    let summary = run_job(
        &address,
        job,
        |progress| eprintln!("{}", status_line(started.elapsed(), progress)),
        crate::interrupt::wait(),
    )
    .await;
    let sleet = total_cpu_seconds(&locked(&cluster).pids()) - sleet_before;
    finish_kill(kill).await?;
    shut_down(cluster).await;
    crate::interrupt::check()?;
    let summary = summary?;
    let delivered = Delivered {
        records: summary.events_in,
        range: (spec.start_ms, drained_ms + 1),
        elapsed_s: config.duration.as_secs_f64(),
        spec,
        producer_cpu_s: None,
    };
    Ok((summary, delivered, CpuFigures { sleet, broker: None, ingest: None }, IngestFigures::default()))
}

/// Waits for a kill task that has fired, or stops one that has not.
async fn finish_kill(kill: Option<tokio::task::JoinHandle<Result<f64>>>) -> Result<Option<f64>> {
    let Some(kill) = kill else { return Ok(None) };
    if !kill.is_finished() {
        kill.abort();
        // Awaited, so that its handle on the cluster is gone.
        let _ = kill.await;
        return Ok(None);
    }
    Ok(Some(kill.await??))
}

async fn shut_down(cluster: SharedCluster) {
    match Arc::try_unwrap(cluster) {
        Ok(cluster) => cluster.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).shutdown().await,
        // Dropping the last handle stops every child by its PID.
        Err(shared) => drop(shared),
    }
}

async fn run_kafka(
    config: &RunConfig,
    run_dir: &Path,
    sink: SinkSpec,
) -> Result<(sleet_wire::JobSummary, Delivered, CpuFigures, IngestFigures)> {
    let topic = format!("sleet-bench-gateway-{}-{}", std::process::id(), sleet_wire::clock::now_ms());
    let (name, partitions) = (topic.clone(), config.partitions);
    on_brokers(&config.brokers, move |cluster| ensure_topic(cluster, &name, partitions)).await.with_context(|| {
        format!(
            "creating a topic of this run on {} (is a broker running? `scripts/kafka.sh start` starts one)",
            config.brokers
        )
    })?;
    let outcome = run_kafka_topic(config, run_dir, sink, &topic).await;
    let name = topic.clone();
    if let Err(error) = on_brokers(&config.brokers, move |cluster| delete_topic(cluster, &name)).await {
        eprintln!("  note: the topic {topic} was not deleted: {error:#}");
    }
    outcome
}

/// The ingest server's flags for this run's topic: the schema written beside the run.
fn ingest_spec(config: &RunConfig, run_dir: &Path, topic: &str) -> Result<IngestSpec> {
    let (format, schema, text) = match config.format {
        GatewayFormat::Json => (
            IngestFormat::Json,
            run_dir.join("gateway-schema.json"),
            serde_json::to_string_pretty(&sleet_connectors::gateway::record_schema())?,
        ),
        GatewayFormat::Avro => {
            (IngestFormat::Avro, run_dir.join("gateway.avsc"), sleet_avro::GATEWAY_SCHEMA.to_string())
        }
    };
    std::fs::write(&schema, text).with_context(|| format!("writing {}", schema.display()))?;
    Ok(IngestSpec {
        listen: "127.0.0.1:0".into(),
        brokers: config.brokers.clone(),
        topic: topic.to_string(),
        format,
        schema,
        key: "gateway_id".into(),
        extra_args: vec!["--partitions".into(), config.partitions.to_string()],
    })
}

async fn run_kafka_topic(
    config: &RunConfig,
    run_dir: &Path,
    sink: SinkSpec,
    topic: &str,
) -> Result<(sleet_wire::JobSummary, Delivered, CpuFigures, IngestFigures)> {
    let source = SourceSpec::Kafka(KafkaSourceSpec::new(&config.brokers, topic, KafkaStart::Earliest));
    let plan = gateway_plan(source, &config.job(), sink)?;
    let duration_ms = (config.duration + LIVE_TAIL_MAX).as_millis() as u64;
    let job = JobFile { plan, settings: settings(config, Some(duration_ms), None), query: None };

    let broker_port: u16 = config.brokers.rsplit(':').next().and_then(|port| port.parse().ok()).unwrap_or(9092);
    let broker_pid = find_kafka_broker(broker_port);
    let broker_cpu = || broker_pid.and_then(cpu_seconds);
    let mut cluster = start_cluster(config, run_dir)?;
    // Through the ingest server, the generator sends to it; the restart after a kill takes
    // the same address, so that the generator's retries find it.
    let ingest = match config.feed {
        Feed::Http | Feed::Ws => {
            let mut spec = ingest_spec(config, run_dir, topic)?;
            let address = cluster.start_ingest(&spec)?;
            spec.listen = address.clone();
            Some((spec, address))
        }
        Feed::Kafka | Feed::Builtin => None,
    };
    let (address, pids) = (cluster.driver_address.clone(), cluster.pids());
    let sleet_before = total_cpu_seconds(&pids);
    let broker_before = broker_cpu();
    let producer =
        ProducerProcess::<Produced>::start(&producer_args(config, topic, ingest.as_ref().map(|(_, a)| a.as_str())))?;
    let started = Instant::now();
    let cluster = Arc::new(std::sync::Mutex::new(cluster));
    let kill = schedule_kill(config, &cluster, ingest.as_ref().map(|(spec, _)| spec.clone()), started);
    let mut read_all = ReadAll::new(None);
    let producer_task = read_all.follow(producer, |produced: &Produced| produced.records);
    // After an ingest kill the topic may hold some records twice, so reading as many as were
    // sent is not the end: the job then runs to its duration.
    let ends_when_all_read = !matches!(config.kill, Some((Victim::Ingest, _)));
    let stopped = read_all.stopped();
    let summary = run_job(
        &address,
        job,
        |progress| {
            eprintln!("{}", status_line(started.elapsed(), progress));
            if ends_when_all_read {
                read_all.observe(progress.events_in);
            }
        },
        stopped,
    )
    .await;
    let sleet = total_cpu_seconds(&locked(&cluster).pids()) - sleet_before;
    let broker = broker_cpu().zip(broker_before).map(|(after, before)| after - before);
    let killed_ingest_cpu = finish_kill(kill).await?.filter(|_| matches!(config.kill, Some((Victim::Ingest, _))));
    let mut figures = IngestFigures { restarts: u32::from(killed_ingest_cpu.is_some()), ..IngestFigures::default() };
    let ingest_cpu = match &ingest {
        Some(_) => {
            let pid = locked(&cluster).ingest_pid();
            let last = pid.and_then(cpu_seconds);
            let stop = locked(&cluster).stop_ingest(Duration::from_secs(10));
            figures.stats = last_stats(&run_dir.join("logs").join("ingest.out"));
            match stop {
                Err(error) => eprintln!("  note: the ingest server did not stop cleanly: {error:#}"),
                Ok(status) if figures.stats.is_none() => eprintln!(
                    "  note: the ingest server ({}) left no figures; the end of its log:\n{}",
                    status.map_or("not running".to_string(), |status| status.to_string()),
                    log_tail(&run_dir.join("logs").join("ingest.log"), 8)
                ),
                Ok(_) => {}
            }
            Some(last.unwrap_or(0.0) + killed_ingest_cpu.unwrap_or(0.0))
        }
        None => None,
    };
    shut_down(cluster).await;
    crate::interrupt::check()?;
    let summary = summary?;
    let run = producer_task.await??;
    let produced = run.produced;
    anyhow::ensure!(
        summary.events_in >= produced.records,
        "the job read {} records of the {} written before it stopped",
        summary.events_in,
        produced.records
    );
    if figures.restarts > 0 {
        let (brokers, name) = (config.brokers.clone(), topic.to_string());
        figures.census = Some(tokio::task::spawn_blocking(move || take_census(&brokers, &name)).await??);
    }
    let delivered = Delivered {
        range: (produced.delivered_start_ms, produced.delivered_end_ms),
        records: produced.records,
        elapsed_s: produced.elapsed_s,
        spec: produced.spec,
        producer_cpu_s: run.cpu_seconds,
    };
    Ok((summary, delivered, CpuFigures { sleet, broker, ingest: ingest_cpu }, figures))
}

/// The end of a child's log, or from its first panic on when it panicked (the backtrace after
/// it says less than the message).
fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| format!("({}: {error})", path.display()));
    let all: Vec<&str> = text.lines().collect();
    let from = all.iter().position(|line| line.contains("panicked at")).unwrap_or(all.len().saturating_sub(lines));
    all[from..].iter().take(lines).map(|line| format!("    {line}")).collect::<Vec<_>>().join("\n")
}

/// The ingest server's final figures: the `{"stats": …}` line it prints as it exits.
fn last_stats(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().find_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()?.get("stats").cloned())
}

fn producer_args(config: &RunConfig, topic: &str, ingest_address: Option<&str>) -> Vec<String> {
    let to = match config.feed {
        Feed::Http => "http",
        Feed::Ws => "ws",
        Feed::Kafka | Feed::Builtin => "kafka",
    };
    let mut args: Vec<String> = ["gen", "gateway", "--to", to].map(String::from).into();
    for (flag, value) in [
        ("--brokers", config.brokers.clone()),
        ("--topic", topic.to_string()),
        ("--partitions", config.partitions.to_string()),
        ("--format", config.format.as_str().to_string()),
        ("--encoding", config.encoding.as_str().to_string()),
        ("--gateways", config.gateways.to_string()),
        ("--speedup", config.speedup().to_string()),
        ("--duration", format!("{}ms", config.duration.as_millis())),
        ("--seed", config.seed.to_string()),
        ("--batch", config.request_records.to_string()),
        ("--in-flight", config.in_flight.to_string()),
        // A killed ingest server is back within a second or two; the backoff (50 ms doubling
        // to 2 s) spends about 10 s in 10 retries.
        ("--retries", "10".to_string()),
    ] {
        args.extend([flag.to_string(), value]);
    }
    if let Some(address) = ingest_address {
        args.extend(["--address".to_string(), address.to_string()]);
    }
    args
}
