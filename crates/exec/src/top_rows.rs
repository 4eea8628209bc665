//! Per group, the rows of an append-only stream ranked `k` or better by a value, largest
//! first, every column of each row carried (`TopRowsSpec`): Nexmark q7's highest bids of
//! each window. `ROW_NUMBER()` keeps `k` rows, ties broken by a total order on the whole row
//! (column by column, `compare_cells`), so the output does not depend on arrival order;
//! `RANK()` keeps every row whose rank (1 + the rows strictly larger) is `k` or better.
//!
//! Rows are never updated, so one that falls out of its group's top can never come back: a
//! group keeps only its top (`k` rows plus ties), and a row below the group's last kept value
//! is rejected without being read beyond its value. Each batch emits, for every group whose
//! top it changed, the group's whole top: the row's columns, then its `rank`. A group's last
//! emitted top is its final one.
//!
//! Groups are windows: `window_end_column` is one of the group columns. The watermark is the
//! largest event time seen less `allowed_lateness_ms`; once it reaches a group's window end
//! the group is final and forgotten, and a row of a window that had ended by the batch's start
//! is dropped as late, as the window aggregate does. A row without an event time, value or
//! window end is dropped as invalid. With `max_groups` groups held, rows of new groups are
//! refused (dropped and counted) until windows close.
//!
//! `PartialTopRowsExec` ranks one batch's rows the same way before the exchange, keeping no
//! state. A row in its group's top over all rows is in the top of any subset holding it
//! (fewer rows rank above it there), so the union of the map tasks' tops holds the global top,
//! ties included. Each row it keeps carries its group's largest event time in the batch
//! (`PARTIAL_MAX_EVENT_TIME_COLUMN`), so the reduce side's watermark moves as if it had seen
//! every row: a group's rows all go to one partition, and a group is late or not as a whole.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::physical::{AggregateInput, PARTIAL_MAX_EVENT_TIME_COLUMN};
use sleet_plan::{Ranking, TopRowsSpec, RANK_COLUMN};

use crate::cell::{
    column, columns, compare_cells, compare_rows, event_times, read_cell, sorted_keys, write_cell, write_cells,
    write_key, Cell, ColumnBuilder, Reader,
};
use crate::changelog::{self, touch, Changelog};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::ranking::{admits_value, ranks};
use crate::state::{StateCounts, StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};

/// A row as a group keeps it: every column, and its value apart for comparisons.
#[derive(Debug, Clone, PartialEq)]
struct RankedRow {
    value: Cell,
    cells: Vec<Cell>,
}

/// The rank order: larger values first, then the rows' total order.
fn rank_order(left: &RankedRow, right: &RankedRow) -> Ordering {
    compare_cells(&right.value, &left.value).then_with(|| compare_rows(&left.cells, &right.cells))
}

/// A group's rows ranked `k` or better, in rank order.
#[derive(Debug, Clone, Default)]
struct TopList {
    rows: Vec<RankedRow>,
}

impl TopList {
    /// Offers a row of `value`; `read_row` reads its columns, and is called only for a row
    /// that may enter. Returns whether the top changed.
    fn offer(&mut self, ranking: Ranking, k: usize, value: Cell, read_row: impl FnOnce() -> Vec<Cell>) -> bool {
        let last = self.rows.last().map(|row| &row.value);
        if admits_value(ranking, k, self.rows.len(), last, &value) == Some(false) {
            return false;
        }
        let candidate = RankedRow { value, cells: read_row() };
        let position = self.rows.partition_point(|kept| rank_order(kept, &candidate).is_le());
        if ranking == Ranking::RowNumber && position >= k {
            // Tied with the last kept row on value, and after it in the rows' order.
            return false;
        }
        self.rows.insert(position, candidate);
        let kept = ranks(ranking, k, self.rows.iter().map(|row| &row.value)).count();
        self.rows.truncate(kept);
        debug_assert!(position < kept, "a row admitted is within the top");
        true
    }

    /// The rows with their ranks, best first.
    fn ranked(&self, ranking: Ranking, k: usize) -> impl Iterator<Item = (i64, &RankedRow)> {
        ranks(ranking, k, self.rows.iter().map(|row| &row.value)).zip(&self.rows)
    }
}

/// The columns of `block` a ranked row carries: all but a partial's event-time column.
fn row_columns(block: &RecordBatch) -> Vec<ArrayRef> {
    let schema = block.schema();
    schema
        .fields()
        .iter()
        .zip(block.columns())
        .filter(|(field, _)| field.name() != PARTIAL_MAX_EVENT_TIME_COLUMN)
        .map(|(_, array)| Arc::clone(array))
        .collect()
}

