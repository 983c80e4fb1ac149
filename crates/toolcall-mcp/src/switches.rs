//! Tool switches followed while serving (`toolcall mcp serve --tool-switches FILE`).
//!
//! The file is the inspector's (`{"tools": {"move_player": false}}`, read with
//! [`ToolSwitches`]), so a tool switched off on `toolcall serve`'s inspector page, or by
//! editing the file, disappears for MCP clients too, without a restart. The file is read
//! again whenever its modification time or size changes; a poll of one small file's metadata
//! is all this needs, so no file-watching dependency. Each change that alters the listing
//! sends one `notifications/tools/list_changed` ([`McpToolServer::switch`]).
//!
//! A caller may first turn on in the registry the tools the file switches on (so a switch can
//! enable a tool the toolset ships disabled, as the inspector's does); while serving, changes
//! hide and show the tools the registry enables, and switching on a tool it disables is
//! reported on stderr and takes a restart.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;
use toolcall_inspector::ToolSwitches;

use crate::McpToolServer;

/// How often the file's metadata is looked at by default.
pub const DEFAULT_POLL: Duration = Duration::from_millis(250);

/// What identifies one version of the file: (modified, length), `None` when it is missing.
type Stamp = Option<(Option<SystemTime>, u64)>;

async fn stamp(path: &Path) -> Stamp {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.modified().ok(), meta.len()))
}

/// Applies the switches in `path` to `server` now and after every change of the file, until
/// `stop` is cancelled. A file that cannot be read (invalid JSON while someone edits it) is
/// reported and the tools stay as they were.
pub async fn follow_switches(
    server: McpToolServer,
    path: PathBuf,
    every: Duration,
    stop: CancellationToken,
) {
    let mut seen: Option<Stamp> = None;
    loop {
        let now = stamp(&path).await;
        if seen.as_ref() != Some(&now) {
            seen = Some(now);
            apply_file(&server, &path).await;
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Applies the switches in `path` once (what [`follow_switches`] does on every change); a
/// caller serving right after calls it first, so the first listing already has them.
pub async fn apply_file(server: &McpToolServer, path: &Path) {
    let file = path.to_path_buf();
    let opened = tokio::task::spawn_blocking(move || ToolSwitches::open(file)).await;
    let switches = match opened
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(error) => {
            tracing::warn!(target: "toolcall", %error, "tool switches not applied");
            return;
        }
    };
    let registry = server.registry();
    let mut wanted = Vec::new();
    for spec in registry.specs() {
        let on = switches.get(&spec.name);
        if on == Some(true) && !spec.enabled {
            tracing::warn!(
                target: "toolcall",
                tool = %spec.name,
                "the toolset disables this tool: switching it on takes a restart"
            );
        }
        wanted.push((spec.name.clone(), on.unwrap_or(true)));
    }
    let changed = server.switch(&wanted).await;
    if changed > 0 {
        tracing::info!(target: "toolcall", changed, "tool switches applied");
    }
}
