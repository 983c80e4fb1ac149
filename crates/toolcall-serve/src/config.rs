//! The gateway's configuration: a TOML file (`--config`), with flags and environment
//! variables overriding it (the CLI applies those).
//!
//! ```toml
//! listen = "127.0.0.1:8090"
//! upstream = "http://127.0.0.1:11434"
//! upstream_api_key_env = "UPSTREAM_API_KEY"   # the upstream's key, read from this variable
//! upstream_api = "chat"                       # the upstream's dialect: chat | responses | anthropic
//! format = "auto"                             # or a family id; default: by model name
//! invalid_calls = "retry"                     # pass | drop | retry
//! announce_calls = "at_name"                  # streamed calls: at_name | when_checked
//! reasoning_calls = "ignore"                  # calls inside reasoning: ignore |
//!                                             # take_if_none_after; default: the family's
//! emulate_tools = false                       # tools in the prompt, for models without them
//! constrain = "off"                           # decoding constraint sent upstream: off |
//!                                             # structural_tag | gbnf | json_schema
//! api_keys = ["sk-local-1"]                   # clients must send one (Bearer); none = open
//! api_keys_env = "TOOLCALL_SERVE_API_KEYS"    # more keys, comma-separated
//! allowed_hosts = ["gw.example"]              # Host names answered besides loopback's and
//!                                             # the listen address (DNS-rebinding guard)
//! connect_timeout_secs = 10
//! read_timeout_secs = 120                     # idle: longest wait for the next bytes
//! request_timeout_secs = 600                  # one upstream attempt as a whole, streamed
//!                                             # or not (SSE keep-alives do not extend it)
//! retries = 3
//! max_tools = 512                             # tools one request may offer (else 400)
//! tools_memory_mib = 128                      # compiled tools alive at once (estimated);
//!                                             # half kept for reuse, half per request at most
//! bodies_memory_mib = 64                      # request bodies in flight (estimated decoded
//!                                             # size), held until the response is sent
//! archive = "postgres://gw@db/toolcall"       # server-side tools' session archive: a file
//!                                             # or a URL replicas share (`toolcall serve`)
//! header_read_timeout_secs = 10               # a request's head, from accept (or from its
//!                                             # first byte on a kept-alive connection)
//! body_read_timeout_secs = 60                 # a request's whole body (else 408)
//! keep_alive_timeout_secs = 75                # a connection with nothing in flight
//! max_connections = 512                       # open at once; more wait to be accepted
//! hosted_tools = "warn"                       # tools only a provider runs (web_search, …):
//!                                             # warn (dropped, logged, x-toolcall-dropped-tools)
//!                                             # | reject (400 naming them)
//!
//! [[models]]
//! match = "qwen*"
//! upstream = "http://10.0.0.5:8000"
//! format = "qwen3_coder"
//!
//! [[mcp]]                                     # an MCP server's tools, run server-side
//! transport = "stdio"                         # a child process (never a shell); or "http"
//! name = "calc"                               # its tools are calc.TOOL
//! argv = ["python3", "calc_server.py"]        # http: url = "http://…/mcp", [mcp.headers]
//! ```

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolcall_parse::FormatSelection;
use toolcall_run::{RetryPolicy, Timeouts};

/// What to do with a call to a tool the request did not offer, or with arguments that cannot
/// be made valid.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidCallPolicy {
    /// Send it to the client as it is.
    Pass,
    /// Leave it out and say so in the text.
    Drop,
    /// Ask the upstream once more with the validation error; drop if still invalid.
    /// In a stream, the retry happens when nothing of the bad call was sent yet (see
    /// [`AnnounceCalls`]); text and calls already sent stay, the retried reply continues.
    #[default]
    Retry,
}

/// When a streamed call is announced to the client (its chunk with `index`, `id`, `type`
/// and `function.name`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnounceCalls {
    /// As soon as the model wrote the name, once the name passes its checks (offered,
    /// allowed by `tool_choice` and `parallel_tool_calls`). Arguments follow once checked;
    /// a call whose arguments then fail the schema is the client's already: it is completed
    /// with the model's (repaired) arguments and, unless the policy is `pass`, a note in the
    /// text says what failed.
    #[default]
    AtName,
    /// Only once the whole call is checked: the invalid-call policy applies to every call,
    /// `retry` included, at the cost of a later first byte for each call.
    WhenChecked,
}

/// What to do with a hosted tool (`web_search`, `file_search`, `code_interpreter`,
/// Anthropic's `web_search_…`, …): one only the provider's own servers run, which no model
/// server behind the gateway can (see [`crate::tool_kinds`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostedTools {
    /// Leave it out, log one line per request naming it, and name it in the
    /// `x-toolcall-dropped-tools` response header.
    #[default]
    Warn,
    /// Answer `400` naming it.
    Reject,
}

