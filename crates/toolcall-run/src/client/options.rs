//! Per-request options a caller sets on the model (sampling, tool choice, extra body fields)
//! and how each OpenAI-style wire format writes them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::NameMap;

/// Options sent with every model request; unset fields are left out of the body, so the
/// server's defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The reply's token bound (`max_tokens` in Chat Completions, `max_output_tokens` in
    /// Responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sent only with requests that offer tools (a tool-free request with a tool choice is
    /// refused by OpenAI-compatible servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Sent only with requests that offer tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Further top-level body fields (`seed`, `stop`, `reasoning_effort`, a server's own
    /// knobs). They never replace the fields the client owns: `model`, the conversation,
    /// `tools` and `stream`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the servers' default).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool (its registry id; the client sends the provider-safe alias).
    Tool(String),
}

/// The two OpenAI-style request shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    Chat,
    Responses,
}

/// Body keys a client owns; `extra` never overwrites them.
const OWNED: [&str; 5] = ["model", "messages", "input", "tools", "stream"];

impl RequestOptions {
    /// Writes the options into `body`; `with_tools` says whether the request offers tools.
    pub(crate) fn apply(
        &self,
        body: &mut Map<String, Value>,
        flavour: Flavour,
        with_tools: bool,
        names: &NameMap,
    ) {
        for (k, v) in &self.extra {
            if !OWNED.contains(&k.as_str()) {
                body.insert(k.clone(), v.clone());
            }
        }
        if let Some(t) = self.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(p) = self.top_p {
            body.insert("top_p".into(), json!(p));
        }
        if let Some(n) = self.max_tokens {
            let key = match flavour {
                Flavour::Chat => "max_tokens",
                Flavour::Responses => "max_output_tokens",
            };
            body.insert(key.into(), json!(n));
        }
        if !with_tools {
            return;
        }
        if let Some(choice) = &self.tool_choice {
            body.insert("tool_choice".into(), choice.to_wire(flavour, names));
        }
        if let Some(p) = self.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(p));
        }
    }
}

impl ToolChoice {
    fn to_wire(&self, flavour: Flavour, names: &NameMap) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(id) => {
                let name = names.to_provider(id);
                match flavour {
                    Flavour::Chat => json!({"type": "function", "function": {"name": name}}),
                    Flavour::Responses => json!({"type": "function", "name": name}),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(options: &RequestOptions, flavour: Flavour, with_tools: bool) -> Value {
        let names = NameMap::from_names(["a.b::c"]);
        let mut body = Map::new();
        body.insert("model".into(), json!("m"));
        options.apply(&mut body, flavour, with_tools, &names);
        Value::Object(body)
    }

    #[test]
    fn unset_options_leave_the_body_alone() {
        let body = applied(&RequestOptions::default(), Flavour::Chat, true);
        assert_eq!(body, json!({"model": "m"}));
    }

    #[test]
    fn each_flavour_names_the_token_bound_and_tool_choice_its_way() {
        let options = RequestOptions {
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(64),
            tool_choice: Some(ToolChoice::Tool("a.b::c".into())),
            parallel_tool_calls: Some(false),
            ..RequestOptions::default()
        };
        let chat = applied(&options, Flavour::Chat, true);
        assert_eq!(chat["max_tokens"], 64);
        assert_eq!(chat["temperature"], 0.5);
        assert_eq!(chat["top_p"], 0.9);
        assert_eq!(chat["parallel_tool_calls"], false);
        let alias = chat["tool_choice"]["function"]["name"].as_str().unwrap();
        assert_ne!(
            alias, "a.b::c",
            "the provider gets the alias, not the registry id"
        );
        let responses = applied(&options, Flavour::Responses, true);
        assert_eq!(responses["max_output_tokens"], 64);
        assert!(responses.get("max_tokens").is_none());
        assert_eq!(
            responses["tool_choice"],
            json!({"type": "function", "name": alias})
        );
    }

    #[test]
    fn tool_options_are_left_out_of_tool_free_requests() {
        let options = RequestOptions {
            tool_choice: Some(ToolChoice::Required),
            parallel_tool_calls: Some(true),
            temperature: Some(0.0),
            ..RequestOptions::default()
        };
        let body = applied(&options, Flavour::Chat, false);
        assert_eq!(body, json!({"model": "m", "temperature": 0.0}));
    }

    #[test]
    fn extra_fields_never_replace_the_clients_own() {
        let mut extra = Map::new();
        extra.insert("model".into(), json!("other"));
        extra.insert("tools".into(), json!([]));
        extra.insert("seed".into(), json!(7));
        let options = RequestOptions {
            extra,
            ..RequestOptions::default()
        };
        let body = applied(&options, Flavour::Responses, true);
        assert_eq!(body, json!({"model": "m", "seed": 7}));
    }
}
