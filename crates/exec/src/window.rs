//! Tumbling and hopping event-time window aggregation: the stateless partial step that runs
//! before an exchange, and the keyed state after it that emits every touched window each
//! batch (or, under `WindowEmit::OnClose`, each window once as it closes) and closes windows
//! once the watermark passes their end.
//!
//! A tumbling window is a hopping one whose slide is its size, so both run on `Panes`: time
//! cut into slide-long panes, each covered by the `size / slide` windows that start at it and
//! at the panes before it. A row is folded into every window covering its pane; the map-side
//! partial folds rows per pane, and the reduce side folds each pane's partial into every
//! window covering it, which gives what the rows would, as a window is a whole number of panes.
//!
//! Both steps keep `Windows`: per window start, a hash map from the row's encoded key
//! (`key::KeyColumns`) to its running aggregates, so grouping costs one hash of a short byte
//! string and no allocation for keys seen before. Emitted on close, the state is kept per
//! pane instead, and a closing window is the merge of its panes: a hopping row is folded once
//! rather than once per window, and a key is held once per pane.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use rustc_hash::FxHashMap;
use sleet_plan::physical::{AggregateInput, PARTIAL_MAX_EVENT_TIME_COLUMN};
use sleet_plan::validate::WINDOW_START_COLUMN;
use sleet_plan::{Aggregate, WindowEmit, WindowKind, WindowSpec};

use crate::aggregate::{
    fold_row, folds_for, merge_accumulators, read_accumulators, write_accumulators, Accumulator, Fold, Layout,
    WindowRow,
};
use crate::cell::{column, sorted_keys, write_key, write_optional_i64, Reader};
use crate::error::ExecError;
use crate::key::KeyColumns;
use crate::partition_progress::{MapProgress, PartitionProgress};
use crate::state::{StateSize, ENTRY_OVERHEAD_BYTES};

/// Where a tumbling or hopping window puts a row: in the pane `pane_ms` long that holds its
/// time, and so in each of the `size_ms / pane_ms` windows covering that pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Panes {
    size_ms: i64,
    pane_ms: i64,
}

impl Panes {
    /// The panes of a validated tumbling or hopping window.
    pub(crate) fn of(window: &WindowSpec) -> Self {
        let panes = match window.kind() {
            WindowKind::Tumbling { size_ms } => Panes { size_ms, pane_ms: size_ms },
            WindowKind::Hopping { size_ms, slide_ms } => Panes { size_ms, pane_ms: slide_ms },
            WindowKind::Session { .. } => unreachable!("planned: a session window has its own operator"),
        };
        assert!(
            panes.pane_ms > 0 && panes.size_ms % panes.pane_ms == 0,
            "validated: a positive slide that divides the size"
        );
        panes
    }

    /// One window per pane: what a map-side partial folds into, so the reduce side can place
    /// each pane in every window covering it.
    fn single(self) -> Self {
        Panes { size_ms: self.pane_ms, pane_ms: self.pane_ms }
    }

    pub(crate) fn pane_start(self, time_ms: i64) -> i64 {
        time_ms.div_euclid(self.pane_ms) * self.pane_ms
    }

    /// The starts of the windows covering the pane starting at `pane_start`, earliest first
    /// (so the first to close first).
    pub(crate) fn window_starts(self, pane_start: i64) -> impl Iterator<Item = i64> {
        let pane_ms = self.pane_ms;
        (0..self.size_ms / pane_ms).rev().map(move |before| pane_start - before * pane_ms)
    }

    pub(crate) fn end(self, window_start: i64) -> i64 {
        window_start + self.size_ms
    }
}

#[derive(Debug, Clone)]
struct Group {
    accumulators: Vec<Accumulator>,
    /// The last batch that changed this group: its output is what a reader sees of it.
    last_update_batch: u64,
    max_event_time: i64,
    touched_in: u64,
}

/// One window's groups, by encoded key.
type Groups = FxHashMap<Box<[u8]>, Group>;
type Windows = BTreeMap<i64, Groups>;
/// (window start, encoded key) of each group a batch changed, in the order it first did.
type Touched = Vec<(i64, Box<[u8]>)>;
/// Windows a batch closed, in order, with their groups.
type ClosedGroups = Vec<(i64, Groups)>;

/// What folding a batch needs besides the state: the layout, its folds, the panes its rows
/// are folded into, and how long after its start such a pane or window takes rows: until the
/// last window it is part of has closed, a window length after its start.
struct Folding<'a> {
    layout: &'a Layout,
    folds: &'a [Fold],
    panes: Panes,
    open_for_ms: i64,
}

