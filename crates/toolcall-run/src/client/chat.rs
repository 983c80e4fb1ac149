//! OpenAI-compatible `/v1/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp server,
//! LM Studio), non-streaming and streaming (SSE, `tool_calls` deltas assembled by index).

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_core::{CallId, Origin, ToolCall, ToolSpec};

use super::images::take_images;
use super::{
    ClientError, MAX_RESPONSE_BYTES, Message, ModelClient, ModelReply, ModelRequest, NameMap,
    endpoint, http_client, id_of, name_map, parse_arguments, post_json, read_bounded,
};

/// The origin format of native Chat Completions calls.
pub const FORMAT: &str = "openai_chat";

/// A Chat Completions client.
pub struct ChatCompletionsClient {
    url: String,
    model: String,
    api_key: Option<String>,
    stream: bool,
    http: reqwest::Client,
}

impl ChatCompletionsClient {
    /// `base_url` may be the server root, its `/v1`, or the full endpoint.
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Ok(ChatCompletionsClient {
            url: endpoint(base_url, "/chat/completions"),
            model: model.into(),
            api_key: None,
            stream: false,
            http: http_client(Duration::from_secs(300))?,
        })
    }

    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// Reads the API key from an environment variable; an unset variable is an error.
    pub fn with_api_key_env(self, var: &str) -> Result<Self, ClientError> {
        let key = std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.to_owned()))?;
        Ok(self.with_api_key(Some(key)))
    }

    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ClientError> {
        self.http = http_client(timeout)?;
        Ok(self)
    }

    /// The request body sent for `request`.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let names = name_map(&request.tools);
        let mut body = json!({
            "model": self.model,
            "messages": to_chat_messages(&request.messages, &names),
        });
        if !request.tools.is_empty() {
            body["tools"] = render_tools(&request.tools, &names);
        }
        if self.stream {
            body["stream"] = json!(true);
        }
        body
    }
}

#[async_trait]
impl ModelClient for ChatCompletionsClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let names = name_map(&request.tools);
        let body = self.body(request);
        let response = post_json(&self.http, &self.url, self.api_key.as_deref(), &body).await?;
        if self.stream {
            return read_stream(response, &names).await;
        }
        let text = read_bounded(response, &self.url).await?;
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            ClientError::BadResponse(format!("not JSON ({e}): {}", super::tail(&text, 300)))
        })?;
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
    let mut out = Vec::with_capacity(messages.len());
    let mut pending_images = Vec::new();
    for m in messages {
        if !matches!(m, Message::Tool { .. }) && !pending_images.is_empty() {
            out.push(image_message(std::mem::take(&mut pending_images)));
        }
        match m {
            Message::System { content } => out.push(json!({"role":"system","content":content})),
            Message::User { content } => out.push(json!({"role":"user","content":content})),
            Message::Assistant { text, calls } => {
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
            }
            Message::Tool {
                call_id, content, ..
            } => {
                let mut content = content.clone();
                pending_images.extend(take_images(&mut content));
                out.push(
                    json!({"role":"tool","tool_call_id":call_id,"content":content.to_string()}),
                );
            }
            Message::JobResult {
                call_id,
                name,
                content,
            } => {
                let mut content = content.clone();
                let imgs = take_images(&mut content);
                out.push(json!({"role":"user","content": job_text(call_id, name, &content)}));
                if !imgs.is_empty() {
                    out.push(image_message(imgs));
                }
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(image_message(pending_images));
    }
    out
}

/// How a job result is worded for the model.
pub(crate) fn job_text(call_id: &CallId, name: &str, content: &Value) -> String {
    format!("[job result] call_id={call_id} tool={name}: {content}")
}

fn image_message(images: Vec<super::images::Image>) -> Value {
    let mut parts = vec![json!({"type":"text","text":"Images returned by the tools above:"})];
    parts.extend(
        images
            .iter()
            .map(|i| json!({"type":"image_url","image_url":{"url": i.data_uri()}})),
    );
    json!({"role":"user","content":parts})
}

/// Arguments as the JSON string the wire format wants; a non-object (unparseable) argument
/// string is sent back as it came.
pub(crate) fn arguments_string(arguments: &Value) -> String {
    match arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

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
                    make_call(
                        c.get("id").and_then(Value::as_str),
                        id_of(names, name),
                        arguments,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ModelReply { text, calls }
}

fn make_call(id: Option<&str>, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        call_id: match id {
            Some(id) if !id.is_empty() => CallId::from(id),
            _ => CallId::generate(),
        },
        name: name.to_owned(),
        arguments,
        origin: Origin {
            format: FORMAT.to_owned(),
            ..Origin::default()
        },
    }
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
    let mut events = response.bytes_stream().eventsource();
    let mut text = String::new();
    let mut saw_text = false;
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    let mut total = 0usize;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| ClientError::BadResponse(format!("SSE stream: {e}")))?;
        total += event.data.len();
        if total > MAX_RESPONSE_BYTES {
            return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            break;
        }
        if data.is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ClientError::BadResponse(format!(
                "SSE chunk is not JSON ({e}): {}",
                super::tail(data, 200)
            ))
        })?;
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
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                p.id.push_str(id);
            }
            if let Some(f) = tc.get("function") {
                if let Some(n) = f.get("name").and_then(Value::as_str) {
                    p.name.push_str(n);
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
                make_call(
                    Some(p.id.as_str()),
                    id_of(names, &p.name),
                    parse_arguments(&p.arguments),
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
        let specs = [ToolSpec::new("a.b::c", "", json!({"type":"object"}))];
        let names = super::super::name_map(&specs);
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
