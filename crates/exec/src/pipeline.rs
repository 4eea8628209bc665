//! One stage of a physical plan as a chain of operators: the unit a task's compute monotask runs.
//!
//! A `StagePipeline` lives as long as its `(job, stage, partition)` on a worker, so stateful
//! operators (window aggregate, increments, keyed aggregate, top-k, top-rows, window join; any
//! number of
//! them, in a map stage too) keep their state between the batches of that partition.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use sleet_plan::physical::{can_combine, AggregateInput};
use sleet_plan::{
    Aggregate, EventTimeSource, PhysicalOp, SourceSpec, StageInput, StageOutput, StagePlan, TableSpec, WindowKind,
    WindowSpec,
};

use crate::decoder::RecordDecoder;
use crate::error::ExecError;
use crate::increments::IncrementsExec;
use crate::json::DeadLetter;
use crate::keyed_aggregate::KeyedAggregateExec;
use crate::ops::{FilterExec, LookupExec, ProjectExec};
use crate::partition::partition_batch;
use crate::partition_progress::MapProgress;
use crate::records::RawRecords;
use crate::session::SessionWindowAggregateExec;
use crate::state::{join_stage_snapshot, split_stage_snapshot, StateCounts, StateSize};
use crate::top_k::TopKExec;
use crate::top_rows::{PartialTopRowsExec, TopRowsExec};
use crate::window::{ClosedWindow, PartialWindowAggregateExec, WindowAggregateExec};
use crate::window_join::WindowJoinExec;

/// What a task feeds its stage: raw source records, rows a source held already decoded, or
/// the shuffle blocks it pulled.
pub enum StageInputData {
    Raw(RawRecords),
    /// Source rows that need no decoding: they skip the stage's decode operator, whose output
    /// columns they must hold (by name, with its types); other columns are dropped as the
    /// decoder's projection would.
    Decoded(RecordBatch),
    /// A reduce task's blocks, with how far in event time the map partitions that wrote
    /// them got (`None`: the map side reports no progress, and a window keeps its own).
    Blocks {
        blocks: Vec<RecordBatch>,
        progress: Option<MapProgress>,
    },
}

/// What one run of a stage produced.
#[derive(Default)]
pub struct StageRunOutput {
    /// The non-empty blocks, by reduce partition, when the stage ends in a shuffle.
    pub blocks: Vec<(u32, RecordBatch)>,
    /// The rows for the sink when the stage ends in one.
    pub sink_rows: Option<RecordBatch>,
    pub dead_letters: Vec<DeadLetter>,
    pub records_in: u64,
    pub rows_out: u64,
    pub unmatched_lookup_rows: u64,
    pub late_rows_dropped: u64,
    /// Readings older than their key's newest, folded in within the allowed lateness.
    pub late_rows_folded: u64,
    /// Readings whose key and time the state held already (increments).
    pub duplicate_rows_dropped: u64,
    /// Rows a stateful operator could not use: no event time, or no value to fold.
    pub invalid_rows_dropped: u64,
    /// Rows of new keys refused while a stateful operator held its `max_keys` (rows a window
    /// join did not hold at its `max_rows`).
    pub refused_rows: u64,
    /// Keys (or top-k groups) forgotten as their TTL passed.
    pub expired_keys: u64,
    /// The first stateful operator that refused rows of new keys in this batch, named for
    /// the user (`state_bound_name`): its state is at its `max_keys` (or `max_rows`).
    pub state_full: Option<String>,
    /// The size of the stage's state after the batch, summed over its operators: keys
    /// (increments, keyed aggregate, top-k) and open (window, key) groups (window aggregate,
    /// window join), with an estimate
    /// of their bytes.
    pub state_keys: u64,
    pub state_bytes: u64,
    pub closed_windows: Vec<ClosedWindow>,
    /// Time the map-side combine (the partial window aggregate) took: the what-if for
    /// turning it off moves this work to the reduce side, so it is measured apart.
    pub combine_us: u64,
    /// For a stage whose shuffle feeds an event-time window: the largest event time among
    /// the rows it wrote, its partition's progress (`partition_progress`).
    pub event_time_ms: Option<i64>,
}

/// A stage's input as rows, between `StagePipeline::decode` and `run_rows`.
pub struct StageRows {
    batches: Vec<RecordBatch>,
    records_in: u64,
    dead_letters: Vec<DeadLetter>,
    /// Whether the stage's decode operator has done its part (or been skipped for decoded
    /// rows), so `run_rows` starts after it.
    decoded: bool,
    progress: Option<MapProgress>,
}

