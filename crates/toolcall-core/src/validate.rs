//! Checking a call against the registry before it runs (V-1, V-3, R-10), with schema-directed
//! coercion of common model mistakes (V-5).
//!
//! Order of checks: the tool must exist (`unknown_tool`, naming the tools on offer), be
//! enabled (`tool_disabled`), and receive an object (`invalid_arguments`); then the arguments
//! are checked with the tool's precompiled validator. When they fail, a coerced copy is built
//! by walking the schema (`properties`, `items`, `prefixItems`, local `$ref`s, depth-bounded)
//! and fixing only what has exactly one reading:
//!
//! | model sent | schema wants | becomes | repair kind |
//! |---|---|---|---|
//! | arguments as a JSON string `"{\"a\":1}"` | object | `{"a":1}` | `arguments_string` |
//! | arguments `null` or `""` | object | `{}` | `empty_arguments` |
//! | `"100"` | integer | `100` | `coerced_integer` |
//! | `"2.5"` | number | `2.5` | `coerced_number` |
//! | `"true"` / `"False"` | boolean | `true` / `false` | `coerced_boolean` |
//! | `42` / `true` | string (only) | `"42"` / `"true"` | `coerced_string` |
//! | `"[1,2]"` / `"{...}"` | array / object | parsed JSON | `parsed_json_string` |
//! | a single value | array | `[value]` | `wrapped_in_array` |
//! | `null` for an optional property that does not allow null | — | property removed | `removed_null` |
//!
//! The coerced copy replaces the arguments only if it then validates completely; otherwise the
//! call fails with the errors of what the model actually sent, so the model can fix them.
//! `null` for an optional property is removed because models use it for "not given", which is
//! what omitting it means; a required property's `null` is left for the schema to reject.

use serde_json::{Map, Value, json};

use crate::call::{Repair, ToolCall};
use crate::registry::Registry;
use crate::result::{ErrorCode, ToolError};

/// Deepest schema/argument nesting the coercion walk follows.
const MAX_COERCE_DEPTH: usize = 32;
/// Most schema errors reported for one call.
const MAX_REPORTED_ERRORS: usize = 20;

/// One schema violation, as reported in `invalid_arguments` details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON pointer into the arguments (`""` for the arguments object itself).
    pub pointer: String,
    pub message: String,
}

impl SchemaError {
    fn to_json(&self) -> Value {
        json!({"pointer": self.pointer, "message": self.message})
    }
}

impl Registry {
    /// Checks a call before it runs, as a result for the model: [`Registry::check_call`]'s
    /// verdict as a [`ToolError`] (`unknown_tool`, `tool_disabled`, `invalid_arguments`).
    pub fn validate_call(&self, call: &mut ToolCall) -> Result<(), ToolError> {
        self.check_call(call).map_err(ToolError::from)
    }

    /// Checks a call before it runs: the tool must exist (V-3, R-10) and be enabled, and the
    /// arguments must satisfy its schema (V-1). Unambiguous coercions are applied in place and
    /// recorded in `call.origin.repairs` (see the module docs for the list).
    pub fn check_call(&self, call: &mut ToolCall) -> Result<(), ValidationError> {
        let Some(entry) = self.get(&call.name) else {
            let available: Vec<String> = self.enabled_specs().map(|s| s.name.clone()).collect();
            let known: Vec<&str> = available.iter().map(String::as_str).collect();
            let suggestion = suggest(&call.name, &known).map(str::to_owned);
            return Err(ValidationError::UnknownTool {
                name: call.name.clone(),
                available,
                suggestion,
            });
        };
        if !entry.spec.enabled {
            return Err(ValidationError::Disabled(call.name.clone()));
        }
        let schema = &entry.spec.parameters;
        let Some(validator) = self.validator(&call.name) else {
            // Every insert compiles a validator; a missing one is a registry bug, reported
            // as a failure rather than running unchecked.
            return Err(ValidationError::NoSchema(call.name.clone()));
        };

        let mut repairs = Vec::new();
        let mut args =
            normalise_arguments(&call.arguments, &mut repairs).map_err(|why| match why {
                NotObject::Kind(got) => ValidationError::NotAnObject {
                    name: call.name.clone(),
                    got,
                },
                NotObject::NotJson(reason) => ValidationError::NotJson {
                    name: call.name.clone(),
                    reason,
                },
            })?;

        if !validator.is_valid(&args) {
            let original = args.clone();
            let mut coerce_repairs = Vec::new();
            coerce(
                &mut args,
                schema,
                schema,
                0,
                &mut String::new(),
                &mut coerce_repairs,
            );
            if coerce_repairs.is_empty() || !validator.is_valid(&args) {
                return Err(ValidationError::Schema {
                    name: call.name.clone(),
                    errors: schema_errors(validator, &original),
                });
            }
            repairs.extend(coerce_repairs);
        } else if contains_float(&args, 0) {
            // Valid, but integers written as `3.0` reach tools as floats: make them integers.
            let mut normalised = args.clone();
            let mut int_repairs = Vec::new();
            coerce(
                &mut normalised,
                schema,
                schema,
                0,
                &mut String::new(),
                &mut int_repairs,
            );
            if !int_repairs.is_empty() && validator.is_valid(&normalised) {
                args = normalised;
                repairs.extend(int_repairs);
            }
        }
        call.arguments = args;
        call.origin.repairs.extend(repairs);
        Ok(())
    }

