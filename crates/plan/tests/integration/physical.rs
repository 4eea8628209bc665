//! Physical planning: where stages split, when the partial aggregate appears, and which
//! columns the decoder materializes.

use sleet_plan::physical::AggregateInput;
use sleet_plan::*;

fn ysb_like(partitions: u32) -> Plan {
    ysb_with_window(partitions, WindowSpec::tumbling("event_time", 10_000, 0))
}

fn ysb_with_window(partitions: u32, window: WindowSpec) -> Plan {
    let schema = Schema::new(vec![
        Field::new("user_id", DataType::Utf8),
        Field::new("ad_id", DataType::Utf8),
        Field::new("event_type", DataType::Utf8),
        Field::new("event_time", DataType::Int64),
    ]);
    PlanBuilder::source(
        "ysb",
        SourceSpec::Ysb(YsbSourceSpec {
            seed: 1,
            rate_per_s: 10,
            partitions: 3,
            bad_fraction: 0.0,
            pre_decoded: false,
        }),
    )
    .decode_json(schema)
    .filter(col("event_type").eq(lit("view")))
    .project([col("ad_id"), col("event_time")])
    .lookup("ad_id", TableSpec::YsbCampaigns { seed: 1 }, "ad_id", ["campaign_id"])
    .exchange(["campaign_id"], partitions)
    .window_aggregate(window, ["campaign_id"], [Aggregate::count("count")])
    .sink(SinkSpec::Discard)
    .build()
    .expect("valid plan")
}

fn kinds(stage: &StagePlan) -> Vec<&'static str> {
    stage.ops.iter().map(PhysicalOp::kind).collect()
}

#[test]
fn splits_at_the_exchange_with_a_partial_aggregate_when_combining() {
    let physical = plan_stages(&ysb_like(4), true).expect("plans");
    assert_eq!(physical.stages.len(), 2);
    let (map, reduce) = (&physical.stages[0], &physical.stages[1]);
    assert_eq!(kinds(map), ["decode_json", "filter", "project", "lookup", "partial_window_aggregate"]);
    assert_eq!(map.partitions, 3, "one map task per source partition");
    let event_time = Some(sleet_plan::physical::PARTIAL_MAX_EVENT_TIME_COLUMN.to_string());
    assert_eq!(
        map.output,
        StageOutput::Shuffle { keys: vec!["campaign_id".into()], partitions: 4, event_time },
        "the window's partials carry the progress its watermark is taken from"
    );
    assert_eq!(reduce.partitions, 4);
    assert_eq!(reduce.input, StageInput::Shuffle { from_stage: StageId(0), map_partitions: 3 });
    assert_eq!(kinds(reduce), ["window_aggregate"]);
    assert!(matches!(reduce.ops[0], PhysicalOp::WindowAggregate { input: AggregateInput::Partials, .. }));
    assert_eq!(reduce.output, StageOutput::Sink(SinkSpec::Discard));
}

/// Counts per campaign and window, then a ranking per window: a second exchange moves each
/// window's counts to the partition that ranks them.
fn ysb_ranked_per_window(partitions: u32) -> Plan {
    let mut plan = ysb_like(partitions);
    let sink = plan.nodes.pop().expect("a sink");
    let top = TopKSpec {
        group: vec!["window_start".into()],
        keys: vec!["campaign_id".into()],
        order_by: "count".into(),
        k: 3,
        ranking: Ranking::RowNumber,
        time_column: "window_start".into(),
        ttl_ms: 60_000,
        max_keys: 1_000,
    };
    plan.nodes.push(Node { operator: Operator::Exchange { keys: vec!["window_start".into()], partitions: 1 } });
    plan.nodes.push(Node { operator: Operator::TopK(top) });
    plan.nodes.push(sink);
    validate::validate(&plan).expect("two exchanges are a valid plan");
    plan
}

