//! The schema's identity and the single-object encoding against values computed by another
//! implementation: the fingerprints, canonical forms and encoded bytes below were printed by
//! Python's `fastavro` 1.13.1 (`to_parsing_canonical_form`, `fingerprint(.., "CRC-64-AVRO")`,
//! `schemaless_writer` behind `C3 01` and the fingerprint), and the fingerprints of the
//! primitive schemas cross-checked with a separate Python transcription of the specification's
//! Rabin algorithm.

use proptest::prelude::*;
use sleet_avro::{crc64_avro, DatumError, EncodeError, ReadError, RecordSchema, SchemaError, Value, GATEWAY_SCHEMA};

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex")).collect()
}

const OPTIONAL_SCHEMA: &str = r#"{"type": "record", "name": "Opt", "fields": [
    {"name": "n", "type": ["null", "int"]},
    {"name": "s", "type": ["string", "null"], "default": "x"},
    {"name": "b", "type": "boolean", "doc": "ignored"},
    {"name": "f", "type": "float"},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}"#;

#[test]
fn fingerprints_match_fastavro_on_primitive_schemas() {
    // fastavro prints the fingerprint's bytes little-endian first: "8f5c393f1ad57572".
    for (schema, expected) in [
        ("\"int\"", 0x7275_d51a_3f39_5c8f_u64),
        ("\"long\"", 0xd054_e144_93f4_1db7),
        ("\"string\"", 0x8f01_4872_6345_03c7),
        ("\"null\"", 0x63dd_24e7_cc25_8f8a),
        ("\"double\"", 0x8e75_35c0_32ab_957e),
    ] {
        assert_eq!(crc64_avro(schema.as_bytes()), expected, "{schema}");
    }
}

#[test]
fn the_gateway_schema_has_fastavros_canonical_form_and_fingerprint() {
    let schema = RecordSchema::parse(GATEWAY_SCHEMA).expect("the shipped schema parses");
    assert_eq!(
        schema.canonical_form(),
        r#"{"name":"sleet.gateway.Reading","type":"record","fields":[{"name":"gateway_id","type":"string"},{"name":"date","type":"long"},{"name":"ipTx","type":"double"},{"name":"ipRx","type":"double"}]}"#
    );
    assert_eq!(schema.fingerprint().to_le_bytes().to_vec(), hex("8324552698899bda"));
}

#[test]
fn a_schema_of_every_supported_type_has_fastavros_fingerprint() {
    let schema = RecordSchema::parse(
        r#"{"type": "record", "name": "Wide", "namespace": "fuzz", "fields": [
        {"name": "s", "type": "string"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"},
        {"name": "ns", "type": ["null", "string"]}, {"name": "ni", "type": ["int", "null"]},
        {"name": "nd", "type": ["null", "double"]}, {"name": "nb", "type": ["boolean", "null"]}]}"#,
    )
    .expect("parses");
    assert_eq!(schema.fingerprint().to_le_bytes().to_vec(), hex("9172c97b0ea7b4e8"));
}

#[test]
fn encoded_records_are_fastavros_bytes() {
    let gateway = RecordSchema::parse(GATEWAY_SCHEMA).expect("parses");
    let mut out = Vec::new();
    let row = [Value::String("gw-17"), Value::Long(1_700_000_000_123), Value::Double(1234.5), Value::Double(-0.25)];
    gateway.encode_single_object(&row, &mut out).expect("encodes");
    assert_eq!(out, hex("c3018324552698899bda0a67772d3137f6a1abfef96200000000004a9340000000000000d0bf"));

    let optional = RecordSchema::parse(OPTIONAL_SCHEMA).expect("parses");
    assert_eq!(
        optional.canonical_form(),
        r#"{"name":"Opt","type":"record","fields":[{"name":"n","type":["null","int"]},{"name":"s","type":["string","null"]},{"name":"b","type":"boolean"},{"name":"f","type":"float"},{"name":"t","type":"long"}]}"#
    );
    out.clear();
    let row = [Value::Int(-3), Value::Null, Value::Boolean(true), Value::Float(1.5), Value::Long(-1)];
    optional.encode_single_object(&row, &mut out).expect("encodes");
    assert_eq!(out, hex("c3011f6f746d69cd4516020502010000c03f01"));
}