/// Groups the rows of `batch` into `windows`. A row is folded into each of its windows that
/// ends after `drop_until`; a row none of whose windows does is late: skipped and counted, as
/// a stream processor counts a row it dropped for every window. Returns (late rows, max event
/// time seen).
#[allow(
    clippy::too_many_arguments,
    reason = "the operator lends its fields one by one so that its windows and its touched list are borrowed mutably at once"
)]
fn fold_batch(
    folding: &Folding<'_>,
    batch: &RecordBatch,
    windows: &mut Windows,
    drop_until: Option<i64>,
    update_batch: u64,
    generation: u64,
    mut touched: Option<&mut Touched>,
    key_bytes: &mut u64,
) -> Result<(u64, Option<i64>), ExecError> {
    let Folding { layout, folds, panes, open_for_ms } = *folding;
    let key_columns: Vec<ArrayRef> = layout.keys.iter().map(|key| column(batch, key)).collect::<Result<_, _>>()?;
    let key_columns = KeyColumns::new(&key_columns);
    let inputs = layout.aggregate_inputs(batch)?;
    let (pane_starts, event_times): (Vec<Option<i64>>, Vec<Option<i64>>) = match layout.input {
        AggregateInput::Rows => {
            let times = column(batch, &layout.window.time_column)?;
            let times = times
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| ExecError::MissingColumn(layout.window.time_column.clone()))?;
            let times: Vec<Option<i64>> = times.iter().collect();
            (times.iter().map(|time| time.map(|time| panes.pane_start(time))).collect(), times)
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
    let mut scratch = Vec::new();
    for row in 0..batch.num_rows() {
        // A row without an event time belongs to no window.
        let (Some(pane_start), Some(event_time)) = (pane_starts[row], event_times[row]) else { continue };
        // The last window covering the pane ends last: if it has closed, they all have.
        if drop_until.is_some_and(|watermark| pane_start + open_for_ms <= watermark) {
            late += 1;
            continue;
        }
        max_event_time = Some(max_event_time.map_or(event_time, |max| max.max(event_time)));
        key.clear();
        key_columns.encode(row, &mut key);
        for start in panes.window_starts(pane_start) {
            if drop_until.is_some_and(|watermark| start + open_for_ms <= watermark) {
                continue;
            }
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
            fold_row(&mut group.accumulators, folds, &inputs, row, &mut scratch);
            group.last_update_batch = update_batch;
            group.max_event_time = group.max_event_time.max(event_time);
            if let Some(touched) = touched.as_deref_mut() {
                if group.touched_in != generation {
                    group.touched_in = generation;
                    touched.push((start, key.clone().into_boxed_slice()));
                }
            }
        }
    }
    Ok((late, max_event_time))
}

/// The output row of a window's group.
fn window_row<'a>(start: i64, key: &'a [u8], group: &'a Group, panes: Panes) -> WindowRow<'a> {
    WindowRow {
        start,
        end: panes.end(start),
        key,
        accumulators: &group.accumulators,
        max_event_time: group.max_event_time,
    }
}

/// The output rows of the touched groups, in the order they were first touched.
fn touched_rows<'a>(windows: &'a Windows, touched: &'a [(i64, Box<[u8]>)], panes: Panes) -> Vec<WindowRow<'a>> {
    touched.iter().map(|(start, key)| window_row(*start, key, &windows[start][key.as_ref()], panes)).collect()
}

/// The rows of closed windows, earliest window first, each window's in its table's order: a
/// closed window's rows are a set, and sorting the hundreds of thousands a busy window holds
/// took longer than making them.
fn final_rows(closed: &[(i64, Groups)], panes: Panes) -> Vec<WindowRow<'_>> {
    closed
        .iter()
        .flat_map(|(start, groups)| groups.iter().map(move |(key, group)| window_row(*start, key, group, panes)))
        .collect()
}

/// Folds one batch into one row per (pane, key) before the exchange: per window for a
/// tumbling window, per slide for a hopping one. No state is kept between batches.
pub struct PartialWindowAggregateExec {
    layout: Layout,
    folds: Vec<Fold>,
    panes: Panes,
    /// Made from the first batch's schema, as `WindowAggregateExec` does: a stage's input
    /// schema never changes, and building one costs several allocations per batch.
    schema: Option<SchemaRef>,
}

impl PartialWindowAggregateExec {
    pub fn new(window: WindowSpec, keys: Vec<String>, aggregates: Vec<Aggregate>) -> Self {
        let panes = Panes::of(&window).single();
        let layout = Layout { window, keys, aggregates, input: AggregateInput::Rows };
        let folds = layout.folds();
        PartialWindowAggregateExec { layout, folds, panes, schema: None }
    }

    pub fn execute(&mut self, batch: &RecordBatch) -> Result<RecordBatch, ExecError> {
        let mut windows = Windows::new();
        let mut touched = Vec::new();
        let mut key_bytes = 0;
        let folding = Folding { layout: &self.layout, folds: &self.folds, panes: self.panes, open_for_ms: 0 };
        fold_batch(&folding, batch, &mut windows, None, 0, 1, Some(&mut touched), &mut key_bytes)?;
        let layout = &self.layout;
        let schema = Arc::clone(self.schema.get_or_insert_with(|| layout.output_schema(&batch.schema(), true)));
        layout.emit(&schema, &touched_rows(&windows, &touched, self.panes), true)
    }
}

