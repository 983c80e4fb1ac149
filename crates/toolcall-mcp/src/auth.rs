//! The client API key check of `toolcall mcp serve --http`: `Authorization: Bearer KEY`,
//! compared in constant time so the time taken does not tell how much of a guess was right.

/// Whether `header` (an `Authorization` value) carries one of `keys` as a bearer token.
pub fn bearer_matches(header: Option<&str>, keys: &[String]) -> bool {
    let Some(token) = header.and_then(|h| {
        let (scheme, rest) = h.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    }) else {
        return false;
    };
    // Every key is compared, matched or not.
    keys.iter()
        .fold(false, |found, key| found | constant_time_eq(token, key))
}

/// Equality whose time depends only on the lengths.
fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_listed_bearer_key_passes() {
        let keys = vec!["k1".to_owned(), "secret-2".to_owned()];
        assert!(bearer_matches(Some("Bearer secret-2"), &keys));
        assert!(bearer_matches(Some("bearer k1"), &keys));
        assert!(!bearer_matches(Some("Bearer secret-"), &keys));
        assert!(!bearer_matches(Some("Bearer secret-22"), &keys));
        assert!(!bearer_matches(Some("Basic k1"), &keys));
        assert!(!bearer_matches(Some("k1"), &keys));
        assert!(!bearer_matches(None, &keys));
        assert!(!bearer_matches(Some("Bearer "), &[]));
    }
}
