//! The Avro decoder against two references: the rows the test encoded (with `sleet-avro`'s
//! encoder, itself checked against fastavro's bytes in that crate), and the JSON decoder on
//! the same logical rows written as JSON by `serde_json`.

use crate::avro::AvroDecoder;
use crate::json::{DeadLetter, JsonDecoder};
use crate::pipeline::{StageInputData, StagePipeline};
use crate::RawRecords;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use proptest::prelude::*;
use serde_json::json;
use sleet_avro::{RecordSchema, Value};
use sleet_plan::avro::decoded_schema;
use sleet_plan::{
    EventTimeSource, KafkaSourceSpec, KafkaStart, PhysicalOp, SinkSpec, SourceSpec, StageId, StageInput, StageOutput,
    StagePlan,
};

fn gateway_json() -> serde_json::Value {
    serde_json::from_str(sleet_avro::GATEWAY_SCHEMA).expect("the shipped schema is JSON")
}

/// Every supported type, nullable both ways round.
fn wide_json() -> serde_json::Value {
    json!({"type": "record", "name": "Wide", "namespace": "t", "fields": [
        {"name": "id", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ratio", "type": "float"},
        {"name": "value", "type": ["null", "double"]},
        {"name": "flag", "type": ["boolean", "null"]},
        {"name": "note", "type": ["null", "string"]}]})
}

fn names(schema: &RecordSchema) -> Vec<String> {
    schema.fields.iter().map(|field| field.name.clone()).collect()
}

#[derive(Debug, Clone)]
struct WideRow {
    id: String,
    count: i32,
    at: i64,
    ratio: f32,
    value: Option<f64>,
    flag: Option<bool>,
    note: Option<String>,
}

impl WideRow {
    fn values(&self) -> [Value<'_>; 7] {
        [
            Value::String(&self.id),
            Value::Int(self.count),
            Value::Long(self.at),
            Value::Float(self.ratio),
            self.value.map_or(Value::Null, Value::Double),
            self.flag.map_or(Value::Null, Value::Boolean),
            self.note.as_deref().map_or(Value::Null, Value::String),
        ]
    }

    fn as_json(&self) -> String {
        json!({"id": self.id, "count": self.count, "at": self.at, "ratio": f64::from(self.ratio),
               "value": self.value, "flag": self.flag, "note": self.note})
        .to_string()
    }
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("JSON has no NaN or infinity", |value| value.is_finite()),
        Just(0.0),
        Just(-0.5)
    ]
}

fn wide_row() -> impl Strategy<Value = WideRow> {
    (
        "[a-z0-9é\"\\\\ ]{0,12}",
        any::<i32>(),
        any::<i64>(),
        any::<f32>().prop_filter("finite", |value| value.is_finite()),
        proptest::option::of(finite_f64()),
        any::<Option<bool>>(),
        proptest::option::of("[ -~]{0,8}"),
    )
        .prop_map(|(id, count, at, ratio, value, flag, note)| WideRow { id, count, at, ratio, value, flag, note })
}

/// A malformed record of the wide schema, and a fragment its dead letter's reason must hold.
fn malformed(schema: &RecordSchema, kind: u8, good: &[u8]) -> (Vec<u8>, String) {
    let header = schema.single_object_header();
    match kind % 6 {
        0 => (b"{\"id\": \"x\"}".to_vec(), "does not start with the marker C3 01".into()),
        1 => ([&header[..2], &[9u8; 8][..], &good[10..]].concat(), "fingerprint 0x0909090909090909".into()),
        2 => (good[..good.len() - 1].to_vec(), "field `".into()),
        3 => ([good, &[0u8][..]].concat(), "1 bytes left after the last field".into()),
        4 => ([&header[..], &[0x01][..]].concat(), "field `id`: negative string length -1".into()),
        _ => ([&header[..], &[0x80; 11][..]].concat(), "field `id`: invalid varint".into()),
    }
}

fn column_values(batch: &RecordBatch) -> Vec<Vec<String>> {
    batch
        .columns()
        .iter()
        .map(|column| (0..column.len()).map(|row| arrow_cast_display(column.as_ref(), row)).collect())
        .collect()
}

