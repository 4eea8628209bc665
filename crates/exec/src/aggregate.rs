//! What the window aggregates of every kind share: how an aggregate folds a value (`fold`,
//! `Accumulator`), how a row's aggregate inputs are found and its accumulators start
//! (`Layout`), the output schema, building output rows (`emit`), and accumulators' snapshots.
//!
//! ```text
//! output      = window_start [window_end] key{keys} aggregate{aggregates} [__max_event_time]
//! aggregate   = value | avg partial: sum:float64 __<name>_count:int64
//! accumulator = cell | avg: sum:cell count:cell | count_distinct: n:u32 (len:u32 value){n}
//! ```
//!
//! `window_end` is there for hopping and session windows (`WindowSpec::has_end_column`);
//! `__max_event_time` and the partial form of an average only in a map-side partial's output.
//! An accumulator of `count`, `sum`, `min` or `max` is written as the one cell it is, so the
//! tumbling window's snapshots read as they did before averages and distinct counts existed.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use sleet_plan::physical::{partial_count_column, AggregateInput, PARTIAL_MAX_EVENT_TIME_COLUMN};
use sleet_plan::validate::{WINDOW_END_COLUMN, WINDOW_START_COLUMN};
use sleet_plan::{AggFunc, Aggregate, WindowSpec};

use crate::cell::{column, decode_key, read_cell, write_cell, write_key, Cell, ColumnBuilder, Reader};
use crate::error::ExecError;

/// How an aggregate folds one input value: over raw rows, or merging partial results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fold {
    CountRows,
    Sum,
    Min,
    Max,
    /// A value into an average's sum and count.
    Average,
    /// A partial average's sum and count into an average's.
    MergeAverage,
    /// A value into a distinct count's set.
    Distinct,
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
        Fold::Average | Fold::MergeAverage | Fold::Distinct => {
            unreachable!("an average or distinct count folds into its own accumulator")
        }
    }
}

/// An aggregate's running state in a window aggregate: one value, or what an average or a
/// distinct count keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Accumulator {
    Value(Cell),
    /// The sum and count of the non-null values folded.
    Average {
        sum: f64,
        count: i64,
    },
    /// The distinct non-null values folded, each as `write_cell` writes it. Unbounded but for
    /// the window's life: a distinct count holds every value of its window and key.
    Distinct(BTreeSet<Box<[u8]>>),
}

impl Accumulator {
    /// What the output shows: the value, the mean (null over no values), the distinct count.
    fn output(&self) -> Cell {
        match self {
            Accumulator::Value(cell) => cell.clone(),
            Accumulator::Average { count: 0, .. } => Cell::Null,
            Accumulator::Average { sum, count } => Cell::Float64(sum / *count as f64),
            Accumulator::Distinct(values) => Cell::Int64(values.len() as i64),
        }
    }

    /// Folds in another accumulator of the same aggregate, leaving it as it was: as when two
    /// sessions merge, or a hopping window emitted on close is made of its panes, which later
    /// windows still read.
    fn merge(&mut self, other: &Accumulator, how: Fold) {
        match (self, other) {
            (Accumulator::Value(cell), Accumulator::Value(other)) => fold(cell, how, other.clone()),
            (Accumulator::Average { sum, count }, Accumulator::Average { sum: other_sum, count: other_count }) => {
                *sum += other_sum;
                *count += other_count;
            }
            (Accumulator::Distinct(values), Accumulator::Distinct(other)) => values.extend(other.iter().cloned()),
            _ => unreachable!("accumulators of one aggregate have one kind"),
        }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match self {
            Accumulator::Value(cell) => write_cell(cell, out),
            Accumulator::Average { sum, count } => {
                write_cell(&Cell::Float64(*sum), out);
                write_cell(&Cell::Int64(*count), out);
            }
            Accumulator::Distinct(values) => {
                out.extend_from_slice(&(values.len() as u32).to_le_bytes());
                for value in values {
                    write_key(value, out);
                }
            }
        }
    }

    /// Reads what `write` wrote for an aggregate folded by `how`.
    pub(crate) fn read(reader: &mut Reader<'_>, how: Fold) -> Result<Accumulator, ExecError> {
        Ok(match how {
            Fold::Average | Fold::MergeAverage => match (reader.cell()?, reader.cell()?) {
                (Cell::Float64(sum), Cell::Int64(count)) if count >= 0 => Accumulator::Average { sum, count },
                other => return Err(ExecError::CorruptSnapshot(format!("an average of {other:?}"))),
            },
            Fold::Distinct => {
                let count = reader.u32()?;
                let values = (0..count).map(|_| reader.key(1)).collect::<Result<BTreeSet<_>, _>>()?;
                Accumulator::Distinct(values)
            }
            Fold::CountRows | Fold::Sum | Fold::Min | Fold::Max => Accumulator::Value(reader.cell()?),
        })
    }
}

