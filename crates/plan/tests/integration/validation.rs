//! Validation: every error names the offending node and field before anything runs.

use sleet_plan::*;

fn ysb() -> SourceSpec {
    SourceSpec::Ysb(YsbSourceSpec { seed: 1, rate_per_s: 10, partitions: 1, bad_fraction: 0.0, pre_decoded: false })
}

fn source() -> PlanBuilder {
    PlanBuilder::source("t", ysb())
        .decode_json(Schema::new(vec![Field::new("name", DataType::Utf8), Field::new("time", DataType::Int64)]))
}

fn window() -> WindowSpec {
    WindowSpec::tumbling("time", 1_000, 0)
}

/// Builds `plan` and checks that validation fails with a message containing every `needles`.
fn check(plan: PlanBuilder, needles: &[&str]) {
    let error = plan.build().expect_err("the plan must be rejected").to_string();
    for needle in needles {
        assert!(error.contains(needle), "`{error}` should mention `{needle}`");
    }
}

#[test]
fn unknown_column_in_a_filter() {
    check(source().filter(col("nmae").eq(lit("x"))).sink(SinkSpec::Discard), &["node 2 (filter)", "`nmae`", "name"]);
}

#[test]
fn type_error_in_a_comparison() {
    check(source().filter(col("time").eq(lit("soon"))).sink(SinkSpec::Discard), &["node 2 (filter)", "time"]);
}

#[test]
fn window_time_column_must_be_int64() {
    let plan = source().exchange(["name"], 2).window_aggregate(
        WindowSpec { time_column: "name".into(), ..window() },
        ["name"],
        [Aggregate::count("n")],
    );
    check(plan.sink(SinkSpec::Discard), &["node 3 (window_aggregate)", "`name`", "int64"]);
}

#[test]
fn window_aggregate_needs_an_exchange_on_its_keys() {
    check(
        source().window_aggregate(window(), ["name"], [Aggregate::count("n")]).sink(SinkSpec::Discard),
        &["node 2", "exchange"],
    );
    let wrong_keys = source().exchange(["time"], 2).window_aggregate(window(), ["name"], [Aggregate::count("n")]);
    check(wrong_keys.sink(SinkSpec::Discard), &["node 3", "`time`"]);
}

#[test]
fn sum_of_a_string_is_a_type_error() {
    let plan = source().exchange(["name"], 2).window_aggregate(window(), ["name"], [Aggregate::sum("name", "total")]);
    check(plan.sink(SinkSpec::Discard), &["node 3 (window_aggregate)", "name"]);
}

#[test]
fn a_plan_must_end_in_a_sink() {
    check(source().filter(col("name").eq(lit("x"))), &["node 2 (filter)", "sink"]);
}

#[test]
fn a_valid_plan_passes() {
    let plan = source()
        .filter(col("name").not_eq(lit("")))
        .exchange(["name"], 2)
        .window_aggregate(window(), ["name"], [Aggregate::count("n"), Aggregate::max("time", "latest")])
        .sink(SinkSpec::Discard);
    let schemas = validate::validate(&plan.build().expect("valid")).expect("valid");
    let last = schemas.last().expect("schemas").names();
    assert_eq!(last, ["window_start", "name", "n", "latest"]);
}

fn numbers(spec: NumbersSourceSpec) -> PlanBuilder {
    PlanBuilder::source("sched", SourceSpec::Numbers(spec))
        .decode_json(Schema::new(vec![
            Field::new("key", DataType::Utf8),
            Field::new("sum", DataType::Int64),
            Field::new("time", DataType::Int64),
        ]))
        .sink(SinkSpec::Discard)
}

fn numbers_spec() -> NumbersSourceSpec {
    NumbersSourceSpec { seed: 1, partitions: 4, numbers_per_batch: 1_000, keys: 16 }
}

#[test]
fn a_numbers_source_needs_partitions_numbers_and_keys() {
    check(numbers(NumbersSourceSpec { partitions: 0, ..numbers_spec() }), &["node 0 (source)", "`partitions`"]);
    check(
        numbers(NumbersSourceSpec { numbers_per_batch: 0, ..numbers_spec() }),
        &["node 0 (source)", "`numbers_per_batch`"],
    );
    check(numbers(NumbersSourceSpec { keys: 0, ..numbers_spec() }), &["node 0 (source)", "`keys`"]);
    numbers(numbers_spec()).build().expect("a numbers source with every count at least 1 is valid");
}

