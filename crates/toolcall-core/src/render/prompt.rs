//! System-prompt instructions for models without native tool calling (O-2).
//!
//! For a chosen text format the instructions say how to write a call, list every enabled tool
//! (V-4) with its description and arguments schema, and show a worked example for the first
//! tool with arguments synthesised from its schema (`examples`/`default`/`const`, first `enum`
//! value, else a placeholder of the right type). The syntax shown is exactly what the parser's
//! module for that format reads.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::registry::Registry;
use crate::spec::ToolSpec;

/// Deepest schema nesting followed when synthesising example arguments.
const MAX_EXAMPLE_DEPTH: usize = 8;

/// A text format a model can be told to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptFormat {
    /// ```` ```json {"tools":[{"name","arguments"}]} ``` ```` (F-JSON-1).
    ToolsEnvelope,
    /// `<tool_call>{"name","arguments"}</tool_call>`.
    Hermes,
    /// `TOOL_CALL: name` + `FIELD: value` lines (F-KV-1).
    KeyValue,
    /// `name(key="v")` (F-PY-1).
    CallSyntax,
    /// `[name(key="v"), other()]`.
    Pythonic,
    /// `[TOOL_CALLS][{"name","arguments"}]`.
    Mistral,
    /// `{"name","parameters"}`.
    Llama,
    /// `{"name","arguments"}`.
    Json,
    /// `{"session_id","command","args","text"}` (F-ACT-1).
    ActionResponse,
}

impl PromptFormat {
    pub const ALL: [PromptFormat; 9] = [
        PromptFormat::ToolsEnvelope,
        PromptFormat::Hermes,
        PromptFormat::KeyValue,
        PromptFormat::CallSyntax,
        PromptFormat::Pythonic,
        PromptFormat::Mistral,
        PromptFormat::Llama,
        PromptFormat::Json,
        PromptFormat::ActionResponse,
    ];

    /// The format id shared with the parser.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptFormat::ToolsEnvelope => "tools_envelope",
            PromptFormat::Hermes => "hermes",
            PromptFormat::KeyValue => "key_value",
            PromptFormat::CallSyntax => "call_syntax",
            PromptFormat::Pythonic => "pythonic",
            PromptFormat::Mistral => "mistral",
            PromptFormat::Llama => "llama",
            PromptFormat::Json => "json",
            PromptFormat::ActionResponse => "action_response",
        }
    }
}

impl fmt::Display for PromptFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PromptFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PromptFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                let ids: Vec<&str> = PromptFormat::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown text format {s:?}; expected one of {}",
                    ids.join(", ")
                )
            })
    }
}

/// The system-prompt instructions for `format`, listing the registry's enabled tools.
pub fn render_prompt(registry: &Registry, format: PromptFormat) -> String {
    let tools: Vec<&ToolSpec> = registry.enabled_specs().collect();
    let Some(first) = tools.first() else {
        return "No tools are available in this conversation. Reply in plain text.\n".to_owned();
    };
    let mut out = String::new();
    out.push_str("You can call tools. ");
    out.push_str(how_to_call(format));
    out.push_str("\n\n## Available tools\n");
    for spec in &tools {
        let _ = write!(out, "\n- `{}`", spec.name);
        if !spec.description.is_empty() {
            // Continuation lines stay inside the list item.
            let _ = write!(out, ": {}", spec.description.trim().replace('\n', "\n  "));
        }
        let _ = write!(
            out,
            "\n  arguments (JSON Schema): {}",
            super::object_schema(spec)
        );
    }
    let args = example_arguments(&first.parameters);
    let _ = write!(
        out,
        "\n\n## Example\n\nTo call `{}`{}, reply with:\n\n{}\n",
        first.name,
        if args.is_empty() {
            ""
        } else {
            " with these arguments"
        },
        example_call(format, &first.name, &args)
    );
    out.push_str("\n## Rules\n\n");
    out.push_str("- Call only the tools listed above, with exactly their names.\n");
    out.push_str(
        "- Give every required argument, with the type its schema says; give no other arguments.\n",
    );
    out.push_str(multi_call_rule(format));
    out.push_str(
        "- Each call gets a result in the next message. If no tool is needed, answer in plain text without any call syntax.\n",
    );
    out
}

