//! Per-request options a caller sets on the model (sampling, tool choice, extra body fields),
//! written into the neutral request; each dialect's module names them its way.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolcall_wire::chat::{ChatRequest, named_tool_choice};

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

/// Body keys a client owns in any dialect; `extra` never writes them.
const OWNED: [&str; 7] = [
    "model", "messages", "input", "contents", "tools", "stream", "system",
];

impl RequestOptions {
    /// Writes the options into the neutral request (the dialect's module names them its
    /// way: `max_tokens` is `max_output_tokens` in Responses, `maxOutputTokens` in Gemini);
    /// tool options only when the request offers tools.
    pub(crate) fn apply(&self, request: &mut ChatRequest, names: &NameMap) {
        let mut set = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                request.extra.insert(key.to_owned(), v);
            }
        };
        set("temperature", self.temperature.map(Value::from));
        set("top_p", self.top_p.map(Value::from));
        set("max_tokens", self.max_tokens.map(Value::from));
        if request.tools.is_none() {
            return;
        }
        request.tool_choice = self.tool_choice.as_ref().map(|c| c.to_wire(names));
        request.parallel_tool_calls = self.parallel_tool_calls;
    }

    /// Adds `extra` to a body the dialect wrote: fields in the upstream's own terms, never
    /// replacing one the body has or one a client owns.
    pub(crate) fn add_extra(&self, body: &mut Value) {
        let Value::Object(body) = body else { return };
        for (k, v) in &self.extra {
            if !OWNED.contains(&k.as_str()) && !body.contains_key(k) {
                body.insert(k.clone(), v.clone());
            }
        }
    }
}

impl ToolChoice {
    /// The neutral request's `tool_choice`.
    fn to_wire(&self, names: &NameMap) -> Value {
        match self {
            ToolChoice::Auto => Value::from("auto"),
            ToolChoice::None => Value::from("none"),
            ToolChoice::Required => Value::from("required"),
            ToolChoice::Tool(id) => named_tool_choice(&names.to_provider(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_wire::Api;

    /// The body `api` gets for a request with these options (offering one tool when
    /// `with_tools`).
    fn body(options: &RequestOptions, api: Api, with_tools: bool) -> Value {
        let names = NameMap::from_names(["a.b::c"]);
        let mut request = ChatRequest {
            model: "m".into(),
            tools: with_tools.then(|| {
                vec![toolcall_wire::chat::ChatTool::function(
                    names.to_provider("a.b::c"),
                    None,
                    json!({"type": "object"}),
                )]
            }),
            ..ChatRequest::default()
        };
        options.apply(&mut request, &names);
        let mut body = api.dialect().encode_request(&request).unwrap();
        options.add_extra(&mut body);
        body
    }

    #[test]
    fn unset_options_leave_the_body_alone() {
        let body = body(&RequestOptions::default(), Api::CHAT, false);
        assert_eq!(body, json!({"model": "m", "messages": []}));
    }

    #[test]
    fn each_dialect_names_the_token_bound_and_tool_choice_its_way() {
        let options = RequestOptions {
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(64),
            tool_choice: Some(ToolChoice::Tool("a.b::c".into())),
            parallel_tool_calls: Some(false),
            ..RequestOptions::default()
        };
        let api = |name: &str| Api::from_name(name).unwrap();
        let chat = body(&options, Api::CHAT, true);
        assert_eq!(chat["max_tokens"], 64);
        assert_eq!(chat["temperature"], 0.5);
        assert_eq!(chat["top_p"], 0.9);
        assert_eq!(chat["parallel_tool_calls"], false);
        let alias = chat["tool_choice"]["function"]["name"].as_str().unwrap();
        assert_ne!(
            alias, "a.b::c",
            "the provider gets the alias, not the registry id"
        );
        let responses = body(&options, api("responses"), true);
        assert_eq!(responses["max_output_tokens"], 64);
        assert!(responses.get("max_tokens").is_none());
        assert_eq!(
            responses["tool_choice"],
            json!({"type": "function", "name": alias})
        );
        let anthropic = body(&options, api("anthropic"), true);
        assert_eq!(anthropic["max_tokens"], 64);
        assert_eq!(
            anthropic["tool_choice"],
            json!({"type": "tool", "name": alias, "disable_parallel_tool_use": true})
        );
        let gemini = body(&options, api("gemini"), true);
        assert_eq!(gemini["generationConfig"]["maxOutputTokens"], 64);
        assert_eq!(gemini["generationConfig"]["topP"], 0.9);
        assert_eq!(
            gemini["toolConfig"]["functionCallingConfig"],
            json!({"mode": "ANY", "allowedFunctionNames": [alias]})
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
        let body = body(&options, Api::CHAT, false);
        assert_eq!(
            body,
            json!({"model": "m", "messages": [], "temperature": 0.0})
        );
    }

    #[test]
    fn extra_fields_never_replace_the_clients_own() {
        let mut extra = Map::new();
        extra.insert("model".into(), json!("other"));
        extra.insert("tools".into(), json!([]));
        extra.insert("seed".into(), json!(7));
        extra.insert("store".into(), json!(true));
        let options = RequestOptions {
            extra,
            ..RequestOptions::default()
        };
        let body = body(&options, Api::from_name("responses").unwrap(), true);
        assert_eq!(body["model"], "m");
        assert_eq!(body["seed"], 7);
        assert_eq!(body["store"], false, "the dialect's own field stays");
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(1));
    }
}
