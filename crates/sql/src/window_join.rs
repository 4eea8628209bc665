//! A join of two streams in Flink's window join form, onto the plan's `window_join`:
//!
//! ```text
//!  FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(t), INTERVAL …)) L
//!  JOIN TABLE(TUMBLE(TABLE r, DESCRIPTOR(t), INTERVAL …)) R
//!    ON L.k = R.k AND L.window_start = R.window_start [AND L.window_end = R.window_end]
//!  WHERE …
//!
//!  source → decode → project (side, key, time, the columns read)   one source: l and r are
//!         → filter (on a side)                                    views (or the table itself)
//!         → exchange on the key → window_join                     over the same table
//!         → filter (WHERE conjuncts naming both sides) → the SELECT list
//! ```
//!
//! A plan is a line with one source, so both sides must read the same table: each side is its
//! view's filters and projections folded into a predicate and column expressions over the
//! table's decoded columns. A row's side is which predicate it meets; to be sure no row meets
//! both (it could only be on one side), each side must compare one column with a literal that
//! the other side's compares it with differently (`event_type = 'person'` against
//! `event_type = 'auction'`). WHERE conjuncts naming one side join that side's predicate.

use sleet_plan::{col, lit, DataType, Expr as PlanExpr, JoinColumn, Node, Operator, WindowJoinSpec, WindowSpec};
use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, Function, GroupByExpr, Join, JoinConstraint, JoinOperator, Select, SelectItem,
    TableFactor, TableWithJoins,
};

use crate::error::{Position, SqlError};
use crate::interval::interval_ms;
use crate::query::{self, plan_query, Planned, QueryContext};
use crate::scope::{Binding, Scope, ScopeColumn, WindowBound};
use crate::spans;
use crate::sql_expr::{aggregate_calls, argument_expr, default_name, function_arguments, function_name, Translator};
use crate::types::sql_name;

/// The column the projection before the exchange says a row's side in: true on the left.
pub const SIDE_COLUMN: &str = "__side";
/// The column both sides' join keys are projected into, which the exchange hashes on.
pub const KEY_COLUMN: &str = "__key";

/// Whether `from` joins a stream rather than a static table: a window table function, a view
/// or a table read as a stream. Static tables keep the lookup join's planning.
pub fn joins_streams(from: &TableWithJoins, context: &QueryContext) -> bool {
    from.joins.iter().any(|join| match &join.relation {
        TableFactor::TableFunction { .. } => true,
        TableFactor::Table { name, args: None, .. } => {
            let name = name.to_string();
            context.views.contains_key(&name.to_ascii_lowercase())
                || context
                    .catalog
                    .get(&name, Position::default())
                    .is_ok_and(|table| table.source(Position::default()).is_ok())
        }
        _ => false,
    })
}

/// One side: its table function's window, its rows as a predicate and its columns as
/// expressions over the source table's decoded columns.
struct Side {
    alias: String,
    /// The source and decoder, which both sides must share.
    nodes: Vec<Node>,
    predicate: Option<PlanExpr>,
    /// (name the query uses, expression over the decoded columns, type, nullable).
    columns: Vec<(String, PlanExpr, DataType, bool)>,
    window: WindowSpec,
    source_partitions: u32,
    at: Position,
    size_at: Position,
}

impl Side {
    /// The plan name of the side's column `name` in the query's scope (and the join's output).
    fn qualified(&self, name: &str) -> String {
        format!("{}.{name}", self.alias)
    }

    /// The expression over the decoded columns a qualified name stands for.
    fn expr_of(&self, qualified: &str) -> Option<&PlanExpr> {
        let name = qualified.strip_prefix(&self.alias)?.strip_prefix('.')?;
        self.columns.iter().find(|(column, ..)| column == name).map(|(_, expr, ..)| expr)
    }

    /// `expr`, written over this side's qualified names, over the decoded columns.
    fn unfold(&self, expr: &PlanExpr) -> PlanExpr {
        expr.replace_columns(&|name| self.expr_of(name).cloned())
    }

