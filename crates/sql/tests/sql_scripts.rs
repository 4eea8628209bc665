//! Scripts compiled end to end: the examples plan as the builder's jobs do, and every
//! mistake a script can make is refused with its line, column and what is wrong.

use std::path::Path;

use sleet_plan::{JobSettings, Operator, SinkSpec};
use sleet_sql::{compile, Compiled, Position, SqlOptions};

fn repository_file(path: &str) -> Result<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).map_err(|error| format!("{path}: {error}"))
}

fn compile_text(text: &str) -> Result<Compiled, sleet_sql::SqlError> {
    let options = SqlOptions {
        default_sink: SinkSpec::JsonLines { dir: "results".into() },
        job_name: "sql".into(),
        settings: JobSettings::default(),
        start_ms: 1_800_000_000_000,
        read_file: &repository_file,
    };
    compile(text, &options)
}

const EVENTS: &str = "CREATE TABLE events (
    user_id VARCHAR NOT NULL, ad_id VARCHAR NOT NULL, event_type VARCHAR NOT NULL,
    event_time BIGINT NOT NULL, price DOUBLE, WATERMARK FOR event_time AS event_time - INTERVAL '1' SECOND
) WITH (connector = 'generator', kind = 'ysb');
CREATE TABLE campaigns (ad_id VARCHAR, campaign_id VARCHAR) WITH (connector = 'generator', kind = 'ysb_campaigns');
";

/// `script` after the two declarations above fails at `line`, `column` of the query (lines
/// counted from the query's first), with a message holding `expected`.
fn check_query_error(query: &str, line: u64, column: u64, expected: &str) {
    let declarations = EVENTS.lines().count() as u64;
    check_error(&format!("{EVENTS}{query}"), declarations + line, column, expected);
}

fn check_error(script: &str, line: u64, column: u64, expected: &str) {
    let error = match compile_text(script) {
        Ok(compiled) => panic!("compiled, expected an error holding {expected:?}:\n{}", compiled.job().to_json()),
        Err(error) => error,
    };
    let message = error.to_string();
    assert!(message.contains(expected), "{message:?} does not hold {expected:?}");
    assert_eq!(error.at, Position { line, column }, "{message}");
}

#[test]
fn examples_compile_to_the_plans_they_describe() {
    let ysb = compile_text(&repository_file("examples/ysb.sql").unwrap()).unwrap();
    let kinds: Vec<&str> = ysb.job().plan.nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(kinds, ["source", "decode_json", "filter", "project", "lookup", "exchange", "window_aggregate", "sink"]);
    let gateway = compile_text(&repository_file("examples/gateway.sql").unwrap()).unwrap();
    let kinds: Vec<&str> = gateway.job().plan.nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(
        kinds,
        ["source", "decode_json", "increments", "project", "exchange", "keyed_aggregate", "top_k", "sink"]
    );
    assert_eq!(gateway.job().settings.batch_interval_ms, 1_000);
    assert_eq!(gateway.job().settings.start_ms, Some(1_800_000_000_000), "batches start where the generator does");
}

