//! Where an AST node stands in the script, for error messages.

use sqlparser::ast::Spanned;

use crate::error::Position;

/// The start of `node`, when sqlparser knows it (some nodes have an empty span).
pub fn position_of(node: &impl Spanned) -> Option<Position> {
    let start = node.span().start;
    (start.line > 0).then(|| start.into())
}

/// The start of `node`, or `fallback` (the statement's start) when it is unknown.
pub fn at(node: &impl Spanned, fallback: Position) -> Position {
    position_of(node).unwrap_or(fallback)
}

/// Where an identifier stands (`Ident` carries its span but is not `Spanned`).
pub fn ident_at(ident: &sqlparser::ast::Ident, fallback: Position) -> Position {
    let start = ident.span.start;
    if start.line > 0 {
        start.into()
    } else {
        fallback
    }
}
