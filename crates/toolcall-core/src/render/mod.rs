//! Offering the registry to models.
//!
//! O-1: the ENABLED tools (V-4) as OpenAI Chat `tools`, Responses API `tools`, Gemini
//! `functionDeclarations` (schema converted to Gemini's OpenAPI subset) and Anthropic
//! `tools`. Each shape is written by its dialect's module in `toolcall-wire` from the
//! neutral declaration; nothing here builds provider JSON. Names that providers forbid are
//! sent as aliases from a [`NameMap`]; the model client maps the names of returned calls
//! back with [`NameMap::from_provider`].
//!
//! O-2: example arguments synthesised from a schema, in [`prompt`], for the text-mode
//! system prompts the parser crate renders next to each format's reader.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};
use toolcall_wire::chat::ChatTool;
use toolcall_wire::{anthropic, chat, gemini, responses};

use crate::registry::Registry;
use crate::spec::ToolSpec;

pub mod names;
pub mod prompt;

pub use names::{NameMap, is_provider_safe};

/// A native tool-calling API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Chat Completions `tools`: `{"type":"function","function":{...}}`.
    OpenAiChat,
    /// Responses API `tools`: `{"type":"function","name",...}`.
    Responses,
    /// Gemini `functionDeclarations`.
    Gemini,
    /// Anthropic Messages `tools`: `{"name","description","input_schema"}`.
    Anthropic,
}

impl Provider {
    pub const ALL: [Provider; 4] = [
        Provider::OpenAiChat,
        Provider::Responses,
        Provider::Gemini,
        Provider::Anthropic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai",
            Provider::Responses => "responses",
            Provider::Gemini => "gemini",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" | "openai_chat" | "chat" => Ok(Provider::OpenAiChat),
            "responses" | "openai_responses" => Ok(Provider::Responses),
            "gemini" => Ok(Provider::Gemini),
            "anthropic" | "claude" => Ok(Provider::Anthropic),
            other => Err(format!(
                "unknown provider {other:?}; expected openai, responses, gemini or anthropic"
            )),
        }
    }
}

/// The enabled tools in `provider`'s shape, names aliased through `names`.
pub fn render_tools(registry: &Registry, provider: Provider, names: &NameMap) -> Value {
    let tools = registry.enabled_specs();
    match provider {
        Provider::OpenAiChat => Value::Array(tools.map(|s| openai_chat_tool(s, names)).collect()),
        Provider::Responses => Value::Array(tools.map(|s| responses_tool(s, names)).collect()),
        Provider::Gemini => {
            let declared: Vec<ChatTool> = tools.map(|s| gemini_tool(s, names)).collect();
            gemini::function_declarations(&declared)
        }
        Provider::Anthropic => Value::Array(tools.map(|s| anthropic_tool(s, names)).collect()),
    }
}

/// [`render_tools`] with a [`NameMap`] built from the registry, returned for mapping back.
pub fn render(registry: &Registry, provider: Provider) -> (Value, NameMap) {
    let names = NameMap::new(registry);
    (render_tools(registry, provider, &names), names)
}

/// The parameters schema as providers expect it: an object schema with `properties`.
pub fn object_schema(spec: &ToolSpec) -> Value {
    let mut schema = spec.parameters.clone();
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
    }
    schema
}

/// `spec` as the neutral declaration the wire dialects write: its provider name, its
/// description and [`object_schema`].
pub fn neutral_tool(spec: &ToolSpec, names: &NameMap) -> ChatTool {
    ChatTool::function(
        names.to_provider(&spec.name),
        Some(spec.description.clone()),
        object_schema(spec),
    )
}

/// For Gemini the schema as declared: its OpenAPI subset is written from it (a schema with
/// no properties gets no `parameters`).
fn gemini_tool(spec: &ToolSpec, names: &NameMap) -> ChatTool {
    ChatTool::function(
        names.to_provider(&spec.name),
        Some(spec.description.clone()),
        spec.parameters.clone(),
    )
}

pub fn openai_chat_tool(spec: &ToolSpec, names: &NameMap) -> Value {
    chat::tool_declaration(&neutral_tool(spec, names))
}

pub fn responses_tool(spec: &ToolSpec, names: &NameMap) -> Value {
    responses::tool_declaration(&neutral_tool(spec, names))
}

pub fn anthropic_tool(spec: &ToolSpec, names: &NameMap) -> Value {
    anthropic::tool_declaration(&neutral_tool(spec, names))
}

/// `spec` as a Gemini `functionDeclarations` entry (schema in Gemini's OpenAPI subset).
pub fn gemini_declaration(spec: &ToolSpec, names: &NameMap) -> Value {
    gemini::function_declaration(&gemini_tool(spec, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "vista.command.start_workflow::triage",
            "Start the triage workflow",
            json!({"type":"object","properties":{"patient":{"type":"string"}},"required":["patient"]}),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new("screenshot", "Take a screenshot", json!({})))
            .unwrap();
        r.add_spec(ToolSpec::new("hidden", "Disabled", json!({})))
            .unwrap();
        r.set_enabled("hidden", false).unwrap();
        r
    }

    const TRIAGE: &str = "vista_command_start_workflow__triage";

    // covers O-1, V-4
    #[test]
    fn openai_chat_shape() {
        let (v, names) = render(&registry(), Provider::OpenAiChat);
        assert_eq!(
            v,
            json!([
                {"type":"function","function":{"name":"screenshot","description":"Take a screenshot",
                  "parameters":{"type":"object","properties":{}}}},
                {"type":"function","function":{"name":TRIAGE,"description":"Start the triage workflow",
                  "parameters":{"type":"object","properties":{"patient":{"type":"string"}},"required":["patient"]}}}
            ])
        );
        assert_eq!(
            names.from_provider(TRIAGE),
            Some("vista.command.start_workflow::triage")
        );
    }

    // covers O-1, V-4
    #[test]
    fn responses_shape() {
        let (v, _) = render(&registry(), Provider::Responses);
        assert_eq!(
            v,
            json!([
                {"type":"function","name":"screenshot","description":"Take a screenshot",
                 "parameters":{"type":"object","properties":{}}},
                {"type":"function","name":TRIAGE,"description":"Start the triage workflow",
                 "parameters":{"type":"object","properties":{"patient":{"type":"string"}},"required":["patient"]}}
            ])
        );
    }

    // covers O-1, V-4
    #[test]
    fn anthropic_shape() {
        let (v, _) = render(&registry(), Provider::Anthropic);
        assert_eq!(
            v,
            json!([
                {"name":"screenshot","description":"Take a screenshot",
                 "input_schema":{"type":"object","properties":{}}},
                {"name":TRIAGE,"description":"Start the triage workflow",
                 "input_schema":{"type":"object","properties":{"patient":{"type":"string"}},"required":["patient"]}}
            ])
        );
    }

    // covers O-1, V-4
    #[test]
    fn gemini_shape() {
        let (v, _) = render(&registry(), Provider::Gemini);
        assert_eq!(
            v,
            json!({"functionDeclarations":[
                {"name":"screenshot","description":"Take a screenshot"},
                {"name":TRIAGE,"description":"Start the triage workflow",
                 "parameters":{"type":"object","properties":{"patient":{"type":"string"}},"required":["patient"]}}
            ]})
        );
    }

    // covers O-1
    #[test]
    fn provider_names_parse() {
        for p in Provider::ALL {
            assert_eq!(p.as_str().parse::<Provider>().unwrap(), p);
        }
        assert!("bard".parse::<Provider>().unwrap_err().contains("openai"));
    }
}