pub struct WindowOutput {
    /// Every (window, key) this batch touched, with its full updated value, or under
    /// `WindowEmit::OnClose` every (window, key) of a window this batch closed; for session
    /// windows, every session that closed.
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

/// Keyed tumbling or hopping window state of one reduce partition.
///
/// Late rows are counted per input row; for `Partials` input one partial row may stand for
/// many raw rows. Float sums depend on the order rows arrive in (floating-point addition is
/// not associative); integer aggregates do not.
pub struct WindowAggregateExec {
    layout: Layout,
    folds: Vec<Fold>,
    /// How partial values of one key merge, when a window is made of its panes.
    merge_folds: Vec<Fold>,
    panes: Panes,
    /// Where rows are folded. Emitted as they change, a hopping window's rows are folded into
    /// each window; emitted on close, into the one pane of their time, and a window is the
    /// merge of its panes when it closes: a row is folded once instead of `size / slide`
    /// times, and the state holds a key once per pane rather than once per window.
    stored: Panes,
    /// Per window start (or pane start, see `stored`), its groups.
    windows: Windows,
    /// The largest event time among the rows folded so far: the watermark's base when no
    /// map side reports its partitions' progress (`progress`).
    max_event_time: Option<i64>,
    /// How far each map partition feeding this window has got: the watermark's base once
    /// any batch brought it.
    progress: PartitionProgress,
    schema: Option<SchemaRef>,
    generation: u64,
    /// The bytes of the keys of every open (window, key) group, kept as groups open and
    /// close so that the state's size costs no walk over the groups each batch.
    key_bytes: u64,
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"SLWS";
/// 2: a group's last update is a batch id, not a processing time. 3: the map partitions'
/// progress follows the largest event time.
const SNAPSHOT_VERSION: u8 = 3;
/// Still read: a checkpoint taken before the partitions' progress was kept restores as a
/// window that starts tracking it with the next batch.
const SNAPSHOT_VERSION_WITHOUT_PROGRESS: u8 = 2;

impl WindowAggregateExec {
    pub fn new(window: WindowSpec, keys: Vec<String>, aggregates: Vec<Aggregate>, input: AggregateInput) -> Self {
        let panes = Panes::of(&window);
        let stored = match window.emit {
            WindowEmit::Updates => panes,
            WindowEmit::OnClose => panes.single(),
        };
        let merge_folds = folds_for(&aggregates, AggregateInput::Partials);
        let layout = Layout { window, keys, aggregates, input };
        let folds = layout.folds();
        WindowAggregateExec {
            layout,
            folds,
            merge_folds,
            panes,
            stored,
            windows: Windows::new(),
            max_event_time: None,
            progress: PartitionProgress::default(),
            schema: None,
            generation: 0,
            key_bytes: 0,
        }
    }

    /// The event time windows close by: the least progress of the map partitions feeding
    /// the window (`partition_progress`), or with no such reports the largest event time
    /// folded, less the allowed lateness.
    pub fn watermark_ms(&self) -> Option<i64> {
        self.progress.watermark_ms(self.max_event_time, self.layout.window.allowed_lateness_ms)
    }

    /// Takes in a batch's progress of the map partitions without rows to fold (none of
    /// them sent this partition any): a later batch closes what it lets close.
    pub fn observe_progress(&mut self, progress: &MapProgress) {
        self.progress.observe(progress);
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
            + (self.folds.len() * std::mem::size_of::<Accumulator>()) as u64;
        let per_window = ENTRY_OVERHEAD_BYTES + std::mem::size_of::<Groups>() as u64;
        StateSize { keys: groups, bytes: self.key_bytes + groups * per_group + self.windows.len() as u64 * per_window }
    }

    /// Folds `inputs`, the rows of batch `update_batch`, into the state.
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
        let watermark_before = self.watermark_ms();
        let mut touched = Vec::new();
        // Rows emitted as their windows close need no list of what this batch changed.
        let tracks_touched = self.layout.window.emit == WindowEmit::Updates;
        let mut late_rows_dropped = 0;
        let folding =
            Folding { layout: &self.layout, folds: &self.folds, panes: self.stored, open_for_ms: self.panes.size_ms };
        for batch in inputs {
            let (late, max_event_time) = fold_batch(
                &folding,
                batch,
                &mut self.windows,
                watermark_before,
                update_batch,
                self.generation,
                tracks_touched.then_some(&mut touched),
                &mut self.key_bytes,
            )?;
            late_rows_dropped += late;
            if let Some(seen) = max_event_time {
                self.max_event_time = Some(self.max_event_time.map_or(seen, |max| max.max(seen)));
            }
        }
        if let Some(progress) = progress {
            self.progress.observe(progress);
        }
        // A window this batch both changed and closed is emitted before it goes.
        let updates = match self.layout.window.emit {
            WindowEmit::Updates => {
                Some(self.layout.emit(&schema, &touched_rows(&self.windows, &touched, self.panes), false)?)
            }
            WindowEmit::OnClose => None,
        };
        let (closed, closed_groups) = match (self.watermark_ms(), updates.is_some()) {
            (None, _) => (Vec::new(), Vec::new()),
            (Some(watermark), true) => self.close_windows_until(watermark),
            (Some(watermark), false) => self.close_pane_windows(watermark_before, watermark),
        };
        let updates = match updates {
            Some(updates) => updates,
            None => self.layout.emit(&schema, &final_rows(&closed_groups, self.panes), false)?,
        };
        Ok(WindowOutput { updates, closed, late_rows_dropped })
    }

