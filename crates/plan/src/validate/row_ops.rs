//! Row-at-a-time operators: a filter keeps its input's schema, a projection builds a new one.

use super::columns::{expr_type, option};
use crate::error::{NodeRef, PlanError};
use crate::expr::Expr;
use crate::schema::{DataType, Field, Schema};

pub(super) fn check_filter(at: &NodeRef, input: &Schema, predicate: &Expr) -> Result<Schema, PlanError> {
    let found = expr_type(at, predicate, input)?;
    if found != DataType::Boolean {
        return Err(PlanError::TypeMismatch {
            node: at.clone(),
            field: predicate.to_string(),
            expected: "boolean".into(),
            found,
        });
    }
    Ok(input.clone())
}

pub(super) fn check_project(at: &NodeRef, input: &Schema, columns: &[(Expr, String)]) -> Result<Schema, PlanError> {
    let mut fields = Vec::with_capacity(columns.len());
    for (expr, name) in columns {
        let data_type = expr_type(at, expr, input)?;
        if fields.iter().any(|field: &Field| &field.name == name) {
            return Err(option(at, "columns", &format!("output column `{name}` appears twice")));
        }
        fields.push(Field::new(name.clone(), data_type));
    }
    Ok(Schema::new(fields))
}
