//! A `SELECT` onto plan nodes. The plan is a line (source → decode → filter / project /
//! lookup → exchange → aggregate → top-N → sink), so a query is planned in that order:
//!
//! ```text
//!  FROM t | TABLE(TUMBLE(t, …)) | TABLE(INCREMENTS(t, …)) | (subquery)
//!    → WHERE conjuncts that name only the stream      (filter, before the lookups)
//!    → the stream's columns still needed              (project)
//!    → JOIN static ON stream.k = static.k             (lookup, one per join)
//!    → the other WHERE conjuncts                      (filter)
//!    → GROUP BY: computed keys and arguments          (project)
//!      → exchange on the keys → window or keyed aggregate → HAVING (filter)
//!    → the SELECT list                                (project, left out when it changes nothing)
//! ```
//!
//! A top-N (`ROW_NUMBER()` or `RANK() OVER (PARTITION BY g ORDER BY v DESC) AS rn` in a
//! subquery, `rn <= N` outside) becomes a `top_k` after the subquery's keyed aggregate, whose
//! exchange then partitions by `g` alone so each ranking lives in one partition; over a
//! window table function's rows (no GROUP BY) it is a window top-N (`window_top.rs`). A top-N
//! over a windowed aggregate ranks each window's final rows, emitted once as it closes, with a
//! `top_rows` after a second exchange, on the window.
//!
//! A join of two streams (`window_join.rs`) is planned apart, as its plan has its own shape.

use std::collections::BTreeMap;

use sleet_plan::{
    col, lit, AggFunc, Aggregate, AvroSchemaSource, DataType, Expr as PlanExpr, Field, IncrementsSpec,
    KeyedAggregateSpec, LatePolicy, Node, Operator, Plan, Ranking, ReadingEncoding, Schema, SinkSpec, TopKSpec,
    TopRowsSpec, WindowSpec, RANK_COLUMN,
};
use sqlparser::ast::{
    Expr, Function, FunctionArg, GroupByExpr, Join, JoinConstraint, JoinOperator, OrderBySort, Query, Select,
    SelectItem, SetExpr, TableFactor, TableWithJoins, Value, WindowType,
};

use crate::catalog::{Catalog, Format, Table, Watermark};
use crate::error::{Position, SqlError, SqlErrorKind};
use crate::interval::interval_ms;
use crate::scope::{Binding, Scope, ScopeColumn, WindowBound};
use crate::spans;
use crate::sql_expr::{
    aggregate_calls, argument_expr, column_names, column_references, default_name, function_arguments, function_name,
    Replacements, Translator,
};

/// What a query needs from the script beyond its tables.
#[derive(Debug, Clone, Default)]
pub struct QuerySettings {
    /// Reduce partitions of an exchange; the source's partition count when unset.
    pub parallelism: Option<u32>,
    /// How long keyed state lives without an update (event time), for aggregates without a
    /// window, top-N and increments.
    pub state_ttl_ms: Option<i64>,
    /// Bound on the keys one partition's keyed state holds.
    pub max_keys: Option<u64>,
}

pub struct QueryContext<'a> {
    pub catalog: &'a Catalog,
    /// `CREATE VIEW name AS query`: planned where the view is read, as a subquery would be.
    pub views: &'a BTreeMap<String, (Query, Position)>,
    pub settings: &'a QuerySettings,
    pub fallback: Position,
    pub read_file: &'a dyn Fn(&str) -> Result<String, String>,
}

/// The plan so far and what the rest of the query can name.
#[derive(Debug, Clone)]
pub struct Planned {
    pub nodes: Vec<Node>,
    pub scope: Scope,
    /// The event-time column (its plan name) and how late rows may be.
    pub event_time: Option<Watermark>,
    pub source_partitions: u32,
    /// A window table function's window, until the aggregate over it is planned.
    pub window: Option<WindowSpec>,
}

impl Planned {
    pub(crate) fn push(&mut self, operator: Operator) {
        self.nodes.push(Node { operator });
    }

    /// The plan's output columns, as the plan's own validation computes them.
    pub fn output_schema(&self, at: Position) -> Result<Schema, SqlError> {
        let mut nodes = self.nodes.clone();
        nodes.push(Node { operator: Operator::Sink { spec: SinkSpec::Discard } });
        let schemas = sleet_plan::validate::validate(&Plan { name: "query".into(), nodes })
            .map_err(|error| SqlError::new(at, SqlErrorKind::Plan(error)))?;
        Ok(schemas.last().cloned().unwrap_or_default())
    }

    fn has_exchange(&self) -> bool {
        self.nodes.iter().any(|node| matches!(node.operator, Operator::Exchange { .. }))
    }
}

/// A `ROW_NUMBER()` or `RANK() OVER (…)` item of a subquery, taken out of its SELECT list.
pub(crate) struct RowNumber {
    pub(crate) ranking: Ranking,
    pub(crate) partition_by: Vec<Expr>,
    pub(crate) order_by: Expr,
    pub(crate) alias: String,
    pub(crate) at: Position,
}

pub fn plan_query(query: &Query, context: &QueryContext) -> Result<Planned, SqlError> {
    let at = spans::at(query, context.fallback);
    if query.with.is_some() {
        return Err(SqlError::unsupported(at, "WITH (common table expressions); declare a view-like subquery in FROM"));
    }
    if let Some(order_by) = &query.order_by {
        return Err(SqlError::unsupported(
            spans::at(order_by, at),
            "ORDER BY on a stream (it never ends); rank within groups with ROW_NUMBER() OVER (…) <= N",
        ));
    }
    if query.limit_clause.is_some() || query.fetch.is_some() {
        return Err(SqlError::unsupported(
            at,
            "LIMIT / FETCH on a stream; rank within groups with ROW_NUMBER() OVER (…) <= N",
        ));
    }
    match query.body.as_ref() {
        SetExpr::Select(select) => plan_select(select, context),
        SetExpr::Query(inner) => plan_query(inner, context),
        SetExpr::SetOperation { op, .. } => Err(SqlError::unsupported(at, format!("{op} of queries"))),
        other => Err(SqlError::unsupported(at, format!("the query form `{other}`"))),
    }
}

fn plan_select(select: &Select, context: &QueryContext) -> Result<Planned, SqlError> {
    let at = spans::at(select, context.fallback);
    if let [from] = select.from.as_slice() {
        if crate::window_join::joins_streams(from, context) {
            return crate::window_join::plan(select, from, context);
        }
    }
    refuse_select_clauses(select, at)?;
    let from = match select.from.as_slice() {
        [one] => one,
        [] => return Err(SqlError::invalid(at, "a query needs FROM: sleet reads streams")),
        [_, second, ..] => {
            return Err(SqlError::unsupported(
                spans::at(second, at),
                "a comma-separated FROM list; join a static table with JOIN … ON",
            ))
        }
    };
    if let Some((inner, row_number)) = top_n_subquery(&from.relation, at)? {
        if !from.joins.is_empty() {
            return Err(SqlError::unsupported(at, "a JOIN beside a top-N subquery"));
        }
        return plan_top_n(select, inner, row_number, context);
    }
    let planner = SelectPlanner { select, context, at };
    planner.plan(from, None)
}

pub(crate) fn refuse_select_clauses(select: &Select, at: Position) -> Result<(), SqlError> {
    let refused = [
        (select.distinct.is_some(), "SELECT DISTINCT; GROUP BY the columns instead"),
        (select.top.is_some(), "TOP"),
        (select.into.is_some(), "SELECT INTO; write INSERT INTO … SELECT"),
        (!select.lateral_views.is_empty(), "LATERAL VIEW"),
        (select.prewhere.is_some(), "PREWHERE"),
        (!select.cluster_by.is_empty() || !select.distribute_by.is_empty(), "CLUSTER BY / DISTRIBUTE BY"),
        (!select.sort_by.is_empty(), "SORT BY"),
        (!select.named_window.is_empty(), "named windows (WINDOW w AS …)"),
        (select.qualify.is_some(), "QUALIFY; filter ROW_NUMBER() in an outer query"),
        (!select.connect_by.is_empty(), "CONNECT BY"),
    ];
    match refused.iter().find(|(present, _)| *present) {
        Some((_, construct)) => Err(SqlError::unsupported(at, *construct)),
        None => Ok(()),
    }
}

