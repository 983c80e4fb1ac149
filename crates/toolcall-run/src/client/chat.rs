//! OpenAI-compatible `/v1/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp server,
//! LM Studio), non-streaming and streaming (SSE, `tool_calls` deltas assembled by index).

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::ToolSpec;

use super::options::Flavour;
use super::wire::{
    HttpModel, SseReader, WireShape, api_key_from_env, arguments_string, native_call, sse_json,
    to_items,
};
use super::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, NameMap, http_client, id_of,
    name_map, parse_arguments,
};

/// The origin format of native Chat Completions calls.
pub const FORMAT: &str = "openai_chat";

/// A Chat Completions client.
pub struct ChatCompletionsClient {
    http: HttpModel,
}

impl ChatCompletionsClient {
    /// `base_url` may be the server root, its `/v1`, or the full endpoint.
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Ok(ChatCompletionsClient {
            http: HttpModel::new(base_url, "/chat/completions", model.into())?,
        })
    }

    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.http.api_key = key;
        self
    }

    /// Reads the API key from an environment variable; an unset variable is an error.
    pub fn with_api_key_env(self, var: &str) -> Result<Self, ClientError> {
        Ok(self.with_api_key(Some(api_key_from_env(var)?)))
    }

    pub fn streaming(mut self, stream: bool) -> Self {
        self.http.stream = stream;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ClientError> {
        self.http.http = http_client(timeout)?;
        Ok(self)
    }

    /// The request body sent for `request`.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let names = name_map(request);
        let tools = (!request.tools.is_empty()).then(|| render_tools(&request.tools, &names));
        self.http.body(
            Flavour::Chat,
            to_chat_messages(&request.messages, &names),
            tools,
            &request.options,
            &names,
        )
    }
}

#[async_trait]
impl ModelClient for ChatCompletionsClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let names = name_map(request);
        let response = self.http.post(&self.body(request)).await?;
        if self.http.stream {
            return read_stream(response, &names).await;
        }
        let v = self.http.read_json(response).await?;
        let message = v
            .pointer("/choices/0/message")
            .ok_or_else(|| ClientError::BadResponse("no choices[0].message".into()))?;
        Ok(reply_from_message(message, &names))
    }
}

/// Tools as Chat Completions `tools` (core's renderer), names mapped to their aliases.
pub fn render_tools(tools: &[ToolSpec], names: &NameMap) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| toolcall_core::render::openai_chat_tool(t, names))
            .collect(),
    )
}

/// The conversation as Chat Completions `messages`.
///
/// Images in tool results are replaced by placeholders and attached, as `image_url` data
/// URIs, to one user message after the run of tool messages (tool messages must directly
/// follow the assistant message that made the calls).
pub fn to_chat_messages(messages: &[Message], names: &NameMap) -> Vec<Value> {
    to_items(messages, names, &CHAT)
}

const CHAT: WireShape = WireShape {
    assistant: |text, calls, names, out| {
        let mut msg = json!({"role":"assistant","content":text});
        if !calls.is_empty() {
            msg["tool_calls"] = Value::Array(
                calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.call_id, "type": "function", "function": {
                            "name": names.to_provider(&c.name),
                            "arguments": arguments_string(&c.arguments),
                        }})
                    })
                    .collect(),
            );
        }
        out.push(msg);
    },
    tool_output: |call_id, content| json!({"role":"tool","tool_call_id":call_id,"content":content.to_string()}),
    images: |images| {
        let mut parts = vec![json!({"type":"text","text":"Images returned by the tools above:"})];
        parts.extend(
            images
                .iter()
                .map(|i| json!({"type":"image_url","image_url":{"url": i.data_uri()}})),
        );
        json!({"role":"user","content":parts})
    },
};