    /// Whether its rows come once, as each window closes.
    pub fn emits_on_close(&self) -> bool {
        self.layout.window.emit == WindowEmit::OnClose
    }

    /// Closes every window still open, its rows added to `output`'s: the job's input has
    /// ended, so no row can come for them. Only windows emitted on close are closed; the
    /// rows of the others have been emitted already as they changed.
    pub fn close_all_into(&mut self, output: &mut WindowOutput) -> Result<(), ExecError> {
        let Some(schema) = self.schema.clone().filter(|_| self.emits_on_close()) else { return Ok(()) };
        let (closed, closed_groups) = self.close_pane_windows(self.watermark_ms(), i64::MAX);
        let rows = self.layout.emit(&schema, &final_rows(&closed_groups, self.panes), false)?;
        // The output so far may be of no input at all, and so of no columns.
        output.updates = if output.updates.num_rows() == 0 {
            rows
        } else {
            arrow_select::concat::concat_batches(&schema, [&output.updates, &rows])
                .map_err(ExecError::arrow("adding the windows the input's end closed"))?
        };
        output.closed.extend(closed);
        Ok(())
    }

    /// Emitted on close: the windows that end after `before` and by `after`, each the merge
    /// of its panes, earliest first; the panes whose last window that closes are dropped.
    fn close_pane_windows(&mut self, before: Option<i64>, after: i64) -> (Vec<ClosedWindow>, ClosedGroups) {
        let (size, pane_ms) = (self.panes.size_ms, self.panes.pane_ms);
        let closing = |start: i64| {
            let end = start + size;
            end <= after && before.is_none_or(|before| end > before)
        };
        // Only a window with a pane held has anything to emit.
        let starts: std::collections::BTreeSet<i64> = self
            .windows
            .keys()
            .flat_map(|&pane| self.panes.window_starts(pane))
            .filter(|&start| closing(start))
            .collect();
        let (mut closed, mut closed_groups) = (Vec::new(), Vec::new());
        for start in starts {
            // Windows close in order, so this one is the last to need its first pane.
            let mut merged = match self.windows.remove(&start) {
                Some(groups) => {
                    self.key_bytes -= groups.keys().map(|key| key.len() as u64).sum::<u64>();
                    groups
                }
                None => Groups::default(),
            };
            let later_panes: Vec<&Groups> = (start + pane_ms..start + size)
                .step_by(pane_ms as usize)
                .filter_map(|pane| self.windows.get(&pane))
                .collect();
            merged.reserve(later_panes.iter().map(|groups| groups.len()).max().unwrap_or(0));
            for groups in later_panes {
                for (key, group) in groups {
                    match merged.get_mut(key) {
                        Some(into) => {
                            merge_accumulators(&mut into.accumulators, &group.accumulators, &self.merge_folds);
                            into.last_update_batch = into.last_update_batch.max(group.last_update_batch);
                            into.max_event_time = into.max_event_time.max(group.max_event_time);
                        }
                        None => {
                            merged.insert(key.clone(), group.clone());
                        }
                    }
                }
            }
            let last_update_batch = merged.values().map(|group| group.last_update_batch).max().unwrap_or(0);
            closed.push(ClosedWindow { window_start_ms: start, window_end_ms: start + size, last_update_batch });
            closed_groups.push((start, merged));
        }
        while let Some(entry) = self.windows.first_entry() {
            if *entry.key() + size > after {
                break;
            }
            let groups = entry.remove();
            self.key_bytes -= groups.keys().map(|key| key.len() as u64).sum::<u64>();
        }
        (closed, closed_groups)
    }

    /// Emitted as they change: removes the windows that end by `watermark`, returning them
    /// and their groups.
    fn close_windows_until(&mut self, watermark: i64) -> (Vec<ClosedWindow>, ClosedGroups) {
        let (mut closed, mut closed_groups) = (Vec::new(), Vec::new());
        while let Some(entry) = self.windows.first_entry() {
            let start = *entry.key();
            let end = self.panes.end(start);
            if end > watermark {
                break;
            }
            let groups = entry.remove();
            self.key_bytes -= groups.keys().map(|key| key.len() as u64).sum::<u64>();
            let last_update_batch = groups.values().map(|group| group.last_update_batch).max().unwrap_or(0);
            closed.push(ClosedWindow { window_start_ms: start, window_end_ms: end, last_update_batch });
            closed_groups.push((start, groups));
        }
        (closed, closed_groups)
    }

    /// The whole state as bytes, windows in order and each window's keys in its table's
    /// order. Sorting the keys would make the bytes depend on the state alone, but for a state
    /// of millions of keys a checkpoint spent more on the sort than on the rest of the copy.
    pub fn snapshot(&self) -> Vec<u8> {
        self.write_snapshot(false)
    }

    /// The snapshot with each window's keys in byte order: equal for equal states, so tests
    /// can compare a restored state with the one it came from.
    #[cfg(test)]
    fn sorted_snapshot(&self) -> Vec<u8> {
        self.write_snapshot(true)
    }

