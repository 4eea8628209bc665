//! Mapping between the plan's logical types and Arrow's.

use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema, SchemaRef};
use sleet_plan::{DataType, Schema};

pub fn to_arrow_type(data_type: DataType) -> ArrowType {
    match data_type {
        DataType::Utf8 => ArrowType::Utf8,
        DataType::Int64 => ArrowType::Int64,
        DataType::Float64 => ArrowType::Float64,
        DataType::Boolean => ArrowType::Boolean,
        DataType::Binary => ArrowType::Binary,
    }
}

pub fn to_arrow_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<ArrowField> = schema
        .fields
        .iter()
        .map(|field| ArrowField::new(&field.name, to_arrow_type(field.data_type), field.nullable))
        .collect();
    Arc::new(ArrowSchema::new(fields))
}
