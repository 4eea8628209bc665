//! One stage of a physical plan as a chain of operators: the unit a task's compute monotask runs.
//!
//! A `StagePipeline` lives as long as its `(job, stage, partition)` on a worker, so stateful
//! operators (the window aggregate) keep their state between the batches of that partition.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use sleet_plan::{PhysicalOp, StageInput, StageOutput, StagePlan, TableSpec};

use crate::error::ExecError;
use crate::json::{DeadLetter, JsonDecoder};
use crate::ops::{FilterExec, LookupExec, ProjectExec};
use crate::partition::partition_batch;
use crate::records::RawRecords;
use crate::window::{ClosedWindow, PartialWindowAggregateExec, WindowAggregateExec};

/// What a task feeds its stage: raw source records, or the shuffle blocks it pulled.
pub enum StageInputData {
    Raw(RawRecords),
    Blocks(Vec<RecordBatch>),
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
    pub closed_windows: Vec<ClosedWindow>,
}

enum OperatorExec {
    Decode(JsonDecoder),
    Filter(FilterExec),
    Project(ProjectExec),
    Lookup(LookupExec),
    PartialWindow(PartialWindowAggregateExec),
    Window(WindowAggregateExec),
}

pub struct StagePipeline {
    operators: Vec<OperatorExec>,
    output: StageOutput,
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
                PhysicalOp::DecodeJson { schema, projection, max_record_bytes } => {
                    OperatorExec::Decode(JsonDecoder::new(schema, projection, *max_record_bytes)?)
                }
                PhysicalOp::Filter { predicate } => OperatorExec::Filter(FilterExec::new(predicate.clone())),
                PhysicalOp::Project { columns } => OperatorExec::Project(ProjectExec::new(columns.clone())),
                PhysicalOp::Lookup { key, table, table_key, columns } => OperatorExec::Lookup(LookupExec::new(
                    key.clone(),
                    load_table(table).map_err(ExecError::Table)?,
                    table_key.clone(),
                    columns.clone(),
                )?),
                PhysicalOp::PartialWindowAggregate { window, keys, aggregates } => OperatorExec::PartialWindow(
                    PartialWindowAggregateExec::new(window.clone(), keys.clone(), aggregates.clone()),
                ),
                PhysicalOp::WindowAggregate { window, keys, aggregates, input } => OperatorExec::Window(
                    WindowAggregateExec::new(window.clone(), keys.clone(), aggregates.clone(), *input),
                ),
            });
        }
        debug_assert!(matches!(stage.input, StageInput::Source(_) | StageInput::Shuffle { .. }));
        Ok(StagePipeline { operators, output: stage.output.clone() })
    }

    /// Runs batch `batch` through the stage; window state remembers which batch last changed
    /// each key, so a window's latency can be read off when that batch's output is visible.
    pub fn run(&mut self, input: &StageInputData, batch: u64) -> Result<StageRunOutput, ExecError> {
        let mut out = StageRunOutput::default();
        let mut operators = self.operators.iter_mut().peekable();
        let mut batches: Vec<RecordBatch> = match input {
            StageInputData::Raw(records) => {
                out.records_in = records.len() as u64;
                match operators.peek() {
                    Some(OperatorExec::Decode(_)) => {
                        let Some(OperatorExec::Decode(decoder)) = operators.next() else { unreachable!() };
                        let decoded = decoder.decode(records);
                        out.dead_letters = decoded.dead_letters;
                        vec![decoded.batch]
                    }
                    _ => vec![raw_as_binary_batch(records)?],
                }
            }
            StageInputData::Blocks(blocks) => {
                out.records_in = blocks.iter().map(|block| block.num_rows() as u64).sum();
                blocks.iter().filter(|block| block.num_rows() > 0).cloned().collect()
            }
        };
        for operator in operators {
            if batches.is_empty() {
                // No input at all (e.g. a reduce partition no key hashed to): nothing can change.
                break;
            }
            batches = match operator {
                OperatorExec::Decode(_) => unreachable!("validated: decode only reads raw source records"),
                OperatorExec::Window(window) => {
                    let output = window.process(&batches, batch)?;
                    out.late_rows_dropped += output.late_rows_dropped;
                    out.closed_windows.extend(output.closed);
                    vec![output.updates]
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
                        OperatorExec::PartialWindow(partial) => partial.execute(&batch)?,
                        OperatorExec::Decode(_) | OperatorExec::Window(_) => unreachable!("matched above"),
                    }]
                }
            };
        }
        if batches.is_empty() {
            return Ok(out);
        }
        let result = concat(&batches)?;
        out.rows_out = result.num_rows() as u64;
        match &self.output {
            StageOutput::Shuffle { keys, partitions } => {
                out.blocks = partition_batch(&result, keys, *partitions)?;
            }
            StageOutput::Sink(_) => out.sink_rows = Some(result),
        }
        Ok(out)
    }

    /// The stage's keyed state as bytes (a checkpoint), or `None` for a stateless stage. A
    /// stage holds at most one stateful operator, so its state is that operator's.
    pub fn snapshot_state(&self) -> Option<Vec<u8>> {
        self.operators.iter().find_map(|operator| match operator {
            OperatorExec::Window(window) => Some(window.snapshot()),
            _ => None,
        })
    }

    /// Replaces the stage's keyed state with a snapshot `snapshot_state` made.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        for operator in &mut self.operators {
            if let OperatorExec::Window(window) = operator {
                return window.restore(bytes);
            }
        }
        Err(ExecError::CorruptSnapshot("a snapshot was given to a stage that keeps no state".into()))
    }
}

fn concat(batches: &[RecordBatch]) -> Result<RecordBatch, ExecError> {
    if batches.len() == 1 {
        return Ok(batches[0].clone());
    }
    arrow_select::concat::concat_batches(&batches[0].schema(), batches)
        .map_err(ExecError::arrow("concatenating blocks"))
}

fn raw_as_binary_batch(records: &RawRecords) -> Result<RecordBatch, ExecError> {
    let values: BinaryArray = records.iter().map(Some).collect();
    let schema = Arc::new(ArrowSchema::new(vec![ArrowField::new("value", ArrowType::Binary, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(values) as ArrayRef]).map_err(ExecError::arrow("raw records"))
}
