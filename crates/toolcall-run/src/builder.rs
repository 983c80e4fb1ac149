//! An [`Agent`] assembled in one expression, the way the agent SDKs read:
//!
//! ```no_run
//! # async fn demo(get_weather: impl toolcall_core::Tool + 'static) -> Result<(), Box<dyn std::error::Error>> {
//! use toolcall_run::{Agent, OpenAi};
//! let mut agent = Agent::builder()
//!     .model(OpenAi::chat("http://127.0.0.1:11434", "qwen2.5:7b"))
//!     .tool(get_weather)
//!     .max_rounds(5)
//!     .temperature(0.2)
//!     .build()?;
//! let report = agent.run("What is the weather in Paris?").await?;
//! println!("{}", report.final_text.unwrap_or_default());
//! # Ok(()) }
//! ```
//!
//! `agent.run_stream(..)` plays the same turn as a stream of [`crate::AgentEvent`]s.
//!
//! The builder owns nothing new: it fills an [`AgentConfig`] (with its
//! [`RequestOptions`]), a [`Registry`] and an [`Executor`], and builds the model client
//! from an [`OpenAi`] endpoint description (or takes any [`ModelClient`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolcall_core::{Registry, RegistryError, Tool};

use crate::agent::{Agent, AgentConfig, Mode};
use crate::client::{Api, ApiClient, ClientError, ModelClient, RequestOptions, ToolChoice};
use crate::executor::{Approver, Executor};

/// A model endpoint in any dialect registered in `toolcall-wire` (OpenAI Chat Completions
/// and Responses, as OpenAI, Ollama, vLLM, llama.cpp server and LM Studio speak them;
/// Anthropic Messages; Gemini): the base URL (server root, its `/v1` or `/v1beta`, or the
/// full endpoint), the model name, and how to call it. The client is built by
/// [`AgentBuilder::build`] or [`OpenAi::client`].
#[derive(Debug, Clone)]
pub struct OpenAi {
    api: Api,
    url: String,
    model: String,
    api_key: Option<ApiKey>,
    stream: bool,
    timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
enum ApiKey {
    Value(String),
    Env(String),
}

impl OpenAi {
    /// `/v1/chat/completions`.
    pub fn chat(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::new(Api::CHAT, url, model)
    }

    /// `/v1/responses`.
    pub fn responses(url: impl Into<String>, model: impl Into<String>) -> Self {
        let api = Api::from_name("responses").unwrap_or_default();
        Self::new(api, url, model)
    }

    /// An endpoint speaking `api` (`"anthropic".parse()`, `"gemini".parse()`, …).
    pub fn new(api: Api, url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAi {
            api,
            url: url.into(),
            model: model.into(),
            api_key: None,
            stream: false,
            timeout: None,
        }
    }

    /// The model name sent to the server.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// Sends this key (as the dialect sends keys: a bearer token, `x-api-key`, …).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::Value(key.into()));
        self
    }

    /// Reads the key from this environment variable when the client is built; an unset
    /// variable is [`ClientError::MissingApiKey`].
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::Env(var.into()));
        self
    }

    /// Asks for server-sent events instead of one JSON answer.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Total time allowed for one request (the clients' default otherwise).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The model client for this endpoint.
    pub fn client(&self) -> Result<Arc<dyn ModelClient>, ClientError> {
        let key = match &self.api_key {
            None => None,
            Some(ApiKey::Value(k)) => Some(k.clone()),
            Some(ApiKey::Env(var)) => {
                Some(std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.clone()))?)
            }
        };
        let mut c = ApiClient::new(self.api, &self.url, self.model.clone())?
            .with_api_key(key)
            .streaming(self.stream);
        if let Some(t) = self.timeout {
            c = c.with_timeout(t)?;
        }
        Ok(Arc::new(c))
    }
}

/// Why [`AgentBuilder::build`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("no model: call .model(OpenAi::chat(url, name)) or .client(..)")]
    NoModel,
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

enum ModelSource {
    Endpoint(OpenAi),
    Client(Arc<dyn ModelClient>),
}

/// Builds an [`Agent`]; see the module docs.
#[derive(Default)]
pub struct AgentBuilder {
    model: Option<ModelSource>,
    registry: Registry,
    /// The first registry error, reported by `build` so the chain stays fluent.
    error: Option<RegistryError>,
    config: AgentConfig,
    tool_timeout: Option<Duration>,
    approver: Option<Arc<dyn Approver>>,
}

