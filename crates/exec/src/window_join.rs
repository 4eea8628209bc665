//! The window join: a symmetric hash join per (tumbling window, key) of one reduce partition.
//! A row is first matched with the other side's rows held for its window and key, each match
//! emitted as an output row `(window_start, window_end, left columns, right columns)`, then
//! held itself. So each pair is emitted exactly once, when its later row arrives: the output
//! is insert-only and complete as it goes, and nothing waits for a window to close (a run's
//! last windows may never close).
//!
//! A window's rows are let go once the watermark (the largest event time seen minus the
//! allowed lateness, as the window aggregate computes it: fixed for a batch at its start)
//! passes the window's end; a row for a window let go is late, dropped and counted. With
//! `distinct`, a row whose columns equal a row of its side held for the same window and key
//! is skipped: every pair it would make equals one made already. Then no two held rows of a
//! side are equal, so no two pairs are, and each distinct output row is emitted once.
//!
//! Output depends only on the state and the order of the input rows (rows are held, and
//! matched, in arrival order), so a replay after recovery emits the same rows.
//!
//! ```text
//! snapshot = state_clock start, window count:u32, per window in start order:
//!            start:i64 group count:u32, per group in key byte order:
//!            len:u32 key left:u32 cell{left columns}* right:u32 cell{right columns}*
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::{FxHashMap, FxHashSet};
use sleet_plan::validate::{WINDOW_END_COLUMN, WINDOW_START_COLUMN};
use sleet_plan::{JoinColumn, WindowJoinSpec, WindowKind};

use crate::cell::{
    column, columns, event_times, read_cell, sorted_keys, write_cells, write_key, Cell, ColumnBuilder, Reader,
};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::state::{StateCounts, StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};

const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLWJ", version: 1, what: "window join" };

/// A side's rows held for one window and key.
#[derive(Debug, Default)]
struct SideRows {
    /// In arrival order, which is the order they are matched in.
    rows: Vec<Box<[Cell]>>,
    /// With `distinct`: each held row's cells encoded, to skip a row equal to one held.
    encoded: FxHashSet<Box<[u8]>>,
}

/// Both sides' rows of one window and key: `sides[0]` the left, `sides[1]` the right.
#[derive(Debug, Default)]
struct Group {
    sides: [SideRows; 2],
}

type Windows = BTreeMap<i64, FxHashMap<Box<[u8]>, Group>>;

pub struct WindowJoinOutput {
    /// The pairs this batch completed.
    pub rows: RecordBatch,
    pub counts: StateCounts,
}

pub struct WindowJoinExec {
    spec: WindowJoinSpec,
    size_ms: i64,
    windows: Windows,
    /// `ttl_ms` is the allowed lateness, so `late_before` is the watermark.
    clock: StateClock,
    rows_held: u64,
    /// The estimate `StateSize` reports for the rows and keys held, kept as they come and go.
    bytes_held: u64,
    schema: Option<SchemaRef>,
}

/// What one row's cells are estimated to cost held: the cells, their text, the boxed slice's
/// pointer and length, and with `distinct` their encoding in the side's set.
fn row_bytes(cells: &[Cell], encoded_len: Option<usize>) -> u64 {
    let text: usize = cells.iter().map(|cell| if let Cell::Utf8(value) = cell { value.len() } else { 0 }).sum();
    let encoded = encoded_len.map_or(0, |len| len as u64 + ENTRY_OVERHEAD_BYTES);
    (std::mem::size_of::<Box<[Cell]>>() + std::mem::size_of_val(cells) + text) as u64 + encoded
}

fn group_bytes(key: &[u8]) -> u64 {
    key.len() as u64 + ENTRY_OVERHEAD_BYTES + std::mem::size_of::<Group>() as u64
}

impl WindowJoinExec {
    pub fn new(spec: WindowJoinSpec) -> Self {
        let WindowKind::Tumbling { size_ms } = spec.window.kind() else {
            unreachable!("validated: a window join is over tumbling windows")
        };
        assert!(size_ms > 0, "validated: a positive window size");
        let clock = StateClock::new(spec.window.allowed_lateness_ms);
        WindowJoinExec { spec, size_ms, windows: Windows::new(), clock, rows_held: 0, bytes_held: 0, schema: None }
    }