#[test]
fn explain_names_the_stages_exchanges_and_map_side_combining() {
    let script = format!(
        "EXPLAIN {}",
        repository_file("examples/ysb.sql")
            .unwrap()
            .rsplit_once("SELECT")
            .map(|(_, query)| format!("SELECT{query}"))
            .unwrap()
    );
    let declarations: String =
        repository_file("examples/ysb.sql").unwrap().split("SELECT window_start").next().unwrap().to_string();
    let compiled = compile_text(&format!("{declarations}{script}")).unwrap();
    assert!(matches!(compiled, Compiled::Explain(_)));
    let text = sleet_sql::explain(compiled.job()).unwrap();
    for expected in [
        "window_aggregate  tumbling 10000 ms on event_time",
        "exchange: hash(campaign_id) into 2 partitions",
        "decode_json → filter → project → lookup → partial_window_aggregate",
        "partial aggregation map-side: yes",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
}

#[test]
fn a_plain_query_is_a_single_stage_with_its_projection() {
    let compiled = compile_text(&format!(
        "{EVENTS}SELECT ad_id, price * 2 AS doubled FROM events WHERE price > 1.5 AND event_type IN ('view', 'click')"
    ))
    .unwrap();
    let nodes = &compiled.job().plan.nodes;
    let kinds: Vec<&str> = nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(kinds, ["source", "decode_json", "filter", "project", "sink"]);
    let Operator::Project { columns } = &nodes[3].operator else { unreachable!() };
    let names: Vec<&str> = columns.iter().map(|(_, name)| name.as_str()).collect();
    assert_eq!(names, ["ad_id", "doubled"]);
}

#[test]
fn scalar_expressions_plan_onto_the_plan_s_functions() {
    let compiled = compile_text(&format!(
        "{EVENTS}SELECT upper(ad_id) || '-' || SUBSTRING(event_type FROM 1 FOR 2) AS tag,
                CASE WHEN price IS NULL THEN 0.0 WHEN price > 10 THEN price * 0.908 ELSE -price END AS adjusted,
                CASE event_type WHEN 'view' THEN 1 ELSE 0 END AS is_view,
                COALESCE(price, CAST(NULL AS DOUBLE), 1) AS filled, round(price, 1) AS rounded
         FROM events WHERE ad_id LIKE 'ad-%' AND price IS NOT NULL AND event_type NOT IN ('click')"
    ))
    .unwrap();
    let Operator::Project { columns } = &compiled.job().plan.nodes[3].operator else {
        panic!("a projection after the filter: {:?}", compiled.job().plan.nodes)
    };
    let texts: Vec<String> = columns.iter().map(|(expr, name)| format!("{name} = {expr}")).collect();
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert!(texts[0].contains("upper(ad_id)") && texts[0].contains("substring(event_type, 1, 2)"), "{texts:?}");
    assert!(texts[1].starts_with("adjusted = CASE"), "{texts:?}");
    check_query_error("SELECT CASE WHEN price > 1 THEN 'big' ELSE 0 END FROM events", 1, 8, "CASE");
}

#[test]
fn insert_into_a_sink_table_renames_by_position_and_checks_types() {
    let ok = compile_text(&format!(
        "{EVENTS}CREATE TABLE out (ad VARCHAR, kind VARCHAR) WITH (connector = 'files', path = '/tmp/out');
         INSERT INTO out SELECT ad_id, event_type FROM events"
    ))
    .unwrap();
    let job = ok.job();
    assert_eq!(job.plan.name, "out");
    assert!(
        matches!(&job.plan.nodes.last().unwrap().operator, Operator::Sink { spec: SinkSpec::JsonLines { dir } } if dir == "/tmp/out")
    );
    let declarations = EVENTS.lines().count() as u64;
    check_error(
        &format!(
            "{EVENTS}CREATE TABLE out (ad VARCHAR, n BIGINT) WITH (connector = 'blackhole');\nINSERT INTO out SELECT ad_id, event_type FROM events"
        ),
        declarations + 2,
        1,
        "the query's column `event_type`, written to `out.n` has type utf8, expected BIGINT",
    );
}

#[test]
fn syntax_errors_point_where_the_parser_stopped() {
    check_query_error("SELECT ad_id FROM events WHERE", 1, 31, "Expected: an expression");
    check_query_error("SELECT ad_id FROM events\nWHERE price > 1 1", 2, 17, "`1` after the end of the statement");
}

#[test]
fn unknown_names_are_named_with_what_is_there() {
    check_query_error("SELECT ad_id FROM evnets", 1, 19, "unknown table `evnets` (declared: campaigns, events)");
    check_query_error("SELECT ad_id FROM events\nWHERE evnet_type = 'view'", 2, 7, "unknown column `evnet_type`");
    check_query_error("SELECT lowr(ad_id) FROM events", 1, 8, "unknown function `lowr` (sleet has: coalesce, lower,");
    check_query_error(
        "CREATE TABLE ads (ad_id VARCHAR, event_type VARCHAR) WITH (connector = 'csv', path = 'ads.csv');\nSELECT e.ad_id FROM events e JOIN ads a ON e.ad_id = a.ad_id",
        2,
        35,
        "`a.event_type` has the name of a stream column",
    )
}

#[test]
fn types_that_do_not_fit_are_refused() {
    check_query_error("SELECT ad_id FROM events WHERE event_type + 1 = 2", 1, 32, "cannot apply Add to utf8 and int64");
    check_query_error(
        "SELECT ad_id FROM events WHERE price",
        1,
        32,
        "the condition `price` has type float64, expected BOOLEAN",
    );
    check_query_error(
        "SELECT window_start, ad_id, SUM(event_type) AS s\nFROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND))\nGROUP BY window_start, window_end, ad_id",
        1,
        29,
        "the argument of `SUM(event_type)` has type utf8, expected BIGINT or DOUBLE",
    );
}

#[test]
fn every_unsupported_construct_is_named() {
    let cases: &[(&str, u64, &str)] = &[
        ("SELECT ad_id FROM events ORDER BY ad_id", 35, "ORDER BY on a stream"),
        ("SELECT ad_id FROM events LIMIT 10", 1, "LIMIT / FETCH on a stream"),
        ("SELECT DISTINCT ad_id FROM events", 1, "SELECT DISTINCT"),
        ("SELECT ad_id FROM events UNION SELECT ad_id FROM events", 1, "UNION of queries"),
        ("WITH x AS (SELECT ad_id FROM events) SELECT ad_id FROM x", 1, "WITH (common table expressions)"),
        ("SELECT e.ad_id FROM events e LEFT JOIN campaigns c ON e.ad_id = c.ad_id", 40, "the join `LEFT JOIN`"),
        ("SELECT ad_id FROM events, campaigns", 27, "a comma-separated FROM list"),
        ("SELECT ad_id FROM events WHERE ad_id IN (SELECT ad_id FROM campaigns)", 32, "the expression `ad_id IN (SELECT"),
        ("SELECT ROW_NUMBER() OVER (ORDER BY price) AS r FROM events", 8, "the window function"),
        ("SELECT ad_id FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(event_time), INTERVAL '1' SECOND, INTERVAL '2' SECOND))", 25, "CUMULATE"),
        ("SELECT ad_id FROM events WHERE ad_id = NULL", 40, "an untyped NULL"),
        ("SELECT ad_id FROM events WHERE ad_id ILIKE 'a%'", 32, "the expression `ad_id ILIKE"),
    ];
    for (query, column, expected) in cases {
        check_query_error(query, 1, *column, expected);
    }
}

#[test]
fn windows_and_aggregates_are_checked_against_the_table() {
    check_query_error(
        "SELECT ad_id, COUNT(*) AS n FROM events WHERE COUNT(*) > 1 GROUP BY ad_id",
        1,
        47,
        "an aggregate belongs in HAVING",
    );
    check_query_error(
        "SELECT ad_id, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(price), INTERVAL '10' SECOND)) GROUP BY window_start, ad_id",
        1,
        61,
        "the window is over `price` but `events`'s WATERMARK is on `event_time`",
    );
    check_query_error(
        "SELECT ad_id, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)) GROUP BY ad_id",
        1,
        1,
        "must GROUP BY window_start, window_end",
    );
    check_query_error("SELECT ad_id, COUNT(*) AS n FROM events GROUP BY ad_id", 1, 1, "SET 'state.ttl'");
}

/// The window aggregate a query plans, and its output columns.
fn window_of(query: &str) -> (sleet_plan::WindowSpec, Vec<sleet_plan::Aggregate>, Vec<String>) {
    let compiled = compile_text(&format!("{EVENTS}{query}")).unwrap_or_else(|error| panic!("{query}: {error}"));
    let job = compiled.job();
    let window = job.plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::WindowAggregate { window, aggregates, .. } => Some((window.clone(), aggregates.clone())),
        _ => None,
    });
    let (window, aggregates) = window.expect("a window aggregate");
    let schemas = sleet_plan::validate::validate(&job.plan).expect("valid");
    let output = schemas.last().expect("a sink").names().into_iter().map(str::to_string).collect();
    (window, aggregates, output)
}

