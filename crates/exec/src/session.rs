//! Session windows: per key, rows less than `gap_ms` apart in event time make one session,
//! `[first row's time, last row's time + gap_ms)`, and a row that bridges two sessions merges
//! them. A session is emitted once, when it closes (the watermark reaches its end: the allowed
//! lateness behind the least progress of the source partitions feeding it, as for tumbling
//! windows, `partition_progress`, or with no such reports behind the largest event time
//! seen): an earlier emission could be superseded by a merge.
//!
//! A row behind the watermark is late unless it falls inside a session of its key still open.
//! Anything else it could do would touch a session that may have closed and been emitted: its
//! own `[time, time + gap)` could reach back across a closed one. So every open session lies
//! after every closed session of its key, and no row ever reopens one.
//!
//! No map-side partial runs before this operator: how rows group depends on the gaps between
//! one key's rows across all map partitions and batches (`physical::can_combine`).
//!
//! ```text
//! snapshot = state_clock start, key count:u32, per key in byte order:
//!            len:u32 key sessions:u32 (start:i64 end:i64 last_update_batch:u64 cell{aggregates})*
//! ```

use std::collections::BTreeSet;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::physical::AggregateInput;
use sleet_plan::{Aggregate, WindowKind, WindowSpec};

use crate::aggregate::{
    fold_row, folds_for, merge_accumulators, read_accumulators, write_accumulators, Accumulator, Fold, Layout,
    WindowRow,
};
use crate::cell::{column, event_times, sorted_keys, write_key, Reader};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::partition_progress::{MapProgress, PartitionProgress};
use crate::state::{StateSize, ENTRY_OVERHEAD_BYTES};
use crate::state_clock::{SnapshotFormat, StateClock};
use crate::window::{ClosedWindow, WindowOutput};

#[derive(Debug, Clone, PartialEq)]
struct Session {
    start: i64,
    /// Exclusive: the last row's time plus the gap.
    end: i64,
    accumulators: Vec<Accumulator>,
    last_update_batch: u64,
}

/// One key's open sessions, by start. They are disjoint, so their ends are in order too.
#[derive(Debug, Clone, Default)]
struct KeySessions {
    sessions: Vec<Session>,
    /// The generation (one per `process`) that last changed this key.
    touched_in: u64,
}

/// Where a row of time `time_ms` goes among a key's `sessions`: the range of sessions its
/// `[time, time + gap)` overlaps, which it merges into one (an empty range: a new session
/// there).
fn overlapping(sessions: &[Session], time_ms: i64, gap_ms: i64) -> std::ops::Range<usize> {
    let first = sessions.partition_point(|session| session.end <= time_ms);
    let last = sessions.partition_point(|session| session.start < time_ms.saturating_add(gap_ms));
    first..last.max(first)
}

/// Adds a row at `time_ms` to `sessions`, merging what it bridges, and returns the session
/// that now holds it.
fn add_row<'a>(
    sessions: &'a mut Vec<Session>,
    time_ms: i64,
    gap_ms: i64,
    initial: &[Accumulator],
    merge_folds: &[Fold],
    update_batch: u64,
) -> &'a mut Session {
    let range = overlapping(sessions, time_ms, gap_ms);
    let index = range.start;
    let end = time_ms.saturating_add(gap_ms);
    if range.is_empty() {
        let session = Session { start: time_ms, end, accumulators: initial.to_vec(), last_update_batch: update_batch };
        sessions.insert(index, session);
        return &mut sessions[index];
    }
    let absorbed: Vec<Session> = sessions.drain(index + 1..range.end).collect();
    let session = &mut sessions[index];
    for other in absorbed {
        session.end = session.end.max(other.end);
        merge_accumulators(&mut session.accumulators, &other.accumulators, merge_folds);
    }
    session.start = session.start.min(time_ms);
    session.end = session.end.max(end);
    session.last_update_batch = update_batch;
    session
}

