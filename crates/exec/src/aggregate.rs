//! What the window aggregates of every kind share: how an aggregate folds a value (`fold`),
//! how a row's aggregate inputs are found and its accumulators start (`Layout`), the output
//! schema, and building output rows (`emit`).
//!
//! ```text
//! output = window_start [window_end] key{keys} aggregate{aggregates} [__max_event_time]
//! ```
//!
//! `window_end` is there for hopping and session windows (`WindowSpec::has_end_column`);
//! `__max_event_time` only in a map-side partial's output.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use sleet_plan::physical::{AggregateInput, PARTIAL_MAX_EVENT_TIME_COLUMN};
use sleet_plan::validate::{WINDOW_END_COLUMN, WINDOW_START_COLUMN};
use sleet_plan::{AggFunc, Aggregate, WindowSpec};

use crate::cell::{column, decode_key, Cell, ColumnBuilder};
use crate::error::ExecError;

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

/// The fold of each aggregate for rows of `input`: a partial's count is summed, not counted.
pub(crate) fn folds_for(aggregates: &[Aggregate], input: AggregateInput) -> Vec<Fold> {
    aggregates
        .iter()
        .map(|aggregate| match (aggregate.func, input) {
            (AggFunc::Count, AggregateInput::Rows) => Fold::CountRows,
            (AggFunc::Count, AggregateInput::Partials) | (AggFunc::Sum, _) => Fold::Sum,
            (AggFunc::Min, _) => Fold::Min,
            (AggFunc::Max, _) => Fold::Max,
        })
        .collect()
}

/// Merges the accumulators `from` into `into`, as a reduce side merges partials: how two
/// session windows of one key become one.
pub(crate) fn merge_accumulators(into: &mut [Cell], from: Vec<Cell>, merge_folds: &[Fold]) {
    debug_assert_eq!(into.len(), from.len());
    for ((accumulator, how), value) in into.iter_mut().zip(merge_folds).zip(from) {
        fold(accumulator, *how, value);
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

    /// The column each aggregate reads: the raw column, or the partial result named after it.
    pub(crate) fn aggregate_inputs(&self, batch: &RecordBatch) -> Result<Vec<Option<ArrayRef>>, ExecError> {
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
        }
        if partial {
            fields.push(Field::new(PARTIAL_MAX_EVENT_TIME_COLUMN, DataType::Int64, false));
        }
        Arc::new(Schema::new(fields))
    }

    fn with_end(&self, partial: bool) -> bool {
        !partial && self.window.has_end_column()
    }

    pub(crate) fn initial(&self, folds: &[Fold]) -> Vec<Cell> {
        folds
            .iter()
            .zip(&self.aggregates)
            .map(|(how, aggregate)| match (how, aggregate.func) {
                (Fold::CountRows, _) | (Fold::Sum, AggFunc::Count) => Cell::Int64(0),
                _ => Cell::Null,
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
            for (index, cell) in row.accumulators.iter().enumerate() {
                columns[first_key + key_count + index].append(cell);
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
    pub(crate) accumulators: &'a [Cell],
    /// Written only by a map-side partial.
    pub(crate) max_event_time: i64,
}
