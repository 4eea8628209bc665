//! Record formats: how a request body splits into records and how each record is checked.
//! JSON is the one format today; the `RecordFormat` trait is where a second (single-object
//! Avro) plugs in, with its own splitting and its own decoder as the check.

use std::path::Path;

use arrow_array::{Array, StringArray};
use serde_json::value::RawValue;
use sleet_exec::json::JsonDecoder;
use sleet_exec::RawRecords;
use sleet_plan::{DataType, Schema};

use crate::error::IngestError;

/// A record the server refuses, by its index in its request, and why (naming the field).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadRecord {
    pub index: usize,
    pub error: String,
}

/// A body that is not even a list of records: malformed JSON, a scalar where a record
/// belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBody(pub String);

/// One format's view of records. `check` must refuse exactly what the job's decoder would
/// turn into a dead letter, so that the server never writes a record its job cannot read.
pub trait RecordFormat: Send + Sync + 'static {
    /// The records of an HTTP body: one record, or a batch of them.
    fn split_body(&self, body: &[u8]) -> Result<RawRecords, BadBody>;
    /// Each record's key, in record order, or every record that would be a dead letter.
    fn check(&self, records: &RawRecords) -> Result<RawRecords, Vec<BadRecord>>;
}

/// JSON objects, checked by the decoder a job's `decode_json` runs, with the key field
/// required to be a (non-null) string.
pub struct JsonFormat {
    decoder: JsonDecoder,
    key_field: String,
}

impl JsonFormat {
    pub fn new(schema: &Schema, key_field: &str, max_record_bytes: u32) -> Result<Self, IngestError> {
        let key_problem = |problem| IngestError::KeyField { field: key_field.to_string(), problem };
        match schema.field(key_field) {
            None => return Err(key_problem("is not in the schema")),
            Some(field) if field.data_type != DataType::Utf8 => return Err(key_problem("is not declared utf8")),
            Some(_) => {}
        }
        // Only the key is projected: the decoder parses and type-checks every schema field
        // whatever the projection, so its dead letters are the job's.
        let decoder =
            JsonDecoder::new(schema, &[key_field.to_string()], max_record_bytes).map_err(IngestError::Decoder)?;
        Ok(JsonFormat { decoder, key_field: key_field.to_string() })
    }

    /// Records given one by one (a WebSocket message's), each the exact text of a JSON value.
    pub fn records_of<'a>(values: impl IntoIterator<Item = &'a RawValue>) -> RawRecords {
        let mut records = RawRecords::new();
        for value in values {
            records.push(value.get().as_bytes());
        }
        records
    }
}

impl RecordFormat for JsonFormat {
    fn split_body(&self, body: &[u8]) -> Result<RawRecords, BadBody> {
        let malformed = |error: serde_json::Error| BadBody(format!("malformed JSON: {error}"));
        let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
        if first == Some(&b'[') {
            let values: Vec<&RawValue> = serde_json::from_slice(body).map_err(malformed)?;
            if values.is_empty() {
                return Err(BadBody("the batch holds no records".to_string()));
            }
            Ok(Self::records_of(values))
        } else {
            let value: &RawValue = serde_json::from_slice(body).map_err(malformed)?;
            Ok(Self::records_of([value]))
        }
    }

    fn check(&self, records: &RawRecords) -> Result<RawRecords, Vec<BadRecord>> {
        let decoded = self.decoder.decode(records);
        let mut bad: Vec<BadRecord> = decoded
            .dead_letters
            .into_iter()
            .map(|dead| BadRecord { index: dead.record_index, error: dead.reason })
            .collect();
        let keys = decoded
            .batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("the key field is declared utf8, so its column is a StringArray");
        // The good records' rows are in record order, skipping the dead letters.
        let mut dead = bad.iter().map(|record| record.index).peekable();
        let mut good_indices = (0..records.len()).filter(|index| {
            if dead.peek() == Some(index) {
                dead.next();
                false
            } else {
                true
            }
        });
        let mut out = RawRecords::with_capacity(records.len(), keys.value_data().len());
        let mut null_keys = Vec::new();
        for row in 0..keys.len() {
            let index = good_indices.next().expect("one good record per decoded row");
            if keys.is_null(row) {
                null_keys.push(BadRecord {
                    index,
                    error: format!("field `{}`, the key, is missing or null; it must be a string", self.key_field),
                });
            } else {
                out.push(keys.value(row).as_bytes());
            }
        }
        if bad.is_empty() && null_keys.is_empty() {
            return Ok(out);
        }
        bad.extend(null_keys);
        bad.sort_by_key(|record| record.index);
        Err(bad)
    }
}

