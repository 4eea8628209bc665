//! Per key, readings of counters (of three encodings) into the increment each reading adds,
//! in event-time order within and across batches, so that sums of the output are exact
//! whatever order readings arrive in, within a declared lateness.
//!
//! # Reference semantics
//!
//! A key's readings ordered by time are `r1 < r2 < …`; the increment of `r_i` is
//!
//! - `counter`: its value `v_i`;
//! - `cumulative`: `(v_i − v_{i−1}) mod 2^wrap_bits` (a counter that wrapped once between two
//!   readings counts what it added; one that wrapped twice cannot be told apart);
//! - `rate`: `v_i × (t_i − t_{i−1}) / 1000` (a rate per second, times in ms).
//!
//! A key's first reading has no predecessor: it adds its value for `counter` and 0 for
//! `cumulative` and `rate` (it sets the baseline).
//!
//! Within a batch, readings are taken in event-time order (equal times in row order). A
//! reading older than its key's newest is late. With `late: fold` it is inserted between its
//! neighbours `p` and `n` in the key's history: it emits its own increment against `p`, and a
//! correction row for `n` (`n`'s time, the key, `increment_new(n) − increment_old(n)` per value
//! column), so sums downstream equal the reference's over all readings (a `counter` reading's
//! increment has no predecessor in it, so a counter emits no corrections). With `late: drop`
//! it is dropped and counted. A reading more than `allowed_lateness_ms` behind its key's newest
//! is dropped and counted under either policy, as is a reading with the time of one the key
//! holds (a duplicate), and one with a null time or value (invalid).
//!
//! # State and its bounds
//!
//! A key holds the readings within `allowed_lateness_ms` of its newest, plus the newest one
//! before that horizon (the predecessor a late reading may need); with `late: drop`, its
//! newest alone. A key with no reading for `ttl_ms` of event time (against the largest event
//! time the operator has seen) is forgotten; its next reading starts a new baseline. With
//! `max_keys` keys held, the readings of a new key are refused (dropped and counted) until
//! keys expire: a flood of new keys cannot grow the state without bound, and the keys already
//! held stay exact.
//!
//! # Output
//!
//! The input's columns, one row per reading used and per correction, each value column
//! replaced by the increment: float64 for `rate`; the input's type for `counter` and
//! `cumulative` (an int64 counter stays exact over its whole range; a float64 one holding
//! whole numbers is exact below 2^53). A correction row copies the late reading's other
//! columns: they describe the same key.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::{IncrementsSpec, LatePolicy, ReadingEncoding};

use crate::cell::{columns, event_times, Reader};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::state::{StateCounts, StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};

/// A value as read: its column's own type, so an int64 counter never passes through an f64.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(value) => value as f64,
            Num::Float(value) => value,
        }
    }

    fn zero_like(self) -> Num {
        match self {
            Num::Int(_) => Num::Int(0),
            Num::Float(_) => Num::Float(0.0),
        }
    }

    /// `self − other`, what a correction carries.
    fn minus(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.wrapping_sub(b)),
            (a, b) => Num::Float(a.as_f64() - b.as_f64()),
        }
    }
}

/// The increment of reading `(time, value)` of one value column, given its predecessor.
fn increment(encoding: ReadingEncoding, wrap_bits: u32, previous: Option<(i64, Num)>, time: i64, value: Num) -> Num {
    match (encoding, previous) {
        (ReadingEncoding::Counter, _) => value,
        (ReadingEncoding::Cumulative, None) => value.zero_like(),
        (ReadingEncoding::Cumulative, Some((_, before))) => match (value, before) {
            // Subtracting modulo 2^64 first is exact modulo 2^wrap_bits, as 2^wrap_bits divides 2^64.
            (Num::Int(now), Num::Int(before)) => Num::Int(now.wrapping_sub(before).rem_euclid(1i64 << wrap_bits)),
            (now, before) => Num::Float((now.as_f64() - before.as_f64()).rem_euclid(2f64.powi(wrap_bits as i32))),
        },
        (ReadingEncoding::Rate, None) => Num::Float(0.0),
        (ReadingEncoding::Rate, Some((before_ms, _))) => {
            Num::Float(value.as_f64() * (time - before_ms) as f64 / 1000.0)
        }
    }
}

/// One key's kept readings, in time order; `values` holds `columns` values per reading.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    times: Vec<i64>,
    values: Vec<Num>,
}

impl Series {
    fn reading(&self, index: usize, columns: usize) -> (i64, &[Num]) {
        (self.times[index], &self.values[index * columns..(index + 1) * columns])
    }
}

/// A value column of the output, built row by row.
enum ValueBuilder {
    Int(Int64Builder),
    Float(Float64Builder),
}