/// Keyed session window state of one reduce partition.
pub struct SessionWindowAggregateExec {
    layout: Layout,
    folds: Vec<Fold>,
    /// How one session's accumulators fold into another's when a row bridges them.
    merge_folds: Vec<Fold>,
    initial: Vec<Accumulator>,
    gap_ms: i64,
    keys: FxHashMap<Box<[u8]>, KeySessions>,
    /// `(end, key)` of each key's earliest session, so closing visits only keys with a session
    /// to close. Entries go stale as sessions grow (their end only moves later); a stale one
    /// is dropped when reached, so the index never misses a key's earliest end.
    closing: BTreeSet<(i64, Box<[u8]>)>,
    /// `ttl_ms` is the allowed lateness; its largest event time is the watermark's base when
    /// no map side reports its partitions' progress.
    clock: StateClock,
    progress: PartitionProgress,
    schema: Option<SchemaRef>,
    generation: u64,
    key_bytes: u64,
    open_sessions: u64,
}

/// 2: the map partitions' progress follows the clock.
const SNAPSHOT: SnapshotFormat = SnapshotFormat { magic: b"SLSN", version: 2, what: "session window" };
/// Still read: a checkpoint taken before the partitions' progress was kept.
const SNAPSHOT_WITHOUT_PROGRESS: SnapshotFormat = SnapshotFormat { version: 1, ..SNAPSHOT };

impl SessionWindowAggregateExec {
    pub fn new(window: WindowSpec, keys: Vec<String>, aggregates: Vec<Aggregate>) -> Self {
        let WindowKind::Session { gap_ms } = window.kind() else {
            unreachable!("planned: only a session window runs here")
        };
        assert!(gap_ms > 0, "validated: a positive gap");
        let clock = StateClock::new(window.allowed_lateness_ms);
        let layout = Layout { window, keys, aggregates, input: AggregateInput::Rows };
        let folds = layout.folds();
        let initial = layout.initial(&folds);
        SessionWindowAggregateExec {
            merge_folds: folds_for(&layout.aggregates, AggregateInput::Partials),
            layout,
            folds,
            initial,
            gap_ms,
            keys: FxHashMap::default(),
            closing: BTreeSet::new(),
            clock,
            progress: PartitionProgress::default(),
            schema: None,
            generation: 0,
            key_bytes: 0,
            open_sessions: 0,
        }
    }

    pub fn watermark_ms(&self) -> Option<i64> {
        self.progress.watermark_ms(self.clock.largest_event_time(), self.layout.window.allowed_lateness_ms)
    }

    /// Takes in a batch's progress of the map partitions without rows to fold.
    pub fn observe_progress(&mut self, progress: &MapProgress) {
        self.progress.observe(progress);
    }

    pub fn open_sessions(&self) -> u64 {
        self.open_sessions
    }

    /// Open sessions, and an estimate of their bytes: per key its bytes (held twice, in the
    /// table and the closing index) and two entries, per session its bounds and aggregates.
    pub fn size(&self) -> StateSize {
        let per_key = 2 * ENTRY_OVERHEAD_BYTES + std::mem::size_of::<KeySessions>() as u64;
        let per_session =
            std::mem::size_of::<Session>() as u64 + (self.folds.len() * std::mem::size_of::<Accumulator>()) as u64;
        StateSize {
            keys: self.open_sessions,
            bytes: 2 * self.key_bytes + self.keys.len() as u64 * per_key + self.open_sessions * per_session,
        }
    }

    /// Folds `inputs`, the rows of batch `update_batch`, and emits the sessions that closed.
    pub fn process(&mut self, inputs: &[RecordBatch], update_batch: u64) -> Result<WindowOutput, ExecError> {
        self.process_with_progress(inputs, update_batch, None)
    }

    /// `process`, with the batch's progress of the map partitions that sent `inputs`, from
    /// which the watermark is taken.
    pub fn process_with_progress(
        &mut self,
        inputs: &[RecordBatch],
        update_batch: u64,
        progress: Option<&MapProgress>,
    ) -> Result<WindowOutput, ExecError> {
        if self.schema.is_none() {
            if let Some(first) = inputs.first() {
                self.schema = Some(self.layout.output_schema(&first.schema(), false));
            }
        }
        let schema = self.schema.clone().unwrap_or_else(|| self.layout.output_schema(&Schema::empty(), false));
        self.generation += 1;
        let watermark = self.watermark_ms();
        let mut touched: Vec<Box<[u8]>> = Vec::new();
        let mut late_rows_dropped = 0;
        let mut max_event_time = None;
        for batch in inputs {
            let (late, seen) = self.fold_batch(batch, watermark, update_batch, &mut touched)?;
            late_rows_dropped += late;
            max_event_time = max_event_time.max(seen);
        }
        if let Some(seen) = max_event_time {
            self.clock.observe(seen);
        }
        if let Some(progress) = progress {
            self.progress.observe(progress);
        }
        for key in touched {
            let earliest_end = self.keys[&key].sessions[0].end;
            self.closing.insert((earliest_end, key));
        }
        let closed = self.close_sessions();
        let rows: Vec<WindowRow<'_>> = closed
            .iter()
            .map(|(key, session)| WindowRow {
                start: session.start,
                end: session.end,
                key,
                accumulators: &session.accumulators,
                max_event_time: session.end - self.gap_ms,
            })
            .collect();
        let updates = self.layout.emit(&schema, &rows, false)?;
        Ok(WindowOutput { updates, closed: closed_windows(&closed), late_rows_dropped })
    }