    fn write_snapshot(&self, sorted: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.snapshot_bytes_estimate());
        out.extend_from_slice(SNAPSHOT_MAGIC);
        out.push(SNAPSHOT_VERSION);
        write_optional_i64(self.max_event_time, &mut out);
        self.progress.write(&mut out);
        out.extend_from_slice(&(self.windows.len() as u32).to_le_bytes());
        for (start, groups) in &self.windows {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
            let mut write_group = |key: &[u8], group: &Group| {
                write_key(key, &mut out);
                out.extend_from_slice(&group.last_update_batch.to_le_bytes());
                out.extend_from_slice(&group.max_event_time.to_le_bytes());
                write_accumulators(&group.accumulators, &mut out);
            };
            if sorted {
                sorted_keys(groups).into_iter().for_each(|key| write_group(key, &groups[key]));
            } else {
                groups.iter().for_each(|(key, group)| write_group(key, group));
            }
        }
        out
    }

    /// About the bytes a snapshot takes, so that it is written into one allocation rather
    /// than one grown by doubling (each growth a copy, and page faults on fresh memory).
    fn snapshot_bytes_estimate(&self) -> usize {
        const WINDOW_HEADER: usize = 8 + 4;
        // A key's length, the last update and max event time, and about 9 bytes a value.
        let per_group = 4 + 8 + 8 + 9 * self.folds.len();
        let groups: usize = self.windows.values().map(|groups| groups.len()).sum();
        16 + self.progress.written_len()
            + self.windows.len() * WINDOW_HEADER
            + self.key_bytes as usize
            + groups * per_group
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let mut reader = Reader { bytes };
        if reader.take(4)? != SNAPSHOT_MAGIC {
            return Err(ExecError::CorruptSnapshot("not a window-state snapshot (bad magic)".into()));
        }
        let version = reader.u8()?;
        if version != SNAPSHOT_VERSION && version != SNAPSHOT_VERSION_WITHOUT_PROGRESS {
            return Err(ExecError::CorruptSnapshot(format!("snapshot version {version}, expected {SNAPSHOT_VERSION}")));
        }
        let max_event_time = reader.optional_i64("watermark")?;
        let progress = match version {
            SNAPSHOT_VERSION => PartitionProgress::read(&mut reader)?,
            _ => PartitionProgress::default(),
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
                let key = reader.key(self.layout.keys.len())?;
                let last_update_batch = reader.i64()? as u64;
                let max_event_time = reader.i64()?;
                let accumulators = read_accumulators(&mut reader, &self.folds)?;
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
        self.progress = progress;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::window_testing::{
        aggregates, aggregates_of, all_aggregates, arbitrary_batches, drifting_partitions, output_aggregates,
        partitions_progress, rows, to_batch, Aggregates, PartitionedBatches, TestRow,
    };

    const SIZE: i64 = 100;
    const SLIDE: i64 = 25;

    fn spec(lateness: i64) -> WindowSpec {
        WindowSpec::tumbling("t", SIZE, lateness)
    }

    /// A tumbling window of `SIZE`, or a hopping one of `SIZE` sliding by `SLIDE`.
    fn window(hopping: bool, lateness: i64) -> WindowSpec {
        if hopping {
            WindowSpec::hopping("t", SIZE, SLIDE, lateness)
        } else {
            spec(lateness)
        }
    }

    fn check_window_starts(window: WindowSpec, time: i64, expected: &[i64]) {
        let panes = Panes::of(&window);
        let found: Vec<i64> = panes.window_starts(panes.pane_start(time)).collect();
        assert_eq!(found, expected, "windows of a row at {time} in {window:?}");
    }

    #[test]
    fn a_row_is_in_every_window_that_covers_its_time() {
        check_window_starts(spec(0), 130, &[100]);
        check_window_starts(spec(0), -1, &[-100]);
        check_window_starts(WindowSpec::hopping("t", 100, 25, 0), 130, &[50, 75, 100, 125]);
        check_window_starts(WindowSpec::hopping("t", 100, 25, 0), 125, &[50, 75, 100, 125]);
        check_window_starts(WindowSpec::hopping("t", 100, 25, 0), 124, &[25, 50, 75, 100]);
        check_window_starts(WindowSpec::hopping("t", 30, 10, 0), -5, &[-30, -20, -10]);
        check_window_starts(WindowSpec::hopping("t", 50, 50, 0), 49, &[0]);
    }

    /// (window start, key) → its aggregates, from the final value of each update.
    type Table = BTreeMap<(i64, String), Aggregates>;

    /// Reads output rows, checking the `window_end` column when the window has one.
    fn absorb(table: &mut Table, updates: &RecordBatch, window: &WindowSpec) {
        let first_key = if window.has_end_column() { 2 } else { 1 };
        let starts = updates.column(0).as_primitive::<Int64Type>();
        let keys = updates.column(first_key).as_string::<i32>();
        for row in 0..updates.num_rows() {
            if window.has_end_column() {
                assert_eq!(updates.column(1).as_primitive::<Int64Type>().value(row), starts.value(row) + SIZE);
            }
            table.insert((starts.value(row), keys.value(row).to_string()), output_aggregates(updates, row));
        }
    }

    /// The naive reference: fold every row into each open window whose span holds its time,
    /// batch by batch, by hand; a row no window took is late.
    fn reference(batches: &[Vec<TestRow>], window: &WindowSpec, with_distinct: bool) -> (Table, u64) {
        let slide = window.slide_ms.unwrap_or(SIZE);
        let mut values: BTreeMap<(i64, String), Vec<Option<i64>>> = BTreeMap::new();
        let mut max_time: Option<i64> = None;
        let mut late = 0;
        for batch in batches {
            let watermark = max_time.map(|max| max - window.allowed_lateness_ms);
            let mut batch_max = max_time;
            for (key, time, value) in batch {
                let open: Vec<i64> = (time - SIZE + 1..=*time)
                    .filter(|start| start.rem_euclid(slide) == 0)
                    .filter(|start| watermark.is_none_or(|w| start + SIZE > w))
                    .collect();
                if open.is_empty() {
                    late += 1;
                    continue;
                }
                batch_max = Some(batch_max.map_or(*time, |m| m.max(*time)));
                for start in open {
                    values.entry((start, key.clone())).or_default().push(*value);
                }
            }
            max_time = batch_max;
        }
        let table = values.into_iter().map(|(at, values)| (at, aggregates_of(&values, with_distinct))).collect();
        (table, late)
    }

    /// Runs the batches through the engine: raw rows with every aggregate, or partials of
    /// `split`-row blocks with the ones a partial takes.
    fn run_engine(batches: &[Vec<TestRow>], window: &WindowSpec, partial: bool, split: usize) -> (Table, u64) {
        let (input, aggregates) =
            if partial { (AggregateInput::Partials, aggregates()) } else { (AggregateInput::Rows, all_aggregates()) };
        let mut exec = WindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates.clone(), input);
        let mut partial_exec = PartialWindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates);
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
            absorb(&mut table, &output.updates, window);
        }
        (table, late)
    }

    proptest! {
        #[test]
        fn agrees_with_the_naive_reference(
            batches in arbitrary_batches(250, 60),
            hopping: bool,
            lateness in 0i64..120,
            split in 1usize..10,
        ) {
            let window = window(hopping, lateness);
            let (expected, expected_late) = reference(&batches, &window, true);
            let (rows_table, rows_late) = run_engine(&batches, &window, false, split);
            prop_assert_eq!(&rows_table, &expected);
            prop_assert_eq!(rows_late, expected_late);
            let (partial_table, _) = run_engine(&batches, &window, true, split);
            let (expected, _) = reference(&batches, &window, false);
            prop_assert_eq!(&partial_table, &expected, "partial aggregation must not change results");
        }

        /// With a lateness no row reaches, batch boundaries decide nothing: the same rows in
        /// one batch give the same final windows.
        #[test]
        fn regrouping_batches_changes_nothing_when_no_row_is_late(batches in arbitrary_batches(250, 60), hopping: bool, partial: bool) {
            let window = window(hopping, 10_000);
            let (batched, _) = run_engine(&batches, &window, partial, 7);
            let (together, _) = run_engine(&[batches.concat()], &window, partial, 7);
            prop_assert_eq!(batched, together);
        }

        /// Emitted on close, each (window, key) comes once, with the value the reference
        /// gives it, and only windows the watermark has passed come at all.
        #[test]
        fn on_close_emits_each_closed_window_once_with_its_final_value(
            batches in arbitrary_batches(250, 60),
            hopping: bool,
            lateness in 0i64..120,
            partial: bool,
        ) {
            let window = window(hopping, lateness).emitted_on_close();
            let (input, aggregates) =
                if partial { (AggregateInput::Partials, aggregates()) } else { (AggregateInput::Rows, all_aggregates()) };
            let mut exec = WindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates.clone(), input);
            let mut partial_exec = PartialWindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates);
            let mut emitted = Table::new();
            let mut closed_ends = Vec::new();
            for (index, batch) in batches.iter().enumerate() {
                let block = to_batch(batch);
                let block = if partial { partial_exec.execute(&block).expect("partial") } else { block };
                let output = exec.process(&[block], index as u64).expect("process");
                let mut rows = Table::new();
                absorb(&mut rows, &output.updates, &window);
                prop_assert_eq!(rows.len(), output.updates.num_rows(), "a (window, key) twice in one batch");
                for (at, value) in rows {
                    prop_assert!(
                        output.closed.iter().any(|closed| closed.window_start_ms == at.0),
                        "window {} emitted in a batch that did not close it", at.0
                    );
                    prop_assert!(emitted.insert(at.clone(), value).is_none(), "{:?} emitted twice", at);
                }
                closed_ends.extend(output.closed.iter().map(|closed| closed.window_end_ms));
            }
            let (expected, _) = reference(&batches, &window, !partial);
            let watermark = exec.watermark_ms();
            let expected: Table = expected
                .into_iter()
                .filter(|((start, _), _)| watermark.is_some_and(|watermark| start + SIZE <= watermark))
                .collect();
            prop_assert_eq!(emitted, expected);
            prop_assert!(closed_ends.windows(2).all(|pair| pair[0] < pair[1]), "windows close in order, once");
        }

        #[test]
        fn snapshot_and_restore_continue_identically(
            batches in arbitrary_batches(250, 60),
            hopping: bool,
            on_close: bool,
            cut in 0usize..8,
        ) {
            let window = if on_close { window(hopping, 10).emitted_on_close() } else { window(hopping, 10) };
            let new = || WindowAggregateExec::new(window.clone(), vec!["k".into()], all_aggregates(), AggregateInput::Rows);
            let mut straight = new();
            let mut restored = new();
            for (index, batch) in batches.iter().enumerate() {
                let block = [to_batch(batch)];
                let expected = straight.process(&block, index as u64).expect("straight");
                if index == cut.min(batches.len() - 1) {
                    let bytes = straight.snapshot();
                    let mut fresh = new();
                    fresh.restore(&bytes).expect("restore");
                    prop_assert_eq!(fresh.sorted_snapshot(), straight.sorted_snapshot());
                    restored = fresh;
                    continue;
                }
                if index > cut.min(batches.len() - 1) {
                    let found = restored.process(&block, index as u64).expect("restored");
                    if on_close {
                        // A closed window's rows come in its table's order, which a restore
                        // does not keep: the same rows, perhaps in another order.
                        let (mut found_rows, mut expected_rows) = (Table::new(), Table::new());
                        absorb(&mut found_rows, &found.updates, &window);
                        absorb(&mut expected_rows, &expected.updates, &window);
                        prop_assert_eq!(found.updates.num_rows(), expected.updates.num_rows());
                        prop_assert_eq!(found_rows, expected_rows);
                    } else {
                        prop_assert_eq!(found.updates, expected.updates);
                    }
                    prop_assert_eq!(found.closed, expected.closed);
                } else {
                    restored.process(&block, index as u64).expect("restored");
                }
            }
        }
    }

    /// Runs partitioned batches through a window fed with each partition's progress, as a
    /// reduce task is; with `restore_at`, through a snapshot and a fresh operator there.
    fn run_partitioned(
        batches: &PartitionedBatches,
        window: &WindowSpec,
        partial: bool,
        restore_at: Option<usize>,
    ) -> (Table, u64) {
        let (input, aggregates) =
            if partial { (AggregateInput::Partials, aggregates()) } else { (AggregateInput::Rows, all_aggregates()) };
        let new = || WindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates.clone(), input);
        let mut exec = new();
        let mut partial_exec = PartialWindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates.clone());
        let mut table = Table::new();
        let mut late = 0;
        for (index, partitions) in batches.iter().enumerate() {
            if restore_at == Some(index) {
                let bytes = exec.snapshot();
                exec = new();
                exec.restore(&bytes).expect("restores");
            }
            let blocks: Vec<RecordBatch> = partitions
                .iter()
                .map(
                    |rows| {
                        if partial {
                            partial_exec.execute(&to_batch(rows)).expect("partial")
                        } else {
                            to_batch(rows)
                        }
                    },
                )
                .collect();
            let progress = partitions_progress(partitions, index as i64 * 10);
            let output = exec.process_with_progress(&blocks, index as u64, Some(&progress)).expect("process");
            late += output.late_rows_dropped;
            absorb(&mut table, &output.updates, window);
        }
        (table, late)
    }

    proptest! {
        /// However far one partition runs ahead of another, a row within the lateness of
        /// its own partition's largest time is never late: every row counts, as if all came
        /// in one batch. Through a snapshot and restore too.
        #[test]
        fn a_partition_running_ahead_makes_no_row_of_another_late(
            (lateness, batches) in (0i64..120).prop_flat_map(|lateness| (Just(lateness), drifting_partitions(lateness))),
            hopping: bool,
            partial: bool,
            restore_at in 0usize..20,
        ) {
            let window = window(hopping, lateness);
            let every_row: Vec<TestRow> = batches.iter().flatten().flatten().cloned().collect();
            let (expected, _) = reference(&[every_row], &window, !partial);
            let (found, late) = run_partitioned(&batches, &window, partial, Some(restore_at));
            prop_assert_eq!(late, 0);
            prop_assert_eq!(found, expected);
        }
    }

    #[test]
    fn the_largest_time_of_any_partition_would_have_dropped_the_row_that_the_slowest_keeps() {
        let window = spec(120);
        // Partition 0 is at 10 000, partition 1 at 40; then partition 1 sends 60.
        let batches: PartitionedBatches = vec![
            vec![vec![("a".into(), 10_000, Some(1))], vec![("b".into(), 40, Some(1))]],
            vec![vec![], vec![("b".into(), 60, Some(1))]],
        ];
        let mut own_max =
            WindowAggregateExec::new(window.clone(), vec!["k".into()], aggregates(), AggregateInput::Rows);
        let late: u64 = batches
            .iter()
            .enumerate()
            .map(|(index, partitions)| {
                let blocks: Vec<RecordBatch> = partitions.iter().map(|rows| to_batch(rows)).collect();
                own_max.process(&blocks, index as u64).expect("process").late_rows_dropped
            })
            .sum();
        assert_eq!(late, 1, "without the partitions' progress the row at 60 is behind 10 000 - 120");
        let (table, late) = run_partitioned(&batches, &window, false, None);
        assert_eq!(late, 0);
        assert_eq!(table[&(0, "b".to_string())].0, 2, "both of partition 1's rows count");
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
    fn a_hopping_window_emits_each_window_a_row_is_in_and_folds_late_rows_into_the_open_ones() {
        let hopping = WindowSpec::hopping("t", 100, 25, 0);
        let mut exec = WindowAggregateExec::new(hopping.clone(), vec!["k".into()], aggregates(), AggregateInput::Rows);
        let first = exec.process(&[rows(&[("a", 130, Some(1))])], 0).expect("first");
        let starts: Vec<i64> = first.updates.column(0).as_primitive::<Int64Type>().values().to_vec();
        let ends: Vec<i64> = first.updates.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!((starts, ends), (vec![50, 75, 100, 125], vec![150, 175, 200, 225]));
        let second = exec.process(&[rows(&[("b", 260, Some(2))])], 1).expect("second");
        let closed: Vec<(i64, i64)> =
            second.closed.iter().map(|window| (window.window_start_ms, window.window_end_ms)).collect();
        assert_eq!(closed, vec![(50, 150), (75, 175), (100, 200), (125, 225)]);
        let third = exec.process(&[rows(&[("a", 140, Some(3)), ("a", 200, Some(4))])], 2).expect("third");
        assert_eq!(third.late_rows_dropped, 1, "every window of the row at 140 has closed");
        let starts: Vec<i64> = third.updates.column(0).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(starts, vec![175, 200], "the row at 200 goes to its windows still open only");
    }

    #[test]
    fn the_end_of_input_closes_every_window_emitted_on_close_and_no_other() {
        let rows_of = || rows(&[("a", 10, Some(1)), ("b", 90, Some(2)), ("a", 130, Some(3))]);
        let mut on_close = WindowAggregateExec::new(
            spec(1_000).emitted_on_close(),
            vec!["k".into()],
            aggregates(),
            AggregateInput::Rows,
        );
        let mut output = on_close.process(&[rows_of()], 3).expect("process");
        assert_eq!(output.updates.num_rows(), 0, "the lateness keeps both windows open");
        on_close.close_all_into(&mut output).expect("close");
        let mut table = Table::new();
        absorb(&mut table, &output.updates, &spec(0));
        let keys: Vec<(i64, &str)> = table.keys().map(|(start, key)| (*start, key.as_str())).collect();
        assert_eq!(keys, [(0, "a"), (0, "b"), (100, "a")]);
        assert_eq!(output.closed.len(), 2);
        assert_eq!(on_close.open_windows(), 0);

        let mut updates = WindowAggregateExec::new(spec(1_000), vec!["k".into()], aggregates(), AggregateInput::Rows);
        let mut output = updates.process(&[rows_of()], 3).expect("process");
        let emitted = output.updates.num_rows();
        updates.close_all_into(&mut output).expect("close");
        assert_eq!(output.updates.num_rows(), emitted, "updates were emitted as they came");
        assert_eq!(updates.open_windows(), 2);
    }

    #[test]
    fn a_snapshot_from_before_the_partitions_progress_still_restores() {
        let new = || WindowAggregateExec::new(spec(0), vec!["k".into()], all_aggregates(), AggregateInput::Rows);
        let mut exec = new();
        exec.process(&[rows(&[("a", 10, Some(1)), ("b", 120, None)])], 5).expect("process");
        let mut old = exec.snapshot();
        // Version 2 had no progress: its 6 bytes (two absent times, no partitions) follow
        // the magic, the version and the largest event time (a flag and 8 bytes).
        assert_eq!(old.drain(14..20).collect::<Vec<u8>>(), [0; 6]);
        old[4] = SNAPSHOT_VERSION_WITHOUT_PROGRESS;
        let mut restored = new();
        restored.restore(&old).expect("version 2 restores");
        assert_eq!(restored.sorted_snapshot(), exec.sorted_snapshot());
    }

    #[test]
    fn restore_rejects_damaged_bytes_without_panicking() {
        let mut exec = WindowAggregateExec::new(spec(0), vec!["k".into()], all_aggregates(), AggregateInput::Rows);
        exec.process(&[rows(&[("a", 10, Some(1)), ("b", 120, None)])], 5).expect("process");
        let bytes = exec.snapshot();
        for cut in 0..bytes.len() {
            let mut fresh = WindowAggregateExec::new(spec(0), vec!["k".into()], all_aggregates(), AggregateInput::Rows);
            assert!(fresh.restore(&bytes[..cut]).is_err(), "truncated at {cut}");
        }
        let mut garbage = bytes.clone();
        garbage[5] = 7;
        let mut fresh = WindowAggregateExec::new(spec(0), vec!["k".into()], all_aggregates(), AggregateInput::Rows);
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