impl Agent {
    /// Starts an [`AgentBuilder`].
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// Runs one user turn: the same as [`Agent::run_turn`].
    pub async fn run(
        &mut self,
        user_input: &str,
    ) -> Result<crate::agent::TurnReport, crate::agent::AgentError> {
        self.run_turn(user_input).await
    }

    /// Runs one user turn as a stream of its events: the same as
    /// [`Agent::run_turn_stream`].
    pub fn run_stream(&mut self, user_input: impl Into<String>) -> crate::agent::TurnStream<'_> {
        self.run_turn_stream(user_input)
    }
}

impl AgentBuilder {
    /// The model endpoint.
    pub fn model(mut self, endpoint: OpenAi) -> Self {
        self.model = Some(ModelSource::Endpoint(endpoint));
        self
    }

    /// Any model client (a recorded session, a custom provider).
    pub fn client(mut self, client: Arc<dyn ModelClient>) -> Self {
        self.model = Some(ModelSource::Client(client));
        self
    }

    /// Adds a tool (a typed tool from the `toolcall` crate, a pack's tool, any [`Tool`]).
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        let added = self.registry.add_tool(Arc::new(tool));
        self.keep_first_error(added);
        self
    }

    /// Adds every tool of a registry (a pack, a tools file).
    pub fn tools(mut self, registry: Registry) -> Self {
        let merged = self.registry.merge(registry);
        self.keep_first_error(merged);
        self
    }

    fn keep_first_error(&mut self, result: Result<(), RegistryError>) {
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    /// Replaces the whole configuration (mode, rounds, prompts, request options).
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Tool rounds per turn.
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.config.max_rounds = rounds;
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.config.system_prompt = Some(prompt.into());
        self
    }

    /// The text format to instruct and parse in text mode.
    pub fn text_format(mut self, format: impl Into<String>) -> Self {
        self.config.text_format = Some(format.into());
        self
    }

    pub fn temperature(mut self, temperature: f64) -> Self {
        self.config.request_options.temperature = Some(temperature);
        self
    }

    pub fn top_p(mut self, top_p: f64) -> Self {
        self.config.request_options.top_p = Some(top_p);
        self
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.config.request_options.max_tokens = Some(max_tokens);
        self
    }

    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.config.request_options.tool_choice = Some(choice);
        self
    }

    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.config.request_options.parallel_tool_calls = Some(parallel);
        self
    }

    /// A further top-level request body field (see [`RequestOptions::extra`]).
    pub fn extra_body(mut self, key: impl Into<String>, value: Value) -> Self {
        self.config.request_options.extra.insert(key.into(), value);
        self
    }

    /// All request options at once.
    pub fn request_options(mut self, options: RequestOptions) -> Self {
        self.config.request_options = options;
        self
    }

    /// Timeout for tools whose spec sets none.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Decides on tools marked `requires_approval` (denied without one).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    pub fn build(self) -> Result<Agent, BuildError> {
        if let Some(e) = self.error {
            return Err(e.into());
        }
        let mut config = self.config;
        let client = match self.model {
            None => return Err(BuildError::NoModel),
            Some(ModelSource::Client(c)) => c,
            Some(ModelSource::Endpoint(e)) => {
                if config.text_format.is_none() {
                    config.text_format = crate::agent::text_format_for_model(e.model_name());
                }
                e.client()?
            }
        };
        let mut executor = Executor::new(Arc::new(self.registry));
        if let Some(t) = self.tool_timeout {
            executor = executor.with_default_timeout(t);
        }
        if let Some(a) = self.approver {
            executor = executor.with_approver(a);
        }
        Ok(Agent::new(client, Arc::new(executor), config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_without_a_model_says_so() {
        assert!(matches!(Agent::builder().build(), Err(BuildError::NoModel)));
    }

    #[test]
    fn a_missing_key_variable_is_reported_at_build() {
        let endpoint = OpenAi::chat("http://127.0.0.1:1", "m")
            .api_key_env("TOOLCALL_TEST_SURELY_UNSET_KEY_VARIABLE");
        let built = Agent::builder().model(endpoint).build();
        assert!(matches!(
            built,
            Err(BuildError::Client(ClientError::MissingApiKey(v))) if v == "TOOLCALL_TEST_SURELY_UNSET_KEY_VARIABLE"
        ));
    }
}
