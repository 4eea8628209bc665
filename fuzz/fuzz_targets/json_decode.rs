//! `JsonDecoder` against `serde_json` as the reference reader of each record.
//!
//! Input: a config byte (which fields are nullable, a wide schema, the record size limit), a
//! projection byte, then records separated by '\n'.
//!
//! What the decoder promises, and so what is checked:
//! - it never panics; every record becomes exactly one row or one dead letter, dead letters in
//!   record order; the batch has the projected columns with the schema's types, one value per
//!   row, no null in a non-nullable column and no validity bitmap without a null;
//! - a record that serde_json reads as one object whose fields fit the schema (no schema key
//!   twice, every non-nullable field present and not null, every field of its type, numbers
//!   quoted or bare as the decoder documents) becomes a row holding exactly serde_json's
//!   values; one that does not fit becomes a dead letter;
//! - the decoder's documented leniency is bare number tokens: it takes whatever Rust's number
//!   parsers take within the JSON number characters (`01`, `1.`, `1e400`), where serde_json
//!   is strict. So a record the decoder accepts but serde_json refuses must become valid JSON
//!   once every bare number is replaced by `0`, with the same text, boolean and null values.
//! - skipped values nested deeper than 64 levels may be refused (serde_json goes to 128).

#![no_main]

use std::fmt;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::Array;
use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use sleet_exec::json::JsonDecoder;
use sleet_exec::RawRecords;
use sleet_fuzz as _;
use sleet_plan::{DataType, Field, Schema};

const FIELDS: [(&str, DataType); 5] = [
    ("name", DataType::Utf8),
    ("time", DataType::Int64),
    ("score", DataType::Float64),
    ("ok", DataType::Boolean),
    ("payload", DataType::Binary),
];
/// Extra fields of the wide schema: more than the decoder keeps on the stack.
const WIDE_EXTRA: usize = 16;
const RECORD_LIMITS: [u32; 4] = [65_536, 4096, 100, 8];
const NESTING_DEPTH_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Bytes(Vec<u8>),
    Int(i64),
    /// Bits, so -0.0 and 0.0 differ as they do on the wire.
    Float(u64),
    Bool(bool),
}

/// What the reference says the decoder must do with a record.
#[derive(Debug)]
enum Expect {
    /// A row with these values, one per schema field.
    Row(Vec<Cell>),
    Dead,
    /// Either is allowed (nesting over the decoder's limit, or `-0` in an int64 field).
    Either,
}

/// A top-level object's entries in order, duplicates kept (a `Value` would merge them).
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// The decoder's rule for an int64 written as a string: optional '-', 1 to 19 digits, in range.
fn quoted_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The decoder's rule for a float64 written as a string: JSON number characters, Rust's parser.
fn quoted_float(text: &str) -> Option<f64> {
    if !text.bytes().all(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
        return None;
    }
    text.parse().ok()
}

/// Where a byte of JSON text lies, read one byte at a time: inside a string or not.
#[derive(Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Takes the next byte; true when it lies outside every string (quotes count as inside).
    fn outside(&mut self, byte: u8) -> bool {
        if self.inside {
            match (self.escaped, byte) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.inside = false,
                _ => {}
            }
            return false;
        }
        self.inside = byte == b'"';
        !self.inside
    }
}

