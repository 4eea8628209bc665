//! `sleet job gateway`: the flags that shape the home-gateway job and the job file they make,
//! on the built-in gateway generator or a Kafka topic that `sleet gen gateway` (or the ingest
//! server) filled, in JSON or Avro.

use std::time::Duration;

use anyhow::{ensure, Result};
use sleet_plan::{
    AvroSchemaSource, GatewayEncoding, GatewaySourceSpec, JobFile, JobSettings, KafkaSourceSpec, KafkaStart, Operator,
    SinkSpec, SourceSpec,
};

use crate::duration_arg;
use crate::gateway_job::{gateway_plan, GatewayJob, DAY_MS};
use crate::gen_gateway::{EncodingArg, FormatArg};

/// Where the job reads the gateways' records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GatewayInput {
    /// The built-in generator (`sleet_connectors::gateway`): no outside service.
    Builtin,
    /// A Kafka topic (`--brokers`, `--topic`), read from its earliest records.
    Kafka,
}

#[derive(Debug, Clone, clap::Args)]
pub struct GatewayJobArgs {
    #[arg(long, value_enum, default_value_t = EncodingArg::Cumulative)]
    pub encoding: EncodingArg,
    /// `json` or `avro` (single-object records of --schema).
    #[arg(long, value_enum, default_value_t = FormatArg::Json)]
    pub format: FormatArg,
    #[arg(long, value_enum, default_value_t = GatewayInput::Builtin)]
    pub source: GatewayInput,
    /// Kafka topic (with --source kafka).
    #[arg(long, default_value = "gateway")]
    pub topic: String,
    /// Kafka brokers, `host:port[,host:port…]` (with --source kafka).
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// The Avro schema the job file names (with --format avro): relative to where the job
    /// file is saved, as `sleet submit` reads it, or absolute.
    #[arg(long, default_value = "schemas/gateway.avsc")]
    pub schema: String,
    /// Source partitions of the built-in generator, and reduce partitions.
    #[arg(long, default_value_t = 2)]
    pub partitions: u32,
    /// Gateways the built-in generator simulates.
    #[arg(long, default_value_t = 200)]
    pub gateways: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated time runs this many times faster than the wall clock (built-in source).
    #[arg(long, default_value_t = 1)]
    pub speedup: u32,
    /// Share of readings the built-in generator delivers late.
    #[arg(long, default_value_t = sleet_plan::gateway::default_late_fraction())]
    pub late_fraction: f64,
    /// How late a reading may arrive (simulated time): the generator's bound, and the job's
    /// allowed lateness. A bare number is in seconds.
    #[arg(long, value_parser = duration_arg::seconds, default_value = "2m")]
    pub max_delay: Duration,
    /// How long the job runs (default: until stopped). On the built-in source the gateways
    /// stop reporting early enough that every reading is delivered within it, so the job's
    /// results can be checked against the generator's ground truth. A bare number is in
    /// seconds.
    #[arg(long, value_parser = duration_arg::seconds)]
    pub duration: Option<Duration>,
    /// When the first batch starts, in ms since the epoch (the generator's time 0 on the
    /// built-in source) [default: 5 s after the file is printed; a job submitted later
    /// catches up on the batches it missed].
    #[arg(long)]
    pub start_ms: Option<i64>,
    #[arg(long, value_parser = duration_arg::millis, default_value = "1s")]
    pub batch_interval: Duration,
    #[arg(long, value_parser = duration_arg::millis, default_value = "5s")]
    pub checkpoint_interval: Duration,
    /// Gateways ranked per day.
    #[arg(long, default_value_t = 10)]
    pub top: u32,
    /// The bound on the keys each stateful node holds; rows of further keys are refused
    /// and counted.
    #[arg(long, default_value_t = sleet_plan::state_spec::default_max_keys())]
    pub max_keys: u64,
    /// Directory the workers write the rankings to as JSON lines; `-` prints them on the
    /// workers' stdout instead. Made absolute here: the workers run elsewhere.
    #[arg(long, default_value = "sleet-results")]
    pub sink_dir: String,
    /// Directory the workers write bad records to (none: bad records are only counted).
    #[arg(long)]
    pub dead_letter_dir: Option<String>,
}

