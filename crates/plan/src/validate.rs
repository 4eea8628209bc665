//! Plan validation: structure, column references and types, checked before anything runs.

use crate::error::{NodeRef, PlanError};
use crate::expr::{Expr, ExprTypeError};
use crate::node::{AggFunc, Operator, Plan, SourceSpec};
use crate::schema::{DataType, Field, Schema};

/// Name of the column a window aggregate adds for the window's start.
pub const WINDOW_START_COLUMN: &str = "window_start";

/// Checks the plan and returns the output schema of every node, in order.
pub fn validate(plan: &Plan) -> Result<Vec<Schema>, PlanError> {
    let nodes = &plan.nodes;
    if nodes.len() < 2 {
        return Err(PlanError::Empty);
    }
    let mut schemas: Vec<Schema> = Vec::with_capacity(nodes.len());
    let mut exchange_keys: Option<&[String]> = None;
    for (index, node) in nodes.iter().enumerate() {
        let at = NodeRef { index, kind: node.operator.kind() };
        let structure = |reason: String| PlanError::Structure { node: at.clone(), reason };
        let is_first = index == 0;
        let is_last = index + 1 == nodes.len();
        match (&node.operator, is_first, is_last) {
            (Operator::Source { .. }, false, _) => return Err(structure("a source may only be the first node".into())),
            (Operator::Sink { .. }, _, false) => return Err(structure("a sink may only be the last node".into())),
            (op, true, _) if !matches!(op, Operator::Source { .. }) => {
                return Err(structure("the first node must be a source".into()))
            }
            (op, _, true) if !matches!(op, Operator::Sink { .. }) => {
                return Err(structure("the last node must be a sink".into()))
            }
            _ => {}
        }
        let input = schemas.last();
        let output = match &node.operator {
            Operator::Source { spec } => {
                check_source(&at, spec)?;
                Schema::new(vec![Field::new("value", DataType::Binary)])
            }
            Operator::DecodeJson { schema, max_record_bytes } => {
                let input = input.expect("not first");
                if input.fields.len() != 1 || input.fields[0].data_type != DataType::Binary {
                    return Err(structure("decode_json must read raw records straight from a source".into()));
                }
                if schema.fields.is_empty() {
                    return Err(option(&at, "schema", "needs at least one field"));
                }
                if *max_record_bytes == 0 {
                    return Err(option(&at, "max_record_bytes", "must be at least 1"));
                }
                for (position, field) in schema.fields.iter().enumerate() {
                    if field.data_type == DataType::Binary {
                        return Err(PlanError::TypeMismatch {
                            node: at.clone(),
                            field: field.name.clone(),
                            expected: "utf8, int64, float64 or boolean".into(),
                            found: DataType::Binary,
                        });
                    }
                    if schema.fields[..position].iter().any(|other| other.name == field.name) {
                        return Err(option(&at, "schema", &format!("field `{}` appears twice", field.name)));
                    }
                }
                schema.clone()
            }
            Operator::Filter { predicate } => {
                let input = input.expect("not first");
                let found = expr_type(&at, predicate, input)?;
                if found != DataType::Boolean {
                    return Err(PlanError::TypeMismatch {
                        node: at,
                        field: predicate.to_string(),
                        expected: "boolean".into(),
                        found,
                    });
                }
                input.clone()
            }
            Operator::Project { columns } => {
                let input = input.expect("not first");
                let mut fields = Vec::with_capacity(columns.len());
                for (expr, name) in columns {
                    let data_type = expr_type(&at, expr, input)?;
                    if fields.iter().any(|field: &Field| &field.name == name) {
                        return Err(option(&at, "columns", &format!("output column `{name}` appears twice")));
                    }
                    fields.push(Field::new(name.clone(), data_type));
                }
                Schema::new(fields)
            }
            Operator::Lookup { key, table, table_key, columns } => {
                let input = input.expect("not first");
                let key_type = column_type(&at, input, key)?;
                let table_schema = table.schema();
                let table_key_type = column_type(&at, &table_schema, table_key)?;
                if key_type != table_key_type {
                    return Err(PlanError::TypeMismatch {
                        node: at,
                        field: key.clone(),
                        expected: format!("{table_key_type} (the type of table column `{table_key}`)"),
                        found: key_type,
                    });
                }
                let mut output = input.clone();
                for column in columns {
                    let data_type = column_type(&at, &table_schema, column)?;
                    if output.index_of(column).is_some() {
                        return Err(option(&at, "columns", &format!("`{column}` is already a column of the input")));
                    }
                    output.fields.push(Field::new(column.clone(), data_type));
                }
                output
            }
            Operator::Exchange { keys, partitions } => {
                let input = input.expect("not first");
                if keys.is_empty() {
                    return Err(option(&at, "keys", "needs at least one key"));
                }
                if *partitions == 0 {
                    return Err(option(&at, "partitions", "must be at least 1"));
                }
                if exchange_keys.is_some() {
                    return Err(structure("only one exchange per plan is supported so far".into()));
                }
                for key in keys {
                    column_type(&at, input, key)?;
                }
                exchange_keys = Some(keys);
                input.clone()
            }
            Operator::WindowAggregate { window, keys, aggregates } => {
                let input = input.expect("not first");
                let Some(partition_keys) = exchange_keys else {
                    return Err(structure(
                        "a window aggregate needs an exchange before it, so each key's state lives in one partition"
                            .into(),
                    ));
                };
                if let Some(missing) = partition_keys.iter().find(|key| !keys.contains(key)) {
                    return Err(structure(format!(
                        "the exchange key `{missing}` is not a grouping key, so one group would be split across partitions"
                    )));
                }
                if !matches!(nodes[index - 1].operator, Operator::Exchange { .. }) {
                    return Err(structure("a window aggregate must follow its exchange directly".into()));
                }
                let time_type = column_type(&at, input, &window.time_column)?;
                if time_type != DataType::Int64 {
                    return Err(PlanError::TypeMismatch {
                        node: at,
                        field: window.time_column.clone(),
                        expected: "int64 (ms since epoch)".into(),
                        found: time_type,
                    });
                }
                if window.size_ms <= 0 {
                    return Err(option(&at, "window.size_ms", "must be positive"));
                }
                if window.allowed_lateness_ms < 0 {
                    return Err(option(&at, "window.allowed_lateness_ms", "must not be negative"));
                }
                if aggregates.is_empty() {
                    return Err(option(&at, "aggregates", "needs at least one aggregate"));
                }
                let mut fields = vec![Field::new(WINDOW_START_COLUMN, DataType::Int64)];
                for key in keys {
                    fields.push(Field::new(key.clone(), column_type(&at, input, key)?));
                }
                for aggregate in aggregates {
                    let data_type = match (aggregate.func, &aggregate.column) {
                        (AggFunc::Count, _) => DataType::Int64,
                        (_, None) => return Err(option(&at, &aggregate.name, "sum, min and max need a column")),
                        (_, Some(column)) => {
                            let found = column_type(&at, input, column)?;
                            if !found.is_numeric() {
                                return Err(PlanError::TypeMismatch {
                                    node: at,
                                    field: column.clone(),
                                    expected: "int64 or float64".into(),
                                    found,
                                });
                            }
                            found
                        }
                    };
                    if fields.iter().any(|field| field.name == aggregate.name) {
                        return Err(option(
                            &at,
                            "aggregates",
                            &format!("output column `{}` appears twice", aggregate.name),
                        ));
                    }
                    fields.push(Field::new(aggregate.name.clone(), data_type));
                }
                Schema::new(fields)
            }
            Operator::Sink { .. } => input.expect("not first").clone(),
        };
        schemas.push(output);
    }
    Ok(schemas)
}