#[test]
fn hopping_and_session_windows_and_their_aggregates_plan_onto_the_window_kinds() {
    let (hop, aggregates, output) = window_of(
        "SELECT window_start, window_end, ad_id, AVG(price) AS mean, COUNT(DISTINCT user_id) AS users
         FROM TABLE(HOP(TABLE events, DESCRIPTOR(event_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, ad_id",
    );
    assert_eq!(hop, sleet_plan::WindowSpec::hopping("event_time", 10_000, 2_000, 1_000));
    let funcs: Vec<sleet_plan::AggFunc> = aggregates.iter().map(|aggregate| aggregate.func).collect();
    assert_eq!(funcs, [sleet_plan::AggFunc::Avg, sleet_plan::AggFunc::CountDistinct]);
    assert_eq!(output, ["window_start", "window_end", "ad_id", "mean", "users"]);
    let (session, _, output) = window_of(
        "SELECT ad_id, window_start, window_end, COUNT(*) AS n
         FROM TABLE(SESSION(TABLE events, DESCRIPTOR(event_time), INTERVAL '30' SECOND))
         GROUP BY ad_id, window_start, window_end",
    );
    assert_eq!(session, sleet_plan::WindowSpec::session("event_time", 30_000, 1_000));
    assert_eq!(output, ["ad_id", "window_start", "window_end", "n"]);
    let (tumble, _, output) = window_of(
        "SELECT window_start, window_end, ad_id, COUNT(*) AS n
         FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end, ad_id HAVING COUNT(*) > 2",
    );
    assert_eq!(tumble, sleet_plan::WindowSpec::tumbling("event_time", 10_000, 1_000));
    assert_eq!(output, ["window_start", "window_end", "ad_id", "n"], "a tumbling window's end is computed when read");
    check_query_error(
        "SELECT ad_id, COUNT(*) AS n FROM TABLE(HOP(TABLE events, DESCRIPTOR(event_time), INTERVAL '3' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, ad_id",
        1,
        112,
        "not a whole multiple of its slide",
    );
    check_query_error(
        "SET 'state.ttl' = '1 h';\nSELECT ad_id, AVG(price) AS mean FROM events GROUP BY ad_id",
        2,
        15,
        "`AVG(price)` in a running aggregate",
    );
}

#[test]
fn a_top_n_needs_its_pattern() {
    let inner = "SELECT ad_id, event_type, COUNT(*) AS n, ROW_NUMBER() OVER (PARTITION BY event_type ORDER BY COUNT(*) {order}) AS r FROM events GROUP BY ad_id, event_type";
    let ttl = "SET 'state.ttl' = '1 h';\n";
    let query =
        |order: &str, filter: &str| format!("{ttl}SELECT * FROM ({}) WHERE {filter}", inner.replace("{order}", order));
    check_query_error(&query("ASC", "r <= 3"), 2, 57, "ROW_NUMBER() ordered ascending");
    check_query_error(&query("DESC", "r = 3"), 2, 1, "filters `WHERE r <= N`");
    let compiled = compile_text(&format!("{EVENTS}{}", query("DESC", "r <= 3"))).unwrap();
    let top_k = compiled.job().plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::TopK(spec) => Some(spec.clone()),
        _ => None,
    });
    let top_k = top_k.expect("a top_k node");
    assert_eq!(
        (top_k.group.as_slice(), top_k.keys.as_slice(), top_k.k),
        (&["event_type".to_string()][..], &["ad_id".to_string()][..], 3)
    );
    let exchange = compiled.job().plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::Exchange { keys, .. } => Some(keys.clone()),
        _ => None,
    });
    assert_eq!(exchange.unwrap(), ["event_type"], "each ranking lives in one partition");
}

