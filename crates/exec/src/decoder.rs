//! A stage's decode operator, whichever format it reads: the one place the pipeline learns
//! which decoder a `PhysicalOp` asks for.

use arrow_schema::SchemaRef;
use sleet_plan::PhysicalOp;

use crate::avro::AvroDecoder;
use crate::error::ExecError;
use crate::json::{DecodeOutput, JsonDecoder};
use crate::records::RawRecords;

pub enum RecordDecoder {
    Json(JsonDecoder),
    Avro(AvroDecoder),
}

impl RecordDecoder {
    /// The decoder `op` describes, which must be a decode operator.
    pub fn new(op: &PhysicalOp) -> Result<RecordDecoder, ExecError> {
        Ok(match op {
            PhysicalOp::DecodeJson { schema, projection, max_record_bytes } => {
                RecordDecoder::Json(JsonDecoder::new(schema, projection, *max_record_bytes)?)
            }
            PhysicalOp::DecodeAvro { schema, projection, max_record_bytes } => {
                RecordDecoder::Avro(AvroDecoder::new(schema, projection, *max_record_bytes)?)
            }
            other => unreachable!("{} is not a decode operator", other.kind()),
        })
    }

    pub fn with_record_timestamps(self, column: &str) -> RecordDecoder {
        match self {
            RecordDecoder::Json(decoder) => RecordDecoder::Json(decoder.with_record_timestamps(column)),
            RecordDecoder::Avro(decoder) => RecordDecoder::Avro(decoder.with_record_timestamps(column)),
        }
    }

    pub fn output_schema(&self) -> SchemaRef {
        match self {
            RecordDecoder::Json(decoder) => decoder.output_schema(),
            RecordDecoder::Avro(decoder) => decoder.output_schema(),
        }
    }

    pub fn decode(&self, records: &RawRecords) -> DecodeOutput {
        match self {
            RecordDecoder::Json(decoder) => decoder.decode(records),
            RecordDecoder::Avro(decoder) => decoder.decode(records),
        }
    }
}