impl ValueBuilder {
    fn append(&mut self, value: Num) {
        match (self, value) {
            (ValueBuilder::Int(builder), Num::Int(value)) => builder.append_value(value),
            // Only a float input makes float increments of a counter or cumulative column.
            (ValueBuilder::Int(builder), Num::Float(value)) => builder.append_value(value as i64),
            (ValueBuilder::Float(builder), value) => builder.append_value(value.as_f64()),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            ValueBuilder::Int(mut builder) => Arc::new(builder.finish()),
            ValueBuilder::Float(mut builder) => Arc::new(builder.finish()),
        }
    }
}

/// A value column of the input, cast once per batch.
enum ValueColumn<'a> {
    Int(&'a Int64Array),
    Float(&'a Float64Array),
}

impl ValueColumn<'_> {
    fn get(&self, row: usize) -> Option<Num> {
        match self {
            ValueColumn::Int(array) => array.is_valid(row).then(|| Num::Int(array.value(row))),
            ValueColumn::Float(array) => array.is_valid(row).then(|| Num::Float(array.value(row))),
        }
    }
}

pub struct IncrementsOutput {
    pub rows: RecordBatch,
    pub counts: StateCounts,
}

/// The output rows of one batch, as they are decided: the input row each copies, its time,
/// and its increments (column by column).
struct Emitted {
    rows: Vec<u32>,
    times: Vec<i64>,
    values: Vec<ValueBuilder>,
}

impl Emitted {
    fn push(&mut self, row: usize, time: i64, values: impl Iterator<Item = Num>) {
        self.rows.push(row as u32);
        self.times.push(time);
        for (builder, value) in self.values.iter_mut().zip(values) {
            builder.append(value);
        }
    }
}

pub struct IncrementsExec {
    spec: IncrementsSpec,
    series: FxHashMap<Box<[u8]>, Series>,
    clock: StateClock,
    /// Kept up to date so the size is reported without visiting every key.
    readings: u64,
    key_bytes: u64,
    schema: Option<SchemaRef>,
}

const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLIN", version: 1, what: "increments" };
const TAG_INT: u8 = 0;
const TAG_FLOAT: u8 = 1;

impl IncrementsExec {
    pub fn new(spec: IncrementsSpec) -> Self {
        let ttl_ms = spec.ttl_ms;
        IncrementsExec {
            spec,
            series: FxHashMap::default(),
            clock: StateClock::new(ttl_ms),
            readings: 0,
            key_bytes: 0,
            schema: None,
        }
    }

    pub fn size(&self) -> StateSize {
        let reading_bytes = 8 + self.spec.columns.len() as u64 * std::mem::size_of::<Num>() as u64;
        StateSize {
            keys: self.series.len() as u64,
            bytes: self.key_bytes + self.series.len() as u64 * ENTRY_OVERHEAD_BYTES + self.readings * reading_bytes,
        }
    }

    /// Takes the readings of one batch (`inputs`, in any order) and returns their increments.
    pub fn process(&mut self, inputs: &[RecordBatch]) -> Result<IncrementsOutput, ExecError> {
        let mut counts = StateCounts::default();
        let rows = match inputs {
            [] => RecordBatch::new_empty(Arc::new(Schema::empty())),
            [batch] => self.process_batch(batch, &mut counts)?,
            // The batch's readings are ordered by time all together, whichever block each came in.
            [first, ..] => {
                let batch = arrow_select::concat::concat_batches(&first.schema(), inputs)
                    .map_err(ExecError::arrow("concatenating readings"))?;
                self.process_batch(&batch, &mut counts)?
            }
        };
        counts.expired_keys += self.sweep();
        Ok(IncrementsOutput { rows, counts })
    }

    fn output_schema(&mut self, input: &Schema) -> SchemaRef {
        let spec = &self.spec;
        Arc::clone(self.schema.get_or_insert_with(|| {
            let fields: Vec<Field> = input
                .fields()
                .iter()
                .map(|field| {
                    let rate = spec.encoding == ReadingEncoding::Rate && spec.columns.contains(field.name());
                    if rate {
                        Field::new(field.name(), DataType::Float64, field.is_nullable())
                    } else {
                        field.as_ref().clone()
                    }
                })
                .collect();
            Arc::new(Schema::new(fields))
        }))
    }

