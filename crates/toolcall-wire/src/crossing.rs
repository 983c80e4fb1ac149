//! What crosses from a client's request to the upstream: the one list of request fields the
//! neutral request carries besides its typed ones ([`NEUTRAL_FIELDS`], Chat Completions'
//! own sampling and output fields), and the check every non-Chat front end's decoded request
//! goes through ([`keep_neutral`]).
//!
//! Each dialect's decoder maps its own fields to these (Responses' `max_output_tokens` to
//! `max_tokens`, `reasoning.effort` to `reasoning_effort`, `text.format` to
//! `response_format`; Anthropic's `stop_sequences` to `stop`; Gemini's `generationConfig`);
//! each encoder writes them back in its dialect or leaves them out. A field no dialect maps
//! is reported as ignored (the gateway logs it once), so nothing reaches an upstream that its
//! dialect does not define: Responses' `prompt_cache_key`, `client_metadata`, `store` or
//! `include` never appear in an upstream Chat request.
//!
//! A Chat Completions front end is the exception: its request already is the neutral
//! request, and servers' own Chat extensions (`chat_template_kwargs`, `min_p`, …) pass
//! through to a Chat upstream untouched.

use serde_json::{Map, Value};

use crate::chat::ChatRequest;

/// The request fields the neutral request carries in `extra`: Chat Completions' own.
pub const NEUTRAL_FIELDS: &[&str] = &[
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "n",
    "reasoning_effort",
    "response_format",
    "metadata",
    "user",
    "service_tier",
    "stream_options",
];

/// Whether `field` is one the neutral request carries.
pub fn is_neutral(field: &str) -> bool {
    NEUTRAL_FIELDS.contains(&field)
}

/// Leaves in `request.extra` only the neutral fields; the names of the others are added to
/// `ignored` (each once).
pub fn keep_neutral(request: &mut ChatRequest, ignored: &mut Vec<String>) {
    let extra = std::mem::take(&mut request.extra);
    let mut kept = Map::new();
    for (k, v) in extra {
        if is_neutral(&k) {
            kept.insert(k, v);
        } else if !ignored.contains(&k) {
            ignored.push(k);
        }
    }
    request.extra = kept;
}

/// Responses' `text.format` as Chat's `response_format`, when it has one
/// (`json_schema` moves its `name`/`schema`/`strict` under `json_schema`; `json_object` and
/// `text` stay as they are).
pub fn response_format_of_text(text: &Value) -> Option<Value> {
    let format = text.get("format")?;
    match format.get("type").and_then(Value::as_str)? {
        "json_schema" => {
            let mut inner = format.as_object().cloned().unwrap_or_default();
            inner.remove("type");
            Some(serde_json::json!({"type": "json_schema", "json_schema": inner}))
        }
        "json_object" | "text" => Some(format.clone()),
        _ => None,
    }
}

/// Chat's `response_format` as Responses' `text` (the inverse of
/// [`response_format_of_text`]).
pub fn text_of_response_format(format: &Value) -> Option<Value> {
    match format.get("type").and_then(Value::as_str)? {
        "json_schema" => {
            let mut inner = format
                .get("json_schema")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            inner.insert("type".into(), Value::String("json_schema".into()));
            Some(serde_json::json!({"format": inner}))
        }
        "json_object" | "text" => Some(serde_json::json!({"format": format})),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_neutral_fields_are_kept_and_the_rest_reported() {
        let mut r: ChatRequest = serde_json::from_value(json!({"model": "m", "messages": [],
            "temperature": 0.1, "prompt_cache_key": "k", "client_metadata": {"a": 1},
            "max_tokens": 5}))
        .unwrap();
        let mut ignored = vec!["store".to_owned()];
        keep_neutral(&mut r, &mut ignored);
        assert_eq!(r.extra.len(), 2);
        assert_eq!(r.extra["temperature"], 0.1);
        ignored.sort();
        assert_eq!(ignored, ["client_metadata", "prompt_cache_key", "store"]);
    }

    #[test]
    fn structured_output_maps_both_ways() {
        let text = json!({"format": {"type": "json_schema", "name": "n",
            "schema": {"type": "object"}, "strict": true}});
        let rf = response_format_of_text(&text).unwrap();
        assert_eq!(rf["json_schema"]["name"], "n");
        assert_eq!(rf["json_schema"]["strict"], true);
        assert_eq!(text_of_response_format(&rf).unwrap(), text);
        assert_eq!(response_format_of_text(&json!({"verbosity": "low"})), None);
    }
}
