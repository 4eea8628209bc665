//! A window top-N: a top-N subquery straight over a window table function's rows, with no
//! GROUP BY, as Flink writes Nexmark q7:
//!
//! ```text
//!  SELECT … FROM (
//!    SELECT *, RANK() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS r
//!    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
//!  ) WHERE r <= N
//!
//!  source → decode → filter (WHERE) → project (the columns read, window_start, window_end)
//!    → exchange on the PARTITION BY columns → top_rows → project (the subquery's list)
//! ```
//!
//! Each row gets its window's bounds by a projection, which only a tumbling window allows: a
//! HOP or SESSION row is in several windows (or in one known only when it closes), so those
//! rows are refused unless an aggregate groups them first. The ranking is per window, so the
//! partition must hold `window_start` or `window_end`.

use sleet_plan::validate::{WINDOW_END_COLUMN, WINDOW_START_COLUMN};
use sleet_plan::{col, lit, Expr as PlanExpr, Operator, TopRowsSpec, WindowKind, RANK_COLUMN};
use sqlparser::ast::{Expr, GroupByExpr, Select, SelectItem, TableWithJoins};

use crate::error::{Position, SqlError};
use crate::query::{plan_relation, split_conjuncts, Planned, QueryContext, RowNumber};
use crate::scope::{Binding, Scope, ScopeColumn};
use crate::spans;
use crate::sql_expr::{aggregate_calls, column_names, Translator};

/// Whether a top-N subquery ranks rows rather than an aggregate's groups: it neither groups
/// nor aggregates.
pub(crate) fn ranks_rows(inner: &Select) -> bool {
    let grouped = !matches!(&inner.group_by, GroupByExpr::Expressions(exprs, _) if exprs.is_empty());
    let mut aggregates = Vec::new();
    for item in &inner.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            aggregate_calls(expr, &mut aggregates);
        }
    }
    !grouped && aggregates.is_empty() && inner.having.is_none()
}

/// A column the subquery lists: the name it shows and the plan column behind it.
struct Listed {
    name: String,
    column: String,
}

/// Plans `inner`, a top-N subquery over `from`'s rows, up to its SELECT list; `outer` is read
/// for the columns it uses, so only those cross the exchange.
pub(crate) fn plan(
    outer: &Select,
    inner: &Select,
    from: &TableWithJoins,
    (rank, k): (&RowNumber, u32),
    context: &QueryContext,
) -> Result<Planned, SqlError> {
    let at = spans::at(inner, context.fallback);
    if let Some(join) = from.joins.first() {
        return Err(SqlError::unsupported(
            spans::at(&join.relation, at),
            "a JOIN in a top-N over a window's rows; join in a subquery first",
        ));
    }
    let from_at = spans::at(&from.relation, at);
    let mut planned = plan_relation(&from.relation, context)?;
    let window = planned.window.take().ok_or_else(|| {
        SqlError::unsupported(
            from_at,
            "a top-N over a stream's rows without a window (a ranking that never ends); rank the rows of \
             TABLE(TUMBLE(…)), or an aggregate's groups (GROUP BY)",
        )
    })?;
    let size_ms = match window.kind() {
        WindowKind::Tumbling { size_ms } => size_ms,
        WindowKind::Hopping { .. } => {
            return Err(SqlError::unsupported(
                from_at,
                "a top-N over HOP rows without an aggregate (a row is in several windows); GROUP BY window_start, \
                 window_end and a key first",
            ))
        }
        WindowKind::Session { .. } => {
            return Err(SqlError::unsupported(
                from_at,
                "a top-N over SESSION rows without an aggregate (a row's session is known only once it closes); \
                 GROUP BY window_start, window_end and a key first",
            ))
        }
    };
    if let Some(clash) =
        [WINDOW_START_COLUMN, WINDOW_END_COLUMN].into_iter().find(|bound| planned.scope.schema().field(bound).is_some())
    {
        return Err(SqlError::unsupported(
            from_at,
            format!("a window over a table with a column `{clash}`, the name of the window's bound"),
        ));
    }
    if let Some(selection) = &inner.selection {
        let mut predicate: Option<PlanExpr> = None;
        for conjunct in split_conjuncts(selection) {
            let condition = Translator::new(&planned.scope, at).predicate(conjunct)?;
            predicate = Some(match predicate {
                None => condition,
                Some(before) => before.and(condition),
            });
        }
        if let Some(predicate) = predicate {
            planned.push(Operator::Filter { predicate });
        }
    }

    let group = partition_columns(rank, &planned.scope)?;
    let order_by = ranked_column(rank, &planned.scope, at)?;
    let listed = listed_columns(inner, &planned.scope, rank, at)?;
    let used = used_names(outer, &listed, &rank.alias);
    let kept: Vec<&Listed> = listed.iter().filter(|listed| used.contains(&listed.name.to_ascii_lowercase())).collect();

    // The rows cross the exchange with the columns read after it, and their window's bounds.
    let time_column = window.time_column.clone();
    let stream = planned.scope.schema();
    let carried: Vec<(PlanExpr, String)> = stream
        .fields
        .iter()
        .filter(|field| {
            field.name == order_by
                || field.name == time_column
                || group.contains(&field.name)
                || kept.iter().any(|listed| listed.column == field.name)
        })
        .map(|field| (col(field.name.as_str()), field.name.clone()))
        .chain([
            (col(time_column.as_str()).window_start(size_ms), WINDOW_START_COLUMN.to_string()),
            (col(time_column.as_str()).window_start(size_ms).add(lit(size_ms)), WINDOW_END_COLUMN.to_string()),
        ])
        .collect();
    planned.push(Operator::Project { columns: carried });
    let partitions = context.settings.parallelism.unwrap_or(planned.source_partitions);
    planned.push(Operator::Exchange { keys: group.clone(), partitions });
    let mut ranked_group = group;
    if !ranked_group.iter().any(|column| column == WINDOW_END_COLUMN) {
        // A function of window_start, so the groups are the same; the operator reads a
        // group's window end from it.
        ranked_group.push(WINDOW_END_COLUMN.to_string());
    }
    planned.push(Operator::TopRows(TopRowsSpec {
        group: ranked_group,
        order_by,
        k,
        ranking: rank.ranking,
        time_column,
        window_end_column: WINDOW_END_COLUMN.to_string(),
        allowed_lateness_ms: window.allowed_lateness_ms,
        max_groups: context.settings.max_keys.unwrap_or_else(sleet_plan::state_spec::default_max_keys),
    }));
    let mut columns: Vec<(PlanExpr, String)> =
        kept.iter().map(|listed| (col(listed.column.as_str()), listed.name.clone())).collect();
    columns.push((col(RANK_COLUMN), rank.alias.clone()));
    planned.push(Operator::Project { columns });
    planned.scope = Scope::of_fields(&planned.output_schema(at)?.fields);
    Ok(planned)
}

