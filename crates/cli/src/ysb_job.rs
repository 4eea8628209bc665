//! The Yahoo Streaming Benchmark query as a sleet plan (WORKLOADS §1).

use sleet_plan::{
    col, lit, Aggregate, DataType, Field, JobFile, JobSettings, PlanBuilder, Schema, SinkSpec, SourceSpec, TableSpec,
    WindowSpec, YsbSourceSpec,
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
}

pub fn ysb_source_spec(options: &YsbOptions) -> YsbSourceSpec {
    YsbSourceSpec {
        seed: options.seed,
        rate_per_s: options.rate_per_s,
        partitions: options.source_partitions,
        bad_fraction: options.bad_fraction,
    }
}

pub fn ysb_event_schema() -> Schema {
    let utf8 = |name: &str| Field::new(name, DataType::Utf8);
    Schema::new(vec![
        utf8("user_id"),
        utf8("page_id"),
        utf8("ad_id"),
        utf8("ad_type"),
        utf8("event_type"),
        Field::new("event_time", DataType::Int64),
        utf8("ip_address"),
    ])
}

pub fn ysb_job(options: &YsbOptions) -> anyhow::Result<JobFile> {
    let plan = PlanBuilder::source("ysb", SourceSpec::Ysb(ysb_source_spec(options)))
        .decode_json_with_limit(ysb_event_schema(), YSB_RECORD_BYTES_MAX)
        .filter(col("event_type").eq(lit("view")))
        .project([col("ad_id"), col("event_time")])
        .lookup("ad_id", TableSpec::YsbCampaigns { seed: options.seed }, "ad_id", ["campaign_id"])
        .exchange(["campaign_id"], options.reduce_partitions)
        .window_aggregate(
            WindowSpec {
                time_column: "event_time".into(),
                size_ms: sleet_connectors::ysb::WINDOW_MS,
                allowed_lateness_ms: 0,
            },
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
    options.scheduling.apply(&mut settings);
    settings.validate()?;
    Ok(JobFile { plan, settings })
}
