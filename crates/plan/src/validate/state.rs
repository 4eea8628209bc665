//! The operators that keep keyed state across batches (`increments`, `keyed_aggregate`,
//! `top_k`, `top_rows`): each key's rows must reach one partition, keys are plain columns,
//! times int64, values numeric, and every limit positive.

use super::columns::{column_of_type, column_type, option, structure};
use super::window::aggregate_type;
use crate::error::{NodeRef, PlanError};
use crate::node::AggFunc;
use crate::physical::PARTIAL_MAX_EVENT_TIME_COLUMN;
use crate::schema::{DataType, Field, Schema};
use crate::state_spec::{IncrementsSpec, KeyedAggregateSpec, ReadingEncoding, TopKSpec, TopRowsSpec, RANK_COLUMN};

/// The largest `k` a `top_k` takes: a group's output is `k` rows every batch it changes.
pub const TOP_K_MAX: u32 = 10_000;

pub(super) fn check_increments(
    at: &NodeRef,
    input: &Schema,
    spec: &IncrementsSpec,
    exchange_keys: Option<&[String]>,
) -> Result<Schema, PlanError> {
    // Before any exchange the source's partitioning is trusted to keep a key together (a
    // Kafka topic keyed by it); after one, the exchange must.
    if let Some(partition_keys) = exchange_keys {
        check_partitioned_by(at, "keys", &spec.keys, partition_keys)?;
    }
    check_keys(at, input, "keys", &spec.keys, false)?;
    check_time(at, input, &spec.time_column)?;
    if spec.columns.is_empty() {
        return Err(option(at, "columns", "needs at least one value column"));
    }
    let mut fields = input.fields.clone();
    for (index, name) in spec.columns.iter().enumerate() {
        let found = numeric(at, input, name)?;
        if spec.keys.contains(name) || *name == spec.time_column || spec.columns[..index].contains(name) {
            return Err(option(at, "columns", &format!("`{name}` is also a key, the time or another value column")));
        }
        if spec.encoding == ReadingEncoding::Cumulative {
            // An f64 holds integers exactly up to 2^53, so differences modulo 2^wrap_bits are
            // exact only below that.
            let most = if found == DataType::Float64 { 53 } else { 63 };
            if !(1..=most).contains(&spec.wrap_bits) {
                return Err(option(at, "wrap_bits", &format!("must be 1 to {most} for {found} column `{name}`")));
            }
        }
        if spec.encoding == ReadingEncoding::Rate {
            let index = input.index_of(name).expect("found above");
            fields[index].data_type = DataType::Float64;
        }
    }
    check_lateness(at, spec.allowed_lateness_ms)?;
    check_ttl(at, spec.ttl_ms)?;
    if spec.ttl_ms < spec.allowed_lateness_ms {
        return Err(option(at, "ttl_ms", "must be at least allowed_lateness_ms, or late readings find no history"));
    }
    check_max_keys(at, spec.max_keys)?;
    Ok(Schema::new(fields))
}

pub(super) fn check_keyed_aggregate(
    at: &NodeRef,
    input: &Schema,
    spec: &KeyedAggregateSpec,
    exchange_keys: Option<&[String]>,
) -> Result<Schema, PlanError> {
    check_partitioned_by(at, "keys", &spec.keys, needs_exchange(at, exchange_keys)?)?;
    let mut fields = check_keys(at, input, "keys", &spec.keys, false)?;
    check_time(at, input, &spec.time_column)?;
    if spec.aggregates.is_empty() {
        return Err(option(at, "aggregates", "needs at least one aggregate"));
    }
    for aggregate in &spec.aggregates {
        if matches!(aggregate.func, AggFunc::Avg | AggFunc::CountDistinct) {
            return Err(option(
                at,
                &aggregate.name,
                "avg and count_distinct are window aggregates; a keyed aggregate keeps count, sum, min and max",
            ));
        }
        let data_type = aggregate_type(at, input, aggregate)?;
        fields.push(Field::new(aggregate.name.clone(), data_type).nullable());
    }
    fields.push(Field::new(spec.time_column.clone(), DataType::Int64));
    check_distinct(at, "aggregates", &fields)?;
    check_ttl(at, spec.ttl_ms)?;
    check_max_keys(at, spec.max_keys)?;
    Ok(Schema::new(fields))
}

pub(super) fn check_top_k(
    at: &NodeRef,
    input: &Schema,
    spec: &TopKSpec,
    exchange_keys: Option<&[String]>,
) -> Result<Schema, PlanError> {
    check_partitioned_by(at, "group", &spec.group, needs_exchange(at, exchange_keys)?)?;
    let mut fields = check_keys(at, input, "group", &spec.group, true)?;
    fields.push(Field::new(RANK_COLUMN, DataType::Int64));
    fields.extend(check_keys(at, input, "keys", &spec.keys, false)?);
    let value_type = numeric(at, input, &spec.order_by)?;
    fields.push(Field::new(spec.order_by.clone(), value_type));
    check_distinct(at, "keys", &fields)?;
    check_time(at, input, &spec.time_column)?;
    check_k(at, spec.k)?;
    check_ttl(at, spec.ttl_ms)?;
    check_max_keys(at, spec.max_keys)?;
    Ok(Schema::new(fields))
}

