//! Example arguments synthesised from a tool's schema, for the worked example of a text-mode
//! system prompt (O-2; the prompt itself is rendered by the parser crate next to each format's
//! reader): `examples`/`default`/`const`, first `enum` value, else a placeholder of the right
//! type.

use serde_json::{Map, Value, json};

/// Deepest schema nesting followed when synthesising example arguments.
const MAX_EXAMPLE_DEPTH: usize = 8;

/// Example arguments for a tool: its required properties (or, when none is required, its
/// first property), each with a value synthesised from its schema.
pub fn example_arguments(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        if required.contains(&name.as_str()) {
            out.insert(name.clone(), example_value(prop, schema, 0));
        }
    }
    if out.is_empty()
        && let Some((name, prop)) = props.iter().next()
    {
        out.insert(name.clone(), example_value(prop, schema, 0));
    }
    out
}

fn example_value(schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = crate::validate::resolve(schema, root);
    if let Some(first) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["default", "const"] {
        if let Some(v) = schema.get(key) {
            return v.clone();
        }
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        && depth < MAX_EXAMPLE_DEPTH
    {
        return example_value(first, root, depth + 1);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let minimum = schema.get("minimum").and_then(Value::as_f64);
    match ty {
        "integer" => json!(minimum.map_or(1, |m| m.ceil().max(-1e15) as i64)),
        "number" => json!(minimum.unwrap_or(1.5)),
        "boolean" => json!(true),
        "null" => Value::Null,
        "array" => {
            let count = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 4) as usize;
            if depth >= MAX_EXAMPLE_DEPTH {
                return json!([]);
            }
            let items: Vec<Value> = match schema.get("prefixItems").and_then(Value::as_array) {
                Some(prefix) => prefix
                    .iter()
                    .map(|s| example_value(s, root, depth + 1))
                    .collect(),
                None => {
                    let item = schema.get("items").unwrap_or(&Value::Null);
                    (0..count)
                        .map(|_| example_value(item, root, depth + 1))
                        .collect()
                }
            };
            Value::Array(items)
        }
        "object" => {
            if depth >= MAX_EXAMPLE_DEPTH {
                return json!({});
            }
            let inner = example_arguments(schema);
            Value::Object(inner)
        }
        _ => json!("example"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers O-2
    #[test]
    fn examples_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "coordinate": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2},
                "n": {"type": "number"},
                "flag": {"type": ["boolean", "null"]},
                "obj": {"type": "object", "properties": {"k": {"type": "string", "default": "v"}}, "required": ["k"]},
                "ref": {"$ref": "#/$defs/r"},
                "optional": {"type": "string"}
            },
            "required": ["coordinate", "n", "flag", "obj", "ref"],
            "$defs": {"r": {"const": 7}}
        });
        assert_eq!(
            Value::Object(example_arguments(&schema)),
            json!({"coordinate": [0, 0], "n": 1.5, "flag": true, "obj": {"k": "v"}, "ref": 7})
        );
        // nothing required: the first property still shows the syntax
        assert_eq!(
            Value::Object(example_arguments(
                &json!({"properties": {"q": {"type": "string"}}})
            )),
            json!({"q": "example"})
        );
    }
}