    pub fn watermark_ms(&self) -> Option<i64> {
        self.clock.late_before()
    }

    /// The (window, key) groups held, and an estimate of their bytes: keys, rows and their
    /// text, and a hash table entry per group and per window.
    pub fn size(&self) -> StateSize {
        let groups: u64 = self.windows.values().map(|groups| groups.len() as u64).sum();
        let per_window = ENTRY_OVERHEAD_BYTES + std::mem::size_of::<FxHashMap<Box<[u8]>, Group>>() as u64;
        StateSize { keys: groups, bytes: self.bytes_held + self.windows.len() as u64 * per_window }
    }

    pub fn rows_held(&self) -> u64 {
        self.rows_held
    }

    /// Joins the rows of one batch with the state and with each other, and lets go of the
    /// windows the watermark has passed since.
    pub fn process(&mut self, inputs: &[RecordBatch]) -> Result<WindowJoinOutput, ExecError> {
        let mut counts = StateCounts::default();
        let schema = match (&self.schema, inputs.first()) {
            (Some(schema), _) => Arc::clone(schema),
            (None, Some(first)) => {
                let schema = self.output_schema(&first.schema())?;
                self.schema = Some(Arc::clone(&schema));
                schema
            }
            (None, None) => self.output_schema(&Schema::empty())?,
        };
        let mut builders: Vec<ColumnBuilder> =
            schema.fields().iter().map(|field| ColumnBuilder::new(field.data_type(), 0)).collect();
        let watermark = self.watermark_ms();
        for batch in inputs {
            self.take_block(batch, watermark, &mut builders, &mut counts)?;
        }
        self.release_windows();
        let columns: Vec<ArrayRef> = builders.into_iter().map(ColumnBuilder::finish).collect();
        let rows = RecordBatch::try_new(schema, columns).map_err(ExecError::arrow("building window join output"))?;
        Ok(WindowJoinOutput { rows, counts })
    }

    /// `window_start`, `window_end`, then each side's columns with their input's types, every
    /// one nullable: whether a stage's batch says its column may hold a null depends on the
    /// batch, and the output's schema must not.
    fn output_schema(&self, input: &Schema) -> Result<SchemaRef, ExecError> {
        let mut fields = vec![
            Field::new(WINDOW_START_COLUMN, DataType::Int64, false),
            Field::new(WINDOW_END_COLUMN, DataType::Int64, false),
        ];
        for column in self.spec.outputs() {
            let data_type = if input.fields().is_empty() {
                // No input yet: the output has no row, so its types matter to no one.
                DataType::Utf8
            } else {
                let found =
                    input.field_with_name(&column.input).map_err(|_| ExecError::MissingColumn(column.input.clone()))?;
                found.data_type().clone()
            };
            fields.push(Field::new(&column.output, data_type, true));
        }
        Ok(Arc::new(Schema::new(fields)))
    }