struct SelectPlanner<'a> {
    select: &'a Select,
    context: &'a QueryContext<'a>,
    at: Position,
}

/// One `JOIN static ON stream.k = static.k`, resolved.
struct LookupJoin {
    table: sleet_plan::TableSpec,
    key: String,
    table_key: String,
    columns: Vec<(String, DataType)>,
    alias: String,
}

impl<'a> SelectPlanner<'a> {
    /// Plans the SELECT; `top_n` is the ranking an outer query asked for.
    fn plan(&self, from: &TableWithJoins, top_n: Option<(&RowNumber, u32)>) -> Result<Planned, SqlError> {
        let mut planned = plan_relation(&from.relation, self.context)?;
        let lookups =
            from.joins.iter().map(|join| self.lookup_join(join, &planned.scope)).collect::<Result<Vec<_>, _>>()?;

        let conjuncts = match &self.select.selection {
            Some(condition) => split_conjuncts(condition),
            None => Vec::new(),
        };
        let (early, late): (Vec<&Expr>, Vec<&Expr>) = conjuncts
            .into_iter()
            .partition(|conjunct| Translator::new(&planned.scope, self.at).typed(conjunct).is_ok());
        self.push_filter(&mut planned, &early)?;

        if !lookups.is_empty() {
            self.keep_needed_columns(&mut planned, &lookups, &late)?;
            for lookup in &lookups {
                push_lookup(&mut planned, lookup);
            }
        }
        self.push_filter(&mut planned, &late)?;

        let aggregates = self.aggregate_calls();
        let grouped = !matches!(&self.select.group_by, GroupByExpr::Expressions(exprs, _) if exprs.is_empty());
        if grouped || !aggregates.is_empty() || planned.window.is_some() || top_n.is_some() {
            self.plan_aggregate(&mut planned, &aggregates, top_n)?;
        } else {
            self.plan_projection(&mut planned)?;
        }
        Ok(planned)
    }

    fn push_filter(&self, planned: &mut Planned, conjuncts: &[&Expr]) -> Result<(), SqlError> {
        let mut predicate: Option<PlanExpr> = None;
        for conjunct in conjuncts {
            if !aggregate_calls_in(conjunct).is_empty() {
                return Err(SqlError::invalid(
                    spans::at(*conjunct, self.at),
                    format!("`{conjunct}`: an aggregate belongs in HAVING, not WHERE"),
                ));
            }
            let condition = Translator::new(&planned.scope, self.at).predicate(conjunct)?;
            predicate = Some(match predicate {
                None => condition,
                Some(before) => before.and(condition),
            });
        }
        if let Some(predicate) = predicate {
            planned.push(Operator::Filter { predicate });
        }
        Ok(())
    }