enum OperatorExec {
    Decode(RecordDecoder),
    Filter(FilterExec),
    Project(ProjectExec),
    Lookup(LookupExec),
    PartialWindow(PartialWindowAggregateExec),
    Window(WindowAggregateExec),
    SessionWindow(SessionWindowAggregateExec),
    Increments(IncrementsExec),
    KeyedAggregate(KeyedAggregateExec),
    TopK(TopKExec),
    PartialTopRows(PartialTopRowsExec),
    TopRows(TopRowsExec),
    WindowJoin(WindowJoinExec),
}

pub struct StagePipeline {
    operators: Vec<OperatorExec>,
    /// Per operator, its name when it keeps keys under a `max_keys`.
    bound_names: Vec<Option<String>>,
    output: StageOutput,
    /// The job's last batch, when its input ends: windows emitted on close are closed in it.
    last_batch: Option<u64>,
}

impl StagePipeline {
    /// `load_table` supplies the broadcast tables lookups read; `exec` does no I/O itself.
    pub fn new(
        stage: &StagePlan,
        load_table: &dyn Fn(&TableSpec) -> Result<RecordBatch, String>,
    ) -> Result<Self, ExecError> {
        let mut operators = Vec::with_capacity(stage.ops.len());
        for op in &stage.ops {
            operators.push(match op {
                PhysicalOp::DecodeJson { .. } | PhysicalOp::DecodeAvro { .. } => {
                    let decoder = RecordDecoder::new(op)?;
                    OperatorExec::Decode(match record_timestamp_column(&stage.input) {
                        Some(column) => decoder.with_record_timestamps(column),
                        None => decoder,
                    })
                }
                PhysicalOp::Filter { predicate } => OperatorExec::Filter(FilterExec::new(predicate.clone())),
                PhysicalOp::Project { columns } => OperatorExec::Project(ProjectExec::new(columns.clone())),
                PhysicalOp::Lookup { key, table, table_key, columns } => OperatorExec::Lookup(LookupExec::new(
                    key.clone(),
                    load_table(table).map_err(ExecError::Table)?,
                    table_key.clone(),
                    columns.clone(),
                )?),
                PhysicalOp::PartialWindowAggregate { window, keys, aggregates } => {
                    if !can_combine(window, aggregates) {
                        return Err(ExecError::StagePlan(
                            "a map-side partial of a session window or a distinct count".into(),
                        ));
                    }
                    OperatorExec::PartialWindow(PartialWindowAggregateExec::new(
                        window.clone(),
                        keys.clone(),
                        aggregates.clone(),
                    ))
                }
                PhysicalOp::WindowAggregate { window, keys, aggregates, input } => {
                    window_operator(window, keys, aggregates, *input)?
                }
                PhysicalOp::Increments(spec) => OperatorExec::Increments(IncrementsExec::new(spec.clone())),
                PhysicalOp::KeyedAggregate(spec) => OperatorExec::KeyedAggregate(KeyedAggregateExec::new(spec.clone())),
                PhysicalOp::TopK(spec) => OperatorExec::TopK(TopKExec::new(spec.clone())),
                PhysicalOp::PartialTopRows(spec) => OperatorExec::PartialTopRows(PartialTopRowsExec::new(spec.clone())),
                PhysicalOp::TopRows { spec, input } => OperatorExec::TopRows(TopRowsExec::new(spec.clone(), *input)),
                PhysicalOp::WindowJoin(spec) => OperatorExec::WindowJoin(WindowJoinExec::new(spec.clone())),
            });
        }
        debug_assert!(matches!(stage.input, StageInput::Source(_) | StageInput::Shuffle { .. }));
        let bound_names = stage.ops.iter().map(state_bound_name).collect();
        Ok(StagePipeline { operators, bound_names, output: stage.output.clone(), last_batch: None })
    }

    /// Tells the stage which batch ends its job's input (`None`: it never ends).
    pub fn set_last_batch(&mut self, last_batch: Option<u64>) {
        self.last_batch = last_batch;
    }

    /// Runs batch `batch` through the stage; window state remembers which batch last changed
    /// each key, so a window's latency can be read off when that batch's output is visible.
    pub fn run(&mut self, input: &StageInputData, batch: u64) -> Result<StageRunOutput, ExecError> {
        let rows = self.decode(input)?;
        self.run_rows(rows, batch)
    }

