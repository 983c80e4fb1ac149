//! MCP servers' tools as toolcall tools.
//!
//! An [`McpConnection`] owns one server: a child process started from an argument vector
//! (never a shell) speaking MCP on stdio, or a Streamable HTTP endpoint. [`connect`] starts
//! it, lists its tools and registers each as an [`McpTool`] named `SERVER.tool` (providers
//! that forbid dots get aliases from the renderer's name map). A call is a `tools/call`
//! bounded by the executor's timeout; an `isError` result is `tool_failed`. When the server
//! dies or a call is abandoned (the executor's timeout drops it), that connection is marked
//! stale: the calls it had fail, and the next call starts the server again. Messages are
//! bounded by [`ConnectOptions::max_message_bytes`]: a stdio line longer than that ends the
//! connection at once ([`LineCap`]: the calls it had fail with `tool_failed` saying so, and
//! the server is started again on the next call), an HTTP body or SSE event over it fails its
//! call; the executor's output cap applies to what is returned.

use std::collections::HashMap;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use axum::http::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use toolcall_core::{McpServer, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::McpError;
use crate::convert::{spec_from_mcp, tool_outcome};

/// Most tools taken from one server.
pub const MAX_TOOLS_PER_SERVER: usize = 1000;
/// Most `tools/list` pages read from one server.
const MAX_LIST_PAGES: usize = 64;

/// Limits of a connection.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Largest message accepted from the server (a stdio line, an HTTP body or SSE event).
    pub max_message_bytes: usize,
    /// How long starting the server and listing its tools may take.
    pub connect_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            // Room for the executor's largest output, JSON-escaped once more.
            max_message_bytes: 2 * toolcall_run::executor::DEFAULT_MAX_OUTPUT_BYTES,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

struct Live {
    generation: u64,
    service: RunningService<RoleClient, ClientConfig>,
    // Dropping the child kills it (`kill_on_drop`).
    _child: Option<tokio::process::Child>,
}

/// One MCP server, started (or reached) on demand and started again after a failure.
pub struct McpConnection {
    server: McpServer,
    options: ConnectOptions,
    live: tokio::sync::Mutex<Option<Live>>,
    generations: AtomicU64,
    /// The generation found broken (0: none).
    stale: AtomicU64,
    /// Set when the live connection ended because the server sent an oversized line.
    oversized: Arc<AtomicBool>,
}

/// Marks the connection stale unless disarmed: a call future dropped mid-way (a timeout)
/// leaves a server that may be hung.
struct StaleOnDrop<'a> {
    conn: &'a McpConnection,
    generation: u64,
    armed: bool,
}

impl Drop for StaleOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.stale.store(self.generation, Ordering::SeqCst);
        }
    }
}