    fn lookup_join(&self, join: &Join, stream: &Scope) -> Result<LookupJoin, SqlError> {
        let at = spans::at(&join.relation, self.at);
        let condition = match &join.join_operator {
            JoinOperator::Join(JoinConstraint::On(condition)) | JoinOperator::Inner(JoinConstraint::On(condition)) => {
                condition
            }
            JoinOperator::Join(_) | JoinOperator::Inner(_) => {
                return Err(SqlError::unsupported(at, "a join without ON; write JOIN t ON stream.k = t.k"))
            }
            other => {
                return Err(SqlError::unsupported(
                    at,
                    format!(
                        "the join `{}`; sleet joins a stream with a static table by an inner equi-join",
                        join_kind(other)
                    ),
                ))
            }
        };
        let TableFactor::Table { name, alias, args: None, .. } = &join.relation else {
            return Err(SqlError::unsupported(
                at,
                format!("joining `{}`; sleet joins a stream with a static table (connector 'csv')", join.relation),
            ));
        };
        let table = self.context.catalog.get(&name.to_string(), at)?;
        let spec = table.lookup(at)?;
        let alias = alias
            .as_ref()
            .map_or_else(|| table.name.to_ascii_lowercase(), |alias| alias.name.value.to_ascii_lowercase());
        let Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::Eq, right } = condition else {
            return Err(SqlError::unsupported(
                spans::at(condition, at),
                format!("the join condition `{condition}`; write stream.k = {alias}.k"),
            ));
        };
        let static_column = |expr: &Expr| -> Option<String> {
            match expr {
                Expr::CompoundIdentifier(parts) if parts.len() == 2 && parts[0].value.eq_ignore_ascii_case(&alias) => {
                    table.column(&parts[1].value).map(|column| column.name.clone())
                }
                Expr::Identifier(ident) if stream.resolve(std::slice::from_ref(ident), at).is_err() => {
                    table.column(&ident.value).map(|column| column.name.clone())
                }
                _ => None,
            }
        };
        let (stream_side, table_key) = match (static_column(left), static_column(right)) {
            (None, Some(key)) => (left, key),
            (Some(key), None) => (right, key),
            _ => {
                return Err(SqlError::invalid(
                    spans::at(condition, at),
                    format!("`{condition}` must compare a column of the stream with a column of `{alias}`"),
                ))
            }
        };
        let key = match Translator::new(stream, self.at).translate(stream_side)? {
            PlanExpr::Column(name) => name,
            _ => {
                return Err(SqlError::unsupported(
                    spans::at(stream_side.as_ref(), at),
                    "a computed join key; compute it in a subquery first",
                ))
            }
        };
        let stream_schema = stream.schema();
        let columns: Vec<(String, DataType)> = table
            .columns
            .iter()
            .filter(|column| column.name != table_key)
            .map(|column| (column.name.clone(), column.data_type))
            .collect();
        if let Some((clash, _)) = columns.iter().find(|(name, _)| stream_schema.field(name).is_some()) {
            return Err(SqlError::unsupported(
                at,
                format!("`{alias}.{clash}` has the name of a stream column; rename one of them in a subquery"),
            ));
        }
        Ok(LookupJoin { table: spec, key, table_key, columns, alias })
    }

    /// Before lookups, the stream keeps only the columns the rest of the query names.
    fn keep_needed_columns(
        &self,
        planned: &mut Planned,
        lookups: &[LookupJoin],
        late: &[&Expr],
    ) -> Result<(), SqlError> {
        let mut named: Vec<&Expr> = late.to_vec();
        for item in &self.select.projection {
            match item {
                SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => named.push(expr),
                _ => return Ok(()),
            }
        }
        if let GroupByExpr::Expressions(exprs, _) = &self.select.group_by {
            named.extend(exprs.iter());
        }
        named.extend(self.select.having.iter());
        let mut needed: Vec<String> = lookups.iter().map(|lookup| lookup.key.clone()).collect();
        needed.extend(planned.window.iter().map(|window| window.time_column.clone()));
        needed.extend(planned.event_time.iter().map(|watermark| watermark.column.clone()));
        for expr in named {
            collect_stream_columns(expr, &planned.scope, self.at, &mut needed);
        }
        let schema = planned.output_schema(self.at)?;
        let kept: Vec<&Field> = schema.fields.iter().filter(|field| needed.contains(&field.name)).collect();
        if kept.len() < schema.fields.len() {
            let columns = kept.iter().map(|field| (col(field.name.as_str()), field.name.clone())).collect();
            planned.push(Operator::Project { columns });
        }
        Ok(())
    }

    /// The expressions the SELECT list and HAVING compute over the rows they read.
    fn output_exprs(&self) -> impl Iterator<Item = &'a Expr> {
        let select: &'a Select = self.select;
        let items = select.projection.iter().filter_map(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => Some(expr),
            _ => None,
        });
        items.chain(select.having.iter())
    }

    fn aggregate_calls(&self) -> Vec<&'a Expr> {
        let mut found = Vec::new();
        for expr in self.output_exprs() {
            aggregate_calls(expr, &mut found);
        }
        let mut distinct: Vec<&Expr> = Vec::new();
        for call in found {
            if !distinct.iter().any(|seen| seen.to_string() == call.to_string()) {
                distinct.push(call);
            }
        }
        distinct
    }

    /// The SELECT item an alias names, for `GROUP BY alias`.
    fn aliased(&self, name: &str) -> Option<&'a Expr> {
        self.select.projection.iter().find_map(|item| match item {
            SelectItem::ExprWithAlias { expr, alias } if alias.value.eq_ignore_ascii_case(name) => Some(expr),
            _ => None,
        })
    }

    /// The alias a SELECT item gives `expr`, if it is written there as it is.
    fn alias_of(&self, expr: &Expr) -> Option<String> {
        let text = expr.to_string();
        self.select.projection.iter().find_map(|item| match item {
            SelectItem::ExprWithAlias { expr: written, alias } if written.to_string() == text => {
                Some(alias.value.clone())
            }
            _ => None,
        })
    }

    fn plan_aggregate(
        &self,
        planned: &mut Planned,
        aggregate_exprs: &[&Expr],
        top_n: Option<(&RowNumber, u32)>,
    ) -> Result<(), SqlError> {
        let group_exprs: Vec<&Expr> = match &self.select.group_by {
            GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs.iter().collect(),
            other => return Err(SqlError::unsupported(self.at, format!("`{other}`"))),
        };
        if planned.has_exchange() {
            return Err(SqlError::unsupported(
                self.at,
                "an aggregate over a query that already aggregates (an aggregate can be ranked with a top-N, not aggregated again)",
            ));
        }
        let mut replacements = Replacements::default();
        let mut computed: Vec<(PlanExpr, String)> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        let mut window_bounds: Vec<WindowBound> = Vec::new();
        for group_expr in &group_exprs {
            let expr_at = spans::at(*group_expr, self.at);
            let resolved = match group_expr {
                Expr::Identifier(ident) if planned.scope.resolve(std::slice::from_ref(ident), expr_at).is_err() => {
                    self.aliased(&ident.value).unwrap_or(group_expr)
                }
                _ => group_expr,
            };
            if let Some(bound) = window_bound(resolved, &planned.scope, expr_at) {
                if planned.window.is_none() {
                    return Err(SqlError::invalid(expr_at, "window_start and window_end come from TUMBLE(…) in FROM"));
                }
                window_bounds.push(bound);
                replacements.add(group_expr, bound.name());
                replacements.add(resolved, bound.name());
                continue;
            }
            if !aggregate_calls_in(resolved).is_empty() {
                return Err(SqlError::invalid(expr_at, format!("`{group_expr}`: GROUP BY cannot hold an aggregate")));
            }
            let (planned_expr, _) = Translator::new(&planned.scope, self.at).typed(resolved)?;
            let name = match &planned_expr {
                PlanExpr::Column(name) => name.clone(),
                _ => {
                    let name = self.alias_of(resolved).unwrap_or_else(|| format!("__key{}", computed.len()));
                    computed.push((planned_expr, name.clone()));
                    name
                }
            };
            if keys.contains(&name) {
                return Err(SqlError::invalid(expr_at, format!("`{group_expr}` is grouped by twice")));
            }
            replacements.add(group_expr, &name);
            replacements.add(resolved, &name);
            keys.push(name);
        }
        if planned.window.is_some() && window_bounds.is_empty() {
            return Err(SqlError::invalid(
                self.at,
                "an aggregate over a window table function must GROUP BY window_start, window_end",
            ));
        }
        if keys.is_empty() {
            return Err(SqlError::unsupported(
                self.at,
                "an aggregate with no GROUP BY key besides the window (sleet spreads a window's groups over partitions by key)",
            ));
        }

        let mut aggregates: Vec<Aggregate> = Vec::new();
        for call in aggregate_exprs {
            let aggregate = self.aggregate(call, planned, &mut computed, &aggregates)?;
            replacements.add(call, &aggregate.name);
            aggregates.push(aggregate);
        }
        if aggregates.is_empty() {
            return Err(SqlError::unsupported(
                self.at,
                "GROUP BY without an aggregate (it would be SELECT DISTINCT); add COUNT(*)",
            ));
        }

        let time_column = match (&planned.window, &planned.event_time) {
            (Some(window), _) => window.time_column.clone(),
            (None, Some(watermark)) => watermark.column.clone(),
            (None, None) => {
                return Err(SqlError::invalid(
                    self.at,
                    "an aggregate without a window keeps state per key, which expires by event time: declare the \
                     table's WATERMARK",
                ))
            }
        };
        self.project_aggregate_inputs(planned, &keys, &aggregates, &computed, &time_column)?;

        let ranking_groups = match top_n {
            Some((row_number, _)) => Some(self.partition_keys(row_number, &replacements, &keys)?),
            None => None,
        };
        // A ranking of windows' groups is made after the aggregate, which partitions by its
        // own keys (`window_start` is not a column before it), so it is moved by a second
        // exchange; any other ranking shares the aggregate's exchange.
        let ranks_windows = top_n.is_some() && planned.window.is_some();
        let exchange_keys = match &ranking_groups {
            Some(group) if !ranks_windows => group.clone(),
            _ => keys.clone(),
        };
        let partitions = self.context.settings.parallelism.unwrap_or(planned.source_partitions);
        planned.push(Operator::Exchange { keys: exchange_keys, partitions });

        match &planned.window {
            // A ranking of windows takes each window's final rows, once, and keeps only its
            // top of them rather than every key's latest value.
            Some(window) => planned.push(Operator::WindowAggregate {
                window: if ranks_windows { window.clone().emitted_on_close() } else { window.clone() },
                keys: keys.clone(),
                aggregates: aggregates.clone(),
            }),
            None => planned.push(Operator::KeyedAggregate(KeyedAggregateSpec {
                keys: keys.clone(),
                aggregates: aggregates.clone(),
                time_column: time_column.clone(),
                ttl_ms: self.state_ttl_ms()?,
                max_keys: self.max_keys(),
            })),
        }
        let schema = planned.output_schema(self.at)?;
        planned.scope = Scope::of_fields(&schema.fields);
        let mut ranked_window = None;
        if let Some(window) = planned.window.take() {
            if let (Some((row_number, _)), Some(group)) = (top_n, &ranking_groups) {
                check_window_ranking(&window, group, row_number.at)?;
            }
            // A tumbling aggregate's rows carry their window's start (the other kinds carry
            // both bounds); its end is computed only for a query that reads it, or ranks by it.
            if !window.has_end_column() && (self.names_window_end() || top_n.is_some()) {
                let mut columns: Vec<(PlanExpr, String)> =
                    schema.fields.iter().map(|field| (col(field.name.as_str()), field.name.clone())).collect();
                let end = col(WindowBound::Start.name()).add(lit(window.size_ms));
                columns.push((end, WindowBound::End.name().into()));
                planned.push(Operator::Project { columns });
                planned.scope = Scope::of_fields(&planned.output_schema(self.at)?.fields);
            }
            ranked_window = top_n.is_some().then_some(window);
        }
        if let Some(having) = &self.select.having {
            let translator = Translator { scope: &planned.scope, replacements: Some(&replacements), fallback: self.at };
            let predicate = translator.predicate(having)?;
            planned.push(Operator::Filter { predicate });
        }
        if let (Some((row_number, k)), Some(group)) = (top_n, ranking_groups) {
            let Some(window) = ranked_window else {
                let ranker = Ranker::Keys { time_column: &time_column, ttl_ms: self.state_ttl_ms()? };
                return self.push_top_n(planned, (row_number, k), group, &replacements, &keys, ranker);
            };
            planned.push(Operator::Exchange { keys: group.clone(), partitions });
            let ranker = Ranker::Windows { window: &window };
            return self.push_top_n(planned, (row_number, k), group, &replacements, &keys, ranker);
        }
        self.project_select_list(planned, &replacements)
    }

    /// Whether the SELECT list or HAVING reads `window_end`.
    fn names_window_end(&self) -> bool {
        let mut names = Vec::new();
        for expr in self.output_exprs() {
            column_names(expr, &mut names);
        }
        names.iter().any(|name| name.eq_ignore_ascii_case(WindowBound::End.name()))
    }

    fn aggregate(
        &self,
        call: &Expr,
        planned: &Planned,
        computed: &mut Vec<(PlanExpr, String)>,
        earlier: &[Aggregate],
    ) -> Result<Aggregate, SqlError> {
        let at = spans::at(call, self.at);
        let Expr::Function(function) = call else { unreachable!("aggregate_calls finds function calls only") };
        let name = function_name(function);
        if function.filter.is_some() {
            return Err(SqlError::unsupported(at, format!("FILTER on `{function}`; filter in WHERE")));
        }
        let distinct = match &function.args {
            sqlparser::ast::FunctionArguments::List(list) => match list.duplicate_treatment {
                Some(sqlparser::ast::DuplicateTreatment::Distinct) if name == "count" => true,
                Some(_) => return Err(SqlError::unsupported(at, format!("DISTINCT or ALL in `{function}`"))),
                None => false,
            },
            _ => false,
        };
        let arguments = function_arguments(function);
        let func = match name.as_str() {
            "count" if distinct => AggFunc::CountDistinct,
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "avg" => AggFunc::Avg,
            other => unreachable!("{other} is in AGGREGATES"),
        };
        if planned.window.is_none() && matches!(func, AggFunc::Avg | AggFunc::CountDistinct) {
            return Err(SqlError::unsupported(
                at,
                format!("`{function}` in a running aggregate (without a window); over a window it is planned"),
            ));
        }
        let column = match (func, arguments.as_slice()) {
            (AggFunc::Count, [FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Wildcard)]) => None,
            (AggFunc::Count, [argument]) => {
                let expr = argument_expr(argument).ok_or_else(|| SqlError::unsupported(at, format!("`{function}`")))?;
                let (_, _) = Translator::new(&planned.scope, self.at).typed(expr)?;
                if expression_may_be_null(expr, &planned.scope) {
                    return Err(SqlError::unsupported(
                        at,
                        format!("`{function}` of a nullable column; write COUNT(*) and filter the NULLs in WHERE"),
                    ));
                }
                None
            }
            (_, [argument]) => {
                let expr = argument_expr(argument).ok_or_else(|| SqlError::unsupported(at, format!("`{function}`")))?;
                let (planned_expr, data_type) = Translator::new(&planned.scope, self.at).typed(expr)?;
                if !data_type.is_numeric() && matches!(func, AggFunc::Sum | AggFunc::Avg) {
                    return Err(SqlError::new(
                        at,
                        SqlErrorKind::TypeMismatch {
                            what: format!("the argument of `{function}`"),
                            expected: "BIGINT or DOUBLE".into(),
                            found: data_type,
                        },
                    ));
                }
                Some(match planned_expr {
                    PlanExpr::Column(name) => name,
                    other => {
                        let name = format!("__arg{}", computed.len());
                        computed.push((other, name.clone()));
                        name
                    }
                })
            }
            _ => return Err(SqlError::invalid(at, format!("`{function}` takes one argument"))),
        };
        let base = self.alias_of(call).unwrap_or_else(|| match &column {
            Some(column) if !column.starts_with("__") => format!("{name}_{column}"),
            _ => name.clone(),
        });
        let mut output = base.clone();
        let mut suffix = 2;
        while earlier.iter().any(|aggregate| aggregate.name == output) {
            output = format!("{base}_{suffix}");
            suffix += 1;
        }
        Ok(Aggregate { func, column, name: output })
    }

    /// Computes the grouping keys and aggregate arguments that are expressions, and keeps
    /// only the columns the aggregate reads, so the exchange ships nothing else.
    fn project_aggregate_inputs(
        &self,
        planned: &mut Planned,
        keys: &[String],
        aggregates: &[Aggregate],
        computed: &[(PlanExpr, String)],
        time_column: &str,
    ) -> Result<(), SqlError> {
        let schema = planned.output_schema(self.at)?;
        let mut needed: Vec<String> = keys.to_vec();
        needed.extend(aggregates.iter().filter_map(|aggregate| aggregate.column.clone()));
        needed.push(time_column.to_string());
        let mut columns: Vec<(PlanExpr, String)> = schema
            .fields
            .iter()
            .filter(|field| needed.contains(&field.name))
            .map(|field| (col(field.name.as_str()), field.name.clone()))
            .collect();
        for (expr, name) in computed {
            if schema.field(name).is_some() {
                return Err(SqlError::unsupported(
                    self.at,
                    format!("naming the computed key `{expr}` `{name}`, which is already a column; pick another alias"),
                ));
            }
            columns.push((expr.clone(), name.clone()));
        }
        // A window aggregate is split: its map-side partial reads only the columns it needs,
        // so a projection before it would be work for nothing. Other aggregates ship rows
        // through the exchange, and every column left out is bytes not sent.
        let prunes = columns.len() < schema.fields.len() && planned.window.is_none();
        if !computed.is_empty() || prunes {
            planned.push(Operator::Project { columns });
        }
        Ok(())
    }

    fn state_ttl_ms(&self) -> Result<i64, SqlError> {
        self.context.settings.state_ttl_ms.ok_or_else(|| {
            SqlError::invalid(
                self.at,
                "keyed state without a window needs a lifetime: SET 'state.ttl' = '2 d' (event time a key is kept \
                 without an update)",
            )
        })
    }

    fn max_keys(&self) -> u64 {
        self.context.settings.max_keys.unwrap_or_else(sleet_plan::state_spec::default_max_keys)
    }

    fn partition_keys(
        &self,
        row_number: &RowNumber,
        replacements: &Replacements,
        keys: &[String],
    ) -> Result<Vec<String>, SqlError> {
        let mut partition_keys = Vec::new();
        for expr in &row_number.partition_by {
            let at = spans::at(expr, row_number.at);
            let name = match (replacements.column_of(expr), expr) {
                (Some(name), _) => name.to_string(),
                (None, Expr::Identifier(ident)) if keys.contains(&ident.value) => ident.value.clone(),
                _ => {
                    return Err(SqlError::invalid(
                        at,
                        format!("PARTITION BY `{expr}` must be a GROUP BY key of the subquery"),
                    ))
                }
            };
            partition_keys.push(name);
        }
        if partition_keys.is_empty() {
            return Err(SqlError::unsupported(
                row_number.at,
                "ROW_NUMBER() without PARTITION BY (one global ranking would live in one partition); partition it",
            ));
        }
        Ok(partition_keys)
    }

    fn push_top_n(
        &self,
        planned: &mut Planned,
        (row_number, k): (&RowNumber, u32),
        group: Vec<String>,
        replacements: &Replacements,
        keys: &[String],
        ranker: Ranker<'_>,
    ) -> Result<(), SqlError> {
        let order_at = spans::at(&row_number.order_by, row_number.at);
        let translator = Translator { scope: &planned.scope, replacements: Some(replacements), fallback: self.at };
        let order_by = match translator.typed(&row_number.order_by)? {
            (PlanExpr::Column(name), data_type) if data_type.is_numeric() => name,
            _ => {
                return Err(SqlError::unsupported(
                    order_at,
                    format!(
                        "ORDER BY `{}`: a top-N ranks by one numeric aggregate of the subquery",
                        row_number.order_by
                    ),
                ))
            }
        };
        match ranker {
            Ranker::Keys { time_column, ttl_ms } => {
                let ranked_keys: Vec<String> = keys.iter().filter(|key| !group.contains(key)).cloned().collect();
                planned.push(Operator::TopK(TopKSpec {
                    group,
                    keys: ranked_keys,
                    order_by,
                    k,
                    ranking: row_number.ranking,
                    time_column: time_column.to_string(),
                    ttl_ms,
                    max_keys: self.max_keys(),
                }));
            }
            Ranker::Windows { window } => {
                let mut group = group;
                if !group.iter().any(|column| column == WindowBound::End.name()) {
                    // A function of window_start, so the groups are the same; the ranking
                    // reads a group's window end from it.
                    group.push(WindowBound::End.name().to_string());
                }
                planned.push(Operator::TopRows(TopRowsSpec {
                    group,
                    order_by,
                    k,
                    ranking: row_number.ranking,
                    time_column: WindowBound::End.name().to_string(),
                    window_end_column: WindowBound::End.name().to_string(),
                    // A window's rows come once from each aggregate partition as its own
                    // watermark closes the window; the partitions' watermarks advance apart,
                    // and one window length more than the lateness covers that skew.
                    allowed_lateness_ms: window.size_ms + window.allowed_lateness_ms,
                    max_groups: self.max_keys(),
                }));
            }
        }
        // The subquery's SELECT list names the top-N's output columns: its keys, the ranked
        // aggregate and the row number, each under the name the subquery gave it.
        let schema = planned.output_schema(self.at)?;
        let mut scope = Scope::default();
        for item in &self.select.projection {
            let (expr, alias) = match item {
                SelectItem::UnnamedExpr(expr) => (expr, None),
                SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
                other => return Err(SqlError::unsupported(self.at, format!("`{other}` in a top-N subquery"))),
            };
            let column = if ranking_of(expr).is_some() {
                RANK_COLUMN.to_string()
            } else {
                let translator =
                    Translator { scope: &planned.scope, replacements: Some(replacements), fallback: self.at };
                match translator.translate(expr)? {
                    PlanExpr::Column(name) if schema.field(&name).is_some() => name,
                    _ => {
                        return Err(SqlError::unsupported(
                            spans::at(expr, self.at),
                            format!("`{expr}` in a top-N subquery: it lists GROUP BY keys, the ranked aggregate and ROW_NUMBER()"),
                        ))
                    }
                }
            };
            let field = schema.field(&column).expect("checked above or the top-N's rank");
            scope.push(ScopeColumn {
                table: None,
                name: alias.unwrap_or_else(|| default_name(expr)),
                binding: Binding::Column(column.clone()),
                data_type: field.data_type,
                nullable: field.nullable,
            });
        }
        planned.scope = scope;
        Ok(())
    }

    fn project_select_list(&self, planned: &mut Planned, replacements: &Replacements) -> Result<(), SqlError> {
        let mut columns: Vec<(PlanExpr, String)> = Vec::new();
        for item in &self.select.projection {
            let (expr, alias) = match item {
                SelectItem::UnnamedExpr(expr) => (expr, None),
                SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
                SelectItem::Wildcard(_) => {
                    let schema = planned.output_schema(self.at)?;
                    columns.extend(schema.fields.iter().map(|field| (col(field.name.as_str()), field.name.clone())));
                    continue;
                }
                other => return Err(SqlError::unsupported(self.at, format!("`{other}` after GROUP BY"))),
            };
            let translator = Translator { scope: &planned.scope, replacements: Some(replacements), fallback: self.at };
            let (planned_expr, _) = translator.typed(expr)?;
            columns.push((planned_expr, alias.unwrap_or_else(|| default_name(expr))));
        }
        push_projection(planned, columns, self.at)
    }

    fn plan_projection(&self, planned: &mut Planned) -> Result<(), SqlError> {
        let mut columns: Vec<(PlanExpr, String)> = Vec::new();
        for item in &self.select.projection {
            match item {
                SelectItem::Wildcard(options) => {
                    if options.opt_exclude.is_some() || options.opt_except.is_some() || options.opt_rename.is_some() {
                        return Err(SqlError::unsupported(self.at, format!("`*` with options ({options})")));
                    }
                    let schema = planned.output_schema(self.at)?;
                    columns.extend(schema.fields.iter().map(|field| (col(field.name.as_str()), field.name.clone())));
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let table = kind.to_string().trim_end_matches(".*").to_ascii_lowercase();
                    let before = columns.len();
                    for column in &planned.scope.columns {
                        if column.table.as_deref() == Some(table.as_str()) {
                            if let Binding::Column(name) = &column.binding {
                                columns.push((col(name.as_str()), column.name.clone()));
                            }
                        }
                    }
                    if columns.len() == before {
                        return Err(SqlError::invalid(self.at, format!("`{kind}` names no table of the FROM clause")));
                    }
                }
                SelectItem::UnnamedExpr(expr) => {
                    let (planned_expr, _) = Translator::new(&planned.scope, self.at).typed(expr)?;
                    columns.push((planned_expr, default_name(expr)));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let (planned_expr, _) = Translator::new(&planned.scope, self.at).typed(expr)?;
                    columns.push((planned_expr, alias.value.clone()));
                }
                SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported(self.at, "several aliases for one item"));
                }
            }
        }
        push_projection(planned, columns, self.at)
    }
}