pub(super) fn check_top_rows(
    at: &NodeRef,
    input: &Schema,
    spec: &TopRowsSpec,
    exchange_keys: Option<&[String]>,
) -> Result<Schema, PlanError> {
    check_partitioned_by(at, "group", &spec.group, needs_exchange(at, exchange_keys)?)?;
    check_keys(at, input, "group", &spec.group, false)?;
    numeric(at, input, &spec.order_by)?;
    check_time(at, input, &spec.time_column)?;
    check_time(at, input, &spec.window_end_column)?;
    if !spec.group.contains(&spec.window_end_column) {
        return Err(option(
            at,
            "window_end_column",
            &format!("`{}` must be one of `group`, so each group is of one window", spec.window_end_column),
        ));
    }
    // Every input column is carried to the output, so each must be one the operator can hold.
    for field in &input.fields {
        if field.data_type == DataType::Binary {
            return Err(PlanError::TypeMismatch {
                node: at.clone(),
                field: field.name.clone(),
                expected: "utf8, int64, float64 or boolean (a ranked row carries every column)".into(),
                found: field.data_type,
            });
        }
        if field.name == RANK_COLUMN || field.name == PARTIAL_MAX_EVENT_TIME_COLUMN {
            return Err(option(
                at,
                "group",
                &format!("the input has a column `{}`, a name the output uses", field.name),
            ));
        }
    }
    check_k(at, spec.k)?;
    check_lateness(at, spec.allowed_lateness_ms)?;
    if spec.max_groups == 0 {
        return Err(option(at, "max_groups", "must be at least 1"));
    }
    let mut fields = input.fields.clone();
    fields.push(Field::new(RANK_COLUMN, DataType::Int64));
    Ok(Schema::new(fields))
}

pub(super) fn needs_exchange<'a>(at: &NodeRef, exchange_keys: Option<&'a [String]>) -> Result<&'a [String], PlanError> {
    exchange_keys.ok_or_else(|| {
        structure(at, format!("a {} needs an exchange before it, so each key's state lives in one partition", at.kind))
    })
}

/// Each key's (or group's) rows must meet in one partition: the exchange hashes on a
/// subset of `columns`.
fn check_partitioned_by(
    at: &NodeRef,
    field: &str,
    columns: &[String],
    partition_keys: &[String],
) -> Result<(), PlanError> {
    match partition_keys.iter().find(|key| !columns.contains(key)) {
        Some(missing) => Err(structure(
            at,
            format!("the exchange key `{missing}` is not among `{field}`, so one key's rows would be split across partitions"),
        )),
        None => Ok(()),
    }
}

/// The key columns' fields, in order. Binary values cannot be keys (`KeyColumns` encodes plan
/// types only).
pub(super) fn check_keys(
    at: &NodeRef,
    input: &Schema,
    field: &str,
    keys: &[String],
    may_be_empty: bool,
) -> Result<Vec<Field>, PlanError> {
    if keys.is_empty() && !may_be_empty {
        return Err(option(at, field, "needs at least one column"));
    }
    let mut fields: Vec<Field> = Vec::with_capacity(keys.len());
    for key in keys {
        let data_type = column_type(at, input, key)?;
        if data_type == DataType::Binary {
            return Err(PlanError::TypeMismatch {
                node: at.clone(),
                field: key.clone(),
                expected: "utf8, int64, float64 or boolean".into(),
                found: data_type,
            });
        }
        fields.push(input.field(key).expect("found above").clone());
    }
    check_distinct(at, field, &fields)?;
    Ok(fields)
}

pub(super) fn check_time(at: &NodeRef, input: &Schema, column: &str) -> Result<(), PlanError> {
    column_of_type(at, input, column, DataType::Int64, "int64 (ms since epoch)")
}

fn numeric(at: &NodeRef, input: &Schema, column: &str) -> Result<DataType, PlanError> {
    let found = column_type(at, input, column)?;
    if !found.is_numeric() {
        return Err(PlanError::TypeMismatch {
            node: at.clone(),
            field: column.to_string(),
            expected: "int64 or float64".into(),
            found,
        });
    }
    Ok(found)
}

fn check_distinct(at: &NodeRef, field: &str, fields: &[Field]) -> Result<(), PlanError> {
    for (index, column) in fields.iter().enumerate() {
        if fields[..index].iter().any(|earlier| earlier.name == column.name) {
            return Err(option(at, field, &format!("output column `{}` appears twice", column.name)));
        }
    }
    Ok(())
}

fn check_k(at: &NodeRef, k: u32) -> Result<(), PlanError> {
    if k == 0 || k > TOP_K_MAX {
        return Err(option(at, "k", &format!("must be 1 to {TOP_K_MAX}")));
    }
    Ok(())
}

fn check_lateness(at: &NodeRef, allowed_lateness_ms: i64) -> Result<(), PlanError> {
    if allowed_lateness_ms < 0 {
        return Err(option(at, "allowed_lateness_ms", "must not be negative"));
    }
    Ok(())
}

fn check_ttl(at: &NodeRef, ttl_ms: i64) -> Result<(), PlanError> {
    if ttl_ms <= 0 {
        return Err(option(at, "ttl_ms", "must be positive"));
    }
    Ok(())
}

fn check_max_keys(at: &NodeRef, max_keys: u64) -> Result<(), PlanError> {
    if max_keys == 0 {
        return Err(option(at, "max_keys", "must be at least 1"));
    }
    Ok(())
}
