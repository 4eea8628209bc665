//! Logical plan nodes. A plan is a pipeline: each node consumes the rows of the one before.
//!
//! Stream–static joins (`Lookup`) read a broadcast table rather than a second stream, and a
//! window join of two streams reads both from one source (`WindowJoin`: a column says which
//! side a row is on), so a linear pipeline is enough for every workload sleet runs today.

use serde::{Deserialize, Serialize};

use crate::avro::AvroSchemaSource;
use crate::expr::Expr;
use crate::gateway::GatewaySourceSpec;
use crate::nexmark::NexmarkSourceSpec;
use crate::schema::{DataType, Field, Schema};
use crate::state_spec::{IncrementsSpec, KeyedAggregateSpec, TopKSpec, TopRowsSpec};
use crate::window_join::WindowJoinSpec;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub operator: Operator,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Reads raw records; its output has one `value: binary` column.
    Source {
        spec: SourceSpec,
    },
    /// Parses each raw record as JSON into `schema`. Records that do not parse or do not fit
    /// go to the dead-letter output with a reason.
    DecodeJson {
        schema: Schema,
        #[serde(default = "default_max_record_bytes")]
        max_record_bytes: u32,
    },
    /// Reads each raw record as an Avro single-object encoded datum of `schema` (the `.avsc`
    /// JSON, or a path to it that `sleet submit` reads), into the columns `decode_json` would
    /// give for the equivalent schema. A record of another schema, or one that does not
    /// decode, goes to the dead-letter output with a reason.
    DecodeAvro {
        schema: AvroSchemaSource,
        #[serde(default = "default_max_record_bytes")]
        max_record_bytes: u32,
    },
    Filter {
        predicate: Expr,
    },
    /// Each output column is an expression with a name.
    Project {
        columns: Vec<(Expr, String)>,
    },
    /// Inner join of each row with the broadcast `table` on `key` = the table's `table_key`,
    /// appending the table's `columns`.
    Lookup {
        key: String,
        table: TableSpec,
        table_key: String,
        columns: Vec<String>,
    },
    /// Hash-partitions rows on `keys` into `partitions` reduce partitions.
    Exchange {
        keys: Vec<String>,
        partitions: u32,
    },
    WindowAggregate {
        window: WindowSpec,
        keys: Vec<String>,
        aggregates: Vec<Aggregate>,
    },
    /// Per key, turns readings (counters, cumulative counters or rates) into the increment
    /// each reading adds, in event-time order across batches; late readings fold in with a
    /// correction row (`IncrementsSpec`).
    Increments(IncrementsSpec),
    /// Running aggregates per key across batches; each batch emits the keys it changed.
    KeyedAggregate(KeyedAggregateSpec),
    /// Per group, the `k` keys with the largest value, emitted for every group that changed.
    TopK(TopKSpec),
    /// Per group (a window), the rows ranked `k` or better by a value, all their columns and
    /// a rank, emitted for every group that changed.
    TopRows(TopRowsSpec),
    /// Pairs the rows of two sides (one stream, told apart by a column) that share a tumbling
    /// window and a key: `window_start`, `window_end`, the left's columns, the right's.
    WindowJoin(WindowJoinSpec),
    Sink {
        spec: SinkSpec,
    },
}

pub fn default_max_record_bytes() -> u32 {
    16 * 1024
}

impl Operator {
    pub fn kind(&self) -> &'static str {
        match self {
            Operator::Source { .. } => "source",
            Operator::DecodeJson { .. } => "decode_json",
            Operator::DecodeAvro { .. } => "decode_avro",
            Operator::Filter { .. } => "filter",
            Operator::Project { .. } => "project",
            Operator::Lookup { .. } => "lookup",
            Operator::Exchange { .. } => "exchange",
            Operator::WindowAggregate { .. } => "window_aggregate",
            Operator::Increments(_) => "increments",
            Operator::KeyedAggregate(_) => "keyed_aggregate",
            Operator::TopK(_) => "top_k",
            Operator::TopRows(_) => "top_rows",
            Operator::WindowJoin(_) => "window_join",
            Operator::Sink { .. } => "sink",
        }
    }
}

