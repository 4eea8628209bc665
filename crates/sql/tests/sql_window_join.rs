//! Window joins compiled end to end: Nexmark q3 and q8 plan as one stream split into two
//! sides, exchanged on the key and joined per window; every construct a window join does not
//! take is refused with its line, column and what is wrong.

use std::path::Path;

use sleet_plan::{JobSettings, Operator, SinkSpec, WindowJoinSpec};
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

/// A table of persons and auctions, two views over it, and a table of other events.
const TABLES: &str = "CREATE TABLE nexmark (
    event_type VARCHAR NOT NULL, id BIGINT, name VARCHAR, state VARCHAR, seller BIGINT, category BIGINT,
    date_time BIGINT NOT NULL, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
) WITH (connector = 'generator', kind = 'nexmark', tables = 'person,auction');
CREATE VIEW person AS SELECT id, name, state, date_time FROM nexmark WHERE event_type = 'person';
CREATE VIEW auction AS SELECT id, seller, category, date_time FROM nexmark WHERE event_type = 'auction';
CREATE TABLE bids (auction BIGINT, date_time BIGINT NOT NULL, WATERMARK FOR date_time AS date_time)
WITH (connector = 'generator', kind = 'nexmark', tables = 'bid');
";

const PERSONS: &str = "TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) P";
const AUCTIONS: &str = "TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) A";
const ON: &str = "ON P.id = A.seller AND P.window_start = A.window_start";

fn kinds(compiled: &Compiled) -> Vec<&str> {
    compiled.job().plan.nodes.iter().map(|node| node.operator.kind()).collect()
}

fn join_spec(compiled: &Compiled) -> WindowJoinSpec {
    compiled
        .job()
        .plan
        .nodes
        .iter()
        .find_map(|node| match &node.operator {
            Operator::WindowJoin(spec) => Some(spec.clone()),
            _ => None,
        })
        .expect("a window join")
}

/// `query` after `TABLES` fails at `line`, `column` of the query (lines counted from its
/// first), with a message holding `expected`.
fn check_error(query: &str, line: u64, column: u64, expected: &str) {
    let declarations = TABLES.lines().count() as u64;
    let error = match compile_text(&format!("{TABLES}{query}")) {
        Ok(compiled) => panic!("compiled, expected an error holding {expected:?}:\n{}", compiled.job().to_json()),
        Err(error) => error,
    };
    let message = error.to_string();
    assert!(message.contains(expected), "{message:?} does not hold {expected:?}");
    assert_eq!(error.at, Position { line: declarations + line, column }, "{message}");
}

#[test]
fn nexmark_q3_and_q8_plan_as_one_stream_split_exchanged_and_joined() {
    for (script, distinct) in [("benchmarks/nexmark/q3.sql", false), ("benchmarks/nexmark/q8.sql", true)] {
        let compiled = compile_text(&repository_file(script).unwrap()).unwrap();
        assert_eq!(
            kinds(&compiled),
            ["source", "decode_json", "project", "filter", "exchange", "window_join", "project", "sink"],
            "{script}"
        );
        let spec = join_spec(&compiled);
        assert_eq!((spec.distinct, spec.window.size_ms, spec.window.allowed_lateness_ms), (distinct, 10_000, 4_000));
        let text = sleet_sql::explain(compiled.job()).unwrap();
        println!("{text}");
    }
}

