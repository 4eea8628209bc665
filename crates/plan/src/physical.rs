//! Physical planning: split a validated plan into stages at its exchange, add the map-side
//! partial (of a window aggregate or a top-rows ranking), and push the needed columns down
//! into the decoder.
//!
//! ```text
//!  source → decode → filter → project → lookup → exchange → window_aggregate → sink
//!  └──────────────── stage 0 (map) ───────────────┘         └──── stage 1 (reduce) ───┘
//!                           + partial_window_aggregate when combining
//!
//!  source → decode → increments → project → exchange → keyed_aggregate → top_k → sink
//!  └──────── stage 0 (map, stateful) ──────────────┘         └──── stage 1 (reduce) ───┘
//!
//!  source → decode → project (window bounds) → exchange → top_rows → project → sink
//!  └────────────── stage 0 (map) ───────────┘           └───── stage 1 (reduce) ───┘
//!                      + partial_top_rows when combining
//!
//!  source → decode → project (side, key, time, columns) → filter → exchange → window_join → sink
//!  └──────────────────────── stage 0 (map) ────────────────────────┘   └── stage 1 (reduce) ──┘
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::avro::AvroSchemaSource;
use crate::error::PlanError;
use crate::expr::Expr;
use crate::node::{AggFunc, Aggregate, Operator, Plan, SinkSpec, SourceSpec, TableSpec, WindowKind, WindowSpec};
use crate::schema::Schema;
use crate::state_spec::{IncrementsSpec, KeyedAggregateSpec, TopKSpec, TopRowsSpec};
use crate::window_join::WindowJoinSpec;

/// Column a partial window aggregate or partial top-rows adds: the largest event time among
/// the rows it folded (of the row's group, for top-rows), so the reduce side can advance its
/// watermark without seeing the raw rows.
pub const PARTIAL_MAX_EVENT_TIME_COLUMN: &str = "__max_event_time";

/// The column a partial window aggregate adds after an `avg`'s partial sum (which keeps the
/// aggregate's name): the count of values summed, so the reduce side divides the merged sum
/// by the merged count.
pub fn partial_count_column(aggregate_name: &str) -> String {
    format!("__{aggregate_name}_count")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StageId(pub u32);

impl std::fmt::Display for StageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stage {}", self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhysicalPlan {
    pub stages: Vec<StagePlan>,
}

