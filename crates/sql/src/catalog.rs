//! The tables a script declares with `CREATE TABLE`: their columns, watermark and connector.
//! What a table may be used as (a stream read in `FROM`, a static table joined for lookups,
//! the target of `INSERT INTO`) follows from its connector, and is checked where it is used.

use std::collections::BTreeMap;

use sleet_plan::{
    DataType, EventTimeSource, FileSourceSpec, KafkaSourceSpec, KafkaStart, SinkSpec, SourceSpec, TableSpec,
};
use sqlparser::ast::{ColumnOption, CreateTable, Expr};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::TokenWithSpan;

use crate::error::{from_parser, Position, SqlError, SqlErrorKind};
use crate::interval::interval_ms;
use crate::options::TableOptions;
use crate::{spans, types, SqlOptions};

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
}

/// `WATERMARK FOR column AS column - INTERVAL …`: event time is `column`, and rows may
/// arrive up to `lateness_ms` behind the largest event time seen.
#[derive(Debug, Clone, PartialEq)]
pub struct Watermark {
    pub column: String,
    pub lateness_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    Json { max_record_bytes: u32 },
    Avro { schema_path: String, max_record_bytes: u32 },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Connector {
    Kafka { spec: KafkaSourceSpec, sink_key_columns: Vec<String> },
    Files { path: String, max_records_per_batch: u32 },
    Generator(SourceSpec),
    YsbCampaigns { seed: u64 },
    Csv { path: String },
    Stdout,
    Blackhole,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub at: Position,
    pub columns: Vec<Column>,
    pub watermark: Option<Watermark>,
    pub connector: Connector,
    pub format: Format,
}

/// The tables declared so far, by lower-case name.
#[derive(Debug, Default)]
pub struct Catalog {
    tables: BTreeMap<String, Table>,
}

impl Catalog {
    pub fn declare(&mut self, table: Table) -> Result<(), SqlError> {
        let key = table.name.to_ascii_lowercase();
        if let Some(earlier) = self.tables.get(&key) {
            return Err(SqlError::invalid(
                table.at,
                format!("table `{}` is declared twice (first at {})", table.name, earlier.at),
            ));
        }
        self.tables.insert(key, table);
        Ok(())
    }

    pub fn get(&self, name: &str, at: Position) -> Result<&Table, SqlError> {
        self.tables.get(&name.to_ascii_lowercase()).ok_or_else(|| {
            let declared: Vec<&str> = self.tables.values().map(|table| table.name.as_str()).collect();
            let declared = if declared.is_empty() { "none".to_string() } else { declared.join(", ") };
            SqlError::new(at, SqlErrorKind::UnknownTable { name: name.to_string(), declared })
        })
    }
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|column| column.name == name)
    }

    /// The stream this table reads, for `FROM`.
    pub fn source(&self, at: Position) -> Result<SourceSpec, SqlError> {
        match &self.connector {
            Connector::Kafka { spec, .. } => Ok(SourceSpec::Kafka(spec.clone())),
            Connector::Files { path, max_records_per_batch } => Ok(SourceSpec::Files(FileSourceSpec {
                path: path.clone(),
                max_records_per_partition_per_batch: *max_records_per_batch,
                partitions: 0,
                start_bytes: Vec::new(),
            })),
            Connector::Generator(spec) => Ok(spec.clone()),
            other => Err(self.misused(at, other, "read as a stream in FROM")),
        }
    }

    /// The static table this is, for a lookup join.
    pub fn lookup(&self, at: Position) -> Result<TableSpec, SqlError> {
        match &self.connector {
            Connector::YsbCampaigns { seed } => Ok(TableSpec::YsbCampaigns { seed: *seed }),
            Connector::Csv { path } => Ok(TableSpec::Csv {
                path: path.clone(),
                columns: self.columns.iter().map(|column| column.name.clone()).collect(),
            }),
            other => {
                Err(self.misused(at, other, "joined as a static lookup table (connector 'csv' or the ysb campaigns)"))
            }
        }
    }

    /// Where `INSERT INTO` this table writes.
    pub fn sink(&self, at: Position) -> Result<SinkSpec, SqlError> {
        match &self.connector {
            Connector::Kafka { spec, sink_key_columns } => Ok(SinkSpec::Kafka {
                brokers: spec.brokers.clone(),
                topic: spec.topic.clone(),
                key_columns: sink_key_columns.clone(),
            }),
            Connector::Files { path, .. } => Ok(SinkSpec::JsonLines { dir: path.clone() }),
            Connector::Stdout => Ok(SinkSpec::Stdout),
            Connector::Blackhole => Ok(SinkSpec::Discard),
            other => Err(self.misused(at, other, "written by INSERT INTO")),
        }
    }

    fn misused(&self, at: Position, connector: &Connector, use_: &str) -> SqlError {
        SqlError::invalid(
            at,
            format!(
                "table `{}` (connector '{}', declared at {}) cannot be {use_}",
                self.name,
                connector.name(),
                self.at
            ),
        )
    }
}

