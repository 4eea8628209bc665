//! The home-gateway job: each gateway's readings turned into traffic (in the map stage, as the
//! source keeps a gateway in one partition), every (day, gateway)'s total, and each day's
//! ranking of gateways by it. One builder for every test and tool that runs the job.

use sleet_plan::{
    col, lit, Aggregate, GatewayFormat, IncrementsSpec, KeyedAggregateSpec, LatePolicy, Plan, PlanBuilder, PlanError,
    ReadingEncoding, SinkSpec, SourceSpec, TopKSpec,
};

pub const DAY_MS: i64 = 86_400_000;

/// What may differ between runs of the job.
#[derive(Debug, Clone, Copy)]
pub struct GatewayJob {
    pub encoding: ReadingEncoding,
    /// How the source's records are written: decoded by `decode_json` or `decode_avro`.
    pub format: GatewayFormat,
    /// How far behind its gateway's newest reading a reading may arrive and still count.
    pub allowed_lateness_ms: i64,
    /// Event time after which a silent gateway, and a day no reading touches, is forgotten.
    pub ttl_ms: i64,
    /// Gateways ranked per day.
    pub top: u32,
    /// The bound on keys each stateful node holds.
    pub max_keys: u64,
    pub reduce_partitions: u32,
}

/// The plan over `source`, whose records are `sleet_connectors::gateway::record_schema()`
/// JSON or single-object Avro of `schemas/gateway.avsc` (held inline); its output rows are
/// `(day, rank, gateway_id, total)`.
pub fn gateway_plan(source: SourceSpec, job: &GatewayJob, sink: SinkSpec) -> Result<Plan, PlanError> {
    let builder = PlanBuilder::source("gateway", source);
    let decoded = match job.format {
        GatewayFormat::Json => builder.decode_json(sleet_connectors::gateway::record_schema()),
        GatewayFormat::Avro => builder
            .decode_avro(serde_json::from_str(sleet_avro::GATEWAY_SCHEMA).expect("the shipped gateway schema is JSON")),
    };
    decoded
        .increments(IncrementsSpec {
            keys: vec!["gateway_id".into()],
            time_column: "date".into(),
            encoding: job.encoding,
            columns: vec!["ipTx".into(), "ipRx".into()],
            late: LatePolicy::Fold,
            allowed_lateness_ms: job.allowed_lateness_ms,
            ttl_ms: job.ttl_ms,
            wrap_bits: 32,
            max_keys: job.max_keys,
        })
        .project_named([
            (col("gateway_id"), "gateway_id"),
            (col("date"), "date"),
            (col("date").divide(lit(DAY_MS)), "day"),
            (col("ipTx").add(col("ipRx")), "bytes"),
        ])
        .exchange(["day"], job.reduce_partitions)
        .keyed_aggregate(KeyedAggregateSpec {
            keys: vec!["day".into(), "gateway_id".into()],
            aggregates: vec![Aggregate::sum("bytes", "total")],
            time_column: "date".into(),
            ttl_ms: job.ttl_ms,
            max_keys: job.max_keys,
        })
        .top_k(TopKSpec {
            group: vec!["day".into()],
            keys: vec!["gateway_id".into()],
            order_by: "total".into(),
            k: job.top,
            ranking: sleet_plan::Ranking::RowNumber,
            time_column: "date".into(),
            ttl_ms: job.ttl_ms,
            max_keys: job.max_keys,
        })
        .sink(sink)
        .build()
}