fn read_row(columns: &[ArrayRef], row: usize) -> Vec<Cell> {
    columns.iter().map(|column| read_cell(column.as_ref(), row)).collect()
}

/// One block's columns that ranking reads.
struct RankedColumns {
    group: Vec<ArrayRef>,
    values: ArrayRef,
    times: Int64Array,
    ends: Int64Array,
    carried: Vec<ArrayRef>,
}

impl RankedColumns {
    fn of(spec: &TopRowsSpec, block: &RecordBatch, times_column: &str) -> Result<Self, ExecError> {
        Ok(RankedColumns {
            group: columns(block, &spec.group)?,
            values: column(block, &spec.order_by)?,
            times: event_times(block, times_column)?,
            ends: event_times(block, &spec.window_end_column)?,
            carried: row_columns(block),
        })
    }

    /// Whether row `row` has what ranking it needs: an event time, a value and a window end.
    fn is_valid(&self, row: usize) -> bool {
        self.times.is_valid(row) && self.values.is_valid(row) && self.ends.is_valid(row)
    }
}

#[derive(Debug, Default)]
struct Group {
    end_ms: i64,
    top: TopList,
    touched_in: u64,
}

pub struct TopRowsOutput {
    /// Every changed group's whole top: the input's columns, then `rank`.
    pub rows: RecordBatch,
    pub counts: StateCounts,
}

/// The ranked rows of the groups (windows) one reduce partition holds.
pub struct TopRowsExec {
    spec: TopRowsSpec,
    input: AggregateInput,
    groups: FxHashMap<Box<[u8]>, Group>,
    /// The event time seen; its TTL is the allowed lateness, so `late_before` is the watermark.
    clock: StateClock,
    /// The earliest window end among the groups, so a batch the watermark closes no window
    /// in walks no group.
    earliest_end_ms: Option<i64>,
    rows_held: u64,
    key_bytes: u64,
    generation: u64,
    schema: Option<SchemaRef>,
}

const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLTR", version: 1, what: "top-rows" };

impl TopRowsExec {
    pub fn new(spec: TopRowsSpec, input: AggregateInput) -> Self {
        let lateness_ms = spec.allowed_lateness_ms;
        TopRowsExec {
            spec,
            input,
            groups: FxHashMap::default(),
            clock: StateClock::new(lateness_ms),
            earliest_end_ms: None,
            rows_held: 0,
            key_bytes: 0,
            generation: 0,
            schema: None,
        }
    }

    /// The rows held (the state's entries), and an estimate of their bytes: every row's cells
    /// (a string's text not counted), an entry per row and per group, and the group keys.
    pub fn size(&self) -> StateSize {
        let cells_per_row = self.schema.as_ref().map_or(1, |schema| schema.fields().len()) as u64;
        let per_row = ENTRY_OVERHEAD_BYTES + (cells_per_row + 1) * std::mem::size_of::<Cell>() as u64;
        StateSize {
            keys: self.rows_held,
            bytes: self.key_bytes + self.rows_held * per_row + self.groups.len() as u64 * ENTRY_OVERHEAD_BYTES,
        }
    }

    /// Takes one batch's rows and returns the tops of the groups they changed.
    pub fn process(&mut self, inputs: &[RecordBatch]) -> Result<TopRowsOutput, ExecError> {
        let (rows, counts) = changelog::process(self, inputs)?;
        Ok(TopRowsOutput { rows, counts })
    }

