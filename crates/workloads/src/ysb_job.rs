//! The Yahoo Streaming Benchmark query as a sleet plan (the workload `benchmarks/README.md`
//! describes).

use sleet_plan::{
    col, lit, Aggregate, FileSourceSpec, JobFile, JobSettings, KafkaSourceSpec, KafkaStart, PlanBuilder, SinkSpec,
    SourceSpec, TableSpec, WindowSpec, YsbSourceSpec,
};

use crate::scheduler_args::SchedulerArgs;

/// The ysb events' largest good record is about 300 bytes; anything past this is bad input.
pub const YSB_RECORD_BYTES_MAX: u32 = 4096;

#[derive(Debug, Clone)]
pub struct YsbOptions {
    pub seed: u64,
    pub rate_per_s: u64,
    pub source_partitions: u32,
    pub reduce_partitions: u32,
    pub bad_fraction: f64,
    pub batch_interval_ms: u64,
    pub duration_ms: Option<u64>,
    pub combine: bool,
    pub sink: SinkSpec,
    pub dead_letter_dir: Option<String>,
    pub scheduling: SchedulerArgs,
    /// Start of batch 0; default a moment after submission.
    pub start_ms: Option<i64>,
    /// Where the events come from: the built-in generator unless told otherwise.
    pub input: YsbInput,
    /// The ad → campaign table as a CSV file (`ad_id,campaign_id`) instead of the one the
    /// seed derives, for events someone else generated.
    pub campaigns: Option<String>,
    /// `None`: the job default.
    pub checkpoint_interval_ms: Option<u64>,
    /// The generator hands the map stage rows, not JSON (`YsbSourceSpec::pre_decoded`).
    pub pre_decoded: bool,
}

/// A window's rows from a source outside sleet may arrive behind the watermark: the
/// watermark follows the largest event time any partition has shown (as Spark's does), and
/// two Kafka partitions, or two files, are read at their own pace. Rows later than this are
/// dropped and counted (`late_rows_dropped`); the generator's partitions advance in step.
pub const OUTSIDE_SOURCE_LATENESS_MS: i64 = 30_000;

impl YsbInput {
    pub fn allowed_lateness_ms(&self) -> i64 {
        match self {
            YsbInput::Generator => 0,
            YsbInput::Kafka { .. } | YsbInput::Files { .. } => OUTSIDE_SOURCE_LATENESS_MS,
        }
    }
}

/// Where a ysb job reads its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum YsbInput {
    #[default]
    Generator,
    Kafka {
        brokers: String,
        topic: String,
        start: KafkaStart,
        max_records_per_batch: u32,
    },
    Files {
        path: String,
        max_records_per_batch: u32,
    },
}

pub fn ysb_source_spec(options: &YsbOptions) -> YsbSourceSpec {
    YsbSourceSpec {
        seed: options.seed,
        rate_per_s: options.rate_per_s,
        partitions: options.source_partitions,
        bad_fraction: options.bad_fraction,
        pre_decoded: options.pre_decoded,
    }
}

