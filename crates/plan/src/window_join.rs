//! The options of a window join: two streams' rows that share a tumbling window and a key,
//! paired. The operator's meaning is documented on `sleet_exec::window_join`; here is what a
//! job file holds.
//!
//! A plan is a line, so both sides arrive as one stream: before the exchange a projection
//! says which side each row is on (`side_column`) and puts each side's join key into one
//! column (`key_column`), which the exchange hashes on, so that a key's rows of both sides
//! meet in one partition.

use serde::{Deserialize, Serialize};

use crate::node::WindowSpec;
use crate::state_spec::default_max_keys;

/// One column a side contributes to the join's output: read from `input` on that side's
/// rows, written as `output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinColumn {
    pub input: String,
    pub output: String,
}

impl JoinColumn {
    pub fn new(input: impl Into<String>, output: impl Into<String>) -> Self {
        JoinColumn { input: input.into(), output: output.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowJoinSpec {
    /// A tumbling window on both sides' event time (one int64 column): rows pair only within
    /// one window, and a window's rows are let go once the watermark passes its end.
    pub window: WindowSpec,
    /// Boolean: true on a row of the left side, false on one of the right. A row whose side
    /// is null is on neither, and is dropped as invalid.
    pub side_column: String,
    /// The join key, both sides' keys projected into this one column.
    pub key_column: String,
    /// What a left row contributes to each output row, in output order.
    pub left: Vec<JoinColumn>,
    /// What a right row contributes, after the left's columns.
    pub right: Vec<JoinColumn>,
    /// Emit each distinct output row of a (window, key) once.
    #[serde(default)]
    pub distinct: bool,
    /// At most this many rows held over all windows of one partition: a row arriving while
    /// the state is full still meets the rows held, but is not kept (refused and counted).
    #[serde(default = "default_max_keys")]
    pub max_rows: u64,
}

impl WindowJoinSpec {
    /// Every output column a side contributes, left then right.
    pub fn outputs(&self) -> impl Iterator<Item = &JoinColumn> {
        self.left.iter().chain(&self.right)
    }
}