    /// The first half of `run`: the input as rows. Raw records go through the stage's decode
    /// operator (or become one binary column when it has none), decoded rows are checked
    /// against that operator's output, blocks pass as they are. Apart so that the caller can
    /// time decoding on its own (this crate times only the combine, inside `run_rows`).
    pub fn decode(&mut self, input: &StageInputData) -> Result<StageRows, ExecError> {
        let decoder = match self.operators.first() {
            Some(OperatorExec::Decode(decoder)) => Some(decoder),
            _ => None,
        };
        Ok(match (input, decoder) {
            (StageInputData::Raw(records), Some(decoder)) => {
                let decoded = decoder.decode(records);
                StageRows {
                    batches: vec![decoded.batch],
                    records_in: records.len() as u64,
                    dead_letters: decoded.dead_letters,
                    decoded: true,
                    progress: None,
                }
            }
            (StageInputData::Raw(records), None) => StageRows {
                batches: vec![raw_as_binary_batch(records)?],
                records_in: records.len() as u64,
                dead_letters: Vec::new(),
                decoded: false,
                progress: None,
            },
            (StageInputData::Decoded(rows), Some(decoder)) => StageRows {
                batches: vec![in_schema(rows, &decoder.output_schema())?],
                records_in: rows.num_rows() as u64,
                dead_letters: Vec::new(),
                decoded: true,
                progress: None,
            },
            (StageInputData::Decoded(_), None) => {
                return Err(ExecError::DecodedInput(
                    "the stage does not start by decoding, so it cannot take decoded rows".into(),
                ))
            }
            (StageInputData::Blocks { blocks, progress }, _) => StageRows {
                batches: blocks.iter().filter(|block| block.num_rows() > 0).cloned().collect(),
                records_in: blocks.iter().map(|block| block.num_rows() as u64).sum(),
                dead_letters: Vec::new(),
                decoded: false,
                progress: progress.clone(),
            },
        })
    }

