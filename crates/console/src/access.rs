//! Who may use the API: with a cluster secret, only a caller showing the token derived from it
//! (`Authorization: Bearer …`, or `?token=…` where a header cannot be sent, as by the page's
//! event stream); without one, anyone who reaches the address, which is then loopback only.
//! The page and its assets are served to anyone: they hold no figures, and the page asks for
//! the token when the API refuses it.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::reply::failure;
use crate::Console;

pub async fn require_token(State(console): State<Console>, request: Request, next: Next) -> Response {
    let Some(expected) = console.token.as_deref() else { return next.run(request).await };
    let shown = bearer(&request).or_else(|| query_token(&request));
    match shown {
        Some(token) if same(token.as_bytes(), expected.as_bytes()) => next.run(request).await,
        Some(_) => failure(StatusCode::UNAUTHORIZED, "the token is wrong: `sleet token` prints this cluster's"),
        None => failure(
            StatusCode::UNAUTHORIZED,
            "this driver needs a token: send `Authorization: Bearer TOKEN` (or ?token=TOKEN); `sleet token` prints it",
        ),
    }
}

fn bearer(request: &Request) -> Option<String> {
    let value = request.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|token| token.trim().to_string())
}

fn query_token(request: &Request) -> Option<String> {
    request.uri().query()?.split('&').find_map(|pair| pair.strip_prefix("token=")).map(str::to_string)
}

/// Compares in time that does not depend on where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }
}
