//! Record formats: how a request body splits into records and how each record is checked.
//! `JsonFormat` (JSON objects, one or an array) and `AvroFormat` (single-object Avro records,
//! length-prefixed: `sleet_avro::framed`), each checked by the decoder the job runs, behind
//! `RecordFormat`; `Format` is the server's one of them.

use std::path::Path;

use arrow_array::{Array, StringArray};
use serde_json::value::RawValue;
use sleet_avro::framed::framed_records;
use sleet_avro::{AvroType, RecordSchema, HEADER_BYTES, MARKER};
use sleet_exec::avro::AvroDecoder;
use sleet_exec::json::{DecodeOutput, JsonDecoder};
use sleet_exec::RawRecords;
use sleet_plan::{DataType, Schema};

use crate::error::IngestError;

/// The `Content-Type` of an HTTP body of Avro records (`docs/ingest.md`).
pub use sleet_avro::framed::CONTENT_TYPE as AVRO_BATCH_CONTENT_TYPE;

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
        keys_of(records, self.decoder.decode(records), &self.key_field, |_, reason| reason)
    }
}

/// The keys of the good records of `decoded` (the key field projected alone), or every bad
/// record: the decoder's dead letters (their reasons passed through `explain` with the
/// record), and records whose key is null.
fn keys_of(
    records: &RawRecords,
    decoded: DecodeOutput,
    key_field: &str,
    explain: impl Fn(&[u8], String) -> String,
) -> Result<RawRecords, Vec<BadRecord>> {
    let mut bad: Vec<BadRecord> = decoded
        .dead_letters
        .into_iter()
        .map(|dead| BadRecord { index: dead.record_index, error: explain(records.get(dead.record_index), dead.reason) })
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
                error: format!("field `{key_field}`, the key, is missing or null; it must be a string"),
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

/// Single-object Avro records of one schema, framed by `sleet_avro::framed`, checked by the
/// decoder a job's `decode_avro` runs with that schema.
pub struct AvroFormat {
    decoder: AvroDecoder,
    record: RecordSchema,
    key_field: String,
}

impl AvroFormat {
    /// `schema` is the `.avsc` JSON, as a job file's `decode_avro` holds it.
    pub fn new(schema: &serde_json::Value, key_field: &str, max_record_bytes: u32) -> Result<Self, IngestError> {
        let record = RecordSchema::from_json(schema).map_err(|error| IngestError::AvroSchema(error.to_string()))?;
        let key_problem = |problem| IngestError::KeyField { field: key_field.to_string(), problem };
        match record.fields.iter().find(|field| field.name == key_field) {
            None => return Err(key_problem("is not in the schema")),
            Some(field) if field.avro_type != AvroType::String => return Err(key_problem("is not an Avro string")),
            Some(_) => {}
        }
        // As for JSON: the decoder reads and checks every field whatever the projection.
        let decoder =
            AvroDecoder::new(schema, &[key_field.to_string()], max_record_bytes).map_err(IngestError::Decoder)?;
        Ok(AvroFormat { decoder, record, key_field: key_field.to_string() })
    }

    /// The dead letter's reason, said plainly when the record carries another schema's
    /// fingerprint (the commonest mistake: a client built with an older schema).
    fn explain(&self, record: &[u8], reason: String) -> String {
        match record.get(..HEADER_BYTES) {
            Some(header) if header[..2] == MARKER && header != self.record.single_object_header() => {
                let mut found = [0u8; 8];
                found.copy_from_slice(&header[2..]);
                format!(
                    "the fingerprint {:#018x} does not match the schema's {:#018x} ({}): written with another schema",
                    u64::from_le_bytes(found),
                    self.record.fingerprint(),
                    self.record.full_name
                )
            }
            _ => reason,
        }
    }
}

impl RecordFormat for AvroFormat {
    fn split_body(&self, body: &[u8]) -> Result<RawRecords, BadBody> {
        let mut records = RawRecords::with_capacity(0, body.len());
        for record in framed_records(body) {
            let record =
                record.map_err(|error| BadBody(format!("not a sequence of length-prefixed records: {error}")))?;
            records.push(record);
        }
        if records.is_empty() {
            return Err(BadBody("the batch holds no records".to_string()));
        }
        Ok(records)
    }

    fn check(&self, records: &RawRecords) -> Result<RawRecords, Vec<BadRecord>> {
        keys_of(records, self.decoder.decode(records), &self.key_field, |record, reason| self.explain(record, reason))
    }
}

/// The server's format, chosen by `--format`.
pub enum Format {
    Json(JsonFormat),
    Avro(AvroFormat),
}

impl Format {
    /// Reads the schema file `--format` asks for: a plan schema for JSON, an `.avsc` for Avro.
    pub fn open(avro: bool, schema: &Path, key_field: &str, max_record_bytes: u32) -> Result<Format, IngestError> {
        if avro {
            let text = std::fs::read(schema)
                .map_err(|source| IngestError::SchemaFile { path: schema.to_path_buf(), source })?;
            let json: serde_json::Value = serde_json::from_slice(&text)
                .map_err(|error| IngestError::SchemaJson { path: schema.to_path_buf(), reason: error.to_string() })?;
            Ok(Format::Avro(AvroFormat::new(&json, key_field, max_record_bytes)?))
        } else {
            Ok(Format::Json(JsonFormat::new(&read_schema(schema)?, key_field, max_record_bytes)?))
        }
    }

    pub fn is_avro(&self) -> bool {
        matches!(self, Format::Avro(_))
    }
}

impl RecordFormat for Format {
    fn split_body(&self, body: &[u8]) -> Result<RawRecords, BadBody> {
        match self {
            Format::Json(format) => format.split_body(body),
            Format::Avro(format) => format.split_body(body),
        }
    }

    fn check(&self, records: &RawRecords) -> Result<RawRecords, Vec<BadRecord>> {
        match self {
            Format::Json(format) => format.check(records),
            Format::Avro(format) => format.check(records),
        }
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

    mod avro {
        use sleet_avro::framed::push_framed;
        use sleet_avro::{RecordSchema, Value};

        use super::super::*;

        const SCHEMA: &str = r#"{"type": "record", "name": "Reading", "namespace": "test", "fields": [
            {"name": "gateway_id", "type": ["null", "string"]}, {"name": "ts", "type": "long"}]}"#;

        fn format() -> AvroFormat {
            let json: serde_json::Value = serde_json::from_str(SCHEMA).expect("JSON");
            AvroFormat::new(&json, "gateway_id", 64).expect("a valid format")
        }

        fn record(schema: &str, key: Option<&str>, ts: i64) -> Vec<u8> {
            let schema = RecordSchema::parse(schema).expect("a schema");
            let mut out = Vec::new();
            let key = key.map_or(Value::Null, Value::String);
            schema.encode_single_object(&[key, Value::Long(ts)], &mut out).expect("values of the schema");
            out
        }

        fn body(records: &[Vec<u8>]) -> Vec<u8> {
            let mut body = Vec::new();
            for record in records {
                push_framed(record, &mut body);
            }
            body
        }

        /// The indices of the bad records of `records` with the text each reason must hold.
        fn check_bad(records: &[Vec<u8>], expected: &[(usize, &str)]) {
            let format = format();
            let split = format.split_body(&body(records)).expect("well framed");
            let bad = format.check(&split).expect_err("bad records");
            assert_eq!(bad.len(), expected.len(), "{bad:?}");
            for (found, (index, reason)) in bad.iter().zip(expected) {
                assert_eq!(found.index, *index, "{bad:?}");
                assert!(found.error.contains(reason), "record {index}: {}", found.error);
            }
        }

        #[test]
        fn keys_come_in_record_order() {
            let format = format();
            let records = format
                .split_body(&body(&[record(SCHEMA, Some("a"), 1), record(SCHEMA, Some("bé"), -2)]))
                .expect("well framed");
            let keys = format.check(&records).expect("good records");
            assert_eq!(keys.iter().collect::<Vec<_>>(), vec![&b"a"[..], "bé".as_bytes()]);
        }

        #[test]
        fn bad_records_are_named_by_index_and_reason() {
            let good = record(SCHEMA, Some("a"), 1);
            let other = SCHEMA.replace(r#""ts", "type": "long""#, r#""ts", "type": "int""#);
            let mut truncated = good.clone();
            truncated.pop();
            let mut trailing = good.clone();
            trailing.push(0);
            let oversized = record(SCHEMA, Some(&"x".repeat(80)), 1);
            check_bad(
                &[
                    good.clone(),
                    b"{\"gateway_id\": \"a\"}".to_vec(),
                    record(&other, Some("a"), 1),
                    truncated,
                    trailing,
                    oversized,
                    record(SCHEMA, None, 1),
                    Vec::new(),
                ],
                &[
                    (1, "marker"),
                    (2, "does not match the schema's"),
                    (3, "field `ts`: truncated"),
                    (4, "1 bytes left"),
                    (5, "over the limit of 64"),
                    (6, "`gateway_id`, the key, is missing or null"),
                    (7, "truncated header"),
                ],
            );
        }

        #[test]
        fn broken_framing_refuses_the_body() {
            let format = format();
            let good = body(&[record(SCHEMA, Some("a"), 1)]);
            for (bad, reason) in [
                (Vec::new(), "no records"),
                (good[..good.len() - 1].to_vec(), "record 0: its length prefix at byte 0 says"),
                ([good.clone(), vec![0, 0]].concat(), "record 1: its length prefix at byte"),
            ] {
                let BadBody(error) = format.split_body(&bad).expect_err("refused");
                assert!(error.contains(reason), "{bad:?}: {error}");
            }
        }

        #[test]
        fn the_key_must_be_a_string_field() {
            let json: serde_json::Value = serde_json::from_str(SCHEMA).expect("JSON");
            assert!(AvroFormat::new(&json, "ts", 64).is_err());
            assert!(AvroFormat::new(&json, "missing", 64).is_err());
        }
    }
}
