//! Running aggregates per key across batches (`count`, `sum`, `min`, `max`, folded as the
//! window aggregate folds them), with a TTL in event time. Each batch emits a changelog: the
//! current values of the keys it changed, once each, with the key's latest event time.
//!
//! A row more than `ttl_ms` behind the largest event time seen before its batch is dropped as
//! late: its key may have been forgotten already, and folding it into a fresh key would
//! report a total that is neither the old one nor a new one. A key not updated for `ttl_ms`
//! is forgotten (swept at most a quarter of the TTL late). With `max_keys` keys held, rows of
//! new keys are refused (dropped and counted) until keys expire.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::{AggFunc, KeyedAggregateSpec};

use crate::aggregate::{fold, Fold};
use crate::cell::{
    column, columns, decode_key, event_times, read_cell, sorted_keys, write_cells, write_key, Cell, ColumnBuilder,
    Reader,
};
use crate::changelog::{self, touch, Changelog};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::state::{StateCounts, StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};

#[derive(Debug, Clone, PartialEq)]
struct KeyState {
    accumulators: Vec<Cell>,
    latest_ms: i64,
    /// The batch (`generation`) that last emitted this key, so a key is emitted once a batch.
    touched_in: u64,
}

pub struct KeyedAggregateOutput {
    pub updates: RecordBatch,
    pub counts: StateCounts,
}

pub struct KeyedAggregateExec {
    spec: KeyedAggregateSpec,
    folds: Vec<Fold>,
    initial: Vec<Cell>,
    keys: FxHashMap<Box<[u8]>, KeyState>,
    clock: StateClock,
    generation: u64,
    key_bytes: u64,
    schema: Option<SchemaRef>,
}

const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLKA", version: 1, what: "keyed aggregate" };

impl KeyedAggregateExec {
    pub fn new(spec: KeyedAggregateSpec) -> Self {
        let ttl_ms = spec.ttl_ms;
        let folds = spec
            .aggregates
            .iter()
            .map(|aggregate| match aggregate.func {
                AggFunc::Count => Fold::CountRows,
                AggFunc::Sum => Fold::Sum,
                AggFunc::Min => Fold::Min,
                AggFunc::Max => Fold::Max,
                AggFunc::Avg | AggFunc::CountDistinct => {
                    unreachable!("validated: avg and count_distinct are window aggregates only")
                }
            })
            .collect::<Vec<_>>();
        let initial =
            folds.iter().map(|how| if *how == Fold::CountRows { Cell::Int64(0) } else { Cell::Null }).collect();
        KeyedAggregateExec {
            spec,
            folds,
            initial,
            keys: FxHashMap::default(),
            clock: StateClock::new(ttl_ms),
            generation: 0,
            key_bytes: 0,
            schema: None,
        }
    }

    pub fn size(&self) -> StateSize {
        let value_bytes = (self.folds.len() * std::mem::size_of::<Cell>() + 16) as u64;
        StateSize {
            keys: self.keys.len() as u64,
            bytes: self.key_bytes + self.keys.len() as u64 * (ENTRY_OVERHEAD_BYTES + value_bytes),
        }
    }

    /// Folds `inputs`, the rows of one batch, and returns the keys they changed.
    pub fn process(&mut self, inputs: &[RecordBatch]) -> Result<KeyedAggregateOutput, ExecError> {
        let (updates, counts) = changelog::process(self, inputs)?;
        Ok(KeyedAggregateOutput { updates, counts })
    }

    /// The whole state as bytes: deterministic (keys in sorted order).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for key in sorted_keys(&self.keys) {
            let state = &self.keys[key];
            write_key(key, &mut out);
            out.extend_from_slice(&state.latest_ms.to_le_bytes());
            write_cells(&state.accumulators, &mut out);
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        let clock = StateClock::read_snapshot_start(self.spec.ttl_ms, &SNAPSHOT, &mut reader)?;
        let count = reader.u32()? as usize;
        let mut keys = FxHashMap::with_capacity_and_hasher(count.min(reader.bytes.len()), Default::default());
        let mut key_bytes = 0u64;
        for _ in 0..count {
            let key = reader.key(self.spec.keys.len())?;
            let latest_ms = reader.i64()?;
            let accumulators = reader.cells(self.folds.len())?;
            key_bytes += key.len() as u64;
            if keys.insert(key, KeyState { accumulators, latest_ms, touched_in: 0 }).is_some() {
                return Err(ExecError::CorruptSnapshot("a key appears twice".into()));
            }
        }
        reader.finish()?;
        self.keys = keys;
        self.clock = clock;
        self.key_bytes = key_bytes;
        Ok(())
    }
}

impl Changelog for KeyedAggregateExec {
    const BUILDING: &'static str = "building keyed aggregates";

