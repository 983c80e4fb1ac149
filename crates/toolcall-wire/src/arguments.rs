//! The one policy for a tool call's arguments as providers send them.
//!
//! - an object is the arguments;
//! - absent, `null`, or a string that is empty or blank means no arguments: `{}`;
//! - a string holding a JSON object is decoded (Chat Completions and Responses send
//!   arguments as a JSON string);
//! - anything else (a string that is not JSON, or JSON that is not an object, or a
//!   non-object value) is an [`ArgumentsError`] that keeps the raw text: callers never turn it
//!   into `{}`. The clients keep such a call so validation answers the model with
//!   `invalid_arguments`; the parser drops it with a diagnostic; the gateway applies its
//!   invalid-call policy.
//!
//! No repair happens here: decoding is exact, so a call means what the provider sent.

use serde_json::{Map, Value};

/// Arguments that are not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("arguments are not a JSON object: {reason}")]
pub struct ArgumentsError {
    /// The arguments as sent (the string itself, or the value's JSON text).
    pub raw: String,
    /// What is wrong with them.
    pub reason: String,
}

/// Decodes a provider's arguments (see the module doc for the policy).
pub fn decode_arguments(value: Option<&Value>) -> Result<Map<String, Value>, ArgumentsError> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) => decode_arguments_str(s),
        Some(other) => Err(ArgumentsError {
            raw: other.to_string(),
            reason: format!("found {}", kind(other)),
        }),
    }
}

/// Decodes an arguments string (see the module doc for the policy).
pub fn decode_arguments_str(raw: &str) -> Result<Map<String, Value>, ArgumentsError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(ArgumentsError {
            raw: raw.to_owned(),
            reason: format!("the string holds {}", kind(&other)),
        }),
        Err(e) => Err(ArgumentsError {
            raw: raw.to_owned(),
            reason: format!("the string is not JSON ({e})"),
        }),
    }
}

/// Arguments as the JSON string the wire formats carry; a string (arguments that could not
/// be decoded) goes back as it came.
pub fn encode_arguments(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    //
    #[test]
    fn one_policy_for_every_shape() {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(decode_arguments(None), Ok(Map::new()));
        assert_eq!(decode_arguments(Some(&Value::Null)), Ok(Map::new()));
        assert_eq!(decode_arguments(Some(&json!("  "))), Ok(Map::new()));
        assert_eq!(
            decode_arguments(Some(&json!({"a": 1}))),
            Ok(obj(json!({"a": 1})))
        );
        assert_eq!(
            decode_arguments(Some(&json!(" {\"a\":1} "))),
            Ok(obj(json!({"a": 1})))
        );
        let cut = decode_arguments(Some(&json!("{\"a\":"))).unwrap_err();
        assert_eq!(cut.raw, "{\"a\":");
        assert!(cut.reason.contains("not JSON"), "{cut}");
        let list = decode_arguments(Some(&json!("[1]"))).unwrap_err();
        assert!(list.reason.contains("an array"), "{list}");
        let number = decode_arguments(Some(&json!(3))).unwrap_err();
        assert_eq!(number.raw, "3");
    }

    #[test]
    fn encoding_round_trips() {
        let args = json!({"q": "x", "n": [1, 2]});
        let s = encode_arguments(&args);
        assert_eq!(Value::Object(decode_arguments_str(&s).unwrap()), args);
        assert_eq!(encode_arguments(&json!("{\"a\":")), "{\"a\":");
    }
}
