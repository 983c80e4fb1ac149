//! Writers for the worked examples of text mode (O-2), shared by families whose call bodies
//! differ only in their markers: `{"name", "arguments"}` objects and lists, keyword calls, and
//! `<parameter name="K">V</parameter>` tags. Each family names its own markers.

use serde_json::{Map, Value, json};

use super::call_syntax::keyword_args;

/// `{"name": NAME, "arguments": {...}}`, the object most JSON families write.
pub(crate) fn name_arguments(name: &str, args: &Map<String, Value>) -> String {
    json!({"name": name, "arguments": args}).to_string()
}

/// `[{"name": NAME, "arguments": {...}}]`: a one-call JSON list.
pub(crate) fn name_arguments_list(name: &str, args: &Map<String, Value>) -> String {
    json!([{"name": name, "arguments": args}]).to_string()
}

/// A value written as text inside a tag: strings as is, everything else as JSON.
pub(crate) fn tag_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `<{tag} name="K">V</{tag}>` per argument, each followed by `sep`, values as [`tag_text`].
pub(crate) fn named_parameters(tag: &str, sep: &str, args: &Map<String, Value>) -> String {
    args.iter()
        .map(|(k, v)| format!("<{tag} name=\"{k}\">{}</{tag}>{sep}", tag_text(v)))
        .collect()
}

/// `NAME(key=value, ...)` with Python literal values, as the pythonic families write a call.
pub(crate) fn python_call(name: &str, args: &Map<String, Value>) -> String {
    format!("{name}({})", keyword_args(args, true))
}
