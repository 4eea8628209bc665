//! The window join node: what validation refuses, naming node and field; its output schema;
//! what the physical planner makes of it (a stateful reduce stage, the decoder reading only
//! the columns the join needs); and its job-file JSON.

use sleet_plan::*;

fn nexmark() -> SourceSpec {
    SourceSpec::Nexmark(NexmarkSourceSpec { partitions: 2, ..NexmarkSourceSpec::new(0) })
}

/// q3's rows up to the exchange: the side (persons left, auctions right), the key, the time
/// and the columns each side contributes.
fn to_exchange(exchange_on: &'static str) -> PlanBuilder {
    let is_person = col("event_type").eq(lit("person"));
    let is_auction = col("event_type").eq(lit("auction"));
    PlanBuilder::source("q3", nexmark())
        .decode_json(Schema::new(vec![
            Field::new("event_type", DataType::Utf8),
            Field::new("id", DataType::Int64).nullable(),
            Field::new("name", DataType::Utf8).nullable(),
            Field::new("email_address", DataType::Utf8).nullable(),
            Field::new("seller", DataType::Int64).nullable(),
            Field::new("date_time", DataType::Int64),
        ]))
        .project_named([
            (Expr::case([(is_person.clone(), lit(true)), (is_auction, lit(false))], None), "side"),
            (Expr::case([(is_person, col("id"))], Some(col("seller"))), "key"),
            (col("date_time"), "date_time"),
            (col("id"), "id"),
            (col("name"), "name"),
        ])
        .filter(col("side").is_not_null())
        .exchange([exchange_on], 2)
}

fn spec() -> WindowJoinSpec {
    WindowJoinSpec {
        window: WindowSpec::tumbling("date_time", 10_000, 4_000),
        side_column: "side".into(),
        key_column: "key".into(),
        left: vec![JoinColumn::new("name", "p_name"), JoinColumn::new("id", "p_id")],
        right: vec![JoinColumn::new("id", "a_id")],
        distinct: false,
        max_rows: 1_000,
    }
}

fn check(plan: PlanBuilder, needles: &[&str]) {
    let error = plan.build().expect_err("the plan must be rejected").to_string();
    for needle in needles {
        assert!(error.contains(needle), "`{error}` should mention `{needle}`");
    }
}

fn join(spec: WindowJoinSpec) -> PlanBuilder {
    to_exchange("key").window_join(spec).sink(SinkSpec::Discard)
}

#[test]
fn a_window_join_outputs_the_window_then_the_left_then_the_right() {
    let plan = join(spec()).build().expect("valid");
    let schemas = validate::validate(&plan).expect("valid");
    let output = &schemas[5];
    assert_eq!(output.names().join(","), "window_start,window_end,p_name,p_id,a_id");
    let input = schemas[4].field("name").expect("the exchange passes `name`");
    assert_eq!(output.field("p_name"), Some(&Field { name: "p_name".into(), ..input.clone() }), "typed as its input");
    assert_eq!(output.field("window_end").map(|field| field.data_type), Some(DataType::Int64));
}

#[test]
fn a_window_join_is_a_stateful_reduce_stage_reading_only_what_it_needs() {
    let plan = join(spec()).build().expect("valid");
    let physical = plan_stages(&plan, true).expect("plans");
    let kinds: Vec<Vec<&str>> =
        physical.stages.iter().map(|stage| stage.ops.iter().map(PhysicalOp::kind).collect()).collect();
    assert_eq!(kinds, [vec!["decode_json", "project", "filter"], vec!["window_join"]]);
    assert!(!physical.stages[0].is_stateful() && physical.stages[1].is_stateful());
    let PhysicalOp::DecodeJson { projection, .. } = &physical.stages[0].ops[0] else { panic!("decode first") };
    assert_eq!(projection, &["event_type", "id", "name", "seller", "date_time"], "no email_address");
}

#[test]
fn a_window_join_needs_an_exchange_on_its_key_alone() {
    check(to_exchange("id").window_join(spec()).sink(SinkSpec::Discard), &["node 5 (window_join)", "`key`", "id"]);
    let no_exchange = PlanBuilder::source("q3", nexmark())
        .decode_json(Schema::new(vec![Field::new("date_time", DataType::Int64)]))
        .window_join(spec())
        .sink(SinkSpec::Discard);
    check(no_exchange, &["node 2 (window_join)", "exchange"]);
}

#[test]
fn a_window_join_refuses_bad_columns_and_options() {
    let cases: Vec<(WindowJoinSpec, &[&str])> = vec![
        (WindowJoinSpec { side_column: "name".into(), ..spec() }, &["`name`", "boolean"]),
        (WindowJoinSpec { side_column: "sid".into(), ..spec() }, &["`sid`"]),
        (WindowJoinSpec { window: WindowSpec::tumbling("name", 10_000, 0), ..spec() }, &["`name`", "int64"]),
        (
            WindowJoinSpec { window: WindowSpec::hopping("date_time", 10_000, 5_000, 0), ..spec() },
            &["window", "tumbling"],
        ),
        (WindowJoinSpec { window: WindowSpec::session("date_time", 10_000, 0), ..spec() }, &["window", "tumbling"]),
        (WindowJoinSpec { window: WindowSpec::tumbling("date_time", 0, 0), ..spec() }, &["window.size_ms"]),
        (WindowJoinSpec { window: WindowSpec::tumbling("date_time", 10, -1), ..spec() }, &["allowed_lateness_ms"]),
        (WindowJoinSpec { left: vec![JoinColumn::new("nam", "x")], ..spec() }, &["`nam`"]),
        (WindowJoinSpec { right: vec![JoinColumn::new("id", "p_id")], ..spec() }, &["right", "`p_id`", "twice"]),
        (WindowJoinSpec { right: vec![JoinColumn::new("id", "window_end")], ..spec() }, &["right", "`window_end`"]),
        (WindowJoinSpec { max_rows: 0, ..spec() }, &["max_rows"]),
    ];
    for (spec, needles) in cases {
        let mut all = vec!["node 5 (window_join)"];
        all.extend_from_slice(needles);
        check(join(spec), &all);
    }
}

#[test]
fn a_window_join_reads_and_writes_its_json() {
    let text = r#"{"window_join": {"window": {"time_column": "date_time", "size_ms": 10000,
        "allowed_lateness_ms": 4000}, "side_column": "side", "key_column": "key",
        "left": [{"input": "name", "output": "p_name"}, {"input": "id", "output": "p_id"}],
        "right": [{"input": "id", "output": "a_id"}]}}"#;
    let operator: Operator = serde_json::from_str(text).expect("parses");
    let defaults = WindowJoinSpec { max_rows: 1_000_000, ..spec() };
    assert_eq!(operator, Operator::WindowJoin(defaults.clone()), "distinct and max_rows default");
    let distinct = Operator::WindowJoin(WindowJoinSpec { distinct: true, ..defaults });
    let round_trip: Operator = serde_json::from_str(&serde_json::to_string(&distinct).expect("writes")).expect("reads");
    assert_eq!(round_trip, distinct);
}
