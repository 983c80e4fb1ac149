//! OpenAI `/v1/responses`: `function_call` items in the output, `function_call_output` items
//! (paired by `call_id`) in the next input. Non-streaming.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::{CallId, Origin, ToolCall, ToolSpec};

use super::chat::{arguments_string, job_text};
use super::images::take_images;
use super::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, NameMap, endpoint, http_client,
    id_of, name_map, parse_arguments, post_json, read_bounded,
};

/// The origin format of native Responses calls.
pub const FORMAT: &str = "openai_responses";

/// A Responses API client.
pub struct ResponsesClient {
    url: String,
    model: String,
    api_key: Option<String>,
    http: reqwest::Client,
}

impl ResponsesClient {
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Ok(ResponsesClient {
            url: endpoint(base_url, "/responses"),
            model: model.into(),
            api_key: None,
            http: http_client(Duration::from_secs(300))?,
        })
    }

    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    pub fn with_api_key_env(self, var: &str) -> Result<Self, ClientError> {
        let key = std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.to_owned()))?;
        Ok(self.with_api_key(Some(key)))
    }

    /// The request body sent for `request`.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let names = name_map(&request.tools);
        let mut body = json!({
            "model": self.model,
            "input": to_input_items(&request.messages, &names),
        });
        if !request.tools.is_empty() {
            body["tools"] = render_tools(&request.tools, &names);
        }
        body
    }
}

#[async_trait]
impl ModelClient for ResponsesClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let names = name_map(&request.tools);
        let response = post_json(
            &self.http,
            &self.url,
            self.api_key.as_deref(),
            &self.body(request),
        )
        .await?;
        let text = read_bounded(response, &self.url).await?;
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            ClientError::BadResponse(format!("not JSON ({e}): {}", super::tail(&text, 300)))
        })?;
        let output = v
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| ClientError::BadResponse("no output array".into()))?;
        Ok(reply_from_output(output, &names))
    }
}

/// Tools as Responses `tools` (core's renderer).
pub fn render_tools(tools: &[ToolSpec], names: &NameMap) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| toolcall_core::render::responses_tool(t, names))
            .collect(),
    )
}

/// The conversation as Responses `input` items.
pub fn to_input_items(messages: &[Message], names: &NameMap) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending_images = Vec::new();
    for m in messages {
        if !matches!(m, Message::Tool { .. }) && !pending_images.is_empty() {
            out.push(image_item(std::mem::take(&mut pending_images)));
        }
        match m {
            Message::System { content } => out.push(json!({"role":"system","content":content})),
            Message::User { content } => out.push(json!({"role":"user","content":content})),
            Message::Assistant { text, calls } => {
                if let Some(t) = text.as_ref().filter(|t| !t.is_empty()) {
                    out.push(json!({"role":"assistant","content":t}));
                }
                for c in calls {
                    out.push(json!({"type":"function_call","call_id":c.call_id,
                        "name":names.to_provider(&c.name),"arguments":arguments_string(&c.arguments)}));
                }
            }
            Message::Tool {
                call_id, content, ..
            } => {
                let mut content = content.clone();
                pending_images.extend(take_images(&mut content));
                out.push(json!({"type":"function_call_output","call_id":call_id,
                    "output":content.to_string()}));
            }
            Message::JobResult {
                call_id,
                name,
                content,
            } => {
                let mut content = content.clone();
                let imgs = take_images(&mut content);
                out.push(json!({"role":"user","content":job_text(call_id, name, &content)}));
                if !imgs.is_empty() {
                    out.push(image_item(imgs));
                }
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(image_item(pending_images));
    }
    out
}

fn image_item(images: Vec<super::images::Image>) -> Value {
    let mut parts = vec![json!({"type":"input_text","text":"Images returned by the tools above:"})];
    parts.extend(
        images
            .iter()
            .map(|i| json!({"type":"input_image","image_url": i.data_uri()})),
    );
    json!({"role":"user","content":parts})
}

/// Responses `output` items as a reply.
pub fn reply_from_output(output: &[Value], names: &NameMap) -> ModelReply {
    let mut text: Option<String> = None;
    let mut calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        text.get_or_insert_with(String::new).push_str(t);
                    }
                }
            }
            Some("function_call") => {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                let arguments = match item.get("arguments") {
                    Some(Value::String(s)) => parse_arguments(s),
                    Some(v) => v.clone(),
                    None => json!({}),
                };
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(CallId::from)
                    .unwrap_or_else(CallId::generate);
                calls.push(ToolCall {
                    call_id: id,
                    name: id_of(names, name).to_owned(),
                    arguments,
                    origin: Origin {
                        format: FORMAT.to_owned(),
                        ..Origin::default()
                    },
                });
            }
            _ => {}
        }
    }
    ModelReply { text, calls }
}