    /// The schema errors of `arguments` for tool `name`, without coercion (empty when valid
    /// or when the tool is unknown).
    pub fn schema_errors(&self, name: &str, arguments: &Value) -> Vec<SchemaError> {
        self.validator(name)
            .map(|v| schema_errors(v, arguments))
            .unwrap_or_default()
    }
}

/// Longest name compared by edit distance (the comparison is quadratic in the length).
const MAX_SPELLING_LEN: usize = 64;

/// A tool the model probably meant, tried in this order, each only when exactly one tool
/// fits:
/// 1. the same letters and digits, ignoring case and separators (`Vista_Command_Summary`,
///    a provider alias);
/// 2. the name without a namespace the model put in front (`functions.get_weather`,
///    `default_api:get_weather`);
/// 3. the last segment of a tool's id (`summary` for `vista.command.summary`);
/// 4. one word of a tool's name (`weather` for `get_weather`);
/// 5. the closest spelling (`get_wether`, `get_weathers`): Damerau-Levenshtein distance on
///    the letters and digits, at most one edit per four letters.
///
/// Only a suggestion in the error: never called in its place.
fn suggest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    fn squash(s: &str) -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    }
    fn only<'a>(mut fits: impl Iterator<Item = &'a str>) -> Option<&'a str> {
        let first = fits.next()?;
        fits.next().is_none().then_some(first)
    }
    let wanted = squash(name);
    if wanted.is_empty() {
        return None;
    }
    let squashed: Vec<(&str, String)> = known.iter().map(|k| (*k, squash(k))).collect();
    if let Some(k) = only(
        squashed
            .iter()
            .filter(|(_, s)| *s == wanted)
            .map(|(k, _)| *k),
    ) {
        return Some(k);
    }
    let last = name.rsplit(['.', ':', '/']).next().unwrap_or(name);
    let wanted_last = squash(last);
    if wanted_last.is_empty() {
        return None;
    }
    if last != name
        && let Some(k) = only(
            squashed
                .iter()
                .filter(|(_, s)| *s == wanted_last)
                .map(|(k, _)| *k),
        )
    {
        return Some(k);
    }
    let by_segment = known.iter().copied().filter(|k| {
        k.rsplit(['.', ':'])
            .next()
            .is_some_and(|seg| seg.eq_ignore_ascii_case(last))
    });
    if let Some(k) = only(by_segment) {
        return Some(k);
    }
    let by_word = known.iter().copied().filter(|k| {
        k.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| word.eq_ignore_ascii_case(&wanted_last))
    });
    if let Some(k) = only(by_word) {
        return Some(k);
    }
    if wanted_last.len() > MAX_SPELLING_LEN {
        return None;
    }
    let most = (wanted_last.len() / 4).max(1);
    let distances: Vec<(&str, usize)> = squashed
        .iter()
        .filter(|(_, s)| s.len() <= MAX_SPELLING_LEN)
        .map(|(k, s)| (*k, strsim::damerau_levenshtein(&wanted_last, s)))
        .filter(|(_, d)| *d <= most)
        .collect();
    let best = distances.iter().map(|(_, d)| *d).min()?;
    only(
        distances
            .iter()
            .filter(|(_, d)| *d == best)
            .map(|(k, _)| *k),
    )
}