/// Adds the projection unless it would only repeat the plan's output as it is.
pub fn push_projection(planned: &mut Planned, columns: Vec<(PlanExpr, String)>, at: Position) -> Result<(), SqlError> {
    for (index, (_, name)) in columns.iter().enumerate() {
        if columns[..index].iter().any(|(_, earlier)| earlier == name) {
            return Err(SqlError::invalid(at, format!("the output column `{name}` appears twice; give one an alias")));
        }
    }
    let schema = planned.output_schema(at)?;
    let identity = columns.len() == schema.fields.len()
        && columns.iter().zip(&schema.fields).all(|((expr, name), field)| {
            *name == field.name && matches!(expr, PlanExpr::Column(column) if *column == field.name)
        });
    if !identity {
        match planned.nodes.last_mut().map(|node| &mut node.operator) {
            // A selection or renaming of the projection before it is that projection's own
            // expressions picked and renamed: one pass over the rows instead of two.
            Some(Operator::Project { columns: before })
                if columns.iter().all(|(expr, _)| matches!(expr, PlanExpr::Column(_))) =>
            {
                let picked = columns
                    .into_iter()
                    .map(|(expr, name)| {
                        let PlanExpr::Column(column) = expr else {
                            unreachable!("checked: every expression is a column")
                        };
                        let (source, _) = before
                            .iter()
                            .find(|(_, earlier)| *earlier == column)
                            .expect("validated: the column is an output of the projection before");
                        (source.clone(), name)
                    })
                    .collect();
                *before = picked;
            }
            _ => planned.push(Operator::Project { columns }),
        }
    }
    let schema = planned.output_schema(at)?;
    planned.scope = Scope::of_fields(&schema.fields);
    Ok(())
}