impl Connector {
    pub fn name(&self) -> &'static str {
        match self {
            Connector::Kafka { .. } => "kafka",
            Connector::Files { .. } => "files",
            Connector::Generator(_) | Connector::YsbCampaigns { .. } => "generator",
            Connector::Csv { .. } => "csv",
            Connector::Stdout => "stdout",
            Connector::Blackhole => "blackhole",
        }
    }
}

/// A `CREATE TABLE` statement and its watermark clause (taken out by the lexer) as a table.
pub fn table_of(
    create: &CreateTable,
    watermark: Option<Vec<TokenWithSpan>>,
    at: Position,
    context: &SqlOptions,
) -> Result<Table, SqlError> {
    refuse_unsupported_ddl(create, at)?;
    let name = create.name.to_string();
    let mut columns: Vec<Column> = Vec::new();
    for definition in &create.columns {
        let column_at = spans::ident_at(&definition.name, at);
        let data_type = types::plan_type(&definition.data_type)
            .map_err(|reason| SqlError::unsupported(spans::at(definition, column_at), reason))?;
        let mut nullable = true;
        for option in &definition.options {
            match &option.option {
                ColumnOption::NotNull => nullable = false,
                ColumnOption::Null => nullable = true,
                other => {
                    return Err(SqlError::unsupported(column_at, format!("the column option `{other}`")));
                }
            }
        }
        let column_name = definition.name.value.clone();
        if columns.iter().any(|column| column.name == column_name) {
            return Err(SqlError::invalid(column_at, format!("column `{column_name}` is declared twice")));
        }
        columns.push(Column { name: column_name, data_type, nullable });
    }
    if columns.is_empty() {
        return Err(SqlError::invalid(at, format!("table `{name}` declares no columns")));
    }
    let watermark = watermark.map(|tokens| watermark_of(tokens, &columns, at)).transpose()?;
    let mut options = TableOptions::read(&name, at, &create.table_options)?;
    let (connector, format) = connector_of(&mut options, &columns, context)?;
    Ok(Table { name, at, columns, watermark, connector, format })
}

fn refuse_unsupported_ddl(create: &CreateTable, at: Position) -> Result<(), SqlError> {
    let refused = [
        (create.or_replace, "CREATE OR REPLACE TABLE"),
        (create.temporary, "CREATE TEMPORARY TABLE"),
        (create.external, "CREATE EXTERNAL TABLE"),
        (create.if_not_exists, "CREATE TABLE IF NOT EXISTS"),
        (create.query.is_some(), "CREATE TABLE … AS SELECT"),
        (create.like.is_some(), "CREATE TABLE … LIKE"),
        (!create.constraints.is_empty(), "table constraints (PRIMARY KEY, UNIQUE, …)"),
    ];
    match refused.iter().find(|(present, _)| *present) {
        Some((_, construct)) => Err(SqlError::unsupported(at, *construct)),
        None => Ok(()),
    }
}

