//! JSON decoding: raw records in, the declared schema out.

use super::columns::{option, structure};
use crate::error::{NodeRef, PlanError};
use crate::schema::{DataType, Schema};

pub(super) fn check(at: &NodeRef, input: &Schema, schema: &Schema, max_record_bytes: u32) -> Result<Schema, PlanError> {
    if input.fields.len() != 1 || input.fields[0].data_type != DataType::Binary {
        return Err(structure(at, "decode_json must read raw records straight from a source"));
    }
    if schema.fields.is_empty() {
        return Err(option(at, "schema", "needs at least one field"));
    }
    if max_record_bytes == 0 {
        return Err(option(at, "max_record_bytes", "must be at least 1"));
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
            return Err(option(at, "schema", &format!("field `{}` appears twice", field.name)));
        }
    }
    Ok(schema.clone())
}