    fn process_batch(&mut self, batch: &RecordBatch, counts: &mut StateCounts) -> Result<RecordBatch, ExecError> {
        let schema = self.output_schema(&batch.schema());
        let key_arrays = columns(batch, &self.spec.keys)?;
        let keys = KeyColumns::new(&key_arrays);
        let times = event_times(batch, &self.spec.time_column)?;
        let value_arrays = columns(batch, &self.spec.columns)?;
        let value_columns: Vec<ValueColumn<'_>> = value_arrays
            .iter()
            .zip(&self.spec.columns)
            .map(|(array, name)| match array.data_type() {
                DataType::Int64 => Ok(ValueColumn::Int(array.as_primitive::<Int64Type>())),
                DataType::Float64 => Ok(ValueColumn::Float(array.as_primitive::<Float64Type>())),
                _ => Err(ExecError::MissingColumn(name.clone())),
            })
            .collect::<Result<_, _>>()?;

        let mut order: Vec<u32> = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            if times.is_valid(row) && value_columns.iter().all(|column| column.get(row).is_some()) {
                order.push(row as u32);
            } else {
                counts.invalid_rows_dropped += 1;
            }
        }
        // Event-time order; equal times keep row order, so the first of two equal readings is
        // the one kept and the second its duplicate.
        order.sort_unstable_by_key(|&row| (times.value(row as usize), row));

        let columns = self.spec.columns.len();
        let mut emitted = Emitted {
            rows: Vec::with_capacity(order.len()),
            times: Vec::with_capacity(order.len()),
            values: value_columns
                .iter()
                .map(|column| match (self.spec.encoding, column) {
                    (ReadingEncoding::Rate, _) | (_, ValueColumn::Float(_)) => {
                        ValueBuilder::Float(Float64Builder::with_capacity(order.len()))
                    }
                    (_, ValueColumn::Int(_)) => ValueBuilder::Int(Int64Builder::with_capacity(order.len())),
                })
                .collect(),
        };
        let mut key = Vec::with_capacity(64);
        let mut values: Vec<Num> = Vec::with_capacity(columns);
        for &row in order.iter() {
            let row = row as usize;
            let time = times.value(row);
            values.clear();
            values.extend(value_columns.iter().map(|column| column.get(row).expect("checked valid above")));
            self.clock.observe(time);
            key.clear();
            keys.encode(row, &mut key);
            self.take_reading(&key, row, time, &values, &mut emitted, counts);
        }