/// `FOR ts AS ts [- INTERVAL …]`: the watermark may only trail the column by a fixed interval.
fn watermark_of(tokens: Vec<TokenWithSpan>, columns: &[Column], at: Position) -> Result<Watermark, SqlError> {
    let clause_at = tokens.first().map(|token| Position::from(token.span.start)).unwrap_or(at);
    let mut parser = Parser::new(&sqlparser::dialect::GenericDialect {}).with_tokens_with_locations(tokens);
    let mut parse = || -> Result<(sqlparser::ast::Ident, Expr), sqlparser::parser::ParserError> {
        parser.expect_keyword_is(sqlparser::keywords::Keyword::FOR)?;
        let column = parser.parse_identifier()?;
        parser.expect_keyword_is(sqlparser::keywords::Keyword::AS)?;
        let strategy = parser.parse_expr()?;
        parser.expect_token(&sqlparser::tokenizer::Token::EOF)?;
        Ok((column, strategy))
    };
    let (column, strategy) = parse().map_err(|error| from_parser(error, clause_at))?;
    let column_at = spans::ident_at(&column, clause_at);
    let Some(declared) = columns.iter().find(|declared| declared.name == column.value) else {
        return Err(SqlError::new(
            column_at,
            SqlErrorKind::UnknownColumn {
                name: column.value.clone(),
                in_scope: columns.iter().map(|column| column.name.as_str()).collect::<Vec<_>>().join(", "),
            },
        ));
    };
    if declared.data_type != DataType::Int64 {
        return Err(SqlError::new(
            column_at,
            SqlErrorKind::TypeMismatch {
                what: format!("the watermark column `{}`", column.value),
                expected: "BIGINT (ms since the epoch)".into(),
                found: declared.data_type,
            },
        ));
    }
    let strategy_at = spans::at(&strategy, clause_at);
    let is_column = |expr: &Expr| matches!(expr, Expr::Identifier(ident) if ident.value == column.value);
    let lateness_ms = match &strategy {
        expr if is_column(expr) => 0,
        Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::Minus, right } if is_column(left) => {
            interval_ms(right, strategy_at)?
        }
        other => {
            return Err(SqlError::unsupported(
                strategy_at,
                format!("the watermark `{other}`; write `{0}` or `{0} - INTERVAL '5' SECOND`", column.value),
            ))
        }
    };
    Ok(Watermark { column: column.value, lateness_ms })
}

const KAFKA_OPTIONS: &[&str] = &[
    "connector",
    "brokers",
    "topic",
    "start",
    "format",
    "avro.schema",
    "max_record_bytes",
    "max_records_per_batch",
    "partitions",
    "read_committed",
    "timestamp.column",
    "key",
];
const FILES_OPTIONS: &[&str] = &["connector", "path", "format", "max_record_bytes", "max_records_per_batch"];