    /// Returns (late rows, the largest event time of the rows folded).
    fn fold_batch(
        &mut self,
        batch: &RecordBatch,
        watermark: Option<i64>,
        update_batch: u64,
        touched: &mut Vec<Box<[u8]>>,
    ) -> Result<(u64, Option<i64>), ExecError> {
        let key_columns: Vec<ArrayRef> =
            self.layout.keys.iter().map(|key| column(batch, key)).collect::<Result<_, _>>()?;
        let key_columns = KeyColumns::new(&key_columns);
        let inputs = self.layout.aggregate_inputs(batch)?;
        let times = event_times(batch, &self.layout.window.time_column)?;
        let mut late = 0u64;
        let mut max_event_time: Option<i64> = None;
        let mut key = Vec::with_capacity(64);
        let mut scratch = Vec::new();
        for row in 0..batch.num_rows() {
            // A row without an event time belongs to no session.
            let Some(time) = times.is_valid(row).then(|| times.value(row)) else { continue };
            key.clear();
            key_columns.encode(row, &mut key);
            let state = self.keys.get_mut(key.as_slice());
            let inside_open = state
                .as_ref()
                .is_some_and(|state| state.sessions.iter().any(|session| session.start <= time && time < session.end));
            if watermark.is_some_and(|watermark| time < watermark) && !inside_open {
                late += 1;
                continue;
            }
            max_event_time = max_event_time.max(Some(time));
            let state = match state {
                Some(state) => state,
                None => {
                    self.key_bytes += key.len() as u64;
                    self.keys.entry(key.clone().into_boxed_slice()).or_default()
                }
            };
            let before = state.sessions.len();
            let session =
                add_row(&mut state.sessions, time, self.gap_ms, &self.initial, &self.merge_folds, update_batch);
            fold_row(&mut session.accumulators, &self.folds, &inputs, row, &mut scratch);
            self.open_sessions = self.open_sessions + state.sessions.len() as u64 - before as u64;
            if state.touched_in != self.generation {
                state.touched_in = self.generation;
                touched.push(key.clone().into_boxed_slice());
            }
        }
        Ok((late, max_event_time))
    }

    /// Removes the sessions that end at or before the watermark, by (start, key).
    fn close_sessions(&mut self) -> Vec<(Box<[u8]>, Session)> {
        let Some(watermark) = self.watermark_ms() else { return Vec::new() };
        let mut closed = Vec::new();
        while self.closing.first().is_some_and(|(end, _)| *end <= watermark) {
            let (_, key) = self.closing.pop_first().expect("checked: not empty");
            let Some(state) = self.keys.get_mut(&key) else { continue };
            let count = state.sessions.partition_point(|session| session.end <= watermark);
            closed.extend(state.sessions.drain(..count).map(|session| (key.clone(), session)));
            self.open_sessions -= count as u64;
            match state.sessions.first() {
                Some(next) => {
                    self.closing.insert((next.end, key));
                }
                None => {
                    self.keys.remove(&key);
                    self.key_bytes -= key.len() as u64;
                }
            }
        }
        closed.sort_by(|(left_key, left), (right_key, right)| (left.start, left_key).cmp(&(right.start, right_key)));
        closed
    }