fn push_lookup(planned: &mut Planned, lookup: &LookupJoin) {
    planned.push(Operator::Lookup {
        key: lookup.key.clone(),
        table: lookup.table.clone(),
        table_key: lookup.table_key.clone(),
        columns: lookup.columns.iter().map(|(name, _)| name.clone()).collect(),
    });
    planned.scope.push(ScopeColumn {
        table: Some(lookup.alias.clone()),
        name: lookup.table_key.clone(),
        binding: Binding::Column(lookup.key.clone()),
        data_type: DataType::Utf8,
        nullable: false,
    });
    for (name, data_type) in &lookup.columns {
        planned.scope.push(ScopeColumn {
            table: Some(lookup.alias.clone()),
            name: name.clone(),
            binding: Binding::Column(name.clone()),
            data_type: *data_type,
            nullable: false,
        });
    }
}

/// A FROM relation: a table, a window or keyed-state table function over one, or a subquery.
pub(crate) fn plan_relation(relation: &TableFactor, context: &QueryContext) -> Result<Planned, SqlError> {
    let at = spans::at(relation, context.fallback);
    match relation {
        TableFactor::Table { name, alias, args: None, .. }
            if context.views.contains_key(&name.to_string().to_ascii_lowercase()) =>
        {
            let (view, _) = &context.views[&name.to_string().to_ascii_lowercase()];
            let mut planned = plan_query(view, context)?;
            let qualifier = alias.as_ref().map_or_else(|| name.to_string(), |alias| alias.name.value.clone());
            planned.scope = planned.scope.requalified(Some(&qualifier));
            Ok(planned)
        }
        TableFactor::Table { name, alias, args: None, .. } => {
            let table = context.catalog.get(&name.to_string(), at)?;
            let qualifier = alias.as_ref().map_or(table.name.as_str(), |alias| alias.name.value.as_str());
            read_table(table, qualifier, at, context)
        }
        TableFactor::TableFunction { expr: Expr::Function(function), alias } => {
            let qualifier = alias.as_ref().map(|alias| alias.name.value.clone());
            plan_table_function(function, qualifier, at, context)
        }
        TableFactor::Function { name, args, alias, .. } => Err(SqlError::unsupported(
            at,
            format!(
                "`{name}({})` in FROM without TABLE(…); write TABLE({name}(…)){}",
                args.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                alias.as_ref().map(|alias| format!(" {alias}")).unwrap_or_default()
            ),
        )),
        TableFactor::Derived { lateral: false, subquery, alias, .. } => {
            let mut planned = plan_query(subquery, context)?;
            planned.scope = planned.scope.requalified(alias.as_ref().map(|alias| alias.name.value.as_str()));
            Ok(planned)
        }
        other => Err(SqlError::unsupported(at, format!("`{other}` in FROM"))),
    }
}

