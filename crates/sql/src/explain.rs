//! `EXPLAIN`: a job's logical plan, node by node with its output columns, and the stages it
//! runs as, with their exchanges and whether partial aggregation (or a top-rows ranking's
//! partial) runs map-side.

use std::fmt::Write;

use sleet_plan::node::WindowKind;
use sleet_plan::{
    plan_stages, AggFunc, Aggregate, JobFile, JoinColumn, Operator, PhysicalOp, PlanError, Ranking, Schema, SinkSpec,
    SourceSpec, StageInput, StageOutput, TableSpec, WindowEmit,
};

use crate::types::sql_name;

/// The text `EXPLAIN` prints for `job`.
pub fn explain(job: &JobFile) -> Result<String, PlanError> {
    let schemas = sleet_plan::validate::validate(&job.plan)?;
    let mut text = String::from("logical plan\n");
    for (index, (node, schema)) in job.plan.nodes.iter().zip(&schemas).enumerate() {
        let _ = writeln!(text, "  {index:>2} {:<17} {}", node.operator.kind(), describe(&node.operator));
        if index + 1 < job.plan.nodes.len() && !matches!(node.operator, Operator::Source { .. }) {
            let _ = writeln!(text, "     {:<17} → {}", "", columns(schema));
        }
    }
    let physical = plan_stages(&job.plan, job.settings.combine)?;
    text.push_str("physical plan\n");
    for stage in &physical.stages {
        let input = match &stage.input {
            StageInput::Source(spec) => format!("reads {}", source_name(spec)),
            StageInput::Shuffle { from_stage, map_partitions } => {
                format!("pulls one block from each of the {map_partitions} tasks of {from_stage}")
            }
        };
        let output = match &stage.output {
            StageOutput::Shuffle { keys, partitions, .. } => {
                format!("exchange: hash({}) into {partitions} partitions", keys.join(", "))
            }
            StageOutput::Sink(spec) => format!("writes {}", sink_name(spec)),
        };
        let ops: Vec<&str> = stage.ops.iter().map(PhysicalOp::kind).collect();
        let _ = writeln!(
            text,
            "  {} ({} tasks per batch{})",
            stage.id,
            stage.partitions,
            if stage.is_stateful() { ", stateful" } else { "" }
        );
        let _ = writeln!(text, "     {input}");
        let _ = writeln!(text, "     {}", if ops.is_empty() { "(no operators)".to_string() } else { ops.join(" → ") });
        let _ = writeln!(text, "     {output}");
    }
    let partial = physical
        .stages
        .iter()
        .flat_map(|stage| &stage.ops)
        .any(|op| matches!(op, PhysicalOp::PartialWindowAggregate { .. }));
    let windowed = job.plan.nodes.iter().any(|node| matches!(node.operator, Operator::WindowAggregate { .. }));
    if windowed {
        let _ = writeln!(
            text,
            "partial aggregation map-side: {}",
            match (partial, job.settings.combine) {
                (true, _) => "yes (each map task folds its rows per window and key before the exchange)",
                (false, false) => "no (SET 'combine' = 'false')",
                (false, true) => "no (an aggregate here cannot be split)",
            }
        );
    }
    let ranks_rows = job.plan.nodes.iter().any(|node| matches!(node.operator, Operator::TopRows(_)));
    if ranks_rows {
        let partial =
            physical.stages.iter().flat_map(|stage| &stage.ops).any(|op| matches!(op, PhysicalOp::PartialTopRows(_)));
        let _ = writeln!(
            text,
            "partial top-rows map-side: {}",
            if partial {
                "yes (each map task keeps its batch's top rows per group before the exchange)"
            } else {
                "no (SET 'combine' = 'false')"
            }
        );
    }
    Ok(text)
}