fn how_to_call(format: PromptFormat) -> &'static str {
    match format {
        PromptFormat::ToolsEnvelope => {
            "To call tools, include one fenced ```json block holding an object with a \"tools\" array; each entry has the tool's \"name\" and an \"arguments\" object."
        }
        PromptFormat::Hermes => {
            "To call a tool, write <tool_call>{\"name\": TOOL_NAME, \"arguments\": {...}}</tool_call> with a JSON object inside the tags."
        }
        PromptFormat::KeyValue => {
            "To call a tool, write a line `TOOL_CALL: tool_name`, then one line `ARGUMENT_NAME: value` per argument (the argument name in capitals). Arrays and objects are written as JSON."
        }
        PromptFormat::CallSyntax => {
            "To call a tool, write it like a function call: tool_name(argument=\"value\", other=1). Strings are double-quoted; numbers, true, false, arrays and objects are written as JSON."
        }
        PromptFormat::Pythonic => {
            "To call tools, write a Python list of calls: [tool_name(argument=\"value\"), other_tool()]. Use Python literals: strings in double quotes, True/False/None, lists and dicts."
        }
        PromptFormat::Mistral => {
            "To call tools, write [TOOL_CALLS] followed by a JSON array of calls, each {\"name\": TOOL_NAME, \"arguments\": {...}}."
        }
        PromptFormat::Llama => {
            "To call a tool, reply with only a JSON object {\"name\": TOOL_NAME, \"parameters\": {...}}."
        }
        PromptFormat::Json => {
            "To call a tool, reply with only a JSON object {\"name\": TOOL_NAME, \"arguments\": {...}}."
        }
        PromptFormat::ActionResponse => {
            "Always reply with one JSON object. To act, use {\"session_id\": the session id from the request, \"command\": TOOL_NAME, \"args\": {...}, \"text\": what to say to the user}. To only talk, reply {\"text\": \"...\"}."
        }
    }
}

fn multi_call_rule(format: PromptFormat) -> &'static str {
    match format {
        PromptFormat::ToolsEnvelope => {
            "- To make several calls, put several entries in the \"tools\" array; they run in that order.\n"
        }
        PromptFormat::Hermes => {
            "- To make several calls, write several <tool_call> blocks; they run in that order.\n"
        }
        PromptFormat::KeyValue => {
            "- To make several calls, start each with its own TOOL_CALL line; they run in that order. Friendly text may follow after a blank line.\n"
        }
        PromptFormat::CallSyntax => {
            "- To make several calls, write each on its own line; they run in that order.\n"
        }
        PromptFormat::Pythonic | PromptFormat::Mistral => {
            "- To make several calls, put them all in the one list; they run in that order.\n"
        }
        PromptFormat::Llama | PromptFormat::Json => "- Make one call per reply.\n",
        PromptFormat::ActionResponse => {
            "- One command per reply; \"text\" is spoken to the user and may be empty.\n"
        }
    }
}

/// One call written in `format`.
pub fn example_call(format: PromptFormat, name: &str, args: &Map<String, Value>) -> String {
    let args_json = Value::Object(args.clone());
    match format {
        PromptFormat::ToolsEnvelope => format!(
            "```json\n{}\n```",
            json!({"tools": [{"name": name, "arguments": args_json}]})
        ),
        PromptFormat::Hermes => format!(
            "<tool_call>{}</tool_call>",
            json!({"name": name, "arguments": args_json})
        ),
        PromptFormat::KeyValue => {
            let mut s = format!("TOOL_CALL: {name}");
            for (k, v) in args {
                let value = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = write!(s, "\n{}: {value}", k.to_uppercase());
            }
            s
        }
        PromptFormat::CallSyntax => format!("{name}({})", keyword_args(args, false)),
        PromptFormat::Pythonic => format!("[{name}({})]", keyword_args(args, true)),
        PromptFormat::Mistral => format!(
            "[TOOL_CALLS]{}",
            json!([{"name": name, "arguments": args_json}])
        ),
        PromptFormat::Llama => json!({"name": name, "parameters": args_json}).to_string(),
        PromptFormat::Json => json!({"name": name, "arguments": args_json}).to_string(),
        PromptFormat::ActionResponse => json!({
            "session_id": "session_123",
            "command": name,
            "args": args_json,
            "text": "Doing it now."
        })
        .to_string(),
    }
}

