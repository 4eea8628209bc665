//! Plan validation: structure, column references and types, checked before anything runs.
//! This module checks where each node may stand and hands each node to the checker of its
//! kind, which returns the node's output schema.

mod columns;
mod decode;
mod exchange;
mod lookup;
mod row_ops;
mod source;
mod state;
mod window;
mod window_join;

use crate::error::{NodeRef, PlanError};
use crate::node::{Operator, Plan};
use crate::schema::Schema;

pub use window::{HOP_WINDOWS_PER_ROW_MAX, WINDOW_END_COLUMN, WINDOW_START_COLUMN};

/// Checks the plan and returns the output schema of every node, in order.
pub fn validate(plan: &Plan) -> Result<Vec<Schema>, PlanError> {
    let nodes = &plan.nodes;
    if nodes.len() < 2 {
        return Err(PlanError::Empty);
    }
    let mut schemas: Vec<Schema> = Vec::with_capacity(nodes.len());
    let mut exchange_keys: Option<&[String]> = None;
    for (index, node) in nodes.iter().enumerate() {
        let at = NodeRef { index, kind: node.operator.kind() };
        check_position(&at, &node.operator, index == 0, index + 1 == nodes.len())?;
        let output = match (&node.operator, schemas.last()) {
            (Operator::Source { spec }, _) => source::check(&at, spec)?,
            (_, None) => unreachable!("check_position puts a source first"),
            (Operator::DecodeJson { schema, max_record_bytes }, Some(input)) => {
                decode::check(&at, input, schema, *max_record_bytes)?
            }
            (Operator::DecodeAvro { schema, max_record_bytes }, Some(input)) => {
                decode::check_avro(&at, input, schema, *max_record_bytes)?
            }
            (Operator::Filter { predicate }, Some(input)) => row_ops::check_filter(&at, input, predicate)?,
            (Operator::Project { columns }, Some(input)) => row_ops::check_project(&at, input, columns)?,
            (Operator::Lookup { key, table, table_key, columns }, Some(input)) => {
                lookup::check(&at, input, key, table, table_key, columns)?
            }
            (Operator::Exchange { keys, partitions }, Some(input)) => {
                let output = exchange::check(&at, input, keys, *partitions)?;
                exchange_keys = Some(keys);
                output
            }
            (Operator::WindowAggregate { window, keys, aggregates }, Some(input)) => {
                let follows_exchange = matches!(nodes[index - 1].operator, Operator::Exchange { .. });
                window::check(&at, input, window, keys, aggregates, exchange_keys, follows_exchange)?
            }
            (Operator::Increments(spec), Some(input)) => state::check_increments(&at, input, spec, exchange_keys)?,
            (Operator::KeyedAggregate(spec), Some(input)) => {
                state::check_keyed_aggregate(&at, input, spec, exchange_keys)?
            }
            (Operator::TopK(spec), Some(input)) => state::check_top_k(&at, input, spec, exchange_keys)?,
            (Operator::TopRows(spec), Some(input)) => state::check_top_rows(&at, input, spec, exchange_keys)?,
            (Operator::WindowJoin(spec), Some(input)) => window_join::check(&at, input, spec, exchange_keys)?,
            (Operator::Sink { .. }, Some(input)) => input.clone(),
        };
        schemas.push(output);
    }
    Ok(schemas)
}

/// A plan reads from one source first and writes to one sink last.
fn check_position(at: &NodeRef, operator: &Operator, is_first: bool, is_last: bool) -> Result<(), PlanError> {
    let structure = |reason: &str| Err(PlanError::Structure { node: at.clone(), reason: reason.to_string() });
    let is_source = matches!(operator, Operator::Source { .. });
    let is_sink = matches!(operator, Operator::Sink { .. });
    match (is_first, is_last) {
        _ if is_source && !is_first => structure("a source may only be the first node"),
        _ if is_sink && !is_last => structure("a sink may only be the last node"),
        (true, _) if !is_source => structure("the first node must be a source"),
        (_, true) if !is_sink => structure("the last node must be a sink"),
        _ => Ok(()),
    }
}
