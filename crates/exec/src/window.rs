//! Tumbling event-time window aggregation: the stateless partial step that runs before an
//! exchange, and the keyed state after it that emits every touched window each batch and
//! closes windows once the watermark passes their end.
//!
//! Both steps share `Windows`: per window start, a hash map from the row's encoded key
//! (`key::KeyColumns`) to its running aggregates, so grouping costs one hash of a short byte
//! string and no allocation for keys seen before.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::physical::{AggregateInput, PARTIAL_MAX_EVENT_TIME_COLUMN};
use sleet_plan::validate::WINDOW_START_COLUMN;
use sleet_plan::{AggFunc, Aggregate, WindowSpec};

use crate::cell::{column, decode_key, read_cell, write_cell, Cell, ColumnBuilder, Reader};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::state::{StateSize, ENTRY_OVERHEAD_BYTES};

/// How an aggregate folds one input value: over raw rows, or merging partial results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fold {
    CountRows,
    Sum,
    Min,
    Max,
}

pub(crate) fn fold(accumulator: &mut Cell, how: Fold, input: Cell) {
    match how {
        Fold::CountRows => {
            if let Cell::Int64(count) = accumulator {
                *count += 1;
            }
        }
        Fold::Sum => match (&mut *accumulator, input) {
            (_, Cell::Null) => {}
            (Cell::Null, value) => *accumulator = value,
            // Wrapping, not checked: a sum that overflows i64 is already meaningless, and
            // failing the partition's state forever would be worse than a wrapped total.
            (Cell::Int64(sum), Cell::Int64(value)) => *sum = sum.wrapping_add(value),
            (Cell::Float64(sum), Cell::Float64(value)) => *sum += value,
            _ => {}
        },
        Fold::Min | Fold::Max => {
            if matches!(input, Cell::Null) {
                return;
            }
            let replace = match (&*accumulator, &input) {
                (Cell::Null, _) => true,
                (Cell::Int64(current), Cell::Int64(value)) => {
                    (value < current) == (how == Fold::Min) && value != current
                }
                (Cell::Float64(current), Cell::Float64(value)) => {
                    (value < current) == (how == Fold::Min) && value != current && !value.is_nan()
                }
                (Cell::Utf8(current), Cell::Utf8(value)) => (value < current) == (how == Fold::Min) && value != current,
                (Cell::Boolean(current), Cell::Boolean(value)) => {
                    (value < current) == (how == Fold::Min) && value != current
                }
                _ => false,
            };
            if replace {
                *accumulator = input;
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Group {
    accumulators: Vec<Cell>,
    /// The last batch that changed this group: its output is what a reader sees of it.
    last_update_batch: u64,
    max_event_time: i64,
    touched_in: u64,
}

/// The shape shared by partial and final aggregation: how to read each input row.
struct Layout {
    window: WindowSpec,
    keys: Vec<String>,
    aggregates: Vec<Aggregate>,
    input: AggregateInput,
}

impl Layout {
    fn folds(&self) -> Vec<Fold> {
        self.aggregates
            .iter()
            .map(|aggregate| match (aggregate.func, self.input) {
                (AggFunc::Count, AggregateInput::Rows) => Fold::CountRows,
                (AggFunc::Count, AggregateInput::Partials) | (AggFunc::Sum, _) => Fold::Sum,
                (AggFunc::Min, _) => Fold::Min,
                (AggFunc::Max, _) => Fold::Max,
            })
            .collect()
    }

    /// The column each aggregate reads: the raw column, or the partial result named after it.
    fn aggregate_inputs(&self, batch: &RecordBatch) -> Result<Vec<Option<ArrayRef>>, ExecError> {
        self.aggregates
            .iter()
            .map(|aggregate| {
                let name = match (self.input, aggregate.func, &aggregate.column) {
                    (AggregateInput::Partials, _, _) => Some(&aggregate.name),
                    (AggregateInput::Rows, AggFunc::Count, _) => None,
                    (AggregateInput::Rows, _, column) => column.as_ref(),
                };
                name.map(|name| column(batch, name)).transpose()
            })
            .collect()
    }

    fn output_type(&self, aggregate: &Aggregate, input_schema: &Schema) -> DataType {
        let source = match self.input {
            AggregateInput::Rows => aggregate.column.as_deref(),
            AggregateInput::Partials => Some(aggregate.name.as_str()),
        };
        match aggregate.func {
            AggFunc::Count => DataType::Int64,
            _ => source
                .and_then(|name| input_schema.field_with_name(name).ok())
                .map_or(DataType::Int64, |field| field.data_type().clone()),
        }
    }

    fn output_schema(&self, input_schema: &Schema, with_max_event_time: bool) -> SchemaRef {
        let mut fields = vec![Field::new(WINDOW_START_COLUMN, DataType::Int64, false)];
        for key in &self.keys {
            let (data_type, nullable) = input_schema
                .field_with_name(key)
                .map_or((DataType::Utf8, true), |field| (field.data_type().clone(), field.is_nullable()));
            fields.push(Field::new(key, data_type, nullable));
        }
        for aggregate in &self.aggregates {
            fields.push(Field::new(&aggregate.name, self.output_type(aggregate, input_schema), true));
        }
        if with_max_event_time {
            fields.push(Field::new(PARTIAL_MAX_EVENT_TIME_COLUMN, DataType::Int64, false));
        }
        Arc::new(Schema::new(fields))
    }

    fn initial(&self, folds: &[Fold]) -> Vec<Cell> {
        folds
            .iter()
            .zip(&self.aggregates)
            .map(|(how, aggregate)| match (how, aggregate.func) {
                (Fold::CountRows, _) | (Fold::Sum, AggFunc::Count) => Cell::Int64(0),
                _ => Cell::Null,
            })
            .collect()
    }
}

type Windows = BTreeMap<i64, FxHashMap<Box<[u8]>, Group>>;

/// Groups the rows of `batch` into `windows`. Rows whose window ends at or before
/// `drop_until` are late: skipped and counted. Returns (late rows, max event time seen).
#[allow(
    clippy::too_many_arguments,
    reason = "the operator lends its fields one by one so that its windows and its touched list are borrowed mutably at once"
)]
fn fold_batch(
    layout: &Layout,
    folds: &[Fold],
    batch: &RecordBatch,
    windows: &mut Windows,
    drop_until: Option<i64>,
    update_batch: u64,
    generation: u64,
    touched: &mut Vec<(i64, Box<[u8]>)>,
    key_bytes: &mut u64,
) -> Result<(u64, Option<i64>), ExecError> {
    let key_columns: Vec<ArrayRef> = layout.keys.iter().map(|key| column(batch, key)).collect::<Result<_, _>>()?;
    let key_columns = KeyColumns::new(&key_columns);
    let inputs = layout.aggregate_inputs(batch)?;
    let size = layout.window.size_ms;
    let (starts, event_times): (Vec<Option<i64>>, Vec<Option<i64>>) = match layout.input {
        AggregateInput::Rows => {
            let times = column(batch, &layout.window.time_column)?;
            let times = times
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| ExecError::MissingColumn(layout.window.time_column.clone()))?;
            let times: Vec<Option<i64>> = times.iter().collect();
            (times.iter().map(|t| t.map(|t| t.div_euclid(size) * size)).collect(), times)
        }
        AggregateInput::Partials => {
            let starts = column(batch, WINDOW_START_COLUMN)?;
            let maxima = column(batch, PARTIAL_MAX_EVENT_TIME_COLUMN)?;
            (starts.as_primitive::<Int64Type>().iter().collect(), maxima.as_primitive::<Int64Type>().iter().collect())
        }
    };
    let initial = layout.initial(folds);
    let mut late = 0u64;
    let mut max_event_time: Option<i64> = None;
    let mut key = Vec::with_capacity(64);
    for row in 0..batch.num_rows() {
        // A row without an event time belongs to no window.
        let (Some(start), Some(event_time)) = (starts[row], event_times[row]) else { continue };
        if drop_until.is_some_and(|watermark| start + size <= watermark) {
            late += 1;
            continue;
        }
        max_event_time = Some(max_event_time.map_or(event_time, |max| max.max(event_time)));
        key.clear();
        key_columns.encode(row, &mut key);
        let groups = windows.entry(start).or_default();
        let group = match groups.get_mut(key.as_slice()) {
            Some(group) => group,
            None => {
                *key_bytes += key.len() as u64;
                groups.entry(key.clone().into_boxed_slice()).or_insert_with(|| Group {
                    accumulators: initial.clone(),
                    last_update_batch: update_batch,
                    max_event_time: event_time,
                    touched_in: 0,
                })
            }
        };
        for (index, how) in folds.iter().enumerate() {
            let value = match &inputs[index] {
                Some(column) => read_cell(column.as_ref(), row),
                None => Cell::Null,
            };
            fold(&mut group.accumulators[index], *how, value);
        }
        group.last_update_batch = update_batch;
        group.max_event_time = group.max_event_time.max(event_time);
        if group.touched_in != generation {
            group.touched_in = generation;
            touched.push((start, key.clone().into_boxed_slice()));
        }
    }
    Ok((late, max_event_time))
}

/// Builds output rows for `groups`, in the given order, under `schema`.
fn emit(
    schema: &SchemaRef,
    key_count: usize,
    rows: &[(i64, &[u8], &Group)],
    with_max_event_time: bool,
) -> Result<RecordBatch, ExecError> {
    let mut columns: Vec<ColumnBuilder> =
        schema.fields().iter().map(|field| ColumnBuilder::new(field.data_type(), rows.len())).collect();
    for (start, key, group) in rows {
        columns[0].append(&Cell::Int64(*start));
        for (index, cell) in decode_key(key, key_count)?.iter().enumerate() {
            columns[1 + index].append(cell);
        }
        for (index, cell) in group.accumulators.iter().enumerate() {
            columns[1 + key_count + index].append(cell);
        }
        if with_max_event_time {
            let last = columns.len() - 1;
            columns[last].append(&Cell::Int64(group.max_event_time));
        }
    }
    let arrays: Vec<ArrayRef> = columns.into_iter().map(ColumnBuilder::finish).collect();
    RecordBatch::try_new(Arc::clone(schema), arrays).map_err(ExecError::arrow("building window output"))
}

/// Folds one batch into one row per (window, key) before the exchange. No state is kept
/// between batches.
pub struct PartialWindowAggregateExec {
    layout: Layout,
    folds: Vec<Fold>,
    /// Made from the first batch's schema, as `WindowAggregateExec` does: a stage's input
    /// schema never changes, and building one costs several allocations per batch.
    schema: Option<SchemaRef>,
}

impl PartialWindowAggregateExec {
    pub fn new(window: WindowSpec, keys: Vec<String>, aggregates: Vec<Aggregate>) -> Self {
        let layout = Layout { window, keys, aggregates, input: AggregateInput::Rows };
        let folds = layout.folds();
        PartialWindowAggregateExec { layout, folds, schema: None }
    }

    pub fn execute(&mut self, batch: &RecordBatch) -> Result<RecordBatch, ExecError> {
        let mut windows = Windows::new();
        let mut touched = Vec::new();
        let mut key_bytes = 0;
        fold_batch(&self.layout, &self.folds, batch, &mut windows, None, 0, 1, &mut touched, &mut key_bytes)?;
        let layout = &self.layout;
        let schema = Arc::clone(self.schema.get_or_insert_with(|| layout.output_schema(&batch.schema(), true)));
        let rows: Vec<(i64, &[u8], &Group)> =
            touched.iter().map(|(start, key)| (*start, key.as_ref(), &windows[start][key.as_ref()])).collect();
        emit(&schema, self.layout.keys.len(), &rows, true)
    }
}

pub struct WindowOutput {
    /// Every (window, key) this batch touched, with its full updated value.
    pub updates: RecordBatch,
    pub closed: Vec<ClosedWindow>,
    pub late_rows_dropped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedWindow {
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    /// The last batch that updated any key of this window: once its output is visible, so
    /// is the window's final result.
    pub last_update_batch: u64,
}

/// Keyed window state of one reduce partition.
///
/// Late rows are counted per input row; for `Partials` input one partial row may stand for
/// many raw rows. Float sums depend on the order rows arrive in (floating-point addition is
/// not associative); integer aggregates do not.
pub struct WindowAggregateExec {
    layout: Layout,
    folds: Vec<Fold>,
    windows: Windows,
    max_event_time: Option<i64>,
    schema: Option<SchemaRef>,
    generation: u64,
    /// The bytes of the keys of every open (window, key) group, kept as groups open and
    /// close so that the state's size costs no walk over the groups each batch.
    key_bytes: u64,
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"SLWS";
/// 2: a group's last update is a batch id, not a processing time.
const SNAPSHOT_VERSION: u8 = 2;

impl WindowAggregateExec {
    pub fn new(window: WindowSpec, keys: Vec<String>, aggregates: Vec<Aggregate>, input: AggregateInput) -> Self {
        let layout = Layout { window, keys, aggregates, input };
        let folds = layout.folds();
        WindowAggregateExec {
            layout,
            folds,
            windows: Windows::new(),
            max_event_time: None,
            schema: None,
            generation: 0,
            key_bytes: 0,
        }
    }

    pub fn watermark_ms(&self) -> Option<i64> {
        self.max_event_time.map(|max| max - self.layout.window.allowed_lateness_ms)
    }

    pub fn open_windows(&self) -> usize {
        self.windows.len()
    }

    /// The open (window, key) groups, and an estimate of their bytes in memory: the keys,
    /// each group's entry and aggregates, and a hash table per open window. The text a
    /// `min` or `max` of a string column keeps is not counted.
    pub fn size(&self) -> StateSize {
        let groups: u64 = self.windows.values().map(|groups| groups.len() as u64).sum();
        let per_group = ENTRY_OVERHEAD_BYTES
            + std::mem::size_of::<Group>() as u64
            + (self.folds.len() * std::mem::size_of::<Cell>()) as u64;
        let per_window = ENTRY_OVERHEAD_BYTES + std::mem::size_of::<FxHashMap<Box<[u8]>, Group>>() as u64;
        StateSize { keys: groups, bytes: self.key_bytes + groups * per_group + self.windows.len() as u64 * per_window }
    }

    /// Folds `inputs`, the rows of batch `update_batch`, into the state.
    pub fn process(&mut self, inputs: &[RecordBatch], update_batch: u64) -> Result<WindowOutput, ExecError> {
        if self.schema.is_none() {
            if let Some(first) = inputs.first() {
                self.schema = Some(self.layout.output_schema(&first.schema(), false));
            }
        }
        let schema = self.schema.clone().unwrap_or_else(|| self.layout.output_schema(&Schema::empty(), false));
        self.generation += 1;
        let watermark_before = self.watermark_ms();
        let mut touched = Vec::new();
        let mut late_rows_dropped = 0;
        for batch in inputs {
            let (late, max_event_time) = fold_batch(
                &self.layout,
                &self.folds,
                batch,
                &mut self.windows,
                watermark_before,
                update_batch,
                self.generation,
                &mut touched,
                &mut self.key_bytes,
            )?;
            late_rows_dropped += late;
            if let Some(seen) = max_event_time {
                self.max_event_time = Some(self.max_event_time.map_or(seen, |max| max.max(seen)));
            }
        }
        let rows: Vec<(i64, &[u8], &Group)> =
            touched.iter().map(|(start, key)| (*start, key.as_ref(), &self.windows[start][key.as_ref()])).collect();
        let updates = emit(&schema, self.layout.keys.len(), &rows, false)?;
        let closed = self.close_windows();
        Ok(WindowOutput { updates, closed, late_rows_dropped })
    }

    fn close_windows(&mut self) -> Vec<ClosedWindow> {
        let Some(watermark) = self.watermark_ms() else { return Vec::new() };
        let size = self.layout.window.size_ms;
        let mut closed = Vec::new();
        while let Some(entry) = self.windows.first_entry() {
            let start = *entry.key();
            if start + size > watermark {
                break;
            }
            let groups = entry.remove();
            self.key_bytes -= groups.keys().map(|key| key.len() as u64).sum::<u64>();
            let last_update_batch = groups.values().map(|group| group.last_update_batch).max().unwrap_or(0);
            closed.push(ClosedWindow { window_start_ms: start, window_end_ms: start + size, last_update_batch });
        }
        closed
    }

    /// The whole state as bytes: deterministic (windows and keys in sorted order).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(SNAPSHOT_MAGIC);
        out.push(SNAPSHOT_VERSION);
        match self.max_event_time {
            Some(max) => {
                out.push(1);
                out.extend_from_slice(&max.to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&(self.windows.len() as u32).to_le_bytes());
        for (start, groups) in &self.windows {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
            let mut keys: Vec<&Box<[u8]>> = groups.keys().collect();
            keys.sort();
            for key in keys {
                let group = &groups[key];
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(&group.last_update_batch.to_le_bytes());
                out.extend_from_slice(&group.max_event_time.to_le_bytes());
                for cell in &group.accumulators {
                    write_cell(cell, &mut out);
                }
            }
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        if reader.take(4)? != SNAPSHOT_MAGIC {
            return Err(ExecError::CorruptSnapshot("not a window-state snapshot (bad magic)".into()));
        }
        let version = reader.u8()?;
        if version != SNAPSHOT_VERSION {
            return Err(ExecError::CorruptSnapshot(format!("snapshot version {version}, expected {SNAPSHOT_VERSION}")));
        }
        let max_event_time = match reader.u8()? {
            0 => None,
            1 => Some(reader.i64()?),
            flag => return Err(ExecError::CorruptSnapshot(format!("bad watermark flag {flag}"))),
        };
        let mut windows = Windows::new();
        let window_count = reader.u32()?;
        for _ in 0..window_count {
            let start = reader.i64()?;
            let group_count = reader.u32()? as usize;
            // The count comes from the bytes; cap the preallocation by what the bytes can hold.
            let mut groups =
                FxHashMap::with_capacity_and_hasher(group_count.min(reader.bytes.len()), Default::default());
            for _ in 0..group_count {
                let key_length = reader.u32()? as usize;
                let key: Box<[u8]> = reader.take(key_length)?.into();
                decode_key(&key, self.layout.keys.len())?;
                let last_update_batch = reader.i64()? as u64;
                let max_event_time = reader.i64()?;
                let accumulators = (0..self.folds.len()).map(|_| reader.cell()).collect::<Result<Vec<_>, _>>()?;
                groups.insert(key, Group { accumulators, last_update_batch, max_event_time, touched_in: 0 });
            }
            windows.insert(start, groups);
        }
        if !reader.bytes.is_empty() {
            return Err(ExecError::CorruptSnapshot(format!("{} trailing bytes", reader.bytes.len())));
        }
        self.key_bytes = windows.values().flat_map(|groups| groups.keys()).map(|key| key.len() as u64).sum();
        self.windows = windows;
        self.max_event_time = max_event_time;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int64Array, StringArray};
    use proptest::prelude::*;

    use super::*;

    const SIZE: i64 = 100;

    fn spec(lateness: i64) -> WindowSpec {
        WindowSpec { time_column: "t".into(), size_ms: SIZE, allowed_lateness_ms: lateness }
    }

    fn aggregates() -> Vec<Aggregate> {
        vec![
            Aggregate::count("n"),
            Aggregate::sum("v", "total"),
            Aggregate::min("v", "low"),
            Aggregate::max("v", "high"),
        ]
    }

    fn rows(input: &[(&str, i64, Option<i64>)]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(StringArray::from(input.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef),
            ("t", Arc::new(Int64Array::from(input.iter().map(|r| r.1).collect::<Vec<_>>())) as ArrayRef),
            ("v", Arc::new(Int64Array::from(input.iter().map(|r| r.2).collect::<Vec<_>>())) as ArrayRef),
        ])
        .expect("rows")
    }

    /// (window start, key) → (count, sum, min, max), from the final value of each update.
    type Table = BTreeMap<(i64, String), (i64, Option<i64>, Option<i64>, Option<i64>)>;

    fn absorb(table: &mut Table, updates: &RecordBatch) {
        let starts = updates.column(0).as_primitive::<Int64Type>();
        let keys = updates.column(1).as_string::<i32>();
        let value = |column: usize, row: usize| {
            let array = updates.column(column).as_primitive::<Int64Type>();
            (!array.is_null(row)).then(|| array.value(row))
        };
        for row in 0..updates.num_rows() {
            let entry = (value(2, row).expect("count"), value(3, row), value(4, row), value(5, row));
            table.insert((starts.value(row), keys.value(row).to_string()), entry);
        }
    }

    /// The naive reference: fold every non-late row, batch by batch, by hand.
    fn reference(batches: &[Vec<(String, i64, Option<i64>)>], lateness: i64) -> (Table, u64) {
        let mut table = Table::new();
        let mut max_time: Option<i64> = None;
        let mut late = 0;
        for batch in batches {
            let watermark = max_time.map(|max| max - lateness);
            let mut batch_max = max_time;
            for (key, time, value) in batch {
                let start = time.div_euclid(SIZE) * SIZE;
                if watermark.is_some_and(|w| start + SIZE <= w) {
                    late += 1;
                    continue;
                }
                batch_max = Some(batch_max.map_or(*time, |m| m.max(*time)));
                let entry = table.entry((start, key.clone())).or_insert((0, None, None, None));
                entry.0 += 1;
                if let Some(v) = value {
                    entry.1 = Some(entry.1.unwrap_or(0) + v);
                    entry.2 = Some(entry.2.map_or(*v, |m| m.min(*v)));
                    entry.3 = Some(entry.3.map_or(*v, |m| m.max(*v)));
                }
            }
            max_time = batch_max;
        }
        (table, late)
    }

    fn to_batch(batch: &[(String, i64, Option<i64>)]) -> RecordBatch {
        let borrowed: Vec<(&str, i64, Option<i64>)> = batch.iter().map(|(k, t, v)| (k.as_str(), *t, *v)).collect();
        rows(&borrowed)
    }

    /// Runs the batches through the engine: raw rows, or partials of `split`-row blocks.
    fn run_engine(
        batches: &[Vec<(String, i64, Option<i64>)>],
        lateness: i64,
        partial: bool,
        split: usize,
    ) -> (Table, u64) {
        let input = if partial { AggregateInput::Partials } else { AggregateInput::Rows };
        let mut exec = WindowAggregateExec::new(spec(lateness), vec!["k".into()], aggregates(), input);
        let mut partial_exec = PartialWindowAggregateExec::new(spec(lateness), vec!["k".into()], aggregates());
        let mut table = Table::new();
        let mut late = 0;
        for (index, batch) in batches.iter().enumerate() {
            let blocks: Vec<RecordBatch> = batch
                .chunks(split.max(1))
                .map(|chunk| {
                    let block = to_batch(chunk);
                    if partial {
                        partial_exec.execute(&block).expect("partial")
                    } else {
                        block
                    }
                })
                .collect();
            let output = exec.process(&blocks, index as u64).expect("process");
            if !partial {
                late += output.late_rows_dropped;
            }
            absorb(&mut table, &output.updates);
        }
        (table, late)
    }

    fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<(String, i64, Option<i64>)>>> {
        // Times mostly increase batch to batch, with some rows reaching back (late or not).
        proptest::collection::vec(
            proptest::collection::vec(("[a-c]", 0i64..250, proptest::option::of(-20i64..20)), 0..30),
            1..8,
        )
        .prop_map(|batches| {
            batches
                .into_iter()
                .enumerate()
                .map(|(index, batch)| batch.into_iter().map(|(k, t, v)| (k, t + index as i64 * 60, v)).collect())
                .collect()
        })
    }

    proptest! {
        #[test]
        fn agrees_with_the_naive_reference(batches in arbitrary_batches(), lateness in 0i64..120, split in 1usize..10) {
            let (expected, expected_late) = reference(&batches, lateness);
            let (rows_table, rows_late) = run_engine(&batches, lateness, false, split);
            prop_assert_eq!(&rows_table, &expected);
            prop_assert_eq!(rows_late, expected_late);
            let (partial_table, _) = run_engine(&batches, lateness, true, split);
            prop_assert_eq!(&partial_table, &expected, "partial aggregation must not change results");
        }

        #[test]
        fn snapshot_and_restore_continue_identically(batches in arbitrary_batches(), cut in 0usize..8) {
            let mut straight = WindowAggregateExec::new(spec(10), vec!["k".into()], aggregates(), AggregateInput::Rows);
            let mut restored = WindowAggregateExec::new(spec(10), vec!["k".into()], aggregates(), AggregateInput::Rows);
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block, index as u64).expect("straight");
                if index == cut.min(batches.len() - 1) {
                    let bytes = straight.snapshot();
                    let mut fresh = WindowAggregateExec::new(spec(10), vec!["k".into()], aggregates(), AggregateInput::Rows);
                    fresh.restore(&bytes).expect("restore");
                    prop_assert_eq!(fresh.snapshot(), bytes);
                    restored = fresh;
                    continue;
                }
                if index > cut.min(batches.len() - 1) {
                    let found = restored.process(&block, index as u64).expect("restored");
                    prop_assert_eq!(found.updates, expected.updates);
                    prop_assert_eq!(found.closed, expected.closed);
                } else {
                    restored.process(&block, index as u64).expect("restored");
                }
            }
        }
    }

    #[test]
    fn windows_close_once_the_watermark_passes_and_never_reopen() {
        let mut exec = WindowAggregateExec::new(spec(0), vec!["k".into()], aggregates(), AggregateInput::Rows);
        let first = exec.process(&[rows(&[("a", 10, Some(1)), ("b", 90, Some(2))])], 7).expect("first");
        assert!(first.closed.is_empty());
        assert_eq!(first.updates.num_rows(), 2);
        let second = exec.process(&[rows(&[("a", 205, Some(3))])], 9).expect("second");
        assert_eq!(
            second.closed,
            vec![ClosedWindow { window_start_ms: 0, window_end_ms: 100, last_update_batch: 7 }],
            "the window's last update was batch 7, though it closed in batch 9"
        );
        assert_eq!(exec.open_windows(), 1);
        let late = exec.process(&[rows(&[("a", 50, Some(9))])], 10).expect("late");
        assert_eq!(late.late_rows_dropped, 1);
        assert_eq!(late.updates.num_rows(), 0, "a closed window is never emitted again");
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = WindowAggregateExec::new(spec(0), vec!["k".into()], aggregates(), AggregateInput::Rows);
        exec.process(&[rows(&[("a", 10, Some(1)), ("b", 120, None)])], 5).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            let mut fresh = WindowAggregateExec::new(spec(0), vec!["k".into()], aggregates(), AggregateInput::Rows);
            assert!(fresh.restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
        let mut garbage = bytes.clone();
        garbage[5] = 7;
        let mut fresh = WindowAggregateExec::new(spec(0), vec!["k".into()], aggregates(), AggregateInput::Rows);
        assert!(matches!(fresh.restore(&garbage), Err(ExecError::CorruptSnapshot(_))));
    }

    #[test]
    fn the_size_counts_open_groups_and_forgets_closed_windows() {
        let new = || WindowAggregateExec::new(spec(0), vec!["k".into()], aggregates(), AggregateInput::Rows);
        let mut exec = new();
        assert_eq!(exec.size(), StateSize::default());
        exec.process(&[rows(&[("a", 10, Some(1)), ("bb", 20, Some(2)), ("a", 30, Some(3)), ("ccc", 50, None)])], 0)
            .expect("first");
        let first = exec.size();
        assert_eq!(first.keys, 3, "window 0 holds a, bb and ccc");
        // The size kept as groups open equals the one recounted from a snapshot.
        let mut restored = new();
        restored.restore(&exec.snapshot()).expect("restore");
        assert_eq!(restored.size(), first);
        // At 120 the watermark closes window 0: what is left is what the rows of window 100
        // alone make.
        let late = [("a", 110, Some(4)), ("dd", 120, Some(5))];
        exec.process(&[rows(&late)], 1).expect("second");
        let mut alone = new();
        alone.process(&[rows(&late)], 0).expect("alone");
        assert_eq!(exec.size().keys, 2);
        assert_eq!(exec.size(), alone.size());
        assert!(first.bytes > alone.size().bytes, "three groups with longer keys hold more");
    }
}