/// The deepest bracket nesting outside strings (the top-level object counts as 1).
fn raw_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut strings) = (0usize, 0usize, Strings::default());
    for &byte in bytes {
        if !strings.outside(byte) {
            continue;
        }
        match byte {
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The record with every bare number token (a run of JSON number characters starting with
/// '-' or a digit, outside strings) replaced by `0`.
fn zero_bare_numbers(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut strings = Strings::default();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if strings.outside(byte) && (byte == b'-' || byte.is_ascii_digit()) {
            while index < bytes.len() && matches!(bytes[index], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                index += 1;
            }
            out.push(b'0');
            continue;
        }
        out.push(byte);
        index += 1;
    }
    out
}

/// The cell a schema field takes from its JSON value, `None` when the value does not fit.
/// `Some(None)` marks the one value the decoder may take or refuse (`-0` in an int64 field).
fn cell_of(data_type: DataType, value: &Value) -> Option<Option<Cell>> {
    Some(Some(match (data_type, value) {
        (_, Value::Null) => Cell::Null,
        (DataType::Utf8 | DataType::Binary, Value::String(text)) => Cell::Bytes(text.as_bytes().to_vec()),
        (DataType::Boolean, Value::Bool(value)) => Cell::Bool(*value),
        (DataType::Int64, Value::Number(number)) => match number.as_i64() {
            Some(value) => Cell::Int(value),
            // serde_json reads `-0` as the float -0.0; the decoder reads it as 0 but refuses `-0.0`.
            None if number.as_f64().is_some_and(|value| value == 0.0 && value.is_sign_negative()) => return Some(None),
            None => return None,
        },
        (DataType::Int64, Value::String(text)) => Cell::Int(quoted_integer(text)?),
        (DataType::Float64, Value::Number(number)) => Cell::Float(number.as_f64()?.to_bits()),
        (DataType::Float64, Value::String(text)) => Cell::Float(quoted_float(text)?.to_bits()),
        _ => return None,
    }))
}

fn expect(schema: &Schema, record: &[u8], max_record_bytes: u32) -> Expect {
    if record.len() > max_record_bytes as usize {
        return Expect::Dead;
    }
    let Ok(Entries(entries)) = serde_json::from_slice::<Entries>(record) else {
        return Expect::Dead;
    };
    let mut either = raw_depth(record) > NESTING_DEPTH_MAX + 1;
    let mut cells = Vec::with_capacity(schema.fields.len());
    for field in &schema.fields {
        let mut found = entries.iter().filter(|(key, _)| *key == field.name);
        let value = found.next().map(|(_, value)| value);
        if found.next().is_some() {
            return Expect::Dead;
        }
        let cell = match value {
            None => Cell::Null,
            Some(value) => match cell_of(field.data_type, value) {
                None => return Expect::Dead,
                Some(None) => {
                    either = true;
                    cells.push(Cell::Null);
                    continue;
                }
                Some(Some(cell)) => cell,
            },
        };
        if cell == Cell::Null && !field.nullable {
            return Expect::Dead;
        }
        cells.push(cell);
    }
    if either {
        Expect::Either
    } else {
        Expect::Row(cells)
    }
}

/// A record the decoder took although serde_json refuses it: only its number leniency may
/// explain that, so with bare numbers zeroed it must be JSON, and its other values the decoder's.
fn check_lenient(schema: &Schema, record: &[u8], row: &[Option<Cell>]) {
    let zeroed = zero_bare_numbers(record);
    let entries = match serde_json::from_slice::<Entries>(&zeroed) {
        Ok(Entries(entries)) => entries,
        Err(error) => panic!(
            "the decoder accepted {:?}, which is not JSON even with bare numbers zeroed ({:?}: {error})",
            String::from_utf8_lossy(record),
            String::from_utf8_lossy(&zeroed)
        ),
    };
    for (field, decoded) in schema.fields.iter().zip(row) {
        let mut found = entries.iter().filter(|(key, _)| *key == field.name);
        let value = found.next().map(|(_, value)| value);
        assert!(found.next().is_none(), "the decoder accepted a duplicate `{}` in {record:?}", field.name);
        let Some(decoded) = decoded else { continue };
        let reference = match value {
            None | Some(Value::Null) => Cell::Null,
            Some(Value::Number(_)) => continue,
            Some(value) => match cell_of(field.data_type, value) {
                Some(Some(cell)) => cell,
                _ => continue,
            },
        };
        assert_eq!(decoded, &reference, "field `{}` of {:?}", field.name, String::from_utf8_lossy(record));
    }
}

fn schema_of(config: u8) -> Schema {
    let mut fields: Vec<Field> = FIELDS
        .iter()
        .enumerate()
        .map(|(index, (name, data_type))| {
            let field = Field::new(*name, *data_type);
            if config & (1 << index) != 0 {
                field.nullable()
            } else {
                field
            }
        })
        .collect();
    if config & 0x20 != 0 {
        fields.extend((0..WIDE_EXTRA).map(|index| Field::new(format!("x{index}"), DataType::Int64).nullable()));
    }
    Schema::new(fields)
}

/// Row `row` of the batch, one entry per schema field: `None` for fields not projected.
fn decoded_row(
    schema: &Schema,
    batch: &arrow_array::RecordBatch,
    projection: &[String],
    row: usize,
) -> Vec<Option<Cell>> {
    schema
        .fields
        .iter()
        .map(|field| {
            let position = projection.iter().position(|name| *name == field.name)?;
            let column = batch.column(position);
            if column.is_null(row) {
                return Some(Cell::Null);
            }
            Some(match field.data_type {
                DataType::Utf8 => Cell::Bytes(column.as_string::<i32>().value(row).as_bytes().to_vec()),
                DataType::Binary => Cell::Bytes(column.as_binary::<i32>().value(row).to_vec()),
                DataType::Int64 => Cell::Int(column.as_primitive::<Int64Type>().value(row)),
                DataType::Float64 => Cell::Float(column.as_primitive::<Float64Type>().value(row).to_bits()),
                DataType::Boolean => Cell::Bool(column.as_boolean().value(row)),
            })
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [config, projection_mask, body @ ..] = data else { return };
    let schema = schema_of(*config);
    let max_record_bytes = RECORD_LIMITS[usize::from(config >> 6)];
    // Projection order follows the schema, as the planner asks for it.
    let projection: Vec<String> = schema
        .fields
        .iter()
        .enumerate()
        .filter(|(index, _)| projection_mask & (1 << (index % 8)) != 0)
        .map(|(_, field)| field.name.clone())
        .collect();
    let decoder =
        JsonDecoder::new(&schema, &projection, max_record_bytes).expect("every projected name is in the schema");

    let lines: Vec<&[u8]> = if body.is_empty() { Vec::new() } else { body.split(|&byte| byte == b'\n').collect() };
    let mut records = RawRecords::new();
    for line in &lines {
        records.push(line);
    }
    let output = decoder.decode(&records);
    let batch = &output.batch;

    // Shape: one row or one dead letter per record, in order; the schema's columns and types.
    assert_eq!(batch.num_rows() + output.dead_letters.len(), lines.len(), "rows + dead letters = records");
    assert!(output.dead_letters.windows(2).all(|pair| pair[0].record_index < pair[1].record_index));
    assert!(output.dead_letters.iter().all(|letter| letter.record_index < lines.len() && !letter.reason.is_empty()));
    assert_eq!(batch.schema(), decoder.output_schema());
    assert_eq!(batch.num_columns(), projection.len());
    for (column, name) in batch.columns().iter().zip(&projection) {
        let field = schema.field(name).expect("projected");
        assert_eq!(column.data_type(), &sleet_exec::types::to_arrow_type(field.data_type));
        assert_eq!(column.len(), batch.num_rows());
        if !field.nullable {
            assert_eq!(column.null_count(), 0, "no null in non-nullable `{name}`");
        }
        assert!(column.nulls().is_none_or(|nulls| nulls.null_count() > 0), "a bitmap only where a null occurs");
    }

    // Values: each record against serde_json's reading of it.
    let mut dead = output.dead_letters.iter().map(|letter| letter.record_index).peekable();
    let mut row = 0;
    for (index, record) in lines.iter().enumerate() {
        let decoded = if dead.peek() == Some(&index) {
            dead.next();
            None
        } else {
            row += 1;
            Some(decoded_row(&schema, batch, &projection, row - 1))
        };
        match (expect(&schema, record, max_record_bytes), decoded) {
            (Expect::Row(cells), Some(decoded)) => {
                for ((field, cell), decoded) in schema.fields.iter().zip(&cells).zip(&decoded) {
                    if let Some(decoded) = decoded {
                        assert_eq!(decoded, cell, "field `{}` of {:?}", field.name, String::from_utf8_lossy(record));
                    }
                }
            }
            (Expect::Row(cells), None) => {
                let reason = &output.dead_letters.iter().find(|letter| letter.record_index == index).unwrap().reason;
                panic!(
                    "{:?} fits the schema as {cells:?} but is a dead letter: {reason}",
                    String::from_utf8_lossy(record)
                )
            }
            (Expect::Dead, Some(decoded)) => {
                if serde_json::from_slice::<Entries>(record).is_ok() || record.len() > max_record_bytes as usize {
                    panic!("{:?} does not fit the schema but decoded as {decoded:?}", String::from_utf8_lossy(record));
                }
                check_lenient(&schema, record, &decoded);
            }
            (Expect::Dead, None) | (Expect::Either, _) => {}
        }
    }
});
