//! MCP both ways, on the official Rust SDK (`rmcp`).
//!
//! | module | owns |
//! |---|---|
//! | [`server`] | [`McpToolServer`]: a registry's enabled tools served to MCP clients, calls run through the [`toolcall_run::Executor`] (validation, timeouts, approval), over stdio ([`serve_stdio`]) or Streamable HTTP ([`serve_http`], with the gateway's client API key check, `toolcall_serve::auth`) |
//! | [`client`] | [`McpTool`]: each tool of an MCP server (a child process on stdio, or a Streamable HTTP endpoint) as a toolcall [`toolcall_core::Tool`] named `SERVER.tool`; [`connect`] lists them into a registry |
//! | [`convert`] | tool specs and results between toolcall's shapes and MCP's |
//! | [`stdio`] | the stdio transport: newline-delimited JSON-RPC where every request gets an answer (`-32700` for a line that is not JSON, `-32602` for bad `tools/call` params), which rmcp's own does not give |
//! | [`switches`] | [`follow_switches`]: the inspector's tool switches file followed while serving, so switching a tool off or on reaches clients as `notifications/tools/list_changed` |
//!
//! Failures of a tool are MCP results with `isError: true` carrying toolcall's error code and
//! message, never protocol errors; in the other direction an `isError` result of a server is a
//! `tool_failed` result, and a server that crashes or hangs fails the calls it had and is
//! started again on the next call.

pub mod client;
pub mod convert;
pub mod server;
pub mod stdio;
pub mod switches;

pub use client::{ConnectOptions, McpConnection, McpTool, connect, connect_all};
pub use server::{McpToolServer, serve_http, serve_lines, serve_stdio};
pub use switches::follow_switches;

/// Why MCP could not be set up (calls themselves never fail with this: they give results).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server {server:?}: cannot start {program:?}: {source}")]
    Spawn {
        server: String,
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("MCP server {server:?}: {message}")]
    Connect { server: String, message: String },
    #[error("MCP server {server:?}: {message}")]
    Config { server: String, message: String },
    #[error(transparent)]
    Registry(#[from] toolcall_core::RegistryError),
    #[error("MCP transport: {0}")]
    Transport(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}
