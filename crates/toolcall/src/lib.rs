//! Turn any language model's output into validated, executed tool calls.
//!
//! `toolcall` finds tool calls in what a model writes (native provider shapes or a dozen
//! text formats, whole or streamed), checks them against each tool's JSON Schema, runs them
//! in order with call ids and timeouts, and sends every result back to the model under its
//! call id until the model answers. This crate is the front door: it re-exports what a
//! program needs from `toolcall-core` (calls, tools, the registry, validation, renderers),
//! `toolcall-parse` (the parsers) and `toolcall-run` (the executor, model clients, the agent
//! loop), and adds tools from typed async functions ([`tool`]).
//!
//! # Features
//!
//! The default build parses, validates and renders: it compiles `toolcall-core` and
//! `toolcall-parse` only (no tokio, reqwest, bundled SQLite or axum). Opt in to more:
//!
//! | feature | adds |
//! |---|---|
//! | `typed` | [`tool`], [`tool_json`], [`schema_of`]: tools from typed async functions (schemars) |
//! | `agent` | `typed`, and [`Agent`], [`Executor`], the model clients and the session archive (`toolcall-run`: tokio, reqwest, SQLite) |
//!
//! ```toml
//! toolcall = { version = "0.1", features = ["agent"] }
//! ```
//!
//! # Parse a reply
//!
//! [`parse`] finds the calls in a whole reply; the visible text keeps only the prose.
//!
//! ```
//! use toolcall::{ParseOptions, parse};
//!
//! let reply = r#"Let me check. <tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#;
//! let parsed = parse(reply, &ParseOptions::default());
//! assert_eq!(parsed.text.trim(), "Let me check.");
//! assert_eq!(parsed.calls[0].name, "get_weather");
//! assert_eq!(parsed.calls[0].arguments["city"], "Paris");
//! assert_eq!(parsed.calls[0].origin.format, "hermes");
//! ```
//!
//! # Parse a stream
//!
//! A [`StreamParser`] takes the reply in pieces as they arrive and emits [`StreamEvent`]s:
//! text as soon as it is known to be prose, and each call when it is complete
//! ([`StreamEvent::CallFinished`], the one event a consumer must act on).
//!
//! ```
//! use toolcall::{ParseOptions, StreamEvent, StreamParser};
//!
//! let mut parser = StreamParser::new(ParseOptions::default());
//! let mut events = Vec::new();
//! for piece in ["Sure. <tool_", r#"call>{"name":"get_weather","#, r#""arguments":{"city":"Paris"}}</tool_call>"#] {
//!     events.extend(parser.push(piece));
//! }
//! events.extend(parser.finish());
//! let calls: Vec<_> = events
//!     .iter()
//!     .filter_map(|e| match e {
//!         StreamEvent::CallFinished { call, .. } => Some(call),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(calls.len(), 1);
//! assert_eq!(calls[0].arguments["city"], "Paris");
//! ```
//!
//! # Validate
//!
//! A [`Registry`] holds the tools; [`Registry::validate_call`] checks a call against its
//! tool's schema, fixes only what has one reading (here the string `"3"` for an integer,
//! recorded as a repair), and otherwise answers with the errors the model must fix.
//! [`Registry::check_call`] gives the same verdict as a [`ValidationError`] to match on.
//!
//! ```
//! use toolcall::{ErrorCode, Registry, ToolCall, ToolSpec};
//! use serde_json::json;
//!
//! let mut registry = Registry::new();
//! registry.add_spec(ToolSpec::new(
//!     "get_forecast",
//!     "Forecast for a city",
//!     json!({"type": "object",
//!            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
//!            "required": ["city"]}),
//! ))?;
//!
//! let mut call = ToolCall::new("get_forecast", json!({"city": "Paris", "days": "3"}), "json");
//! registry.validate_call(&mut call).expect("coerced");
//! assert_eq!(call.arguments["days"], 3);
//! assert_eq!(call.origin.repairs[0].kind, "coerced_integer");
//!
//! let mut wrong = ToolCall::new("get_forecast", json!({"days": 3}), "json");
//! let error = registry.validate_call(&mut wrong).unwrap_err();
//! assert_eq!(error.code, ErrorCode::InvalidArguments);
//! # Ok::<(), toolcall::RegistryError>(())
//! ```
//!
//! # Run a turn
//!
//! A tool is an async function of a typed argument ([`tool`]): its schema comes from the
//! type. [`Agent::builder`] puts a model endpoint, tools and request options together;
//! [`Agent::run`] plays one user turn: the model's calls are validated and run, the results
//! go back under their call ids, until the model answers without calls (at most
//! `max_rounds` tool rounds).
//!
//! ```no_run
//! use toolcall::{Agent, OpenAi, tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// City name, e.g. "Paris".
//!     city: String,
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let get_weather = tool("get_weather", "Current weather for a city", |w: Weather| async move {
//!     Ok(serde_json::json!({"city": w.city, "celsius": 21}))
//! });
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
//! # Stream a turn
//!
//! [`Agent::run_stream`] plays the same turn as a stream of [`AgentEvent`]s: the reply's
//! text as it arrives, each call as it is parsed, validated, started and answered, and at
//! the end [`AgentEvent::TurnFinished`] with the report.
//!
//! ```no_run
//! use futures::StreamExt;
//! use toolcall::AgentEvent;
//!
//! # async fn demo(mut agent: toolcall::Agent) -> Result<(), toolcall::AgentError> {
//! let mut events = agent.run_stream("What is the weather in Paris?");
//! while let Some(event) = events.next().await {
//!     match event? {
//!         AgentEvent::TextDelta { text, .. } => print!("{text}"),
//!         AgentEvent::CallCompleted { name, duration_ms, .. } => {
//!             eprintln!("[{name} answered in {duration_ms} ms]")
//!         }
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Models without native tool calling work too: `.mode(Mode::Text)` describes the tools in
//! the system prompt and parses the calls from the reply's text.
//!
//! # Render tools for a provider
//!
//! [`render_tools`] gives a registry's tools in a provider's shape, with provider-safe
//! aliases for ids such as `vista.command.summary` (the [`NameMap`] turns them back).
//!
//! ```
//! use toolcall::{Provider, Registry, render_tools, tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather { city: String }
//!
//! let mut registry = Registry::new();
//! registry.add_tool(std::sync::Arc::new(tool("get_weather", "Current weather", |w: Weather| async move {
//!     Ok(w.city)
//! })))?;
//! let (tools, _names) = render_tools(&registry, Provider::OPENAI_CHAT);
//! assert_eq!(tools[0]["type"], "function");
//! assert_eq!(tools[0]["function"]["name"], "get_weather");
//! assert_eq!(tools[0]["function"]["parameters"]["required"][0], "city");
//! # Ok::<(), toolcall::RegistryError>(())
//! ```
//!
//! # Further
//!
//! The building blocks keep their own crates, re-exported whole for what this page does not
//! show: [`toolcall_core`] (tools files, renderers), [`toolcall_parse`]
//! (format selection, limits, fallback rules, text-mode prompt instructions) and [`toolcall_run`] (the session archive,
//! recorded sessions, program and HTTP tool backends).

#[cfg(feature = "typed")]
mod typed;

#[cfg(feature = "typed")]
pub use typed::{FnTool, schema_of, tool, tool_json};

pub use toolcall_core::{
    CallId, Diagnostic, ErrorCode, Event, Level, NameMap, Origin, Parsed, Provider, Registry,
    RegistryError, Repair, SchemaError, StreamEvent, Tool, ToolCall, ToolContext, ToolError,
    ToolKind, ToolOutput, ToolResult, ToolSpec, ValidationError,
};
pub use toolcall_parse::{
    Events, FormatId, FormatSelection, ParseError, ParseOptions, StreamParser, parse,
    render_prompt, text_formats,
};
#[cfg(feature = "agent")]
pub use toolcall_run::{
    Agent, AgentBuilder, AgentConfig, AgentError, AgentEvent, Api, ApiClient, ApproveAll,
    ApproveWith, Approver, BuildError, ClientError, Executor, Message, Mode, ModelClient,
    ModelReply, ModelRequest, OpenAi, ReplayClient, RequestOptions, RoundReport, ToolChoice,
    TurnReport, TurnStream,
};

/// Decoding constraints that keep a family's calls valid while the model writes them
/// (feature `constrain`): `toolcall::constrain::build(family, tools, dialect, options)`.
#[cfg(feature = "constrain")]
pub use toolcall_constrain as constrain;
pub use toolcall_core;
pub use toolcall_parse;
#[cfg(feature = "agent")]
pub use toolcall_run;

/// A registry's enabled tools in `provider`'s shape, and the name map that turns the
/// provider-safe aliases in replies back into tool ids.
pub fn render_tools(registry: &Registry, provider: Provider) -> (serde_json::Value, NameMap) {
    toolcall_core::render::render(registry, provider)
}