#[test]
fn bad_declarations_name_the_table_and_option() {
    let table = |columns: &str, options: &str| format!("CREATE TABLE t ({columns}) WITH ({options});\nSELECT a FROM t");
    check_error(&table("a BIGINT", "connector = 'kafak'"), 1, 45, "unknown connector 'kafak'");
    check_error(&table("a BIGINT", "connector = 'kafka', topic = 'x'"), 1, 1, "option `brokers`: is required");
    check_error(
        &table("a BIGINT", "connector = 'kafka', brokers = 'b', topic = 'x', colour = 'red'"),
        1,
        82,
        "connector `kafka` has no such option",
    );
    check_error(&table("a TIMESTAMP(3)", "connector = 'blackhole'"), 1, 17, "declare the column BIGINT");
    let blackhole = |columns: &str| table(columns, "connector = 'blackhole'");
    check_error(&blackhole("a VARCHAR, WATERMARK FOR a AS a"), 1, 42, "the watermark column `a` has type utf8");
    check_error(&blackhole("a BIGINT, WATERMARK FOR b AS b"), 1, 41, "unknown column `b`");
    check_error(&blackhole("a BIGINT, WATERMARK FOR a AS a * 2"), 1, 46, "not supported: the watermark");
    check_error(&table("a BIGINT, a BIGINT", "connector = 'blackhole'"), 1, 27, "column `a` is declared twice");
    check_error(
        &table("a BIGINT", "connector = 'generator', kind = 'ysb', rate = 'fast'"),
        1,
        79,
        "`fast` is not events per second",
    );
    check_error("SET 'batch.intervall' = '10ms';\nSELECT 1", 1, 1, "unknown setting");
}