impl McpConnection {
    pub fn new(server: McpServer, options: ConnectOptions) -> Arc<Self> {
        Arc::new(McpConnection {
            server,
            options,
            live: tokio::sync::Mutex::new(None),
            generations: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            oversized: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn server(&self) -> &McpServer {
        &self.server
    }

    fn err(&self, message: impl Into<String>) -> McpError {
        McpError::Connect {
            server: self.server.name().to_owned(),
            message: message.into(),
        }
    }

    /// The peer of a working connection, starting the server when there is none or the last
    /// one broke.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), McpError> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_ref() {
            let broken = self.stale.load(Ordering::SeqCst) == l.generation
                || l.service.is_closed()
                || l.service.is_transport_closed();
            if !broken {
                return Ok((l.service.peer().clone(), l.generation));
            }
            tracing::warn!(
                target: "toolcall",
                server = self.server.name(),
                "MCP server connection broke; starting it again"
            );
        }
        // Drop the old one first: its child is killed.
        *live = None;
        let started = tokio::time::timeout(self.options.connect_timeout, self.start())
            .await
            .map_err(|_| {
                self.err(format!(
                    "did not initialise within {} ms",
                    self.options.connect_timeout.as_millis()
                ))
            })??;
        let peer = started.service.peer().clone();
        let generation = started.generation;
        *live = Some(started);
        Ok((peer, generation))
    }

    async fn start(&self) -> Result<Live, McpError> {
        let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
        let max = self.options.max_message_bytes;
        match &self.server {
            McpServer::Stdio { name, argv, env } => {
                let Some((program, args)) = argv.split_first() else {
                    return Err(self.err("the command is empty"));
                };
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args)
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|source| McpError::Spawn {
                    server: name.clone(),
                    program: program.clone(),
                    source,
                })?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(self.err("the child's stdio pipes are missing"));
                };
                self.oversized.store(false, Ordering::SeqCst);
                let stdout = LineCap::new(stdout, max, self.oversized.clone());
                let transport =
                    AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(max);
                let service = client_config()
                    .serve(transport)
                    .await
                    .map_err(|e| self.err(format!("initialise failed: {e}")))?;
                Ok(Live {
                    generation,
                    service,
                    _child: Some(child),
                })
            }
            McpServer::Http { url, headers, .. } => {
                let client = toolcall_packs::backend::http::default_client()
                    .map_err(|e| self.err(e.to_string()))?;
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    let name = HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| self.err(format!("invalid header name {k:?}")))?;
                    let value = HeaderValue::from_str(v)
                        .map_err(|_| self.err(format!("invalid value for header {k:?}")))?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom)
                    .max_json_response_size(max)
                    .max_sse_event_size(max);
                let transport =
                    StreamableHttpClientTransport::with_client(client.reqwest().clone(), config);
                let service = client_config()
                    .serve(transport)
                    .await
                    .map_err(|e| self.err(format!("initialise failed: {e}")))?;
                Ok(Live {
                    generation,
                    service,
                    _child: None,
                })
            }
        }
    }

    /// The server's tools (starting it if needed), at most [`MAX_TOOLS_PER_SERVER`].
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let (peer, _) = self.peer().await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor
                .take()
                .map(|c| rmcp::model::PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = peer
                .list_tools(params)
                .await
                .map_err(|e| self.err(format!("tools/list failed: {e}")))?;
            tools.extend(page.tools);
            if tools.len() > MAX_TOOLS_PER_SERVER {
                return Err(self.err(format!("offers more than {MAX_TOOLS_PER_SERVER} tools")));
            }
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(tools),
            }
        }
        Err(self.err(format!("tools/list has more than {MAX_LIST_PAGES} pages")))
    }

    /// Calls the server's tool `tool` (its own name, without the prefix).
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        let (peer, generation) = self
            .peer()
            .await
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let mut guard = StaleOnDrop {
            conn: self,
            generation,
            armed: true,
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(args) = arguments {
            params = params.with_arguments(args);
        }
        let outcome = peer.call_tool(params).await;
        guard.armed = false;
        match outcome {
            Ok(result) => tool_outcome(result),
            Err(ServiceError::McpError(e)) => Err(ToolError::failed(format!(
                "MCP server {:?} refused the call: {}",
                self.server.name(),
                e.message
            ))),
            Err(e) => {
                self.stale.store(generation, Ordering::SeqCst);
                let why = if self.oversized.load(Ordering::SeqCst) {
                    format!(
                        "sent a message larger than {} bytes",
                        self.options.max_message_bytes
                    )
                } else {
                    format!("failed during the call ({e})")
                };
                Err(ToolError::failed(format!(
                    "MCP server {:?} {why}; it is started again on the next call",
                    self.server.name()
                )))
            }
        }
    }
}

/// A server's stdout that fails (ending the connection) once a line grows past `max` bytes.
/// The transport's own line limit drops such a line and goes on, which leaves the call that
/// waited for it hanging until its timeout; ending the connection fails it at once.
struct LineCap<R> {
    inner: R,
    max: usize,
    line: usize,
    over: Arc<AtomicBool>,
}

