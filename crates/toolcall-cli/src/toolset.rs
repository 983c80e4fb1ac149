//! The toolset options every subcommand that loads tools takes, turned into the library's
//! [`ToolsetSpec`] (which owns the assembly rules).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::Value;
use toolcall_core::McpServer;
use toolcall_core::tools_file::{
    is_valid_mcp_server_name, mcp_servers_from_tools_json, read_tools_document,
};
use toolcall_packs::toolset::{Toolset, ToolsetSpec};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ToolsetArgs {
    /// A tools file: an OpenAI Chat, Responses or Anthropic `tools` array, or toolcall's own
    /// format (tools with `enabled`, `kind`, `timeout_ms`, `backend`, ...). Repeatable.
    #[arg(long = "tools", value_name = "FILE")]
    pub tools: Vec<PathBuf>,
    /// A built-in tool pack (computer, apps, slash, world, highlight); each works without
    /// options. Repeatable.
    #[arg(long = "pack", value_name = "NAME")]
    pub packs: Vec<String>,
    /// A pack option, `PACK.KEY=VALUE` (VALUE is read as JSON when it parses, else as text).
    /// Repeatable.
    #[arg(long = "pack-opt", value_name = "PACK.KEY=VALUE")]
    pub pack_opts: Vec<String>,
    /// X display for the computer pack, e.g. `:1` [default: the pack's `display` option, else
    /// $DISPLAY].
    #[arg(long, value_name = "DISPLAY")]
    pub display: Option<String>,
    /// Enable a tool by id; a trailing `*` matches a prefix (`vista.command.*`). Repeatable.
    #[arg(long = "enable", value_name = "NAME")]
    pub enable: Vec<String>,
    /// Disable a tool by id; a trailing `*` matches a prefix (`--disable '*'` disables all,
    /// then `--enable` picks some back). Repeatable.
    #[arg(long = "disable", value_name = "NAME")]
    pub disable: Vec<String>,
}

impl ToolsetArgs {
    /// The toolset these options describe, added to `base` (a recorded session's setup).
    pub fn spec(&self, mut base: ToolsetSpec) -> anyhow::Result<ToolsetSpec> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        for name in &self.packs {
            base.add_pack(name, &cwd);
        }
        for option in &self.pack_opts {
            base.set_pack_option(option)?;
        }
        if let Some(display) = &self.display {
            let Some((_, config)) = base.packs.iter_mut().find(|(n, _)| n == "computer") else {
                bail!("--display is for the computer pack: add --pack computer");
            };
            config
                .options
                .insert("display".to_owned(), Value::String(display.clone()));
        }
        base.tools_files.extend(self.tools.iter().cloned());
        base.enable.extend(self.enable.iter().cloned());
        base.disable.extend(self.disable.iter().cloned());
        Ok(base)
    }
}

/// MCP servers whose tools join the toolset (for the subcommands that run tools).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct McpServerArgs {
    /// An MCP server whose tools join the toolset as `NAME.tool`: `NAME=URL` (Streamable
    /// HTTP) or `NAME=PROGRAM ARG…` (stdio; split on spaces, never run through a shell).
    /// Repeatable. Tools files may declare servers too (`{"type": "mcp", ...}` entries).
    #[arg(long = "mcp", value_name = "NAME=COMMAND|URL")]
    pub mcp: Vec<String>,
}

impl McpServerArgs {
    /// The servers named by `--mcp`.
    pub fn servers(&self) -> anyhow::Result<Vec<McpServer>> {
        self.mcp.iter().map(|flag| parse_mcp_flag(flag)).collect()
    }
}

/// `--mcp NAME=URL` or `--mcp NAME=PROGRAM ARG…` (split on whitespace; no shell).
fn parse_mcp_flag(flag: &str) -> anyhow::Result<McpServer> {
    let (name, target) = flag
        .split_once('=')
        .with_context(|| format!("--mcp {flag:?}: expected NAME=COMMAND or NAME=URL"))?;
    if !is_valid_mcp_server_name(name) {
        bail!("--mcp {flag:?}: NAME must be 1-64 letters, digits, '_' or '-'");
    }
    let target = target.trim();
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok(McpServer::Http {
            name: name.to_owned(),
            url: target.to_owned(),
            headers: Default::default(),
        });
    }
    let argv: Vec<String> = target.split_whitespace().map(str::to_owned).collect();
    if argv.is_empty() {
        bail!("--mcp {flag:?}: no command after '='");
    }
    Ok(McpServer::Stdio {
        name: name.to_owned(),
        argv,
        env: Default::default(),
    })
}

/// The toolset (backends attached) plus the tools of MCP servers (`--mcp` and the tools files' `"type":
/// "mcp"` entries), connected and listed before the enable/disable switches apply, so the
/// switches reach their tools too.
pub async fn load_runnable_with_mcp(
    spec: &ToolsetSpec,
    mcp: &McpServerArgs,
) -> anyhow::Result<Toolset> {
    load_runnable_with_servers(spec, mcp.servers()?).await
}

/// [`load_runnable_with_mcp`] with the servers given (a config file's and the flags').
pub async fn load_runnable_with_servers(
    spec: &ToolsetSpec,
    servers: Vec<McpServer>,
) -> anyhow::Result<Toolset> {
    Ok(load_with_mcp_servers(spec, servers).await?.0)
}

/// The toolset with the MCP servers' tools, and which server each of those tools comes from
/// (tool id → server name).
pub async fn load_with_mcp_servers(
    spec: &ToolsetSpec,
    mut servers: Vec<McpServer>,
) -> anyhow::Result<(Toolset, BTreeMap<String, String>)> {
    for path in &spec.tools_files {
        let doc = read_tools_document(path)?;
        servers.extend(
            mcp_servers_from_tools_json(&doc)
                .with_context(|| format!("tools file {}", path.display()))?,
        );
    }
    if servers.is_empty() {
        return Ok((spec.load()?, BTreeMap::new()));
    }
    let mut unswitched = spec.clone();
    unswitched.enable.clear();
    unswitched.disable.clear();
    let mut toolset = unswitched.load()?;
    let options = toolcall_mcp::ConnectOptions::default();
    let mut origins = BTreeMap::new();
    for server in &servers {
        let tools = toolcall_mcp::connect(server, options.clone()).await?;
        for name in tools.names() {
            origins.insert(name.to_owned(), server.name().to_owned());
        }
        toolset
            .registry
            .merge(tools)
            .context("adding MCP servers' tools")?;
    }
    spec.apply_switches(&mut toolset.registry)?;
    Ok((toolset, origins))
}