/// Event-time windows over `time_column` (int64 ms). The fields given say the kind: `size_ms`
/// alone a tumbling window, `size_ms` and `slide_ms` a hopping one, `gap_ms` alone a session
/// (`WindowSpec::kind`). The optional fields are left out of the JSON when unset, so a
/// tumbling window reads and writes the JSON it always has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSpec {
    pub time_column: String,
    /// A tumbling or hopping window's length; 0 (left out) for a session window.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub size_ms: i64,
    /// A hopping window starts every `slide_ms`; `size_ms` is a whole multiple of it, so a row
    /// is in `size_ms / slide_ms` windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide_ms: Option<i64>,
    /// A session window: a key's session ends once no row of that key comes within `gap_ms`
    /// of its last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_ms: Option<i64>,
    /// A window closes, and its state is dropped, once the watermark passes its end: this
    /// lateness behind the least progress of the source partitions feeding the window (its
    /// own largest event time seen when no shuffle reports that progress). Later rows for it
    /// are dropped and counted.
    pub allowed_lateness_ms: i64,
    /// When a tumbling or hopping window's rows are emitted (a session's are emitted once, as
    /// it closes, either way). Left out of the JSON when `updates`.
    #[serde(default, skip_serializing_if = "WindowEmit::is_updates")]
    pub emit: WindowEmit,
}

/// When a window aggregate emits a (window, key) row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowEmit {
    /// In every batch that changed it, with its value so far: a reader sees a window fill
    /// in, and its last row is the final one.
    #[default]
    Updates,
    /// Once, in the batch whose watermark closes the window, with its final value: an
    /// append-only stream, which a ranking of windows (`top_rows`) keeps `k` rows of instead
    /// of every key's latest value.
    OnClose,
}

impl WindowEmit {
    pub fn is_updates(&self) -> bool {
        *self == WindowEmit::Updates
    }
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// What a `WindowSpec`'s fields describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    Tumbling { size_ms: i64 },
    Hopping { size_ms: i64, slide_ms: i64 },
    Session { gap_ms: i64 },
}

impl WindowSpec {
    pub fn tumbling(time_column: impl Into<String>, size_ms: i64, allowed_lateness_ms: i64) -> Self {
        WindowSpec {
            time_column: time_column.into(),
            size_ms,
            slide_ms: None,
            gap_ms: None,
            allowed_lateness_ms,
            emit: WindowEmit::Updates,
        }
    }

    pub fn hopping(time_column: impl Into<String>, size_ms: i64, slide_ms: i64, allowed_lateness_ms: i64) -> Self {
        WindowSpec { slide_ms: Some(slide_ms), ..WindowSpec::tumbling(time_column, size_ms, allowed_lateness_ms) }
    }

    pub fn session(time_column: impl Into<String>, gap_ms: i64, allowed_lateness_ms: i64) -> Self {
        WindowSpec { gap_ms: Some(gap_ms), ..WindowSpec::tumbling(time_column, 0, allowed_lateness_ms) }
    }

    /// The kind the fields describe. A `gap_ms` makes a session whatever else is set; the
    /// validator refuses a spec that mixes kinds, so only an unvalidated one is read that way.
    pub fn kind(&self) -> WindowKind {
        match (self.gap_ms, self.slide_ms) {
            (Some(gap_ms), _) => WindowKind::Session { gap_ms },
            (None, Some(slide_ms)) => WindowKind::Hopping { size_ms: self.size_ms, slide_ms },
            (None, None) => WindowKind::Tumbling { size_ms: self.size_ms },
        }
    }

    /// The same window, its rows emitted once as it closes.
    pub fn emitted_on_close(self) -> Self {
        WindowSpec { emit: WindowEmit::OnClose, ..self }
    }