/// Models matching a name glob go to their own upstream, optionally with their own family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRoute {
    /// A model-name glob (`*` any run, `?` one character), case-insensitive.
    #[serde(rename = "match")]
    pub pattern: String,
    #[serde(default)]
    pub upstream: Option<String>,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub upstream_api_key_env: Option<String>,
    /// Put the tools into the prompt instead of sending them natively.
    #[serde(default)]
    pub emulate_tools: Option<bool>,
    /// The dialect this upstream speaks; default: the top-level `upstream_api`.
    #[serde(default)]
    pub upstream_api: Option<toolcall_wire::Api>,
    /// Calls written inside reasoning; default: the top-level `reasoning_calls`.
    #[serde(default)]
    pub reasoning_calls: Option<toolcall_parse::ReasoningCalls>,
    /// The decoding constraint sent to this upstream; default: the top-level `constrain`.
    #[serde(default)]
    pub constrain: Option<crate::constrain::Constrain>,
    /// Hosted tools on this route; default: the top-level `hosted_tools`.
    #[serde(default)]
    pub hosted_tools: Option<HostedTools>,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub listen: String,
    pub upstream: String,
    pub upstream_api_key_env: Option<String>,
    /// The dialect the upstream speaks (`chat`, `responses`, `anthropic`): every front end
    /// reaches it through the same turn.
    pub upstream_api: toolcall_wire::Api,
    /// `auto`, a family id or a priority list; `None` = by the model name table.
    pub format: Option<String>,
    pub invalid_calls: InvalidCallPolicy,
    /// Calls written inside reasoning (`ignore`, `take_if_none_after`); `None` = the
    /// family's default.
    pub reasoning_calls: Option<toolcall_parse::ReasoningCalls>,
    /// When streamed calls are announced.
    pub announce_calls: AnnounceCalls,
    /// Put the tools into the system prompt, in the family's text format, and strip them
    /// from the upstream request (for models without native tool calling).
    pub emulate_tools: bool,
    /// The decoding constraint sent upstream (see [`crate::constrain`]).
    pub constrain: crate::constrain::Constrain,
    /// Hosted tools (`web_search`, …): `warn` drops them and says so, `reject` answers 400.
    pub hosted_tools: HostedTools,
    pub api_keys: Vec<String>,
    pub api_keys_env: Option<String>,
    pub models: Vec<ModelRoute>,
    /// `Host` names answered besides the loopback names and the listen address (`host` for
    /// any port, or `host:port`). A loopback listener, or any listener given names here,
    /// refuses every other `Host` with `403` (see [`crate::host`]).
    pub allowed_hosts: Vec<String>,
    /// MCP servers whose tools the gateway runs as server-side tools, named `NAME.tool`
    /// (`toolcall serve` connects them, with those of `--mcp`).
    pub mcp: Vec<toolcall_core::McpServer>,
    pub connect_timeout_secs: u64,
    /// The longest wait for the next bytes of an upstream reply (any bytes restart it).
    pub read_timeout_secs: u64,
    /// The deadline of one upstream attempt as a whole, from the request to the last byte
    /// of the reply, streamed or not; `0`: none.
    pub request_timeout_secs: u64,
    pub retries: u32,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Most tools one request may offer (a request over it is a `400`): compiled schemas
    /// cost tens of times their text, so the body limit alone does not bound memory.
    pub max_tools: usize,
    /// Largest reply text buffered per request or stream.
    pub max_reply_bytes: usize,
    /// MiB of estimated heap the requests' compiled tools may take at once, cached or in use
    /// (see [`crate::tools_cache`]): half is kept for reuse, a request's own tools may take
    /// at most half (else `400`), and a request whose tools do not fit now gets `503`.
    pub tools_memory_mib: u64,
    /// MiB of estimated heap the request bodies in flight may take at once (see
    /// [`crate::body`]): each holds its share from its first byte until its response is
    /// sent, streams included; a body that does not fit waits briefly, then gets `503`, and
    /// one larger than the whole budget `413`.
    pub bodies_memory_mib: u64,
    /// The session archive of server-side tools: an SQLite file or a `postgres://` URL
    /// (`toolcall serve` opens it; `--archive` and `$TOOLCALL_ARCHIVE` override it).
    pub archive: Option<String>,
    /// The longest a client may take to send a request's head, from the connection's accept
    /// (or, on a kept-alive connection, from the head's first byte); then the connection is
    /// closed. `0`: none.
    pub header_read_timeout_secs: u64,
    /// The longest a client may take to send a request's whole body, from the end of its
    /// head; then it is answered `408`. `0`: none.
    pub body_read_timeout_secs: u64,
    /// The longest a connection stays open with no request in flight and none arriving.
    /// `0`: none.
    pub keep_alive_timeout_secs: u64,
    /// Most client connections open at once; more wait, unaccepted, until one closes.
    pub max_connections: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8090".into(),
            upstream: "http://127.0.0.1:11434".into(),
            upstream_api_key_env: None,
            upstream_api: toolcall_wire::Api::CHAT,
            format: None,
            invalid_calls: InvalidCallPolicy::default(),
            reasoning_calls: None,
            announce_calls: AnnounceCalls::default(),
            emulate_tools: false,
            constrain: crate::constrain::Constrain::Off,
            hosted_tools: HostedTools::Warn,
            api_keys: Vec::new(),
            api_keys_env: None,
            models: Vec::new(),
            allowed_hosts: Vec::new(),
            mcp: Vec::new(),
            connect_timeout_secs: 10,
            read_timeout_secs: 120,
            request_timeout_secs: toolcall_run::client::transport::DEFAULT_TOTAL_TIMEOUT.as_secs(),
            retries: 3,
            max_body_bytes: 8 * 1024 * 1024,
            max_tools: 512,
            max_reply_bytes: 4 * 1024 * 1024,
            tools_memory_mib: crate::tools_cache::DEFAULT_BUDGET_MIB,
            bodies_memory_mib: crate::body::DEFAULT_BUDGET_MIB,
            archive: None,
            header_read_timeout_secs: 10,
            body_read_timeout_secs: 60,
            keep_alive_timeout_secs: 75,
            max_connections: 512,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid format {0:?}: {1}")]
    Format(String, String),
    #[error("the upstream API key variable {0} is not set")]
    MissingKey(String),
    #[error("cannot build the upstream client: {0}")]
    Client(String),
    #[error("the upstream {0} is not a usable URL: {1}")]
    Upstream(String, String),
}

