//! A window join: behind an exchange on its key column alone, over a tumbling window on an
//! int64 event time, with a boolean side column and distinct output names.

use super::columns::{column_of_type, column_type, option, structure};
use super::state::{check_keys, check_time, needs_exchange};
use super::window::{check_window, WINDOW_END_COLUMN, WINDOW_START_COLUMN};
use crate::error::{NodeRef, PlanError};
use crate::node::WindowKind;
use crate::schema::{DataType, Field, Schema};
use crate::window_join::{JoinColumn, WindowJoinSpec};

pub(super) fn check(
    at: &NodeRef,
    input: &Schema,
    spec: &WindowJoinSpec,
    exchange_keys: Option<&[String]>,
) -> Result<Schema, PlanError> {
    // Both sides' rows of a key must meet in one partition, so the exchange hashes on the key
    // column and nothing else (another column would send one key's rows apart).
    let partition_keys = needs_exchange(at, exchange_keys)?;
    if partition_keys != [spec.key_column.as_str()] {
        return Err(structure(
            at,
            format!(
                "the exchange before a window join hashes on `{}` (its key_column) alone, not on {}",
                spec.key_column,
                partition_keys.join(", ")
            ),
        ));
    }
    check_window(at, &spec.window)?;
    if !matches!(spec.window.kind(), WindowKind::Tumbling { .. }) {
        return Err(option(at, "window", "a window join pairs rows of tumbling windows: give size_ms alone"));
    }
    check_time(at, input, &spec.window.time_column)?;
    check_keys(at, input, "key_column", std::slice::from_ref(&spec.key_column), false)?;
    let side = "boolean (true on the left, false on the right)";
    column_of_type(at, input, &spec.side_column, DataType::Boolean, side)?;
    let mut fields =
        vec![Field::new(WINDOW_START_COLUMN, DataType::Int64), Field::new(WINDOW_END_COLUMN, DataType::Int64)];
    for (field, columns) in [("left", &spec.left), ("right", &spec.right)] {
        fields.extend(side_fields(at, input, field, columns, &fields)?);
    }
    if spec.max_rows == 0 {
        return Err(option(at, "max_rows", "must be at least 1"));
    }
    Ok(Schema::new(fields))
}

/// A side's output fields, each of its input column's type, nullable as it is; every output
/// name new among `before` and the side's earlier columns.
fn side_fields(
    at: &NodeRef,
    input: &Schema,
    field: &str,
    columns: &[JoinColumn],
    before: &[Field],
) -> Result<Vec<Field>, PlanError> {
    let mut fields: Vec<Field> = Vec::with_capacity(columns.len());
    for column in columns {
        column_type(at, input, &column.input)?;
        let taken = before.iter().chain(&fields).any(|earlier| earlier.name == column.output);
        if taken {
            return Err(option(at, field, &format!("output column `{}` appears twice", column.output)));
        }
        let source = input.field(&column.input).expect("found above");
        fields.push(Field { name: column.output.clone(), ..source.clone() });
    }
    Ok(fields)
}
