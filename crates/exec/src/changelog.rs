//! What a batch is for the operators that emit a changelog of keyed entries (a keyed
//! aggregate's keys, a top-k's groups): fold each block's rows into the entries, then emit
//! every entry the batch changed once, then sweep the TTL. `KeyedAggregateExec` and `TopKExec`
//! differ in how a row changes an entry and what an entry's output rows are, not in this.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};

use crate::cell::ColumnBuilder;
use crate::error::ExecError;
use crate::state::StateCounts;

pub(crate) trait Changelog {
    /// What an Arrow error building the output is said to have happened in.
    const BUILDING: &'static str;

    /// The output's schema, fixed by the first batch that has rows.
    fn output_schema(&mut self, input: &Schema) -> SchemaRef;

    /// Starts a batch: a new generation for `touch`, and the time before which rows are late
    /// (fixed for the whole batch, so how a batch is cut into blocks changes nothing).
    fn begin_batch(&mut self) -> Option<i64>;

    /// Folds one block's rows, adding to `touched` each entry the batch changes first here.
    fn take_block(
        &mut self,
        block: &RecordBatch,
        late_before: Option<i64>,
        touched: &mut Vec<Box<[u8]>>,
        counts: &mut StateCounts,
    ) -> Result<(), ExecError>;

    /// At most how many output rows an entry makes (to size the columns).
    fn rows_per_entry(&self) -> usize;

    /// Appends the output rows of the `touched` entries.
    fn emit(&self, touched: &[Box<[u8]>], columns: &mut [ColumnBuilder]) -> Result<(), ExecError>;

    /// Forgets the entries whose TTL passed, when a sweep is due; returns how many.
    fn sweep(&mut self) -> u64;
}

/// Runs one batch (`inputs`, its blocks) through `operator`: its output rows and counts.
pub(crate) fn process<O: Changelog>(
    operator: &mut O,
    inputs: &[RecordBatch],
) -> Result<(RecordBatch, StateCounts), ExecError> {
    let Some(first) = inputs.first() else {
        // Nothing can change; the schema waits for a batch that shows the input's types.
        return Ok((RecordBatch::new_empty(Arc::new(Schema::empty())), StateCounts::default()));
    };
    let schema = operator.output_schema(&first.schema());
    let late_before = operator.begin_batch();
    let mut counts = StateCounts::default();
    let mut touched: Vec<Box<[u8]>> = Vec::new();
    for block in inputs {
        operator.take_block(block, late_before, &mut touched, &mut counts)?;
    }
    let capacity = touched.len() * operator.rows_per_entry();
    let mut columns: Vec<ColumnBuilder> =
        schema.fields().iter().map(|field| ColumnBuilder::new(field.data_type(), capacity)).collect();
    operator.emit(&touched, &mut columns)?;
    let arrays: Vec<ArrayRef> = columns.into_iter().map(ColumnBuilder::finish).collect();
    let output = RecordBatch::try_new(schema, arrays).map_err(ExecError::arrow(O::BUILDING))?;
    counts.expired_keys += operator.sweep();
    Ok((output, counts))
}

/// Notes that the batch of `generation` changed the entry `key`, once: `touched_in` is the
/// generation that last noted it.
pub(crate) fn touch(generation: u64, touched_in: &mut u64, key: &[u8], touched: &mut Vec<Box<[u8]>>) {
    if *touched_in != generation {
        *touched_in = generation;
        touched.push(key.into());
    }
}
