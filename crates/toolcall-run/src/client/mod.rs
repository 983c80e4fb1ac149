//! Model clients over a provider-neutral conversation.
//!
//! A [`ModelRequest`] carries the conversation as [`Message`]s and the tools to offer (none
//! for a final, tool-free request). [`ApiClient`] speaks any dialect registered in
//! `toolcall-wire` ([`toolcall_wire::Api`]): the conversation becomes the neutral request
//! ([`conversation`]), the dialect's module writes the provider's body and reads its reply
//! back, and the reply becomes a [`ModelReply`]: visible text plus native [`ToolCall`]s,
//! with the provider-safe name aliases translated back to registry ids. No client here
//! writes or walks provider JSON itself.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use toolcall_core::NameMap;
use toolcall_core::{CallId, ToolCall, ToolSpec};

pub mod conversation;
pub mod http;
pub mod images;
mod options;
pub mod replay;
pub mod transport;

pub use conversation::{chat_request, chat_tools, to_chat_messages, to_messages_for};
pub use http::ApiClient;
pub use options::{RequestOptions, ToolChoice};
pub use replay::ReplayClient;
/// A parsed URL, as [`transport::Transport::post_json_text_to`] takes it (reqwest's).
pub use reqwest::Url;
pub use toolcall_wire::Api;
pub use transport::{RetryPolicy, SseReader, Timeouts, Transport};

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
    /// as one user message in the calls' family's result syntax (Hermes
    /// `<tool_response call_id=".." name="..">` blocks by default), followed by
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
    /// The format the call was read in: the results are written back as that family's
    /// models read them (`toolcall_parse::write_tool_results`; Hermes when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub format: String,
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
    /// Reasoning the server kept apart from the text (`reasoning_content` / `reasoning` /
    /// `thinking`, reasoning items): never part of `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Why the model stopped, as the server said it (`stop`, `tool_calls`, `length`, ...):
    /// tells the text parser whether a call missing its closing marker was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// Why a model request failed; the kind is kept so retry logic and users can tell a timeout
/// from a refused connection, an HTTP status or a cut stream.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("timeout: the model at {url} did not answer within {after:?} ({phase})")]
    Timeout {
        url: String,
        phase: TimeoutPhase,
        after: std::time::Duration,
    },
    #[error("cannot connect to the model at {url}: {message}")]
    Connect { url: String, message: String },
    #[error("the connection to the model at {url} failed: {message}")]
    Transport { url: String, message: String },
    #[error("the model server answered {status}: {body_tail}")]
    Status {
        status: u16,
        body_tail: String,
        /// The server's `Retry-After`, when it sent one in seconds.
        retry_after: Option<std::time::Duration>,
    },
    /// The reply stream ended without saying it finished: never taken as a reply.
    #[error("the model's reply from {url} was cut: {message}")]
    Cut { url: String, message: String },
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

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Establishing the connection.
    Connect,
    /// Waiting for the next bytes of the response.
    Read,
    /// The whole request.
    Total,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connect timeout",
            TimeoutPhase::Read => "read timeout: nothing received",
            TimeoutPhase::Total => "request timeout",
        })
    }
}

impl ClientError {
    /// Whether trying again may help: 429/502/503/504, a refused or failed connection, a
    /// connect timeout, a cut stream. A read timeout is not retried (the model is slow, and
    /// waiting again multiplies the wait).
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Status { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            ClientError::Connect { .. }
            | ClientError::Transport { .. }
            | ClientError::Cut { .. } => true,
            ClientError::Timeout { phase, .. } => *phase == TimeoutPhase::Connect,
            _ => false,
        }
    }

    /// A wire-format error met while reading `url`'s reply.
    pub fn from_wire(e: toolcall_wire::WireError, url: &str) -> Self {
        use toolcall_wire::WireError;
        match e {
            WireError::Cut(message) => ClientError::Cut {
                url: url.to_owned(),
                message,
            },
            WireError::TooLarge(n) => ClientError::TooLarge(n),
            other => ClientError::BadResponse(other.to_string()),
        }
    }
}

/// Receives the reply's text as it arrives; see [`ModelClient::complete_streaming`].
pub type TextSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// A language model that answers a conversation.
#[async_trait]
pub trait ModelClient: Send + Sync {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError>;

    /// [`Self::complete`], handing each piece of the reply's text to `on_text` as the
    /// model streams it (call markup included: the text is the model's). A client that
    /// reads whole replies hands none; the reply is the same either way. All the text
    /// handed belongs to one attempt: a failure before any text was handed is retried as
    /// by [`Self::complete`], one after it is not (the consumer has shown text that a
    /// retry would repeat, or word differently), so a stream cut mid-reply is the error.
    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
    ) -> Result<ModelReply, ClientError> {
        let _ = on_text;
        self.complete(request).await
    }
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

/// Joins a base URL and an endpoint path, accepting bases with or without `/v1`.
pub fn endpoint(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with(path) {
        base.to_owned()
    } else if base.ends_with("/v1") || base.ends_with("/v1beta") {
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
}
