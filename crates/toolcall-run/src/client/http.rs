//! The one HTTP model client, for every dialect registered in `toolcall-wire`
//! ([`Api`]: Chat Completions, Responses, Anthropic Messages, Gemini): the conversation
//! becomes the neutral request ([`super::conversation`]), the dialect's module writes the
//! body, its path and its key headers, and reads the whole reply or the stream's events,
//! accumulated into one reply ([`Accumulator`]: a stream that never said it finished is
//! [`ClientError::Cut`], never a reply). One attempt (post, then read) is retried by the
//! transport.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use toolcall_wire::dialect::{Accumulator, Delta};
use toolcall_wire::{Api, Limits, Reply};

use super::conversation::{chat_request, native_call};
use super::transport::{RetryPolicy, Timeouts, Transport};
use super::{
    ClientError, ModelClient, ModelReply, ModelRequest, NameMap, TextSink, endpoint, id_of,
    name_map,
};

/// A model server speaking one dialect.
pub struct ApiClient {
    api: Api,
    base_url: String,
    model: String,
    api_key: Option<String>,
    stream: bool,
    transport: Transport,
}

impl ApiClient {
    /// A client of `api` at `base_url`: the server root, its `/v1` (`/v1beta` for Gemini),
    /// or the full endpoint.
    pub fn new(api: Api, base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Ok(ApiClient {
            api,
            base_url: base_url.to_owned(),
            model: model.into(),
            api_key: None,
            stream: false,
            transport: Transport::new(Timeouts::default(), RetryPolicy::default())?,
        })
    }

    /// `/v1/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio).
    pub fn chat(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Self::new(Api::CHAT, base_url, model)
    }

    /// `/v1/responses`.
    pub fn responses(base_url: &str, model: impl Into<String>) -> Result<Self, ClientError> {
        Self::new(registered("responses")?, base_url, model)
    }

    /// The dialect this client speaks.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The key, sent as the dialect sends it (`Authorization: Bearer`, `x-api-key`, …).
    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// Reads the API key from an environment variable; an unset variable is an error.
    pub fn with_api_key_env(self, var: &str) -> Result<Self, ClientError> {
        Ok(self.with_api_key(Some(api_key_from_env(var)?)))
    }

    /// Asks for a streamed reply (server-sent events) instead of one JSON answer.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Bounds the whole request to `timeout` (connect and read timeouts stay as they are).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ClientError> {
        let timeouts = Timeouts {
            total: Some(timeout),
            ..self.transport.timeouts()
        };
        self.transport = Transport::new(timeouts, self.transport.retry_policy())?;
        Ok(self)
    }

    /// Sets the connect/read timeouts and the retry policy.
    pub fn with_transport(
        mut self,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Result<Self, ClientError> {
        self.transport = Transport::new(timeouts, retry)?;
        Ok(self)
    }

    /// Where requests go.
    pub fn url(&self) -> String {
        endpoint(
            &self.base_url,
            &self.api.dialect().path(&self.model, self.stream),
        )
    }

    /// The request body sent for `request`, in this client's dialect.
    pub fn body(&self, request: &ModelRequest) -> Result<Value, ClientError> {
        let chat = chat_request(self.api, &self.model, request, self.stream);
        let mut body = self
            .api
            .dialect()
            .encode_request(&chat)
            .map_err(|e| ClientError::Other(e.to_string()))?;
        request.options.add_extra(&mut body);
        Ok(body)
    }

    /// Sends `request` and reads the reply, retried per the transport's policy (a model
    /// request has no side effects, so a cut stream is retried too). Streamed text is
    /// handed to `on_text` as it arrives; once some was, a failure is not retried (the
    /// consumer has shown that attempt's text; see [`ModelClient::complete_streaming`]).
    async fn ask(
        &self,
        request: &ModelRequest,
        on_text: Option<TextSink<'_>>,
    ) -> Result<ModelReply, ClientError> {
        let body = self.body(request)?;
        let url = self.url();
        // Each attempt borrows the sink in turn.
        let on_text = std::sync::Mutex::new(on_text);
        let told = AtomicBool::new(false);
        let reply = self
            .transport
            .retrying_until_committed(
                || self.attempt(&url, &body, &on_text, &told),
                || told.load(Ordering::Relaxed),
            )
            .await?;
        Ok(model_reply(
            reply,
            &name_map(request),
            native_format(self.api),
        ))
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        on_text: &std::sync::Mutex<Option<TextSink<'_>>>,
        told: &AtomicBool,
    ) -> Result<Reply, ClientError> {
        let dialect = self.api.dialect();
        let headers = self
            .api_key
            .as_deref()
            .map(|k| dialect.auth_headers(k))
            .unwrap_or_default();
        let response = self.transport.post_json_with(url, &headers, body).await?;
        let limits = Limits::default();
        let wire = |e| ClientError::from_wire(e, url);
        if !self.stream {
            let text = self.transport.read_bounded(response, url).await?;
            return dialect
                .decode_reply(&text, &limits)
                .map(|(r, _)| r)
                .map_err(wire);
        }
        let mut events = self.transport.events(response, url);
        let mut decoder = dialect.stream_decoder(limits);
        let mut acc = Accumulator::new(limits);
        let mut deltas = Vec::new();
        'read: while let Some((event, data)) = events.next().await? {
            deltas.clear();
            decoder.push(&event, &data, &mut deltas).map_err(wire)?;
            for d in &deltas {
                acc.push(d).map_err(wire)?;
                match d {
                    Delta::Text(text) if !text.is_empty() => {
                        if let Ok(mut sink) = on_text.lock()
                            && let Some(sink) = sink.as_mut()
                        {
                            told.store(true, Ordering::Relaxed);
                            sink(text);
                        }
                    }
                    Delta::Done => break 'read,
                    _ => {}
                }
            }
        }
        acc.finish().map(|(r, _)| r).map_err(wire)
    }
}

#[async_trait]
impl ModelClient for ApiClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        self.ask(request, None).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
    ) -> Result<ModelReply, ClientError> {
        self.ask(request, Some(on_text)).await
    }
}

/// The dialect registered as `name`.
fn registered(name: &str) -> Result<Api, ClientError> {
    name.parse::<Api>()
        .map_err(|e| ClientError::Other(e.to_string()))
}

/// The origin format of a dialect's native calls (`openai_chat`, `openai_responses`, or the
/// dialect's name).
pub fn native_format(api: Api) -> &'static str {
    match api.name() {
        "chat" => "openai_chat",
        "responses" => "openai_responses",
        other => other,
    }
}

/// The API key in environment variable `var`; an unset variable is an error.
pub(super) fn api_key_from_env(var: &str) -> Result<String, ClientError> {
    std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.to_owned()))
}

/// A wire reply as a model reply: calls of origin `format`, names mapped back to registry
/// ids, undecodable arguments kept as their raw string (the one arguments policy, R-6).
pub(super) fn model_reply(reply: Reply, names: &NameMap, format: &str) -> ModelReply {
    ModelReply {
        calls: reply
            .calls
            .iter()
            .map(|c| {
                native_call(
                    c.id.as_deref(),
                    id_of(names, &c.name),
                    c.arguments_value(),
                    format,
                )
            })
            .collect(),
        text: reply.text,
        reasoning: reply.reasoning,
        finish_reason: reply.finish_reason,
    }
}
