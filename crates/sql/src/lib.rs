//! Streaming SQL for sleet: a script of `CREATE TABLE`s, `SET`s and one query, planned onto the
//! same job plan that `PlanBuilder` and job files produce.
//!
//! ```text
//!  script text ──lexer──▶ statements (WATERMARK clauses and TABLE arguments taken out)
//!      │                    │
//!      │            sqlparser (GenericDialect), one statement at a time
//!      ▼                    ▼
//!  CREATE TABLE ──▶ Catalog (columns, watermark, connector)      SET ──▶ JobSettings
//!  INSERT INTO t SELECT … | SELECT … | EXPLAIN …
//!      └──query::plan_query──▶ plan nodes ──+ sink──▶ JobFile (validated) ──▶ driver
//! ```
//!
//! Nothing here does I/O: an Avro schema named by a table is read through the caller's
//! `read_file`. Every error names its line and column, and what is wrong or unsupported.

mod catalog;
mod error;
mod explain;
mod generators;
mod interval;
mod lexer;
mod options;
mod query;
mod scope;
mod settings;
mod spans;
mod sql_expr;
mod types;
mod window_join;
mod window_top;

use std::collections::BTreeMap;

use sleet_plan::{JobFile, JobSettings, Node, Operator, Plan, SinkSpec};
use sqlparser::ast::{ObjectName, Query, Set, Statement, TableObject};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

pub use error::{Position, SqlError, SqlErrorKind};
pub use explain::explain;

use crate::catalog::Catalog;
use crate::query::{plan_query, QueryContext, QuerySettings};

/// What a script is compiled with.
pub struct SqlOptions<'a> {
    /// Where a bare `SELECT` (no `INSERT INTO`) writes its rows.
    pub default_sink: SinkSpec,
    /// The name of a bare `SELECT`'s job (an `INSERT`'s is its target table's).
    pub job_name: String,
    /// The job's settings before the script's `SET`s.
    pub settings: JobSettings,
    /// Time zero of a generator that needs one (the gateway's) when its table does not say:
    /// ms since the epoch.
    pub start_ms: i64,
    /// Reads a file the script names (an Avro schema), relative to the script.
    pub read_file: &'a dyn Fn(&str) -> Result<String, String>,
}

/// A compiled script: the job to run, or the job `EXPLAIN` describes.
#[derive(Debug, Clone, PartialEq)]
pub enum Compiled {
    Job(JobFile),
    Explain(JobFile),
}

impl Compiled {
    pub fn job(&self) -> &JobFile {
        match self {
            Compiled::Job(job) | Compiled::Explain(job) => job,
        }
    }
}

