//! Gemini's OpenAPI 3.0 schema subset, for a function declaration's `parameters` (the
//! classic field every Gemini SDK and server reads; an upstream of this crate gets the
//! schema unchanged as `parametersJsonSchema` instead).
//!
//! Kept keywords: `type`, `format` (only `enum`, `date-time`, `int32`, `int64`, `float`,
//! `double`), `title`, `description`, `nullable`, `enum` (strings only), `properties`,
//! `required`, `items`, `minItems`, `maxItems`, `minimum`, `maximum`, `minLength`,
//! `maxLength`, `pattern`, `minProperties`, `maxProperties`, `anyOf`, `default`, `example`,
//! `propertyOrdering`. Rewritten: local `$ref`s are inlined (bounded depth), `oneOf` becomes
//! `anyOf`, `type: [T, "null"]` becomes `type: T, nullable: true`, a string `const` becomes a
//! one-value `enum`, `examples` becomes `example`, non-string enums are moved into the
//! description. Dropped: everything else (`$schema`, `$id`, `$defs`, `additionalProperties`,
//! `allOf`, `not`, `exclusiveMinimum`, ...).

use serde_json::{Map, Value, json};

/// Deepest schema nesting converted; deeper parts become a bare `{"type":"object"}`.
const MAX_DEPTH: usize = 16;

const COPIED: &[&str] = &[
    "title",
    "description",
    "nullable",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "default",
    "example",
    "propertyOrdering",
];

const FORMATS: &[&str] = &["enum", "date-time", "int32", "int64", "float", "double"];

/// A JSON Schema as Gemini's OpenAPI subset (see the module doc).
pub fn openapi_schema(schema: &Value) -> Value {
    convert(schema, schema, 0)
}

fn convert(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return json!({"type": "object"});
    }
    let schema = crate::json_schema::resolve_local_ref(schema, root);
    let Some(src) = schema.as_object() else {
        return json!({});
    };
    let mut out = Map::new();

    match src.get("type") {
        Some(Value::String(t)) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::Array(ts)) => {
            let non_null: Vec<&Value> = ts.iter().filter(|t| t.as_str() != Some("null")).collect();
            if non_null.len() < ts.len() {
                out.insert("nullable".into(), json!(true));
            }
            if let [single] = non_null.as_slice() {
                out.insert("type".into(), (*single).clone());
            } else if non_null.len() > 1 {
                let any: Vec<Value> = non_null.iter().map(|t| json!({"type": t})).collect();
                out.insert("anyOf".into(), Value::Array(any));
            }
        }
        _ => {}
    }
    for key in COPIED {
        if let Some(v) = src.get(*key) {
            out.insert((*key).into(), v.clone());
        }
    }
    if let Some(f) = src.get("format").and_then(Value::as_str)
        && FORMATS.contains(&f)
    {
        out.insert("format".into(), json!(f));
    }
    if !out.contains_key("example")
        && let Some(first) = src
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
    {
        out.insert("example".into(), first.clone());
    }

    let enum_values = src
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| src.get("const").map(|c| vec![c.clone()]));
    if let Some(values) = enum_values {
        if values.iter().all(Value::is_string) {
            out.insert("enum".into(), Value::Array(values));
            out.entry("type").or_insert_with(|| json!("string"));
        } else {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("One of: {}.", listed.join(", "));
            let desc = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {note}"),
                _ => note,
            };
            out.insert("description".into(), json!(desc));
        }
    }

    if let Some(props) = src.get("properties").and_then(Value::as_object) {
        let converted: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), convert(v, root, depth + 1)))
            .collect();
        if let Some(req) = src.get("required").and_then(Value::as_array) {
            let req: Vec<Value> = req
                .iter()
                .filter(|r| r.as_str().is_some_and(|r| converted.contains_key(r)))
                .cloned()
                .collect();
            if !req.is_empty() {
                out.insert("required".into(), Value::Array(req));
            }
        }
        out.insert("properties".into(), Value::Object(converted));
        out.entry("type").or_insert_with(|| json!("object"));
    }
    match src.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert("items".into(), convert(items, root, depth + 1));
        }
        // Tuples have no Gemini form: use the first entry's schema for every item.
        Some(Value::Array(tuple)) => {
            if let Some(first) = tuple.first() {
                out.insert("items".into(), convert(first, root, depth + 1));
            }
        }
        _ => {
            if let Some(first) = src
                .get("prefixItems")
                .and_then(Value::as_array)
                .and_then(|p| p.first())
            {
                out.insert("items".into(), convert(first, root, depth + 1));
            }
        }
    }
    if let Some(alts) = src
        .get("anyOf")
        .or_else(|| src.get("oneOf"))
        .and_then(Value::as_array)
    {
        let alts: Vec<Value> = alts.iter().map(|a| convert(a, root, depth + 1)).collect();
        out.insert("anyOf".into(), Value::Array(alts));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers O-1
    #[test]
    fn unsupported_keywords_are_dropped_and_rewritten() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "action": {"type": "string", "enum": ["screenshot", "left_click"], "description": "What to do"},
                "coordinate": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
                "note": {"type": ["string", "null"], "format": "uri", "examples": ["x"]},
                "mode": {"const": "fast"},
                "level": {"type": "integer", "enum": [1, 2, 3], "exclusiveMinimum": 0},
                "target": {"$ref": "#/$defs/target"},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["action", "ghost"],
            "$defs": {"target": {"type": "object", "properties": {"id": {"type": "string", "format": "date-time"}}}}
        });
        assert_eq!(
            openapi_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "description": "What to do", "enum": ["screenshot", "left_click"]},
                    "coordinate": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer"}},
                    "note": {"nullable": true, "type": "string", "example": "x"},
                    "mode": {"enum": ["fast"], "type": "string"},
                    "level": {"type": "integer", "description": "One of: 1, 2, 3."},
                    "target": {"type": "object", "properties": {"id": {"type": "string", "format": "date-time"}}},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
                },
                "required": ["action"]
            })
        );
    }

    // covers O-1
    #[test]
    fn recursive_refs_are_bounded() {
        let schema = json!({"type":"object","properties":{"child":{"$ref":"#"}}});
        let out = openapi_schema(&schema);
        let mut node = &out;
        let mut depth = 0;
        while let Some(next) = node.pointer("/properties/child") {
            node = next;
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH + 1);
        assert_eq!(node, &json!({"type":"object"}));
    }
}