/// The job file `args` describe; `now_ms` places the default start.
pub fn gateway_job_file(args: &GatewayJobArgs, now_ms: i64) -> Result<JobFile> {
    ensure!(args.partitions >= 1, "--partitions must be at least 1");
    ensure!(args.gateways >= 1, "--gateways must be at least 1");
    ensure!(args.speedup >= 1, "--speedup must be at least 1");
    ensure!((0.0..=1.0).contains(&args.late_fraction), "--late-fraction must be in [0, 1]");
    let batch_interval_ms = args.batch_interval.as_millis() as i64;
    ensure!(batch_interval_ms >= 1, "--batch-interval must be at least 1ms");
    let start_ms = args.start_ms.unwrap_or_else(|| (now_ms + 5_000) / batch_interval_ms * batch_interval_ms);
    let max_delay_ms = args.max_delay.as_millis() as i64;
    let encoding = GatewayEncoding::from(args.encoding);
    let source = match args.source {
        GatewayInput::Builtin => SourceSpec::Gateway(GatewaySourceSpec {
            seed: args.seed,
            gateways: args.gateways,
            partitions: args.partitions,
            encoding,
            format: args.format.into(),
            start_ms,
            stop_ms: args.duration.map(|duration| builtin_stop_ms(args, start_ms, duration)).transpose()?,
            speedup: args.speedup,
            report_interval_ms: sleet_plan::gateway::default_report_interval_ms(),
            jitter_ms: sleet_plan::gateway::default_jitter_ms(),
            late_fraction: args.late_fraction,
            max_delay_ms,
        }),
        GatewayInput::Kafka => {
            SourceSpec::Kafka(KafkaSourceSpec::new(&args.brokers, &args.topic, KafkaStart::Earliest))
        }
    };
    let job = GatewayJob {
        encoding: encoding.into(),
        format: args.format.into(),
        allowed_lateness_ms: max_delay_ms,
        ttl_ms: 2 * DAY_MS,
        top: args.top,
        max_keys: args.max_keys,
        reduce_partitions: args.partitions,
    };
    let sink = match args.sink_dir.as_str() {
        "-" => SinkSpec::Stdout,
        dir => SinkSpec::JsonLines { dir: crate::absolute_dir(dir, "--sink-dir")? },
    };
    let mut plan = gateway_plan(source, &job, sink)?;
    // Validated with the shipped schema inline; the file names it, so a user may point it at
    // their own copy and `sleet submit` reads it.
    for node in &mut plan.nodes {
        if let Operator::DecodeAvro { schema, .. } = &mut node.operator {
            *schema = AvroSchemaSource::Path(args.schema.clone());
        }
    }
    Ok(JobFile {
        plan,
        settings: JobSettings {
            batch_interval_ms: batch_interval_ms as u64,
            duration_ms: args.duration.map(|duration| duration.as_millis() as u64),
            start_ms: Some(start_ms),
            checkpoint_interval_ms: args.checkpoint_interval.as_millis() as u64,
            dead_letter_dir: args
                .dead_letter_dir
                .as_deref()
                .map(|dir| crate::absolute_dir(dir, "--dead-letter-dir"))
                .transpose()?,
            ..JobSettings::default()
        },
        query: None,
    })
}

/// The simulated time the gateways stop at so that their last reading, delivered up to
/// `max_delay` late, arrives a second before the job's end.
fn builtin_stop_ms(args: &GatewayJobArgs, start_ms: i64, duration: Duration) -> Result<i64> {
    let delivered_by_ms = (duration.as_millis() as i64 - 1_000) * i64::from(args.speedup);
    let stop_ms = start_ms + delivered_by_ms - args.max_delay.as_millis() as i64;
    ensure!(
        stop_ms > start_ms,
        "--duration {} is too short: at --speedup {} the gateways' readings take --max-delay {} to arrive, plus a \
         second for the last batch",
        duration_arg::show(duration),
        args.speedup,
        duration_arg::show(args.max_delay)
    );
    Ok(stop_ms)
}