        let indices = UInt32Array::from(emitted.rows);
        let mut arrays: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|array| arrow_select::take::take(array.as_ref(), &indices, None))
            .collect::<Result<_, _>>()
            .map_err(ExecError::arrow("copying the readings' columns"))?;
        let input_schema = batch.schema();
        let time_index = input_schema
            .index_of(&self.spec.time_column)
            .map_err(|_| ExecError::MissingColumn(self.spec.time_column.clone()))?;
        arrays[time_index] = Arc::new(Int64Array::from(emitted.times));
        for (name, builder) in self.spec.columns.iter().zip(emitted.values) {
            let index = input_schema.index_of(name).map_err(|_| ExecError::MissingColumn(name.clone()))?;
            arrays[index] = builder.finish();
        }
        RecordBatch::try_new(schema, arrays).map_err(ExecError::arrow("building increments"))
    }

    /// Folds one valid reading into its key's history, emitting what it adds.
    fn take_reading(
        &mut self,
        key: &[u8],
        row: usize,
        time: i64,
        values: &[Num],
        emitted: &mut Emitted,
        counts: &mut StateCounts,
    ) {
        let spec = &self.spec;
        let columns = spec.columns.len();
        let increment_of = |previous: Option<(i64, &[Num])>, time: i64, index: usize, value: Num| {
            increment(spec.encoding, spec.wrap_bits, previous.map(|(at, values)| (at, values[index])), time, value)
        };
        let Some(series) = self.series.get_mut(key) else {
            if self.series.len() as u64 >= spec.max_keys {
                counts.refused_rows += 1;
                return;
            }
            emitted.push(
                row,
                time,
                values.iter().enumerate().map(|(index, value)| increment_of(None, time, index, *value)),
            );
            self.series.insert(key.into(), Series { times: vec![time], values: values.to_vec() });
            self.readings += 1;
            self.key_bytes += key.len() as u64;
            return;
        };
        let newest = *series.times.last().expect("a kept key holds a reading");
        if time > newest {
            let last = series.times.len() - 1;
            let previous = series.reading(last, columns);
            emitted.push(
                row,
                time,
                values.iter().enumerate().map(|(index, value)| increment_of(Some(previous), time, index, *value)),
            );
            series.times.push(time);
            series.values.extend_from_slice(values);
            self.readings += 1;
            self.readings -= prune(series, spec, columns);
            return;
        }
        if time == newest {
            counts.duplicate_rows_dropped += 1;
            return;
        }
        if spec.late == LatePolicy::Drop || time < newest.saturating_sub(spec.allowed_lateness_ms) {
            counts.late_rows_dropped += 1;
            return;
        }
        let position = match series.times.binary_search(&time) {
            Ok(_) => {
                counts.duplicate_rows_dropped += 1;
                return;
            }
            Err(position) => position,
        };
        let previous = position.checked_sub(1).map(|index| series.reading(index, columns));
        let next = series.reading(position, columns);
        emitted.push(
            row,
            time,
            values.iter().enumerate().map(|(index, value)| increment_of(previous, time, index, *value)),
        );
        if spec.encoding != ReadingEncoding::Counter {
            let (next_time, next_values) = next;
            let corrections = next_values.iter().enumerate().map(|(index, next_value)| {
                let now = increment_of(Some((time, values)), next_time, index, *next_value);
                let before = increment_of(previous, next_time, index, *next_value);
                now.minus(before)
            });
            emitted.push(row, next_time, corrections);
        }
        series.times.insert(position, time);
        let at = position * columns;
        series.values.splice(at..at, values.iter().copied());
        self.readings += 1;
        counts.late_rows_folded += 1;
    }

    /// Forgets the keys whose newest reading is more than `ttl_ms` behind the largest event
    /// time, when a sweep is due; returns how many.
    fn sweep(&mut self) -> u64 {
        let Some(expire_before) = self.clock.start_sweep() else { return 0 };
        let before = self.series.len();
        let (mut readings, mut key_bytes) = (0u64, 0u64);
        self.series.retain(|key, series| {
            let keep = *series.times.last().expect("a kept key holds a reading") >= expire_before;
            if !keep {
                readings += series.times.len() as u64;
                key_bytes += key.len() as u64;
            }
            keep
        });
        self.readings -= readings;
        self.key_bytes -= key_bytes;
        (before - self.series.len()) as u64
    }

    /// The whole state as bytes: deterministic (keys in sorted order).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        out.extend_from_slice(&(self.spec.columns.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.series.len() as u32).to_le_bytes());
        let mut keys: Vec<&Box<[u8]>> = self.series.keys().collect();
        keys.sort();
        for key in keys {
            let series = &self.series[key];
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
            out.extend_from_slice(&(series.times.len() as u32).to_le_bytes());
            for (index, time) in series.times.iter().enumerate() {
                out.extend_from_slice(&time.to_le_bytes());
                for value in series.reading(index, self.spec.columns.len()).1 {
                    match value {
                        Num::Int(value) => {
                            out.push(TAG_INT);
                            out.extend_from_slice(&value.to_le_bytes());
                        }
                        Num::Float(value) => {
                            out.push(TAG_FLOAT);
                            out.extend_from_slice(&value.to_bits().to_le_bytes());
                        }
                    }
                }
            }
        }
        out
    }

    /// Replaces the state with a snapshot `snapshot` made; damaged bytes are an error.
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        let clock = StateClock::read_snapshot_start(self.spec.ttl_ms, &SNAPSHOT, &mut reader)?;
        let columns = reader.u32()? as usize;
        if columns != self.spec.columns.len() {
            return Err(ExecError::CorruptSnapshot(format!(
                "the snapshot holds {columns} value columns, the operator has {}",
                self.spec.columns.len()
            )));
        }
        let key_count = reader.u32()? as usize;
        let mut series = FxHashMap::with_capacity_and_hasher(key_count.min(reader.bytes.len()), Default::default());
        let (mut readings, mut key_bytes) = (0u64, 0u64);
        for _ in 0..key_count {
            let key_length = reader.u32()? as usize;
            let key: Box<[u8]> = reader.take(key_length)?.into();
            crate::cell::decode_key(&key, self.spec.keys.len())?;
            let count = reader.u32()? as usize;
            if count == 0 {
                return Err(ExecError::CorruptSnapshot("a key without readings".into()));
            }
            let mut kept = Series {
                times: Vec::with_capacity(count.min(reader.bytes.len())),
                values: Vec::with_capacity((count * columns).min(reader.bytes.len())),
            };
            for _ in 0..count {
                let time = reader.i64()?;
                if kept.times.last().is_some_and(|last| *last >= time) {
                    return Err(ExecError::CorruptSnapshot("a key's readings are out of time order".into()));
                }
                kept.times.push(time);
                for _ in 0..columns {
                    kept.values.push(match reader.u8()? {
                        TAG_INT => Num::Int(reader.i64()?),
                        TAG_FLOAT => Num::Float(f64::from_bits(reader.i64()? as u64)),
                        tag => return Err(ExecError::CorruptSnapshot(format!("unknown value tag {tag}"))),
                    });
                }
            }
            readings += count as u64;
            key_bytes += key.len() as u64;
            if series.insert(key, kept).is_some() {
                return Err(ExecError::CorruptSnapshot("a key appears twice".into()));
            }
        }
        reader.finish()?;
        self.series = series;
        self.clock = clock;
        self.readings = readings;
        self.key_bytes = key_bytes;
        Ok(())
    }
}