/// Whether any number in `v` is stored as a float (bounded depth).
fn contains_float(v: &Value, depth: usize) -> bool {
    if depth > MAX_COERCE_DEPTH {
        return false;
    }
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(|i| contains_float(i, depth + 1)),
        Value::Object(m) => m.values().any(|i| contains_float(i, depth + 1)),
        _ => false,
    }
}

fn schema_errors(validator: &jsonschema::Validator, args: &Value) -> Vec<SchemaError> {
    validator
        .iter_errors(args)
        .take(MAX_REPORTED_ERRORS)
        .map(|e| SchemaError {
            pointer: e.instance_path().as_str().to_owned(),
            message: e.to_string(),
        })
        .collect()
}

/// Why a call may not run, case by case; [`ToolError::from`] words it for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// No tool has this name; `available` lists the enabled ones, `suggestion` the one the
    /// model probably meant.
    #[error("no tool named {name:?}")]
    UnknownTool {
        name: String,
        available: Vec<String>,
        suggestion: Option<String>,
    },
    #[error("tool {0:?} is disabled")]
    Disabled(String),
    /// A registry entry without its compiled schema (never built by [`Registry`] itself).
    #[error("tool {0:?} has no compiled schema")]
    NoSchema(String),
    /// The arguments are not an object (`got` names their JSON type).
    #[error("arguments of {name:?} must be a JSON object, got {got}")]
    NotAnObject { name: String, got: &'static str },
    /// The arguments are text that is not JSON at all (`reason` says where it breaks).
    #[error("arguments of {name:?} are not JSON: {reason}")]
    NotJson { name: String, reason: String },
    /// The arguments break the schema; at most 20 errors, each with its JSON pointer.
    #[error("arguments do not match the schema of {name:?}")]
    Schema {
        name: String,
        errors: Vec<SchemaError>,
    },
}

impl ValidationError {
    /// The error code the model receives.
    pub fn code(&self) -> ErrorCode {
        match self {
            ValidationError::UnknownTool { .. } => ErrorCode::UnknownTool,
            ValidationError::Disabled(_) => ErrorCode::ToolDisabled,
            ValidationError::NoSchema(_)
            | ValidationError::NotAnObject { .. }
            | ValidationError::NotJson { .. }
            | ValidationError::Schema { .. } => ErrorCode::InvalidArguments,
        }
    }
}

impl From<ValidationError> for ToolError {
    fn from(error: ValidationError) -> Self {
        let code = error.code();
        match error {
            ValidationError::UnknownTool {
                name,
                available,
                suggestion,
            } => {
                let list = if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                };
                let hint = suggestion
                    .as_deref()
                    .map(|s| format!(" Did you mean {s:?}?"))
                    .unwrap_or_default();
                let mut details = json!({ "available": available });
                if let Some(s) = suggestion {
                    details["suggestion"] = json!(s);
                }
                ToolError::new(
                    code,
                    format!("no tool named {name:?}.{hint} Available tools: {list}"),
                )
                .with_details(details)
            }
            ValidationError::NotJson { ref reason, .. } => {
                let details = json!([{"pointer": "", "message": format!("not JSON: {reason}")}]);
                ToolError::new(code, error.to_string()).with_details(details)
            }
            ValidationError::NotAnObject { got, .. } => ToolError::new(code, error.to_string())
                .with_details(
                    json!([{"pointer": "", "message": format!("expected an object, got {got}")}]),
                ),
            ValidationError::Schema { name, errors } => {
                let listed: Vec<String> = errors
                    .iter()
                    .map(|e| {
                        let at = if e.pointer.is_empty() {
                            "(arguments)"
                        } else {
                            &e.pointer
                        };
                        format!("{at}: {}", e.message)
                    })
                    .collect();
                ToolError::new(
                    code,
                    format!(
                        "arguments do not match the schema of {name:?}: {}",
                        listed.join("; ")
                    ),
                )
                .with_details(Value::Array(
                    errors.iter().map(SchemaError::to_json).collect(),
                ))
            }
            ValidationError::Disabled(_) | ValidationError::NoSchema(_) => {
                ToolError::new(code, error.to_string())
            }
        }
    }
}

