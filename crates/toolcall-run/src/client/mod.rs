//! Model clients over a provider-neutral conversation.
//!
//! A [`ModelRequest`] carries the conversation as [`Message`]s and the tools to offer (none
//! for a final, tool-free request). Each client translates it to its provider's wire shape
//! and its reply back to a [`ModelReply`]: visible text plus native [`ToolCall`]s, with the
//! provider-safe name aliases translated back to registry ids.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use toolcall_core::NameMap;
use toolcall_core::{CallId, ToolCall, ToolSpec};

pub mod chat;
pub mod images;
mod options;
pub mod replay;
pub mod responses;
mod wire;

pub use chat::ChatCompletionsClient;
pub use options::{RequestOptions, ToolChoice};
pub use replay::ReplayClient;
pub use responses::ResponsesClient;

/// Largest response body a client reads (16 MiB).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// One message of the conversation, independent of any provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        calls: Vec<ToolCall>,
    },
    /// The result of one call, paired by `call_id`; `content` is the result JSON
    /// (`{"status":"ok","data":..}` or `{"error":{..}}`).
    Tool {
        call_id: CallId,
        name: String,
        content: Value,
    },
    /// A job's result delivered after the round that started it; providers get it as a
    /// user message tagged with the call id, since the call itself was already answered.
    JobResult {
        call_id: CallId,
        name: String,
        content: Value,
    },
    /// The results of calls found in the assistant's text (text mode), in call order: sent
    /// as one user message of `<tool_response call_id=".." name="..">` blocks, followed by
    /// the images they returned.
    TextResults {
        results: Vec<TextResult>,
    },
}

/// One result of a text-format call; `content` is the result JSON, as in [`Message::Tool`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextResult {
    pub call_id: CallId,
    pub name: String,
    pub content: Value,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }
}

/// What a client is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelRequest {
    pub messages: Vec<Message>,
    /// Tools offered natively; empty means no tools (text mode, or the final request).
    pub tools: Vec<ToolSpec>,
    /// Every registry id, offered or not: provider aliases are computed over all of them so
    /// an alias never changes when a tool is toggled, and a call to a disabled tool by its
    /// alias comes back under its id (and is answered `tool_disabled`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_names: Vec<String>,
    /// Sampling, tool choice and extra body fields.
    #[serde(default)]
    pub options: RequestOptions,
}

/// What a model answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelReply {
    /// The assistant's text, if any.
    pub text: Option<String>,
    /// Native tool calls, names translated back to registry ids.
    pub calls: Vec<ToolCall>,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the model at {url}: {message}")]
    Transport { url: String, message: String },
    #[error("the model server answered {status}: {body_tail}")]
    Status { status: u16, body_tail: String },
    #[error("the model's response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the model's response is not understood: {0}")]
    BadResponse(String),
    #[error("the API key variable {0} is not set")]
    MissingApiKey(String),
    #[error("the recorded session has {recorded} replies, and the loop asked for reply {asked}")]
    ReplayExhausted { recorded: usize, asked: usize },
    #[error("{0}")]
    Other(String),
}

/// A language model that answers a conversation.
#[async_trait]
pub trait ModelClient: Send + Sync {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError>;
}

/// The provider-name map for a request's tools and known names (core's [`NameMap`]).
pub(crate) fn name_map(request: &ModelRequest) -> NameMap {
    NameMap::from_names(
        request
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .chain(request.known_names.iter().map(String::as_str)),
    )
}

/// The registry id for a name in a reply; a name the map did not produce (a hallucinated
/// tool) passes through so validation can answer `unknown_tool` with it.
pub(crate) fn id_of<'a>(names: &'a NameMap, wire: &'a str) -> &'a str {
    names.from_provider(wire).unwrap_or(wire)
}

/// The last `n` characters of a body, for error messages.
pub(crate) fn tail(body: &str, n: usize) -> String {
    let count = body.chars().count();
    if count <= n {
        body.to_owned()
    } else {
        let s: String = body.chars().skip(count - n).collect();
        format!("…{s}")
    }
}

/// Turns a provider's arguments string into an arguments value. Unparseable arguments stay a
/// string, which the executor rejects as `invalid_arguments` rather than running with `{}`
/// an empty string means no arguments.
pub(crate) fn parse_arguments(raw: &str) -> Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => v,
        Err(_) => Value::String(raw.to_owned()),
    }
}

/// Reads a response body up to [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_bounded(
    mut response: reqwest::Response,
    url: &str,
) -> Result<String, ClientError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| ClientError::Transport {
        url: url.to_owned(),
        message: e.to_string(),
    })? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Builds an HTTP client with connect and total timeouts.
pub(crate) fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(timeout)
        .build()
        .map_err(|e| ClientError::Other(format!("cannot build the HTTP client: {e}")))
}

/// Sends a JSON POST and returns the response when its status is a success.
pub(crate) async fn post_json(
    http: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: &Value,
) -> Result<reqwest::Response, ClientError> {
    let mut req = http.post(url).json(body);
    if let Some(key) = api_key {
        req = req.bearer_auth(key);
    }
    let response = req.send().await.map_err(|e| ClientError::Transport {
        url: url.to_owned(),
        message: e.to_string(),
    })?;
    let status = response.status();
    if !status.is_success() {
        let body = read_bounded(response, url).await.unwrap_or_default();
        return Err(ClientError::Status {
            status: status.as_u16(),
            body_tail: tail(&body, 500),
        });
    }
    Ok(response)
}

/// Joins a base URL and an endpoint path, accepting bases with or without `/v1`.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with(path) {
        base.to_owned()
    } else if base.ends_with("/v1") {
        format!("{base}{path}")
    } else {
        format!("{base}/v1{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_accept_common_base_urls() {
        let p = "/chat/completions";
        for base in [
            "http://127.0.0.1:1",
            "http://127.0.0.1:1/",
            "http://127.0.0.1:1/v1",
            "http://127.0.0.1:1/v1/chat/completions",
        ] {
            assert_eq!(endpoint(base, p), "http://127.0.0.1:1/v1/chat/completions");
        }
    }

    //
    #[test]
    fn arguments_strings() {
        assert_eq!(parse_arguments(""), serde_json::json!({}));
        assert_eq!(parse_arguments("{\"a\":1}"), serde_json::json!({"a":1}));
        assert_eq!(parse_arguments("{\"a\":"), serde_json::json!("{\"a\":"));
    }
}