    /// Whether its output has a `window_end` column: every kind but tumbling, whose output
    /// predates the others and stays as it was.
    pub fn has_end_column(&self) -> bool {
        !matches!(self.kind(), WindowKind::Tumbling { .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    /// The mean of the non-null values, float64 (null when there are none). Window aggregates
    /// only.
    Avg,
    /// How many distinct non-null values, int64. Window aggregates only; floats are told apart
    /// by their bits (`0.0` and `-0.0` are two values).
    CountDistinct,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregate {
    pub func: AggFunc,
    /// The column aggregated; `None` only for `count`, which counts rows.
    pub column: Option<String>,
    pub name: String,
}

impl Aggregate {
    pub fn count(name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::Count, column: None, name: name.into() }
    }
    pub fn sum(column: impl Into<String>, name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::Sum, column: Some(column.into()), name: name.into() }
    }
    pub fn min(column: impl Into<String>, name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::Min, column: Some(column.into()), name: name.into() }
    }
    pub fn max(column: impl Into<String>, name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::Max, column: Some(column.into()), name: name.into() }
    }
    pub fn avg(column: impl Into<String>, name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::Avg, column: Some(column.into()), name: name.into() }
    }
    pub fn count_distinct(column: impl Into<String>, name: impl Into<String>) -> Self {
        Aggregate { func: AggFunc::CountDistinct, column: Some(column.into()), name: name.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SourceSpec {
    Ysb(YsbSourceSpec),
    Numbers(NumbersSourceSpec),
    Kafka(KafkaSourceSpec),
    Files(FileSourceSpec),
    Gateway(GatewaySourceSpec),
    Nexmark(NexmarkSourceSpec),
}

impl SourceSpec {
    /// Whether a partition's batches must be read in batch order: a Kafka or file partition
    /// is read front to back (batch b + 1 starts where b ended), while a generator makes a
    /// batch from its number alone, so its batches may run in any order.
    pub fn reads_in_order(&self) -> bool {
        match self {
            SourceSpec::Kafka(_) | SourceSpec::Files(_) => true,
            SourceSpec::Ysb(_) | SourceSpec::Numbers(_) | SourceSpec::Gateway(_) | SourceSpec::Nexmark(_) => false,
        }
    }

    /// The instant a generator's event time starts at, for those that simulate time from a
    /// given start: a job on one should start its batches there, or it misses the first
    /// events. Sources that read real time or stored records have none.
    pub fn event_time_start_ms(&self) -> Option<i64> {
        match self {
            SourceSpec::Gateway(spec) => Some(spec.start_ms),
            SourceSpec::Nexmark(spec) => Some(spec.start_ms),
            SourceSpec::Ysb(_) | SourceSpec::Numbers(_) | SourceSpec::Kafka(_) | SourceSpec::Files(_) => None,
        }
    }

    pub fn partitions(&self) -> u32 {
        match self {
            SourceSpec::Ysb(spec) => spec.partitions,
            SourceSpec::Numbers(spec) => spec.partitions,
            SourceSpec::Kafka(spec) => spec.partitions,
            SourceSpec::Files(spec) => spec.partitions,
            SourceSpec::Gateway(spec) => spec.partitions,
            SourceSpec::Nexmark(spec) => spec.partitions,
        }
    }
}

/// A Kafka topic read directly: one source partition per topic partition, each batch an
/// offset range that the worker owning the partition chooses when the batch closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KafkaSourceSpec {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    pub topic: String,
    #[serde(default)]
    pub start: KafkaStart,
    /// At most this many records per partition in one batch: a backlog is worked off in
    /// batches of bounded size rather than one huge one.
    #[serde(default = "default_max_records_per_batch")]
    pub max_records_per_partition_per_batch: u32,
    #[serde(default)]
    pub event_time: EventTimeSource,
    /// Only records of committed transactions (and non-transactional ones); `false` reads
    /// aborted ones too.
    #[serde(default = "default_true")]
    pub read_committed: bool,
    /// The topic's partition count. Left out (0), it is looked up when the job is submitted;
    /// given, it is checked then, and a topic that has a different count is refused.
    #[serde(default)]
    pub partitions: u32,
    /// Set by the driver for an attempt that resumes after a failure: batches that must end
    /// where their first run ended, so a re-run reads exactly what the first run read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replay: Vec<ReplayedBatches>,
}

impl KafkaSourceSpec {
    /// `topic` on `brokers` from `start`, with what a job file leaves out: the default bound
    /// per batch, event time from a record field, committed records only, the partition
    /// count looked up at submission.
    pub fn new(brokers: &str, topic: &str, start: KafkaStart) -> KafkaSourceSpec {
        KafkaSourceSpec {
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            start,
            max_records_per_partition_per_batch: default_max_records_per_batch(),
            event_time: EventTimeSource::Field,
            read_committed: true,
            partitions: 0,
            replay: Vec::new(),
        }
    }
}

/// The batches of one partition a resumed attempt re-reads, in batch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedBatches {
    pub partition: u32,
    /// `(batch end, ms since the epoch; the offset the batch's read ended at)`.
    pub ends: Vec<(i64, i64)>,
}

