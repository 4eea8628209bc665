//! A tumbling-window aggregate: behind its exchange, grouped by at least the exchange's keys,
//! on an int64 event time, with well-typed, distinct output columns.

use super::columns::{column_type, option, structure};
use crate::error::{NodeRef, PlanError};
use crate::node::{AggFunc, Aggregate, WindowSpec};
use crate::schema::{DataType, Field, Schema};

/// Name of the column a window aggregate adds for the window's start.
pub const WINDOW_START_COLUMN: &str = "window_start";

pub(super) fn check(
    at: &NodeRef,
    input: &Schema,
    window: &WindowSpec,
    keys: &[String],
    aggregates: &[Aggregate],
    exchange_keys: Option<&[String]>,
    follows_exchange: bool,
) -> Result<Schema, PlanError> {
    check_partitioning(at, keys, exchange_keys, follows_exchange)?;
    let time_type = column_type(at, input, &window.time_column)?;
    if time_type != DataType::Int64 {
        return Err(PlanError::TypeMismatch {
            node: at.clone(),
            field: window.time_column.clone(),
            expected: "int64 (ms since epoch)".into(),
            found: time_type,
        });
    }
    if window.size_ms <= 0 {
        return Err(option(at, "window.size_ms", "must be positive"));
    }
    if window.allowed_lateness_ms < 0 {
        return Err(option(at, "window.allowed_lateness_ms", "must not be negative"));
    }
    if aggregates.is_empty() {
        return Err(option(at, "aggregates", "needs at least one aggregate"));
    }
    let mut fields = vec![Field::new(WINDOW_START_COLUMN, DataType::Int64)];
    for key in keys {
        fields.push(Field::new(key.clone(), column_type(at, input, key)?));
    }
    for aggregate in aggregates {
        let data_type = aggregate_type(at, input, aggregate)?;
        if fields.iter().any(|field| field.name == aggregate.name) {
            return Err(option(at, "aggregates", &format!("output column `{}` appears twice", aggregate.name)));
        }
        fields.push(Field::new(aggregate.name.clone(), data_type));
    }
    Ok(Schema::new(fields))
}

/// Each key's state must live in one partition: the exchange right before hashes on a subset
/// of the grouping keys.
fn check_partitioning(
    at: &NodeRef,
    keys: &[String],
    exchange_keys: Option<&[String]>,
    follows_exchange: bool,
) -> Result<(), PlanError> {
    let Some(partition_keys) = exchange_keys else {
        return Err(structure(
            at,
            "a window aggregate needs an exchange before it, so each key's state lives in one partition",
        ));
    };
    if let Some(missing) = partition_keys.iter().find(|key| !keys.contains(key)) {
        return Err(structure(
            at,
            format!(
                "the exchange key `{missing}` is not a grouping key, so one group would be split across partitions"
            ),
        ));
    }
    if !follows_exchange {
        return Err(structure(at, "a window aggregate must follow its exchange directly"));
    }
    Ok(())
}

pub(super) fn aggregate_type(at: &NodeRef, input: &Schema, aggregate: &Aggregate) -> Result<DataType, PlanError> {
    match (aggregate.func, &aggregate.column) {
        (AggFunc::Count, _) => Ok(DataType::Int64),
        (_, None) => Err(option(at, &aggregate.name, "sum, min and max need a column")),
        (_, Some(column)) => {
            let found = column_type(at, input, column)?;
            if !found.is_numeric() {
                return Err(PlanError::TypeMismatch {
                    node: at.clone(),
                    field: column.clone(),
                    expected: "int64 or float64".into(),
                    found,
                });
            }
            Ok(found)
        }
    }
}