    fn take_block(
        &mut self,
        batch: &RecordBatch,
        watermark: Option<i64>,
        builders: &mut [ColumnBuilder],
        counts: &mut StateCounts,
    ) -> Result<(), ExecError> {
        let sides = column(batch, &self.spec.side_column)?;
        let sides = sides.as_boolean_opt().ok_or_else(|| ExecError::MissingColumn(self.spec.side_column.clone()))?;
        let key_array = column(batch, &self.spec.key_column)?;
        let key_arrays = [Arc::clone(&key_array)];
        let key_columns = KeyColumns::new(&key_arrays);
        let times = event_times(batch, &self.spec.window.time_column)?;
        let inputs = [input_columns(batch, &self.spec.left)?, input_columns(batch, &self.spec.right)?];
        let mut key = Vec::with_capacity(16);
        let mut encoded = Vec::new();
        for row in 0..batch.num_rows() {
            if sides.is_null(row) || times.is_null(row) {
                counts.invalid_rows_dropped += 1;
                continue;
            }
            // A null key equals nothing, as in SQL: the row can never pair, so it is not held.
            if key_array.is_null(row) {
                continue;
            }
            let time = times.value(row);
            let start = time.div_euclid(self.size_ms) * self.size_ms;
            let end = start + self.size_ms;
            if watermark.is_some_and(|watermark| end <= watermark) {
                counts.late_rows_dropped += 1;
                continue;
            }
            self.clock.observe(time);
            let side = usize::from(!sides.value(row));
            let cells: Box<[Cell]> = inputs[side].iter().map(|array| read_cell(array.as_ref(), row)).collect();
            key.clear();
            key_columns.encode(row, &mut key);
            let encoded_len = if self.spec.distinct {
                encoded.clear();
                write_cells(&cells, &mut encoded);
                let group = self.windows.get(&start).and_then(|groups| groups.get(key.as_slice()));
                if group.is_some_and(|group| group.sides[side].encoded.contains(encoded.as_slice())) {
                    continue;
                }
                Some(encoded.len())
            } else {
                None
            };
            if let Some(group) = self.windows.get(&start).and_then(|groups| groups.get(key.as_slice())) {
                for other in &group.sides[1 - side].rows {
                    let (left, right) = if side == 0 { (&cells[..], &other[..]) } else { (&other[..], &cells[..]) };
                    append_pair(builders, start, end, left, right);
                }
            }
            if self.rows_held >= self.spec.max_rows {
                counts.refused_rows += 1;
                continue;
            }
            let groups = self.windows.entry(start).or_default();
            if !groups.contains_key(key.as_slice()) {
                self.bytes_held += group_bytes(&key);
            }
            let held = &mut groups.entry(key.as_slice().into()).or_default().sides[side];
            if encoded_len.is_some() {
                held.encoded.insert(encoded.as_slice().into());
            }
            self.bytes_held += row_bytes(&cells, encoded_len);
            self.rows_held += 1;
            held.rows.push(cells);
        }
        Ok(())
    }

    /// Drops every window whose end the watermark has reached: no row of it can come any more.
    fn release_windows(&mut self) {
        let Some(watermark) = self.watermark_ms() else { return };
        while let Some(entry) = self.windows.first_entry() {
            if *entry.key() + self.size_ms > watermark {
                break;
            }
            for (key, group) in entry.remove() {
                self.forget(&key, &group);
            }
        }
    }

    fn forget(&mut self, key: &[u8], group: &Group) {
        self.bytes_held -= group_bytes(key);
        for side in &group.sides {
            self.rows_held -= side.rows.len() as u64;
            for row in &side.rows {
                self.bytes_held -= row_bytes(row, self.encoded_len(row));
            }
        }
    }

    fn encoded_len(&self, cells: &[Cell]) -> Option<usize> {
        self.spec.distinct.then(|| {
            let mut encoded = Vec::new();
            write_cells(cells, &mut encoded);
            encoded.len()
        })
    }

    /// The whole state as bytes: deterministic (windows by start, groups by key bytes, rows
    /// in arrival order). A side's set of encoded rows is not written: it is its rows'.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        out.extend_from_slice(&(self.windows.len() as u32).to_le_bytes());
        for (start, groups) in &self.windows {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
            for key in sorted_keys(groups) {
                write_key(key, &mut out);
                for side in &groups[key].sides {
                    out.extend_from_slice(&(side.rows.len() as u32).to_le_bytes());
                    for row in &side.rows {
                        write_cells(row, &mut out);
                    }
                }
            }
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        let clock = StateClock::read_snapshot_start(self.spec.window.allowed_lateness_ms, &SNAPSHOT, &mut reader)?;
        let widths = [self.spec.left.len(), self.spec.right.len()];
        let mut windows = Windows::new();
        let (mut rows_held, mut bytes_held) = (0u64, 0u64);
        let window_count = reader.u32()?;
        for _ in 0..window_count {
            let start = reader.i64()?;
            if start.rem_euclid(self.size_ms) != 0 {
                return Err(ExecError::CorruptSnapshot(format!("window start {start} is not a window's")));
            }
            let group_count = reader.u32()? as usize;
            // The count comes from the bytes; cap the preallocation by what the bytes can hold.
            let mut groups =
                FxHashMap::with_capacity_and_hasher(group_count.min(reader.bytes.len()), Default::default());
            for _ in 0..group_count {
                let key = reader.key(1)?;
                bytes_held += group_bytes(&key);
                let mut group = Group::default();
                for (side, width) in widths.iter().enumerate() {
                    let count = reader.u32()?;
                    for _ in 0..count {
                        let cells: Box<[Cell]> = reader.cells(*width)?.into();
                        let encoded_len = self.encoded_len(&cells);
                        if encoded_len.is_some() {
                            let mut encoded = Vec::new();
                            write_cells(&cells, &mut encoded);
                            if !group.sides[side].encoded.insert(encoded.into()) {
                                return Err(ExecError::CorruptSnapshot("a distinct join holds a row twice".into()));
                            }
                        }
                        bytes_held += row_bytes(&cells, encoded_len);
                        rows_held += 1;
                        group.sides[side].rows.push(cells);
                    }
                }
                if groups.insert(key, group).is_some() {
                    return Err(ExecError::CorruptSnapshot("a key appears twice in a window".into()));
                }
            }
            if windows.insert(start, groups).is_some() {
                return Err(ExecError::CorruptSnapshot("a window appears twice".into()));
            }
        }
        reader.finish()?;
        self.windows = windows;
        self.clock = clock;
        self.rows_held = rows_held;
        self.bytes_held = bytes_held;
        Ok(())
    }
}