/// An assistant message (`{"role":"assistant","content":..,"tool_calls":[..]}`) as a reply.
pub fn reply_from_message(message: &Value, names: &NameMap) -> ModelReply {
    let text = match message.get("content") {
        Some(Value::String(s)) => Some(s.clone()),
        // Some servers send content parts.
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    };
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(&Value::Null);
                    let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => parse_arguments(s),
                        Some(v @ Value::Object(_)) => v.clone(),
                        None | Some(Value::Null) => json!({}),
                        Some(other) => other.clone(),
                    };
                    native_call(
                        c.get("id").and_then(Value::as_str),
                        id_of(names, name),
                        arguments,
                        FORMAT,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ModelReply { text, calls }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reads an SSE stream of `chat.completion.chunk`s into one reply.
async fn read_stream(
    response: reqwest::Response,
    names: &NameMap,
) -> Result<ModelReply, ClientError> {
    let mut events = SseReader::new(response);
    let mut text = String::new();
    let mut saw_text = false;
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    while let Some((_, data)) = events.next().await? {
        if data == "[DONE]" {
            break;
        }
        let chunk = sse_json(&data, "SSE chunk")?;
        if let Some(err) = chunk.get("error") {
            return Err(ClientError::BadResponse(format!("stream error: {err}")));
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            continue;
        };
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            text.push_str(t);
            saw_text = true;
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
            if calls.len() >= 1024 && !calls.contains_key(&index) {
                return Err(ClientError::BadResponse("more than 1024 tool calls".into()));
            }
            let p = calls.entry(index).or_default();
            // The id and name come whole; some servers repeat them in every chunk, so only
            // the first is kept. Arguments are the only field sent in fragments.
            if let Some(id) = tc.get("id").and_then(Value::as_str)
                && p.id.is_empty()
            {
                p.id = id.to_owned();
            }
            if let Some(f) = tc.get("function") {
                if let Some(n) = f.get("name").and_then(Value::as_str)
                    && p.name.is_empty()
                {
                    p.name = n.to_owned();
                }
                if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                    p.arguments.push_str(a);
                }
            }
        }
    }
    Ok(ModelReply {
        text: saw_text.then_some(text),
        calls: calls
            .into_values()
            .map(|p| {
                native_call(
                    Some(p.id.as_str()),
                    id_of(names, &p.name),
                    parse_arguments(&p.arguments),
                    FORMAT,
                )
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcall_core::ToolCall;

    // covers, O-1
    #[test]
    fn conversation_maps_to_chat_messages() {
        let request = ModelRequest {
            tools: vec![ToolSpec::new("a.b::c", "", json!({"type":"object"}))],
            ..ModelRequest::default()
        };
        let names = super::super::name_map(&request);
        let mut call = ToolCall::new("a.b::c", json!({"x": 1}), FORMAT);
        call.call_id = "c1".into();
        let msgs = to_chat_messages(
            &[
                Message::system("sys"),
                Message::user("hi"),
                Message::Assistant {
                    text: None,
                    calls: vec![call],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "a.b::c".into(),
                    content: json!({"status":"ok","data":1}),
                },
                Message::JobResult {
                    call_id: "c1".into(),
                    name: "a.b::c".into(),
                    content: json!({"status":"ok","data":2}),
                },
            ],
            &names,
        );
        assert_eq!(msgs[0], json!({"role":"system","content":"sys"}));
        let alias = msgs[2]["tool_calls"][0]["function"]["name"]
            .as_str()
            .unwrap();
        assert_ne!(alias, "a.b::c");
        assert_eq!(names.from_provider(alias), Some("a.b::c"));
        assert_eq!(
            msgs[2]["tool_calls"][0]["function"]["arguments"],
            "{\"x\":1}"
        );
        assert_eq!(msgs[3]["tool_call_id"], "c1");
        assert_eq!(msgs[4]["role"], "user");
        assert!(msgs[4]["content"].as_str().unwrap().contains("call_id=c1"));
        let reply = reply_from_message(&msgs[2], &names);
        assert_eq!(reply.calls[0].name, "a.b::c");
        assert_eq!(reply.calls[0].call_id.as_str(), "c1");
    }
}
