//! The Rust builder API: the shortest way to write a plan by hand.

use crate::error::PlanError;
use crate::expr::Expr;
use crate::node::{
    default_max_record_bytes, Aggregate, Node, Operator, Plan, SinkSpec, SourceSpec, TableSpec, WindowSpec,
};
use crate::schema::Schema;
use crate::state_spec::{IncrementsSpec, KeyedAggregateSpec, TopKSpec, TopRowsSpec};
use crate::window_join::WindowJoinSpec;

#[derive(Debug, Clone)]
pub struct PlanBuilder {
    plan: Plan,
}

impl PlanBuilder {
    pub fn source(name: impl Into<String>, spec: SourceSpec) -> Self {
        PlanBuilder { plan: Plan { name: name.into(), nodes: vec![Node { operator: Operator::Source { spec } }] } }
    }

    fn push(mut self, operator: Operator) -> Self {
        self.plan.nodes.push(Node { operator });
        self
    }

    pub fn decode_json(self, schema: Schema) -> Self {
        self.push(Operator::DecodeJson { schema, max_record_bytes: default_max_record_bytes() })
    }

    pub fn decode_json_with_limit(self, schema: Schema, max_record_bytes: u32) -> Self {
        self.push(Operator::DecodeJson { schema, max_record_bytes })
    }

    /// Decodes Avro single-object records of `schema`, the `.avsc` JSON.
    pub fn decode_avro(self, schema: serde_json::Value) -> Self {
        self.push(Operator::DecodeAvro {
            schema: crate::avro::AvroSchemaSource::Inline(schema),
            max_record_bytes: default_max_record_bytes(),
        })
    }

    pub fn filter(self, predicate: Expr) -> Self {
        self.push(Operator::Filter { predicate })
    }

    /// Projects expressions, each named by its column name (for a bare column) or its text.
    pub fn project(self, exprs: impl IntoIterator<Item = Expr>) -> Self {
        let columns = exprs.into_iter().map(|expr| {
            let name = expr.default_name();
            (expr, name)
        });
        self.push(Operator::Project { columns: columns.collect() })
    }

    pub fn project_named(self, columns: impl IntoIterator<Item = (Expr, &'static str)>) -> Self {
        let columns = columns.into_iter().map(|(expr, name)| (expr, name.to_string()));
        self.push(Operator::Project { columns: columns.collect() })
    }

    pub fn lookup(
        self,
        key: &str,
        table: TableSpec,
        table_key: &str,
        columns: impl IntoIterator<Item = &'static str>,
    ) -> Self {
        self.push(Operator::Lookup {
            key: key.to_string(),
            table,
            table_key: table_key.to_string(),
            columns: columns.into_iter().map(str::to_string).collect(),
        })
    }

    pub fn exchange(self, keys: impl IntoIterator<Item = &'static str>, partitions: u32) -> Self {
        self.push(Operator::Exchange { keys: keys.into_iter().map(str::to_string).collect(), partitions })
    }

    pub fn window_aggregate(
        self,
        window: WindowSpec,
        keys: impl IntoIterator<Item = &'static str>,
        aggregates: impl IntoIterator<Item = Aggregate>,
    ) -> Self {
        self.push(Operator::WindowAggregate {
            window,
            keys: keys.into_iter().map(str::to_string).collect(),
            aggregates: aggregates.into_iter().collect(),
        })
    }

    /// Per key, readings to the increments they add (see `IncrementsSpec`).
    pub fn increments(self, spec: IncrementsSpec) -> Self {
        self.push(Operator::Increments(spec))
    }

    /// Running aggregates per key across batches (see `KeyedAggregateSpec`).
    pub fn keyed_aggregate(self, spec: KeyedAggregateSpec) -> Self {
        self.push(Operator::KeyedAggregate(spec))
    }

    /// The `k` largest keys per group (see `TopKSpec`).
    pub fn top_k(self, spec: TopKSpec) -> Self {
        self.push(Operator::TopK(spec))
    }

    /// The rows ranked `k` or better per group of an append-only stream (see `TopRowsSpec`).
    pub fn top_rows(self, spec: TopRowsSpec) -> Self {
        self.push(Operator::TopRows(spec))
    }

    /// Pairs two sides' rows of one window and key (see `WindowJoinSpec`).
    pub fn window_join(self, spec: WindowJoinSpec) -> Self {
        self.push(Operator::WindowJoin(spec))
    }

    pub fn sink(self, spec: SinkSpec) -> Self {
        self.push(Operator::Sink { spec })
    }

    /// Validates and returns the plan; the error names the first offending node and field.
    pub fn build(self) -> Result<Plan, PlanError> {
        crate::validate::validate(&self.plan)?;
        Ok(self.plan)
    }

    /// The plan as written, unvalidated: for tests of validation itself.
    pub fn build_unchecked(self) -> Plan {
        self.plan
    }
}
