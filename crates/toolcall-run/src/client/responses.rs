//! OpenAI `/v1/responses`: `function_call` items in the output, `function_call_output` items
//! (paired by `call_id`) in the next input. Non-streaming, or streaming (SSE), where the
//! reply is taken from the final `response.completed` event, which carries the whole output.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::ToolSpec;
use toolcall_wire::encode_arguments;

use super::options::Flavour;
use super::transport::{RetryPolicy, Timeouts};
use super::wire::{HttpModel, WireShape, api_key_from_env, model_reply, to_items};
use super::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, NameMap, TextSink, name_map,
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
            http: HttpModel::new(base_url, "/responses", model.into(), Flavour::Responses)?,
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
                "name":names.to_provider(&c.name),"arguments":encode_arguments(&c.arguments)}));
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

/// Responses `output` items as a reply, read by the Responses wire module.
pub fn reply_from_output(output: &[Value], names: &NameMap) -> Result<ModelReply, ClientError> {
    let reply = toolcall_wire::responses::decode_output(output, &toolcall_wire::Limits::default())
        .map_err(|e| ClientError::BadResponse(e.to_string()))?;
    Ok(model_reply(reply, names, FORMAT))
}