fn connector_of(
    options: &mut TableOptions,
    columns: &[Column],
    context: &SqlOptions,
) -> Result<(Connector, Format), SqlError> {
    let (connector, connector_at) = options.take_required("connector")?;
    let json = Format::Json { max_record_bytes: sleet_plan::node::default_max_record_bytes() };
    match connector.to_ascii_lowercase().as_str() {
        "kafka" => {
            let format = format_of(options)?;
            let (brokers, _) = options.take_required("brokers")?;
            let (topic, _) = options.take_required("topic")?;
            let mut spec = KafkaSourceSpec::new(&brokers, &topic, KafkaStart::Latest);
            if let Some((start, start_at)) = options.take("start") {
                spec.start = kafka_start(&start).map_err(|reason| options.bad("start", start_at, reason))?;
            }
            if let Some(bound) = options.take_parsed("max_records_per_batch", "a whole number ≥ 1")? {
                spec.max_records_per_partition_per_batch = bound;
            }
            if let Some(partitions) = options.take_parsed("partitions", "a whole number")? {
                spec.partitions = partitions;
            }
            if let Some(committed) = options.take_parsed("read_committed", "true or false")? {
                spec.read_committed = committed;
            }
            if let Some((column, column_at)) = options.take("timestamp.column") {
                match columns.iter().find(|declared| declared.name == column) {
                    Some(declared) if declared.data_type == DataType::Int64 => {}
                    _ => {
                        return Err(options.bad(
                            "timestamp.column",
                            column_at,
                            format!(
                            "`{column}` must be a declared BIGINT column, which receives each record's Kafka timestamp"
                        ),
                        ))
                    }
                }
                spec.event_time = EventTimeSource::RecordTimestamp(column);
            }
            let sink_key_columns = match options.take("key") {
                Some((keys, keys_at)) => {
                    let keys: Vec<String> = keys.split(',').map(|key| key.trim().to_string()).collect();
                    if let Some(unknown) = keys.iter().find(|key| !columns.iter().any(|column| &column.name == *key)) {
                        return Err(options.bad("key", keys_at, format!("`{unknown}` is not a column of the table")));
                    }
                    keys
                }
                None => Vec::new(),
            };
            options.finish("kafka", KAFKA_OPTIONS)?;
            Ok((Connector::Kafka { spec, sink_key_columns }, format))
        }
        "files" | "filesystem" => {
            let format = format_of(options)?;
            if matches!(format, Format::Avro { .. }) {
                return Err(options.bad("format", options.at(), "files are JSON lines; 'avro' is read from Kafka"));
            }
            let (path, _) = options.take_required("path")?;
            let max_records_per_batch = options
                .take_parsed("max_records_per_batch", "a whole number ≥ 1")?
                .unwrap_or_else(sleet_plan::default_max_records_per_batch);
            options.finish("files", FILES_OPTIONS)?;
            Ok((Connector::Files { path, max_records_per_batch }, format))
        }
        "generator" => crate::generators::generator_of(options, columns, context),
        "csv" => {
            let (path, _) = options.take_required("path")?;
            if let Some(column) = columns.iter().find(|column| column.data_type != DataType::Utf8) {
                return Err(SqlError::invalid(
                    options.at(),
                    format!(
                        "table `{}`: a CSV table's columns are all VARCHAR, and `{}` is {}",
                        options.table(),
                        column.name,
                        types::sql_name(column.data_type)
                    ),
                ));
            }
            options.finish("csv", &["connector", "path"])?;
            Ok((Connector::Csv { path }, json))
        }
        "stdout" | "print" => {
            options.finish("stdout", &["connector"])?;
            Ok((Connector::Stdout, json))
        }
        "blackhole" => {
            options.finish("blackhole", &["connector"])?;
            Ok((Connector::Blackhole, json))
        }
        other => Err(options.bad(
            "connector",
            connector_at,
            format!("unknown connector '{other}' (sleet has kafka, files, generator, csv, stdout, blackhole)"),
        )),
    }
}

fn format_of(options: &mut TableOptions) -> Result<Format, SqlError> {
    let max_record_bytes = options
        .take_parsed("max_record_bytes", "a whole number of bytes")?
        .unwrap_or_else(sleet_plan::node::default_max_record_bytes);
    match options.take("format") {
        None => Ok(Format::Json { max_record_bytes }),
        Some((format, at)) => match format.to_ascii_lowercase().as_str() {
            "json" => Ok(Format::Json { max_record_bytes }),
            "avro" => {
                let (schema_path, _) = options.take_required("avro.schema")?;
                Ok(Format::Avro { schema_path, max_record_bytes })
            }
            other => Err(options.bad("format", at, format!("'{other}' is not a format (json or avro)"))),
        },
    }
}

fn kafka_start(text: &str) -> Result<KafkaStart, String> {
    match text.to_ascii_lowercase().as_str() {
        "earliest" | "earliest-offset" => Ok(KafkaStart::Earliest),
        "latest" | "latest-offset" => Ok(KafkaStart::Latest),
        other => match other.strip_prefix("timestamp:").map(|ms| ms.trim().parse::<i64>()) {
            Some(Ok(ms)) => Ok(KafkaStart::Timestamp(ms)),
            _ => Err(format!("'{text}' is not earliest, latest or timestamp:MS")),
        },
    }
}