#[test]
fn unsupported_types_are_refused_naming_the_field() {
    let with = |field_type: &str| {
        format!(
            r#"{{"type":"record","name":"R","fields":[{{"name":"ok","type":"long"}},{{"name":"bad","type":{field_type}}}]}}"#
        )
    };
    for (field_type, shown) in [
        (r#"{"type":"array","items":"long"}"#, "array"),
        (r#"{"type":"map","values":"long"}"#, "map"),
        (r#"{"type":"record","name":"In","fields":[]}"#, "record"),
        (r#"{"type":"enum","name":"E","symbols":["A"]}"#, "enum"),
        (r#"{"type":"fixed","name":"F","size":4}"#, "fixed"),
        (r#"{"type":"bytes","logicalType":"decimal","precision":4}"#, "bytes (decimal)"),
        (r#""bytes""#, "bytes"),
        (r#"["null","long","string"]"#, "[\"null\",\"long\",\"string\"]"),
    ] {
        let error = RecordSchema::parse(&with(field_type)).expect_err(field_type);
        assert!(
            matches!(&error, SchemaError::Unsupported { field, found } if field == "bad" && found == shown),
            "{error}"
        );
    }
    let error = RecordSchema::parse(r#""long""#).expect_err("not a record");
    assert_eq!(error.to_string(), "the schema must be a record, found long");
    let error = RecordSchema::parse(
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"a","type":"int"}]}"#,
    )
    .expect_err("duplicate");
    assert_eq!(error.to_string(), "field `a`: appears twice");
}

/// Reads `record` with the gateway schema, returning the values as text.
fn read_gateway(record: &[u8]) -> Result<Vec<String>, DatumError> {
    let schema = RecordSchema::parse(GATEWAY_SCHEMA).expect("parses");
    let mut values = Vec::new();
    schema.read_single_object(record, |_, value| values.push(format!("{value:?}")))?;
    Ok(values)
}

#[test]
fn malformed_records_name_what_is_wrong() {
    let good = hex("c3018324552698899bda0a67772d3137f6a1abfef96200000000004a9340000000000000d0bf");
    assert_eq!(read_gateway(&good).expect("reads").len(), 4);
    let mut cases: Vec<(Vec<u8>, DatumError)> = vec![
        (b"{\"a\":1}".to_vec(), DatumError::NoMarker),
        (vec![0xc3], DatumError::ShortHeader(1)),
        (good[..7].to_vec(), DatumError::ShortHeader(7)),
        (
            [&good[..2], &[0u8; 8][..], &good[10..]].concat(),
            DatumError::WrongSchema { found: 0, expected: 0xda9b_8998_2655_2483 },
        ),
        ([&good[..], &[0u8][..]].concat(), DatumError::Trailing(1)),
    ];
    let field = |name: &str, problem| DatumError::Field { field: name.into(), problem };
    // The string's length says 5, two bytes follow.
    cases.push((good[..13].to_vec(), field("gateway_id", ReadError::Truncated { needed: 5, left: 2 })));
    // A string length of -1 (zig-zag 1).
    cases.push(([&good[..10], &[0x01][..]].concat(), field("gateway_id", ReadError::NegativeLength(-1))));
    // A length of i64::MAX must be refused before anything is sized by it.
    let huge = [&good[..10], &hex("feffffffffffffffff01")[..]].concat();
    cases.push((huge, field("gateway_id", ReadError::Truncated { needed: i64::MAX as u64, left: 0 })));
    // `date` as an 11-byte varint.
    let long_varint = [&good[..16], &[0xff; 10][..], &[0x01][..]].concat();
    cases.push((long_varint, field("date", ReadError::InvalidVarint(10))));
    // `ipRx` cut short.
    cases.push((good[..good.len() - 3].to_vec(), field("ipRx", ReadError::Truncated { needed: 8, left: 5 })));
    for (record, expected) in cases {
        assert_eq!(read_gateway(&record), Err(expected.clone()), "{expected}");
    }
}

#[test]
fn the_encoder_refuses_values_that_do_not_fit() {
    let schema = RecordSchema::parse(OPTIONAL_SCHEMA).expect("parses");
    let mut out = vec![7];
    let error = schema
        .encode_single_object(&[Value::Null, Value::Null, Value::Null, Value::Float(1.0), Value::Long(0)], &mut out)
        .expect_err("b is not nullable");
    assert_eq!(error, EncodeError::Type { field: "b".into(), expected: "boolean".into(), given: "null" });
    assert_eq!(out, vec![7], "nothing appended on error");
    let error = schema.encode_single_object(&[Value::Null], &mut out).expect_err("one value");
    assert_eq!(error.to_string(), "1 values given for the 5 fields of the schema");
}

/// A row of `OPTIONAL_SCHEMA` as the test writes and expects it back.
#[derive(Debug, Clone, PartialEq)]
struct OptionalRow {
    n: Option<i32>,
    s: Option<String>,
    b: bool,
    f: f32,
    t: i64,
}

fn optional_row() -> impl Strategy<Value = OptionalRow> {
    (any::<Option<i32>>(), any::<Option<String>>(), any::<bool>(), any::<f32>(), any::<i64>())
        .prop_map(|(n, s, b, f, t)| OptionalRow { n, s, b, f, t })
}

proptest! {
    #[test]
    fn what_is_encoded_reads_back(rows in proptest::collection::vec(optional_row(), 0..20)) {
        let schema = RecordSchema::parse(OPTIONAL_SCHEMA).expect("parses");
        for row in rows {
            let mut out = Vec::new();
            let values = [
                row.n.map_or(Value::Null, Value::Int),
                row.s.as_deref().map_or(Value::Null, Value::String),
                Value::Boolean(row.b),
                Value::Float(row.f),
                Value::Long(row.t),
            ];
            schema.encode_single_object(&values, &mut out).expect("encodes");
            let mut back = OptionalRow { n: None, s: None, b: false, f: 0.0, t: 0 };
            schema.read_single_object(&out, |field, value| match (field, value) {
                (0, Value::Int(n)) => back.n = Some(n),
                (1, Value::String(s)) => back.s = Some(s.to_string()),
                (2, Value::Boolean(b)) => back.b = b,
                (3, Value::Float(f)) => back.f = f,
                (4, Value::Long(t)) => back.t = t,
                (_, Value::Null) => {}
                other => panic!("unexpected {other:?}"),
            }).expect("reads");
            prop_assert_eq!(back.f.to_bits(), row.f.to_bits());
            prop_assert_eq!(OptionalRow { f: 0.0, ..back }, OptionalRow { f: 0.0, ..row });
        }
    }

    /// Any bytes: a value or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let schema = RecordSchema::parse(OPTIONAL_SCHEMA).expect("parses");
        let record = [&schema.single_object_header()[..], &tail[..]].concat();
        let _ = schema.read_single_object(&record, |_, _| {});
    }
}