fn columns(schema: &Schema) -> String {
    schema
        .fields
        .iter()
        .map(|field| format!("{} {}", field.name, sql_name(field.data_type)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(operator: &Operator) -> String {
    match operator {
        Operator::Source { spec } => source_name(spec),
        Operator::DecodeJson { max_record_bytes, .. } => format!("JSON records of at most {max_record_bytes} bytes"),
        Operator::DecodeAvro { max_record_bytes, .. } => format!("Avro records of at most {max_record_bytes} bytes"),
        Operator::Filter { predicate } => format!("{predicate}"),
        Operator::Project { columns } => columns
            .iter()
            .map(|(expr, name)| if expr.to_string() == *name { name.clone() } else { format!("{expr} AS {name}") })
            .collect::<Vec<_>>()
            .join(", "),
        Operator::Lookup { key, table, table_key, columns } => {
            let table = match table {
                TableSpec::YsbCampaigns { seed } => format!("ysb campaigns (seed {seed})"),
                TableSpec::Csv { path, .. } => format!("csv {path}"),
            };
            format!("{key} = {table}.{table_key}, adds {}", columns.join(", "))
        }
        Operator::Exchange { keys, partitions } => format!("hash({}) into {partitions} partitions", keys.join(", ")),
        Operator::WindowAggregate { window, keys, aggregates } => {
            format!(
                "{} on {} (lateness {} ms), by {}: {}",
                match window.kind() {
                    WindowKind::Tumbling { size_ms } => format!("tumbling {size_ms} ms"),
                    WindowKind::Hopping { size_ms, slide_ms } => format!("hopping {size_ms} ms every {slide_ms} ms"),
                    WindowKind::Session { gap_ms } => format!("sessions with gaps of {gap_ms} ms"),
                },
                window.time_column,
                window.allowed_lateness_ms,
                keys.join(", "),
                aggregate_list(aggregates)
            ) + match window.emit {
                WindowEmit::OnClose if window.gap_ms.is_none() => "; each window's rows once, as it closes",
                _ => "",
            }
        }
        Operator::Increments(spec) => format!(
            "{} readings of {} per {}, in {} order (lateness {} ms, state ttl {} ms)",
            format!("{:?}", spec.encoding).to_lowercase(),
            spec.columns.join(", "),
            spec.keys.join(", "),
            spec.time_column,
            spec.allowed_lateness_ms,
            spec.ttl_ms
        ),
        Operator::KeyedAggregate(spec) => {
            format!("by {}: {} (state ttl {} ms)", spec.keys.join(", "), aggregate_list(&spec.aggregates), spec.ttl_ms)
        }
        Operator::TopK(spec) => format!(
            "top {} {} by {} per {}{}",
            spec.k,
            spec.keys.join(", "),
            spec.order_by,
            if spec.group.is_empty() { "(all)".to_string() } else { spec.group.join(", ") },
            ranking_note(spec.ranking)
        ),
        Operator::TopRows(spec) => format!(
            "top {} rows by {} per {}{}; a group is final once the watermark ({} less {} ms) passes its {}",
            spec.k,
            spec.order_by,
            spec.group.join(", "),
            ranking_note(spec.ranking),
            spec.time_column,
            spec.allowed_lateness_ms,
            spec.window_end_column
        ),
        Operator::WindowJoin(spec) => {
            let side = |columns: &[JoinColumn]| match columns {
                [] => "(nothing)".to_string(),
                columns => columns
                    .iter()
                    .map(|column| format!("{} AS {}", column.input, column.output))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            format!(
                "{}pairs of one tumbling {} ms window on {} (lateness {} ms) and one {}, the side in {}; \
                 left: {}; right: {} (max_rows {})",
                if spec.distinct { "distinct " } else { "" },
                spec.window.size_ms,
                spec.window.time_column,
                spec.window.allowed_lateness_ms,
                spec.key_column,
                spec.side_column,
                side(&spec.left),
                side(&spec.right),
                spec.max_rows
            )
        }
        Operator::Sink { spec } => sink_name(spec),
    }
}

fn ranking_note(ranking: Ranking) -> &'static str {
    match ranking {
        Ranking::RowNumber => "",
        Ranking::Rank => " (RANK: ties kept)",
    }
}

fn aggregate_list(aggregates: &[Aggregate]) -> String {
    aggregates
        .iter()
        .map(|aggregate| {
            let func = match aggregate.func {
                AggFunc::Count => "COUNT",
                AggFunc::Sum => "SUM",
                AggFunc::Min => "MIN",
                AggFunc::Max => "MAX",
                AggFunc::Avg => "AVG",
                AggFunc::CountDistinct => "COUNT(DISTINCT",
            };
            let argument = aggregate.column.as_deref().unwrap_or("*");
            match aggregate.func {
                AggFunc::CountDistinct => format!("COUNT(DISTINCT {argument}) AS {}", aggregate.name),
                _ => format!("{func}({argument}) AS {}", aggregate.name),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn source_name(spec: &SourceSpec) -> String {
    match spec {
        SourceSpec::Ysb(spec) => {
            format!("the ysb generator, {} events/s over {} partitions", spec.rate_per_s, spec.partitions)
        }
        SourceSpec::Numbers(spec) => format!("the numbers generator, {} partitions", spec.partitions),
        SourceSpec::Kafka(spec) => format!("Kafka topic {} on {}", spec.topic, spec.brokers),
        SourceSpec::Files(spec) => format!("JSON lines files {}", spec.path),
        SourceSpec::Gateway(spec) => {
            format!("the gateway generator, {} gateways over {} partitions", spec.gateways, spec.partitions)
        }
        SourceSpec::Nexmark(spec) => format!(
            "the Nexmark generator's {}, {} events/s over {} partitions",
            spec.tables.iter().map(|table| table.as_str()).collect::<Vec<_>>().join(", "),
            spec.rate_per_s,
            spec.partitions
        ),
    }
}

fn sink_name(spec: &SinkSpec) -> String {
    match spec {
        SinkSpec::Stdout => "stdout".into(),
        SinkSpec::JsonLines { dir } => format!("JSON lines under {dir}"),
        SinkSpec::Discard => "nowhere (blackhole)".into(),
        SinkSpec::Kafka { topic, brokers, .. } => format!("Kafka topic {topic} on {brokers}"),
    }
}
