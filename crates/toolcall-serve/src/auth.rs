//! Client API keys: `Authorization: Bearer KEY`, compared in constant time.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use subtle::ConstantTimeEq;

/// Whether `headers` carry one of `keys` as a bearer token; no keys configured = open.
/// Every key is compared (in constant time), so the time taken does not tell which matched.
pub fn authorized(headers: &HeaderMap, keys: &[String]) -> bool {
    if keys.is_empty() {
        return true;
    }
    let Some(token) = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
    else {
        return false;
    };
    key_matches(token, keys)
}

/// Whether `token` equals one of `keys`, in time independent of where they differ.
pub fn key_matches(token: &str, keys: &[String]) -> bool {
    let mut found = subtle::Choice::from(0);
    for k in keys {
        found |= k.as_bytes().ct_eq(token.as_bytes());
    }
    found.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_keys_are_checked() {
        let keys = vec!["alpha".to_owned(), "beta".to_owned()];
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, &keys));
        assert!(authorized(&h, &[]));
        h.insert(AUTHORIZATION, "Bearer beta".parse().unwrap());
        assert!(authorized(&h, &keys));
        h.insert(AUTHORIZATION, "Bearer bet".parse().unwrap());
        assert!(!authorized(&h, &keys));
        h.insert(AUTHORIZATION, "Basic beta".parse().unwrap());
        assert!(!authorized(&h, &keys));
    }
}