fn keyword_args(args: &Map<String, Value>, python: bool) -> String {
    args.iter()
        .map(|(k, v)| {
            let v = if python {
                python_literal(v, 0)
            } else {
                v.to_string()
            };
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn python_literal(v: &Value, depth: usize) -> String {
    if depth > MAX_EXAMPLE_DEPTH {
        return "None".to_owned();
    }
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|i| python_literal(i, depth + 1))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", json!(k), python_literal(v, depth + 1)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

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

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "computer_use",
            "Use the computer: screenshots, clicks, typing.",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["screenshot", "left_click", "type"]},
                    "coordinate": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2},
                    "text": {"type": "string"}
                },
                "required": ["action"]
            }),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new(
            "highlight_object",
            "Highlight an object in view\nwith a box",
            json!({"type":"object","properties":{"object":{"type":"string","examples":["cup"]}},"required":["object"]}),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new("secret_tool", "Not offered", json!({})))
            .unwrap();
        r.set_enabled("secret_tool", false).unwrap();
        r
    }

    fn example_of(p: &str) -> String {
        let start = p.find("reply with:\n\n").unwrap() + "reply with:\n\n".len();
        let end = p[start..].find("\n\n## Rules").unwrap() + start;
        p[start..end].to_owned()
    }

    // covers O-2, V-4
    #[test]
    fn every_format_lists_enabled_tools_and_a_real_example() {
        let r = registry();
        let expected = [
            (
                PromptFormat::ToolsEnvelope,
                "```json\n{\"tools\":[{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}]}\n```",
            ),
            (
                PromptFormat::Hermes,
                "<tool_call>{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}</tool_call>",
            ),
            (
                PromptFormat::KeyValue,
                "TOOL_CALL: computer_use\nACTION: screenshot",
            ),
            (
                PromptFormat::CallSyntax,
                "computer_use(action=\"screenshot\")",
            ),
            (
                PromptFormat::Pythonic,
                "[computer_use(action=\"screenshot\")]",
            ),
            (
                PromptFormat::Mistral,
                "[TOOL_CALLS][{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}]",
            ),
            (
                PromptFormat::Llama,
                "{\"name\":\"computer_use\",\"parameters\":{\"action\":\"screenshot\"}}",
            ),
            (
                PromptFormat::Json,
                "{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}",
            ),
            (
                PromptFormat::ActionResponse,
                "{\"session_id\":\"session_123\",\"command\":\"computer_use\",\"args\":{\"action\":\"screenshot\"},\"text\":\"Doing it now.\"}",
            ),
        ];
        for (format, example) in expected {
            let p = render_prompt(&r, format);
            assert_eq!(example_of(&p), example, "{format}");
            assert!(p.contains("- `computer_use`: Use the computer"), "{format}");
            assert!(
                p.contains("- `highlight_object`: Highlight an object in view\n  with a box\n"),
                "{format}"
            );
            assert!(
                p.contains("\"enum\":[\"screenshot\",\"left_click\",\"type\"]"),
                "{format}"
            );
            assert!(
                !p.contains("secret_tool"),
                "{format}: disabled tool offered"
            );
            assert_eq!(format.as_str().parse::<PromptFormat>().unwrap(), format);
        }
    }

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
        let args = example_arguments(&schema);
        assert_eq!(
            example_call(PromptFormat::Pythonic, "f", &args),
            "[f(coordinate=[0, 0], n=1.5, flag=True, obj={\"k\": \"v\"}, ref=7)]"
        );
        assert_eq!(
            example_call(PromptFormat::KeyValue, "f", &args),
            "TOOL_CALL: f\nCOORDINATE: [0,0]\nN: 1.5\nFLAG: true\nOBJ: {\"k\":\"v\"}\nREF: 7"
        );
    }

    // covers O-2
    #[test]
    fn first_enabled_tool_drives_the_example_and_empty_registry_says_so() {
        let mut r = registry();
        r.set_enabled("computer_use", false).unwrap();
        let p = render_prompt(&r, PromptFormat::KeyValue);
        assert_eq!(example_of(&p), "TOOL_CALL: highlight_object\nOBJECT: cup");
        assert!(!p.contains("computer_use"));
        let empty = Registry::new();
        assert!(render_prompt(&empty, PromptFormat::Json).contains("No tools"));
        assert!(
            "yaml"
                .parse::<PromptFormat>()
                .unwrap_err()
                .contains("hermes")
        );
    }
}