    fn and(&mut self, condition: PlanExpr) {
        self.predicate = Some(match self.predicate.take() {
            None => condition,
            Some(before) => before.and(condition),
        });
    }
}

/// Which sides a translated expression reads: (left, right).
fn sides_read(expr: &PlanExpr, sides: &[Side; 2]) -> (bool, bool) {
    let columns = expr.columns();
    let reads = |side: &Side| columns.iter().any(|name| side.expr_of(name).is_some());
    (reads(&sides[0]), reads(&sides[1]))
}

pub fn plan(select: &Select, from: &TableWithJoins, context: &QueryContext) -> Result<Planned, SqlError> {
    let at = spans::at(select, context.fallback);
    let without_distinct = Select { distinct: None, ..select.clone() };
    query::refuse_select_clauses(&without_distinct, at)?;
    let distinct = match &select.distinct {
        None | Some(Distinct::All) => false,
        Some(Distinct::Distinct) => true,
        Some(Distinct::On(_)) => return Err(SqlError::unsupported(at, "DISTINCT ON")),
    };
    let join = match from.joins.as_slice() {
        [one] => one,
        [_, second, ..] => {
            return Err(SqlError::unsupported(
                spans::at(&second.relation, at),
                "a second join: a window join pairs two streams",
            ))
        }
        [] => unreachable!("joins_streams found a join"),
    };
    let condition = join_condition(join, at)?;
    let mut sides = [plan_side(&from.relation, context, at)?, plan_side(&join.relation, context, at)?];
    check_same_stream(&sides)?;
    let scope = join_scope(&sides);
    let translator = Translator::new(&scope, at);
    let (left_key, right_key) = keys_of(condition, &sides, &translator, at)?;

    let has_group_by = !matches!(&select.group_by, GroupByExpr::Expressions(exprs, _) if exprs.is_empty());
    let mut aggregates = Vec::new();
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            aggregate_calls(expr, &mut aggregates);
        }
    }
    if has_group_by || !aggregates.is_empty() || select.having.is_some() {
        return Err(SqlError::unsupported(
            at,
            "an aggregate over a window join (sleet plans one exchange per job: the join's)",
        ));
    }

    let mut after_join: Vec<PlanExpr> = Vec::new();
    if let Some(selection) = &select.selection {
        for conjunct in query::split_conjuncts(selection) {
            let mut found = Vec::new();
            aggregate_calls(conjunct, &mut found);
            if !found.is_empty() {
                return Err(SqlError::invalid(
                    spans::at(conjunct, at),
                    format!("`{conjunct}`: an aggregate belongs in HAVING, not WHERE"),
                ));
            }
            let predicate = translator.predicate(conjunct)?;
            let reads_bound = predicate.columns().iter().any(|name| is_window_bound(name));
            match sides_read(&predicate, &sides) {
                (true, false) if !reads_bound => {
                    let unfolded = sides[0].unfold(&predicate);
                    sides[0].and(unfolded);
                }
                (false, true) if !reads_bound => {
                    let unfolded = sides[1].unfold(&predicate);
                    sides[1].and(unfolded);
                }
                _ => after_join.push(predicate),
            }
        }
    }
    check_disjoint(&sides, spans::at(&join.relation, at))?;

    let mut outputs: Vec<(PlanExpr, String)> = Vec::new();
    for item in &select.projection {
        let (expr, name) = match item {
            SelectItem::UnnamedExpr(expr) => (expr, default_name(expr)),
            SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            other => {
                return Err(SqlError::unsupported(
                    at,
                    format!("`{other}` in a window join's SELECT list; name the columns of each side"),
                ))
            }
        };
        outputs.push((translator.typed(expr)?.0, name));
    }
    let mut read: Vec<String> = Vec::new();
    for expr in outputs.iter().map(|(expr, _)| expr).chain(&after_join) {
        for name in expr.columns() {
            if !is_window_bound(name) && !read.iter().any(|known| known == name) {
                read.push(name.to_string());
            }
        }
    }
    if distinct {
        check_distinct(&outputs, &after_join, &sides, (&left_key, &right_key), at)?;
    }

    let mut planned = Planned {
        nodes: sides[0].nodes.clone(),
        scope: Scope::default(),
        event_time: None,
        source_partitions: sides[0].source_partitions,
        window: None,
    };
    let spec = push_sides(&mut planned, &sides, (&left_key, &right_key), &read, distinct, context, at)?;
    planned.push(Operator::Exchange {
        keys: vec![KEY_COLUMN.to_string()],
        partitions: context.settings.parallelism.unwrap_or(planned.source_partitions),
    });
    planned.push(Operator::WindowJoin(spec));
    planned.scope = scope;
    if let Some(predicate) = after_join.into_iter().reduce(PlanExpr::and) {
        planned.push(Operator::Filter { predicate });
    }
    query::push_projection(&mut planned, outputs, at)?;
    Ok(planned)
}

