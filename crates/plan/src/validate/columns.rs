//! Error helpers every node checker shares: a bad option, a column lookup and its type, an
//! expression's type.

use crate::error::{NodeRef, PlanError};
use crate::expr::{Expr, ExprTypeError};
use crate::schema::{DataType, Schema};

pub(super) fn option(at: &NodeRef, field: &str, reason: &str) -> PlanError {
    PlanError::InvalidOption { node: at.clone(), field: field.to_string(), reason: reason.to_string() }
}

pub(super) fn structure(at: &NodeRef, reason: impl Into<String>) -> PlanError {
    PlanError::Structure { node: at.clone(), reason: reason.into() }
}

pub(super) fn column_type(at: &NodeRef, schema: &Schema, column: &str) -> Result<DataType, PlanError> {
    schema.field(column).map(|field| field.data_type).ok_or_else(|| PlanError::UnknownColumn {
        node: at.clone(),
        column: column.to_string(),
        available: schema.names().join(", "),
    })
}

/// The column must have the type `wanted`; `expected` says it to the user.
pub(super) fn column_of_type(
    at: &NodeRef,
    schema: &Schema,
    column: &str,
    wanted: DataType,
    expected: &str,
) -> Result<(), PlanError> {
    let found = column_type(at, schema, column)?;
    if found != wanted {
        return Err(PlanError::TypeMismatch {
            node: at.clone(),
            field: column.to_string(),
            expected: expected.into(),
            found,
        });
    }
    Ok(())
}

pub(super) fn expr_type(at: &NodeRef, expr: &Expr, schema: &Schema) -> Result<DataType, PlanError> {
    expr.data_type(schema).map_err(|error| match error {
        ExprTypeError::UnknownColumn(column) => {
            PlanError::UnknownColumn { node: at.clone(), column, available: schema.names().join(", ") }
        }
        ExprTypeError::Mismatch { expr, reason } => structure(at, format!("in `{expr}`: {reason}")),
    })
}
