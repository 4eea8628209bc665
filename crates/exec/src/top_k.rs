//! Per group, the `k` keys with the largest value, exact: every key's current value is kept
//! (an input row replaces the value its key had, so values may go down as well as up, as a
//! correction makes them), ranked largest first, ties to the smaller key (compared column by
//! column: numbers by value, strings by bytes, null first). Each batch emits, for every group
//! it changed, that group's ranking: rows `(group columns, rank, key columns, value)`, rank 1
//! the largest. Under `ROW_NUMBER()` (the default) that is at most `k` rows ranked 1 to `k`;
//! under `RANK()` a key's rank is 1 + the number of keys with a strictly larger value and
//! every key ranked `k` or better is emitted, so ties at the boundary are all kept
//! (`ranking.rs`). Every key's value is kept either way, so a key that a lowered value drops
//! out of the top comes back when another's falls further.
//!
//! A group not updated for `ttl_ms` of event time (against the largest seen) is forgotten; a
//! row that far behind is dropped as late. With `max_keys` keys held over all groups, rows of
//! new keys are refused (dropped and counted) until groups expire. A row without a value or
//! an event time is dropped as invalid.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::{TopKSpec, RANK_COLUMN};

use crate::cell::{
    column, columns, compare_cells, compare_rows, decode_key, event_times, read_cell, write_cell, Cell, ColumnBuilder,
    Reader,
};
use crate::changelog::{self, touch, Changelog};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::ranking::ranks;
use crate::state::{StateCounts, StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};

/// A key's place in its group: larger values first, then smaller keys.
#[derive(Debug, Clone)]
struct Ranked {
    value: Cell,
    key: Vec<Cell>,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_cells(&other.value, &self.value).then_with(|| compare_rows(&self.key, &other.key))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

#[derive(Debug, Default)]
struct GroupState {
    /// Each key's current value, by its encoded key.
    values: FxHashMap<Box<[u8]>, Cell>,
    ranking: BTreeSet<Ranked>,
    latest_ms: i64,
    touched_in: u64,
}

pub struct TopKOutput {
    pub rankings: RecordBatch,
    pub counts: StateCounts,
}

pub struct TopKExec {
    spec: TopKSpec,
    groups: FxHashMap<Box<[u8]>, GroupState>,
    /// Keys held over all groups, against `max_keys`.
    key_count: u64,
    key_bytes: u64,
    clock: StateClock,
    generation: u64,
    schema: Option<SchemaRef>,
}

const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLTK", version: 1, what: "top-k" };

impl TopKExec {
    pub fn new(spec: TopKSpec) -> Self {
        let ttl_ms = spec.ttl_ms;
        TopKExec {
            spec,
            groups: FxHashMap::default(),
            key_count: 0,
            key_bytes: 0,
            clock: StateClock::new(ttl_ms),
            generation: 0,
            schema: None,
        }
    }

    pub fn size(&self) -> StateSize {
        // A key is held twice (its bytes, and decoded in the ranking) with its value.
        let per_key = ENTRY_OVERHEAD_BYTES + 2 * std::mem::size_of::<Cell>() as u64;
        StateSize {
            keys: self.key_count,
            bytes: 2 * self.key_bytes + self.key_count * per_key + self.groups.len() as u64 * ENTRY_OVERHEAD_BYTES,
        }
    }

    /// Takes the rows of one batch (each a key's new value) and returns the rankings of the
    /// groups they changed.
    pub fn process(&mut self, inputs: &[RecordBatch]) -> Result<TopKOutput, ExecError> {
        let (rankings, counts) = changelog::process(self, inputs)?;
        Ok(TopKOutput { rankings, counts })
    }