pub(crate) fn write_accumulators(accumulators: &[Accumulator], out: &mut Vec<u8>) {
    for accumulator in accumulators {
        accumulator.write(out);
    }
}

pub(crate) fn read_accumulators(reader: &mut Reader<'_>, folds: &[Fold]) -> Result<Vec<Accumulator>, ExecError> {
    folds.iter().map(|how| Accumulator::read(reader, *how)).collect()
}

/// The columns one aggregate reads from a batch: the value (none for a row count), and for a
/// partial average its count.
pub(crate) struct AggregateColumns {
    value: Option<ArrayRef>,
    count: Option<ArrayRef>,
}

/// Folds row `row` of `columns` into `accumulators`, one per aggregate. `scratch` holds a
/// distinct value's bytes, so a value seen before costs no allocation.
pub(crate) fn fold_row(
    accumulators: &mut [Accumulator],
    folds: &[Fold],
    columns: &[AggregateColumns],
    row: usize,
    scratch: &mut Vec<u8>,
) {
    for ((accumulator, how), columns) in accumulators.iter_mut().zip(folds).zip(columns) {
        let value = columns.value.as_ref().map_or(Cell::Null, |column| read_cell(column.as_ref(), row));
        match (accumulator, *how) {
            (Accumulator::Value(cell), how) => fold(cell, how, value),
            (Accumulator::Average { sum, count }, how) => {
                let added = match how {
                    Fold::MergeAverage => columns
                        .count
                        .as_ref()
                        .filter(|counts| counts.is_valid(row))
                        .map_or(0, |counts| counts.as_primitive::<Int64Type>().value(row)),
                    _ => i64::from(!matches!(value, Cell::Null)),
                };
                match value {
                    Cell::Int64(value) => *sum += value as f64,
                    Cell::Float64(value) => *sum += value,
                    _ => {}
                }
                *count += added;
            }
            (Accumulator::Distinct(values), _) => {
                if matches!(value, Cell::Null) {
                    continue;
                }
                scratch.clear();
                write_cell(&value, scratch);
                if !values.contains(scratch.as_slice()) {
                    values.insert(scratch.as_slice().into());
                }
            }
        }
    }
}

/// The fold of each aggregate for rows of `input`: a partial's count is summed, not counted.
pub(crate) fn folds_for(aggregates: &[Aggregate], input: AggregateInput) -> Vec<Fold> {
    aggregates
        .iter()
        .map(|aggregate| match (aggregate.func, input) {
            (AggFunc::Count, AggregateInput::Rows) => Fold::CountRows,
            (AggFunc::Count, AggregateInput::Partials) | (AggFunc::Sum, _) => Fold::Sum,
            (AggFunc::Min, _) => Fold::Min,
            (AggFunc::Max, _) => Fold::Max,
            (AggFunc::Avg, AggregateInput::Rows) => Fold::Average,
            (AggFunc::Avg, AggregateInput::Partials) => Fold::MergeAverage,
            (AggFunc::CountDistinct, _) => Fold::Distinct,
        })
        .collect()
}

/// Merges the accumulators `from` into `into`, as a reduce side merges partials: how two
/// session windows of one key become one, and a hopping window emitted on close is made of
/// the panes it spans.
pub(crate) fn merge_accumulators(into: &mut [Accumulator], from: &[Accumulator], merge_folds: &[Fold]) {
    debug_assert_eq!(into.len(), from.len());
    for ((accumulator, how), other) in into.iter_mut().zip(merge_folds).zip(from) {
        accumulator.merge(other, *how);
    }
}

/// The shape every window aggregate shares: how to read each input row.
pub(crate) struct Layout {
    pub(crate) window: WindowSpec,
    pub(crate) keys: Vec<String>,
    pub(crate) aggregates: Vec<Aggregate>,
    pub(crate) input: AggregateInput,
}

impl Layout {
    pub(crate) fn folds(&self) -> Vec<Fold> {
        folds_for(&self.aggregates, self.input)
    }

    /// The columns each aggregate reads: the raw column, or the partial result named after it
    /// (and a partial average's count).
    pub(crate) fn aggregate_inputs(&self, batch: &RecordBatch) -> Result<Vec<AggregateColumns>, ExecError> {
        self.aggregates
            .iter()
            .map(|aggregate| {
                let name = match (self.input, aggregate.func, &aggregate.column) {
                    (AggregateInput::Partials, _, _) => Some(&aggregate.name),
                    (AggregateInput::Rows, AggFunc::Count, _) => None,
                    (AggregateInput::Rows, _, column) => column.as_ref(),
                };
                let value = name.map(|name| column(batch, name)).transpose()?;
                let count = match (self.input, aggregate.func) {
                    (AggregateInput::Partials, AggFunc::Avg) => {
                        Some(column(batch, &partial_count_column(&aggregate.name))?)
                    }
                    _ => None,
                };
                Ok(AggregateColumns { value, count })
            })
            .collect()
    }