/// Where a Kafka source starts reading each partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KafkaStart {
    Earliest,
    #[default]
    Latest,
    /// The first record with a timestamp at or after this (ms since the epoch).
    Timestamp(i64),
    /// One offset per partition.
    Offsets(Vec<i64>),
}

/// Where a record's event time comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventTimeSource {
    /// A field of the record, named by the window that uses it.
    #[default]
    Field,
    /// The Kafka record's timestamp, as this field of each decoded record (declared int64 in
    /// the decoder's schema). It is not written into the JSON text: a record that also has a
    /// field of that name holds it twice, and is refused as any duplicate is.
    RecordTimestamp(String),
}

/// JSON-lines files: one source partition per file (a directory's `*.jsonl` and `*.json`
/// files in name order, or one file), read front to back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSourceSpec {
    pub path: String,
    #[serde(default = "default_max_records_per_batch")]
    pub max_records_per_partition_per_batch: u32,
    /// The number of files; looked up (0) or checked when the job is submitted.
    #[serde(default)]
    pub partitions: u32,
    /// Where each file's reading starts, a byte offset at a line start (a job resumed from a
    /// checkpoint); empty: every file from its beginning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_bytes: Vec<u64>,
}

pub fn default_max_records_per_batch() -> u32 {
    100_000
}

fn default_true() -> bool {
    true
}

/// The part of a source one batch of one partition read, as the batch log records it:
/// replaying the batch reads exactly this again. The worker that owns the partition
/// chooses it when the batch closes; the driver only records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceRange {
    /// A generator's events of `[start_ms, end_ms)`.
    Time { start_ms: i64, end_ms: i64 },
    /// A Kafka partition's offsets `[start, end)`: a position, not a count of records
    /// (transaction markers and compaction leave gaps).
    Offsets { start: i64, end: i64 },
    /// A file's bytes `[start, end)`, whole lines.
    Bytes { start: u64, end: u64 },
}

/// The Yahoo Streaming Benchmark generator: a pure function of
/// `(seed, partition, time range)`, emitting `rate_per_s` events per second in total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YsbSourceSpec {
    pub seed: u64,
    pub rate_per_s: u64,
    pub partitions: u32,
    /// Share of records replaced by malformed, mistyped or oversized ones.
    #[serde(default)]
    pub bad_fraction: f64,
    /// Hand the map stage rows instead of JSON, as a store of already-decoded events would:
    /// the plan's decode operator is skipped, everything else runs as usual. For the "input
    /// already decoded" what-if; bad records have no decoded form, so `bad_fraction` must be 0.
    #[serde(default)]
    pub pre_decoded: bool,
}

/// The scheduling micro-benchmarks' source: a pure function of `(seed, partition, time range)`.
/// Per batch and partition, `numbers_per_batch` pseudo-random integers are summed per key
/// (`keys` distinct keys), so a task's work is set by this spec alone, never by the batch
/// interval, and a batch emits at most `keys` small records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumbersSourceSpec {
    pub seed: u64,
    pub partitions: u32,
    pub numbers_per_batch: u32,
    pub keys: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TableSpec {
    /// The ysb ad → campaign table, derived from the generator seed.
    YsbCampaigns { seed: u64 },
    /// A CSV file whose header is `columns` (every column a string), read by each worker
    /// when the job starts: the path must be readable there.
    Csv { path: String, columns: Vec<String> },
}

impl TableSpec {
    pub fn schema(&self) -> Schema {
        match self {
            TableSpec::YsbCampaigns { .. } => {
                Schema::new(vec![Field::new("ad_id", DataType::Utf8), Field::new("campaign_id", DataType::Utf8)])
            }
            TableSpec::Csv { columns, .. } => {
                Schema::new(columns.iter().map(|column| Field::new(column.as_str(), DataType::Utf8)).collect())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SinkSpec {
    Stdout,
    /// One JSON object per output row, one file per reduce partition, under `dir`.
    JsonLines {
        dir: String,
    },
    /// Keeps no output; the task still reports what it would have written.
    Discard,
    /// One JSON record per output row on a Kafka topic (which must exist), keyed by
    /// `key_columns`' values; reduce partition `p` writes to topic partition `p mod n`.
    Kafka {
        brokers: String,
        topic: String,
        key_columns: Vec<String>,
    },
}