    /// The whole state as bytes: deterministic (groups and keys in sorted order).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        let mut group_keys: Vec<&Box<[u8]>> = self.groups.keys().collect();
        group_keys.sort();
        for group_key in group_keys {
            let group = &self.groups[group_key];
            out.extend_from_slice(&(group_key.len() as u32).to_le_bytes());
            out.extend_from_slice(group_key);
            out.extend_from_slice(&group.latest_ms.to_le_bytes());
            out.extend_from_slice(&(group.values.len() as u32).to_le_bytes());
            let mut keys: Vec<(&Box<[u8]>, &Cell)> = group.values.iter().collect();
            keys.sort_by(|a, b| a.0.cmp(b.0));
            for (key, value) in keys {
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                write_cell(value, &mut out);
            }
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        let clock = StateClock::read_snapshot_start(self.spec.ttl_ms, &SNAPSHOT, &mut reader)?;
        let group_count = reader.u32()? as usize;
        let mut groups = FxHashMap::with_capacity_and_hasher(group_count.min(reader.bytes.len()), Default::default());
        let (mut key_count, mut key_bytes) = (0u64, 0u64);
        for _ in 0..group_count {
            let length = reader.u32()? as usize;
            let group_key: Box<[u8]> = reader.take(length)?.into();
            decode_key(&group_key, self.spec.group.len())?;
            let mut group = GroupState { latest_ms: reader.i64()?, ..GroupState::default() };
            let count = reader.u32()? as usize;
            for _ in 0..count {
                let length = reader.u32()? as usize;
                let key: Box<[u8]> = reader.take(length)?.into();
                let key_cells = decode_key(&key, self.spec.keys.len())?;
                let value = reader.cell()?;
                key_bytes += key.len() as u64;
                if group.values.insert(key, value.clone()).is_some() {
                    return Err(ExecError::CorruptSnapshot("a key appears twice in a group".into()));
                }
                group.ranking.insert(Ranked { value, key: key_cells });
            }
            key_count += count as u64;
            key_bytes += group_key.len() as u64;
            if groups.insert(group_key, group).is_some() {
                return Err(ExecError::CorruptSnapshot("a group appears twice".into()));
            }
        }
        reader.finish()?;
        self.groups = groups;
        self.key_count = key_count;
        self.key_bytes = key_bytes;
        self.clock = clock;
        Ok(())
    }
}

impl Changelog for TopKExec {
    const BUILDING: &'static str = "building top-k rankings";

    fn output_schema(&mut self, input: &Schema) -> SchemaRef {
        let spec = &self.spec;
        Arc::clone(self.schema.get_or_insert_with(|| {
            let field = |name: &str| {
                input.field_with_name(name).map_or(Field::new(name, DataType::Utf8, true), |field| field.clone())
            };
            let mut fields: Vec<Field> = spec.group.iter().map(|name| field(name)).collect();
            fields.push(Field::new(RANK_COLUMN, DataType::Int64, false));
            fields.extend(spec.keys.iter().map(|name| field(name)));
            fields.push(field(&spec.order_by));
            Arc::new(Schema::new(fields))
        }))
    }

    fn begin_batch(&mut self) -> Option<i64> {
        self.generation += 1;
        self.clock.late_before()
    }

    fn rows_per_entry(&self) -> usize {
        self.spec.k as usize
    }

