//! What can be wrong with a SQL script, each error with the line and column it points at.

use sleet_plan::{DataType, PlanError};

/// A place in the script: line and column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

impl Position {
    /// sqlparser marks an unknown place with line 0; such a position is not printed.
    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

impl From<sqlparser::tokenizer::Location> for Position {
    fn from(location: sqlparser::tokenizer::Location) -> Self {
        Position { line: location.line, column: location.column }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// An error and where in the script it is.
#[derive(Debug, thiserror::Error)]
pub struct SqlError {
    pub at: Position,
    pub kind: SqlErrorKind,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.at.is_known() {
            write!(f, "{}: {}", self.at, self.kind)
        } else {
            write!(f, "{}", self.kind)
        }
    }
}

impl SqlError {
    pub fn new(at: impl Into<Position>, kind: SqlErrorKind) -> SqlError {
        SqlError { at: at.into(), kind }
    }

    /// A construct sleet does not plan, named so the user can rewrite around it.
    pub fn unsupported(at: impl Into<Position>, construct: impl Into<String>) -> SqlError {
        SqlError::new(at, SqlErrorKind::Unsupported(construct.into()))
    }

    pub fn invalid(at: impl Into<Position>, reason: impl Into<String>) -> SqlError {
        SqlError::new(at, SqlErrorKind::Invalid(reason.into()))
    }
}

/// Every variant is the author's to fix: the script is wrong or asks for what sleet does not do.
#[derive(Debug, thiserror::Error)]
pub enum SqlErrorKind {
    #[error("{0}")]
    Syntax(String),
    #[error("unknown table `{name}` (declared: {declared})")]
    UnknownTable { name: String, declared: String },
    #[error("unknown column `{name}` (in scope: {in_scope})")]
    UnknownColumn { name: String, in_scope: String },
    #[error("column `{name}` is ambiguous: it is in {tables}; qualify it")]
    AmbiguousColumn { name: String, tables: String },
    #[error("unknown function `{name}` (sleet has: {known})")]
    UnknownFunction { name: String, known: String },
    #[error("{what} has type {found}, expected {expected}")]
    TypeMismatch { what: String, expected: String, found: DataType },
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("table `{table}`: option `{option}`: {reason}")]
    BadOption { table: String, option: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    /// The plan the script describes was refused by the plan's own checks.
    #[error("the planned job is not valid: {0}")]
    Plan(#[source] PlanError),
}

/// sqlparser's errors carry their place in the message text (`… at Line: 3, Column: 7`); it
/// is moved into the error's position so every message reads the same way.
pub fn from_parser(error: sqlparser::parser::ParserError, fallback: Position) -> SqlError {
    let text = match error {
        sqlparser::parser::ParserError::TokenizerError(text) | sqlparser::parser::ParserError::ParserError(text) => {
            text
        }
        sqlparser::parser::ParserError::RecursionLimitExceeded => {
            return SqlError::invalid(fallback, "the statement nests too deeply");
        }
    };
    let text = text.strip_prefix("sql parser error: ").unwrap_or(&text).to_string();
    match split_location(&text) {
        Some((message, at)) => SqlError::new(at, SqlErrorKind::Syntax(message.to_string())),
        None => SqlError::new(fallback, SqlErrorKind::Syntax(text)),
    }
}

fn split_location(text: &str) -> Option<(&str, Position)> {
    let (message, place) = text.rsplit_once(" at Line: ")?;
    let (line, column) = place.split_once(", Column: ")?;
    let line = line.trim().parse().ok()?;
    let column = column.trim().trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok()?;
    Some((message, Position { line, column }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parser_message_gives_up_its_location() {
        let error = from_parser(
            sqlparser::parser::ParserError::ParserError("Expected: ), found: x at Line: 3, Column: 17".into()),
            Position::default(),
        );
        assert_eq!(error.at, Position { line: 3, column: 17 });
        assert_eq!(error.to_string(), "line 3, column 17: Expected: ), found: x");
    }
}