pub fn ysb_job(options: &YsbOptions) -> anyhow::Result<JobFile> {
    options.scheduling.check()?;
    anyhow::ensure!(options.batch_interval_ms >= 1, "--batch-interval must be at least 1ms");
    let source = match &options.input {
        YsbInput::Generator => SourceSpec::Ysb(ysb_source_spec(options)),
        YsbInput::Kafka { brokers, topic, start, max_records_per_batch } => SourceSpec::Kafka(KafkaSourceSpec {
            max_records_per_partition_per_batch: *max_records_per_batch,
            ..KafkaSourceSpec::new(brokers, topic, start.clone())
        }),
        YsbInput::Files { path, max_records_per_batch } => SourceSpec::Files(FileSourceSpec {
            path: path.clone(),
            max_records_per_partition_per_batch: *max_records_per_batch,
            partitions: 0,
            start_bytes: Vec::new(),
        }),
    };
    let campaigns = match &options.campaigns {
        Some(path) => TableSpec::Csv { path: path.clone(), columns: vec!["ad_id".into(), "campaign_id".into()] },
        None => TableSpec::YsbCampaigns { seed: options.seed },
    };
    let plan = PlanBuilder::source("ysb", source)
        .decode_json_with_limit(sleet_connectors::ysb::event_schema(), YSB_RECORD_BYTES_MAX)
        .filter(col("event_type").eq(lit("view")))
        .project([col("ad_id"), col("event_time")])
        .lookup("ad_id", campaigns, "ad_id", ["campaign_id"])
        .exchange(["campaign_id"], options.reduce_partitions)
        .window_aggregate(
            WindowSpec::tumbling("event_time", sleet_connectors::ysb::WINDOW_MS, options.input.allowed_lateness_ms()),
            ["campaign_id"],
            [Aggregate::count("count")],
        )
        .sink(options.sink.clone())
        .build()?;
    let mut settings = JobSettings {
        batch_interval_ms: options.batch_interval_ms,
        duration_ms: options.duration_ms,
        combine: options.combine,
        dead_letter_dir: options.dead_letter_dir.clone(),
        start_ms: options.start_ms,
        ..JobSettings::default()
    };
    if let Some(interval_ms) = options.checkpoint_interval_ms {
        settings.checkpoint_interval_ms = interval_ms;
    }
    options.scheduling.apply(&mut settings);
    settings.validate()?;
    Ok(JobFile { plan, settings, query: None })
}

/// The ysb results as Kafka records keyed by campaign and window.
pub fn kafka_sink(brokers: &str, topic: &str) -> SinkSpec {
    SinkSpec::Kafka {
        brokers: brokers.to_string(),
        topic: topic.to_string(),
        key_columns: vec!["campaign_id".into(), "window_start".into()],
    }
}

/// Input events per second when a command is not told otherwise: the same for `demo`,
/// `job ysb` and `bench ysb`, a rate every machine this runs on keeps up with.
pub const DEFAULT_RATE: u64 = 200_000;

/// The flags of every command that runs the ysb query.
#[derive(Debug, Clone, clap::Args)]
pub struct YsbFlags {
    /// Input events per second, over all source partitions.
    #[arg(long, default_value_t = DEFAULT_RATE)]
    pub rate: u64,
    /// Length of a batch: 10ms, 1s, …; a bare number is in milliseconds.
    #[arg(long, value_parser = crate::duration_arg::millis, default_value = "100ms")]
    pub batch_interval: std::time::Duration,
    /// Seed of the generator and of the campaigns table.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub scheduling: SchedulerArgs,
    /// How often stateful partitions checkpoint their state; 0 turns checkpoints off (a lost
    /// worker then replays the job from batch 0, and workers joining wait for the next job);
    /// a bare number is in milliseconds [default: 1s].
    #[arg(long, value_parser = crate::duration_arg::millis)]
    pub checkpoint_interval: Option<std::time::Duration>,
}

impl YsbFlags {
    pub fn batch_interval_ms(&self) -> u64 {
        self.batch_interval.as_millis() as u64
    }

    /// The checkpoint interval the job runs with, for a result's config (0: off).
    pub fn checkpoint_interval_ms(&self) -> u64 {
        self.checkpoint_interval
            .map_or(sleet_plan::JobSettings::default().checkpoint_interval_ms, |interval| interval.as_millis() as u64)
    }

    /// The one place a command's flags become a ysb job's options; commands then change only
    /// what is theirs (bad records, combine, start).
    pub fn options(&self, partitions: u32, duration: Option<std::time::Duration>, sink: SinkSpec) -> YsbOptions {
        YsbOptions {
            seed: self.seed,
            rate_per_s: self.rate,
            source_partitions: partitions,
            reduce_partitions: partitions,
            bad_fraction: 0.0,
            batch_interval_ms: self.batch_interval_ms(),
            duration_ms: duration.map(|duration| duration.as_millis() as u64),
            combine: true,
            sink,
            dead_letter_dir: None,
            scheduling: self.scheduling.clone(),
            start_ms: None,
            input: YsbInput::Generator,
            campaigns: None,
            checkpoint_interval_ms: self.checkpoint_interval.map(|interval| interval.as_millis() as u64),
            pre_decoded: false,
        }
    }
}