impl PhysicalPlan {
    pub fn stage(&self, id: StageId) -> &StagePlan {
        &self.stages[id.0 as usize]
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagePlan {
    pub id: StageId,
    /// How many tasks run this stage per batch.
    pub partitions: u32,
    pub input: StageInput,
    pub ops: Vec<PhysicalOp>,
    pub output: StageOutput,
}

impl StagePlan {
    /// Whether its partitions keep keyed state from batch to batch (a window aggregate,
    /// increments, a keyed aggregate, a top-k, a window join), which checkpoints snapshot. A map stage can
    /// be stateful too (increments before the exchange).
    pub fn is_stateful(&self) -> bool {
        self.ops.iter().any(PhysicalOp::is_stateful)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageInput {
    Source(SourceSpec),
    /// Pulls one block from each map partition of `from_stage`.
    Shuffle {
        from_stage: StageId,
        map_partitions: u32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageOutput {
    Shuffle {
        keys: Vec<String>,
        partitions: u32,
        /// When an event-time window reads the shuffled rows: the column of theirs whose
        /// largest value a map task reports as its partition's progress, from which the
        /// window takes its watermark.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_time: Option<String>,
    },
    Sink(SinkSpec),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AggregateInput {
    /// Raw rows: the reduce side folds them itself.
    Rows,
    /// Output of a `PartialWindowAggregate` (the reduce side merges partial values) or of a
    /// `PartialTopRows` (rows, each with its group's `PARTIAL_MAX_EVENT_TIME_COLUMN`).
    Partials,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhysicalOp {
    /// `projection` lists the schema fields that are materialized; the others are still
    /// type-checked so a malformed record is caught whichever fields the job reads.
    DecodeJson {
        schema: Schema,
        projection: Vec<String>,
        max_record_bytes: u32,
    },
    /// `schema` is the `.avsc` JSON; `projection` as for `DecodeJson` (every field is read
    /// anyway: a binary datum cannot be skipped through without decoding it).
    DecodeAvro {
        schema: serde_json::Value,
        projection: Vec<String>,
        max_record_bytes: u32,
    },
    Filter {
        predicate: Expr,
    },
    Project {
        columns: Vec<(Expr, String)>,
    },
    Lookup {
        key: String,
        table: TableSpec,
        table_key: String,
        columns: Vec<String>,
    },
    /// Folds the rows of one batch into one row per (pane, keys), a pane being a tumbling
    /// window or a hopping window's slide; keeps no state. Never for a session window.
    PartialWindowAggregate {
        window: WindowSpec,
        keys: Vec<String>,
        aggregates: Vec<Aggregate>,
    },
    /// Keyed window state across batches, emitting updated windows every batch.
    WindowAggregate {
        window: WindowSpec,
        keys: Vec<String>,
        aggregates: Vec<Aggregate>,
        input: AggregateInput,
    },
    Increments(IncrementsSpec),
    KeyedAggregate(KeyedAggregateSpec),
    TopK(TopKSpec),
    /// The rows of one batch ranked `k` or better in their group within the batch, with their
    /// group's largest event time; keeps no state. Valid before the exchange because a row in
    /// a group's top over all map tasks and batches is in the top of its own task's batch.
    PartialTopRows(TopRowsSpec),
    /// Per group, the rows ranked `k` or better across batches, emitted for changed groups.
    TopRows {
        spec: TopRowsSpec,
        input: AggregateInput,
    },
    /// Both sides' rows of a window and key held across batches, each pair emitted once.
    WindowJoin(WindowJoinSpec),
}

impl PhysicalOp {
    pub fn kind(&self) -> &'static str {
        match self {
            PhysicalOp::DecodeJson { .. } => "decode_json",
            PhysicalOp::DecodeAvro { .. } => "decode_avro",
            PhysicalOp::Filter { .. } => "filter",
            PhysicalOp::Project { .. } => "project",
            PhysicalOp::Lookup { .. } => "lookup",
            PhysicalOp::PartialWindowAggregate { .. } => "partial_window_aggregate",
            PhysicalOp::WindowAggregate { .. } => "window_aggregate",
            PhysicalOp::Increments(_) => "increments",
            PhysicalOp::KeyedAggregate(_) => "keyed_aggregate",
            PhysicalOp::TopK(_) => "top_k",
            PhysicalOp::PartialTopRows(_) => "partial_top_rows",
            PhysicalOp::TopRows { .. } => "top_rows",
            PhysicalOp::WindowJoin(_) => "window_join",
        }
    }

    /// Whether it keeps keyed state from batch to batch.
    pub fn is_stateful(&self) -> bool {
        matches!(
            self,
            PhysicalOp::WindowAggregate { .. }
                | PhysicalOp::Increments(_)
                | PhysicalOp::KeyedAggregate(_)
                | PhysicalOp::TopK(_)
                | PhysicalOp::TopRows { .. }
                | PhysicalOp::WindowJoin(_)
        )
    }
}

/// Splits `plan` into stages. `combine` adds a partial before the exchange when the exchange
/// feeds a window aggregate that can be split in two (`can_combine`) or a top-rows ranking.
pub fn plan_stages(plan: &Plan, combine: bool) -> Result<PhysicalPlan, PlanError> {
    let schemas = crate::validate::validate(plan)?;
    let required = required_columns(plan, &schemas);
    let nodes = &plan.nodes;
    let Operator::Source { spec } = &nodes[0].operator else { unreachable!("validated: source first") };
    if spec.partitions() == 0 {
        return Err(PlanError::InvalidOption {
            node: crate::error::NodeRef { index: 0, kind: "source" },
            field: "partitions".into(),
            reason: "is not known yet: the driver looks it up when the job is submitted".into(),
        });
    }

    let mut stages = Vec::new();
    let mut current = StagePlan {
        id: StageId(0),
        partitions: spec.partitions(),
        input: StageInput::Source(spec.clone()),
        ops: Vec::new(),
        output: StageOutput::Sink(SinkSpec::Discard),
    };
    for (index, node) in nodes.iter().enumerate().skip(1) {
        match &node.operator {
            Operator::Source { .. } => unreachable!("validated: one source"),
            Operator::DecodeJson { schema, max_record_bytes } => current.ops.push(PhysicalOp::DecodeJson {
                schema: schema.clone(),
                projection: projection(&schemas[index], &required[index]),
                max_record_bytes: *max_record_bytes,
            }),
            Operator::DecodeAvro { schema, max_record_bytes } => {
                let AvroSchemaSource::Inline(schema) = schema else {
                    unreachable!("validated: a schema still named by its path is refused")
                };
                current.ops.push(PhysicalOp::DecodeAvro {
                    schema: schema.clone(),
                    projection: projection(&schemas[index], &required[index]),
                    max_record_bytes: *max_record_bytes,
                });
            }
            Operator::Filter { predicate } => current.ops.push(PhysicalOp::Filter { predicate: predicate.clone() }),
            Operator::Project { columns } => current.ops.push(PhysicalOp::Project { columns: columns.clone() }),
            Operator::Lookup { key, table, table_key, columns } => current.ops.push(PhysicalOp::Lookup {
                key: key.clone(),
                table: table.clone(),
                table_key: table_key.clone(),
                columns: columns.clone(),
            }),
            Operator::Exchange { keys, partitions } => {
                let consumer = nodes.get(index + 1).map(|next| &next.operator);
                let combined = match consumer {
                    Some(Operator::WindowAggregate { window, keys: group_keys, aggregates })
                        if combine && can_combine(window, aggregates) =>
                    {
                        current.ops.push(PhysicalOp::PartialWindowAggregate {
                            window: window.clone(),
                            keys: group_keys.clone(),
                            aggregates: aggregates.clone(),
                        });
                        true
                    }
                    Some(Operator::TopRows(spec)) if combine => {
                        current.ops.push(PhysicalOp::PartialTopRows(spec.clone()));
                        true
                    }
                    _ => false,
                };
                let event_time = match consumer {
                    Some(Operator::WindowAggregate { window, .. }) => Some(if combined {
                        PARTIAL_MAX_EVENT_TIME_COLUMN.to_string()
                    } else {
                        window.time_column.clone()
                    }),
                    _ => None,
                };
                current.output = StageOutput::Shuffle { keys: keys.clone(), partitions: *partitions, event_time };
                let map_partitions = current.partitions;
                let from_stage = current.id;
                stages.push(current);
                current = StagePlan {
                    id: StageId(stages.len() as u32),
                    partitions: *partitions,
                    input: StageInput::Shuffle { from_stage, map_partitions },
                    ops: Vec::new(),
                    output: StageOutput::Sink(SinkSpec::Discard),
                };
                if combined {
                    current.ops.push(merging_op(&nodes[index + 1].operator, AggregateInput::Partials));
                }
            }
            Operator::WindowAggregate { .. } | Operator::TopRows(_) => {
                // Placed already, to merge the partials, when it follows a combined exchange.
                let already_merged =
                    matches!(current.ops.last(), Some(PhysicalOp::WindowAggregate { .. } | PhysicalOp::TopRows { .. }));
                if !already_merged {
                    current.ops.push(merging_op(&node.operator, AggregateInput::Rows));
                }
            }
            Operator::Increments(spec) => current.ops.push(PhysicalOp::Increments(spec.clone())),
            Operator::KeyedAggregate(spec) => current.ops.push(PhysicalOp::KeyedAggregate(spec.clone())),
            Operator::TopK(spec) => current.ops.push(PhysicalOp::TopK(spec.clone())),
            Operator::WindowJoin(spec) => current.ops.push(PhysicalOp::WindowJoin(spec.clone())),
            Operator::Sink { spec } => current.output = StageOutput::Sink(spec.clone()),
        }
    }
    stages.push(current);
    Ok(PhysicalPlan { stages })
}

/// The decoder's output fields that a later node reads, in schema order.
fn projection(decoded: &Schema, required: &BTreeSet<String>) -> Vec<String> {
    decoded.fields.iter().filter(|field| required.contains(&field.name)).map(|field| field.name.clone()).collect()
}

/// The reduce-side operator of a node that may take a map-side partial's output.
fn merging_op(operator: &Operator, input: AggregateInput) -> PhysicalOp {
    match operator {
        Operator::WindowAggregate { window, keys, aggregates } => PhysicalOp::WindowAggregate {
            window: window.clone(),
            keys: keys.clone(),
            aggregates: aggregates.clone(),
            input,
        },
        Operator::TopRows(spec) => PhysicalOp::TopRows { spec: spec.clone(), input },
        other => unreachable!("a {} takes no partials", other.kind()),
    }
}

/// For each node, the columns of its *output* that some later node reads.
fn required_columns(plan: &Plan, schemas: &[Schema]) -> Vec<BTreeSet<String>> {
    let nodes = &plan.nodes;
    let mut required = vec![BTreeSet::new(); nodes.len()];
    let mut needed: BTreeSet<String> = BTreeSet::new();
    for index in (0..nodes.len()).rev() {
        required[index] = needed.clone();
        // `needed` becomes the columns this node reads from its input.
        needed = match &nodes[index].operator {
            // A ranked row carries every column of its input.
            Operator::Sink { .. } | Operator::TopRows(_) => {
                schemas[index - 1].fields.iter().map(|field| field.name.clone()).collect()
            }
            Operator::WindowAggregate { window, keys, aggregates } => {
                let mut reads: BTreeSet<String> = keys.iter().cloned().collect();
                reads.insert(window.time_column.clone());
                reads.extend(aggregates.iter().filter_map(|aggregate| aggregate.column.clone()));
                reads
            }
            Operator::Increments(spec) => {
                let mut reads = needed.clone();
                reads.extend(spec.keys.iter().chain(&spec.columns).cloned());
                reads.insert(spec.time_column.clone());
                reads
            }
            Operator::KeyedAggregate(spec) => {
                let mut reads: BTreeSet<String> = spec.keys.iter().cloned().collect();
                reads.insert(spec.time_column.clone());
                reads.extend(spec.aggregates.iter().filter_map(|aggregate| aggregate.column.clone()));
                reads
            }
            Operator::TopK(spec) => {
                let mut reads: BTreeSet<String> = spec.group.iter().chain(&spec.keys).cloned().collect();
                reads.insert(spec.order_by.clone());
                reads.insert(spec.time_column.clone());
                reads
            }
            Operator::WindowJoin(spec) => {
                let mut reads: BTreeSet<String> = spec.outputs().map(|column| column.input.clone()).collect();
                reads.extend([spec.window.time_column.clone(), spec.side_column.clone(), spec.key_column.clone()]);
                reads
            }
            Operator::Exchange { keys, .. } => {
                let mut reads = needed.clone();
                reads.extend(keys.iter().cloned());
                reads
            }
            Operator::Lookup { key, columns, .. } => {
                let mut reads: BTreeSet<String> =
                    needed.iter().filter(|name| !columns.contains(name)).cloned().collect();
                reads.insert(key.clone());
                reads
            }
            Operator::Project { columns } => columns
                .iter()
                .filter(|(_, name)| needed.contains(name))
                .flat_map(|(expr, _)| expr.columns().into_iter().map(str::to_string))
                .collect(),
            Operator::Filter { predicate } => {
                let mut reads = needed.clone();
                reads.extend(predicate.columns().into_iter().map(str::to_string));
                reads
            }
            Operator::DecodeJson { .. } | Operator::DecodeAvro { .. } | Operator::Source { .. } => BTreeSet::new(),
        };
    }
    required
}

/// Whether a window aggregate splits into a map-side partial and a reduce-side merge. Tumbling
/// and hopping windows do: the partial folds each slide-long pane (for tumbling, the window),
/// and every window covering a pane merges it, since a window is a whole number of panes.
/// A session window does not: its bounds depend on the gaps between one key's rows across
/// every map partition and batch, so no fixed pane can stand for part of it.
pub fn can_combine(window: &WindowSpec, aggregates: &[Aggregate]) -> bool {
    !matches!(window.kind(), WindowKind::Session { .. })
        && aggregates.iter().all(|aggregate| is_decomposable(aggregate.func))
}

/// Whether an aggregate function can be computed in two steps (partial, then merge). Not a
/// distinct count: merging needs the values themselves, so a partial would save nothing.
pub fn is_decomposable(func: AggFunc) -> bool {
    matches!(func, AggFunc::Count | AggFunc::Sum | AggFunc::Min | AggFunc::Max | AggFunc::Avg)
}
