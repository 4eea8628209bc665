//! The script's tokens, cut into statements, with the two pieces of Flink's syntax that
//! sqlparser does not read taken out first: a `WATERMARK FOR col AS expr` clause in
//! `CREATE TABLE`, and the `TABLE` before a table passed to a window function
//! (`TUMBLE(TABLE bids, …)`). Every token keeps its place in the text, so errors still point
//! at the right line and column.

use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{Position, SqlError, SqlErrorKind};

/// One statement's tokens, ready for sqlparser.
#[derive(Debug)]
pub struct StatementTokens {
    pub tokens: Vec<TokenWithSpan>,
    pub start: Position,
    /// Just past its last token: where a statement that ends too soon is reported.
    pub end: Position,
    /// The tokens of `FOR col AS expr` after `WATERMARK`, when a `CREATE TABLE` had one.
    pub watermark: Option<Vec<TokenWithSpan>>,
}

/// Tokenizes `text` and cuts it at top-level semicolons; statements with no tokens but
/// whitespace and comments are left out.
pub fn statements(text: &str) -> Result<Vec<StatementTokens>, SqlError> {
    let tokens = Tokenizer::new(&GenericDialect {}, text)
        .tokenize_with_location()
        .map_err(|error| SqlError::new(error.location, SqlErrorKind::Syntax(error.message)))?;
    let mut statements = Vec::new();
    let mut current = Vec::new();
    for token in tokens {
        if token.token == Token::SemiColon {
            push_statement(&mut statements, std::mem::take(&mut current))?;
        } else {
            current.push(token);
        }
    }
    push_statement(&mut statements, current)?;
    Ok(statements)
}

fn push_statement(statements: &mut Vec<StatementTokens>, tokens: Vec<TokenWithSpan>) -> Result<(), SqlError> {
    let Some(first) = tokens.iter().find(|token| !is_blank(&token.token)) else {
        return Ok(());
    };
    let start = Position::from(first.span.start);
    let end =
        tokens.iter().rev().find(|token| !is_blank(&token.token)).map_or(start, |last| Position::from(last.span.end));
    let is_create_table = {
        let mut words = tokens.iter().filter(|token| !is_blank(&token.token));
        matches!(words.next(), Some(token) if is_keyword(&token.token, Keyword::CREATE))
            && matches!(words.next(), Some(token) if is_keyword(&token.token, Keyword::TABLE))
    };
    let (tokens, watermark) = if is_create_table { take_watermark(tokens)? } else { (tokens, None) };
    let tokens = drop_table_before_argument(tokens);
    statements.push(StatementTokens { tokens, start, end, watermark });
    Ok(())
}

fn is_blank(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_))
}

fn is_keyword(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(word) if word.keyword == keyword && word.quote_style.is_none())
}

fn is_word(token: &Token, text: &str) -> bool {
    matches!(token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(text))
}

/// Removes `[,] WATERMARK FOR … AS …` from the column list and returns the tokens after
/// `WATERMARK`. Only one watermark per table is allowed, as in Flink.
fn take_watermark(tokens: Vec<TokenWithSpan>) -> Result<(Vec<TokenWithSpan>, Option<Vec<TokenWithSpan>>), SqlError> {
    let mut depth = 0usize;
    let mut start = None;
    let mut end = tokens.len();
    for (index, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 1 && start.is_some() => {
                end = index;
                break;
            }
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Comma if depth == 1 && start.is_some() => {
                end = index;
                break;
            }
            other if depth == 1 && is_word(other, "WATERMARK") => {
                if start.is_some() {
                    return Err(SqlError::invalid(token.span.start, "a table has at most one WATERMARK"));
                }
                start = Some(index);
            }
            _ => {}
        }
    }
    let Some(start) = start else {
        return Ok((tokens, None));
    };
    if let Some(second) = tokens[end..].iter().skip(1).find(|token| is_word(&token.token, "WATERMARK")) {
        return Err(SqlError::invalid(second.span.start, "a table has at most one WATERMARK"));
    }
    let clause: Vec<TokenWithSpan> = tokens[start + 1..end].to_vec();
    // The comma that separated the clause from a column goes with it: the one before it, or,
    // when the clause came first, the one after it.
    let before = tokens[..start].iter().rposition(|token| !is_blank(&token.token));
    let (cut_from, cut_to) = match before {
        Some(comma) if tokens[comma].token == Token::Comma => (comma, end),
        _ if end < tokens.len() && tokens[end].token == Token::Comma => (start, end + 1),
        _ => (start, end),
    };
    let mut kept = tokens;
    kept.drain(cut_from..cut_to);
    Ok((kept, Some(clause)))
}

/// `f(TABLE name, …)` → `f(name, …)`: the window and keyed-state functions take a table as
/// their first argument, which sqlparser would otherwise reject.
fn drop_table_before_argument(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut kept: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for (index, token) in tokens.iter().enumerate() {
        if is_keyword(&token.token, Keyword::TABLE) {
            let previous = kept.iter().rev().find(|token| !is_blank(&token.token)).map(|token| &token.token);
            let next = tokens[index + 1..].iter().find(|token| !is_blank(&token.token)).map(|token| &token.token);
            let is_argument = matches!(previous, Some(Token::LParen | Token::Comma));
            if is_argument && matches!(next, Some(Token::Word(_))) {
                continue;
            }
        }
        kept.push(token.clone());
    }
    kept
}

/// A single space, for tests that compare token text.
#[cfg(test)]
fn text_of(tokens: &[TokenWithSpan]) -> String {
    tokens
        .iter()
        .map(|token| match &token.token {
            Token::Whitespace(_) => " ".to_string(),
            other => other.to_string(),
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[(&str, Option<&str>)]) {
        let statements = statements(text).unwrap();
        let found: Vec<(String, Option<String>)> = statements
            .iter()
            .map(|statement| (text_of(&statement.tokens), statement.watermark.as_deref().map(text_of)))
            .collect();
        let expected: Vec<(String, Option<String>)> =
            expected.iter().map(|(tokens, watermark)| (tokens.to_string(), watermark.map(str::to_string))).collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_watermark_clause_is_taken_out_with_its_comma() {
        check(
            "CREATE TABLE t (a BIGINT, ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (x = 'y');",
            &[("CREATE TABLE t (a BIGINT, ts BIGINT) WITH (x = 'y')", Some("FOR ts AS ts - INTERVAL '5' SECOND"))],
        );
        check(
            "CREATE TABLE t (WATERMARK FOR ts AS ts, ts BIGINT)",
            &[("CREATE TABLE t ( ts BIGINT)", Some("FOR ts AS ts"))],
        );
    }

    #[test]
    fn statements_are_cut_at_semicolons_and_empty_ones_dropped() {
        check(
            "SELECT 1; ; -- nothing\n SELECT f(TABLE t, DESCRIPTOR(ts))",
            &[("SELECT 1", None), ("SELECT f( t, DESCRIPTOR(ts))", None)],
        );
    }

    #[test]
    fn a_second_watermark_is_refused_where_it_stands() {
        let error = statements("CREATE TABLE t (a BIGINT,\n WATERMARK FOR a AS a, WATERMARK FOR a AS a)").unwrap_err();
        assert_eq!(error.at, Position { line: 2, column: 24 });
    }
}
