//! Decoding: raw records in, the declared schema (JSON) or the Avro schema's columns out.

use super::columns::{option, structure};
use crate::avro::{decoded_schema, AvroSchemaSource};
use crate::error::{NodeRef, PlanError};
use crate::schema::{DataType, Schema};

pub(super) fn check(at: &NodeRef, input: &Schema, schema: &Schema, max_record_bytes: u32) -> Result<Schema, PlanError> {
    check_raw_input(at, input, max_record_bytes)?;
    if schema.fields.is_empty() {
        return Err(option(at, "schema", "needs at least one field"));
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

/// The Avro schema is parsed here, so a type sleet cannot decode (an array, a map, a nested
/// record…) is refused before the job runs, naming its field.
pub(super) fn check_avro(
    at: &NodeRef,
    input: &Schema,
    schema: &AvroSchemaSource,
    max_record_bytes: u32,
) -> Result<Schema, PlanError> {
    check_raw_input(at, input, max_record_bytes)?;
    let record = schema.record_schema().map_err(|reason| option(at, "schema", &reason))?;
    Ok(decoded_schema(&record))
}

fn check_raw_input(at: &NodeRef, input: &Schema, max_record_bytes: u32) -> Result<(), PlanError> {
    if input.fields.len() != 1 || input.fields[0].data_type != DataType::Binary {
        return Err(structure(at, format!("{} must read raw records straight from a source", at.kind)));
    }
    if max_record_bytes == 0 {
        return Err(option(at, "max_record_bytes", "must be at least 1"));
    }
    Ok(())
}