#[test]
fn a_second_exchange_starts_a_third_stage_reading_the_second() {
    let physical = plan_stages(&ysb_ranked_per_window(4), true).expect("plans");
    assert_eq!(physical.stages.len(), 3);
    let (counts, ranking) = (&physical.stages[1], &physical.stages[2]);
    assert_eq!(kinds(counts), ["window_aggregate"]);
    assert_eq!(
        counts.output,
        StageOutput::Shuffle { keys: vec!["window_start".into()], partitions: 1, event_time: None },
        "a ranking keeps no watermark of its own"
    );
    assert_eq!(ranking.input, StageInput::Shuffle { from_stage: StageId(1), map_partitions: 4 });
    assert_eq!(kinds(ranking), ["top_k"]);
    assert!(counts.is_stateful() && ranking.is_stateful());
    assert_eq!(ranking.output, StageOutput::Sink(SinkSpec::Discard));
}

#[test]
fn a_ranking_after_a_second_exchange_must_be_partitioned_by_its_keys() {
    let mut plan = ysb_ranked_per_window(4);
    let at = plan.nodes.iter().rposition(|node| matches!(node.operator, Operator::Exchange { .. })).expect("exchange");
    plan.nodes[at] = Node { operator: Operator::Exchange { keys: vec!["campaign_id".into()], partitions: 1 } };
    let error = validate::validate(&plan).expect_err("the ranking's group is not the exchange's key").to_string();
    assert!(error.contains("top_k"), "{error}");
}

#[test]
fn without_combine_raw_rows_cross_the_exchange() {
    let physical = plan_stages(&ysb_like(2), false).expect("plans");
    assert_eq!(kinds(&physical.stages[0]), ["decode_json", "filter", "project", "lookup"]);
    assert!(matches!(physical.stages[1].ops[0], PhysicalOp::WindowAggregate { input: AggregateInput::Rows, .. }));
}

#[test]
fn a_hopping_window_combines_per_pane_and_a_session_window_never_combines() {
    let hopping = plan_stages(&ysb_with_window(2, WindowSpec::hopping("event_time", 10_000, 2_000, 0)), true);
    let hopping = hopping.expect("plans");
    assert_eq!(kinds(&hopping.stages[0]).last(), Some(&"partial_window_aggregate"));
    assert!(matches!(hopping.stages[1].ops[0], PhysicalOp::WindowAggregate { input: AggregateInput::Partials, .. }));
    let session = plan_stages(&ysb_with_window(2, WindowSpec::session("event_time", 5_000, 0)), true);
    let session = session.expect("plans");
    assert_eq!(kinds(&session.stages[0]), ["decode_json", "filter", "project", "lookup"]);
    assert!(matches!(session.stages[1].ops[0], PhysicalOp::WindowAggregate { input: AggregateInput::Rows, .. }));
}

#[test]
fn a_distinct_count_leaves_the_combine_out_and_an_average_keeps_it() {
    let with = |aggregate: Aggregate| {
        let mut plan = ysb_like(2);
        let Some(Operator::WindowAggregate { aggregates, .. }) = plan.nodes.get_mut(6).map(|node| &mut node.operator)
        else {
            panic!("the window aggregate is node 6")
        };
        aggregates.push(aggregate);
        plan_stages(&plan, true).expect("plans")
    };
    let distinct = with(Aggregate::count_distinct("ad_id", "ads"));
    assert_eq!(kinds(&distinct.stages[0]).last(), Some(&"lookup"));
    assert!(matches!(distinct.stages[1].ops[0], PhysicalOp::WindowAggregate { input: AggregateInput::Rows, .. }));
    let average = with(Aggregate::avg("event_time", "mean"));
    assert_eq!(kinds(&average.stages[0]).last(), Some(&"partial_window_aggregate"));
}

#[test]
fn the_decoder_materializes_only_the_columns_read_later() {
    let physical = plan_stages(&ysb_like(2), true).expect("plans");
    let PhysicalOp::DecodeJson { projection, schema, .. } = &physical.stages[0].ops[0] else { panic!("decode first") };
    assert_eq!(projection, &["ad_id", "event_type", "event_time"]);
    assert_eq!(schema.fields.len(), 4, "the full schema is kept so every field is still type-checked");
}

#[test]
fn a_plan_survives_the_job_file_round_trip() {
    let job = JobFile {
        plan: ysb_like(2),
        settings: JobSettings {
            batch_interval_ms: 100,
            duration_ms: Some(1_000),
            scheduler: SchedulerKind::Bsp,
            group_size: GroupSize::Fixed(10),
            ..JobSettings::default()
        },
        query: None,
    };
    assert_eq!(JobFile::from_json(&job.to_json()).expect("parses"), job);
}