/// Turns the arguments into an object: an object stays, a string holding a JSON object is
/// parsed, `null` and blank strings become `{}` (R-3). Anything else is refused with its type.
fn normalise_arguments(args: &Value, repairs: &mut Vec<Repair>) -> Result<Value, NotObject> {
    match args {
        Value::Object(_) => Ok(args.clone()),
        Value::Null => {
            repairs.push(Repair::new(
                "empty_arguments",
                "arguments were null; used {}",
            ));
            Ok(Value::Object(Map::new()))
        }
        Value::String(s) if s.trim().is_empty() => {
            repairs.push(Repair::new(
                "empty_arguments",
                "arguments were an empty string; used {}",
            ));
            Ok(Value::Object(Map::new()))
        }
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => {
                repairs.push(Repair::new(
                    "arguments_string",
                    "arguments were a JSON string; parsed it as an object",
                ));
                Ok(v)
            }
            Ok(other) => Err(NotObject::Kind(json_kind(&other))),
            Err(e) => Err(NotObject::NotJson(e.to_string())),
        },
        other => Err(NotObject::Kind(json_kind(other))),
    }
}

/// Why arguments are not an object.
enum NotObject {
    /// They are this JSON type (a string holding JSON of that type counts as that type).
    Kind(&'static str),
    /// They are text that is not JSON: serde_json's reason.
    NotJson(String),
}

/// "a string", "an object", …: a JSON value's type as error messages name it.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Follows local `$ref`s (`#/...`) to the schema node they name, a bounded number of hops
/// (the dialects' schema writers in `toolcall-wire` follow them the same way).
pub(crate) fn resolve<'a>(node: &'a Value, root: &'a Value) -> &'a Value {
    toolcall_wire::json_schema::resolve_local_ref(node, root)
}

/// The JSON types a schema node allows, when it says (`"type"` as a string or a list).
fn allowed_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn matches_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => {
            v.is_i64()
                || v.is_u64()
                || v.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        _ => false,
    }
}