impl Config {
    /// Reads a TOML config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_toml(&text).map_err(|message| ConfigError::Parse {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses TOML text.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(self.connect_timeout_secs),
            read: Duration::from_secs(self.read_timeout_secs),
            total: (self.request_timeout_secs > 0)
                .then(|| Duration::from_secs(self.request_timeout_secs)),
        }
    }

    /// The body read timeout, if any.
    pub fn body_read_timeout(&self) -> Option<Duration> {
        (self.body_read_timeout_secs > 0).then(|| Duration::from_secs(self.body_read_timeout_secs))
    }

    /// What the listener holds each client connection to.
    pub fn conn_limits(&self) -> crate::listen::ConnLimits {
        let secs = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        crate::listen::ConnLimits {
            header_read: secs(self.header_read_timeout_secs),
            keep_alive: secs(self.keep_alive_timeout_secs),
            max_connections: self.max_connections.max(1),
        }
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.retries,
            ..RetryPolicy::default()
        }
    }

    /// Client API keys: the configured ones and those in `api_keys_env`.
    pub fn client_keys(&self) -> Vec<String> {
        let mut keys = self.api_keys.clone();
        if let Some(var) = &self.api_keys_env
            && let Ok(v) = std::env::var(var)
        {
            keys.extend(crate::auth::split_keys(&v));
        }
        keys
    }

    /// Checks every format name.
    pub fn check(&self) -> Result<(), ConfigError> {
        let formats = self
            .format
            .iter()
            .chain(self.models.iter().filter_map(|m| m.format.as_ref()));
        for f in formats {
            FormatSelection::from_name(f)
                .map_err(|e| ConfigError::Format(f.clone(), e.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_reads_with_defaults_for_the_rest() {
        let c = Config::from_toml(
            r#"
            upstream = "http://u:1"
            invalid_calls = "drop"
            api_keys = ["k"]
            archive = "postgres://gw@db/toolcall"
            [[models]]
            match = "qwen*"
            upstream = "http://q:2"
            format = "hermes"
            "#,
        )
        .unwrap();
        assert_eq!(c.upstream, "http://u:1");
        assert_eq!(c.invalid_calls, InvalidCallPolicy::Drop);
        assert_eq!(c.models[0].pattern, "qwen*");
        assert_eq!(c.listen, "127.0.0.1:8090");
        assert!(c.mcp.is_empty());
        assert_eq!(c.archive.as_deref(), Some("postgres://gw@db/toolcall"));
        assert_eq!(Config::default().archive, None);
        assert_eq!(Config::default().bodies_memory_mib, 64);
        assert_eq!(
            Config::from_toml("bodies_memory_mib = 256")
                .unwrap()
                .bodies_memory_mib,
            256
        );
        c.check().unwrap();
        assert!(Config::from_toml("upstreem = 1").is_err());
        let with_mcp = Config::from_toml(
            r#"
            [[mcp]]
            transport = "stdio"
            name = "calc"
            argv = ["python3", "calc.py"]
            [[mcp]]
            transport = "http"
            name = "up"
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer k" }
            "#,
        )
        .unwrap();
        assert_eq!(with_mcp.mcp.len(), 2);
        assert_eq!(with_mcp.mcp[0].name(), "calc");
        assert!(matches!(
            &with_mcp.mcp[1],
            toolcall_core::McpServer::Http { headers, .. } if headers["Authorization"] == "Bearer k"
        ));
        let bad = Config {
            format: Some("no_such_family".into()),
            ..Config::default()
        };
        assert!(bad.check().is_err());
    }
}