#[test]
fn a_numbers_source_reads_as_kind_numbers_in_a_job_file() {
    let spec: SourceSpec = serde_json::from_str(
        r#"{"kind": "numbers", "seed": 1, "partitions": 4, "numbers_per_batch": 1000, "keys": 16}"#,
    )
    .expect("the documented layout parses");
    assert_eq!(spec, SourceSpec::Numbers(numbers_spec()));
    assert_eq!(spec.partitions(), 4);
}

fn gateway(spec: GatewaySourceSpec) -> PlanBuilder {
    PlanBuilder::source("gateway", SourceSpec::Gateway(spec))
        .decode_json(Schema::new(vec![Field::new("gateway_id", DataType::Utf8), Field::new("date", DataType::Int64)]))
        .sink(SinkSpec::Discard)
}

fn gateway_spec() -> GatewaySourceSpec {
    serde_json::from_str(r#"{"kind": "gateway", "seed": 1, "gateways": 200, "partitions": 2, "start_ms": 1000}"#)
        .map(|spec: SourceSpec| match spec {
            SourceSpec::Gateway(gateway) => gateway,
            other => panic!("read as {other:?}"),
        })
        .expect("the documented layout parses")
}

#[test]
fn a_gateway_source_reads_with_the_workloads_defaults_and_names_a_bad_option() {
    let spec = gateway_spec();
    assert_eq!((spec.encoding, spec.format), (GatewayEncoding::Cumulative, GatewayFormat::Json));
    assert_eq!(
        (spec.report_interval_ms, spec.jitter_ms, spec.max_delay_ms, spec.speedup),
        (60_000, 20_000, 120_000, 1)
    );
    assert_eq!((spec.late_fraction, spec.stop_ms), (0.02, None));
    assert!(!SourceSpec::Gateway(spec.clone()).reads_in_order(), "a generator's batch is a function of its range");
    gateway(spec.clone()).build().expect("the defaults are valid");
    let bad = |change: &dyn Fn(&mut GatewaySourceSpec), field: &str| {
        let mut spec = gateway_spec();
        change(&mut spec);
        check(gateway(spec), &["node 0 (source)", &format!("`{field}`")]);
    };
    bad(&|spec| spec.partitions = 0, "partitions");
    bad(&|spec| spec.gateways = 0, "gateways");
    bad(&|spec| spec.speedup = 0, "speedup");
    bad(&|spec| spec.start_ms = -1, "start_ms");
    bad(&|spec| spec.stop_ms = Some(999), "stop_ms");
    bad(&|spec| spec.report_interval_ms = 600_000, "report_interval_ms");
    bad(&|spec| spec.jitter_ms = 30_000, "jitter_ms");
    bad(&|spec| spec.late_fraction = 1.5, "late_fraction");
    bad(&|spec| spec.max_delay_ms = -1, "max_delay_ms");
}

#[test]
fn a_nexmark_source_reads_as_kind_nexmark_with_defaults_and_names_a_bad_option() {
    let spec: SourceSpec = serde_json::from_str(r#"{"kind": "nexmark", "start_ms": 1000, "partitions": 2}"#)
        .expect("the documented layout parses");
    let SourceSpec::Nexmark(nexmark) = spec.clone() else { panic!("read as {spec:?}") };
    assert_eq!(nexmark, NexmarkSourceSpec { partitions: 2, ..NexmarkSourceSpec::new(1000) });
    assert_eq!((nexmark.rate_per_s, nexmark.tables.len(), nexmark.max_events), (10_000, 3, None));
    assert!(!spec.reads_in_order(), "a generator's batch is a function of its range");
    let plan = |spec: NexmarkSourceSpec| {
        PlanBuilder::source("nexmark", SourceSpec::Nexmark(spec))
            .decode_json(Schema::new(vec![Field::new("event_type", DataType::Utf8)]))
            .sink(SinkSpec::Discard)
    };
    plan(nexmark.clone()).build().expect("the defaults are valid");
    let bad = |change: &dyn Fn(&mut NexmarkSourceSpec), field: &str| {
        let mut spec = nexmark.clone();
        change(&mut spec);
        check(plan(spec), &["node 0 (source)", &format!("`{field}`")]);
    };
    bad(&|spec| spec.partitions = 0, "partitions");
    bad(&|spec| spec.start_ms = -1, "start_ms");
    bad(&|spec| spec.rate_per_s = 0, "rate_per_s");
    bad(&|spec| spec.tables.clear(), "tables");
    bad(&|spec| spec.active_people = 0, "active_people");
    bad(&|spec| spec.hot_bidder_ratio = 0, "hot_bidder_ratio");
}

#[test]
fn a_decode_schema_names_each_field_once() {
    let plan = PlanBuilder::source("t", ysb())
        .decode_json(Schema::new(vec![Field::new("a", DataType::Utf8), Field::new("a", DataType::Int64)]));
    check(plan.sink(SinkSpec::Discard), &["node 1 (decode_json)", "schema", "`a` appears twice"]);
}

#[test]
fn a_projection_names_each_output_column_once() {
    let plan = source().project_named([(col("name"), "x"), (col("time"), "x")]);
    check(plan.sink(SinkSpec::Discard), &["node 2 (project)", "columns", "`x` appears twice"]);
}

#[test]
fn a_lookup_needs_matching_key_types_and_new_columns() {
    let table = || TableSpec::YsbCampaigns { seed: 1 };
    let mistyped = source().lookup("time", table(), "ad_id", ["campaign_id"]);
    check(mistyped.sink(SinkSpec::Discard), &["node 2 (lookup)", "time", "utf8"]);
    let clash = source().project_named([(col("name"), "ad_id"), (col("time"), "campaign_id")]).lookup(
        "ad_id",
        table(),
        "ad_id",
        ["campaign_id"],
    );
    check(clash.sink(SinkSpec::Discard), &["node 3 (lookup)", "`campaign_id` is already a column"]);
}

#[test]
fn an_exchange_needs_keys_and_partitions() {
    check(source().exchange([], 2).sink(SinkSpec::Discard), &["node 2 (exchange)", "keys"]);
    check(source().exchange(["name"], 0).sink(SinkSpec::Discard), &["node 2 (exchange)", "partitions"]);
    check(source().exchange(["name"], 2).exchange(["nope"], 2).sink(SinkSpec::Discard), &["node 3", "nope"]);
}

#[test]
fn a_window_needs_a_positive_size_and_an_aggregate() {
    let sized = source().exchange(["name"], 2).window_aggregate(
        WindowSpec { size_ms: 0, ..window() },
        ["name"],
        [Aggregate::count("n")],
    );
    check(sized.sink(SinkSpec::Discard), &["node 3 (window_aggregate)", "window.size_ms"]);
    let empty: [Aggregate; 0] = [];
    let none = source().exchange(["name"], 2).window_aggregate(window(), ["name"], empty);
    check(none.sink(SinkSpec::Discard), &["node 3 (window_aggregate)", "aggregates"]);
    let twice = source().exchange(["name"], 2).window_aggregate(
        window(),
        ["name"],
        [Aggregate::count("n"), Aggregate::count("n")],
    );
    check(twice.sink(SinkSpec::Discard), &["node 3 (window_aggregate)", "`n` appears twice"]);
}

/// Checks that `window` over `name` and `time` is refused naming `needles`.
fn check_window(window: WindowSpec, needles: &[&str]) {
    let plan = source().exchange(["name"], 2).window_aggregate(window, ["name"], [Aggregate::count("n")]);
    check(plan.sink(SinkSpec::Discard), &[&["node 3 (window_aggregate)"], needles].concat());
}

#[test]
fn a_hopping_window_needs_a_positive_slide_that_divides_its_size() {
    check_window(WindowSpec::hopping("time", 1_000, 0, 0), &["window.slide_ms", "must be positive"]);
    check_window(WindowSpec::hopping("time", 1_000, -5, 0), &["window.slide_ms", "must be positive"]);
    check_window(WindowSpec::hopping("time", 1_000, 300, 0), &["window.size_ms", "whole multiple", "(300)"]);
    check_window(WindowSpec::hopping("time", 0, 300, 0), &["window.size_ms", "must be positive"]);
    check_window(WindowSpec::hopping("time", 1_000_000, 1, 0), &["window.slide_ms", "1000000 windows"]);
}

#[test]
fn a_session_window_needs_a_positive_gap_alone() {
    check_window(WindowSpec::session("time", 0, 0), &["window.gap_ms", "must be positive"]);
    check_window(WindowSpec::session("time", -1, 0), &["window.gap_ms", "must be positive"]);
    check_window(WindowSpec { size_ms: 1_000, ..WindowSpec::session("time", 10, 0) }, &["window.gap_ms", "alone"]);
    check_window(WindowSpec { slide_ms: Some(5), ..WindowSpec::session("time", 10, 0) }, &["window.gap_ms", "alone"]);
    check_window(WindowSpec::session("time", 10, -1), &["window.allowed_lateness_ms"]);
}

#[test]
fn hopping_and_session_windows_output_their_end_and_tumbling_ones_do_not() {
    let names = |window: WindowSpec| {
        let plan = source().exchange(["name"], 2).window_aggregate(window, ["name"], [Aggregate::count("n")]);
        let schemas = validate::validate(&plan.sink(SinkSpec::Discard).build_unchecked()).expect("valid");
        schemas[3].names().into_iter().map(str::to_string).collect::<Vec<String>>()
    };
    assert_eq!(names(window()), ["window_start", "name", "n"]);
    assert_eq!(names(WindowSpec::hopping("time", 1_000, 250, 0)), ["window_start", "window_end", "name", "n"]);
    assert_eq!(names(WindowSpec::session("time", 100, 0)), ["window_start", "window_end", "name", "n"]);
}

#[test]
fn avg_is_float64_of_a_numeric_column_and_count_distinct_int64_of_any() {
    let aggregate = |aggregate: Aggregate| {
        let plan = source().exchange(["name"], 2).window_aggregate(window(), ["name"], [aggregate]);
        plan.sink(SinkSpec::Discard)
    };
    let output_type = |one: Aggregate| {
        let schemas = validate::validate(&aggregate(one).build_unchecked()).expect("valid");
        schemas[3].fields.last().expect("the aggregate").data_type
    };
    assert_eq!(output_type(Aggregate::avg("time", "mean")), DataType::Float64);
    assert_eq!(output_type(Aggregate::count_distinct("name", "names")), DataType::Int64);
    check(aggregate(Aggregate::avg("name", "mean")), &["node 3 (window_aggregate)", "name", "int64 or float64"]);
    check(aggregate(Aggregate::count_distinct("nmae", "names")), &["node 3 (window_aggregate)", "`nmae`"]);
    let parsed: Aggregate = serde_json::from_str(r#"{"func": "count_distinct", "column": "name", "name": "names"}"#)
        .expect("count_distinct parses");
    assert_eq!(parsed, Aggregate::count_distinct("name", "names"));
    let parsed: Aggregate =
        serde_json::from_str(r#"{"func": "avg", "column": "time", "name": "mean"}"#).expect("avg parses");
    assert_eq!(parsed, Aggregate::avg("time", "mean"));
}

#[test]
fn window_kinds_read_and_write_the_json_a_user_writes() {
    let tumbling = r#"{"time_column":"time","size_ms":1000,"allowed_lateness_ms":0}"#;
    let parsed: WindowSpec = serde_json::from_str(tumbling).expect("tumbling parses");
    assert_eq!(parsed, window());
    assert_eq!(serde_json::to_string(&parsed).expect("writes"), tumbling, "tumbling JSON is what it always was");
    let hopping = r#"{"time_column":"time","size_ms":1000,"slide_ms":250,"allowed_lateness_ms":0}"#;
    let parsed: WindowSpec = serde_json::from_str(hopping).expect("hopping parses");
    assert_eq!(parsed.kind(), WindowKind::Hopping { size_ms: 1_000, slide_ms: 250 });
    assert_eq!(serde_json::to_string(&parsed).expect("writes"), hopping);
    let session = r#"{"time_column":"time","gap_ms":500,"allowed_lateness_ms":0}"#;
    let parsed: WindowSpec = serde_json::from_str(session).expect("session parses");
    assert_eq!(parsed.kind(), WindowKind::Session { gap_ms: 500 });
    assert_eq!(serde_json::to_string(&parsed).expect("writes"), session);
}

#[test]
fn a_sink_stands_last_only() {
    check(source().sink(SinkSpec::Discard).filter(col("name").eq(lit("x"))), &["node 2 (sink)", "last"]);
}