/// The PARTITION BY columns, as plan columns; one must be a bound of the window.
fn partition_columns(rank: &RowNumber, scope: &Scope) -> Result<Vec<String>, SqlError> {
    let mut columns = Vec::new();
    let mut windowed = false;
    for expr in &rank.partition_by {
        let at = spans::at(expr, rank.at);
        let (name, is_bound) = match resolve(expr, scope, at) {
            Some(ScopeColumn { binding: Binding::WindowBound(bound), .. }) => (bound.name().to_string(), true),
            Some(ScopeColumn { binding: Binding::Column(name), .. }) => (name.clone(), false),
            None => {
                return Err(SqlError::invalid(
                    at,
                    format!("PARTITION BY `{expr}` must name a column of the window's rows"),
                ))
            }
        };
        windowed |= is_bound;
        if !columns.contains(&name) {
            columns.push(name);
        }
    }
    if !windowed {
        return Err(SqlError::unsupported(
            rank.at,
            "a top-N over a window's rows partitioned without window_start or window_end (one ranking over every \
             window would never end); PARTITION BY window_start, window_end",
        ));
    }
    Ok(columns)
}

/// The column ORDER BY names: one numeric column of the rows.
fn ranked_column(rank: &RowNumber, scope: &Scope, at: Position) -> Result<String, SqlError> {
    let order_at = spans::at(&rank.order_by, rank.at);
    match Translator::new(scope, at).typed(&rank.order_by) {
        Ok((PlanExpr::Column(name), data_type)) if data_type.is_numeric() => Ok(name),
        _ => Err(SqlError::unsupported(
            order_at,
            format!("ORDER BY `{}`: a top-N over a window's rows ranks by one numeric column", rank.order_by),
        )),
    }
}

fn resolve<'a>(expr: &Expr, scope: &'a Scope, at: Position) -> Option<&'a ScopeColumn> {
    match expr {
        Expr::Identifier(ident) => scope.resolve(std::slice::from_ref(ident), at).ok(),
        Expr::CompoundIdentifier(parts) => scope.resolve(parts, at).ok(),
        _ => None,
    }
}

/// The subquery's SELECT list, but for the ranking item: columns of the rows and the window's
/// bounds, each under the name it shows.
fn listed_columns(inner: &Select, scope: &Scope, rank: &RowNumber, at: Position) -> Result<Vec<Listed>, SqlError> {
    let of = |column: &ScopeColumn, name: String| match &column.binding {
        Binding::Column(plan_name) => Listed { name, column: plan_name.clone() },
        Binding::WindowBound(bound) => Listed { name, column: bound.name().to_string() },
    };
    let mut listed: Vec<Listed> = Vec::new();
    for item in &inner.projection {
        let (expr, alias) = match item {
            SelectItem::Wildcard(_) => {
                listed.extend(scope.columns.iter().map(|column| of(column, column.name.clone())));
                continue;
            }
            SelectItem::UnnamedExpr(expr) => (expr, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            other => return Err(SqlError::unsupported(at, format!("`{other}` in a top-N over a window's rows"))),
        };
        if crate::query::ranking_of(expr).is_some() {
            continue;
        }
        let expr_at = spans::at(expr, at);
        let Some(column) = resolve(expr, scope, expr_at) else {
            return Err(SqlError::unsupported(
                expr_at,
                format!(
                    "`{expr}` in a top-N over a window's rows: its subquery lists columns, window_start, window_end \
                     and the rank; compute in the outer query"
                ),
            ));
        };
        listed.push(of(column, alias.unwrap_or_else(|| column.name.clone())));
    }
    for (index, column) in listed.iter().enumerate() {
        if listed[..index].iter().any(|earlier| earlier.name.eq_ignore_ascii_case(&column.name))
            || column.name.eq_ignore_ascii_case(&rank.alias)
        {
            return Err(SqlError::invalid(
                at,
                format!("the subquery lists `{}` twice; give one an alias", column.name),
            ));
        }
    }
    Ok(listed)
}

/// The names (lower case) of the subquery's columns the outer query reads.
fn used_names(outer: &Select, listed: &[Listed], rank_alias: &str) -> Vec<String> {
    let mut names = Vec::new();
    for item in &outer.projection {
        match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => column_names(expr, &mut names),
            _ => names.extend(listed.iter().map(|listed| listed.name.clone())),
        }
    }
    names.push(rank_alias.to_string());
    names.iter().map(|name| name.to_ascii_lowercase()).collect()
}