#[test]
fn a_script_runs_exactly_one_query() {
    check_query_error(
        "SELECT ad_id FROM events;\nSELECT ad_id FROM events",
        2,
        1,
        "a second query after the one at line",
    );
    check_error(EVENTS, 0, 0, "the script has no query");
}

/// Where `needle` first stands in `text` (one line), as a 1-based column.
fn column_of(text: &str, needle: &str) -> u64 {
    text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in {text:?}")) as u64 + 1
}

#[test]
fn nexmark_q7_ranks_each_windows_rows_map_side_then_per_window() {
    let compiled = compile_text(&repository_file("benchmarks/nexmark/q7.sql").unwrap()).unwrap();
    let job = compiled.job();
    let kinds: Vec<&str> = job.plan.nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(kinds, ["source", "decode_json", "project", "exchange", "top_rows", "project", "sink"]);
    let spec = job.plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::TopRows(spec) => Some(spec.clone()),
        _ => None,
    });
    let spec = spec.expect("a top_rows node");
    assert_eq!(spec.group, ["window_start", "window_end"]);
    assert_eq!((spec.order_by.as_str(), spec.k, spec.ranking), ("price", 1, sleet_plan::Ranking::Rank));
    assert_eq!((spec.time_column.as_str(), spec.allowed_lateness_ms), ("date_time", 4_000), "the watermark's");
    let Operator::Exchange { keys, .. } = &job.plan.nodes[3].operator else { unreachable!() };
    assert_eq!(keys, &["window_start", "window_end"], "each window's rows meet in one partition");
    let schemas = sleet_plan::validate::validate(&job.plan).unwrap();
    assert_eq!(schemas[2].names(), ["auction", "bidder", "price", "date_time", "extra", "window_start", "window_end"]);
    assert_eq!(schemas.last().unwrap().names(), ["auction", "price", "bidder", "date_time", "extra", "window_start"]);
    let physical = sleet_plan::plan_stages(&job.plan, true).unwrap();
    assert_eq!(physical.stages[0].ops.last().map(sleet_plan::PhysicalOp::kind), Some("partial_top_rows"));
    let text = sleet_sql::explain(job).unwrap();
    for expected in [
        "top_rows          top 1 rows by price per window_start, window_end (RANK: ties kept)",
        "decode_json → project → partial_top_rows",
        "partial top-rows map-side: yes",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
}