    /// The whole state as bytes: deterministic (groups in key order, rows in rank order).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for key in sorted_keys(&self.groups) {
            let group = &self.groups[key];
            write_key(key, &mut out);
            out.extend_from_slice(&group.end_ms.to_le_bytes());
            out.extend_from_slice(&(group.top.rows.len() as u32).to_le_bytes());
            for row in &group.top.rows {
                write_cell(&row.value, &mut out);
                out.extend_from_slice(&(row.cells.len() as u32).to_le_bytes());
                write_cells(&row.cells, &mut out);
            }
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        let clock = StateClock::read_snapshot_start(self.spec.allowed_lateness_ms, &SNAPSHOT, &mut reader)?;
        let group_count = reader.u32()? as usize;
        let mut groups = FxHashMap::with_capacity_and_hasher(group_count.min(reader.bytes.len()), Default::default());
        let (mut rows_held, mut key_bytes) = (0u64, 0u64);
        for _ in 0..group_count {
            let key = reader.key(self.spec.group.len())?;
            let end_ms = reader.i64()?;
            let row_count = reader.u32()? as usize;
            let mut top = TopList { rows: Vec::with_capacity(row_count.min(reader.bytes.len())) };
            for _ in 0..row_count {
                let value = reader.cell()?;
                let cell_count = reader.u32()? as usize;
                let row = RankedRow { value, cells: reader.cells(cell_count)? };
                if top.rows.last().is_some_and(|before| rank_order(before, &row).is_gt()) {
                    return Err(ExecError::CorruptSnapshot("a group's rows are out of rank order".into()));
                }
                top.rows.push(row);
            }
            rows_held += row_count as u64;
            key_bytes += key.len() as u64;
            if groups.insert(key, Group { end_ms, top, touched_in: 0 }).is_some() {
                return Err(ExecError::CorruptSnapshot("a group appears twice".into()));
            }
        }
        reader.finish()?;
        self.earliest_end_ms = groups.values().map(|group| group.end_ms).min();
        self.groups = groups;
        self.rows_held = rows_held;
        self.key_bytes = key_bytes;
        self.clock = clock;
        Ok(())
    }
}

impl Changelog for TopRowsExec {
    const BUILDING: &'static str = "building top-rows lists";

    fn output_schema(&mut self, input: &Schema) -> SchemaRef {
        Arc::clone(self.schema.get_or_insert_with(|| {
            let mut fields: Vec<Field> = input
                .fields()
                .iter()
                .filter(|field| field.name() != PARTIAL_MAX_EVENT_TIME_COLUMN)
                .map(|field| field.as_ref().clone())
                .collect();
            fields.push(Field::new(RANK_COLUMN, DataType::Int64, false));
            Arc::new(Schema::new(fields))
        }))
    }

    /// The watermark when the batch starts: a row of a window ended by it is late.
    fn begin_batch(&mut self) -> Option<i64> {
        self.generation += 1;
        self.clock.late_before()
    }

    fn rows_per_entry(&self) -> usize {
        self.spec.k as usize
    }

    fn emit(&self, touched: &[Box<[u8]>], columns: &mut [ColumnBuilder]) -> Result<(), ExecError> {
        let k = self.spec.k as usize;
        let rank_index = columns.len() - 1;
        for key in touched {
            for (rank, row) in self.groups[key].top.ranked(self.spec.ranking, k) {
                debug_assert_eq!(row.cells.len(), rank_index, "a row holds every input column");
                for (index, cell) in row.cells.iter().enumerate() {
                    columns[index].append(cell);
                }
                columns[rank_index].append(&Cell::Int64(rank));
            }
        }
        Ok(())
    }

    fn take_block(
        &mut self,
        block: &RecordBatch,
        watermark: Option<i64>,
        touched: &mut Vec<Box<[u8]>>,
        counts: &mut StateCounts,
    ) -> Result<(), ExecError> {
        let times_column = match self.input {
            AggregateInput::Rows => self.spec.time_column.as_str(),
            AggregateInput::Partials => PARTIAL_MAX_EVENT_TIME_COLUMN,
        };
        let ranked = RankedColumns::of(&self.spec, block, times_column)?;
        let group_columns = KeyColumns::new(&ranked.group);
        let (ranking, k) = (self.spec.ranking, self.spec.k as usize);
        let mut key = Vec::with_capacity(32);
        for row in 0..block.num_rows() {
            if !ranked.is_valid(row) {
                counts.invalid_rows_dropped += 1;
                continue;
            }
            let end_ms = ranked.ends.value(row);
            if watermark.is_some_and(|watermark| end_ms <= watermark) {
                counts.late_rows_dropped += 1;
                continue;
            }
            // A refused row moves event time too, as `top_k`'s does: what closes a window
            // does not depend on which groups the bound let in.
            self.clock.observe(ranked.times.value(row));
            key.clear();
            group_columns.encode(row, &mut key);
            if !self.groups.contains_key(key.as_slice()) {
                if self.groups.len() as u64 >= self.spec.max_groups {
                    counts.refused_rows += 1;
                    continue;
                }
                self.key_bytes += key.len() as u64;
                self.earliest_end_ms = Some(self.earliest_end_ms.map_or(end_ms, |earliest| earliest.min(end_ms)));
                self.groups.insert(key.as_slice().into(), Group { end_ms, ..Group::default() });
            }
            let group = self.groups.get_mut(key.as_slice()).expect("inserted above");
            let before = group.top.rows.len() as u64;
            let value = read_cell(ranked.values.as_ref(), row);
            if group.top.offer(ranking, k, value, || read_row(&ranked.carried, row)) {
                self.rows_held = self.rows_held - before + group.top.rows.len() as u64;
                touch(self.generation, &mut group.touched_in, &key, touched);
            }
        }
        Ok(())
    }