fn is_window_bound(name: &str) -> bool {
    name == WindowBound::Start.name() || name == WindowBound::End.name()
}

/// The ON condition of an inner join.
fn join_condition(join: &Join, at: Position) -> Result<&Expr, SqlError> {
    let at = spans::at(&join.relation, at);
    match &join.join_operator {
        JoinOperator::Join(JoinConstraint::On(condition)) | JoinOperator::Inner(JoinConstraint::On(condition)) => {
            Ok(condition)
        }
        JoinOperator::Join(_) | JoinOperator::Inner(_) => Err(SqlError::unsupported(
            at,
            "a window join without ON; write ON L.k = R.k AND L.window_start = R.window_start",
        )),
        other => Err(SqlError::unsupported(
            at,
            format!("the join `{}` of two streams; sleet's window join is an inner join", query::join_kind(other)),
        )),
    }
}

/// A side of the join: `TABLE(TUMBLE(TABLE view_or_table, DESCRIPTOR(time), INTERVAL size))`.
fn plan_side(relation: &TableFactor, context: &QueryContext, fallback: Position) -> Result<Side, SqlError> {
    let at = spans::at(relation, fallback);
    let (function, alias): (&Function, Option<String>) = match relation {
        TableFactor::TableFunction { expr: Expr::Function(function), alias } => {
            (function, alias.as_ref().map(|alias| alias.name.value.clone()))
        }
        other => {
            return Err(SqlError::unsupported(
                at,
                format!(
                    "joining `{other}` without a window: each side of a join of two streams is \
                     TABLE(TUMBLE(TABLE t, DESCRIPTOR(time), INTERVAL size))"
                ),
            ))
        }
    };
    let name = function_name(function);
    let arguments = function_arguments(function);
    let [table, descriptor, size] = arguments.as_slice() else {
        return Err(match name.as_str() {
            "hop" | "session" | "cumulate" => SqlError::unsupported(
                at,
                format!("a window join over {} windows; sleet joins TUMBLE windows", name.to_uppercase()),
            ),
            "tumble" => SqlError::invalid(at, "TUMBLE takes (TABLE t, DESCRIPTOR(time_column), INTERVAL size)"),
            _ => SqlError::unsupported(at, format!("joining `{function}`; a window join's sides are TUMBLE(…)")),
        });
    };
    if name != "tumble" {
        return Err(SqlError::unsupported(
            at,
            format!("a window join over {}(…); sleet joins TUMBLE windows", name.to_uppercase()),
        ));
    }
    let Some(Expr::Identifier(table)) = argument_expr(table) else {
        return Err(SqlError::invalid(at, "the first argument of TUMBLE is a table: TABLE name"));
    };
    let table_at = spans::ident_at(table, at);
    let view_name = table.value.to_ascii_lowercase();
    let planned = match context.views.get(&view_name) {
        Some((view, _)) => plan_query(view, context)?,
        None => {
            let table = context.catalog.get(&table.value, table_at)?;
            query::read_table(table, &table.name, table_at, context)?
        }
    };
    let alias = alias.unwrap_or_else(|| table.value.clone()).to_ascii_lowercase();
    let mut side = fold_side(planned, alias, table_at)?;
    side.at = at;
    let descriptor_at = argument_expr(descriptor).map_or(at, |expr| spans::at(expr, at));
    let time = descriptor_name(descriptor, descriptor_at)?;
    let Some((_, time_expr, ..)) = side.columns.iter().find(|(column, ..)| column.eq_ignore_ascii_case(&time)) else {
        return Err(SqlError::invalid(descriptor_at, format!("`{time}` is not a column of `{}`", table.value)));
    };
    let size_expr = argument_expr(size).ok_or_else(|| SqlError::invalid(at, "TUMBLE's size is an INTERVAL"))?;
    side.size_at = spans::at(size_expr, at);
    let size_ms = interval_ms(size_expr, at)?;
    if size_ms <= 0 {
        return Err(SqlError::invalid(side.size_at, "a window's size must be positive"));
    }
    let window = match (&side.window.time_column, time_expr) {
        (watermark, PlanExpr::Column(column)) if watermark == column => {
            WindowSpec::tumbling(column.clone(), size_ms, side.window.allowed_lateness_ms)
        }
        (watermark, _) => {
            return Err(SqlError::invalid(
                descriptor_at,
                format!("the window is over `{time}`, but the table's WATERMARK is on `{watermark}`: window over it"),
            ))
        }
    };
    side.window = window;
    Ok(side)
}

