//! The keyed-state nodes (`increments`, `keyed_aggregate`, `top_k`): what validation refuses,
//! naming node and field; what the physical planner makes of them; and their job-file JSON,
//! as the README shows it.

use sleet_plan::*;

const DAY_MS: i64 = 86_400_000;

fn kafka() -> SourceSpec {
    SourceSpec::Kafka(KafkaSourceSpec {
        brokers: "127.0.0.1:1".into(),
        topic: "gateways".into(),
        start: KafkaStart::Earliest,
        max_records_per_partition_per_batch: 1_000,
        event_time: EventTimeSource::Field,
        read_committed: true,
        partitions: 2,
        replay: Vec::new(),
    })
}

fn decoded() -> PlanBuilder {
    PlanBuilder::source("gateway", kafka()).decode_json(Schema::new(vec![
        Field::new("gateway_id", DataType::Utf8),
        Field::new("date", DataType::Int64),
        Field::new("ipTx", DataType::Float64),
        Field::new("ipRx", DataType::Float64),
        Field::new("model", DataType::Utf8),
    ]))
}

fn increments() -> IncrementsSpec {
    IncrementsSpec {
        keys: vec!["gateway_id".into()],
        time_column: "date".into(),
        encoding: ReadingEncoding::Cumulative,
        columns: vec!["ipTx".into(), "ipRx".into()],
        late: LatePolicy::Fold,
        allowed_lateness_ms: 120_000,
        ttl_ms: 2 * DAY_MS,
        wrap_bits: 32,
        max_keys: 1_000,
    }
}

fn keyed() -> KeyedAggregateSpec {
    KeyedAggregateSpec {
        keys: vec!["day".into(), "gateway_id".into()],
        aggregates: vec![Aggregate::sum("bytes", "total")],
        time_column: "date".into(),
        ttl_ms: 2 * DAY_MS,
        max_keys: 1_000,
    }
}

fn top_k() -> TopKSpec {
    TopKSpec {
        group: vec!["day".into()],
        keys: vec!["gateway_id".into()],
        order_by: "total".into(),
        k: 10,
        ranking: sleet_plan::Ranking::RowNumber,
        time_column: "date".into(),
        ttl_ms: 2 * DAY_MS,
        max_keys: 1_000,
    }
}

/// The gateway job up to its exchange, with `spec` as its increments.
fn to_exchange(spec: IncrementsSpec) -> PlanBuilder {
    decoded()
        .increments(spec)
        .project_named([
            (col("gateway_id"), "gateway_id"),
            (col("date"), "date"),
            (col("date").divide(lit(DAY_MS)), "day"),
            (col("ipTx").add(col("ipRx")), "bytes"),
        ])
        .exchange(["day"], 2)
}

fn gateway(keyed: KeyedAggregateSpec, top_k: TopKSpec) -> PlanBuilder {
    to_exchange(increments()).keyed_aggregate(keyed).top_k(top_k).sink(SinkSpec::Discard)
}

/// Builds `plan` and checks that validation fails with a message containing every `needles`.
fn check(plan: PlanBuilder, needles: &[&str]) {
    let error = plan.build().expect_err("the plan must be rejected").to_string();
    for needle in needles {
        assert!(error.contains(needle), "`{error}` should mention `{needle}`");
    }
}

#[test]
fn the_gateway_plan_is_two_stateful_stages() {
    let plan = gateway(keyed(), top_k()).build().expect("valid");
    let physical = plan_stages(&plan, true).expect("plans");
    let kinds: Vec<Vec<&str>> =
        physical.stages.iter().map(|stage| stage.ops.iter().map(PhysicalOp::kind).collect()).collect();
    assert_eq!(kinds, [vec!["decode_json", "increments", "project"], vec!["keyed_aggregate", "top_k"]]);
    assert!(physical.stages[0].is_stateful() && physical.stages[1].is_stateful());
    let PhysicalOp::DecodeJson { projection, .. } = &physical.stages[0].ops[0] else { panic!("decode first") };
    assert_eq!(projection, &["gateway_id", "date", "ipTx", "ipRx"], "`model` is read by nothing");
    let schemas = validate::validate(&plan).expect("valid");
    let names = |index: usize| schemas[index].names().join(",");
    assert_eq!(names(5), "day,gateway_id,total,date");
    assert_eq!(names(6), "day,rank,gateway_id,total");
}

#[test]
fn a_rate_makes_its_value_columns_float64() {
    let spec = IncrementsSpec { encoding: ReadingEncoding::Rate, ..increments() };
    let schemas = validate::validate(&to_exchange(spec).sink(SinkSpec::Discard).build_unchecked()).expect("valid");
    assert_eq!(schemas[2].field("ipTx").map(|field| field.data_type), Some(DataType::Float64));
}

#[test]
fn increments_refuse_unknown_and_mistyped_columns() {
    let unknown = IncrementsSpec { columns: vec!["ipTz".into()], ..increments() };
    check(to_exchange(unknown).sink(SinkSpec::Discard), &["node 2 (increments)", "`ipTz`"]);
    let string_value = IncrementsSpec { columns: vec!["model".into()], ..increments() };
    check(to_exchange(string_value).sink(SinkSpec::Discard), &["node 2 (increments)", "`model`", "int64 or float64"]);
    let string_time = IncrementsSpec { time_column: "model".into(), ..increments() };
    check(to_exchange(string_time).sink(SinkSpec::Discard), &["node 2 (increments)", "`model`", "int64"]);
    let key_as_value = IncrementsSpec { columns: vec!["ipTx".into(), "date".into()], ..increments() };
    check(to_exchange(key_as_value).sink(SinkSpec::Discard), &["node 2 (increments)", "columns", "`date`"]);
}

