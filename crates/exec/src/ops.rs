//! Row-wise operators: filter, project, and the stream–static lookup join.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use rustc_hash::FxHashMap;
use sleet_plan::Expr;

use crate::error::ExecError;
use crate::expr_eval::evaluate;

pub struct FilterExec {
    predicate: Expr,
}

impl FilterExec {
    pub fn new(predicate: Expr) -> Self {
        FilterExec { predicate }
    }

    /// Keeps the rows where the predicate is true; null counts as false.
    pub fn execute(&self, batch: &RecordBatch) -> Result<RecordBatch, ExecError> {
        let mask = evaluate(&self.predicate, batch)?;
        let mask = mask.as_boolean_opt().ok_or_else(|| ExecError::Eval {
            expr: self.predicate.to_string(),
            reason: format!("a filter needs a boolean, got {}", mask.data_type()),
        })?;
        arrow_select::filter::filter_record_batch(batch, mask).map_err(ExecError::arrow("filtering"))
    }
}

pub struct ProjectExec {
    columns: Vec<(Expr, String)>,
}

impl ProjectExec {
    pub fn new(columns: Vec<(Expr, String)>) -> Self {
        ProjectExec { columns }
    }

    pub fn execute(&self, batch: &RecordBatch) -> Result<RecordBatch, ExecError> {
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (expr, name) in &self.columns {
            let array = evaluate(expr, batch)?;
            // A bare column keeps its field (and nullability); computed ones may be null.
            let nullable = match expr {
                Expr::Column(source) => batch.schema().field_with_name(source).map(|f| f.is_nullable()).unwrap_or(true),
                _ => true,
            };
            fields.push(Field::new(name, array.data_type().clone(), nullable));
            arrays.push(array);
        }
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(ExecError::arrow("projecting"))
    }
}

/// Table keys hashed once at construction; a row finds its table row in one probe.
enum KeyIndex {
    Utf8(FxHashMap<String, u32>),
    Int64(FxHashMap<i64, u32>),
}

pub struct LookupExec {
    key: String,
    index: KeyIndex,
    /// The table's appended columns, in output order.
    columns: Vec<(Field, ArrayRef)>,
}

pub struct LookupOutput {
    pub batch: RecordBatch,
    pub unmatched_rows: u64,
}

impl LookupExec {
    /// When the table has a key twice, the first row wins: a lookup yields at most one match.
    pub fn new(key: String, table: RecordBatch, table_key: String, columns: Vec<String>) -> Result<Self, ExecError> {
        let keys = table.column_by_name(&table_key).ok_or_else(|| ExecError::MissingColumn(table_key.clone()))?;
        let index = match keys.data_type() {
            DataType::Utf8 => {
                let mut map = FxHashMap::default();
                for (row, value) in keys.as_string::<i32>().iter().enumerate() {
                    if let Some(value) = value {
                        map.entry(value.to_string()).or_insert(row as u32);
                    }
                }
                KeyIndex::Utf8(map)
            }
            DataType::Int64 => {
                let mut map = FxHashMap::default();
                for (row, value) in keys.as_primitive::<Int64Type>().iter().enumerate() {
                    if let Some(value) = value {
                        map.entry(value).or_insert(row as u32);
                    }
                }
                KeyIndex::Int64(map)
            }
            other => {
                return Err(ExecError::Eval {
                    expr: format!("lookup on `{table_key}`"),
                    reason: format!("lookup keys must be utf8 or int64, got {other}"),
                })
            }
        };
        let schema = table.schema();
        let columns = columns
            .iter()
            .map(|name| {
                let field = schema.field_with_name(name).map_err(|_| ExecError::MissingColumn(name.clone()))?;
                let array = table.column_by_name(name).expect("field exists").clone();
                Ok((field.clone(), array))
            })
            .collect::<Result<_, ExecError>>()?;
        Ok(LookupExec { key, index, columns })
    }

