//! `AvroDecoder` (through `sleet_avro::RecordSchema::read_single_object`) on arbitrary bytes,
//! and the encoder → decoder round trip.
//!
//! Input: a config byte, a projection byte, then the body.
//! - config bit 0: the schema, the gateway's or a wide one (every supported type, nullable
//!   both ways round, `int` and `float` beside `long` and `double`);
//! - config bit 1: the mode. Raw: the body is records, each a length byte then that many
//!   bytes, and with config bit 2 each record gets the schema's 10-byte header in front so
//!   the fuzzer spends its time past the fingerprint. Round trip: the body is turned into
//!   rows (`arbitrary`), encoded, decoded, and the columns must hold the rows;
//! - config bits 6-7: the record size limit.
//!
//! What is checked, beyond no panic and no allocation the input does not pay for: every
//! record is one row or one dead letter, in order, with a reason; the batch has the decoder's
//! schema, no null in a non-nullable column; decoding with the projection gives the full
//! decode's columns; a decoded row re-encodes (with the encoder) to a record no longer than
//! the one it came from (varints may be padded on the wire, never shortened) that decodes to
//! the same row; in the round trip, the rows come back exactly (floats by their bits).

#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use libfuzzer_sys::fuzz_target;
use sleet_avro::{AvroType, RecordSchema, Value};
use sleet_exec::avro::AvroDecoder;
use sleet_exec::RawRecords;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;

const WIDE_SCHEMA: &str = r#"{"type": "record", "name": "Wide", "namespace": "fuzz", "fields": [
    {"name": "s", "type": "string"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"},
    {"name": "ns", "type": ["null", "string"]}, {"name": "ni", "type": ["int", "null"]},
    {"name": "nd", "type": ["null", "double"]}, {"name": "nb", "type": ["boolean", "null"]}]}"#;
const RECORD_LIMITS: [u32; 4] = [65_536, 4096, 64, 8];
/// The two schemas, parsed once rather than for every input.
static SCHEMAS: OnceLock<[(RecordSchema, serde_json::Value); 2]> = OnceLock::new();

/// One decoded value, comparable across decodes (floats by bits, as the wire has them).
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Text(String),
    Int(i64),
    Float(u64),
    Bool(bool),
}

fn cells(batch: &RecordBatch) -> Vec<Vec<Cell>> {
    (0..batch.num_rows())
        .map(|row| {
            batch
                .columns()
                .iter()
                .map(|column| {
                    if column.is_null(row) {
                        return Cell::Null;
                    }
                    match column.data_type() {
                        arrow_schema::DataType::Utf8 => Cell::Text(column.as_string::<i32>().value(row).to_string()),
                        arrow_schema::DataType::Int64 => Cell::Int(column.as_primitive::<Int64Type>().value(row)),
                        arrow_schema::DataType::Float64 => {
                            Cell::Float(column.as_primitive::<Float64Type>().value(row).to_bits())
                        }
                        arrow_schema::DataType::Boolean => Cell::Bool(column.as_boolean().value(row)),
                        other => panic!("a column of type {other}"),
                    }
                })
                .collect()
        })
        .collect()
}

/// A row of cells (every field, schema order) as the encoder takes it. `int` and `float`
/// columns hold values widened from 32 bits, which narrow back exactly.
fn values<'a>(schema: &RecordSchema, row: &'a [Cell]) -> Vec<Value<'a>> {
    schema
        .fields
        .iter()
        .zip(row)
        .map(|(field, cell)| match (field.avro_type, cell) {
            (_, Cell::Null) => Value::Null,
            (AvroType::String, Cell::Text(text)) => Value::String(text),
            (AvroType::Int, Cell::Int(value)) => Value::Int(i32::try_from(*value).expect("an int column holds i32s")),
            (AvroType::Long, Cell::Int(value)) => Value::Long(*value),
            (AvroType::Float, Cell::Float(bits)) => Value::Float(f64::from_bits(*bits) as f32),
            (AvroType::Double, Cell::Float(bits)) => Value::Double(f64::from_bits(*bits)),
            (AvroType::Boolean, Cell::Bool(value)) => Value::Boolean(*value),
            (avro_type, cell) => panic!("field `{}` ({}) decoded as {cell:?}", field.name, avro_type.name()),
        })
        .collect()
}

/// A row of arbitrary values for the round trip, as the encoder takes them and as the
/// decoder must give them back.
fn arbitrary_row(schema: &RecordSchema, input: &mut Unstructured) -> arbitrary::Result<Vec<Cell>> {
    schema
        .fields
        .iter()
        .map(|field| {
            if field.is_nullable() && bool::arbitrary(input)? {
                return Ok(Cell::Null);
            }
            Ok(match field.avro_type {
                AvroType::String => Cell::Text(String::arbitrary(input)?),
                AvroType::Int => Cell::Int(i64::from(i32::arbitrary(input)?)),
                AvroType::Long => Cell::Int(i64::arbitrary(input)?),
                AvroType::Float => Cell::Float(f64::from(f32::arbitrary(input)?).to_bits()),
                AvroType::Double => Cell::Float(f64::arbitrary(input)?.to_bits()),
                AvroType::Boolean => Cell::Bool(bool::arbitrary(input)?),
            })
        })
        .collect()
}