    fn output_schema(&mut self, input: &Schema) -> SchemaRef {
        let spec = &self.spec;
        Arc::clone(self.schema.get_or_insert_with(|| {
            let mut fields: Vec<Field> = spec
                .keys
                .iter()
                .map(|key| {
                    input.field_with_name(key).map_or(Field::new(key, DataType::Utf8, true), |field| field.clone())
                })
                .collect();
            for aggregate in &spec.aggregates {
                let data_type = match (aggregate.func, &aggregate.column) {
                    (AggFunc::Count, _) | (_, None) => DataType::Int64,
                    (_, Some(name)) => {
                        input.field_with_name(name).map_or(DataType::Int64, |field| field.data_type().clone())
                    }
                };
                fields.push(Field::new(&aggregate.name, data_type, true));
            }
            fields.push(Field::new(&spec.time_column, DataType::Int64, false));
            Arc::new(Schema::new(fields))
        }))
    }

    fn begin_batch(&mut self) -> Option<i64> {
        self.generation += 1;
        self.clock.late_before()
    }

    fn rows_per_entry(&self) -> usize {
        1
    }

    fn emit(&self, touched: &[Box<[u8]>], columns: &mut [ColumnBuilder]) -> Result<(), ExecError> {
        let key_count = self.spec.keys.len();
        for key in touched {
            let state = &self.keys[key];
            for (index, cell) in decode_key(key, key_count)?.iter().enumerate() {
                columns[index].append(cell);
            }
            for (index, cell) in state.accumulators.iter().enumerate() {
                columns[key_count + index].append(cell);
            }
            columns[key_count + self.folds.len()].append(&Cell::Int64(state.latest_ms));
        }
        Ok(())
    }

    fn take_block(
        &mut self,
        batch: &RecordBatch,
        late_before: Option<i64>,
        touched: &mut Vec<Box<[u8]>>,
        counts: &mut StateCounts,
    ) -> Result<(), ExecError> {
        let key_arrays = columns(batch, &self.spec.keys)?;
        let key_columns = KeyColumns::new(&key_arrays);
        let times = event_times(batch, &self.spec.time_column)?;
        let inputs: Vec<Option<ArrayRef>> = self
            .spec
            .aggregates
            .iter()
            .map(|aggregate| match (aggregate.func, &aggregate.column) {
                (AggFunc::Count, _) | (_, None) => Ok(None),
                (_, Some(name)) => column(batch, name).map(Some),
            })
            .collect::<Result<_, _>>()?;
        let mut key = Vec::with_capacity(64);
        for row in 0..batch.num_rows() {
            if !times.is_valid(row) {
                counts.invalid_rows_dropped += 1;
                continue;
            }
            let time = times.value(row);
            if late_before.is_some_and(|before| time < before) {
                counts.late_rows_dropped += 1;
                continue;
            }
            self.clock.observe(time);
            key.clear();
            key_columns.encode(row, &mut key);
            if !self.keys.contains_key(key.as_slice()) {
                if self.keys.len() as u64 >= self.spec.max_keys {
                    counts.refused_rows += 1;
                    continue;
                }
                self.key_bytes += key.len() as u64;
                let fresh = KeyState { accumulators: self.initial.clone(), latest_ms: time, touched_in: 0 };
                self.keys.insert(key.clone().into_boxed_slice(), fresh);
            }
            let state = self.keys.get_mut(key.as_slice()).expect("inserted above");
            for (index, how) in self.folds.iter().enumerate() {
                let value = inputs[index].as_ref().map_or(Cell::Null, |column| read_cell(column.as_ref(), row));
                fold(&mut state.accumulators[index], *how, value);
            }
            state.latest_ms = state.latest_ms.max(time);
            touch(self.generation, &mut state.touched_in, &key, touched);
        }
        Ok(())
    }

