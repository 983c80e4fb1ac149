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
use toolcall_wire::Api;
use toolcall_wire::chat::ChatTool;

use crate::registry::Registry;
use crate::spec::ToolSpec;

pub mod names;
pub mod prompt;

pub use names::{NameMap, is_provider_safe};

/// A native tool-calling API to render tools for: one of toolcall-wire's registered
/// dialects, so a dialect added there is rendered here with no change. Found by the
/// dialect's name (`chat`, `responses`, `anthropic`, `gemini`) or by the names
/// `toolcall tools render --provider` has always taken (`openai`, `openai_chat`,
/// `openai_responses`, `claude`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider(Api);

impl Provider {
    /// OpenAI Chat Completions `tools`: `{"type":"function","function":{...}}`.
    pub const OPENAI_CHAT: Provider = Provider(Api::CHAT);

    /// Every registered dialect, in registration order.
    pub fn all() -> impl Iterator<Item = Provider> {
        Api::names()
            .into_iter()
            .filter_map(Api::from_name)
            .map(Provider)
    }

    /// The wire dialect whose declarations this renders.
    pub fn api(self) -> Api {
        self.0
    }

    pub fn as_str(self) -> &'static str {
        self.0.name()
    }
}

impl From<Api> for Provider {
    fn from(api: Api) -> Self {
        Provider(api)
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
        let name = match s {
            "openai" | "openai_chat" => "chat",
            "openai_responses" => "responses",
            "claude" => "anthropic",
            other => other,
        };
        Api::from_name(name).map(Provider).ok_or_else(|| {
            format!(
                "unknown provider {s:?}; expected openai, {}",
                Api::names().join(", ")
            )
        })
    }
}

/// The enabled tools in `provider`'s shape, names aliased through `names`. Gemini takes the
/// schema as declared (its OpenAPI subset leaves out a schema without properties); the
/// others an object schema with `properties` ([`object_schema`]).
pub fn render_tools(registry: &Registry, provider: Provider, names: &NameMap) -> Value {
    let declared: Vec<ChatTool> = registry
        .enabled_specs()
        .map(|s| neutral_tool(s, names))
        .collect();
    provider.0.dialect().declare_tools(&declared)
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
        let (v, names) = render(&registry(), Provider::OPENAI_CHAT);
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
        let (v, _) = render(&registry(), "responses".parse::<Provider>().unwrap());
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
        let (v, _) = render(&registry(), "anthropic".parse::<Provider>().unwrap());
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
        let (v, _) = render(&registry(), "gemini".parse::<Provider>().unwrap());
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
        let all: Vec<Provider> = Provider::all().collect();
        assert_eq!(all.len(), toolcall_wire::DIALECTS.len());
        for p in all {
            assert_eq!(p.as_str().parse::<Provider>().unwrap(), p);
        }
        for (old, now) in [
            ("openai", "chat"),
            ("openai_chat", "chat"),
            ("openai_responses", "responses"),
            ("claude", "anthropic"),
        ] {
            assert_eq!(old.parse::<Provider>().unwrap().as_str(), now);
        }
        assert!("bard".parse::<Provider>().unwrap_err().contains("openai"));
    }
}
