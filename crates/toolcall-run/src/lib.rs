//! Everything after parsing: the executor, model clients, the agent loop, and the session
//! archive.
//!
//! | module | owns |
//! |---|---|
//! | [`executor`] | running calls in order: one result per call, timeouts, panics, approval, jobs, tracing |
//! | [`redact`] | secret redaction for logs and the archive |
//! | [`client`] | the provider-neutral conversation and the model clients (one HTTP client for every `toolcall-wire` dialect, replay) |
//! | [`agent`] | the loop: model → calls → results → model, bounded rounds, repeat-failure breaker |
//! | [`events`] | the events a turn produces, read by every consumer (stream, observers) |
//! | [`builder`] | [`Agent::builder`]: an agent from a model endpoint, tools and options in one expression |
//! | [`archive`] | the session archive over a backend (SQLite file; PostgreSQL for replicas), and its recorder: the loop's events written on a thread of its own |
//! | [`replay`] | the recorded-session file format |
//! | [`server`] | server-side tools for a gateway: a client's Chat Completions request answered by an agent turn |

pub mod agent;
pub mod archive;
pub mod builder;
pub mod client;
pub mod events;
pub mod executor;
pub mod redact;
pub mod replay;
pub mod server;

pub use agent::{Agent, AgentConfig, AgentError, Mode, RoundReport, TurnReport, TurnStream};
pub use archive::{Archive, ArchiveError};
pub use builder::{AgentBuilder, BuildError, OpenAi};
pub use client::{
    Api, ApiClient, ClientError, Message, ModelClient, ModelReply, ModelRequest, ReplayClient,
    RequestOptions, RetryPolicy, TextResult, TextSink, Timeouts, ToolChoice, Transport,
};
pub use events::{AgentEvent, Observer};
pub use executor::{ApproveAll, ApproveWith, Approver, DenyAll, Executor, SessionContext, Timed};
pub use replay::SessionFile;