/// Source and decoder of a declared stream table.
pub fn read_table(table: &Table, qualifier: &str, at: Position, context: &QueryContext) -> Result<Planned, SqlError> {
    let spec = table.source(at)?;
    let source_partitions = spec.partitions().max(1);
    let schema = Schema::new(
        table
            .columns
            .iter()
            .map(|column| Field { name: column.name.clone(), data_type: column.data_type, nullable: column.nullable })
            .collect(),
    );
    let decode = match &table.format {
        Format::Json { max_record_bytes } => Operator::DecodeJson { schema, max_record_bytes: *max_record_bytes },
        Format::Avro { schema_path, max_record_bytes } => {
            let text = (context.read_file)(schema_path).map_err(|reason| {
                SqlError::invalid(
                    table.at,
                    format!("table `{}`: the Avro schema `{schema_path}`: {reason}", table.name),
                )
            })?;
            let json = serde_json::from_str(&text).map_err(|reason| {
                SqlError::invalid(
                    table.at,
                    format!("table `{}`: the Avro schema `{schema_path}` is not JSON: {reason}", table.name),
                )
            })?;
            let decoded = AvroSchemaSource::Inline(json);
            check_avro_columns(table, &decoded)?;
            Operator::DecodeAvro { schema: decoded, max_record_bytes: *max_record_bytes }
        }
    };
    let mut scope = Scope::default();
    for column in &table.columns {
        scope.push(ScopeColumn {
            table: Some(qualifier.to_ascii_lowercase()),
            name: column.name.clone(),
            binding: Binding::Column(column.name.clone()),
            data_type: column.data_type,
            nullable: column.nullable,
        });
    }
    Ok(Planned {
        nodes: vec![Node { operator: Operator::Source { spec } }, Node { operator: decode }],
        scope,
        event_time: table.watermark.clone(),
        source_partitions,
        window: None,
    })
}

/// The table's declared columns must be the Avro record's, in name and type.
fn check_avro_columns(table: &Table, schema: &AvroSchemaSource) -> Result<(), SqlError> {
    let record = schema
        .record_schema()
        .map_err(|reason| SqlError::invalid(table.at, format!("table `{}`: {reason}", table.name)))?;
    let decoded = sleet_plan::avro::decoded_schema(&record);
    for column in &table.columns {
        match decoded.field(&column.name) {
            Some(field) if field.data_type == column.data_type => {}
            Some(field) => {
                return Err(SqlError::new(
                    table.at,
                    SqlErrorKind::TypeMismatch {
                        what: format!("column `{}` of table `{}`", column.name, table.name),
                        expected: format!("{} (the Avro schema's type)", crate::types::sql_name(field.data_type)),
                        found: column.data_type,
                    },
                ))
            }
            None => {
                return Err(SqlError::invalid(
                    table.at,
                    format!(
                        "table `{}`: the Avro schema has no field `{}` (it has {})",
                        table.name,
                        column.name,
                        decoded.names().join(", ")
                    ),
                ))
            }
        }
    }
    Ok(())
}

const TABLE_FUNCTIONS: &str = "TUMBLE, HOP, SESSION, INCREMENTS";

fn plan_table_function(
    function: &Function,
    alias: Option<String>,
    at: Position,
    context: &QueryContext,
) -> Result<Planned, SqlError> {
    let name = function_name(function);
    let arguments = function_arguments(function);
    let table_argument = |index: usize| -> Result<&Table, SqlError> {
        match arguments.get(index).and_then(|argument| argument_expr(argument)) {
            Some(Expr::Identifier(ident)) => context.catalog.get(&ident.value, spans::ident_at(ident, at)),
            Some(other) => Err(SqlError::invalid(
                spans::at(other, at),
                format!("the first argument of {} is a table: TABLE name", name.to_uppercase()),
            )),
            None => Err(SqlError::invalid(at, format!("{} needs a table as its first argument", name.to_uppercase()))),
        }
    };
    match name.as_str() {
        "tumble" | "hop" | "session" => {
            let table = table_argument(0)?;
            let (descriptor, lengths) = match (name.as_str(), arguments.as_slice()) {
                ("tumble", [_, descriptor, size]) => (descriptor, vec![("size", *size)]),
                // Flink's order: the slide, then the size.
                ("hop", [_, descriptor, slide, size]) => (descriptor, vec![("slide", *slide), ("size", *size)]),
                ("session", [_, descriptor, gap]) => (descriptor, vec![("gap", *gap)]),
                _ => {
                    return Err(SqlError::invalid(
                        at,
                        match name.as_str() {
                            "tumble" => "TUMBLE takes (TABLE t, DESCRIPTOR(time_column), INTERVAL size)",
                            "hop" => "HOP takes (TABLE t, DESCRIPTOR(time_column), INTERVAL slide, INTERVAL size)",
                            _ => "SESSION takes (TABLE t, DESCRIPTOR(time_column), INTERVAL gap); its keys are the GROUP BY's",
                        },
                    ))
                }
            };
            let qualifier = alias.unwrap_or_else(|| table.name.clone());
            let mut planned = read_table(table, &qualifier, at, context)?;
            let time_column = descriptor_column(descriptor, table, at)?;
            let descriptor_at = argument_expr(descriptor).map_or(at, |expr| spans::at(expr, at));
            let mut lengths_ms = Vec::new();
            for (what, argument) in lengths {
                let expr = argument_expr(argument)
                    .ok_or_else(|| SqlError::invalid(at, format!("{}'s {what} is an INTERVAL", name.to_uppercase())))?;
                let ms = interval_ms(expr, at)?;
                if ms <= 0 {
                    return Err(SqlError::invalid(spans::at(expr, at), format!("a window's {what} must be positive")));
                }
                lengths_ms.push((ms, spans::at(expr, at)));
            }
            let lateness_ms = watermark_for(table, &time_column, descriptor_at)?;
            let spec = match lengths_ms.as_slice() {
                [(size_ms, _)] if name == "tumble" => WindowSpec::tumbling(time_column, *size_ms, lateness_ms),
                [(gap_ms, _)] => WindowSpec::session(time_column, *gap_ms, lateness_ms),
                [(slide_ms, _), (size_ms, size_at)] => {
                    if size_ms % slide_ms != 0 {
                        return Err(SqlError::unsupported(
                            *size_at,
                            format!(
                                "a HOP size ({size_ms} ms) that is not a whole multiple of its slide ({slide_ms} ms)"
                            ),
                        ));
                    }
                    WindowSpec::hopping(time_column, *size_ms, *slide_ms, lateness_ms)
                }
                _ => unreachable!("the arguments matched above"),
            };
            planned.window = Some(spec);
            for bound in [WindowBound::Start, WindowBound::End] {
                planned.scope.push(ScopeColumn {
                    table: Some(qualifier.to_ascii_lowercase()),
                    name: bound.name().into(),
                    binding: Binding::WindowBound(bound),
                    data_type: DataType::Int64,
                    nullable: false,
                });
            }
            Ok(planned)
        }
        "cumulate" => Err(SqlError::unsupported(
            at,
            format!("the window table function {} (sleet has {TABLE_FUNCTIONS})", name.to_uppercase()),
        )),
        "increments" => {
            let table = table_argument(0)?;
            let [_, keys, values, encoding] = arguments.as_slice() else {
                return Err(SqlError::invalid(
                    at,
                    "INCREMENTS takes (TABLE t, DESCRIPTOR(key columns), DESCRIPTOR(value columns), 'counter' | \
                     'cumulative' | 'rate')",
                ));
            };
            let qualifier = alias.unwrap_or_else(|| table.name.clone());
            let mut planned = read_table(table, &qualifier, at, context)?;
            let watermark = table.watermark.clone().ok_or_else(|| {
                SqlError::invalid(
                    at,
                    format!("INCREMENTS orders readings by event time: declare `{}`'s WATERMARK", table.name),
                )
            })?;
            let encoding = match argument_expr(encoding) {
                Some(Expr::Value(value)) => match &value.value {
                    Value::SingleQuotedString(text) => match text.to_ascii_lowercase().as_str() {
                        "counter" => ReadingEncoding::Counter,
                        "cumulative" => ReadingEncoding::Cumulative,
                        "rate" => ReadingEncoding::Rate,
                        _ => return Err(SqlError::invalid(at, format!("'{text}' is not counter, cumulative or rate"))),
                    },
                    other => return Err(SqlError::invalid(at, format!("{other} is not counter, cumulative or rate"))),
                },
                _ => {
                    return Err(SqlError::invalid(
                        at,
                        "INCREMENTS' fourth argument is 'counter', 'cumulative' or 'rate'",
                    ))
                }
            };
            let ttl_ms = context.settings.state_ttl_ms.ok_or_else(|| {
                SqlError::invalid(at, "INCREMENTS keeps state per key: SET 'state.ttl' = '2 d' first")
            })?;
            let spec = IncrementsSpec {
                keys: descriptor_columns(keys, table, at)?,
                time_column: watermark.column.clone(),
                encoding,
                columns: descriptor_columns(values, table, at)?,
                late: LatePolicy::Fold,
                allowed_lateness_ms: watermark.lateness_ms,
                ttl_ms,
                wrap_bits: sleet_plan::state_spec::default_wrap_bits(),
                max_keys: context.settings.max_keys.unwrap_or_else(sleet_plan::state_spec::default_max_keys),
            };
            if encoding == ReadingEncoding::Rate {
                for column in &mut planned.scope.columns {
                    if spec.columns.contains(&column.name) {
                        column.data_type = DataType::Float64;
                    }
                }
            }
            planned.push(Operator::Increments(spec));
            Ok(planned)
        }
        _ => Err(SqlError::new(
            at,
            SqlErrorKind::UnknownFunction { name: function.name.to_string(), known: TABLE_FUNCTIONS.into() },
        )),
    }
}

