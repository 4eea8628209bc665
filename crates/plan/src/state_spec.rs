//! The options of the plan nodes that keep keyed state across batches: `increments`,
//! `keyed_aggregate`, `top_k` and `top_rows`. Their meaning is documented on the operators in
//! `sleet-exec` (`increments.rs`, `keyed_aggregate.rs`, `top_k.rs`, `top_rows.rs`); here is
//! what a job file holds.

use serde::{Deserialize, Serialize};

use crate::node::Aggregate;

/// How a reading's value columns count what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadingEncoding {
    /// Units since the key's previous reading: the increment is the value.
    Counter,
    /// Units since the key started, wrapping to 0 at `2^wrap_bits`: the increment is the
    /// difference from the previous reading, modulo `2^wrap_bits`.
    Cumulative,
    /// Units per second since the previous reading: the increment is the value times the
    /// seconds elapsed.
    Rate,
}

/// What a reading older than its key's newest does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatePolicy {
    /// Inserted between its neighbours, with a correction row for the one after it.
    #[default]
    Fold,
    /// Dropped and counted.
    Drop,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncrementsSpec {
    /// The columns that name a series (e.g. a gateway id). Every reading of a key must reach
    /// the same partition: before any exchange, the source's partitioning must promise it
    /// (a Kafka topic keyed by these columns); after one, its keys must be among these.
    pub keys: Vec<String>,
    /// Event time, int64 ms.
    pub time_column: String,
    pub encoding: ReadingEncoding,
    /// The value columns (int64 or float64), each replaced by its increment.
    pub columns: Vec<String>,
    #[serde(default)]
    pub late: LatePolicy,
    /// How far behind its key's newest reading a reading may arrive and still count.
    #[serde(default)]
    pub allowed_lateness_ms: i64,
    /// A key with no reading for this long (against the largest event time seen) is forgotten.
    pub ttl_ms: i64,
    /// The modulus of a cumulative counter, `2^wrap_bits`.
    #[serde(default = "default_wrap_bits")]
    pub wrap_bits: u32,
    /// At most this many keys in one partition's state; readings of further keys are refused
    /// (dropped and counted) until keys expire.
    #[serde(default = "default_max_keys")]
    pub max_keys: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedAggregateSpec {
    pub keys: Vec<String>,
    pub aggregates: Vec<Aggregate>,
    /// Event time, int64 ms: drives the TTL, and the output holds each key's latest under
    /// this name.
    pub time_column: String,
    /// A key not updated for this long (against the largest event time seen) is forgotten;
    /// a row that far behind is dropped as late.
    pub ttl_ms: i64,
    #[serde(default = "default_max_keys")]
    pub max_keys: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopKSpec {
    /// The columns a ranking is per (e.g. a day); may be empty for one global ranking.
    pub group: Vec<String>,
    /// The columns that name what is ranked (e.g. a gateway id); an input row replaces the
    /// value its key had.
    pub keys: Vec<String>,
    /// The value ranked on (int64 or float64), largest first; ties go to the smaller key.
    pub order_by: String,
    pub k: u32,
    /// Which keys make the top `k`, and the rank each gets. Left out of the JSON when it is
    /// `row_number`, so a job file written before the option reads and writes as it did.
    #[serde(default, skip_serializing_if = "Ranking::is_row_number")]
    pub ranking: Ranking,
    /// Event time, int64 ms: a group not updated for `ttl_ms` is forgotten.
    pub time_column: String,
    pub ttl_ms: i64,
    /// At most this many keys over all groups of one partition.
    #[serde(default = "default_max_keys")]
    pub max_keys: u64,
}

/// How a top-N numbers what it ranks, as SQL's window functions do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// `ROW_NUMBER()`: ranks 1 to `k`, one each; of equal values the smaller key (or row, in
    /// a total order on its columns) comes first, so exactly `min(k, n)` are kept.
    #[default]
    RowNumber,
    /// `RANK()`: an entry's rank is 1 + the number of its group's entries with a strictly
    /// larger value, and every entry ranked `k` or better is kept, so ties at the boundary
    /// are all kept and a group may show more than `k`.
    Rank,
}

impl Ranking {
    pub fn is_row_number(&self) -> bool {
        *self == Ranking::RowNumber
    }
}

/// Per group, the rows of an append-only stream whose rank by `order_by` (largest first) is
/// `k` or better, every column of each carried; for a window table function's rows ranked
/// per window (Nexmark q7's highest bids). Rows are never updated, so a row that falls out
/// of its group's top can never come back, and a group holds `k` rows plus ties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopRowsSpec {
    /// The columns a ranking is per; `window_end_column` is one of them, so every row of a
    /// group is of one window.
    pub group: Vec<String>,
    /// The value ranked on (int64 or float64), largest first.
    pub order_by: String,
    pub k: u32,
    #[serde(default)]
    pub ranking: Ranking,
    /// Event time, int64 ms: the largest seen, less `allowed_lateness_ms`, is the watermark.
    pub time_column: String,
    /// The end (exclusive, int64 ms) of the window a row is in. A group is final, and
    /// forgotten, once the watermark reaches its end; a row whose window has ended by the
    /// batch's start is dropped as late.
    pub window_end_column: String,
    pub allowed_lateness_ms: i64,
    /// At most this many groups in one partition's state; rows of further groups are
    /// refused (dropped and counted) until windows close.
    #[serde(default = "default_max_keys")]
    pub max_groups: u64,
}

/// The column `top_k` adds for a key's place in its group, 1 for the largest.
pub const RANK_COLUMN: &str = "rank";

pub fn default_wrap_bits() -> u32 {
    32
}

pub fn default_max_keys() -> u64 {
    1_000_000
}
