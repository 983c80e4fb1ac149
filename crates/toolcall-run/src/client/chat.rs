//! OpenAI-compatible `/v1/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp server,
//! LM Studio), non-streaming and streaming (SSE, `tool_calls` deltas assembled by index).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::ToolSpec;
use toolcall_wire::chat::ChatMessage;
use toolcall_wire::encode_arguments;

use super::options::Flavour;
use super::transport::{RetryPolicy, Timeouts};
use super::wire::{HttpModel, WireShape, api_key_from_env, model_reply, to_items};
use super::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, NameMap, TextSink, name_map,
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
            http: HttpModel::new(base_url, "/chat/completions", model.into(), Flavour::Chat)?,
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

    /// Bounds the whole request to `timeout` (connect and read timeouts stay as they are).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ClientError> {
        self.http.total_timeout(timeout)?;
        Ok(self)
    }

    /// Sets the connect/read timeouts and the retry policy.
    pub fn with_transport(
        mut self,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Result<Self, ClientError> {
        self.http.configure(timeouts, retry)?;
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
        let reply = self.http.reply(&self.body(request), None).await?;
        Ok(model_reply(reply, &names, FORMAT))
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
    ) -> Result<ModelReply, ClientError> {
        let names = name_map(request);
        let reply = self.http.reply(&self.body(request), Some(on_text)).await?;
        Ok(model_reply(reply, &names, FORMAT))
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
                            "arguments": encode_arguments(&c.arguments),
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

/// An assistant message (`{"role":"assistant","content":..,"tool_calls":[..]}`) as a reply,
/// read by the Chat Completions wire module.
pub fn reply_from_message(message: &Value, names: &NameMap) -> Result<ModelReply, ClientError> {
    let message: ChatMessage = serde_json::from_value(message.clone())
        .map_err(|e| ClientError::BadResponse(format!("not an assistant message: {e}")))?;
    Ok(model_reply(message.to_reply(), names, FORMAT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcall_core::ToolCall;

    // A server's reasoning (vLLM, llama.cpp, Ollama) reaches the reply apart from the text.
    #[test]
    fn reasoning_the_server_kept_apart_stays_apart() {
        let names = super::super::name_map(&ModelRequest::default());
        for name in ["reasoning_content", "reasoning", "thinking"] {
            let m = json!({"role": "assistant", "content": "Hi", name: "think first"});
            let reply = reply_from_message(&m, &names).unwrap();
            assert_eq!(reply.reasoning.as_deref(), Some("think first"), "{name}");
            assert_eq!(reply.text.as_deref(), Some("Hi"), "{name}");
        }
    }

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
        let reply = reply_from_message(&msgs[2], &names).unwrap();
        assert_eq!(reply.calls[0].name, "a.b::c");
        assert_eq!(reply.calls[0].call_id.as_str(), "c1");
    }
}