fn arrow_cast_display(column: &dyn Array, row: usize) -> String {
    if column.is_null(row) {
        return "null".into();
    }
    match column.data_type() {
        arrow_schema::DataType::Utf8 => column.as_string::<i32>().value(row).to_string(),
        arrow_schema::DataType::Int64 => column.as_primitive::<Int64Type>().value(row).to_string(),
        arrow_schema::DataType::Float64 => format!("{:?}", column.as_primitive::<Float64Type>().value(row).to_bits()),
        arrow_schema::DataType::Boolean => column.as_boolean().value(row).to_string(),
        other => panic!("unexpected column type {other}"),
    }
}

/// The expected columns of `rows`, built from the rows alone.
fn expected_columns(rows: &[&WideRow]) -> Vec<Vec<String>> {
    let text = |value: Option<String>| value.unwrap_or_else(|| "null".into());
    vec![
        rows.iter().map(|row| row.id.clone()).collect(),
        rows.iter().map(|row| row.count.to_string()).collect(),
        rows.iter().map(|row| row.at.to_string()).collect(),
        rows.iter().map(|row| format!("{:?}", f64::from(row.ratio).to_bits())).collect(),
        rows.iter().map(|row| text(row.value.map(|value| format!("{:?}", value.to_bits())))).collect(),
        rows.iter().map(|row| text(row.flag.map(|flag| flag.to_string()))).collect(),
        rows.iter().map(|row| text(row.note.clone())).collect(),
    ]
}

proptest! {
    /// Encoded rows with malformed records among them: every good row comes back in order,
    /// every bad record is a dead letter at its index with its reason.
    #[test]
    fn encoded_rows_decode_back_and_bad_records_are_dead_letters_alone(
        rows in proptest::collection::vec((wide_row(), proptest::option::weighted(0.2, any::<u8>())), 0..40),
    ) {
        let schema = RecordSchema::from_json(&wide_json()).expect("parses");
        let decoder = AvroDecoder::new(&wide_json(), &names(&schema), 1 << 16).expect("decoder");
        let mut records = RawRecords::new();
        let mut expected_letters = Vec::new();
        let mut good_rows = Vec::new();
        for (index, (row, bad)) in rows.iter().enumerate() {
            let mut encoded = Vec::new();
            schema.encode_single_object(&row.values(), &mut encoded).expect("encodes");
            match bad {
                Some(kind) => {
                    let (record, reason) = malformed(&schema, *kind, &encoded);
                    records.push(&record);
                    expected_letters.push((index, reason));
                }
                None => {
                    records.push(&encoded);
                    good_rows.push(row);
                }
            }
        }
        let output = decoder.decode(&records);
        prop_assert_eq!(column_values(&output.batch), expected_columns(&good_rows));
        prop_assert_eq!(output.dead_letters.len(), expected_letters.len());
        for (letter, (index, fragment)) in output.dead_letters.iter().zip(&expected_letters) {
            prop_assert_eq!(letter.record_index, *index);
            prop_assert!(letter.reason.contains(fragment.as_str()), "`{}` should hold `{}`", letter.reason, fragment);
        }
    }

    /// The same logical rows through both decoders, every column or a projection of them:
    /// the same batch, column names, types and nullability included.
    #[test]
    fn the_avro_and_json_decoders_agree_on_the_same_rows(
        rows in proptest::collection::vec(wide_row(), 0..30),
        keep in proptest::collection::vec(any::<bool>(), 7),
    ) {
        let schema = RecordSchema::from_json(&wide_json()).expect("parses");
        let projection: Vec<String> =
            names(&schema).into_iter().zip(&keep).filter(|(_, keep)| **keep).map(|(name, _)| name).collect();
        let avro = AvroDecoder::new(&wide_json(), &projection, 1 << 16).expect("decoder");
        let json = JsonDecoder::new(&decoded_schema(&schema), &projection, 1 << 16).expect("decoder");
        let (mut avro_records, mut json_records) = (RawRecords::new(), RawRecords::new());
        for row in &rows {
            let mut encoded = Vec::new();
            schema.encode_single_object(&row.values(), &mut encoded).expect("encodes");
            avro_records.push(&encoded);
            json_records.push(row.as_json().as_bytes());
        }
        let (from_avro, from_json) = (avro.decode(&avro_records), json.decode(&json_records));
        prop_assert_eq!(&from_json.dead_letters, &Vec::<DeadLetter>::new());
        prop_assert!(from_avro.dead_letters.is_empty());
        prop_assert_eq!(avro.output_schema(), json.output_schema());
        prop_assert_eq!(from_avro.batch, from_json.batch);
    }
}

