//! Secret redaction for logs and the archive.
//!
//! Values under keys that name a credential (`api_key`, `token`, `password`, `secret`,
//! `authorization`, ...; case-insensitive, at any depth) become `"[REDACTED]"`. Nesting is
//! bounded: anything deeper than [`MAX_DEPTH`] is replaced wholesale, so a hostile argument
//! object cannot make redaction recurse without limit.

use serde_json::{Map, Value};

/// The replacement for a secret value.
pub const REDACTED: &str = "[REDACTED]";
/// Nesting depth beyond which values are replaced by [`TOO_DEEP`].
pub const MAX_DEPTH: usize = 32;
/// The replacement for a value nested deeper than [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "[TOO DEEP]";

/// Whether a key names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .map(|c| {
            if c == '-' || c == ' ' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    const CONTAINS: [&str; 8] = [
        "api_key",
        "apikey",
        "password",
        "passwd",
        "secret",
        "authorization",
        "credential",
        "private_key",
    ];
    // `token` only as the key's last word, so `max_tokens` stays readable.
    CONTAINS.iter().any(|s| k.contains(s)) || k.ends_with("token") || k == "auth" || k == "cookie"
}

/// A copy of `value` with secrets redacted.
pub fn redact(value: &Value) -> Value {
    redact_at(value, 0)
}

fn redact_at(value: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH {
        return Value::String(TOO_DEEP.to_owned());
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let v = if is_secret_key(k) {
                    Value::String(REDACTED.to_owned())
                } else {
                    redact_at(v, depth + 1)
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_at(v, depth + 1)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    //
    #[test]
    fn nested_secrets_are_redacted_case_insensitively() {
        let v = json!({
            "query": "weather",
            "API_KEY": "sk-1",
            "max_tokens": 10,
            "headers": {"Authorization": "Bearer x", "accept": "json"},
            "list": [{"password": "p"}, {"access-token": "t"}],
            "Client_Secret": {"nested": "s"}
        });
        let r = redact(&v);
        assert_eq!(
            r,
            json!({
                "query": "weather",
                "API_KEY": REDACTED,
                "max_tokens": 10,
                "headers": {"Authorization": REDACTED, "accept": "json"},
                "list": [{"password": REDACTED}, {"access-token": REDACTED}],
                "Client_Secret": REDACTED
            })
        );
    }

    //
    #[test]
    fn depth_is_bounded() {
        let mut v = json!("leaf");
        for _ in 0..1_000 {
            v = json!({ "a": v });
        }
        let r = redact(&v);
        let mut cur = &r;
        let mut depth = 0;
        while let Some(next) = cur.get("a") {
            cur = next;
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(cur, &json!(TOO_DEEP));
        // serde_json's own drop is recursive; keep the deep value from overflowing the stack.
        std::mem::forget(v);
    }
}
