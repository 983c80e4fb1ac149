//! Secret redaction for logs and the archive (X-7).
//!
//! Values under keys that name a credential (`api_key`, `token`, `password`, `secret`,
//! `authorization`, ...; case-insensitive, at any depth) become `"[REDACTED]"`. Nesting is
//! bounded: anything deeper than [`MAX_DEPTH`] is replaced wholesale, so a hostile argument
//! object cannot make redaction recurse without limit.

use serde_json::{Map, Value};
use toolcall_core::ToolCall;

/// The replacement for a secret value.
pub const REDACTED: &str = "[REDACTED]";
/// Nesting depth beyond which values are replaced by [`TOO_DEEP`].
pub const MAX_DEPTH: usize = 32;
/// The replacement for a value nested deeper than [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "[TOO DEEP]";

/// Words that make a key a secret wherever they occur in it.
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
    // `token` only as the key's last word, so `max_tokens` stays readable.
    CONTAINS.iter().any(|s| contains(&k, s)) || k.ends_with("token") || k == "auth" || k == "cookie"
}

/// `k.contains(needle)` by comparing windows: `str::contains` sets up a two-way searcher for
/// each needle, about 150 instructions before reading a byte, which for the short keys of
/// tool arguments was most of the check (2.9 k instructions for the two keys of a call's
/// log line in the running gateway, session 39).
fn contains(k: &str, needle: &str) -> bool {
    let (k, needle) = (k.as_bytes(), needle.as_bytes());
    k.windows(needle.len())
        .any(|w| w[0] == needle[0] && w == needle)
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

/// A model's text with the secret argument values of the calls written in it redacted, the
/// same values [`redact`] hides in the calls' arguments: each value (as written, and as a
/// JSON string body) is replaced inside the call's markup span, or in the whole text when
/// the span does not fit the text.
pub fn redact_call_text(text: &str, calls: &[ToolCall]) -> String {
    replace_call_secrets(text, calls, |_| REDACTED.to_owned())
}

/// A model's text with the same secret values as [`redact_call_text`] hidden, each replaced
/// by as many `*` as it has bytes: the text keeps its length, so the byte spans of the calls
/// (`call.origin.span`) still point at their markup. For showing a raw reply with its calls
/// highlighted (the agent's `ReplyParsed` event).
pub fn mask_call_text(text: &str, calls: &[ToolCall]) -> String {
    replace_call_secrets(text, calls, |secret| "*".repeat(secret.len()))
}

fn replace_call_secrets(
    text: &str,
    calls: &[ToolCall],
    replacement: impl Fn(&str) -> String,
) -> String {
    let mut out = text.to_owned();
    // Last span first, so earlier spans keep their offsets.
    let mut calls: Vec<&ToolCall> = calls.iter().collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.origin.span.start));
    for call in calls {
        let mut secrets = Vec::new();
        secret_values(&call.arguments, false, 0, &mut secrets);
        // Longest first, so a value is not half-replaced by a shorter one it contains.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        if secrets.is_empty() {
            continue;
        }
        let span = &call.origin.span;
        let range = if span.start < span.end && out.get(span.clone()).is_some() {
            span.clone()
        } else {
            0..out.len()
        };
        let mut markup = out[range.clone()].to_owned();
        for secret in &secrets {
            markup = markup.replace(secret.as_str(), &replacement(secret));
        }
        out.replace_range(range, &markup);
    }
    out
}

/// The non-empty scalar values under secret keys in `value`, as written and as a JSON
/// string body.
fn secret_values(value: &Value, secret: bool, depth: usize, out: &mut Vec<String>) {
    if depth >= MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                secret_values(v, secret || is_secret_key(k), depth + 1, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                secret_values(v, secret, depth + 1, out);
            }
        }
        Value::String(s) if secret && !s.is_empty() => {
            let json = Value::String(s.clone()).to_string();
            let escaped = &json[1..json.len() - 1];
            if escaped != s {
                out.push(escaped.to_owned());
            }
            out.push(s.clone());
        }
        Value::Number(_) | Value::Bool(_) if secret => out.push(value.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // covers X-7
    #[test]
    fn a_window_search_finds_what_str_contains_finds() {
        // Each key, and whether it names a secret.
        let keys = [
            ("", false),
            ("a", false),
            ("city", false),
            ("unit", false),
            ("api_key", true),
            ("x-API-Key", true),
            ("my apikey2", true),
            ("passwd", true),
            ("PassWord", true),
            ("client_secret", true),
            ("secre", false),
            ("authorization", true),
            ("Credentials", true),
            ("private-key", true),
            ("privatekey", false),
            ("max_tokens", false),
            ("access_token", true),
            ("auth", true),
            ("cookie", true),
            ("ébpassword", true),
            ("pässword", false),
            ("api_ke", false),
            ("aapi_key", true),
            ("secretsecret", true),
        ];
        for (key, is_secret) in keys {
            for needle in CONTAINS {
                assert_eq!(
                    contains(key, needle),
                    key.contains(needle),
                    "{key} {needle}"
                );
            }
            assert_eq!(is_secret_key(key), is_secret, "{key}");
        }
    }

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

    fn text_call(text: &str, markup: &str, arguments: Value) -> ToolCall {
        let start = text.find(markup).unwrap();
        let mut call = ToolCall::new("login", arguments, "hermes");
        call.origin.span = start..start + markup.len();
        call
    }

    // covers X-7
    #[test]
    fn secrets_in_a_calls_markup_are_redacted_and_the_rest_kept() {
        let markup = r#"<tool_call>{"name":"login","arguments":{"user":"ann","password":"hun\"ter2","api":{"token":42}}}</tool_call>"#;
        let text = format!("Logging in as ann, 42 times. {markup}");
        let call = text_call(
            &text,
            markup,
            json!({"user":"ann","password":"hun\"ter2","api":{"token":42}}),
        );
        let r = redact_call_text(&text, &[call]);
        assert_eq!(
            r,
            format!(
                "Logging in as ann, 42 times. {}",
                r#"<tool_call>{"name":"login","arguments":{"user":"ann","password":"[REDACTED]","api":{"token":[REDACTED]}}}</tool_call>"#
            )
        );
        // A span that does not fit the text: the whole text is searched.
        let mut call = ToolCall::new("login", json!({"password":"pw1"}), "hermes");
        call.origin.span = 5..500;
        assert_eq!(
            redact_call_text("say pw1 and pw1", &[call]),
            "say [REDACTED] and [REDACTED]"
        );
        let plain = ToolCall::new("login", json!({"user":"ann","password":""}), "hermes");
        assert_eq!(redact_call_text("ann", &[plain]), "ann");
    }

    // covers X-7
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