impl<R> LineCap<R> {
    fn new(inner: R, max: usize, over: Arc<AtomicBool>) -> Self {
        LineCap {
            inner,
            max,
            line: 0,
            over,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.over.load(Ordering::SeqCst) {
            return Poll::Ready(Err(oversized(this.max)));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let mut rest = &buf.filled()[before..];
            let mut line = this.line;
            let mut over = false;
            while let Some(i) = memchr::memchr(b'\n', rest) {
                over |= line.saturating_add(i) > this.max;
                line = 0;
                rest = &rest[i + 1..];
            }
            this.line = line.saturating_add(rest.len());
            if over || this.line > this.max {
                this.over.store(true, Ordering::SeqCst);
                // None of this read is handed on.
                buf.set_filled(before);
                return Poll::Ready(Err(oversized(this.max)));
            }
        }
        polled
    }
}

fn oversized(max: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the MCP server sent a line longer than {max} bytes"),
    )
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("toolcall", env!("CARGO_PKG_VERSION")),
    )
}

/// One tool of an MCP server.
pub struct McpTool {
    spec: ToolSpec,
    remote_name: String,
    connection: Arc<McpConnection>,
}

impl McpTool {
    pub fn new(spec: ToolSpec, remote_name: String, connection: Arc<McpConnection>) -> Self {
        McpTool {
            spec,
            remote_name,
            connection,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.connection.call(&self.remote_name, arguments).await
    }
}

/// Starts `server`, lists its tools and returns them as a registry of [`McpTool`]s named
/// `SERVER.tool`. Tools whose MCP names cannot be toolcall ids are skipped with a warning.
pub async fn connect(server: &McpServer, options: ConnectOptions) -> Result<Registry, McpError> {
    let prefix = server.name().to_owned();
    if !toolcall_core::tools_file::is_valid_mcp_server_name(&prefix) {
        return Err(McpError::Config {
            server: prefix,
            message: "a server name is 1-64 letters, digits, '_' or '-'".into(),
        });
    }
    let connection = McpConnection::new(server.clone(), options);
    let tools = connection.list_tools().await?;
    let mut registry = Registry::new();
    for tool in &tools {
        let Some(spec) = spec_from_mcp(&prefix, tool) else {
            tracing::warn!(
                target: "toolcall",
                server = %prefix,
                tool = %tool.name,
                "skipping an MCP tool whose name cannot be a tool id"
            );
            continue;
        };
        let mcp_tool = McpTool::new(spec, tool.name.to_string(), connection.clone());
        registry.add_tool(Arc::new(mcp_tool))?;
    }
    Ok(registry)
}

/// [`connect`] for each server, merged into one registry.
pub async fn connect_all(
    servers: &[McpServer],
    options: &ConnectOptions,
) -> Result<Registry, McpError> {
    let mut registry = Registry::new();
    for server in servers {
        registry.merge(connect(server, options.clone()).await?)?;
    }
    Ok(registry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_capped(parts: &[&'static [u8]], max: usize) -> (std::io::Result<usize>, bool) {
        let over = Arc::new(AtomicBool::new(false));
        let mut reader: Box<dyn AsyncRead + Unpin + Send> = Box::new(tokio::io::empty());
        for part in parts {
            reader = Box::new(reader.chain(*part));
        }
        let mut capped = LineCap::new(reader, max, over.clone());
        let mut out = Vec::new();
        let read = capped.read_to_end(&mut out).await;
        (read, over.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn lines_up_to_the_cap_pass_and_a_longer_one_ends_the_stream() {
        let (read, over) = read_capped(&[b"abcd\nef\n", b"ghij\n"], 4).await;
        assert_eq!(read.unwrap(), 13);
        assert!(!over);
        // A line split over reads is counted whole.
        let (read, over) = read_capped(&[b"ab\nabc", b"de\nx\n"], 4).await;
        assert_eq!(read.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
        assert!(over);
        // A long line inside one read, followed by short ones.
        let (read, over) = read_capped(&[b"a\nabcdefgh\nb\n"], 4).await;
        assert!(read.is_err() && over);
        // An unterminated tail over the cap.
        let (read, _) = read_capped(&[b"ab\n", b"abcde"], 4).await;
        assert!(read.is_err());
    }
}
