//! Where a `decode_avro` node's schema comes from, and the plan columns an Avro record
//! schema decodes into: the ones `decode_json` gives for the same logical record.

use serde::{Deserialize, Serialize};
use sleet_avro::{AvroType, RecordSchema};

use crate::schema::{DataType, Field, Schema};

/// A job file names its Avro schema by path or holds it inline. Only the inline form can be
/// validated or run (this crate does no I/O): `sleet submit` reads the file, relative to the
/// job file, and puts its JSON in its place (`JobFile::inline_avro_schemas`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AvroSchemaSource {
    /// A path to an `.avsc` file.
    Path(String),
    /// The `.avsc` JSON itself.
    Inline(serde_json::Value),
}

impl AvroSchemaSource {
    /// The parsed schema; the error says what is wrong with it (naming the field), or that
    /// the file was never read.
    pub fn record_schema(&self) -> Result<RecordSchema, String> {
        match self {
            AvroSchemaSource::Path(path) => Err(format!(
                "the file `{path}` has not been read: `sleet submit` puts its JSON in the job, a job sent \
                 another way must hold the schema inline"
            )),
            AvroSchemaSource::Inline(json) => RecordSchema::from_json(json).map_err(|error| error.to_string()),
        }
    }
}

/// The columns a record of `record` decodes into, in the record's field order. Avro `int`
/// widens to int64 and `float` to float64, as `decode_json` reads any number into those; a
/// union with null makes the column nullable.
pub fn decoded_schema(record: &RecordSchema) -> Schema {
    Schema::new(
        record
            .fields
            .iter()
            .map(|field| {
                let data_type = match field.avro_type {
                    AvroType::Boolean => DataType::Boolean,
                    AvroType::Int | AvroType::Long => DataType::Int64,
                    AvroType::Float | AvroType::Double => DataType::Float64,
                    AvroType::String => DataType::Utf8,
                };
                Field { name: field.name.clone(), data_type, nullable: field.is_nullable() }
            })
            .collect(),
    )
}