fn check_source(at: &NodeRef, spec: &SourceSpec) -> Result<(), PlanError> {
    match spec {
        SourceSpec::Ysb(ysb) => {
            if ysb.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if !(0.0..=1.0).contains(&ysb.bad_fraction) {
                return Err(option(at, "bad_fraction", "must be between 0 and 1"));
            }
        }
        SourceSpec::Numbers(numbers) => {
            if numbers.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if numbers.numbers_per_batch == 0 {
                return Err(option(at, "numbers_per_batch", "must be at least 1"));
            }
            if numbers.keys == 0 {
                return Err(option(at, "keys", "must be at least 1"));
            }
        }
    }
    Ok(())
}

fn option(at: &NodeRef, field: &str, reason: &str) -> PlanError {
    PlanError::InvalidOption { node: at.clone(), field: field.to_string(), reason: reason.to_string() }
}

fn column_type(at: &NodeRef, schema: &Schema, column: &str) -> Result<DataType, PlanError> {
    schema.field(column).map(|field| field.data_type).ok_or_else(|| PlanError::UnknownColumn {
        node: at.clone(),
        column: column.to_string(),
        available: schema.names().join(", "),
    })
}

fn expr_type(at: &NodeRef, expr: &Expr, schema: &Schema) -> Result<DataType, PlanError> {
    expr.data_type(schema).map_err(|error| match error {
        ExprTypeError::UnknownColumn(column) => {
            PlanError::UnknownColumn { node: at.clone(), column, available: schema.names().join(", ") }
        }
        ExprTypeError::Mismatch { expr, reason } => {
            PlanError::Structure { node: at.clone(), reason: format!("in `{expr}`: {reason}") }
        }
    })
}