fn descriptor_name(descriptor: &sqlparser::ast::FunctionArg, at: Position) -> Result<String, SqlError> {
    if let Some(Expr::Function(function)) = argument_expr(descriptor) {
        if let (true, [column]) = (function_name(function) == "descriptor", function_arguments(function).as_slice()) {
            if let Some(Expr::Identifier(ident)) = argument_expr(column) {
                return Ok(ident.value.clone());
            }
        }
    }
    Err(SqlError::invalid(at, format!("expected DESCRIPTOR(time_column), found `{descriptor}`")))
}

/// A side's planned rows (source, decoder, then its view's filters and projections) folded
/// into one predicate and one expression per column over the decoded columns.
fn fold_side(planned: Planned, alias: String, at: Position) -> Result<Side, SqlError> {
    let Some(watermark) = planned.event_time.clone() else {
        return Err(SqlError::invalid(
            at,
            "a window join's windows are over event time: declare the table's WATERMARK",
        ));
    };
    let mut exprs: Option<Vec<(String, PlanExpr)>> = None;
    let mut predicate: Option<PlanExpr> = None;
    let unfold = |expr: &PlanExpr, exprs: &Option<Vec<(String, PlanExpr)>>| match exprs {
        None => expr.clone(),
        Some(exprs) => {
            expr.replace_columns(&|name| exprs.iter().find(|(column, _)| column == name).map(|(_, expr)| expr.clone()))
        }
    };
    for node in &planned.nodes[2..] {
        match &node.operator {
            Operator::Filter { predicate: condition } => {
                let condition = unfold(condition, &exprs);
                predicate = Some(match predicate {
                    None => condition,
                    Some(before) => before.and(condition),
                });
            }
            Operator::Project { columns } => {
                exprs = Some(columns.iter().map(|(expr, name)| (name.clone(), unfold(expr, &exprs))).collect());
            }
            other => {
                return Err(SqlError::unsupported(
                    at,
                    format!(
                        "a {} in a side of a window join: a side reads its table through filters and projections",
                        other.kind()
                    ),
                ))
            }
        }
    }
    let mut columns = Vec::new();
    for column in &planned.scope.columns {
        if let Binding::Column(name) = &column.binding {
            let expr = unfold(&col(name.as_str()), &exprs);
            columns.push((column.name.clone(), expr, column.data_type, column.nullable));
        }
    }
    Ok(Side {
        alias,
        nodes: planned.nodes[..2].to_vec(),
        predicate,
        columns,
        window: WindowSpec::tumbling(watermark.column, 0, watermark.lateness_ms),
        source_partitions: planned.source_partitions,
        at,
        size_at: at,
    })
}