    /// The second half of `run`: the stage's operators after decoding, on `decode`'s rows.
    pub fn run_rows(&mut self, rows: StageRows, batch: u64) -> Result<StageRunOutput, ExecError> {
        let mut out = StageRunOutput {
            records_in: rows.records_in,
            dead_letters: rows.dead_letters,
            ..StageRunOutput::default()
        };
        let mut batches = rows.batches;
        // The map partitions' progress is of the stage's input: only its first operator takes it.
        let mut progress = rows.progress;
        let skipped = usize::from(rows.decoded);
        let input_ends = self.last_batch == Some(batch);
        for (operator, bound_name) in self.operators.iter_mut().zip(&self.bound_names).skip(skipped) {
            let progress = progress.take();
            let holds_final_rows = matches!(operator, OperatorExec::Window(window) if window.emits_on_close());
            if batches.is_empty() && !(input_ends && holds_final_rows) {
                // No input at all (e.g. a reduce partition no key hashed to): nothing can
                // change, but how far the partitions got still counts.
                match (operator, &progress) {
                    (OperatorExec::Window(window), Some(progress)) => window.observe_progress(progress),
                    (OperatorExec::SessionWindow(session), Some(progress)) => session.observe_progress(progress),
                    _ => {}
                }
                break;
            }
            batches = match operator {
                OperatorExec::Decode(_) => unreachable!("validated: decode only reads raw source records"),
                OperatorExec::Window(_) | OperatorExec::SessionWindow(_) => {
                    let mut output = match operator {
                        OperatorExec::Window(window) => {
                            window.process_with_progress(&batches, batch, progress.as_ref())?
                        }
                        OperatorExec::SessionWindow(session) => {
                            session.process_with_progress(&batches, batch, progress.as_ref())?
                        }
                        _ => unreachable!("matched above"),
                    };
                    if let (true, OperatorExec::Window(window)) = (input_ends, &mut *operator) {
                        window.close_all_into(&mut output)?;
                    }
                    out.late_rows_dropped += output.late_rows_dropped;
                    out.closed_windows.extend(output.closed);
                    if batches.is_empty() && output.updates.num_rows() == 0 {
                        // Input that ended with nothing left open: as if there were none.
                        Vec::new()
                    } else {
                        vec![output.updates]
                    }
                }
                OperatorExec::Increments(increments) => {
                    let output = increments.process(&batches)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.rows]
                }
                OperatorExec::KeyedAggregate(aggregate) => {
                    let output = aggregate.process(&batches)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.updates]
                }
                OperatorExec::TopK(top_k) => {
                    let output = top_k.process(&batches)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.rankings]
                }
                OperatorExec::TopRows(top_rows) => {
                    let output = top_rows.process(&batches)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.rows]
                }
                OperatorExec::PartialTopRows(partial) => {
                    let output = partial.execute(&concat(&batches)?)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.rows]
                }
                OperatorExec::WindowJoin(join) => {
                    let output = join.process(&batches)?;
                    out.add_state_counts(output.counts, bound_name);
                    vec![output.rows]
                }
                other => {
                    let batch = concat(&batches)?;
                    vec![match other {
                        OperatorExec::Filter(filter) => filter.execute(&batch)?,
                        OperatorExec::Project(project) => project.execute(&batch)?,
                        OperatorExec::Lookup(lookup) => {
                            let output = lookup.execute(&batch)?;
                            out.unmatched_lookup_rows += output.unmatched_rows;
                            output.batch
                        }
                        OperatorExec::PartialWindow(partial) => {
                            let started = std::time::Instant::now();
                            let combined = partial.execute(&batch)?;
                            out.combine_us += started.elapsed().as_micros() as u64;
                            combined
                        }
                        OperatorExec::Decode(_)
                        | OperatorExec::Window(_)
                        | OperatorExec::SessionWindow(_)
                        | OperatorExec::Increments(_)
                        | OperatorExec::KeyedAggregate(_)
                        | OperatorExec::TopK(_)
                        | OperatorExec::PartialTopRows(_)
                        | OperatorExec::TopRows(_)
                        | OperatorExec::WindowJoin(_) => unreachable!("matched above"),
                    }]
                }
            };
        }
        let size = self.state_size();
        (out.state_keys, out.state_bytes) = (size.keys, size.bytes);
        if batches.is_empty() {
            return Ok(out);
        }
        let result = concat(&batches)?;
        out.rows_out = result.num_rows() as u64;
        match &self.output {
            StageOutput::Shuffle { keys, partitions, event_time } => {
                if let Some(event_time) = event_time {
                    out.event_time_ms = max_event_time(&result, event_time)?;
                }
                out.blocks = partition_batch(&result, keys, *partitions)?;
            }
            StageOutput::Sink(_) => out.sink_rows = Some(result),
        }
        Ok(out)
    }

    /// The stage's keyed state as bytes (a checkpoint), or `None` for a stateless stage: one
    /// snapshot per stateful operator, in stage order, in a versioned envelope
    /// (`state::join_stage_snapshot`), so a stage may hold several (increments before an
    /// exchange; a keyed aggregate and a top-k after one).
    pub fn snapshot_state(&self) -> Option<Vec<u8>> {
        let parts: Vec<Vec<u8>> = self
            .operators
            .iter()
            .filter_map(|operator| match operator {
                OperatorExec::Window(window) => Some(window.snapshot()),
                OperatorExec::SessionWindow(session) => Some(session.snapshot()),
                OperatorExec::Increments(increments) => Some(increments.snapshot()),
                OperatorExec::KeyedAggregate(aggregate) => Some(aggregate.snapshot()),
                OperatorExec::TopK(top_k) => Some(top_k.snapshot()),
                OperatorExec::TopRows(top_rows) => Some(top_rows.snapshot()),
                OperatorExec::WindowJoin(join) => Some(join.snapshot()),
                OperatorExec::Decode(_)
                | OperatorExec::Filter(_)
                | OperatorExec::Project(_)
                | OperatorExec::Lookup(_)
                | OperatorExec::PartialWindow(_)
                | OperatorExec::PartialTopRows(_) => None,
            })
            .collect();
        (!parts.is_empty()).then(|| join_stage_snapshot(&parts))
    }

    /// Replaces the stage's keyed state with a snapshot `snapshot_state` made (or, for a stage
    /// whose one stateful operator is a window aggregate, one made before the envelope).
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        let stateful = self.operators.iter().filter(|operator| operator.is_stateful()).count();
        if stateful == 0 {
            return Err(ExecError::CorruptSnapshot("a snapshot was given to a stage that keeps no state".into()));
        }
        let parts = split_stage_snapshot(bytes, stateful)?;
        for (operator, part) in self.operators.iter_mut().filter(|operator| operator.is_stateful()).zip(parts) {
            match operator {
                OperatorExec::Window(window) => window.restore(part)?,
                OperatorExec::SessionWindow(session) => session.restore(part)?,
                OperatorExec::Increments(increments) => increments.restore(part)?,
                OperatorExec::KeyedAggregate(aggregate) => aggregate.restore(part)?,
                OperatorExec::TopK(top_k) => top_k.restore(part)?,
                OperatorExec::TopRows(top_rows) => top_rows.restore(part)?,
                OperatorExec::WindowJoin(join) => join.restore(part)?,
                _ => unreachable!("filtered to stateful operators"),
            }
        }
        Ok(())
    }

    /// The size of the stage's state, summed over its operators.
    pub fn state_size(&self) -> StateSize {
        let mut total = StateSize::default();
        for operator in &self.operators {
            let size = match operator {
                OperatorExec::Window(window) => window.size(),
                OperatorExec::SessionWindow(session) => session.size(),
                OperatorExec::Increments(increments) => increments.size(),
                OperatorExec::KeyedAggregate(aggregate) => aggregate.size(),
                OperatorExec::TopK(top_k) => top_k.size(),
                OperatorExec::TopRows(top_rows) => top_rows.size(),
                OperatorExec::WindowJoin(join) => join.size(),
                _ => continue,
            };
            total.keys += size.keys;
            total.bytes += size.bytes;
        }
        total
    }
}