    /// Forgets the groups whose window the watermark has reached: their last top is final.
    fn sweep(&mut self) -> u64 {
        let Some(watermark) = self.clock.late_before() else { return 0 };
        if self.earliest_end_ms.is_none_or(|earliest| earliest > watermark) {
            return 0;
        }
        let before = self.groups.len();
        let (mut rows, mut key_bytes) = (0u64, 0u64);
        self.groups.retain(|key, group| {
            let open = group.end_ms > watermark;
            if !open {
                rows += group.top.rows.len() as u64;
                key_bytes += key.len() as u64;
            }
            open
        });
        self.rows_held -= rows;
        self.key_bytes -= key_bytes;
        self.earliest_end_ms = self.groups.values().map(|group| group.end_ms).min();
        (before - self.groups.len()) as u64
    }
}

pub struct PartialTopRowsOutput {
    /// The rows of the batch's group tops, each with its group's largest event time.
    pub rows: RecordBatch,
    pub counts: StateCounts,
}

/// The ranking of one batch's rows before the exchange; keeps nothing between batches.
pub struct PartialTopRowsExec {
    spec: TopRowsSpec,
    schema: Option<SchemaRef>,
}

impl PartialTopRowsExec {
    pub fn new(spec: TopRowsSpec) -> Self {
        PartialTopRowsExec { spec, schema: None }
    }

    pub fn execute(&mut self, block: &RecordBatch) -> Result<PartialTopRowsOutput, ExecError> {
        let schema = Arc::clone(self.schema.get_or_insert_with(|| {
            let mut fields: Vec<Field> = block.schema().fields().iter().map(|field| field.as_ref().clone()).collect();
            fields.push(Field::new(PARTIAL_MAX_EVENT_TIME_COLUMN, DataType::Int64, false));
            Arc::new(Schema::new(fields))
        }));
        let ranked = RankedColumns::of(&self.spec, block, &self.spec.time_column)?;
        let group_columns = KeyColumns::new(&ranked.group);
        let (ranking, k) = (self.spec.ranking, self.spec.k as usize);
        let mut counts = StateCounts::default();
        // Groups in the order first seen, so the output is a function of the input alone;
        // each with its top and its latest event time.
        let mut groups: Vec<(TopList, i64)> = Vec::new();
        let mut index: FxHashMap<Box<[u8]>, usize> = FxHashMap::default();
        // A batch's rows mostly come window after window, so the row before's group is
        // checked first, which spares the hash lookup.
        let (mut key, mut previous) = (Vec::with_capacity(32), Vec::with_capacity(32));
        let mut current: Option<usize> = None;
        for row in 0..block.num_rows() {
            if !ranked.is_valid(row) {
                counts.invalid_rows_dropped += 1;
                continue;
            }
            key.clear();
            group_columns.encode(row, &mut key);
            let time = ranked.times.value(row);
            let at = match current {
                Some(at) if key == previous => at,
                _ => {
                    let at = *index.entry(key.as_slice().into()).or_insert_with(|| {
                        groups.push((TopList::default(), time));
                        groups.len() - 1
                    });
                    std::mem::swap(&mut key, &mut previous);
                    current = Some(at);
                    at
                }
            };
            let (top, latest) = &mut groups[at];
            *latest = (*latest).max(time);
            top.offer(ranking, k, read_cell(ranked.values.as_ref(), row), || read_row(&ranked.carried, row));
        }
        let kept: usize = groups.iter().map(|(top, _)| top.rows.len()).sum();
        let mut builders: Vec<ColumnBuilder> =
            schema.fields().iter().map(|field| ColumnBuilder::new(field.data_type(), kept)).collect();
        let time_index = builders.len() - 1;
        for (top, latest) in &groups {
            for row in &top.rows {
                for (index, cell) in row.cells.iter().enumerate() {
                    builders[index].append(cell);
                }
                builders[time_index].append(&Cell::Int64(*latest));
            }
        }
        let arrays: Vec<ArrayRef> = builders.into_iter().map(ColumnBuilder::finish).collect();
        let rows =
            RecordBatch::try_new(schema, arrays).map_err(ExecError::arrow("building the partial top-rows lists"))?;
        Ok(PartialTopRowsOutput { rows, counts })
    }
}

#[cfg(test)]
#[path = "top_rows_tests.rs"]
mod tests;
