//! The optional bearer token: every request must carry `Authorization: Bearer <token>`.

/// Whether `header` (an `Authorization` value) carries `token`. The comparison takes the same
/// time wherever the first difference is, so timing does not reveal how much of a guess was
/// right; only the token's length can show.
pub fn authorized(header: Option<&[u8]>, token: &[u8]) -> bool {
    let Some(given) = header.and_then(|header| header.strip_prefix(b"Bearer ")) else {
        return false;
    };
    let mut difference = (given.len() != token.len()) as u8;
    for (index, expected) in token.iter().enumerate() {
        difference |= expected ^ given.get(index).copied().unwrap_or(0);
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::authorized;

    fn check(header: Option<&str>, expected: bool) {
        assert_eq!(authorized(header.map(str::as_bytes), b"s3cret"), expected, "header {header:?}");
    }

    #[test]
    fn only_the_exact_token_passes() {
        check(Some("Bearer s3cret"), true);
        check(None, false);
        check(Some("Bearer "), false);
        check(Some("Bearer s3cre"), false);
        check(Some("Bearer s3cret!"), false);
        check(Some("Bearer s3creT"), false);
        check(Some("bearer s3cret"), false);
        check(Some("s3cret"), false);
        check(Some("Bearer s3cret\0"), false);
    }
}