/// Compiles a script: declarations and settings, then exactly one query.
pub fn compile(text: &str, options: &SqlOptions) -> Result<Compiled, SqlError> {
    let mut catalog = Catalog::default();
    let mut views: BTreeMap<String, (Query, Position)> = BTreeMap::new();
    let mut job_settings = options.settings.clone();
    let mut query_settings = QuerySettings::default();
    let mut compiled: Option<(Compiled, Position)> = None;
    for statement_tokens in lexer::statements(text)? {
        let at = statement_tokens.start;
        let end = statement_tokens.end;
        let mut parser = Parser::new(&GenericDialect {}).with_tokens_with_locations(statement_tokens.tokens);
        // An error without a place is the parser running out of tokens: the statement's end.
        let statement = parser.parse_statement().map_err(|error| error::from_parser(error, end))?;
        let next = parser.peek_token();
        if next.token != sqlparser::tokenizer::Token::EOF {
            return Err(SqlError::new(
                next.span.start,
                SqlErrorKind::Syntax(format!(
                    "`{}` after the end of the statement (a missing operator or `;`?)",
                    next.token
                )),
            ));
        }
        if statement_tokens.watermark.is_some() && !matches!(statement, Statement::CreateTable(_)) {
            return Err(SqlError::invalid(at, "WATERMARK belongs in CREATE TABLE"));
        }
        if let Some((_, first)) = &compiled {
            return Err(SqlError::unsupported(
                at,
                format!("a second query after the one at {first}: a script runs one INSERT or SELECT"),
            ));
        }
        match &statement {
            Statement::CreateTable(create) => {
                catalog.declare(catalog::table_of(create, statement_tokens.watermark, at, options)?)?;
            }
            Statement::CreateView(view) => {
                if !view.columns.is_empty() || view.materialized || view.or_replace {
                    return Err(SqlError::unsupported(at, "view options (column lists, MATERIALIZED, OR REPLACE)"));
                }
                let name = view.name.to_string().to_ascii_lowercase();
                if views.insert(name.clone(), ((*view.query).clone(), at)).is_some() {
                    return Err(SqlError::invalid(at, format!("view `{name}` is declared twice")));
                }
            }
            Statement::Set(Set::SingleAssignment { variable, values, scope: None, hivevar: false }) => {
                let value = match values.as_slice() {
                    [sqlparser::ast::Expr::Value(value)] => match &value.value {
                        sqlparser::ast::Value::SingleQuotedString(text) | sqlparser::ast::Value::Number(text, _) => {
                            text.clone()
                        }
                        other => other.to_string(),
                    },
                    [sqlparser::ast::Expr::Identifier(ident)] => ident.value.clone(),
                    _ => return Err(SqlError::invalid(at, "SET takes one value: SET 'key' = 'value'")),
                };
                settings::apply(&unquoted(variable), &value, at, &mut job_settings, &mut query_settings)?;
            }
            Statement::Insert(_) | Statement::Query(_) => {
                let mut job =
                    plan_statement(&statement, at, &catalog, &views, &query_settings, &job_settings, options)?;
                // The whole script: its tables and settings say as much about the job as its query.
                job.query = Some(text.trim().to_string());
                compiled = Some((Compiled::Job(job), at));
            }
            Statement::Explain { statement: inner, analyze: false, .. } => {
                let job = plan_statement(inner, at, &catalog, &views, &query_settings, &job_settings, options)?;
                compiled = Some((Compiled::Explain(job), at));
            }
            other => return Err(SqlError::unsupported(at, format!("the statement `{}`", first_words(other)))),
        }
    }
    compiled.map(|(compiled, _)| compiled).ok_or_else(|| {
        SqlError::invalid(Position::default(), "the script has no query: end it with INSERT INTO … SELECT or SELECT")
    })
}

fn unquoted(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| part.as_ident().map_or_else(|| part.to_string(), |ident| ident.value.clone()))
        .collect::<Vec<_>>()
        .join(".")
}

fn first_words(statement: &Statement) -> String {
    statement.to_string().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn plan_statement(
    statement: &Statement,
    at: Position,
    catalog: &Catalog,
    views: &BTreeMap<String, (Query, Position)>,
    query_settings: &QuerySettings,
    job_settings: &JobSettings,
    options: &SqlOptions,
) -> Result<JobFile, SqlError> {
    let context = QueryContext { catalog, views, settings: query_settings, fallback: at, read_file: options.read_file };
    let (query, sink, name) = match statement {
        Statement::Insert(insert) => {
            let TableObject::TableName(target) = &insert.table else {
                return Err(SqlError::unsupported(at, "INSERT INTO a table function"));
            };
            if !insert.columns.is_empty() || insert.overwrite || insert.on.is_some() || insert.returning.is_some() {
                return Err(SqlError::unsupported(
                    at,
                    "INSERT options (column lists, OVERWRITE, ON CONFLICT, RETURNING)",
                ));
            }
            let Some(query) = &insert.source else {
                return Err(SqlError::unsupported(at, "INSERT without a SELECT"));
            };
            let table = catalog.get(&target.to_string(), at)?;
            (query.as_ref(), Some(table), table.name.clone())
        }
        Statement::Query(query) => (query.as_ref(), None, options.job_name.clone()),
        other => return Err(SqlError::unsupported(at, format!("EXPLAIN of `{}`", first_words(other)))),
    };
    let mut planned = plan_query(query, &context)?;
    let sink = match sink {
        Some(table) => {
            query::conform_to_sink(&mut planned, table, at)?;
            table.sink(at)?
        }
        None => options.default_sink.clone(),
    };
    let mut nodes: Vec<Node> = planned.nodes;
    nodes.push(Node { operator: Operator::Sink { spec: sink } });
    let mut settings = job_settings.clone();
    if settings.start_ms.is_none() {
        settings.start_ms = match nodes.first().map(|node| &node.operator) {
            Some(Operator::Source { spec }) => spec.event_time_start_ms(),
            _ => None,
        };
    }
    let job = JobFile { plan: Plan { name, nodes }, settings, query: None };
    job.check().map_err(|error| SqlError::new(at, SqlErrorKind::Plan(error)))?;
    Ok(job)
}