/// Both sides read one table (a plan has one source) with windows of one size.
fn check_same_stream(sides: &[Side; 2]) -> Result<(), SqlError> {
    let [left, right] = sides;
    if left.nodes != right.nodes {
        return Err(SqlError::unsupported(
            right.at,
            "a window join of two different source tables; sleet reads one source per job: make both sides \
             views of one table (e.g. a generator's tables = 'person,auction')",
        ));
    }
    if left.alias == right.alias {
        return Err(SqlError::invalid(right.at, format!("both sides are called `{}`: give them aliases", left.alias)));
    }
    if left.window.size_ms != right.window.size_ms {
        return Err(SqlError::unsupported(
            right.size_at,
            format!(
                "joining windows of {} ms with windows of {} ms; a window join pairs windows of one size",
                left.window.size_ms, right.window.size_ms
            ),
        ));
    }
    Ok(())
}

/// The names the query can use: each side's columns under its alias, and both sides'
/// `window_start` and `window_end`, which the ON clause makes one.
fn join_scope(sides: &[Side; 2]) -> Scope {
    let mut scope = Scope::default();
    for side in sides {
        for (name, _, data_type, nullable) in &side.columns {
            scope.push(ScopeColumn {
                table: Some(side.alias.clone()),
                name: name.clone(),
                binding: Binding::Column(side.qualified(name)),
                data_type: *data_type,
                nullable: *nullable,
            });
        }
        for bound in [WindowBound::Start, WindowBound::End] {
            scope.push(ScopeColumn {
                table: Some(side.alias.clone()),
                name: bound.name().into(),
                binding: Binding::Column(bound.name().into()),
                data_type: DataType::Int64,
                nullable: false,
            });
        }
    }
    scope
}

/// The ON condition's key equality, as (left key, right key) over each side's decoded
/// columns; it must also equate the sides' `window_start` (and may their `window_end`).
fn keys_of(
    condition: &Expr,
    sides: &[Side; 2],
    translator: &Translator,
    at: Position,
) -> Result<(PlanExpr, PlanExpr), SqlError> {
    let condition_at = spans::at(condition, at);
    let mut keys: Option<(PlanExpr, PlanExpr)> = None;
    let mut same_start = false;
    for conjunct in query::split_conjuncts(condition) {
        let conjunct_at = spans::at(conjunct, at);
        let refuse = |what: &str| {
            SqlError::unsupported(
                conjunct_at,
                format!(
                    "{what} `{conjunct}` in a window join's ON; it holds L.k = R.k AND L.window_start = \
                     R.window_start (and may hold L.window_end = R.window_end); filter in WHERE"
                ),
            )
        };
        let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = conjunct else {
            return Err(refuse("the condition"));
        };
        match (window_bound_of(left, sides), window_bound_of(right, sides)) {
            (Some((bound, a)), Some((other, b))) if bound == other && a != b => {
                same_start |= bound == WindowBound::Start;
                continue;
            }
            (None, None) => {}
            _ => return Err(refuse("the window condition")),
        }
        let (left, left_type) = translator.typed(left)?;
        let (right, right_type) = translator.typed(right)?;
        let (left, right) = match (sides_read(&left, sides), sides_read(&right, sides)) {
            ((true, false), (false, true)) => (left, right),
            ((false, true), (true, false)) => (right, left),
            _ => return Err(refuse("the non-equi condition")),
        };
        if left_type != right_type {
            return Err(SqlError::invalid(
                conjunct_at,
                format!(
                    "`{conjunct}` compares {} with {}: the join keys have one type",
                    sql_name(left_type),
                    sql_name(right_type)
                ),
            ));
        }
        if keys.is_some() {
            return Err(SqlError::unsupported(
                conjunct_at,
                format!("a second key `{conjunct}`: a window join has one key"),
            ));
        }
        keys = Some((sides[0].unfold(&left), sides[1].unfold(&right)));
    }
    if !same_start {
        return Err(SqlError::invalid(
            condition_at,
            "a window join's ON equates the windows: add L.window_start = R.window_start",
        ));
    }
    keys.ok_or_else(|| SqlError::invalid(condition_at, "a window join's ON needs a key: L.k = R.k"))
}