fn input_columns(batch: &RecordBatch, side: &[JoinColumn]) -> Result<Vec<ArrayRef>, ExecError> {
    let names: Vec<String> = side.iter().map(|column| column.input.clone()).collect();
    columns(batch, &names)
}

fn append_pair(builders: &mut [ColumnBuilder], start: i64, end: i64, left: &[Cell], right: &[Cell]) {
    builders[0].append(&Cell::Int64(start));
    builders[1].append(&Cell::Int64(end));
    for (builder, cell) in builders[2..].iter_mut().zip(left.iter().chain(right)) {
        builder.append(cell);
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::types::Int64Type;
    use arrow_array::{BooleanArray, Int64Array, StringArray};
    use proptest::prelude::*;
    use sleet_plan::WindowSpec;

    use super::*;

    const SIZE: i64 = 100;

    /// (side: Some(true) left, key, event time, v, s).
    type TestRow = (Option<bool>, Option<i64>, Option<i64>, Option<i64>, String);
    /// (window start, window end, left v, left s, right v).
    type OutputRow = (i64, i64, Option<i64>, Option<String>, Option<i64>);

    fn spec(lateness: i64, distinct: bool) -> WindowJoinSpec {
        WindowJoinSpec {
            window: WindowSpec::tumbling("t", SIZE, lateness),
            side_column: "left".into(),
            key_column: "k".into(),
            left: vec![JoinColumn::new("v", "l_v"), JoinColumn::new("s", "l_s")],
            right: vec![JoinColumn::new("v", "r_v")],
            distinct,
            max_rows: 1_000_000,
        }
    }

    fn to_batch(rows: &[TestRow]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("left", Arc::new(rows.iter().map(|row| row.0).collect::<BooleanArray>()) as ArrayRef),
            ("k", Arc::new(rows.iter().map(|row| row.1).collect::<Int64Array>()) as ArrayRef),
            ("t", Arc::new(rows.iter().map(|row| row.2).collect::<Int64Array>()) as ArrayRef),
            ("v", Arc::new(rows.iter().map(|row| row.3).collect::<Int64Array>()) as ArrayRef),
            ("s", Arc::new(rows.iter().map(|row| Some(row.4.as_str())).collect::<StringArray>()) as ArrayRef),
        ])
        .expect("rows")
    }

    fn output_rows(batch: &RecordBatch) -> Vec<OutputRow> {
        if batch.num_rows() == 0 {
            // Without input the operator has no types to give its columns.
            return Vec::new();
        }
        let int = |index: usize| batch.column(index).as_primitive::<Int64Type>().clone();
        let (starts, ends, left_v, right_v) = (int(0), int(1), int(2), int(4));
        let left_s = batch.column(3).as_string::<i32>();
        (0..batch.num_rows())
            .map(|row| {
                let value = |array: &arrow_array::Int64Array| array.is_valid(row).then(|| array.value(row));
                let text = left_s.is_valid(row).then(|| left_s.value(row).to_string());
                (starts.value(row), ends.value(row), value(&left_v), text, value(&right_v))
            })
            .collect()
    }

    /// The naive reference, by hand: per batch, the rows whose window ends after the watermark
    /// the batch starts with (the largest time of the rows taken before, minus the lateness)
    /// are taken; then every left and right row taken of one window and key pair up (with
    /// `distinct`, each pair once per window and key).
    fn reference(batches: &[Vec<TestRow>], lateness: i64, distinct: bool) -> (Vec<OutputRow>, u64) {
        let mut taken: Vec<&TestRow> = Vec::new();
        let mut max_time: Option<i64> = None;
        let mut late = 0;
        for batch in batches {
            let watermark = max_time.map(|max| max - lateness);
            for row in batch {
                let (Some(_), Some(_), Some(time)) = (row.0, row.1, row.2) else { continue };
                if watermark.is_some_and(|watermark| time.div_euclid(SIZE) * SIZE + SIZE <= watermark) {
                    late += 1;
                    continue;
                }
                max_time = Some(max_time.map_or(time, |max| max.max(time)));
                taken.push(row);
            }
        }
        // Each pair with its key: `distinct` tells rows apart per window and key.
        let mut pairs = Vec::new();
        for left in taken.iter().filter(|row| row.0 == Some(true)) {
            for right in taken.iter().filter(|row| row.0 == Some(false)) {
                let start = left.2.expect("taken").div_euclid(SIZE) * SIZE;
                if left.1 == right.1 && right.2.expect("taken").div_euclid(SIZE) * SIZE == start {
                    pairs.push((left.1, (start, start + SIZE, left.3, Some(left.4.clone()), right.3)));
                }
            }
        }
        pairs.sort();
        if distinct {
            pairs.dedup();
        }
        let mut pairs: Vec<OutputRow> = pairs.into_iter().map(|(_, row)| row).collect();
        pairs.sort();
        (pairs, late)
    }

    /// Runs the batches through the engine, each cut into blocks of `split` rows, the state
    /// snapshotted after batch `cut` and restored into a new operator that carries on.
    fn run_engine(
        batches: &[Vec<TestRow>],
        lateness: i64,
        distinct: bool,
        split: usize,
        cut: usize,
    ) -> (Vec<OutputRow>, u64) {
        let mut exec = WindowJoinExec::new(spec(lateness, distinct));
        let mut found = Vec::new();
        let mut late = 0;
        for (index, batch) in batches.iter().enumerate() {
            let blocks: Vec<RecordBatch> = batch.chunks(split.max(1)).map(to_batch).collect();
            let output = exec.process(&blocks).expect("process");
            late += output.counts.late_rows_dropped;
            found.extend(output_rows(&output.rows));
            if index == cut {
                let bytes = exec.snapshot();
                let mut restored = WindowJoinExec::new(spec(lateness, distinct));
                restored.restore(&bytes).expect("restore");
                assert_eq!(restored.snapshot(), bytes, "a restored state snapshots the same");
                assert_eq!(restored.size(), exec.size(), "the size kept as rows come equals the one recounted");
                exec = restored;
            }
        }
        found.sort();
        (found, late)
    }

    /// Up to 8 batches of up to 30 rows; batch `b`'s times are drawn from `[60·b, 60·b + 250)`,
    /// so they mostly increase, some reaching back (late or not). Few keys and values, so that
    /// rows pair and repeat.
    fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<TestRow>>> {
        let side = prop_oneof![8 => any::<bool>().prop_map(Some), 1 => Just(None)];
        let key = prop_oneof![8 => (0i64..3).prop_map(Some), 1 => Just(None)];
        let time = prop_oneof![12 => (0i64..250).prop_map(Some), 1 => Just(None)];
        let row = (side, key, time, proptest::option::of(0i64..3), "[ab]");
        proptest::collection::vec(proptest::collection::vec(row, 0..30), 1..8).prop_map(|batches| {
            batches
                .into_iter()
                .enumerate()
                .map(|(index, batch)| {
                    let shift = index as i64 * 60;
                    batch
                        .into_iter()
                        .map(|(side, key, time, v, s)| (side, key, time.map(|t| t + shift), v, s))
                        .collect()
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn agrees_with_a_nested_loop_join_of_the_rows_on_time(
            batches in arbitrary_batches(),
            lateness in 0i64..150,
            distinct: bool,
            split in 1usize..10,
            cut in 0usize..8,
        ) {
            let (expected, expected_late) = reference(&batches, lateness, distinct);
            let (found, late) = run_engine(&batches, lateness, distinct, split, cut);
            prop_assert_eq!(found, expected);
            prop_assert_eq!(late, expected_late);
        }

        /// Output rows come in one order for one input order: a replay emits the same batch.
        #[test]
        fn a_restored_state_emits_what_the_original_does(batches in arbitrary_batches(), distinct: bool, cut in 0usize..8) {
            let mut straight = WindowJoinExec::new(spec(30, distinct));
            let mut restored = WindowJoinExec::new(spec(30, distinct));
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block).expect("straight");
                let found = restored.process(&block).expect("restored");
                prop_assert_eq!(&found.rows, &expected.rows);
                if index == cut {
                    let mut fresh = WindowJoinExec::new(spec(30, distinct));
                    fresh.restore(&straight.snapshot()).expect("restore");
                    restored = fresh;
                }
            }
        }
    }

    fn row(left: bool, key: i64, time: i64, v: i64) -> TestRow {
        (Some(left), Some(key), Some(time), Some(v), "a".into())
    }

    #[test]
    fn a_pair_is_emitted_when_its_later_row_arrives_and_a_window_goes_once_the_watermark_passes() {
        let mut exec = WindowJoinExec::new(spec(0, false));
        let first = exec.process(&[to_batch(&[row(true, 1, 10, 7), row(false, 2, 20, 8)])]).expect("first");
        assert_eq!(first.rows.num_rows(), 0, "no pair yet");
        let second = exec.process(&[to_batch(&[row(false, 1, 50, 9), row(true, 1, 60, 6)])]).expect("second");
        assert_eq!(
            output_rows(&second.rows),
            [(0, 100, Some(7), Some("a".into()), Some(9)), (0, 100, Some(6), Some("a".into()), Some(9)),]
        );
        assert_eq!(exec.size().keys, 2, "keys 1 and 2 of window 0");
        // A row at 150 moves the watermark past window 0's end: its rows go, and a row for it is late.
        let third = exec.process(&[to_batch(&[row(true, 2, 150, 1)])]).expect("third");
        assert_eq!(third.rows.num_rows(), 0);
        assert_eq!((exec.size().keys, exec.rows_held()), (1, 1));
        let late = exec.process(&[to_batch(&[row(true, 2, 99, 1)])]).expect("late");
        assert_eq!((late.rows.num_rows(), late.counts.late_rows_dropped), (0, 1));
    }

    #[test]
    fn a_full_state_still_matches_a_row_but_does_not_hold_it() {
        let mut exec = WindowJoinExec::new(WindowJoinSpec { max_rows: 2, ..spec(0, false) });
        let rows = [row(true, 1, 10, 1), row(false, 1, 11, 2), row(false, 1, 12, 3), row(true, 1, 13, 4)];
        let output = exec.process(&[to_batch(&rows)]).expect("process");
        let right_values: Vec<Option<i64>> = output_rows(&output.rows).iter().map(|row| row.4).collect();
        assert_eq!(right_values, [Some(2), Some(3), Some(2)], "3 met the left row held; 4 met 2 only");
        assert_eq!((output.counts.refused_rows, exec.rows_held()), (2, 2));
    }

    #[test]
    fn distinct_holds_one_of_equal_rows_and_the_size_counts_it_once() {
        let mut exec = WindowJoinExec::new(spec(0, true));
        let output = exec
            .process(&[to_batch(&[
                row(true, 1, 10, 1),
                row(false, 1, 11, 2),
                row(false, 1, 12, 2),
                row(true, 1, 13, 1),
            ])])
            .expect("process");
        assert_eq!(output.rows.num_rows(), 1);
        assert_eq!(exec.rows_held(), 2);
        let mut once = WindowJoinExec::new(spec(0, true));
        once.process(&[to_batch(&[row(true, 1, 10, 1), row(false, 1, 11, 2)])]).expect("once");
        assert_eq!(exec.size(), once.size());
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = WindowJoinExec::new(spec(0, true));
        exec.process(&[to_batch(&[row(true, 1, 10, 1), row(false, 2, 120, 2)])]).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            let mut fresh = WindowJoinExec::new(spec(0, true));
            assert!(fresh.restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
        let mut fresh = WindowJoinExec::new(spec(0, true));
        assert!(matches!(fresh.restore(b"SLWS\x01"), Err(ExecError::CorruptSnapshot(_))));
    }
}