    fn emit(&self, touched: &[Box<[u8]>], columns: &mut [ColumnBuilder]) -> Result<(), ExecError> {
        let k = self.spec.k as usize;
        let group_count = self.spec.group.len();
        for group_key in touched {
            let group = &self.groups[group_key];
            let group_cells = decode_key(group_key, group_count)?;
            let ranked_keys = ranks(self.spec.ranking, k, group.ranking.iter().map(|ranked| &ranked.value));
            for (rank, ranked) in ranked_keys.zip(&group.ranking) {
                for (index, cell) in group_cells.iter().enumerate() {
                    columns[index].append(cell);
                }
                columns[group_count].append(&Cell::Int64(rank));
                for (index, cell) in ranked.key.iter().enumerate() {
                    columns[group_count + 1 + index].append(cell);
                }
                columns[group_count + 1 + ranked.key.len()].append(&ranked.value);
            }
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
        let group_arrays = columns(batch, &self.spec.group)?;
        let group_columns = KeyColumns::new(&group_arrays);
        let key_arrays = columns(batch, &self.spec.keys)?;
        let key_columns = KeyColumns::new(&key_arrays);
        let values = column(batch, &self.spec.order_by)?;
        let times = event_times(batch, &self.spec.time_column)?;
        let (mut group_key, mut key) = (Vec::with_capacity(32), Vec::with_capacity(64));
        for row in 0..batch.num_rows() {
            if !times.is_valid(row) || values.is_null(row) {
                counts.invalid_rows_dropped += 1;
                continue;
            }
            let time = times.value(row);
            if late_before.is_some_and(|before| time < before) {
                counts.late_rows_dropped += 1;
                continue;
            }
            self.clock.observe(time);
            group_key.clear();
            group_columns.encode(row, &mut group_key);
            key.clear();
            key_columns.encode(row, &mut key);
            let value = read_cell(values.as_ref(), row);
            let known_group = self.groups.get(group_key.as_slice());
            let is_new_group = known_group.is_none();
            let is_new_key = known_group.is_none_or(|group| !group.values.contains_key(key.as_slice()));
            if is_new_key && self.key_count >= self.spec.max_keys {
                counts.refused_rows += 1;
                continue;
            }
            if is_new_group {
                self.key_bytes += group_key.len() as u64;
            }
            let group = self.groups.entry(group_key.as_slice().into()).or_default();
            let key_cells = decode_key(&key, self.spec.keys.len())?;
            match group.values.get_mut(key.as_slice()) {
                Some(old) => {
                    let removed = group.ranking.remove(&Ranked { value: old.clone(), key: key_cells.clone() });
                    debug_assert!(removed, "a key's value and its ranking entry agree");
                    *old = value.clone();
                }
                None => {
                    group.values.insert(key.as_slice().into(), value.clone());
                    self.key_count += 1;
                    self.key_bytes += key.len() as u64;
                }
            }
            group.ranking.insert(Ranked { value, key: key_cells });
            group.latest_ms = if is_new_group { time } else { group.latest_ms.max(time) };
            touch(self.generation, &mut group.touched_in, &group_key, touched);
        }
        Ok(())
    }

    fn sweep(&mut self) -> u64 {
        let Some(expire_before) = self.clock.start_sweep() else { return 0 };
        let before = self.groups.len();
        let (mut keys, mut key_bytes) = (0u64, 0u64);
        self.groups.retain(|group_key, group| {
            let keep = group.latest_ms >= expire_before;
            if !keep {
                keys += group.values.len() as u64;
                key_bytes += group_key.len() as u64 + group.values.keys().map(|key| key.len() as u64).sum::<u64>();
            }
            keep
        });
        self.key_count -= keys;
        self.key_bytes -= key_bytes;
        (before - self.groups.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use proptest::prelude::*;

    use super::*;

    fn spec(k: u32, ttl_ms: i64) -> TopKSpec {
        ranked_spec(k, ttl_ms, sleet_plan::Ranking::RowNumber)
    }

    fn ranked_spec(k: u32, ttl_ms: i64, ranking: sleet_plan::Ranking) -> TopKSpec {
        TopKSpec {
            group: vec!["day".into()],
            keys: vec!["id".into()],
            order_by: "total".into(),
            k,
            ranking,
            time_column: "t".into(),
            ttl_ms,
            max_keys: 1_000,
        }
    }

    /// (day, id, total, time).
    type Update = (i64, String, i64, i64);
    /// (day, rank, id, total).
    type Ranking = Vec<(i64, i64, String, i64)>;

    fn to_batch(updates: &[Update]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("day", Arc::new(Int64Array::from(updates.iter().map(|u| u.0).collect::<Vec<_>>())) as ArrayRef),
            ("id", Arc::new(StringArray::from(updates.iter().map(|u| u.1.as_str()).collect::<Vec<_>>())) as ArrayRef),
            ("total", Arc::new(Int64Array::from(updates.iter().map(|u| u.2).collect::<Vec<_>>())) as ArrayRef),
            ("t", Arc::new(Int64Array::from(updates.iter().map(|u| u.3).collect::<Vec<_>>())) as ArrayRef),
        ])
        .expect("updates")
    }

    fn rankings(batch: &RecordBatch) -> Ranking {
        if batch.num_rows() == 0 {
            return Ranking::new();
        }
        let int = |column: usize, row: usize| batch.column(column).as_primitive::<Int64Type>().value(row);
        let ids = batch.column(2).as_string::<i32>();
        let mut rows: Ranking = (0..batch.num_rows())
            .map(|row| (int(0, row), int(1, row), ids.value(row).to_string(), int(3, row)))
            .collect();
        rows.sort();
        rows
    }

    /// The naive reference: every key's latest value per day, sorted from scratch. Under
    /// `RANK()` a key's rank is counted as its definition says, 1 + the keys strictly larger.
    fn reference(values: &BTreeMap<(i64, String), i64>, days: &[i64], k: usize, rank: bool) -> Ranking {
        let mut rows = Ranking::new();
        for day in days {
            let mut members: Vec<(&String, i64)> =
                values.iter().filter(|((d, _), _)| d == day).map(|((_, id), total)| (id, *total)).collect();
            members.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            for (position, (id, total)) in members.iter().enumerate() {
                let place = if rank {
                    1 + members.iter().filter(|(_, other)| other > total).count() as i64
                } else {
                    position as i64 + 1
                };
                if place <= k as i64 {
                    rows.push((*day, place, (*id).clone(), *total));
                }
            }
        }
        rows.sort();
        rows
    }

    fn arbitrary_batches() -> impl Strategy<Value = Vec<Vec<Update>>> {
        // Few values, so ties are common; values go down as well as up.
        proptest::collection::vec(proptest::collection::vec((0i64..3, "[a-f]{1,2}", 0i64..6, 0i64..100), 0..20), 1..8)
    }

    proptest! {
        #[test]
        fn each_changed_group_gets_its_exact_ranking(
            batches in arbitrary_batches(), k in 1u32..5, split in 1usize..8, rank: bool
        ) {
            let ranking = if rank { sleet_plan::Ranking::Rank } else { sleet_plan::Ranking::RowNumber };
            let mut exec = TopKExec::new(ranked_spec(k, 1_000_000, ranking));
            let mut values = BTreeMap::new();
            for batch in &batches {
                for (day, id, total, _) in batch {
                    values.insert((*day, id.clone()), *total);
                }
                let mut days: Vec<i64> = batch.iter().map(|update| update.0).collect();
                days.sort();
                days.dedup();
                let blocks: Vec<RecordBatch> = batch.chunks(split).map(to_batch).collect();
                let output = exec.process(&blocks).expect("process");
                prop_assert_eq!(rankings(&output.rankings), reference(&values, &days, k as usize, rank));
            }
        }

        #[test]
        fn snapshot_and_restore_continue_identically(batches in arbitrary_batches(), cut in 0usize..8) {
            let mut straight = TopKExec::new(spec(3, 40));
            let mut restored = TopKExec::new(spec(3, 40));
            let cut = cut.min(batches.len() - 1);
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block).expect("straight");
                if index == cut {
                    let bytes = straight.snapshot();
                    restored = TopKExec::new(spec(3, 40));
                    restored.restore(&bytes).expect("restore");
                    prop_assert_eq!(restored.snapshot(), bytes);
                    prop_assert_eq!(restored.size(), straight.size());
                } else if index > cut {
                    let found = restored.process(&block).expect("restored");
                    prop_assert_eq!(found.rankings, expected.rankings);
                    prop_assert_eq!(found.counts, expected.counts);
                }
            }
        }
    }