    fn output_type(&self, aggregate: &Aggregate, input_schema: &Schema) -> DataType {
        let source = match self.input {
            AggregateInput::Rows => aggregate.column.as_deref(),
            AggregateInput::Partials => Some(aggregate.name.as_str()),
        };
        match aggregate.func {
            AggFunc::Count | AggFunc::CountDistinct => DataType::Int64,
            AggFunc::Avg => DataType::Float64,
            AggFunc::Sum | AggFunc::Min | AggFunc::Max => source
                .and_then(|name| input_schema.field_with_name(name).ok())
                .map_or(DataType::Int64, |field| field.data_type().clone()),
        }
    }

    /// The output schema; `partial` for a map-side partial's, which has the largest event time
    /// folded and never a window end (its rows are panes, which the reduce side places).
    pub(crate) fn output_schema(&self, input_schema: &Schema, partial: bool) -> SchemaRef {
        let mut fields = vec![Field::new(WINDOW_START_COLUMN, DataType::Int64, false)];
        if self.with_end(partial) {
            fields.push(Field::new(WINDOW_END_COLUMN, DataType::Int64, false));
        }
        for key in &self.keys {
            let (data_type, nullable) = input_schema
                .field_with_name(key)
                .map_or((DataType::Utf8, true), |field| (field.data_type().clone(), field.is_nullable()));
            fields.push(Field::new(key, data_type, nullable));
        }
        for aggregate in &self.aggregates {
            fields.push(Field::new(&aggregate.name, self.output_type(aggregate, input_schema), true));
            if partial && aggregate.func == AggFunc::Avg {
                fields.push(Field::new(partial_count_column(&aggregate.name), DataType::Int64, false));
            }
        }
        if partial {
            fields.push(Field::new(PARTIAL_MAX_EVENT_TIME_COLUMN, DataType::Int64, false));
        }
        Arc::new(Schema::new(fields))
    }

    fn with_end(&self, partial: bool) -> bool {
        !partial && self.window.has_end_column()
    }

    pub(crate) fn initial(&self, folds: &[Fold]) -> Vec<Accumulator> {
        folds
            .iter()
            .zip(&self.aggregates)
            .map(|(how, aggregate)| match (how, aggregate.func) {
                (Fold::CountRows, _) | (Fold::Sum, AggFunc::Count) => Accumulator::Value(Cell::Int64(0)),
                (Fold::Average | Fold::MergeAverage, _) => Accumulator::Average { sum: 0.0, count: 0 },
                (Fold::Distinct, _) => Accumulator::Distinct(BTreeSet::new()),
                _ => Accumulator::Value(Cell::Null),
            })
            .collect()
    }

    /// Builds output rows, in the given order, under `schema` (from `output_schema` with the
    /// same `partial`).
    pub(crate) fn emit(
        &self,
        schema: &SchemaRef,
        rows: &[WindowRow<'_>],
        partial: bool,
    ) -> Result<RecordBatch, ExecError> {
        let key_count = self.keys.len();
        let with_end = self.with_end(partial);
        let mut columns: Vec<ColumnBuilder> =
            schema.fields().iter().map(|field| ColumnBuilder::new(field.data_type(), rows.len())).collect();
        let first_key = 1 + usize::from(with_end);
        for row in rows {
            columns[0].append(&Cell::Int64(row.start));
            if with_end {
                columns[1].append(&Cell::Int64(row.end));
            }
            for (index, cell) in decode_key(row.key, key_count)?.iter().enumerate() {
                columns[first_key + index].append(cell);
            }
            let mut index = first_key + key_count;
            for accumulator in row.accumulators {
                match accumulator {
                    Accumulator::Average { sum, count } if partial => {
                        columns[index].append(&Cell::Float64(*sum));
                        columns[index + 1].append(&Cell::Int64(*count));
                        index += 2;
                    }
                    _ => {
                        columns[index].append(&accumulator.output());
                        index += 1;
                    }
                }
            }
            if partial {
                let last = columns.len() - 1;
                columns[last].append(&Cell::Int64(row.max_event_time));
            }
        }
        let arrays: Vec<ArrayRef> = columns.into_iter().map(ColumnBuilder::finish).collect();
        RecordBatch::try_new(Arc::clone(schema), arrays).map_err(ExecError::arrow("building window output"))
    }
}

/// One output row of a window aggregate: a window of one key and its aggregates.
pub(crate) struct WindowRow<'a> {
    pub(crate) start: i64,
    /// Exclusive; written only where the output has a `window_end`.
    pub(crate) end: i64,
    pub(crate) key: &'a [u8],
    pub(crate) accumulators: &'a [Accumulator],
    /// Written only by a map-side partial.
    pub(crate) max_event_time: i64,
}