/// Decodes `records`, checks the output's shape, and returns its rows and dead records.
fn decode(
    schema_json: &serde_json::Value,
    projection: &[String],
    limit: u32,
    records: &RawRecords,
) -> (Vec<Vec<Cell>>, Vec<usize>) {
    let decoder = AvroDecoder::new(schema_json, projection, limit).expect("the projection names fields");
    let output = decoder.decode(records);
    assert_eq!(output.batch.schema(), decoder.output_schema());
    assert_eq!(output.batch.num_rows() + output.dead_letters.len(), records.len(), "rows + dead letters = records");
    assert!(output.dead_letters.windows(2).all(|pair| pair[0].record_index < pair[1].record_index));
    assert!(output.dead_letters.iter().all(|letter| letter.record_index < records.len() && !letter.reason.is_empty()));
    for (column, field) in output.batch.columns().iter().zip(output.batch.schema().fields()) {
        if !field.is_nullable() {
            assert_eq!(column.null_count(), 0, "a null in non-nullable `{}`", field.name());
        }
    }
    let dead = output.dead_letters.iter().map(|letter| letter.record_index).collect();
    (cells(&output.batch), dead)
}

fuzz_target!(|data: &[u8]| {
    let [config, projection_mask, body @ ..] = data else { return };
    let (schema, schema_json) = &SCHEMAS.get_or_init(|| {
        [sleet_avro::GATEWAY_SCHEMA, WIDE_SCHEMA].map(|text| {
            let schema = RecordSchema::parse(text).expect("the target's schemas parse");
            (schema, serde_json::from_str(text).expect("JSON"))
        })
    })[usize::from(config & 1)];
    let limit = RECORD_LIMITS[usize::from(config >> 6)];
    let all: Vec<String> = schema.fields.iter().map(|field| field.name.clone()).collect();
    let projected: Vec<usize> = (0..all.len()).filter(|index| projection_mask & (1 << (index % 8)) != 0).collect();
    let projection: Vec<String> = projected.iter().map(|&index| all[index].clone()).collect();

    let mut records = RawRecords::new();
    let mut round_trip_rows = Vec::new();
    if config & 2 == 0 {
        let header = schema.single_object_header();
        let mut rest = body;
        while let [length, tail @ ..] = rest {
            let (record, after) = tail.split_at(usize::from(*length).min(tail.len()));
            let framed = if config & 4 != 0 { [&header[..], record].concat() } else { record.to_vec() };
            records.push(&framed);
            rest = after;
        }
    } else {
        let mut input = Unstructured::new(body);
        let mut encoded = Vec::new();
        while !input.is_empty() {
            let Ok(row) = arbitrary_row(schema, &mut input) else { break };
            encoded.clear();
            schema.encode_single_object(&values(schema, &row), &mut encoded).expect("arbitrary rows fit the schema");
            records.push(&encoded);
            round_trip_rows.push((row, encoded.len()));
        }
    }

    let (rows, dead) = decode(schema_json, &all, limit, &records);
    let (projected_rows, projected_dead) = decode(schema_json, &projection, limit, &records);
    assert_eq!(projected_dead, dead, "the projection changes no record's fate");
    for (full, projected_row) in rows.iter().zip(&projected_rows) {
        let expected: Vec<Cell> = projected.iter().map(|&index| full[index].clone()).collect();
        assert_eq!(projected_row, &expected, "the projection's columns are the full decode's");
    }

    // Each good row re-encodes to a record no longer than its own that decodes to it again.
    let good: Vec<usize> = (0..records.len()).filter(|index| !dead.contains(index)).collect();
    let mut again = RawRecords::new();
    let mut encoded = Vec::new();
    for (row, &index) in rows.iter().zip(&good) {
        encoded.clear();
        schema.encode_single_object(&values(schema, row), &mut encoded).expect("a decoded row fits its schema");
        assert!(encoded.len() <= records.get(index).len(), "re-encoding record {index} made it longer");
        again.push(&encoded);
    }
    let (rows_again, dead_again) = decode(schema_json, &all, u32::MAX, &again);
    assert!(dead_again.is_empty(), "a re-encoded row was refused");
    assert_eq!(rows_again, rows);

    if config & 2 != 0 {
        let expected: Vec<Vec<Cell>> = round_trip_rows
            .iter()
            .filter(|(_, length)| *length <= limit as usize)
            .map(|(row, _)| row.clone())
            .collect();
        assert_eq!(rows, expected, "the round trip gives the rows back");
    }
});