#[test]
fn nexmark_q5_counts_per_auction_then_ranks_each_windows_final_counts_after_a_second_exchange() {
    let compiled = compile_text(&repository_file("benchmarks/nexmark/q5.sql").unwrap()).unwrap();
    let job = compiled.job();
    let kinds: Vec<&str> = job.plan.nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(kinds[..6], ["source", "decode_json", "exchange", "window_aggregate", "exchange", "top_rows"]);
    let exchange_keys: Vec<&Vec<String>> = job
        .plan
        .nodes
        .iter()
        .filter_map(|node| match &node.operator {
            Operator::Exchange { keys, .. } => Some(keys),
            _ => None,
        })
        .collect();
    assert_eq!(exchange_keys, [&vec!["auction".to_string()], &vec!["window_start".into(), "window_end".into()]]);
    let Operator::WindowAggregate { window, .. } = &job.plan.nodes[3].operator else { unreachable!() };
    assert_eq!(window.emit, sleet_plan::WindowEmit::OnClose, "the ranking takes each window's final counts");
    let spec = job.plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::TopRows(spec) => Some(spec.clone()),
        _ => None,
    });
    let spec = spec.expect("a top_rows node");
    assert_eq!(spec.group, ["window_start", "window_end"]);
    assert_eq!((spec.order_by.as_str(), spec.k, spec.ranking), ("num", 1, sleet_plan::Ranking::Rank));
    assert_eq!(
        (spec.time_column.as_str(), spec.window_end_column.as_str(), spec.allowed_lateness_ms),
        ("window_end", "window_end", 10_000 + 4_000),
        "a window length and the lateness of skew between the aggregate's partitions"
    );
    let physical = sleet_plan::plan_stages(&job.plan, true).unwrap();
    assert_eq!(physical.stages.len(), 3, "map, counts, rankings");
    assert_eq!(physical.stages[1].ops.last().map(sleet_plan::PhysicalOp::kind), Some("partial_top_rows"));
    let schemas = sleet_plan::validate::validate(&job.plan).unwrap();
    assert_eq!(schemas.last().unwrap().names(), ["window_start", "auction", "num", "rank"]);
    let text = sleet_sql::explain(job).unwrap();
    assert!(text.contains("each window's rows once, as it closes"), "{text}");
}

#[test]
fn a_top_n_over_windows_must_rank_within_each_window_and_not_over_sessions() {
    let ranked = |partition: &str, window: &str| {
        format!(
            "{EVENTS}SELECT * FROM (SELECT ad_id, COUNT(*) AS n, window_start, window_end, RANK() OVER (PARTITION BY \
             {partition} ORDER BY COUNT(*) DESC) AS r FROM TABLE({window}) GROUP BY ad_id, window_start, window_end) \
             WHERE r <= 3"
        )
    };
    let tumble = "TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)";
    let by_ad = compile_text(&ranked("ad_id", tumble)).expect_err("ranks across windows");
    assert!(by_ad.to_string().contains("PARTITION BY window_start"), "{by_ad}");
    let session = "SESSION(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)";
    let sessions = compile_text(&ranked("window_start, window_end", session)).expect_err("sessions");
    assert!(sessions.to_string().contains("SESSION windows"), "{sessions}");
    let tumbling = compile_text(&ranked("window_start, window_end", tumble)).expect("a tumbling window's ranking");
    let exchanges = tumbling.job().plan.nodes.iter().filter(|node| matches!(node.operator, Operator::Exchange { .. }));
    assert_eq!(exchanges.count(), 2);
}