#[test]
fn explain_shows_the_join_its_exchange_and_its_stateful_stage() {
    let script = repository_file("benchmarks/nexmark/q8.sql").unwrap().replace("INSERT INTO discard\n", "EXPLAIN ");
    let compiled = compile_text(&script).unwrap();
    assert!(matches!(compiled, Compiled::Explain(_)));
    let text = sleet_sql::explain(compiled.job()).unwrap();
    for expected in [
        "window_join       distinct pairs of one tumbling 10000 ms window on date_time (lateness 4000 ms) and one __key",
        "left: id AS p.id, name AS p.name; right: (nothing)",
        "exchange: hash(__key) into 2 partitions",
        "stage 1 (2 tasks per batch, stateful)",
        "window_join → project",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
}

#[test]
fn where_splits_into_each_side_s_condition_and_a_filter_after_the_join() {
    let compiled = compile_text(&format!(
        "{TABLES}SELECT P.name, A.id FROM {PERSONS} JOIN {AUCTIONS} {ON}
         WHERE A.category = 10 AND P.state = 'or' AND P.id + A.id > 5"
    ))
    .unwrap();
    assert_eq!(
        kinds(&compiled),
        ["source", "decode_json", "project", "filter", "exchange", "window_join", "filter", "project", "sink"]
    );
    let nodes = &compiled.job().plan.nodes;
    let Operator::Project { columns } = &nodes[2].operator else { unreachable!() };
    let side = columns[0].0.to_string();
    assert!(side.contains("state = \"or\"") && side.contains("category = 10"), "{side}");
    let Operator::Filter { predicate } = &nodes[6].operator else { unreachable!() };
    assert_eq!(predicate.to_string(), "((p.id + a.id) > 5)");
    let spec = join_spec(&compiled);
    let outputs: Vec<String> = spec.outputs().map(|column| format!("{}→{}", column.input, column.output)).collect();
    assert_eq!(outputs, ["name→p.name", "id→p.id", "id→a.id"], "both ids pass as the one decoded column");
}

#[test]
fn a_side_may_be_the_table_itself_with_its_condition_in_where() {
    let compiled = compile_text(&format!(
        "{TABLES}SELECT P.name, A.id
         FROM TABLE(TUMBLE(TABLE nexmark, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) P
         JOIN TABLE(TUMBLE(TABLE nexmark, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) A {ON}
         WHERE P.event_type = 'person' AND A.event_type = 'auction'"
    ))
    .unwrap();
    assert_eq!(kinds(&compiled)[5], "window_join");
}

#[test]
fn a_computed_view_column_is_computed_on_its_side_s_rows_only() {
    let script = format!(
        "{TABLES}CREATE VIEW loud AS SELECT id, upper(name) AS shout, date_time FROM nexmark WHERE event_type = 'person';
         SELECT L.shout FROM TABLE(TUMBLE(TABLE loud, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) L
         JOIN {AUCTIONS} ON L.id = A.seller AND L.window_start = A.window_start"
    );
    let compiled = compile_text(&script).unwrap();
    let Operator::Project { columns } = &compiled.job().plan.nodes[2].operator else { unreachable!() };
    let texts: Vec<String> = columns.iter().map(|(expr, name)| format!("{name} = {expr}")).collect();
    assert!(
        texts.contains(&"l.shout = CASE WHEN (event_type = \"person\") THEN upper(name) END".to_string()),
        "{texts:?}"
    );
}

#[test]
fn a_lookup_join_of_a_static_table_keeps_its_own_planning() {
    let compiled = compile_text(&repository_file("examples/ysb.sql").unwrap()).unwrap();
    assert!(kinds(&compiled).contains(&"lookup") && !kinds(&compiled).contains(&"window_join"));
}

#[test]
fn a_window_join_refuses_what_it_does_not_take_naming_line_column_and_construct() {
    let join = |right: &str, on: &str| format!("SELECT P.name FROM {PERSONS}\nJOIN {right}\n{on}");
    // Two source tables: at the right side.
    check_error(
        &join(
            "TABLE(TUMBLE(TABLE bids, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) B",
            "ON P.id = B.auction AND P.window_start = B.window_start",
        ),
        2,
        12,
        "two different source tables",
    );
    // Windows of two sizes: at the right side's size.
    check_error(
        &join("TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '5' SECOND)) A", ON),
        2,
        66,
        "windows of 10000 ms with windows of 5000 ms",
    );
    check_error(
        &join("TABLE(HOP(TABLE auction, DESCRIPTOR(date_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) A", ON),
        2,
        12,
        "a window join over HOP windows; sleet joins TUMBLE windows",
    );
    check_error(
        &join("TABLE(SESSION(TABLE auction, DESCRIPTOR(date_time), INTERVAL '5' SECOND)) A", ON),
        2,
        12,
        "a window join over SESSION(…); sleet joins TUMBLE windows",
    );
    check_error(&join("auction A", ON), 2, 6, "joining `auction A` without a window");
    check_error(
        &format!("SELECT P.name FROM {PERSONS}\nLEFT JOIN {AUCTIONS}\n{ON}"),
        2,
        17,
        "the join `LEFT JOIN` of two streams",
    );
    check_error(
        &join(AUCTIONS, "ON P.id < A.seller AND P.window_start = A.window_start"),
        3,
        4,
        "the condition `P.id < A.seller` in a window join's ON",
    );
    check_error(
        &join(AUCTIONS, "ON P.id = A.seller AND P.window_start = A.window_end"),
        3,
        24,
        "the window condition `P.window_start = A.window_end`",
    );
    check_error(&join(AUCTIONS, "ON P.id = A.seller"), 3, 4, "add L.window_start = R.window_start");
    check_error(&join(AUCTIONS, "ON P.window_start = A.window_start"), 3, 4, "needs a key");
    check_error(
        &join(AUCTIONS, "ON P.name = A.seller AND P.window_start = A.window_start"),
        3,
        4,
        "compares VARCHAR with BIGINT",
    );
    check_error(
        &join(AUCTIONS, "ON P.id = A.seller AND P.id = A.id AND P.window_start = A.window_start"),
        3,
        24,
        "a second key",
    );
}

#[test]
fn a_window_join_refuses_sides_that_may_share_rows_and_what_follows_it_that_it_cannot_plan() {
    let tumble = "TABLE(TUMBLE(TABLE nexmark, DESCRIPTOR(date_time), INTERVAL '10' SECOND))";
    check_error(
        &format!("SELECT P.name FROM {tumble} P\nJOIN {tumble} A\n{ON} WHERE P.event_type = 'person'"),
        2,
        12,
        "a window join whose sides may share rows",
    );
    check_error(
        &format!("SELECT P.window_start, COUNT(*) AS n FROM {PERSONS}\nJOIN {AUCTIONS}\n{ON} GROUP BY P.window_start"),
        1,
        1,
        "an aggregate over a window join",
    );
    check_error(&format!("SELECT * FROM {PERSONS}\nJOIN {AUCTIONS}\n{ON}"), 1, 1, "`*` in a window join's SELECT list");
}

#[test]
fn select_distinct_maps_onto_the_join_when_it_selects_a_key_and_a_window() {
    let select = |list: &str| format!("SELECT DISTINCT {list} FROM {PERSONS}\nJOIN {AUCTIONS}\n{ON}");
    let compiled = compile_text(&format!("{TABLES}{}", select("A.seller, P.window_end"))).unwrap();
    assert!(join_spec(&compiled).distinct, "the right side's key counts");
    check_error(&select("P.name, P.window_start"), 1, 1, "without either side's join key");
    check_error(&select("P.id, P.name"), 1, 1, "without window_start or window_end");
    check_error(&select("upper(P.name) AS n, P.id, P.window_start"), 1, 1, "of the computed `n`");
    check_error(
        &format!("{} WHERE P.id + A.id > 5", select("P.id, P.window_start")),
        1,
        1,
        "whose WHERE reads `a.id`, which it does not select",
    );
    check_error("SELECT DISTINCT auction FROM bids", 1, 1, "SELECT DISTINCT; GROUP BY the columns instead");
}
