//! A stream–static lookup: the key types must agree, and the added columns must be new.

use super::columns::{column_type, option};
use crate::error::{NodeRef, PlanError};
use crate::node::TableSpec;
use crate::schema::{Field, Schema};

pub(super) fn check(
    at: &NodeRef,
    input: &Schema,
    key: &str,
    table: &TableSpec,
    table_key: &str,
    columns: &[String],
) -> Result<Schema, PlanError> {
    let key_type = column_type(at, input, key)?;
    let table_schema = table.schema();
    let table_key_type = column_type(at, &table_schema, table_key)?;
    if key_type != table_key_type {
        return Err(PlanError::TypeMismatch {
            node: at.clone(),
            field: key.to_string(),
            expected: format!("{table_key_type} (the type of table column `{table_key}`)"),
            found: key_type,
        });
    }
    let mut output = input.clone();
    for column in columns {
        let data_type = column_type(at, &table_schema, column)?;
        if output.index_of(column).is_some() {
            return Err(option(at, "columns", &format!("`{column}` is already a column of the input")));
        }
        output.fields.push(Field::new(column.clone(), data_type));
    }
    Ok(output)
}
