//! Client API keys: `Authorization: Bearer KEY`, compared in constant time. The one check
//! of both HTTP servers: the gateway's and `toolcall mcp serve --http`'s.

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
        .and_then(|v| {
            // The scheme is case-insensitive (RFC 9110).
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
    else {
        return false;
    };
    key_matches(token, keys)
}

/// The headers other dialects' clients send their key in: Anthropic's `x-api-key`, Google's
/// `x-goog-api-key`.
pub const KEY_HEADERS: [&str; 2] = ["x-api-key", "x-goog-api-key"];

/// Whether `headers` carry one of `keys` as a bearer token or in one of [`KEY_HEADERS`]
/// (Anthropic and Gemini clients send no `Authorization`).
pub fn authorized_any(headers: &HeaderMap, keys: &[String]) -> bool {
    if authorized(headers, keys) {
        return true;
    }
    KEY_HEADERS.iter().any(|name| {
        headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|token| key_matches(token.trim(), keys))
    })
}

/// Whether `token` equals one of `keys`, in time independent of where they differ.
pub fn key_matches(token: &str, keys: &[String]) -> bool {
    let mut found = subtle::Choice::from(0);
    for k in keys {
        found |= k.as_bytes().ct_eq(token.as_bytes());
    }
    found.into()
}

/// The keys of a comma-separated list (an environment variable's value); blanks are skipped.
pub fn split_keys(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect()
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
        h.insert(AUTHORIZATION, "bearer alpha".parse().unwrap());
        assert!(authorized(&h, &keys));
        for wrong in [
            "alpha",
            "Bearer ",
            "Bearer alph",
            "Bearer alphaa",
            "Bearer beta,alpha",
        ] {
            h.insert(AUTHORIZATION, wrong.parse().unwrap());
            assert!(!authorized(&h, &keys), "{wrong}");
        }
    }

    #[test]
    fn anthropic_and_google_key_headers_are_checked() {
        let keys = vec!["alpha".to_owned()];
        let mut h = HeaderMap::new();
        assert!(!authorized_any(&h, &keys));
        h.insert("x-api-key", "alph".parse().unwrap());
        assert!(!authorized_any(&h, &keys));
        h.insert("x-api-key", "alpha".parse().unwrap());
        assert!(authorized_any(&h, &keys));
        assert!(
            !authorized(&h, &keys),
            "the OpenAI endpoints keep to Bearer"
        );
        let mut h = HeaderMap::new();
        h.insert("x-goog-api-key", "alpha".parse().unwrap());
        assert!(authorized_any(&h, &keys));
    }

    #[test]
    fn key_lists_split_on_commas() {
        assert_eq!(split_keys(" a, b,,c ,"), ["a", "b", "c"]);
        assert!(split_keys(" , ").is_empty());
    }
}