/// The lateness a window over `column` allows: the table's watermark must be on it.
fn watermark_for(table: &Table, column: &str, at: Position) -> Result<i64, SqlError> {
    match &table.watermark {
        Some(watermark) if watermark.column == column => Ok(watermark.lateness_ms),
        Some(watermark) => Err(SqlError::invalid(
            at,
            format!(
                "the window is over `{column}` but `{}`'s WATERMARK is on `{}`; window over the watermark column",
                table.name, watermark.column
            ),
        )),
        None => Err(SqlError::invalid(
            at,
            format!(
                "a window over event time needs the table's watermark: add `WATERMARK FOR {column} AS {column} - INTERVAL \
                 '0' SECOND` to `{}`",
                table.name
            ),
        )),
    }
}

fn descriptor_columns(argument: &FunctionArg, table: &Table, at: Position) -> Result<Vec<String>, SqlError> {
    let Some(Expr::Function(descriptor)) = argument_expr(argument) else {
        return Err(SqlError::invalid(at, format!("expected DESCRIPTOR(column, …), found `{argument}`")));
    };
    if function_name(descriptor) != "descriptor" {
        return Err(SqlError::invalid(at, format!("expected DESCRIPTOR(column, …), found `{descriptor}`")));
    }
    let mut columns = Vec::new();
    for argument in function_arguments(descriptor) {
        match argument_expr(argument) {
            Some(Expr::Identifier(ident)) => match table.column(&ident.value) {
                Some(column) => columns.push(column.name.clone()),
                None => {
                    return Err(SqlError::new(
                        spans::ident_at(ident, at),
                        SqlErrorKind::UnknownColumn {
                            name: ident.value.clone(),
                            in_scope: table
                                .columns
                                .iter()
                                .map(|column| column.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                        },
                    ))
                }
            },
            _ => return Err(SqlError::invalid(at, format!("DESCRIPTOR takes column names, found `{argument}`"))),
        }
    }
    if columns.is_empty() {
        return Err(SqlError::invalid(at, "DESCRIPTOR needs at least one column"));
    }
    Ok(columns)
}

fn descriptor_column(argument: &FunctionArg, table: &Table, at: Position) -> Result<String, SqlError> {
    match descriptor_columns(argument, table, at)?.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(SqlError::invalid(at, "the window's DESCRIPTOR names one time column")),
    }
}

fn window_bound(expr: &Expr, scope: &Scope, at: Position) -> Option<WindowBound> {
    let parts = match expr {
        Expr::Identifier(ident) => std::slice::from_ref(ident),
        Expr::CompoundIdentifier(parts) => parts.as_slice(),
        _ => return None,
    };
    match scope.resolve(parts, at) {
        Ok(ScopeColumn { binding: Binding::WindowBound(bound), .. }) => Some(*bound),
        _ => None,
    }
}

fn aggregate_calls_in(expr: &Expr) -> Vec<&Expr> {
    let mut found = Vec::new();
    aggregate_calls(expr, &mut found);
    found
}

pub(crate) fn split_conjuncts(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::And, right } => {
            let mut conjuncts = split_conjuncts(left);
            conjuncts.extend(split_conjuncts(right));
            conjuncts
        }
        Expr::Nested(inner) => split_conjuncts(inner),
        other => vec![other],
    }
}

/// The plan columns of the stream an expression names (names it cannot resolve are left
/// out: they belong to a lookup table, or are errors reported where they are translated).
fn collect_stream_columns(expr: &Expr, scope: &Scope, at: Position, out: &mut Vec<String>) {
    let mut references = Vec::new();
    column_references(expr, &mut references);
    for parts in references {
        if let Ok(ScopeColumn { binding: Binding::Column(name), .. }) = scope.resolve(&parts, at) {
            out.push(name.clone());
        }
    }
}

fn expression_may_be_null(expr: &Expr, scope: &Scope) -> bool {
    match expr {
        Expr::Identifier(ident) => {
            scope.resolve(std::slice::from_ref(ident), Position::default()).map_or(true, |column| column.nullable)
        }
        Expr::CompoundIdentifier(parts) => {
            scope.resolve(parts, Position::default()).map_or(true, |column| column.nullable)
        }
        Expr::Value(_) => false,
        _ => true,
    }
}

pub(crate) fn join_kind(operator: &JoinOperator) -> &'static str {
    match operator {
        JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => "LEFT JOIN",
        JoinOperator::Right(_) | JoinOperator::RightOuter(_) => "RIGHT JOIN",
        JoinOperator::FullOuter(_) => "FULL JOIN",
        JoinOperator::CrossJoin(_) => "CROSS JOIN",
        _ => "join",
    }
}

/// The ranking a top-N's window function asks for: `ROW_NUMBER()` or `RANK()` with OVER.
pub(crate) fn ranking_of(expr: &Expr) -> Option<Ranking> {
    match expr {
        Expr::Function(function) if function.over.is_some() => match function_name(function).as_str() {
            "row_number" => Some(Ranking::RowNumber),
            "rank" => Some(Ranking::Rank),
            _ => None,
        },
        _ => None,
    }
}

