//! OpenAI `/v1/responses`: `function_call` items in the output, `function_call_output` items
//! (paired by `call_id`) in the next input. Non-streaming, or streaming (SSE), where the
//! reply is taken from the final `response.completed` event, which carries the whole output.

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::ToolSpec;

use super::options::Flavour;
use super::wire::{
    HttpModel, SseReader, WireShape, api_key_from_env, arguments_string, native_call, sse_json,
    to_items,
};
use super::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, NameMap, id_of, name_map,
    parse_arguments,
};

/// The origin format of native Responses calls.
pub const FORMAT: &str = "openai_responses";

/// A Responses API client.
pub struct ResponsesClient {
    http: HttpModel,
}

impl ResponsesClient {
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Ok(ResponsesClient {
            http: HttpModel::new(base_url, "/responses", model.into())?,
        })
    }

    pub fn streaming(mut self, stream: bool) -> Self {
        self.http.stream = stream;
        self
    }

    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.http.api_key = key;
        self
    }

    pub fn with_api_key_env(self, var: &str) -> Result<Self, ClientError> {
        Ok(self.with_api_key(Some(api_key_from_env(var)?)))
    }

    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Result<Self, ClientError> {
        self.http.http = super::http_client(timeout)?;
        Ok(self)
    }

    /// The request body sent for `request`.
    pub fn body(&self, request: &ModelRequest) -> Value {
        let names = name_map(request);
        let tools = (!request.tools.is_empty()).then(|| render_tools(&request.tools, &names));
        self.http.body(
            Flavour::Responses,
            to_input_items(&request.messages, &names),
            tools,
            &request.options,
            &names,
        )
    }
}

#[async_trait]
impl ModelClient for ResponsesClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let names = name_map(request);
        let response = self.http.post(&self.body(request)).await?;
        if self.http.stream {
            let output = read_stream(response).await?;
            return Ok(reply_from_output(&output, &names));
        }
        let v = self.http.read_json(response).await?;
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
    to_items(messages, names, &RESPONSES)
}

const RESPONSES: WireShape = WireShape {
    assistant: |text, calls, names, out| {
        if let Some(t) = text.as_ref().filter(|t| !t.is_empty()) {
            out.push(json!({"role":"assistant","content":t}));
        }
        for c in calls {
            out.push(json!({"type":"function_call","call_id":c.call_id,
                "name":names.to_provider(&c.name),"arguments":arguments_string(&c.arguments)}));
        }
    },
    tool_output: |call_id, content| json!({"type":"function_call_output","call_id":call_id,"output":content.to_string()}),
    images: |images| {
        let mut parts =
            vec![json!({"type":"input_text","text":"Images returned by the tools above:"})];
        parts.extend(
            images
                .iter()
                .map(|i| json!({"type":"input_image","image_url": i.data_uri()})),
        );
        json!({"role":"user","content":parts})
    },
};

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
                calls.push(native_call(
                    item.get("call_id").and_then(Value::as_str),
                    id_of(names, name),
                    arguments,
                    FORMAT,
                ));
            }
            _ => {}
        }
    }
    ModelReply { text, calls }
}

/// Reads a Responses SSE stream up to `response.completed`; returns its output items.
async fn read_stream(response: reqwest::Response) -> Result<Vec<Value>, ClientError> {
    let mut events = SseReader::new(response);
    while let Some((event, data)) = events.next().await? {
        if data == "[DONE]" {
            continue;
        }
        let v = sse_json(&data, "SSE event")?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.as_str());
        match kind {
            "response.completed" => {
                return v
                    .pointer("/response/output")
                    .and_then(Value::as_array)
                    .cloned()
                    .ok_or_else(|| {
                        ClientError::BadResponse("response.completed without output".into())
                    });
            }
            "response.failed" | "response.incomplete" | "error" => {
                return Err(ClientError::BadResponse(format!(
                    "{kind}: {}",
                    super::tail(&data, 500)
                )));
            }
            _ => {}
        }
    }
    Err(ClientError::BadResponse(
        "the stream ended before response.completed".into(),
    ))
}
