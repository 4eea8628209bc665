//! The Avro record decoder: single-object encoded records (`sleet-avro` reads them) into the
//! same Arrow columns `json::JsonDecoder` builds for the equivalent schema, with the same
//! column builders. A record written with another schema (its fingerprint says so), cut
//! short, with bytes left over or with a bad length or varint becomes a dead letter naming
//! the field it failed in; its neighbours decode as usual, since a record's values reach the
//! columns only once all of them have been read.
//!
//! Why not `arrow-avro` 60 (it has a single-object decoder for this arrow): its `Decoder`
//! reads a byte stream, not framed records. A record cut short is taken as one whose rest is
//! still to come (the next record's bytes would be read as that rest), bytes left over as
//! the next record's start, and an error leaves the bad record's first fields in its
//! builders, so the batch so far is lost with it. Row-exact dead letters would take a second
//! reader checking each record first, or a decoder per record. Reading the flat records
//! sleet accepts takes a few lines per type, and runs at about 3.4 M gateway records/s, 5x
//! the JSON decoder on the same rows (`benches/kernels/avro.rs`, 10 000 records).
//!
//! `with_record_timestamps` names a field whose value is taken from `RawRecords::timestamps`
//! instead: the datum still holds the field (every field of the schema is in every datum) and
//! it is read and checked, then replaced, so the column is the source's timestamp.

use std::sync::Arc;

use arrow_schema::{Field as ArrowField, Schema as ArrowSchema, SchemaRef};
use sleet_avro::{RecordSchema, Value};
use sleet_plan::avro::decoded_schema;
use sleet_plan::DataType;

use crate::error::ExecError;
use crate::json::{
    finish_batch, refusal_before_parsing, timestamp_slot, ColumnBuilder, DeadLetter, DecodeOutput, Slot,
    TEXT_BYTES_PER_VALUE_GUESS,
};
use crate::records::RawRecords;
use crate::types::to_arrow_type;

pub struct AvroDecoder {
    record: RecordSchema,
    /// Each field's column type, in the record's field order.
    data_types: Vec<DataType>,
    /// Each field's position among the output columns, for projected fields.
    outputs: Vec<Option<usize>>,
    output_schema: SchemaRef,
    max_record_bytes: u32,
    outputs_text: bool,
    record_timestamp: Option<usize>,
}

impl AvroDecoder {
    /// `schema` is the `.avsc` JSON; validation has parsed it already, so an error here means
    /// the stage plan was not validated.
    pub fn new(
        schema: &serde_json::Value,
        projection: &[String],
        max_record_bytes: u32,
    ) -> Result<AvroDecoder, ExecError> {
        let record = RecordSchema::from_json(schema).map_err(|error| ExecError::AvroSchema(error.to_string()))?;
        let columns = decoded_schema(&record);
        if let Some(missing) = projection.iter().find(|name| columns.field(name).is_none()) {
            return Err(ExecError::MissingColumn(missing.clone()));
        }
        let mut output_fields = Vec::new();
        let outputs = columns
            .fields
            .iter()
            .map(|field| {
                projection.contains(&field.name).then(|| {
                    output_fields.push(ArrowField::new(&field.name, to_arrow_type(field.data_type), field.nullable));
                    output_fields.len() - 1
                })
            })
            .collect::<Vec<_>>();
        let data_types: Vec<DataType> = columns.fields.iter().map(|field| field.data_type).collect();
        let outputs_text =
            data_types.iter().zip(&outputs).any(|(data_type, output)| output.is_some() && *data_type == DataType::Utf8);
        Ok(AvroDecoder {
            record,
            data_types,
            outputs,
            output_schema: Arc::new(ArrowSchema::new(output_fields)),
            max_record_bytes,
            outputs_text,
            record_timestamp: None,
        })
    }

    /// Takes field `column` of each record from the records' timestamps; a column the schema
    /// does not have is left alone, as `JsonDecoder::with_record_timestamps` does.
    pub fn with_record_timestamps(mut self, column: &str) -> AvroDecoder {
        self.record_timestamp = self.record.fields.iter().position(|field| field.name == column);
        self
    }

    pub fn output_schema(&self) -> SchemaRef {
        Arc::clone(&self.output_schema)
    }

    pub fn decode(&self, records: &RawRecords) -> DecodeOutput {
        let rows = records.len();
        // A timestamp given to the wrong record would put a row in the wrong window unnoticed.
        if let Some(field) = self.record_timestamp {
            assert_eq!(
                records.timestamps.len(),
                rows,
                "field `{}` takes one timestamp per record",
                self.record.fields[field].name
            );
        }
        let text_bytes_hint = records.data.len().min(rows * TEXT_BYTES_PER_VALUE_GUESS);
        let mut columns: Vec<ColumnBuilder> = self
            .data_types
            .iter()
            .zip(&self.outputs)
            .filter(|(_, output)| output.is_some())
            .map(|(data_type, _)| ColumnBuilder::new(*data_type, rows, text_bytes_hint))
            .collect();
        let mut dead_letters = Vec::new();
        let mut slots = vec![Slot::Missing; self.data_types.len()];
        let mut good_rows = 0usize;
        let mut good_bytes = 0usize;
        for (record_index, record) in records.iter().enumerate() {
            if let Some(reason) = refusal_before_parsing(record, self.max_record_bytes, self.outputs_text, good_bytes) {
                dead_letters.push(DeadLetter { record_index, reason });
                continue;
            }
            let read = self.record.read_single_object(record, |field, value| slots[field] = slot(record, value));
            if let Err(error) = read {
                dead_letters.push(DeadLetter { record_index, reason: error.to_string() });
                continue;
            }
            if let Some(field) = self.record_timestamp {
                let name = &self.record.fields[field].name;
                match timestamp_slot(name, self.data_types[field], records.timestamps[record_index]) {
                    Ok(timestamp) => slots[field] = timestamp,
                    Err(reason) => {
                        dead_letters.push(DeadLetter { record_index, reason });
                        continue;
                    }
                }
            }
            for (slot, output) in slots.iter().zip(&self.outputs) {
                if let Some(output) = output {
                    columns[*output].push(*slot, record, &[], good_rows);
                }
            }
            good_rows += 1;
            good_bytes += record.len();
        }
        DecodeOutput { batch: finish_batch(self.output_schema(), columns, good_rows), dead_letters }
    }
}

/// A value as the column builders take it: a string as its byte range in the record, which
/// it borrows from (`read_single_object` slices it out of `record`).
fn slot(record: &[u8], value: Value) -> Slot {
    match value {
        Value::Null => Slot::Null,
        Value::Boolean(value) => Slot::Bool(value),
        Value::Int(value) => Slot::Int(i64::from(value)),
        Value::Long(value) => Slot::Int(value),
        Value::Float(value) => Slot::Float(f64::from(value)),
        Value::Double(value) => Slot::Float(value),
        Value::String(text) => {
            let start = text.as_ptr() as usize - record.as_ptr() as usize;
            debug_assert!(start + text.len() <= record.len(), "a string read from the record lies inside it");
            Slot::Text { start, end: start + text.len(), unescaped: false }
        }
    }
}