#[test]
fn rank_over_an_aggregate_keeps_ties_and_row_number_over_window_rows_breaks_them() {
    let ttl = "SET 'state.ttl' = '1 h';\n";
    let keyed = compile_text(&format!(
        "{EVENTS}{ttl}SELECT * FROM (SELECT ad_id, event_type, COUNT(*) AS n, RANK() OVER (PARTITION BY event_type \
         ORDER BY COUNT(*) DESC) AS r FROM events GROUP BY ad_id, event_type) WHERE r <= 3"
    ))
    .unwrap();
    let ranking = keyed.job().plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::TopK(spec) => Some(spec.ranking),
        _ => None,
    });
    assert_eq!(ranking, Some(sleet_plan::Ranking::Rank));
    let rows = compile_text(&format!(
        "{EVENTS}SELECT ad_id, price FROM (SELECT ad_id, price, ROW_NUMBER() OVER (PARTITION BY window_start ORDER \
         BY price DESC) AS r FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)) WHERE \
         event_type = 'view') WHERE r < 4"
    ))
    .unwrap();
    let kinds: Vec<&str> = rows.job().plan.nodes.iter().map(|node| node.operator.kind()).collect();
    assert_eq!(kinds, ["source", "decode_json", "filter", "project", "exchange", "top_rows", "project", "sink"]);
    let spec = rows.job().plan.nodes.iter().find_map(|node| match &node.operator {
        Operator::TopRows(spec) => Some(spec.clone()),
        _ => None,
    });
    let spec = spec.expect("a top_rows node");
    assert_eq!((spec.k, spec.ranking), (3, sleet_plan::Ranking::RowNumber));
    assert_eq!(spec.group, ["window_start", "window_end"], "window_end joins the group its start names");
    let schemas = sleet_plan::validate::validate(&rows.job().plan).unwrap();
    assert_eq!(schemas[3].names(), ["ad_id", "event_time", "price", "window_start", "window_end"], "no user_id");
}

#[test]
fn a_window_top_n_refuses_what_it_cannot_plan_by_name_and_place() {
    let tumble = "TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND))";
    let hop = "TABLE(HOP(TABLE events, DESCRIPTOR(event_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))";
    let query = |item: &str, from: &str| format!("SELECT * FROM (SELECT ad_id, {item} AS r FROM {from}) WHERE r <= 1");
    let over = "OVER (PARTITION BY window_start ORDER BY price DESC)";
    let cases = [
        (query(&format!("DENSE_RANK() {over}"), tumble), "DENSE_RANK", "`DENSE_RANK() OVER (…)` in a top-N"),
        (
            query("RANK() OVER (PARTITION BY window_start ORDER BY price ASC)", tumble),
            "RANK",
            "RANK() ordered ascending",
        ),
        (
            query("RANK() OVER (PARTITION BY ad_id ORDER BY price DESC)", tumble),
            "RANK",
            "partitioned without window_start or window_end",
        ),
        (query(&format!("RANK() {over}"), hop), "HOP(", "a top-N over HOP rows without an aggregate"),
        (query(&format!("RANK() {over}"), "events"), "events)", "a top-N over a stream's rows without a window"),
        (
            query("RANK() OVER (PARTITION BY window_start ORDER BY ad_id DESC)", tumble),
            "ad_id DESC",
            "ORDER BY `ad_id`: a top-N over a window's rows ranks by one numeric column",
        ),
        (
            query("RANK() OVER (PARTITION BY window_start, nope ORDER BY price DESC)", tumble),
            "nope",
            "PARTITION BY `nope` must name a column of the window's rows",
        ),
        (
            format!("SELECT * FROM (SELECT price * 2 AS p, RANK() {over} AS r FROM {tumble}) WHERE r <= 1"),
            "price * 2",
            "`price * 2` in a top-N over a window's rows",
        ),
    ];
    for (query, at, expected) in cases {
        check_query_error(&query, 1, column_of(&query, at), expected);
    }
}