#[test]
fn increments_refuse_bad_limits() {
    let cases: [(IncrementsSpec, &str); 5] = [
        (IncrementsSpec { wrap_bits: 54, ..increments() }, "wrap_bits"),
        (IncrementsSpec { ttl_ms: 0, ..increments() }, "ttl_ms"),
        (IncrementsSpec { ttl_ms: 1_000, ..increments() }, "allowed_lateness_ms"),
        (IncrementsSpec { allowed_lateness_ms: -1, ..increments() }, "allowed_lateness_ms"),
        (IncrementsSpec { max_keys: 0, ..increments() }, "max_keys"),
    ];
    for (spec, field) in cases {
        check(to_exchange(spec).sink(SinkSpec::Discard), &["node 2 (increments)", field]);
    }
}

#[test]
fn increments_after_an_exchange_need_it_on_their_keys() {
    let plan = decoded().exchange(["date"], 2).increments(increments()).sink(SinkSpec::Discard);
    check(plan, &["node 3 (increments)", "`date`", "keys"]);
}

#[test]
fn keyed_aggregate_and_top_k_need_an_exchange_on_their_keys() {
    let no_exchange = decoded().keyed_aggregate(KeyedAggregateSpec {
        keys: vec!["gateway_id".into()],
        aggregates: vec![Aggregate::sum("ipTx", "total")],
        ..keyed()
    });
    check(no_exchange.sink(SinkSpec::Discard), &["node 2 (keyed_aggregate)", "exchange"]);
    let split_keys = KeyedAggregateSpec { keys: vec!["gateway_id".into()], ..keyed() };
    check(gateway(split_keys, top_k()), &["node 5 (keyed_aggregate)", "`day`"]);
    let split_groups = TopKSpec { group: vec![], keys: vec!["day".into(), "gateway_id".into()], ..top_k() };
    check(gateway(keyed(), split_groups), &["node 6 (top_k)", "`day`"]);
}

#[test]
fn keyed_aggregate_and_top_k_refuse_bad_columns_and_options() {
    let string_sum = KeyedAggregateSpec { aggregates: vec![Aggregate::sum("gateway_id", "total")], ..keyed() };
    check(gateway(string_sum, top_k()), &["node 5 (keyed_aggregate)", "gateway_id"]);
    let clash = KeyedAggregateSpec { aggregates: vec![Aggregate::sum("bytes", "date")], ..keyed() };
    check(gateway(clash, top_k()), &["node 5 (keyed_aggregate)", "`date`", "twice"]);
    let average = KeyedAggregateSpec { aggregates: vec![Aggregate::avg("bytes", "mean")], ..keyed() };
    check(gateway(average, top_k()), &["node 5 (keyed_aggregate)", "mean", "window aggregates"]);
    check(gateway(keyed(), TopKSpec { order_by: "gateway_id".into(), ..top_k() }), &["node 6 (top_k)", "gateway_id"]);
    check(gateway(keyed(), TopKSpec { order_by: "totl".into(), ..top_k() }), &["node 6 (top_k)", "`totl`"]);
    check(gateway(keyed(), TopKSpec { k: 0, ..top_k() }), &["node 6 (top_k)", "`k`"]);
    check(gateway(keyed(), TopKSpec { ttl_ms: -5, ..top_k() }), &["node 6 (top_k)", "ttl_ms"]);
}

#[test]
fn the_readmes_json_nodes_parse_into_the_gateway_plan() {
    let nodes = r#"[
        {"increments": {"keys": ["gateway_id"], "time_column": "date", "encoding": "cumulative",
                        "columns": ["ipTx", "ipRx"], "late": "fold", "allowed_lateness_ms": 120000,
                        "ttl_ms": 172800000}},
        {"project": {"columns": [[{"column": "gateway_id"}, "gateway_id"], [{"column": "date"}, "date"],
          [{"binary": {"op": "divide", "left": {"column": "date"}, "right": {"literal": {"int64": 86400000}}}}, "day"],
          [{"binary": {"op": "add", "left": {"column": "ipTx"}, "right": {"column": "ipRx"}}}, "bytes"]]}},
        {"exchange": {"keys": ["day"], "partitions": 2}},
        {"keyed_aggregate": {"keys": ["day", "gateway_id"], "time_column": "date", "ttl_ms": 172800000,
                             "aggregates": [{"func": "sum", "column": "bytes", "name": "total"}]}},
        {"top_k": {"group": ["day"], "keys": ["gateway_id"], "order_by": "total", "k": 10,
                   "time_column": "date", "ttl_ms": 172800000}}
    ]"#;
    let operators: Vec<Operator> = serde_json::from_str(nodes).expect("the README's nodes parse");
    let defaults = 1_000_000;
    let built =
        gateway(KeyedAggregateSpec { max_keys: defaults, ..keyed() }, TopKSpec { max_keys: defaults, ..top_k() })
            .build_unchecked();
    let mut expected: Vec<Operator> = built.nodes[2..7].iter().map(|node| node.operator.clone()).collect();
    let Operator::Increments(spec) = &mut expected[0] else { panic!("increments first") };
    spec.max_keys = defaults;
    assert_eq!(operators, expected);
}