    #[test]
    fn ties_go_to_the_smaller_key_and_a_lowered_value_drops_in_rank() {
        let mut exec = TopKExec::new(spec(2, 1_000));
        let update = |id: &str, total: i64| (1, id.to_string(), total, 10);
        let first = exec.process(&[to_batch(&[update("b", 5), update("a", 5), update("c", 4)])]).expect("first");
        assert_eq!(rankings(&first.rankings), vec![(1, 1, "a".into(), 5), (1, 2, "b".into(), 5)]);
        let second = exec.process(&[to_batch(&[update("a", 3)])]).expect("second");
        assert_eq!(rankings(&second.rankings), vec![(1, 1, "b".into(), 5), (1, 2, "c".into(), 4)]);
    }

    #[test]
    fn under_rank_ties_share_a_place_all_ties_at_the_boundary_stay_and_updates_reshape_them() {
        let mut exec = TopKExec::new(ranked_spec(2, 1_000, sleet_plan::Ranking::Rank));
        let update = |id: &str, total: i64| (1, id.to_string(), total, 10);
        let first = exec
            .process(&[to_batch(&[update("a", 9), update("b", 5), update("c", 5), update("d", 4)])])
            .expect("first");
        let expected = vec![(1, 1, "a".into(), 9), (1, 2, "b".into(), 5), (1, 2, "c".into(), 5)];
        assert_eq!(rankings(&first.rankings), expected, "b and c tie for second: both are kept");
        let second = exec.process(&[to_batch(&[update("a", 5)])]).expect("second");
        let expected = vec![(1, 1, "a".into(), 5), (1, 1, "b".into(), 5), (1, 1, "c".into(), 5)];
        assert_eq!(rankings(&second.rankings), expected, "a lowered to the tie: three share first place");
        let third = exec.process(&[to_batch(&[update("b", 1), update("c", 1)])]).expect("third");
        assert_eq!(rankings(&third.rankings), vec![(1, 1, "a".into(), 5), (1, 2, "d".into(), 4)], "d comes back");
    }

    #[test]
    fn a_silent_group_expires_and_rows_a_ttl_behind_are_late() {
        let mut exec = TopKExec::new(spec(2, 100));
        exec.process(&[to_batch(&[(1, "a".into(), 5, 0), (2, "a".into(), 5, 0)])]).expect("first");
        let second = exec.process(&[to_batch(&[(2, "b".into(), 1, 150)])]).expect("second");
        assert_eq!(second.counts.expired_keys, 1, "day 1, last updated at 0, is more than 100 behind 150");
        assert_eq!(exec.size().keys, 2, "day 2's a and b remain");
        let third = exec.process(&[to_batch(&[(1, "c".into(), 9, 40)])]).expect("third");
        assert_eq!(third.counts.late_rows_dropped, 1);
        assert_eq!(third.rankings.num_rows(), 0);
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = TopKExec::new(spec(2, 100));
        exec.process(&[to_batch(&[(1, "a".into(), 5, 0), (2, "b".into(), 5, 0)])]).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            assert!(TopKExec::new(spec(2, 100)).restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
    }
}