/// Drops the readings a late reading can no longer need, after `series` gained a newest one:
/// those before the lateness horizon but the last of them (with `late: drop`, all but the
/// newest). Returns how many went.
fn prune(series: &mut Series, spec: &IncrementsSpec, columns: usize) -> u64 {
    let newest = *series.times.last().expect("just pushed");
    let keep_from = match spec.late {
        LatePolicy::Drop => series.times.len() - 1,
        LatePolicy::Fold => {
            let horizon = newest.saturating_sub(spec.allowed_lateness_ms);
            series.times.partition_point(|time| *time < horizon).saturating_sub(1)
        }
    };
    if keep_from > 0 {
        series.times.drain(..keep_from);
        series.values.drain(..keep_from * columns);
    }
    keep_from as u64
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use arrow_array::StringArray;
    use proptest::prelude::*;

    use super::*;

    const DAY_MS: i64 = 100;

    fn spec(encoding: ReadingEncoding, late: LatePolicy, lateness_ms: i64) -> IncrementsSpec {
        IncrementsSpec {
            keys: vec!["k".into()],
            time_column: "t".into(),
            encoding,
            columns: vec!["v".into()],
            late,
            allowed_lateness_ms: lateness_ms,
            ttl_ms: 1_000_000,
            wrap_bits: 32,
            max_keys: 1_000,
        }
    }

    fn int_rows(input: &[(Option<&str>, Option<i64>, Option<i64>)]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(StringArray::from(input.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef),
            ("t", Arc::new(Int64Array::from(input.iter().map(|r| r.1).collect::<Vec<_>>())) as ArrayRef),
            ("v", Arc::new(Int64Array::from(input.iter().map(|r| r.2).collect::<Vec<_>>())) as ArrayRef),
        ])
        .expect("rows")
    }

    fn float_rows(input: &[(&str, i64, f64)]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(StringArray::from(input.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef),
            ("t", Arc::new(Int64Array::from(input.iter().map(|r| r.1).collect::<Vec<_>>())) as ArrayRef),
            ("v", Arc::new(Float64Array::from(input.iter().map(|r| r.2).collect::<Vec<_>>())) as ArrayRef),
        ])
        .expect("rows")
    }

    /// `(key, time, increment)` of every output row, increments as f64.
    fn emitted(rows: &RecordBatch) -> Vec<(Option<String>, i64, f64)> {
        if rows.num_rows() == 0 {
            return Vec::new();
        }
        let keys = rows.column(0).as_string::<i32>();
        let times = rows.column(1).as_primitive::<Int64Type>();
        let values = rows.column(2);
        (0..rows.num_rows())
            .map(|row| {
                let value = match values.data_type() {
                    DataType::Int64 => values.as_primitive::<Int64Type>().value(row) as f64,
                    _ => values.as_primitive::<Float64Type>().value(row),
                };
                (keys.is_valid(row).then(|| keys.value(row).to_string()), times.value(row), value)
            })
            .collect()
    }

    fn run(exec: &mut IncrementsExec, batch: RecordBatch) -> (Vec<(Option<String>, i64, f64)>, StateCounts) {
        let output = exec.process(&[batch]).expect("process");
        (emitted(&output.rows), output.counts)
    }

    fn some(key: &str) -> Option<String> {
        Some(key.to_string())
    }

    #[test]
    fn a_cumulative_counter_that_wraps_at_2_to_the_32_adds_what_it_counted() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 0));
        let wrap = 1i64 << 32;
        let (rows, _) = run(
            &mut exec,
            int_rows(&[
                (Some("a"), Some(10), Some(wrap - 6)),
                (Some("a"), Some(20), Some(5)),
                (Some("a"), Some(30), Some(9)),
            ]),
        );
        assert_eq!(rows, vec![(some("a"), 10, 0.0), (some("a"), 20, 11.0), (some("a"), 30, 4.0)]);
    }

    #[test]
    fn a_float_cumulative_counter_stays_exact_below_2_to_the_53() {
        let mut spec = spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 0);
        spec.wrap_bits = 53;
        let mut exec = IncrementsExec::new(spec);
        let big = (1u64 << 53) as f64 - 2.0;
        let output = exec.process(&[float_rows(&[("a", 1, big - 3.0), ("a", 2, big), ("a", 3, 1.0)])]).expect("run");
        assert_eq!(emitted(&output.rows).iter().map(|row| row.2).collect::<Vec<_>>(), vec![0.0, 3.0, 3.0]);
    }

    #[test]
    fn a_rate_integrates_over_the_time_since_the_previous_reading() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Rate, LatePolicy::Fold, 0));
        let output =
            exec.process(&[float_rows(&[("a", 1_000, 5.0), ("a", 3_000, 2.5), ("a", 3_500, 4.0)])]).expect("run");
        assert_eq!(output.rows.schema().field(2).data_type(), &DataType::Float64);
        assert_eq!(emitted(&output.rows).iter().map(|row| row.2).collect::<Vec<_>>(), vec![0.0, 5.0, 2.0]);
    }

    #[test]
    fn a_late_reading_folds_in_with_a_correction_for_the_one_after_it() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 100));
        run(&mut exec, int_rows(&[(Some("a"), Some(10), Some(100)), (Some("a"), Some(30), Some(160))]));
        let (rows, counts) = run(&mut exec, int_rows(&[(Some("a"), Some(20), Some(150))]));
        // 20 adds 50 against 10; 30 now adds 10 instead of 60.
        assert_eq!(rows, vec![(some("a"), 20, 50.0), (some("a"), 30, -50.0)]);
        assert_eq!(counts, StateCounts { late_rows_folded: 1, ..StateCounts::default() });
    }

    #[test]
    fn late_beyond_the_horizon_duplicates_and_invalid_rows_are_dropped_and_counted() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Counter, LatePolicy::Fold, 50));
        run(&mut exec, int_rows(&[(Some("a"), Some(100), Some(1)), (Some("a"), Some(200), Some(2))]));
        let (rows, counts) = run(
            &mut exec,
            int_rows(&[
                (Some("a"), Some(149), Some(7)),
                (Some("a"), Some(200), Some(7)),
                (Some("a"), Some(150), Some(3)),
                (Some("a"), Some(150), Some(4)),
                (Some("a"), None, Some(4)),
                (Some("a"), Some(300), None),
            ]),
        );
        assert_eq!(rows, vec![(some("a"), 150, 3.0)], "a counter emits no corrections");
        assert_eq!(counts.late_rows_dropped, 1, "149 is more than 50 behind 200");
        assert_eq!(counts.duplicate_rows_dropped, 2, "200 is held; the second 150 repeats the first");
        assert_eq!(counts.invalid_rows_dropped, 2);
    }

    #[test]
    fn with_late_drop_any_reading_older_than_the_newest_is_dropped() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Counter, LatePolicy::Drop, 1_000));
        run(&mut exec, int_rows(&[(Some("a"), Some(100), Some(1))]));
        let (rows, counts) =
            run(&mut exec, int_rows(&[(Some("a"), Some(90), Some(5)), (Some("a"), Some(110), Some(6))]));
        assert_eq!(rows, vec![(some("a"), 110, 6.0)]);
        assert_eq!(counts.late_rows_dropped, 1);
        assert_eq!(exec.size().keys, 1);
    }

    #[test]
    fn a_null_key_is_a_key_of_its_own() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 0));
        let (rows, _) = run(
            &mut exec,
            int_rows(&[(None, Some(1), Some(5)), (Some("a"), Some(2), Some(50)), (None, Some(3), Some(8))]),
        );
        assert_eq!(rows, vec![(None, 1, 0.0), (some("a"), 2, 0.0), (None, 3, 3.0)]);
        assert_eq!(exec.size().keys, 2);
    }

    #[test]
    fn a_key_silent_for_its_ttl_expires_and_starts_a_new_baseline() {
        let mut spec = spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 0);
        spec.ttl_ms = 100;
        let mut exec = IncrementsExec::new(spec);
        run(&mut exec, int_rows(&[(Some("a"), Some(0), Some(10)), (Some("b"), Some(0), Some(10))]));
        let (_, counts) = run(&mut exec, int_rows(&[(Some("b"), Some(150), Some(20))]));
        assert_eq!(counts.expired_keys, 1, "a's newest (0) is more than 100 behind 150");
        assert_eq!(exec.size().keys, 1);
        let (rows, _) = run(&mut exec, int_rows(&[(Some("a"), Some(160), Some(90))]));
        assert_eq!(rows, vec![(some("a"), 160, 0.0)]);
    }

    #[test]
    fn new_keys_beyond_max_keys_are_refused_while_known_keys_go_on() {
        let mut spec = spec(ReadingEncoding::Counter, LatePolicy::Fold, 0);
        spec.max_keys = 1;
        let mut exec = IncrementsExec::new(spec);
        let (rows, counts) = run(
            &mut exec,
            int_rows(&[(Some("a"), Some(1), Some(1)), (Some("b"), Some(2), Some(2)), (Some("a"), Some(3), Some(3))]),
        );
        assert_eq!(rows, vec![(some("a"), 1, 1.0), (some("a"), 3, 3.0)]);
        assert_eq!(counts.refused_rows, 1);
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = IncrementsExec::new(spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 50));
        run(
            &mut exec,
            int_rows(&[(Some("a"), Some(1), Some(1)), (Some("b"), Some(2), Some(2)), (Some("a"), Some(30), Some(3))]),
        );
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            let mut fresh = IncrementsExec::new(spec(ReadingEncoding::Cumulative, LatePolicy::Fold, 50));
            assert!(fresh.restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
    }

    // The naive reference: which readings count is decided batch by batch, as the operator's
    // rules say, from every reading of a key seen so far; increments are then computed from
    // scratch over each key's accepted readings in time order, and summed per (key, day).

    type Reading = (String, i64, i64);
    type Sums = BTreeMap<(String, i64), f64>;

    /// The readings a reference keeps, and how many it dropped as late, dropped as duplicates
    /// and folded in late.
    fn reference_accepts(
        batches: &[Vec<Reading>],
        late: LatePolicy,
        lateness_ms: i64,
    ) -> (Vec<Reading>, u64, u64, u64) {
        let mut accepted: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
        let mut kept = Vec::new();
        let (mut late_count, mut duplicates, mut folded) = (0, 0, 0);
        for batch in batches {
            let mut sorted = batch.clone();
            sorted.sort_by_key(|reading| reading.1);
            for reading in sorted {
                let times = accepted.entry(reading.0.clone()).or_default();
                let newest = times.last().copied();
                let is_late = newest.is_some_and(|newest| {
                    reading.1 < newest && (late == LatePolicy::Drop || reading.1 < newest - lateness_ms)
                });
                if is_late {
                    late_count += 1;
                } else if times.contains(&reading.1) {
                    duplicates += 1;
                } else {
                    folded += u64::from(newest.is_some_and(|newest| reading.1 < newest));
                    times.insert(reading.1);
                    kept.push(reading);
                }
            }
        }
        (kept, late_count, duplicates, folded)
    }

    fn reference_sums(readings: &[Reading], encoding: ReadingEncoding) -> Sums {
        let mut by_key: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
        for (key, time, value) in readings {
            by_key.entry(key).or_default().push((*time, *value));
        }
        let mut sums = Sums::new();
        for (key, mut series) in by_key {
            series.sort();
            let mut previous: Option<(i64, i64)> = None;
            for (time, value) in series {
                let added = match (encoding, previous) {
                    (ReadingEncoding::Counter, _) => value as f64,
                    (_, None) => 0.0,
                    (ReadingEncoding::Cumulative, Some((_, before))) => (value - before).rem_euclid(1 << 32) as f64,
                    (ReadingEncoding::Rate, Some((before_ms, _))) => value as f64 * (time - before_ms) as f64 / 1000.0,
                };
                *sums.entry((key.to_string(), time.div_euclid(DAY_MS))).or_default() += added;
                previous = Some((time, value));
            }
        }
        sums
    }

    fn to_batch(readings: &[Reading], encoding: ReadingEncoding) -> RecordBatch {
        let keys = StringArray::from(readings.iter().map(|r| r.0.as_str()).collect::<Vec<_>>());
        let times = Int64Array::from(readings.iter().map(|r| r.1).collect::<Vec<_>>());
        let values: ArrayRef = match encoding {
            ReadingEncoding::Rate => {
                Arc::new(Float64Array::from(readings.iter().map(|r| r.2 as f64).collect::<Vec<_>>()))
            }
            _ => Arc::new(Int64Array::from(readings.iter().map(|r| r.2).collect::<Vec<_>>())),
        };
        RecordBatch::try_from_iter([
            ("k", Arc::new(keys) as ArrayRef),
            ("t", Arc::new(times) as ArrayRef),
            ("v", values),
        ])
        .expect("batch")
    }

    /// Runs the batches, each cut into blocks of `split` rows, and sums the output per (key, day).
    fn engine_sums(
        exec: &mut IncrementsExec,
        batches: &[Vec<Reading>],
        encoding: ReadingEncoding,
        split: usize,
    ) -> (Sums, StateCounts) {
        let mut sums = Sums::new();
        let mut counts = StateCounts::default();
        for batch in batches {
            let blocks: Vec<RecordBatch> = batch.chunks(split.max(1)).map(|chunk| to_batch(chunk, encoding)).collect();
            let output = exec.process(&blocks).expect("process");
            counts.late_rows_dropped += output.counts.late_rows_dropped;
            counts.duplicate_rows_dropped += output.counts.duplicate_rows_dropped;
            counts.late_rows_folded += output.counts.late_rows_folded;
            for (key, time, value) in emitted(&output.rows) {
                *sums.entry((key.expect("no null keys here"), time.div_euclid(DAY_MS))).or_default() += value;
            }
        }
        (sums, counts)
    }

    fn close(found: &Sums, expected: &Sums, tolerance: f64) -> bool {
        let keys: BTreeSet<_> = found.keys().chain(expected.keys()).collect();
        keys.into_iter().all(|key| {
            let (a, b) = (found.get(key).copied().unwrap_or(0.0), expected.get(key).copied().unwrap_or(0.0));
            (a - b).abs() <= tolerance * (1.0 + b.abs())
        })
    }

    fn encodings() -> impl Strategy<Value = ReadingEncoding> {
        prop_oneof![Just(ReadingEncoding::Counter), Just(ReadingEncoding::Cumulative), Just(ReadingEncoding::Rate)]
    }

    fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<Reading>>> {
        // Times mostly advance batch to batch, some reaching back (late or beyond the horizon);
        // cumulative values near 2^32 wrap.
        proptest::collection::vec(
            proptest::collection::vec(("[a-c]", 0i64..120, (1i64 << 32) - 40..(1i64 << 32) + 40), 0..25),
            1..8,
        )
        .prop_map(|batches| {
            batches
                .into_iter()
                .enumerate()
                .map(|(index, batch)| {
                    batch.into_iter().map(|(k, t, v)| (k, t + index as i64 * 50, v.rem_euclid(1 << 32))).collect()
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn sums_per_key_and_day_agree_with_the_reference(
            batches in arbitrary_batches(),
            encoding in encodings(),
            fold in any::<bool>(),
            lateness_ms in 0i64..150,
            split in 1usize..10,
        ) {
            let late = if fold { LatePolicy::Fold } else { LatePolicy::Drop };
            let (accepted, expected_late, expected_duplicates, expected_folded) =
                reference_accepts(&batches, late, lateness_ms);
            let expected = reference_sums(&accepted, encoding);
            let mut exec = IncrementsExec::new(spec(encoding, late, lateness_ms));
            let (found, counts) = engine_sums(&mut exec, &batches, encoding, split);
            let tolerance = if encoding == ReadingEncoding::Rate { 1e-9 } else { 0.0 };
            prop_assert!(close(&found, &expected, tolerance), "found {:?}\nexpected {:?}", found, expected);
            prop_assert_eq!(counts.late_rows_dropped, expected_late);
            prop_assert_eq!(counts.duplicate_rows_dropped, expected_duplicates);
            prop_assert_eq!(counts.late_rows_folded, expected_folded);
        }

        #[test]
        fn within_the_lateness_bound_any_order_and_split_gives_the_sums_of_all_readings(
            readings in proptest::collection::vec(("[a-c]", 0i64..500, 0i64..(1i64 << 32)), 1..60),
            cuts in proptest::collection::vec(0usize..60, 0..6),
            encoding in encodings(),
            split in 1usize..10,
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(readings.len())).collect();
            cuts.extend([0, readings.len()]);
            cuts.sort();
            let batches: Vec<Vec<Reading>> = cuts.windows(2).map(|pair| readings[pair[0]..pair[1]].to_vec()).collect();
            let mut unique = BTreeMap::new();
            for reading in &readings {
                unique.entry((reading.0.clone(), reading.1)).or_insert_with(|| reading.clone());
            }
            // The first of two readings with one key and time is kept, whichever batch it is in.
            let expected = reference_sums(&unique.into_values().collect::<Vec<_>>(), encoding);
            let mut exec = IncrementsExec::new(spec(encoding, LatePolicy::Fold, 500));
            let (found, counts) = engine_sums(&mut exec, &batches, encoding, split);
            let tolerance = if encoding == ReadingEncoding::Rate { 1e-9 } else { 0.0 };
            prop_assert!(close(&found, &expected, tolerance), "found {:?}\nexpected {:?}", found, expected);
            prop_assert_eq!(counts.late_rows_dropped, 0);
        }

        #[test]
        fn snapshot_and_restore_continue_identically(batches in arbitrary_batches(), encoding in encodings(), cut in 0usize..8) {
            let spec = spec(encoding, LatePolicy::Fold, 60);
            let mut straight = IncrementsExec::new(spec.clone());
            let mut restored = IncrementsExec::new(spec.clone());
            let cut = cut.min(batches.len() - 1);
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch, encoding)];
                let expected = straight.process(&block).expect("straight");
                if index == cut {
                    let bytes = straight.snapshot();
                    restored = IncrementsExec::new(spec.clone());
                    restored.restore(&bytes).expect("restore");
                    prop_assert_eq!(restored.snapshot(), bytes);
                    prop_assert_eq!(restored.size(), straight.size());
                } else if index > cut {
                    let found = restored.process(&block).expect("restored");
                    prop_assert_eq!(found.rows, expected.rows);
                    prop_assert_eq!(found.counts, expected.counts);
                }
            }
        }
    }
}