/// Bids ranked per 10 s window: the window's bounds computed, then the top rows by price.
fn top_bids(spec: TopRowsSpec) -> Plan {
    let schema = Schema::new(vec![
        Field::new("auction", DataType::Int64),
        Field::new("price", DataType::Int64),
        Field::new("url", DataType::Utf8),
        Field::new("date_time", DataType::Int64),
    ]);
    PlanBuilder::source(
        "bids",
        SourceSpec::Ysb(YsbSourceSpec {
            seed: 1,
            rate_per_s: 10,
            partitions: 2,
            bad_fraction: 0.0,
            pre_decoded: false,
        }),
    )
    .decode_json(schema)
    .project_named([
        (col("auction"), "auction"),
        (col("price"), "price"),
        (col("date_time"), "date_time"),
        (col("date_time").window_start(10_000), "window_start"),
        (col("date_time").window_start(10_000).add(lit(10_000i64)), "window_end"),
    ])
    .exchange(["window_start"], 3)
    .top_rows(spec)
    .sink(SinkSpec::Discard)
    .build()
    .expect("valid plan")
}

fn top_rows_spec() -> TopRowsSpec {
    TopRowsSpec {
        group: vec!["window_start".into(), "window_end".into()],
        order_by: "price".into(),
        k: 1,
        ranking: Ranking::Rank,
        time_column: "date_time".into(),
        window_end_column: "window_end".into(),
        allowed_lateness_ms: 4_000,
        max_groups: 100,
    }
}

#[test]
fn top_rows_ranks_map_side_first_when_combining_and_reads_every_column_it_carries() {
    let combined = plan_stages(&top_bids(top_rows_spec()), true).expect("plans");
    assert_eq!(kinds(&combined.stages[0]), ["decode_json", "project", "partial_top_rows"]);
    assert_eq!(kinds(&combined.stages[1]), ["top_rows"]);
    assert!(matches!(combined.stages[1].ops[0], PhysicalOp::TopRows { input: AggregateInput::Partials, .. }));
    assert!(combined.stages[1].is_stateful() && !combined.stages[0].is_stateful());
    let PhysicalOp::DecodeJson { projection, .. } = &combined.stages[0].ops[0] else { panic!("decode first") };
    assert_eq!(projection, &["auction", "price", "date_time"], "`url` is read by nothing");
    let plain = plan_stages(&top_bids(top_rows_spec()), false).expect("plans");
    assert_eq!(kinds(&plain.stages[0]), ["decode_json", "project"]);
    assert!(matches!(plain.stages[1].ops[0], PhysicalOp::TopRows { input: AggregateInput::Rows, .. }));
}

#[test]
fn top_rows_is_checked_for_its_window_and_its_partition() {
    let refused = |spec: TopRowsSpec, expected: &str| {
        let nodes = top_bids(top_rows_spec()).nodes;
        let mut plan = Plan { name: "bids".into(), nodes };
        let index = plan.nodes.iter().position(|node| node.operator.kind() == "top_rows").expect("top_rows");
        plan.nodes[index].operator = Operator::TopRows(spec);
        let error = plan_stages(&plan, true).expect_err(expected).to_string();
        assert!(error.contains("node 4 (top_rows)") && error.contains(expected), "{error}");
    };
    refused(TopRowsSpec { group: vec!["window_end".into()], ..top_rows_spec() }, "`window_start` is not among `group`");
    refused(TopRowsSpec { group: vec!["window_start".into()], ..top_rows_spec() }, "must be one of `group`");
    refused(TopRowsSpec { order_by: "auctio".into(), ..top_rows_spec() }, "`auctio`");
    refused(TopRowsSpec { k: 0, ..top_rows_spec() }, "`k`");
    refused(TopRowsSpec { allowed_lateness_ms: -1, ..top_rows_spec() }, "allowed_lateness_ms");
    let text = serde_json::to_string(&top_rows_spec()).expect("json");
    let read: TopRowsSpec = serde_json::from_str(&text.replace(r#","ranking":"rank""#, "")).expect("no ranking");
    assert_eq!(read.ranking, Ranking::RowNumber, "a job file without `ranking` numbers rows");
}
