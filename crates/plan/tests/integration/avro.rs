//! `decode_avro` in job files: parsed, validated (unsupported Avro types refused before the
//! job runs, naming the field), its columns those of `decode_json`, projected by the planner.

use sleet_plan::*;

/// A gateway job file: Kafka in, `decode_avro` with `schema`, per-gateway windows out.
fn job_text(schema: &str) -> String {
    format!(
        r#"{{"plan": {{"name": "gateway", "nodes": [
            {{"operator": {{"source": {{"spec": {{"kind": "kafka", "brokers": "127.0.0.1:1", "topic": "gw", "partitions": 2}}}}}}}},
            {{"operator": {{"decode_avro": {{"schema": {schema}, "max_record_bytes": 512}}}}}},
            {{"operator": {{"exchange": {{"keys": ["gateway_id"], "partitions": 2}}}}}},
            {{"operator": {{"window_aggregate": {{
                "window": {{"time_column": "date", "size_ms": 60000, "allowed_lateness_ms": 0}},
                "keys": ["gateway_id"],
                "aggregates": [{{"func": "sum", "column": "ipTx", "name": "tx"}}]}}}}}},
            {{"operator": {{"sink": {{"spec": {{"kind": "discard"}}}}}}}}]}},
          "settings": {{"batch_interval_ms": 100}}}}"#
    )
}

#[test]
fn a_job_with_an_inline_schema_validates_to_the_json_decoders_columns() {
    let job = JobFile::from_json(&job_text(sleet_avro::GATEWAY_SCHEMA)).expect("a valid job");
    let schemas = validate::validate(&job.plan).expect("valid");
    assert_eq!(
        schemas[1],
        Schema::new(vec![
            Field::new("gateway_id", DataType::Utf8),
            Field::new("date", DataType::Int64),
            Field::new("ipTx", DataType::Float64),
            Field::new("ipRx", DataType::Float64),
        ])
    );
    let physical = plan_stages(&job.plan, true).expect("plans");
    let PhysicalOp::DecodeAvro { projection, schema, max_record_bytes } = &physical.stages[0].ops[0] else {
        panic!("decode first: {:?}", physical.stages[0].ops)
    };
    assert_eq!(projection, &["gateway_id", "date", "ipTx"], "ipRx is read by nothing");
    assert_eq!(schema["namespace"], "sleet.gateway");
    assert_eq!(*max_record_bytes, 512);
    assert_eq!(JobFile::from_json(&job.to_json()).expect("round trip"), job);
}

#[test]
fn nullable_unions_and_narrow_types_widen_as_json_decodes_them() {
    let schema = r#"{"type": "record", "name": "R", "fields": [
        {"name": "a", "type": ["null", "int"]}, {"name": "b", "type": ["float", "null"]},
        {"name": "c", "type": "boolean"}, {"name": "gateway_id", "type": "string"},
        {"name": "date", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "ipTx", "type": "double"}]}"#;
    let job = JobFile::from_json(&job_text(schema)).expect("a valid job");
    let fields = &validate::validate(&job.plan).expect("valid")[1].fields;
    assert_eq!(fields[0], Field::new("a", DataType::Int64).nullable());
    assert_eq!(fields[1], Field::new("b", DataType::Float64).nullable());
    assert_eq!(fields[2], Field::new("c", DataType::Boolean));
    assert_eq!(fields[4], Field::new("date", DataType::Int64));
}

/// `schema` must be refused with a message holding every one of `needles`.
fn check_refused(schema: &str, needles: &[&str]) {
    let error = JobFile::from_json(&job_text(schema)).expect_err("refused").to_string();
    for needle in needles {
        assert!(error.contains(needle), "`{error}` should mention `{needle}`");
    }
}

#[test]
fn unsupported_types_are_refused_at_validation_naming_the_field() {
    let with = |field_type: &str| {
        format!(
            r#"{{"type": "record", "name": "R", "fields": [{{"name": "gateway_id", "type": "string"}},
                {{"name": "tags", "type": {field_type}}}]}}"#
        )
    };
    let at = "node 1 (decode_avro): option `schema`: field `tags` has type";
    check_refused(&with(r#"{"type": "map", "values": "string"}"#), &[at, "map"]);
    check_refused(&with(r#"{"type": "array", "items": "long"}"#), &[at, "array"]);
    check_refused(&with(r#"{"type": "enum", "name": "E", "symbols": ["A"]}"#), &[at, "enum"]);
    check_refused(&with(r#"{"type": "bytes", "logicalType": "decimal", "precision": 9}"#), &[at, "bytes (decimal)"]);
    check_refused(r#"{"type": "map", "values": "long"}"#, &["node 1 (decode_avro)", "must be a record, found map"]);
    check_refused(r#"{"type": "record", "name": "R", "fields": []}"#, &["needs at least one field"]);
    check_refused(
        r#"{"type": "record", "name": "R", "fields": [{"name": "gateway-id", "type": "string"}]}"#,
        &["`gateway-id` is not an Avro name"],
    );
}

#[test]
fn a_schema_named_by_path_must_be_read_before_validation() {
    check_refused(r#""schemas/gateway.avsc""#, &["node 1 (decode_avro)", "`schemas/gateway.avsc` has not been read"]);
    let mut job = JobFile::from_json_unchecked(&job_text(r#""schemas/gateway.avsc""#)).expect("parses");
    job.inline_avro_schemas(|path| {
        assert_eq!(path, "schemas/gateway.avsc");
        Ok(sleet_avro::GATEWAY_SCHEMA.to_string())
    })
    .expect("inlined");
    job.check().expect("valid once inlined");
    let mut job = JobFile::from_json_unchecked(&job_text(r#""x.avsc""#)).expect("parses");
    let error = job.inline_avro_schemas(|_| Ok("{".into())).expect_err("not JSON").to_string();
    assert!(error.starts_with("node 1 (decode_avro): option `schema`: `x.avsc` is not JSON"), "{error}");
}

#[test]
fn decode_avro_reads_raw_records_only() {
    let gateway: serde_json::Value = serde_json::from_str(sleet_avro::GATEWAY_SCHEMA).expect("JSON");
    let error = PlanBuilder::source(
        "t",
        SourceSpec::Ysb(YsbSourceSpec { seed: 1, rate_per_s: 1, partitions: 1, bad_fraction: 0.0, pre_decoded: false }),
    )
    .decode_avro(gateway.clone())
    .decode_avro(gateway)
    .sink(SinkSpec::Discard)
    .build()
    .expect_err("a decoder after a decoder");
    assert!(error.to_string().contains("node 2 (decode_avro): decode_avro must read raw records"), "{error}");
}