    /// The whole state as bytes: deterministic (keys in byte order). The closing index is not
    /// written: `restore` rebuilds it from the sessions.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = self.clock.begin_snapshot(&SNAPSHOT);
        self.progress.write(&mut out);
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for key in sorted_keys(&self.keys) {
            let sessions = &self.keys[key].sessions;
            write_key(key, &mut out);
            out.extend_from_slice(&(sessions.len() as u32).to_le_bytes());
            for session in sessions {
                out.extend_from_slice(&session.start.to_le_bytes());
                out.extend_from_slice(&session.end.to_le_bytes());
                out.extend_from_slice(&session.last_update_batch.to_le_bytes());
                write_accumulators(&session.accumulators, &mut out);
            }
        }
        out
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        // The version byte follows the four of the magic, which the clock checks.
        let without_progress = bytes.get(SNAPSHOT.magic.len()) == Some(&SNAPSHOT_WITHOUT_PROGRESS.version);
        let format = if without_progress { &SNAPSHOT_WITHOUT_PROGRESS } else { &SNAPSHOT };
        let clock = StateClock::read_snapshot_start(self.layout.window.allowed_lateness_ms, format, &mut reader)?;
        let progress =
            if without_progress { PartitionProgress::default() } else { PartitionProgress::read(&mut reader)? };
        let key_count = reader.u32()? as usize;
        // The counts come from the bytes; cap the preallocation by what the bytes can hold.
        let mut keys = FxHashMap::with_capacity_and_hasher(key_count.min(reader.bytes.len()), Default::default());
        let mut closing = BTreeSet::new();
        let (mut key_bytes, mut open_sessions) = (0u64, 0u64);
        for _ in 0..key_count {
            let key = reader.key(self.layout.keys.len())?;
            let session_count = reader.u32()? as usize;
            let mut sessions: Vec<Session> = Vec::with_capacity(session_count.min(reader.bytes.len()));
            for _ in 0..session_count {
                let start = reader.i64()?;
                let end = reader.i64()?;
                let last_update_batch = reader.i64()? as u64;
                let accumulators = read_accumulators(&mut reader, &self.folds)?;
                let follows = sessions.last().is_none_or(|previous| previous.end <= start);
                if end < start.saturating_add(self.gap_ms) || !follows {
                    return Err(ExecError::CorruptSnapshot(format!(
                        "session [{start}, {end}) is shorter than the gap or overlaps the one before"
                    )));
                }
                sessions.push(Session { start, end, accumulators, last_update_batch });
            }
            let Some(earliest) = sessions.first() else {
                return Err(ExecError::CorruptSnapshot("a key without sessions".into()));
            };
            closing.insert((earliest.end, key.clone()));
            key_bytes += key.len() as u64;
            open_sessions += sessions.len() as u64;
            keys.insert(key, KeySessions { sessions, touched_in: 0 });
        }
        reader.finish()?;
        (self.clock, self.progress, self.keys, self.closing) = (clock, progress, keys, closing);
        (self.key_bytes, self.open_sessions) = (key_bytes, open_sessions);
        Ok(())
    }
}