/// `alias.window_start` or `alias.window_end`, with the index of the side it belongs to.
fn window_bound_of(expr: &Expr, sides: &[Side; 2]) -> Option<(WindowBound, usize)> {
    let Expr::CompoundIdentifier(parts) = expr else { return None };
    let [table, name] = parts.as_slice() else { return None };
    let bound = [WindowBound::Start, WindowBound::End]
        .into_iter()
        .find(|bound| name.value.eq_ignore_ascii_case(bound.name()))?;
    let side = sides.iter().position(|side| side.alias == table.value.to_ascii_lowercase())?;
    Some((bound, side))
}

/// Each row is on one side at most: both sides compare one column with different literals.
fn check_disjoint(sides: &[Side; 2], at: Position) -> Result<(), SqlError> {
    let tests = |side: &Side| -> Vec<(String, sleet_plan::Scalar)> {
        let mut conjuncts = Vec::new();
        if let Some(predicate) = &side.predicate {
            plan_conjuncts(predicate, &mut conjuncts);
        }
        conjuncts
            .into_iter()
            .filter_map(|conjunct| match conjunct {
                PlanExpr::Binary { op: sleet_plan::BinaryOp::Eq, left, right } => match (left.as_ref(), right.as_ref())
                {
                    (PlanExpr::Column(column), PlanExpr::Literal(value))
                    | (PlanExpr::Literal(value), PlanExpr::Column(column)) => Some((column.clone(), value.clone())),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let (left, right) = (tests(&sides[0]), tests(&sides[1]));
    let apart = left.iter().any(|(column, value)| right.iter().any(|(other, found)| other == column && found != value));
    if apart {
        return Ok(());
    }
    Err(SqlError::unsupported(
        at,
        "a window join whose sides may share rows: both read one table, so each side must compare one column \
         with its own value (in its view or in WHERE), e.g. event_type = 'person' and event_type = 'auction'",
    ))
}

fn plan_conjuncts<'a>(expr: &'a PlanExpr, out: &mut Vec<&'a PlanExpr>) {
    match expr {
        PlanExpr::Binary { op: sleet_plan::BinaryOp::And, left, right } => {
            plan_conjuncts(left, out);
            plan_conjuncts(right, out);
        }
        other => out.push(other),
    }
}

/// SELECT DISTINCT maps onto the join's `distinct`, which tells rows apart per window and key:
/// it is the query's only when the SELECT list is plain columns holding a window bound and a
/// side's key (rows of two windows or keys then differ), and WHERE reads no other column.
fn check_distinct(
    outputs: &[(PlanExpr, String)],
    after_join: &[PlanExpr],
    sides: &[Side; 2],
    keys: (&PlanExpr, &PlanExpr),
    at: Position,
) -> Result<(), SqlError> {
    let mut selected = Vec::new();
    for (expr, name) in outputs {
        match expr {
            PlanExpr::Column(column) => selected.push(column.as_str()),
            _ => {
                return Err(SqlError::unsupported(
                    at,
                    format!("SELECT DISTINCT over a window join of the computed `{name}`; select plain columns"),
                ))
            }
        }
    }
    if !selected.iter().any(|name| is_window_bound(name)) {
        return Err(SqlError::unsupported(
            at,
            "SELECT DISTINCT over a window join without window_start or window_end: the join tells rows apart \
             per window, so select the window",
        ));
    }
    let is_key = |name: &&str| {
        sides[0].expr_of(name).is_some_and(|expr| expr == keys.0)
            || sides[1].expr_of(name).is_some_and(|expr| expr == keys.1)
    };
    if !selected.iter().any(is_key) {
        return Err(SqlError::unsupported(
            at,
            "SELECT DISTINCT over a window join without either side's join key: the join tells rows apart per \
             key, so select the key of one side",
        ));
    }
    for predicate in after_join {
        if let Some(other) = predicate.columns().into_iter().find(|name| !selected.contains(name)) {
            return Err(SqlError::unsupported(
                at,
                format!("SELECT DISTINCT over a window join whose WHERE reads `{other}`, which it does not select"),
            ));
        }
    }
    Ok(())
}

/// The rows of both sides as one stream: the projection computing each row's side, key, time
/// and the columns read, and the filter dropping rows of neither side. Returns the join's spec.
fn push_sides(
    planned: &mut Planned,
    sides: &[Side; 2],
    keys: (&PlanExpr, &PlanExpr),
    read: &[String],
    distinct: bool,
    context: &QueryContext,
    at: Position,
) -> Result<WindowJoinSpec, SqlError> {
    let [left, right] = sides;
    let (Some(left_predicate), Some(right_predicate)) = (&left.predicate, &right.predicate) else {
        unreachable!("check_disjoint found a condition on each side")
    };
    let side = PlanExpr::case([(left_predicate.clone(), lit(true)), (right_predicate.clone(), lit(false))], None);
    let key =
        PlanExpr::case([(left_predicate.clone(), keys.0.clone()), (right_predicate.clone(), keys.1.clone())], None);
    let time = left.window.time_column.clone();
    let mut columns: Vec<(PlanExpr, String)> =
        vec![(side, SIDE_COLUMN.into()), (key, KEY_COLUMN.into()), (col(time.as_str()), time.clone())];
    let mut outputs: [Vec<JoinColumn>; 2] = [Vec::new(), Vec::new()];
    for name in read {
        let (index, side) =
            sides.iter().enumerate().find(|(_, side)| side.expr_of(name).is_some()).expect("read names a side's");
        let expr = side.expr_of(name).expect("found above");
        // A plain column passes as it is, once for both sides; a computed one only on its
        // side's rows, so it is never evaluated on a row it does not belong to.
        let input = match expr {
            PlanExpr::Column(column) => column.clone(),
            computed => {
                let guarded =
                    PlanExpr::case([(side.predicate.clone().expect("checked above"), computed.clone())], None);
                columns.push((guarded, name.clone()));
                name.clone()
            }
        };
        if !columns.iter().any(|(_, projected)| *projected == input) {
            columns.push((col(input.as_str()), input.clone()));
        }
        outputs[index].push(JoinColumn::new(input, name.clone()));
    }
    if let Some((_, clash)) = columns.iter().skip(2).find(|(_, name)| name == SIDE_COLUMN || name == KEY_COLUMN) {
        return Err(SqlError::unsupported(at, format!("a column named `{clash}`, which a window join uses itself")));
    }
    planned.push(Operator::Project { columns });
    planned.push(Operator::Filter { predicate: col(SIDE_COLUMN).is_not_null() });
    let [left_columns, right_columns] = outputs;
    Ok(WindowJoinSpec {
        window: WindowSpec::tumbling(time, left.window.size_ms, left.window.allowed_lateness_ms),
        side_column: SIDE_COLUMN.into(),
        key_column: KEY_COLUMN.into(),
        left: left_columns,
        right: right_columns,
        distinct,
        max_rows: context.settings.max_keys.unwrap_or_else(sleet_plan::state_spec::default_max_keys),
    })
}