    fn sweep(&mut self) -> u64 {
        let Some(expire_before) = self.clock.start_sweep() else { return 0 };
        let before = self.keys.len();
        let mut key_bytes = 0u64;
        self.keys.retain(|key, state| {
            let keep = state.latest_ms >= expire_before;
            if !keep {
                key_bytes += key.len() as u64;
            }
            keep
        });
        self.key_bytes -= key_bytes;
        (before - self.keys.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, StringArray};
    use proptest::prelude::*;
    use sleet_plan::Aggregate;

    use super::*;

    fn spec(ttl_ms: i64) -> KeyedAggregateSpec {
        KeyedAggregateSpec {
            keys: vec!["k".into()],
            aggregates: vec![
                Aggregate::count("n"),
                Aggregate::sum("v", "total"),
                Aggregate::min("v", "low"),
                Aggregate::max("v", "high"),
            ],
            time_column: "t".into(),
            ttl_ms,
            max_keys: 1_000,
        }
    }

    type Row = (String, i64, Option<i64>);
    /// key → (count, sum, min, max, latest time).
    type Table = BTreeMap<String, (i64, Option<i64>, Option<i64>, Option<i64>, i64)>;

    fn to_batch(rows: &[Row]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(StringArray::from(rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>())) as ArrayRef),
            ("t", Arc::new(Int64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>())) as ArrayRef),
            ("v", Arc::new(Int64Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())) as ArrayRef),
        ])
        .expect("rows")
    }

    /// Each update replaces its key's row; returns how many times each key was emitted.
    fn absorb(table: &mut Table, updates: &RecordBatch) -> BTreeMap<String, usize> {
        let mut emitted = BTreeMap::new();
        if updates.num_rows() == 0 {
            return emitted;
        }
        let keys = updates.column(0).as_string::<i32>();
        let value = |column: usize, row: usize| {
            let array = updates.column(column).as_primitive::<Int64Type>();
            array.is_valid(row).then(|| array.value(row))
        };
        for row in 0..updates.num_rows() {
            let entry = (
                value(1, row).expect("count"),
                value(2, row),
                value(3, row),
                value(4, row),
                value(5, row).expect("time"),
            );
            table.insert(keys.value(row).to_string(), entry);
            *emitted.entry(keys.value(row).to_string()).or_default() += 1;
        }
        emitted
    }

    fn reference(batches: &[Vec<Row>]) -> Table {
        let mut table = Table::new();
        for (key, time, value) in batches.iter().flatten() {
            let entry = table.entry(key.clone()).or_insert((0, None, None, None, *time));
            entry.0 += 1;
            if let Some(v) = value {
                entry.1 = Some(entry.1.unwrap_or(0) + v);
                entry.2 = Some(entry.2.map_or(*v, |m| m.min(*v)));
                entry.3 = Some(entry.3.map_or(*v, |m| m.max(*v)));
            }
            entry.4 = entry.4.max(*time);
        }
        table
    }

    fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<Row>>> {
        proptest::collection::vec(
            proptest::collection::vec(("[a-d]", 0i64..1_000, proptest::option::of(-50i64..50)), 0..30),
            1..8,
        )
    }

    proptest! {
        #[test]
        fn the_changelog_agrees_with_the_reference_and_names_each_changed_key_once(
            batches in arbitrary_batches(),
            split in 1usize..10,
        ) {
            let mut exec = KeyedAggregateExec::new(spec(1_000_000));
            let mut table = Table::new();
            for batch in &batches {
                let blocks: Vec<RecordBatch> = batch.chunks(split).map(to_batch).collect();
                let output = exec.process(&blocks).expect("process");
                let emitted = absorb(&mut table, &output.updates);
                let mut changed: Vec<String> = batch.iter().map(|row| row.0.clone()).collect();
                changed.sort();
                changed.dedup();
                prop_assert_eq!(emitted.keys().cloned().collect::<Vec<_>>(), changed);
                prop_assert!(emitted.values().all(|count| *count == 1));
            }
            prop_assert_eq!(table, reference(&batches));
        }

        #[test]
        fn snapshot_and_restore_continue_identically(batches in arbitrary_batches(), cut in 0usize..8) {
            let mut straight = KeyedAggregateExec::new(spec(300));
            let mut restored = KeyedAggregateExec::new(spec(300));
            let cut = cut.min(batches.len() - 1);
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block).expect("straight");
                if index == cut {
                    let bytes = straight.snapshot();
                    restored = KeyedAggregateExec::new(spec(300));
                    restored.restore(&bytes).expect("restore");
                    prop_assert_eq!(restored.snapshot(), bytes);
                } else if index > cut {
                    let found = restored.process(&block).expect("restored");
                    prop_assert_eq!(found.updates, expected.updates);
                    prop_assert_eq!(found.counts, expected.counts);
                }
            }
        }
    }

    #[test]
    fn rows_a_ttl_behind_are_late_and_silent_keys_expire() {
        let mut exec = KeyedAggregateExec::new(spec(100));
        let row = |key: &str, time: i64| (key.to_string(), time, Some(1));
        exec.process(&[to_batch(&[row("a", 0), row("b", 0)])]).expect("first");
        let second = exec.process(&[to_batch(&[row("b", 150)])]).expect("second");
        assert_eq!(second.counts.expired_keys, 1);
        assert_eq!(exec.size().keys, 1);
        let third = exec.process(&[to_batch(&[row("a", 49), row("a", 60)])]).expect("third");
        assert_eq!(third.counts.late_rows_dropped, 1, "49 is more than 100 behind 150");
        let mut table = Table::new();
        absorb(&mut table, &third.updates);
        assert_eq!(table["a"], (1, Some(1), Some(1), Some(1), 60), "a starts afresh");
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = KeyedAggregateExec::new(spec(100));
        exec.process(&[to_batch(&[("a".into(), 1, Some(1)), ("b".into(), 2, None)])]).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            assert!(KeyedAggregateExec::new(spec(100)).restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
    }
}