/// One `ClosedWindow` per batch that last updated some of the `closed` sessions, spanning
/// them, rather than one per session: sessions are per key, and a task reports a bounded
/// number of window latencies, never one per key. Each group's latency is measured against
/// its latest end, so it is the smallest of its sessions'.
fn closed_windows(closed: &[(Box<[u8]>, Session)]) -> Vec<ClosedWindow> {
    let mut by_batch: Vec<ClosedWindow> = Vec::new();
    for (_, session) in closed {
        match by_batch.iter_mut().find(|window| window.last_update_batch == session.last_update_batch) {
            Some(window) => {
                window.window_start_ms = window.window_start_ms.min(session.start);
                window.window_end_ms = window.window_end_ms.max(session.end);
            }
            None => by_batch.push(ClosedWindow {
                window_start_ms: session.start,
                window_end_ms: session.end,
                last_update_batch: session.last_update_batch,
            }),
        }
    }
    by_batch
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    use super::*;
    use crate::aggregate::fold;
    use crate::cell::Cell;
    use crate::window_testing::{
        aggregates, aggregates_of, all_aggregates, arbitrary_batches, drifting_partitions, output_aggregates,
        partitions_progress, to_batch, Aggregates, PartitionedBatches, TestRow,
    };

    const GAP: i64 = 30;
    /// A key whose one far-future row closes every other key's sessions at the end of a run.
    const CLOSER: &str = "~";

    fn new_exec(lateness: i64) -> SessionWindowAggregateExec {
        SessionWindowAggregateExec::new(WindowSpec::session("t", GAP, lateness), vec!["k".into()], all_aggregates())
    }

    fn check_sessions(times: &[i64], expected: &[(i64, i64)]) {
        let mut sessions = Vec::new();
        let merge_folds = folds_for(&aggregates()[..1], AggregateInput::Partials);
        for time in times {
            let session = add_row(&mut sessions, *time, GAP, &[Accumulator::Value(Cell::Int64(0))], &merge_folds, 0);
            let Accumulator::Value(count) = &mut session.accumulators[0] else { unreachable!("a count") };
            fold(count, Fold::CountRows, Cell::Null);
        }
        let found: Vec<(i64, i64)> = sessions.iter().map(|session| (session.start, session.end)).collect();
        assert_eq!(found, expected, "sessions of rows at {times:?}");
        let counted: i64 = sessions
            .iter()
            .map(|session| match session.accumulators[0] {
                Accumulator::Value(Cell::Int64(count)) => count,
                _ => unreachable!("a count"),
            })
            .sum();
        assert_eq!(counted, times.len() as i64, "every row counted once across merges");
    }

    #[test]
    fn rows_less_than_a_gap_apart_share_a_session_and_bridging_rows_merge_sessions() {
        check_sessions(&[0, 10, 39], &[(0, 69)]);
        check_sessions(&[0, 30], &[(0, 30), (30, 60)]);
        check_sessions(&[100, 0], &[(0, 30), (100, 130)]);
        check_sessions(&[0, 60, 31], &[(0, 30), (31, 90)]);
        check_sessions(&[0, 50, 25], &[(0, 80)]);
        check_sessions(&[0, 60, 120, 30, 90], &[(0, 30), (30, 60), (60, 90), (90, 120), (120, 150)]);
        check_sessions(&[0, 50, 100, 25, 75], &[(0, 130)]);
        check_sessions(&[50, 20, 5], &[(5, 50), (50, 80)]);
        check_sessions(&[50, 20, 5, 35], &[(5, 80)]);
    }

    fn row(key: &str, time: i64, value: i64) -> TestRow {
        (key.to_string(), time, Some(value))
    }

    /// (key, start, end, count, sum, min, max) of each emitted session, in order.
    type Emitted = Vec<(String, i64, i64, Aggregates)>;

    /// In (key, start) order: a key's sessions never share a start.
    fn sorted(mut emitted: Emitted) -> Emitted {
        emitted.sort_by(|left, right| (&left.0, left.1).cmp(&(&right.0, right.1)));
        emitted
    }

    fn absorb(emitted: &mut Emitted, updates: &RecordBatch) {
        let starts = updates.column(0).as_primitive::<Int64Type>();
        let ends = updates.column(1).as_primitive::<Int64Type>();
        let keys = updates.column(2).as_string::<i32>();
        for row in 0..updates.num_rows() {
            let key = keys.value(row).to_string();
            if key != CLOSER {
                emitted.push((key, starts.value(row), ends.value(row), output_aggregates(updates, row)));
            }
        }
    }

    /// The engine's emitted sessions and late rows, each batch cut into `split`-row blocks,
    /// closed at the end by a far-future row.
    fn run_engine(batches: &[Vec<TestRow>], lateness: i64, split: usize) -> (Emitted, u64) {
        let mut exec = new_exec(lateness);
        let mut emitted = Emitted::new();
        let mut late = 0;
        let closer = vec![row(CLOSER, 1_000_000, 0)];
        for (index, batch) in batches.iter().chain([&closer]).enumerate() {
            let blocks: Vec<RecordBatch> = batch.chunks(split.max(1)).map(to_batch).collect();
            let output = exec.process(&blocks, index as u64).expect("process");
            late += output.late_rows_dropped;
            absorb(&mut emitted, &output.updates);
        }
        (sorted(emitted), late)
    }

    /// Sessions by brute force: one key's times sorted, cut where two are a gap or more apart.
    fn sessions_of(times: &[i64]) -> Vec<(i64, i64)> {
        let mut times = times.to_vec();
        times.sort();
        let mut sessions: Vec<(i64, i64)> = Vec::new();
        for time in times {
            match sessions.last_mut() {
                Some((_, last)) if time - *last < GAP => *last = time,
                _ => sessions.push((time, time)),
            }
        }
        sessions.into_iter().map(|(first, last)| (first, last + GAP)).collect()
    }

    /// The naive reference: batch by batch, a row behind the watermark is late unless it falls
    /// in a session (of the rows kept so far) that ends after the watermark; the sessions of
    /// all the rows kept, with their aggregates, by brute force.
    fn reference(batches: &[Vec<TestRow>], lateness: i64) -> (Emitted, u64) {
        let mut kept: BTreeMap<String, Vec<(i64, Option<i64>)>> = BTreeMap::new();
        let mut max_time: Option<i64> = None;
        let mut late = 0;
        for batch in batches {
            let watermark = max_time.map(|max| max - lateness);
            for (key, time, value) in batch {
                let times: Vec<i64> = kept.get(key).map_or(Vec::new(), |rows| rows.iter().map(|row| row.0).collect());
                let inside_open = sessions_of(&times)
                    .iter()
                    .any(|(start, end)| watermark.is_none_or(|w| *end > w) && *start <= *time && time < end);
                if watermark.is_some_and(|w| *time < w) && !inside_open {
                    late += 1;
                    continue;
                }
                kept.entry(key.clone()).or_default().push((*time, *value));
                max_time = max_time.max(Some(*time));
            }
        }
        let mut emitted = Emitted::new();
        for (key, rows) in &kept {
            let times: Vec<i64> = rows.iter().map(|row| row.0).collect();
            for (start, end) in sessions_of(&times) {
                let inside: Vec<Option<i64>> =
                    rows.iter().filter(|row| start <= row.0 && row.0 < end).map(|row| row.1).collect();
                emitted.push((key.clone(), start, end, aggregates_of(&inside, true)));
            }
        }
        let emitted = sorted(emitted);
        (emitted, late)
    }

    /// The engine fed each partition's progress, as a reduce task is, through a snapshot and a
    /// fresh operator at `restore_at`, closed at the end by a far-future row on every partition.
    fn run_partitioned(batches: &PartitionedBatches, lateness: i64, restore_at: usize) -> (Emitted, u64) {
        let mut exec = new_exec(lateness);
        let mut emitted = Emitted::new();
        let mut late = 0;
        let closer: Vec<Vec<TestRow>> = (0..3).map(|_| vec![row(CLOSER, 1_000_000, 0)]).collect();
        for (index, partitions) in batches.iter().chain([&closer]).enumerate() {
            if index == restore_at {
                let bytes = exec.snapshot();
                exec = new_exec(lateness);
                exec.restore(&bytes).expect("restores");
            }
            let blocks: Vec<RecordBatch> = partitions.iter().map(|rows| to_batch(rows)).collect();
            let progress = partitions_progress(partitions, index as i64 * 10);
            let output = exec.process_with_progress(&blocks, index as u64, Some(&progress)).expect("process");
            late += output.late_rows_dropped;
            absorb(&mut emitted, &output.updates);
        }
        (sorted(emitted), late)
    }

    proptest! {
        /// However far one partition runs ahead of another, a row within the lateness of its
        /// own partition's largest time is never late: the sessions are those of every row.
        #[test]
        fn a_partition_running_ahead_makes_no_row_of_another_late(
            (lateness, batches) in (0i64..120).prop_flat_map(|lateness| (Just(lateness), drifting_partitions(lateness))),
            restore_at in 0usize..20,
        ) {
            let every_row: Vec<TestRow> = batches.iter().flatten().flatten().cloned().collect();
            let (expected, _) = reference(&[every_row], lateness);
            let (found, late) = run_partitioned(&batches, lateness, restore_at);
            prop_assert_eq!(late, 0);
            prop_assert_eq!(found, expected);
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_naive_reference(batches in arbitrary_batches(200, 50), lateness in 0i64..120, split in 1usize..10) {
            let (expected, expected_late) = reference(&batches, lateness);
            let (found, found_late) = run_engine(&batches, lateness, split);
            prop_assert_eq!(found, expected);
            prop_assert_eq!(found_late, expected_late);
        }

        /// With a lateness no row reaches, batch boundaries decide nothing.
        #[test]
        fn regrouping_batches_changes_nothing_when_no_row_is_late(batches in arbitrary_batches(200, 50), split in 1usize..10) {
            let (batched, _) = run_engine(&batches, 10_000, split);
            let (together, _) = run_engine(&[batches.concat()], 10_000, split);
            prop_assert_eq!(batched, together);
        }

        #[test]
        fn snapshot_and_restore_continue_identically(batches in arbitrary_batches(200, 50), lateness in 0i64..60, cut in 0usize..8) {
            let mut straight = new_exec(lateness);
            let mut restored = new_exec(lateness);
            let cut = cut.min(batches.len() - 1);
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block, index as u64).expect("straight");
                let found = restored.process(&block, index as u64).expect("restored");
                prop_assert_eq!(found.updates, expected.updates);
                prop_assert_eq!(found.closed, expected.closed);
                prop_assert_eq!(found.late_rows_dropped, expected.late_rows_dropped);
                if index == cut {
                    let bytes = straight.snapshot();
                    restored = new_exec(lateness);
                    restored.restore(&bytes).expect("restore");
                    prop_assert_eq!(restored.snapshot(), bytes);
                    prop_assert_eq!(restored.size(), straight.size());
                }
            }
        }
    }

    #[test]
    fn a_session_is_emitted_once_when_the_watermark_passes_its_end() {
        let mut exec = new_exec(0);
        let first = exec.process(&[to_batch(&[row("a", 0, 1), row("a", 20, 2)])], 0).expect("first");
        assert_eq!(first.updates.num_rows(), 0, "an open session is not emitted");
        assert_eq!(exec.open_sessions(), 1);
        let second = exec.process(&[to_batch(&[row("b", 49, 0)])], 1).expect("second");
        assert_eq!(second.updates.num_rows(), 0, "the session of a ends at 50, after the watermark at 49");
        let third = exec.process(&[to_batch(&[row("b", 60, 0), row("a", 45, 3)])], 2).expect("third");
        assert_eq!(third.late_rows_dropped, 0, "45 is behind the watermark but inside a's open session");
        assert_eq!(third.updates.num_rows(), 0, "a's session now ends at 75");
        let mut emitted = Emitted::new();
        let fourth = exec.process(&[to_batch(&[row("b", 200, 0), row("a", 10, 9)])], 3).expect("fourth");
        absorb(&mut emitted, &fourth.updates);
        assert_eq!(fourth.late_rows_dropped, 0, "10 falls in a's session, open until this batch ends");
        let a_and_b: Vec<(&str, i64, i64, i64)> =
            emitted.iter().map(|row| (row.0.as_str(), row.1, row.2, row.3 .0)).collect();
        assert_eq!(a_and_b, vec![("a", 0, 75, 4), ("b", 49, 90, 2)]);
        assert_eq!(
            fourth.closed,
            vec![
                ClosedWindow { window_start_ms: 0, window_end_ms: 75, last_update_batch: 3 },
                ClosedWindow { window_start_ms: 49, window_end_ms: 90, last_update_batch: 2 },
            ],
            "one closed window per batch of last update"
        );
        let late = exec.process(&[to_batch(&[row("a", 60, 1), row("a", 210, 1)])], 4).expect("late");
        assert_eq!(late.late_rows_dropped, 1, "a's session closed: a row at 60 is late, one at 210 is not");
        assert_eq!(exec.open_sessions(), 2);
    }

    #[test]
    fn a_snapshot_from_before_the_partitions_progress_still_restores() {
        let mut exec = new_exec(0);
        exec.process(&[to_batch(&[row("a", 10, 1), row("b", 100, 2)])], 5).expect("process");
        let mut old = exec.snapshot();
        // Version 1 had no progress: its 6 bytes (two absent times, no partitions) follow the
        // magic, the version and the clock's two optional times (a flag, and 8 bytes if set).
        let swept_at = 14;
        let progress_at = swept_at + if old[swept_at] == 1 { 9 } else { 1 };
        assert_eq!(old.drain(progress_at..progress_at + 6).collect::<Vec<u8>>(), [0; 6]);
        old[4] = SNAPSHOT_WITHOUT_PROGRESS.version;
        let mut restored = new_exec(0);
        restored.restore(&old).expect("version 1 restores");
        assert_eq!(restored.snapshot(), exec.snapshot());
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = new_exec(0);
        exec.process(&[to_batch(&[row("a", 10, 1), row("b", 100, 2), row("a", 50, 3)])], 5).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            assert!(new_exec(0).restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
        let mut garbage = bytes.clone();
        garbage[4] = 9;
        assert!(matches!(new_exec(0).restore(&garbage), Err(ExecError::CorruptSnapshot(_))));
    }
}
