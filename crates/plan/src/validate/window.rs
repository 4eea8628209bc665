//! A window aggregate (tumbling, hopping or session): behind its exchange, grouped by at least
//! the exchange's keys, on an int64 event time, with a well-formed window and well-typed,
//! distinct output columns.

use super::columns::{column_type, option, structure};
use crate::error::{NodeRef, PlanError};
use crate::node::{AggFunc, Aggregate, WindowKind, WindowSpec};
use crate::schema::{DataType, Field, Schema};

/// Name of the column a window aggregate adds for the window's start.
pub const WINDOW_START_COLUMN: &str = "window_start";
/// Name of the column hopping and session windows add for the window's end (exclusive).
pub const WINDOW_END_COLUMN: &str = "window_end";

/// The most windows a hopping window puts one row in (`size_ms / slide_ms`): each costs a
/// fold per row and an open window in the state, so a slide far smaller than the size is
/// refused rather than left to run out of memory.
pub const HOP_WINDOWS_PER_ROW_MAX: i64 = 1024;

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
    super::state::check_time(at, input, &window.time_column)?;
    check_window(at, window)?;
    if aggregates.is_empty() {
        return Err(option(at, "aggregates", "needs at least one aggregate"));
    }
    let mut fields = vec![Field::new(WINDOW_START_COLUMN, DataType::Int64)];
    if window.has_end_column() {
        fields.push(Field::new(WINDOW_END_COLUMN, DataType::Int64));
    }
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

/// The window's fields describe one kind, with lengths that make sense for it.
pub(super) fn check_window(at: &NodeRef, window: &WindowSpec) -> Result<(), PlanError> {
    if window.allowed_lateness_ms < 0 {
        return Err(option(at, "window.allowed_lateness_ms", "must not be negative"));
    }
    match window.kind() {
        WindowKind::Session { gap_ms } => {
            if window.size_ms != 0 || window.slide_ms.is_some() {
                return Err(option(
                    at,
                    "window.gap_ms",
                    "makes a session window, which takes no size_ms or slide_ms: give gap_ms alone",
                ));
            }
            if gap_ms <= 0 {
                return Err(option(at, "window.gap_ms", "must be positive"));
            }
        }
        WindowKind::Tumbling { size_ms } => {
            if size_ms <= 0 {
                return Err(option(at, "window.size_ms", "must be positive (or give gap_ms for a session window)"));
            }
        }
        WindowKind::Hopping { size_ms, slide_ms } => {
            if size_ms <= 0 {
                return Err(option(at, "window.size_ms", "must be positive"));
            }
            if slide_ms <= 0 {
                return Err(option(at, "window.slide_ms", "must be positive"));
            }
            if size_ms % slide_ms != 0 {
                return Err(option(
                    at,
                    "window.size_ms",
                    &format!("must be a whole multiple of window.slide_ms ({slide_ms}), not {size_ms}"),
                ));
            }
            if size_ms / slide_ms > HOP_WINDOWS_PER_ROW_MAX {
                return Err(option(
                    at,
                    "window.slide_ms",
                    &format!(
                        "puts each row in {} windows (size_ms / slide_ms); at most {HOP_WINDOWS_PER_ROW_MAX} are allowed",
                        size_ms / slide_ms
                    ),
                ));
            }
        }
    }
    Ok(())
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
        (_, None) => Err(option(at, &aggregate.name, "sum, min, max, avg and count_distinct need a column")),
        (AggFunc::CountDistinct, Some(column)) => {
            column_type(at, input, column)?;
            Ok(DataType::Int64)
        }
        (func, Some(column)) => {
            let found = column_type(at, input, column)?;
            if !found.is_numeric() {
                return Err(PlanError::TypeMismatch {
                    node: at.clone(),
                    field: column.clone(),
                    expected: "int64 or float64".into(),
                    found,
                });
            }
            Ok(if func == AggFunc::Avg { DataType::Float64 } else { found })
        }
    }
}