impl OperatorExec {
    fn is_stateful(&self) -> bool {
        matches!(
            self,
            OperatorExec::Window(_)
                | OperatorExec::SessionWindow(_)
                | OperatorExec::Increments(_)
                | OperatorExec::KeyedAggregate(_)
                | OperatorExec::TopK(_)
                | OperatorExec::TopRows(_)
                | OperatorExec::WindowJoin(_)
        )
    }
}

fn is_session(window: &WindowSpec) -> bool {
    matches!(window.kind(), WindowKind::Session { .. })
}

/// The keyed state of a window aggregate: one operator for tumbling and hopping windows,
/// another for sessions, which never take partials.
fn window_operator(
    window: &WindowSpec,
    keys: &[String],
    aggregates: &[Aggregate],
    input: AggregateInput,
) -> Result<OperatorExec, ExecError> {
    let (window, keys, aggregates) = (window.clone(), keys.to_vec(), aggregates.to_vec());
    if !is_session(&window) {
        return Ok(OperatorExec::Window(WindowAggregateExec::new(window, keys, aggregates, input)));
    }
    if input != AggregateInput::Rows {
        return Err(ExecError::StagePlan("a session window aggregates rows, not partials".into()));
    }
    Ok(OperatorExec::SessionWindow(SessionWindowAggregateExec::new(window, keys, aggregates)))
}

/// How the user's plan names a keyed operator under a bound on its keys: its kind, its key
/// columns and the bound, e.g. `increments by gateway_id (max_keys 10000)`.
fn state_bound_name(op: &PhysicalOp) -> Option<String> {
    let (kind, keys, bound, limit) = match op {
        PhysicalOp::Increments(spec) => ("increments", spec.keys.join(", "), "max_keys", spec.max_keys),
        PhysicalOp::KeyedAggregate(spec) => ("keyed_aggregate", spec.keys.join(", "), "max_keys", spec.max_keys),
        PhysicalOp::TopK(spec) => (
            "top_k",
            spec.group.iter().chain(&spec.keys).cloned().collect::<Vec<_>>().join(", "),
            "max_keys",
            spec.max_keys,
        ),
        PhysicalOp::TopRows { spec, .. } => ("top_rows", spec.group.join(", "), "max_groups", spec.max_groups),
        PhysicalOp::WindowJoin(spec) => ("window_join", spec.key_column.clone(), "max_rows", spec.max_rows),
        _ => return None,
    };
    Some(format!("{kind} by {keys} ({bound} {limit})"))
}

impl StageRunOutput {
    fn add_state_counts(&mut self, counts: StateCounts, bound_name: &Option<String>) {
        if counts.refused_rows > 0 && self.state_full.is_none() {
            self.state_full.clone_from(bound_name);
        }
        self.late_rows_dropped += counts.late_rows_dropped;
        self.late_rows_folded += counts.late_rows_folded;
        self.duplicate_rows_dropped += counts.duplicate_rows_dropped;
        self.invalid_rows_dropped += counts.invalid_rows_dropped;
        self.refused_rows += counts.refused_rows;
        self.expired_keys += counts.expired_keys;
    }
}