fn escape_pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Coerces `value` towards `schema` in place, recording each change.
fn coerce(
    value: &mut Value,
    schema: &Value,
    root: &Value,
    depth: usize,
    pointer: &mut String,
    repairs: &mut Vec<Repair>,
) {
    if depth > MAX_COERCE_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    let types = allowed_types(schema);
    if types.contains(&"integer")
        && !types.contains(&"number")
        && value.is_f64()
        && let Some(f) = value.as_f64()
        && f.fract() == 0.0
        && f.abs() < 9.0e15
    {
        repairs.push(Repair::new(
            "integer_from_float",
            format!(
                "{}: {f} written as integer {}",
                if pointer.is_empty() {
                    "(arguments)"
                } else {
                    pointer.as_str()
                },
                f as i64
            ),
        ));
        *value = Value::from(f as i64);
    }
    if !types.is_empty() && !types.iter().any(|t| matches_type(value, t)) {
        coerce_scalar(value, &types, pointer, repairs);
    }
    match value {
        Value::Object(map) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut to_remove = Vec::new();
            for (key, child) in map.iter_mut() {
                let Some(prop_schema) = props.get(key) else {
                    continue;
                };
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_segment(key));
                let prop_schema = resolve(prop_schema, root);
                let prop_types = allowed_types(prop_schema);
                if child.is_null()
                    && !required.contains(&key.as_str())
                    && !prop_types.is_empty()
                    && !prop_types.contains(&"null")
                {
                    to_remove.push(key.clone());
                    repairs.push(Repair::new(
                        "removed_null",
                        format!("{pointer}: null for an optional property; removed it"),
                    ));
                } else {
                    coerce(child, prop_schema, root, depth + 1, pointer, repairs);
                }
                pointer.truncate(len);
            }
            for key in to_remove {
                map.shift_remove(&key);
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items");
            for (i, item) in items.iter_mut().enumerate() {
                let item_schema = match (prefix.and_then(|p| p.get(i)), rest) {
                    (Some(s), _) => s,
                    // Draft 4-7 tuple form: `items` as an array.
                    (None, Some(Value::Array(tuple))) => match tuple.get(i) {
                        Some(s) => s,
                        None => continue,
                    },
                    (None, Some(s @ Value::Object(_))) => s,
                    _ => continue,
                };
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                coerce(item, item_schema, root, depth + 1, pointer, repairs);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// Fixes a value whose JSON type is not among `types`, when exactly one reading exists.
fn coerce_scalar(value: &mut Value, types: &[&str], pointer: &str, repairs: &mut Vec<Repair>) {
    let at = if pointer.is_empty() {
        "(arguments)"
    } else {
        pointer
    };
    let wants = |t: &str| types.contains(&t);
    if let Value::String(s) = value {
        let trimmed = s.trim();
        if wants("integer")
            && let Some(n) = parse_integer(trimmed)
        {
            repairs.push(Repair::new(
                "coerced_integer",
                format!("{at}: string {s:?} read as integer {n}"),
            ));
            *value = n;
            return;
        }
        if wants("number")
            && let Some(n) = parse_number(trimmed)
        {
            repairs.push(Repair::new(
                "coerced_number",
                format!("{at}: string {s:?} read as number {n}"),
            ));
            *value = n;
            return;
        }
        if wants("boolean") {
            let b = if trimmed.eq_ignore_ascii_case("true") {
                Some(true)
            } else if trimmed.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            };
            if let Some(b) = b {
                repairs.push(Repair::new(
                    "coerced_boolean",
                    format!("{at}: string {s:?} read as boolean {b}"),
                ));
                *value = Value::Bool(b);
                return;
            }
        }
        let looks_json = (wants("array") && trimmed.starts_with('['))
            || (wants("object") && trimmed.starts_with('{'));
        if looks_json
            && let Ok(parsed) = serde_json::from_str::<Value>(trimmed)
            && types.iter().any(|t| matches_type(&parsed, t))
        {
            repairs.push(Repair::new(
                "parsed_json_string",
                format!("{at}: string held JSON; parsed it"),
            ));
            *value = parsed;
            return;
        }
    }
    if types == ["string"] && (value.is_number() || value.is_boolean()) {
        let s = value.to_string();
        repairs.push(Repair::new(
            "coerced_string",
            format!("{at}: {s} read as string {s:?}"),
        ));
        *value = Value::String(s);
        return;
    }
    if wants("array") && !value.is_null() {
        repairs.push(Repair::new(
            "wrapped_in_array",
            format!("{at}: single value wrapped in an array"),
        ));
        let single = value.take();
        *value = Value::Array(vec![single]);
    }
}

/// A canonical integer literal: optional sign, digits, nothing else (so `"1e3"`, `"0x10"`,
/// `"12px"` are refused).
fn parse_integer(s: &str) -> Option<Value> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    s.parse::<u64>().ok().map(Value::from)
}

/// A decimal number as JSON writes it (no `inf`, `nan`, hex or trailing units).
fn parse_number(s: &str) -> Option<Value> {
    if let Some(i) = parse_integer(s) {
        return Some(i);
    }
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    serde_json::Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ToolSpec;

    // Callers tell the cases apart by variant, not by message text.
    #[test]
    fn check_call_names_each_case() {
        let r = registry();
        let mut unknown = ToolCall::new("ComputerUse", json!({}), "json");
        match r.check_call(&mut unknown) {
            Err(ValidationError::UnknownTool {
                name, suggestion, ..
            }) => {
                assert_eq!(name, "ComputerUse");
                assert_eq!(suggestion.as_deref(), Some("computer_use"));
            }
            other => panic!("{other:?}"),
        }
        let mut not_object = ToolCall::new("computer_use", json!([1]), "json");
        assert!(matches!(
            r.check_call(&mut not_object),
            Err(ValidationError::NotAnObject {
                got: "an array",
                ..
            })
        ));
        let mut bad = ToolCall::new("computer_use", json!({"action": "fly"}), "json");
        let Err(ValidationError::Schema { errors, .. }) = r.check_call(&mut bad) else {
            panic!("schema error expected");
        };
        assert_eq!(errors[0].pointer, "/action");
        let as_result = ToolError::from(ValidationError::Schema {
            name: "computer_use".into(),
            errors,
        });
        assert_eq!(as_result.code, ErrorCode::InvalidArguments);
        assert!(
            as_result.message.contains("/action"),
            "{}",
            as_result.message
        );
    }

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "computer_use",
            "Use the computer",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["screenshot", "left_click", "type"]},
                    "coordinate": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                    "text": {"type": "string"},
                    "duration": {"type": "number"},
                    "hold": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "options": {"$ref": "#/$defs/opts"}
                },
                "required": ["action"],
                "additionalProperties": false,
                "$defs": {"opts": {"type": "object", "properties": {"count": {"type": "integer"}}}}
            }),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new(
            "off",
            "disabled tool",
            json!({"type":"object"}),
        ))
        .unwrap();
        r.set_enabled("off", false).unwrap();
        r.add_spec(ToolSpec::new(
            "vista.command.start_workflow::triage",
            "",
            json!({"type":"object"}),
        ))
        .unwrap();
        r
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new(name, args, "test")
    }

    fn kinds(c: &ToolCall) -> Vec<&str> {
        c.origin.repairs.iter().map(|r| r.kind.as_str()).collect()
    }

    // covers V-1
    #[test]
    fn valid_arguments_pass_untouched() {
        let r = registry();
        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":[1,2]}),
        );
        r.validate_call(&mut c).unwrap();
        assert_eq!(
            c.arguments,
            json!({"action":"left_click","coordinate":[1,2]})
        );
        assert!(c.origin.repairs.is_empty());
        let mut c = call("vista.command.start_workflow::triage", json!({}));
        r.validate_call(&mut c).unwrap();
    }

    // covers V-3, R-10
    #[test]
    fn unknown_tool_names_the_available_tools() {
        let r = registry();
        let mut c = call("hallucinated", json!({}));
        let e = r.validate_call(&mut c).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownTool);
        assert!(e.message.contains("hallucinated"));
        assert!(e.message.contains("computer_use"));
        assert!(e.message.contains("vista.command.start_workflow::triage"));
        // disabled tools are not advertised (V-4)
        assert!(!e.message.contains("off"));
        assert_eq!(
            e.details,
            Some(json!({"available": ["computer_use", "vista.command.start_workflow::triage"]}))
        );
    }

    // covers V-1
    #[test]
    fn arguments_text_that_is_not_json_is_called_so() {
        let r = registry();
        let mut c = call("computer_use", json!(r#"{"action": "#));
        let e = r.validate_call(&mut c).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert!(e.message.contains("are not JSON"), "{}", e.message);
        assert!(!e.message.contains("got a string"), "{}", e.message);
        let e = r
            .validate_call(&mut call("computer_use", json!("[1, 2]")))
            .unwrap_err();
        assert!(e.message.contains("got an array"), "{}", e.message);
    }

    // covers R-10
    #[test]
    fn unknown_tool_suggests_but_never_substitutes() {
        let r = registry();
        for (called, meant) in [
            (
                "vista_command_start_workflow__triage",
                "vista.command.start_workflow::triage",
            ),
            ("Computer-Use", "computer_use"),
            ("triage", "vista.command.start_workflow::triage"),
        ] {
            let mut c = call(called, json!({}));
            let e = r.validate_call(&mut c).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnknownTool);
            assert!(
                e.message.contains(&format!("Did you mean {meant:?}?")),
                "{}",
                e.message
            );
            assert_eq!(e.details.unwrap()["suggestion"], meant);
            assert_eq!(c.name, called);
        }
        // a disabled tool is never suggested
        let mut r2 = Registry::new();
        for name in ["get_weather", "get_time", "search.web"] {
            r2.add_spec(ToolSpec::new(name, "", json!({"type": "object"})))
                .unwrap();
        }
        for (called, meant) in [
            ("get_wether", Some("get_weather")),
            ("get_weathers", Some("get_weather")),
            ("weather", Some("get_weather")),
            ("functions.get_weather", Some("get_weather")),
            ("default_api:get_time", Some("get_time")),
            ("functions.get_wether", Some("get_weather")),
            ("web", Some("search.web")),
            ("get", None), // a word of two tools: no guess
            ("get_tim", Some("get_time")),
            ("launch_rocket", None), // nothing close
            ("x", None),
        ] {
            let mut c = call(called, json!({}));
            let e = r2.validate_call(&mut c).unwrap_err();
            let got = e
                .details
                .as_ref()
                .and_then(|d| d.get("suggestion"))
                .and_then(Value::as_str);
            assert_eq!(got, meant, "{called}: {}", e.message);
        }
        let mut c = call("OFF", json!({}));
        let e = r.validate_call(&mut c).unwrap_err();
        assert!(!e.message.contains("Did you mean"), "{}", e.message);
    }

    // covers V-5
    #[test]
    fn whole_floats_become_integers_where_the_schema_wants_integers() {
        let r = registry();
        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":[100.0, 200.0],"duration":2.0}),
        );
        r.validate_call(&mut c).unwrap();
        assert!(c.arguments["coordinate"][0].is_i64());
        assert_eq!(c.arguments["coordinate"], json!([100, 200]));
        // `number` keeps its float
        assert!(c.arguments["duration"].is_f64());
        assert_eq!(kinds(&c), ["integer_from_float", "integer_from_float"]);
        // 1.5 is not an integer: refused, left as sent
        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":[1.5, 2]}),
        );
        assert!(r.validate_call(&mut c).is_err());
        assert_eq!(c.arguments["coordinate"][0], json!(1.5));
    }

    // covers V-3
    #[test]
    fn disabled_tool_is_refused() {
        let r = registry();
        let mut c = call("off", json!({}));
        assert_eq!(
            r.validate_call(&mut c).unwrap_err().code,
            ErrorCode::ToolDisabled
        );
    }

    // covers V-1
    #[test]
    fn non_object_arguments_are_invalid() {
        let r = registry();
        for bad in [json!([1]), json!(3), json!(true), json!("not json")] {
            let mut c = call("vista.command.start_workflow::triage", bad.clone());
            let e = r.validate_call(&mut c).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments, "{bad}");
            assert_eq!(c.arguments, bad, "arguments must be left as sent");
        }
    }

    // covers V-1, V-5
    #[test]
    fn schema_errors_carry_pointers() {
        let r = registry();
        let mut c = call(
            "computer_use",
            json!({"action":"fly","coordinate":["a",2], "extra": 1}),
        );
        let e = r.validate_call(&mut c).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        let details = e.details.unwrap();
        let pointers: Vec<&str> = details
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["pointer"].as_str().unwrap())
            .collect();
        assert!(pointers.contains(&"/action"), "{pointers:?}");
        assert!(pointers.contains(&"/coordinate/0"), "{pointers:?}");
        assert!(pointers.contains(&""), "{pointers:?}"); // additionalProperties
        assert!(e.message.contains("/coordinate/0"));
        assert!(
            details[0]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }

    // covers V-1
    #[test]
    fn missing_required_is_reported_at_root() {
        let r = registry();
        let mut c = call("computer_use", json!({}));
        let e = r.validate_call(&mut c).unwrap_err();
        assert!(e.message.contains("action"), "{}", e.message);
        assert_eq!(e.details.unwrap()[0]["pointer"], "");
    }

    // covers V-5
    #[test]
    fn string_numbers_and_booleans_are_coerced() {
        let r = registry();
        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":["100"," 200"],"duration":"1.5","hold":"True"}),
        );
        r.validate_call(&mut c).unwrap();
        assert_eq!(
            c.arguments,
            json!({"action":"left_click","coordinate":[100,200],"duration":1.5,"hold":true})
        );
        assert_eq!(
            kinds(&c),
            [
                "coerced_integer",
                "coerced_integer",
                "coerced_number",
                "coerced_boolean"
            ]
        );
        assert!(c.origin.repairs[0].message.contains("/coordinate/0"));
    }

    // covers V-5
    #[test]
    fn ambiguous_strings_are_not_coerced() {
        let r = registry();
        for bad in ["12px", "1e3", "0x10", "", "1.5"] {
            let mut c = call(
                "computer_use",
                json!({"action":"left_click","coordinate":[bad, 1]}),
            );
            let e = r.validate_call(&mut c).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments, "{bad:?}");
            assert_eq!(c.arguments["coordinate"][0], json!(bad));
            assert!(c.origin.repairs.is_empty());
        }
        let mut c = call("computer_use", json!({"action":"screenshot","hold":"yes"}));
        assert!(r.validate_call(&mut c).is_err());
    }

    // covers V-5
    #[test]
    fn single_value_is_wrapped_and_json_strings_parsed() {
        let r = registry();
        let mut c = call("computer_use", json!({"action":"screenshot","tags":"x"}));
        r.validate_call(&mut c).unwrap();
        assert_eq!(c.arguments["tags"], json!(["x"]));
        assert_eq!(kinds(&c), ["wrapped_in_array"]);

        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":"[3, 4]"}),
        );
        r.validate_call(&mut c).unwrap();
        assert_eq!(c.arguments["coordinate"], json!([3, 4]));
        assert_eq!(kinds(&c), ["parsed_json_string"]);
    }

    // covers V-5
    #[test]
    fn coercion_that_does_not_validate_is_discarded() {
        let r = registry();
        // wrapping 5 gives [5], which still violates minItems: the call fails as sent
        let mut c = call(
            "computer_use",
            json!({"action":"left_click","coordinate":5}),
        );
        let e = r.validate_call(&mut c).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert_eq!(c.arguments["coordinate"], json!(5));
        assert!(c.origin.repairs.is_empty());
        assert_eq!(e.details.unwrap()[0]["pointer"], "/coordinate");
    }

    // covers V-5
    #[test]
    fn arguments_as_string_and_empty_are_normalised() {
        let r = registry();
        let mut c = call("computer_use", json!("{\"action\":\"screenshot\"}"));
        r.validate_call(&mut c).unwrap();
        assert_eq!(c.arguments, json!({"action":"screenshot"}));
        assert_eq!(kinds(&c), ["arguments_string"]);
        for empty in [Value::Null, json!(""), json!("  ")] {
            let mut c = call("vista.command.start_workflow::triage", empty);
            r.validate_call(&mut c).unwrap();
            assert_eq!(c.arguments, json!({})); // R-3
            assert_eq!(kinds(&c), ["empty_arguments"]);
        }
    }

    // covers V-5
    #[test]
    fn null_optional_property_is_removed_required_is_not() {
        let r = registry();
        let mut c = call("computer_use", json!({"action":"screenshot","text":null}));
        r.validate_call(&mut c).unwrap();
        assert_eq!(c.arguments, json!({"action":"screenshot"}));
        assert_eq!(kinds(&c), ["removed_null"]);
        let mut c = call("computer_use", json!({"action":null}));
        assert!(r.validate_call(&mut c).is_err());
    }

    // covers V-5
    #[test]
    fn numbers_become_strings_and_refs_are_followed() {
        let r = registry();
        let mut c = call(
            "computer_use",
            json!({"action":"type","text":42,"options":{"count":"3"}}),
        );
        r.validate_call(&mut c).unwrap();
        assert_eq!(
            c.arguments,
            json!({"action":"type","text":"42","options":{"count":3}})
        );
        assert_eq!(kinds(&c), ["coerced_string", "coerced_integer"]);
    }

    // covers V-5, R-6
    #[test]
    fn deep_nesting_is_bounded() {
        let mut schema = json!({"type":"integer"});
        let mut value = json!("1");
        for _ in 0..100 {
            schema = json!({"type":"object","properties":{"a":schema}});
            value = json!({ "a": value });
        }
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new("deep", "", schema)).unwrap();
        let mut c = call("deep", value);
        // too deep to coerce: refused, not crashed
        assert_eq!(
            r.validate_call(&mut c).unwrap_err().code,
            ErrorCode::InvalidArguments
        );
    }

    // covers V-5
    #[test]
    fn recursive_schema_is_followed_through_root_ref() {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "tree",
            "",
            json!({"type":"object","properties":{"k":{"type":"integer"}, "m": {"$ref": "#"}}}),
        ))
        .unwrap();
        let mut c = call("tree", json!({"m": {"m": {"k": "5"}}}));
        r.validate_call(&mut c).unwrap();
        assert_eq!(c.arguments, json!({"m": {"m": {"k": 5}}}));
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1.0e6f64..1.0e6).prop_map(Value::from),
            prop::sample::select(vec![
                "100",
                " -7 ",
                "1.5",
                "true",
                "False",
                "[1, 2]",
                "{\"a\":1}",
                "x",
                "",
                "1e3",
                "screenshot",
                "left_click",
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "action",
                            "coordinate",
                            "text",
                            "duration",
                            "hold",
                            "tags",
                            "options",
                            "count",
                            "other",
                        ]),
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        // covers R-6, V-1, V-5: whatever the model sends, validation never panics, and an
        // accepted call always satisfies the schema; a refused call keeps its arguments.
        #[test]
        fn accepted_calls_always_validate(args in json_value()) {
            let r = registry();
            let mut c = call("computer_use", args.clone());
            match r.validate_call(&mut c) {
                Ok(()) => {
                    proptest::prop_assert!(r.schema_errors("computer_use", &c.arguments).is_empty());
                    proptest::prop_assert!(c.arguments.is_object());
                }
                Err(e) => {
                    proptest::prop_assert_eq!(c.arguments, args);
                    proptest::prop_assert!(c.origin.repairs.is_empty());
                    proptest::prop_assert!(matches!(e.code, ErrorCode::InvalidArguments));
                }
            }
        }
    }
}