/// A subquery in FROM whose SELECT list holds `ROW_NUMBER()` or `RANK() OVER (…) AS alias`.
fn top_n_subquery(relation: &TableFactor, at: Position) -> Result<Option<(&Select, RowNumber)>, SqlError> {
    let TableFactor::Derived { subquery, .. } = relation else {
        return Ok(None);
    };
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        return Ok(None);
    };
    let mut found = None;
    for item in &inner.projection {
        let (expr, alias) = match item {
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            SelectItem::UnnamedExpr(expr) => (expr, None),
            _ => continue,
        };
        let item_at = spans::at(expr, at);
        let Some(ranking) = ranking_of(expr) else {
            if let Expr::Function(function) = expr {
                if function.over.is_some() {
                    return Err(SqlError::unsupported(
                        item_at,
                        format!("`{}() OVER (…)` in a top-N; sleet ranks with ROW_NUMBER() or RANK()", function.name),
                    ));
                }
            }
            continue;
        };
        let name = match ranking {
            Ranking::RowNumber => "ROW_NUMBER()",
            Ranking::Rank => "RANK()",
        };
        let Some(alias) = alias else {
            return Err(SqlError::invalid(
                item_at,
                format!("give {name} OVER (…) an alias, to filter it in the outer query"),
            ));
        };
        let Expr::Function(function) = expr else { unreachable!("is_row_number matched a function") };
        let Some(WindowType::WindowSpec(spec)) = &function.over else {
            return Err(SqlError::unsupported(item_at, "a named window in OVER"));
        };
        if spec.window_frame.is_some() {
            return Err(SqlError::unsupported(item_at, format!("a window frame in {name}'s OVER")));
        }
        let order_by = match spec.order_by.as_slice() {
            [one] if matches!(one.options.sort, Some(OrderBySort::Desc)) => one.expr.clone(),
            [_] => {
                return Err(SqlError::unsupported(
                    item_at,
                    format!("{name} ordered ascending: sleet's top-N ranks the largest first (ORDER BY … DESC)"),
                ))
            }
            _ => return Err(SqlError::invalid(item_at, format!("{name} OVER (…) needs ORDER BY one value DESC"))),
        };
        if found.is_some() {
            return Err(SqlError::unsupported(item_at, "two ranking items (ROW_NUMBER() or RANK()) in one query"));
        }
        found = Some(RowNumber {
            ranking,
            partition_by: spec.partition_by.clone(),
            order_by,
            alias: alias.value.clone(),
            at: item_at,
        });
    }
    Ok(found.map(|row_number| (inner.as_ref(), row_number)))
}

/// `SELECT … FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn FROM … GROUP BY …) WHERE rn <= N`,
/// or the same over a window table function's rows without GROUP BY (`window_top`).
fn plan_top_n(
    outer: &Select,
    inner: &Select,
    row_number: RowNumber,
    context: &QueryContext,
) -> Result<Planned, SqlError> {
    let at = spans::at(outer, context.fallback);
    let k = rank_bound(outer.selection.as_ref(), &row_number.alias, at)?;
    let [from] = inner.from.as_slice() else {
        return Err(SqlError::unsupported(at, "a top-N subquery reads one FROM relation"));
    };
    refuse_select_clauses(inner, at)?;
    let mut planned = if crate::window_top::ranks_rows(inner) {
        crate::window_top::plan(outer, inner, from, (&row_number, k), context)?
    } else {
        let planner = SelectPlanner { select: inner, context, at: spans::at(inner, at) };
        planner.plan(from, Some((&row_number, k)))?
    };
    if outer.group_by != GroupByExpr::Expressions(Vec::new(), Vec::new()) || outer.having.is_some() {
        return Err(SqlError::unsupported(at, "GROUP BY or HAVING around a top-N"));
    }
    let mut columns: Vec<(PlanExpr, String)> = Vec::new();
    for item in &outer.projection {
        match item {
            SelectItem::Wildcard(_) => {
                let schema = planned.output_schema(at)?;
                columns.extend(schema.fields.iter().map(|field| (col(field.name.as_str()), field.name.clone())));
            }
            SelectItem::UnnamedExpr(expr) => {
                columns.push((Translator::new(&planned.scope, at).typed(expr)?.0, default_name(expr)));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                columns.push((Translator::new(&planned.scope, at).typed(expr)?.0, alias.value.clone()));
            }
            other => return Err(SqlError::unsupported(at, format!("`{other}` around a top-N"))),
        }
    }
    push_projection(&mut planned, columns, at)?;
    Ok(planned)
}

/// N of `WHERE rn <= N` (or `rn < N + 1`); nothing else may be filtered there.
fn rank_bound(selection: Option<&Expr>, alias: &str, at: Position) -> Result<u32, SqlError> {
    let refuse = || {
        SqlError::invalid(
            at,
            format!("a top-N's outer query filters `WHERE {alias} <= N` and nothing else (N a whole number ≥ 1)"),
        )
    };
    let Some(Expr::BinaryOp { left, op, right }) = selection.map(strip_nested) else {
        return Err(refuse());
    };
    let is_rank =
        |expr: &Expr| matches!(strip_nested(expr), Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case(alias));
    let number = |expr: &Expr| match strip_nested(expr) {
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => text.parse::<u32>().ok(),
            _ => None,
        },
        _ => None,
    };
    use sqlparser::ast::BinaryOperator::{Gt, GtEq, Lt, LtEq};
    let bound = match op {
        LtEq if is_rank(left) => number(right),
        Lt if is_rank(left) => number(right).and_then(|n| n.checked_sub(1)),
        GtEq if is_rank(right) => number(left),
        Gt if is_rank(right) => number(left).and_then(|n| n.checked_sub(1)),
        _ => None,
    };
    bound.filter(|k| *k >= 1).ok_or_else(refuse)
}

/// What a top-N over an aggregate ranks with: every key's latest value, kept for a lifetime
/// of event time (`top_k`), or each window's final rows, kept until the window is past
/// (`top_rows`).
enum Ranker<'a> {
    Keys { time_column: &'a str, ttl_ms: i64 },
    Windows { window: &'a WindowSpec },
}

/// A ranking over a windowed aggregate ranks within each window: it partitions by
/// `window_start` (`window_end` may be named too), and the window has a fixed start to rank in.
fn check_window_ranking(window: &WindowSpec, group: &[String], at: Position) -> Result<(), SqlError> {
    if window.gap_ms.is_some() {
        return Err(SqlError::unsupported(at, "a top-N over SESSION windows; rank TUMBLE or HOP windows"));
    }
    if !group.iter().any(|name| name == WindowBound::Start.name()) {
        return Err(SqlError::invalid(
            at,
            "a top-N over a windowed aggregate ranks within each window: PARTITION BY window_start, window_end",
        ));
    }
    Ok(())
}

fn strip_nested(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => strip_nested(inner),
        other => other,
    }
}

/// The query's columns become the sink table's, by position: the same number, each of the
/// declared type, renamed to the declared names.
pub fn conform_to_sink(planned: &mut Planned, table: &Table, at: Position) -> Result<(), SqlError> {
    let schema = planned.output_schema(at)?;
    if schema.fields.len() != table.columns.len() {
        return Err(SqlError::invalid(
            at,
            format!(
                "the query gives {} columns ({}) but `{}` has {} ({})",
                schema.fields.len(),
                schema.names().join(", "),
                table.name,
                table.columns.len(),
                table.columns.iter().map(|column| column.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for (field, column) in schema.fields.iter().zip(&table.columns) {
        if field.data_type != column.data_type {
            return Err(SqlError::new(
                at,
                SqlErrorKind::TypeMismatch {
                    what: format!("the query's column `{}`, written to `{}.{}`", field.name, table.name, column.name),
                    expected: crate::types::sql_name(column.data_type).into(),
                    found: field.data_type,
                },
            ));
        }
    }
    let columns = schema
        .fields
        .iter()
        .zip(&table.columns)
        .map(|(field, column)| (col(field.name.as_str()), column.name.clone()))
        .collect();
    push_projection(planned, columns, at)
}