    pub fn execute(&self, batch: &RecordBatch) -> Result<LookupOutput, ExecError> {
        let probe = batch.column_by_name(&self.key).ok_or_else(|| ExecError::MissingColumn(self.key.clone()))?;
        let mut matched_rows: Vec<u32> = Vec::with_capacity(batch.num_rows());
        let mut table_rows: Vec<u32> = Vec::with_capacity(batch.num_rows());
        let mut push = |row: usize, hit: Option<&u32>| {
            if let Some(table_row) = hit {
                matched_rows.push(row as u32);
                table_rows.push(*table_row);
            }
        };
        match (&self.index, probe.data_type()) {
            (KeyIndex::Utf8(map), DataType::Utf8) => {
                for (row, value) in probe.as_string::<i32>().iter().enumerate() {
                    push(row, value.and_then(|value| map.get(value)));
                }
            }
            (KeyIndex::Int64(map), DataType::Int64) => {
                for (row, value) in probe.as_primitive::<Int64Type>().iter().enumerate() {
                    push(row, value.and_then(|value| map.get(&value)));
                }
            }
            (_, other) => {
                return Err(ExecError::Eval {
                    expr: format!("lookup on `{}`", self.key),
                    reason: format!("key type {other} does not match the table's key type"),
                })
            }
        }
        let unmatched_rows = (batch.num_rows() - matched_rows.len()) as u64;
        let left = if unmatched_rows == 0 {
            batch.clone()
        } else {
            arrow_select::take::take_record_batch(batch, &UInt32Array::from(matched_rows))
                .map_err(ExecError::arrow("dropping unmatched rows"))?
        };
        let table_rows = UInt32Array::from(table_rows);
        let mut fields: Vec<Field> = left.schema().fields().iter().map(|field| field.as_ref().clone()).collect();
        let mut arrays: Vec<ArrayRef> = left.columns().to_vec();
        for (field, column) in &self.columns {
            fields.push(field.clone());
            arrays.push(
                arrow_select::take::take(column.as_ref(), &table_rows, None)
                    .map_err(ExecError::arrow("taking table columns"))?,
            );
        }
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(left.num_rows()));
        let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(ExecError::arrow("joining"))?;
        Ok(LookupOutput { batch, unmatched_rows })
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, StringArray};
    use proptest::prelude::*;
    use sleet_plan::{col, lit};

    use super::*;

    fn rows(keys: &[Option<&str>], values: &[i64]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("key", Arc::new(StringArray::from(keys.to_vec())) as ArrayRef),
            ("value", Arc::new(Int64Array::from(values.to_vec())) as ArrayRef),
        ])
        .expect("batch")
    }

    fn table() -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(StringArray::from(vec!["a", "b", "a"])) as ArrayRef),
            ("label", Arc::new(StringArray::from(vec!["A", "B", "second A"])) as ArrayRef),
        ])
        .expect("table")
    }

    #[test]
    fn lookup_appends_table_columns_and_counts_misses() {
        let lookup = LookupExec::new("key".into(), table(), "k".into(), vec!["label".into()]).expect("lookup");
        let output = lookup.execute(&rows(&[Some("b"), Some("z"), None, Some("a")], &[1, 2, 3, 4])).expect("run");
        assert_eq!(output.unmatched_rows, 2);
        let labels: Vec<_> = output.batch.column(2).as_string::<i32>().iter().collect();
        assert_eq!(labels, vec![Some("B"), Some("A")], "first table row wins for a duplicate key");
        let values: Vec<_> = output.batch.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(values, vec![1, 4]);
    }

    #[test]
    fn project_renames_and_computes() {
        let project =
            ProjectExec::new(vec![(col("value").multiply(lit(2)), "double".into()), (col("key"), "key".into())]);
        let output = project.execute(&rows(&[Some("x"), Some("y")], &[3, 4])).expect("project");
        assert_eq!(output.schema().field(0).name(), "double");
        assert_eq!(output.column(0).as_primitive::<Int64Type>().values().to_vec(), vec![6, 8]);
        assert_eq!(output.num_columns(), 2);
    }

    proptest! {
        #[test]
        fn filter_project_and_lookup_agree_with_row_by_row_references(
            input in proptest::collection::vec((proptest::option::of("[a-d]"), -50i64..50), 0..80),
            threshold in -50i64..50,
        ) {
            let keys: Vec<Option<&str>> = input.iter().map(|(key, _)| key.as_deref()).collect();
            let values: Vec<i64> = input.iter().map(|(_, value)| *value).collect();
            let batch = rows(&keys, &values);

            let filtered = FilterExec::new(col("value").gt(lit(threshold))).execute(&batch).expect("filter");
            let expected: Vec<i64> = values.iter().copied().filter(|value| *value > threshold).collect();
            prop_assert_eq!(filtered.column(1).as_primitive::<Int64Type>().values().to_vec(), expected);

            let projected = ProjectExec::new(vec![(col("value").multiply(lit(3)).subtract(lit(threshold)), "derived".into()), (col("key"), "key".into())])
                .execute(&batch)
                .expect("project");
            let derived: Vec<i64> = values.iter().map(|value| value * 3 - threshold).collect();
            prop_assert_eq!(projected.column(0).as_primitive::<Int64Type>().values().to_vec(), derived);
            prop_assert_eq!(projected.column(1), batch.column(0), "a bare column passes through unchanged");

            let lookup = LookupExec::new("key".into(), table(), "k".into(), vec!["label".into()]).expect("lookup");
            let joined = lookup.execute(&batch).expect("lookup");
            let reference: Vec<(i64, &str)> = input
                .iter()
                .filter_map(|(key, value)| match key.as_deref() {
                    Some("a") => Some((*value, "A")),
                    Some("b") => Some((*value, "B")),
                    _ => None,
                })
                .collect();
            let found: Vec<(i64, &str)> = joined
                .batch
                .column(1)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied()
                .zip(joined.batch.column(2).as_string::<i32>().iter().map(|label| label.unwrap_or("")))
                .collect();
            prop_assert_eq!(joined.unmatched_rows as usize, input.len() - reference.len());
            prop_assert_eq!(found, reference);
        }
    }
}