fn gateway_record(id: &str, date: i64, tx: f64, rx: f64) -> Vec<u8> {
    let schema = RecordSchema::parse(sleet_avro::GATEWAY_SCHEMA).expect("parses");
    let mut out = Vec::new();
    schema
        .encode_single_object(&[Value::String(id), Value::Long(date), Value::Double(tx), Value::Double(rx)], &mut out)
        .expect("encodes");
    out
}

#[test]
fn a_record_of_another_schema_is_a_dead_letter_naming_both_fingerprints() {
    let other = RecordSchema::from_json(&json!({"type": "record", "name": "Reading", "namespace": "sleet.gateway",
        "fields": [{"name": "gateway_id", "type": "string"}, {"name": "date", "type": "long"},
                   {"name": "ipTx", "type": "double"}, {"name": "ipRx", "type": "float"}]}))
    .expect("parses");
    let mut foreign = Vec::new();
    other
        .encode_single_object(
            &[Value::String("gw"), Value::Long(1), Value::Double(2.0), Value::Float(3.0)],
            &mut foreign,
        )
        .expect("encodes");
    let mut records = RawRecords::new();
    records.push(&gateway_record("a", 1, 1.0, 2.0));
    records.push(&foreign);
    records.push(&gateway_record("c", 3, 5.0, 6.0));
    let decoder = AvroDecoder::new(&gateway_json(), &["gateway_id".into()], 1_000).expect("decoder");
    let output = decoder.decode(&records);
    let ids: Vec<&str> = output.batch.column(0).as_string::<i32>().iter().flatten().collect();
    assert_eq!(ids, ["a", "c"]);
    let expected = format!(
        "written with another schema: fingerprint {:#018x}, expected 0xda9b899826552483 (the job's schema)",
        other.fingerprint()
    );
    assert_eq!(output.dead_letters, vec![DeadLetter { record_index: 1, reason: expected }]);
}

#[test]
fn a_record_over_the_size_limit_is_a_dead_letter() {
    let mut records = RawRecords::new();
    records.push(&gateway_record("short", 1, 1.0, 2.0));
    records.push(&gateway_record(&"x".repeat(100), 2, 1.0, 2.0));
    let decoder = AvroDecoder::new(&gateway_json(), &["date".into()], 64).expect("decoder");
    let output = decoder.decode(&records);
    assert_eq!(output.batch.column(0).as_primitive::<Int64Type>().values().to_vec(), vec![1]);
    assert_eq!(output.dead_letters[0].record_index, 1);
    let long = records.get(1).len();
    assert!(long > 64);
    assert_eq!(output.dead_letters[0].reason, format!("record is {long} bytes, over the limit of 64"));
}

/// A Kafka source whose record timestamps fill `date`, read through a whole stage.
#[test]
fn record_timestamps_replace_the_named_field() {
    let kafka = KafkaSourceSpec {
        brokers: "127.0.0.1:1".into(),
        topic: "t".into(),
        start: KafkaStart::Earliest,
        max_records_per_partition_per_batch: 10,
        event_time: EventTimeSource::RecordTimestamp("date".into()),
        read_committed: true,
        partitions: 1,
        replay: Vec::new(),
    };
    let stage = StagePlan {
        id: StageId(0),
        partitions: 1,
        input: StageInput::Source(SourceSpec::Kafka(kafka)),
        ops: vec![PhysicalOp::DecodeAvro {
            schema: gateway_json(),
            projection: vec!["gateway_id".into(), "date".into()],
            max_record_bytes: 1_000,
        }],
        output: StageOutput::Sink(SinkSpec::Discard),
    };
    let mut records = RawRecords::new();
    for (record, timestamp) in
        [(gateway_record("a", 1, 0.0, 0.0), 50), (vec![0xc3], 60), (gateway_record("c", 3, 0.0, 0.0), 70)]
    {
        records.push(&record);
        records.timestamps.push(timestamp);
    }
    let mut pipeline = StagePipeline::new(&stage, &|_| unreachable!("no lookup")).expect("stage");
    let output = pipeline.run(&StageInputData::Raw(records), 0).expect("runs");
    let rows = output.sink_rows.expect("rows for the sink");
    assert_eq!(rows.column(1).as_primitive::<Int64Type>().values().to_vec(), vec![50, 70]);
    assert_eq!(output.dead_letters.iter().map(|letter| letter.record_index).collect::<Vec<_>>(), vec![1]);
    assert_eq!(rows.schema().field(0).name(), "gateway_id");
}