/// The column a stage's decoder fills from the source's record timestamps, if its source
/// hands them over for that.
fn record_timestamp_column(input: &StageInput) -> Option<&str> {
    match input {
        StageInput::Source(SourceSpec::Kafka(kafka)) => match &kafka.event_time {
            EventTimeSource::RecordTimestamp(column) => Some(column),
            EventTimeSource::Field => None,
        },
        _ => None,
    }
}

/// The largest value of the event-time column `name` (nulls aside), or none for no rows.
fn max_event_time(rows: &RecordBatch, name: &str) -> Result<Option<i64>, ExecError> {
    Ok(arrow_arith::aggregate::max(&crate::cell::event_times(rows, name)?))
}

fn concat(batches: &[RecordBatch]) -> Result<RecordBatch, ExecError> {
    if batches.len() == 1 {
        return Ok(batches[0].clone());
    }
    arrow_select::concat::concat_batches(&batches[0].schema(), batches)
        .map_err(ExecError::arrow("concatenating blocks"))
}

/// `rows`' columns named in `schema`, as a batch of `schema`: what the decoder would have
/// produced from the same records. A column missing, or of another type, is the source's
/// bug and an error naming it.
fn in_schema(rows: &RecordBatch, schema: &arrow_schema::SchemaRef) -> Result<RecordBatch, ExecError> {
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            rows.column_by_name(field.name())
                .cloned()
                .ok_or_else(|| ExecError::DecodedInput(format!("no column `{}` in the decoded rows", field.name())))
        })
        .collect::<Result<Vec<ArrayRef>, ExecError>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
        .map_err(|error| ExecError::DecodedInput(format!("the rows do not fit the decoder's schema: {error}")))
}

fn raw_as_binary_batch(records: &RawRecords) -> Result<RecordBatch, ExecError> {
    let values: BinaryArray = records.iter().map(Some).collect();
    let schema = Arc::new(ArrowSchema::new(vec![ArrowField::new("value", ArrowType::Binary, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(values) as ArrayRef]).map_err(ExecError::arrow("raw records"))
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use sleet_plan::{DataType, Field, KafkaSourceSpec, KafkaStart, Schema, SinkSpec, StageId};

    use super::*;

    /// A stage reading a Kafka source whose event time is `event_time`, decoding `name` and `ts`.
    fn kafka_stage(event_time: EventTimeSource) -> StagePlan {
        let kafka = KafkaSourceSpec {
            brokers: "127.0.0.1:1".into(),
            topic: "t".into(),
            start: KafkaStart::Earliest,
            max_records_per_partition_per_batch: 10,
            event_time,
            read_committed: true,
            partitions: 1,
            replay: Vec::new(),
        };
        let schema =
            Schema::new(vec![Field::new("name", DataType::Utf8), Field::new("ts", DataType::Int64).nullable()]);
        StagePlan {
            id: StageId(0),
            partitions: 1,
            input: StageInput::Source(SourceSpec::Kafka(kafka)),
            ops: vec![PhysicalOp::DecodeJson {
                schema,
                projection: vec!["name".into(), "ts".into()],
                max_record_bytes: 1_000,
            }],
            output: StageOutput::Sink(SinkSpec::Discard),
        }
    }

    fn decoded_times(event_time: EventTimeSource) -> Vec<Option<i64>> {
        let mut records = RawRecords::new();
        for (record, timestamp) in [(r#"{"name": "a"}"#, 5), ("{", 6), (r#"{"name": "c"}"#, 7)] {
            records.push(record.as_bytes());
            records.timestamps.push(timestamp);
        }
        let mut pipeline = StagePipeline::new(&kafka_stage(event_time), &|_| unreachable!("no lookup")).expect("stage");
        let rows = pipeline.decode(&StageInputData::Raw(records)).expect("decoded");
        assert_eq!(rows.dead_letters.iter().map(|letter| letter.record_index).collect::<Vec<_>>(), vec![1]);
        rows.batches[0].column(1).as_primitive::<Int64Type>().iter().collect()
    }

    #[test]
    fn a_kafka_source_with_record_timestamps_has_its_decoder_fill_that_column() {
        assert_eq!(decoded_times(EventTimeSource::RecordTimestamp("ts".into())), vec![Some(5), Some(7)]);
        assert_eq!(decoded_times(EventTimeSource::Field), vec![None, None]);
    }
}