/// Reads a plan `Schema` from a JSON file, the form a job file's `decode_json` takes.
pub fn read_schema(path: &Path) -> Result<Schema, IngestError> {
    let text = std::fs::read(path).map_err(|source| IngestError::SchemaFile { path: path.to_path_buf(), source })?;
    serde_json::from_slice(&text)
        .map_err(|error| IngestError::SchemaJson { path: path.to_path_buf(), reason: error.to_string() })
}

#[cfg(test)]
mod tests {
    use sleet_plan::Field;

    use super::*;

    fn format() -> JsonFormat {
        let schema = Schema::new(vec![
            Field::new("gateway_id", DataType::Utf8).nullable(),
            Field::new("ts", DataType::Int64),
            Field::new("rate", DataType::Float64).nullable(),
        ]);
        JsonFormat::new(&schema, "gateway_id", 200).expect("a valid format")
    }

    /// Splits and checks `body`: the keys, or the indices of the bad records with the text
    /// their reason must contain.
    fn check(body: &str, expected: Result<Vec<&str>, Vec<(usize, &str)>>) {
        let format = format();
        let records = format.split_body(body.as_bytes()).expect("a well-formed body");
        match (format.check(&records), expected) {
            (Ok(keys), Ok(expected)) => {
                let keys: Vec<&[u8]> = keys.iter().collect();
                let expected: Vec<&[u8]> = expected.iter().map(|key| key.as_bytes()).collect();
                assert_eq!(keys, expected, "{body}");
            }
            (Err(bad), Err(expected)) => {
                assert_eq!(bad.len(), expected.len(), "{body}: {bad:?}");
                for (found, (index, reason)) in bad.iter().zip(expected) {
                    assert_eq!(found.index, index, "{body}: {bad:?}");
                    assert!(found.error.contains(reason), "{body}: record {index}: {}", found.error);
                }
            }
            (found, expected) => panic!("{body}: found {found:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn keys_come_in_record_order() {
        check(r#"{"gateway_id": "a", "ts": 1}"#, Ok(vec!["a"]));
        check(
            r#"[{"ts": 1, "gateway_id": "a\u00e9"}, {"gateway_id": "b", "ts": 2, "extra": [1, {"x": 2}]}]"#,
            Ok(vec!["aé", "b"]),
        );
    }

    #[test]
    fn bad_records_are_named_by_index_and_field() {
        check(
            r#"[{"gateway_id": "a", "ts": 1}, {"ts": 2}, {"gateway_id": "c", "ts": "three"}, {"gateway_id": null, "ts": 4}, {"gateway_id": 5, "ts": 5}]"#,
            Err(vec![(1, "`gateway_id`"), (2, "`ts`"), (3, "`gateway_id`"), (4, "`gateway_id`")]),
        );
        check(r#"[{"gateway_id": "a", "ts": 1}, 7, "x", []]"#, Err(vec![(1, "{"), (2, "{"), (3, "{")]));
        let long = format!(r#"[{{"gateway_id": "{}", "ts": 1}}]"#, "x".repeat(300));
        check(&long, Err(vec![(0, "over the limit of 200")]));
    }

    #[test]
    fn bodies_that_are_not_records_are_refused() {
        let format = format();
        for body in ["", "[", r#"{"gateway_id": "#, "[]", "[1,]", r#"{"a": 1} {"b": 2}"#] {
            assert!(format.split_body(body.as_bytes()).is_err(), "{body:?} should be refused");
        }
    }

    #[test]
    fn the_key_must_be_a_declared_string() {
        let schema = Schema::new(vec![Field::new("id", DataType::Int64)]);
        assert!(JsonFormat::new(&schema, "id", 100).is_err());
        assert!(JsonFormat::new(&schema, "missing", 100).is_err());
    }
}
