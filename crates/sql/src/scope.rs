//! The columns a query can name at one point of its plan, by table and name, and the plan
//! column each one is. Two names may stand for one plan column: the key of a lookup join is
//! both `events.ad_id` and `campaigns.ad_id`.

use sleet_plan::{DataType, Field, Schema};
use sqlparser::ast::Ident;

use crate::error::{Position, SqlError, SqlErrorKind};

/// What a name in scope stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum Binding {
    /// A column of the plan's rows at this point.
    Column(String),
    /// `window_start` or `window_end` of a window table function: only an aggregate's
    /// `GROUP BY` and output can use them.
    WindowBound(WindowBound),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowBound {
    Start,
    End,
}

impl WindowBound {
    pub fn name(self) -> &'static str {
        match self {
            WindowBound::Start => "window_start",
            WindowBound::End => "window_end",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScopeColumn {
    /// The table or alias the column can be qualified with, lower case; `None` for a derived
    /// column that only its bare name reaches.
    pub table: Option<String>,
    pub name: String,
    pub binding: Binding,
    pub data_type: DataType,
    pub nullable: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
}

impl Scope {
    pub fn push(&mut self, column: ScopeColumn) {
        self.columns.push(column);
    }

    /// The column `parts` names (`name` or `table.name`). An unquoted name that matches no
    /// column exactly matches one whose name differs only in case.
    pub fn resolve(&self, parts: &[Ident], at: Position) -> Result<&ScopeColumn, SqlError> {
        let (table, name) = match parts {
            [name] => (None, name),
            [table, name] => (Some(table.value.to_ascii_lowercase()), name),
            _ => {
                let written = parts.iter().map(|part| part.value.as_str()).collect::<Vec<_>>().join(".");
                return Err(SqlError::unsupported(at, format!("the name `{written}` (write column or table.column)")));
            }
        };
        let in_table = |column: &&ScopeColumn| table.is_none() || column.table == table;
        let exact: Vec<&ScopeColumn> =
            self.columns.iter().filter(in_table).filter(|column| column.name == name.value).collect();
        let found = if exact.is_empty() && name.quote_style.is_none() {
            self.columns
                .iter()
                .filter(in_table)
                .filter(|column| column.name.eq_ignore_ascii_case(&name.value))
                .collect()
        } else {
            exact
        };
        match found.as_slice() {
            [] => Err(self.unknown(parts, at)),
            [one] => Ok(one),
            [first, rest @ ..] if rest.iter().all(|other| other.binding == first.binding) => Ok(first),
            many => Err(SqlError::new(
                at,
                SqlErrorKind::AmbiguousColumn {
                    name: name.value.clone(),
                    tables: many
                        .iter()
                        .map(|column| column.table.clone().unwrap_or_else(|| "the query".into()))
                        .collect::<Vec<_>>()
                        .join(" and "),
                },
            )),
        }
    }

    fn unknown(&self, parts: &[Ident], at: Position) -> SqlError {
        let name = parts.iter().map(|part| part.value.as_str()).collect::<Vec<_>>().join(".");
        let in_scope = self
            .columns
            .iter()
            .map(|column| match &column.table {
                Some(table) => format!("{table}.{}", column.name),
                None => column.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        SqlError::new(at, SqlErrorKind::UnknownColumn { name, in_scope })
    }

    /// The plan's row schema at this point: each plan column once.
    pub fn schema(&self) -> Schema {
        let mut fields: Vec<Field> = Vec::new();
        for column in &self.columns {
            if let Binding::Column(name) = &column.binding {
                if !fields.iter().any(|field| &field.name == name) {
                    fields.push(Field { name: name.clone(), data_type: column.data_type, nullable: column.nullable });
                }
            }
        }
        Schema::new(fields)
    }

    /// The same columns reachable under `alias` only, as a derived table's are.
    pub fn requalified(&self, alias: Option<&str>) -> Scope {
        Scope {
            columns: self
                .columns
                .iter()
                .map(|column| ScopeColumn { table: alias.map(str::to_ascii_lowercase), ..column.clone() })
                .collect(),
        }
    }

    /// A scope of plan columns, one per field, reachable by bare name.
    pub fn of_fields(fields: &[Field]) -> Scope {
        Scope {
            columns: fields
                .iter()
                .map(|field| ScopeColumn {
                    table: None,
                    name: field.name.clone(),
                    binding: Binding::Column(field.name.clone()),
                    data_type: field.data_type,
                    nullable: field.nullable,
                })
                .collect(),
        }
    }
}
