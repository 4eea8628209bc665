//! A table's `WITH (key = value, …)` options: read once, each taken by name, and every one
//! left untaken refused by name, so a misspelt option is an error rather than ignored.

use std::collections::BTreeMap;
use std::str::FromStr;

use sqlparser::ast::{CreateTableOptions, Expr, SqlOption, Value};

use crate::error::{Position, SqlError, SqlErrorKind};

pub struct TableOptions {
    table: String,
    at: Position,
    /// Each option's text and where its value stands, and where its key does.
    values: BTreeMap<String, (String, Position)>,
    keys_at: BTreeMap<String, Position>,
}

impl TableOptions {
    pub fn read(table: &str, at: Position, options: &CreateTableOptions) -> Result<TableOptions, SqlError> {
        let list: &[SqlOption] = match options {
            CreateTableOptions::None => &[],
            CreateTableOptions::With(list) => list,
            other => {
                return Err(SqlError::unsupported(at, format!("table options written as `{other}`; use WITH (…)")))
            }
        };
        let mut values = BTreeMap::new();
        let mut keys_at = BTreeMap::new();
        for option in list {
            let SqlOption::KeyValue { key, value } = option else {
                return Err(SqlError::unsupported(at, format!("table option `{option}`; write key = 'value'")));
            };
            let key_text =
                key.0.iter().map(|part| part.as_ident().map_or(part.to_string(), |ident| ident.value.clone()));
            let key_text = key_text.collect::<Vec<_>>().join(".").to_ascii_lowercase();
            let place = crate::spans::position_of(value).unwrap_or(at);
            let key_at = crate::spans::position_of(key).unwrap_or(place);
            let text = match value {
                Expr::Value(value) => match &value.value {
                    Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => text.clone(),
                    Value::Number(text, _) => text.clone(),
                    Value::Boolean(flag) => flag.to_string(),
                    other => other.to_string(),
                },
                Expr::Identifier(ident) => ident.value.clone(),
                other => other.to_string(),
            };
            keys_at.insert(key_text.clone(), key_at);
            if values.insert(key_text.clone(), (text, place)).is_some() {
                return Err(SqlError::new(
                    key_at,
                    SqlErrorKind::BadOption { table: table.into(), option: key_text, reason: "given twice".into() },
                ));
            }
        }
        Ok(TableOptions { table: table.to_string(), at, values, keys_at })
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn at(&self) -> Position {
        self.at
    }

    /// Takes an option's text, if given.
    pub fn take(&mut self, key: &str) -> Option<(String, Position)> {
        self.values.remove(key)
    }

    pub fn take_required(&mut self, key: &str) -> Result<(String, Position), SqlError> {
        let (table, at) = (self.table.clone(), self.at);
        self.take(key).ok_or_else(|| {
            SqlError::new(at, SqlErrorKind::BadOption { table, option: key.into(), reason: "is required".into() })
        })
    }

    /// Takes an option and parses it, naming the option when it does not parse.
    pub fn take_parsed<T: FromStr>(&mut self, key: &str, expected: &str) -> Result<Option<T>, SqlError> {
        let Some((text, at)) = self.take(key) else {
            return Ok(None);
        };
        text.trim().parse().map(Some).map_err(|_| self.bad(key, at, format!("`{text}` is not {expected}")))
    }

    pub fn bad(&self, option: &str, at: Position, reason: impl Into<String>) -> SqlError {
        SqlError::new(
            at,
            SqlErrorKind::BadOption { table: self.table.clone(), option: option.into(), reason: reason.into() },
        )
    }

    /// Every option the connector did not take is an error naming it and what it takes.
    pub fn finish(&self, connector: &str, known: &[&str]) -> Result<(), SqlError> {
        match self.values.iter().next() {
            None => Ok(()),
            Some((key, (_, at))) => Err(SqlError::new(
                self.keys_at.get(key).copied().unwrap_or(*at),
                SqlErrorKind::BadOption {
                    table: self.table.clone(),
                    option: key.clone(),
                    reason: format!("connector `{connector}` has no such option (it takes: {})", known.join(", ")),
                },
            )),
        }
    }
}
