//! A tool carried out by a program: the argument vector is executed directly (never through
//! a shell), the call's arguments are written as JSON to its standard input, and its standard
//! output is the result JSON.
//!
//! Exit status 0 with JSON on stdout is success (blank stdout is `null` data). A non-zero
//! exit, a signal, output that is not JSON or larger than the limit are `tool_failed` results
//! carrying the tail of stderr.
//!
//! The program runs as the leader of its own process group ([`crate::process_group`]). When
//! the call ends before the program does (the executor's timeout drops the call, or the
//! output is over the limit) the whole group is killed, so helpers it started (`sh -c "sleep
//! 60; …"` leaves `sleep`) stop with it; when this process dies, even by `kill -9`, the
//! program is killed too, so no call goes on running unseen.
//!
//! The program inherits the environment, plus the backend's `env` entries and
//! `TOOLCALL_TOOL` / `TOOLCALL_CALL_ID` naming the call it serves.

use std::collections::BTreeMap;
use std::process::Stdio;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use toolcall_core::{Backend, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{BackendError, tail};
use crate::process_group::{self, GroupChild, Lifetime};

/// Largest stdout accepted by default.
pub const DEFAULT_MAX_OUTPUT: usize = 4 * 1024 * 1024;
/// Bytes of stderr kept for error messages.
pub const STDERR_TAIL: usize = 2048;

pub struct ProgramTool {
    spec: ToolSpec,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    max_output: usize,
}

impl ProgramTool {
    /// Builds the tool from a spec whose backend is `program`.
    pub fn new(spec: ToolSpec) -> Result<Self, BackendError> {
        let Some(Backend::Program { argv, env }) = spec.backend.clone() else {
            return Err(BackendError::config(&spec.name, "backend is not a program"));
        };
        match argv.first() {
            None => return Err(BackendError::config(&spec.name, "argv is empty")),
            Some(p) if p.is_empty() => {
                return Err(BackendError::config(&spec.name, "argv[0] is empty"));
            }
            Some(_) => {}
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(BackendError::config(&spec.name, "argv contains a NUL byte"));
        }
        Ok(ProgramTool {
            spec,
            argv,
            env,
            max_output: DEFAULT_MAX_OUTPUT,
        })
    }

    /// Changes the stdout size limit.
    pub fn with_max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }
}

/// Reads at most `limit + 1` bytes, so a caller can tell "exactly at the limit" from "over".
async fn read_bounded<R: AsyncRead + Unpin>(r: R, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut buf).await?;
    Ok(buf)
}

/// Reads to the end, keeping only the last `keep` bytes.
async fn read_tail<R: AsyncRead + Unpin>(mut r: R, keep: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Ok(kept);
        }
        kept.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if kept.len() > keep * 2 {
            let cut = kept.len() - keep;
            kept.drain(..cut);
        }
    }
}

#[async_trait]
impl Tool for ProgramTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let name = &self.spec.name;
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| ToolError::failed(format!("tool {name:?} has an empty argv")))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(&self.env)
            .env("TOOLCALL_TOOL", name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Dies with us, even on `kill -9`: the caller would never learn its outcome.
        process_group::new_group(&mut cmd, Lifetime::TiedToUs);
        if let Some(id) = &ctx.call_id {
            cmd.env("TOOLCALL_CALL_ID", id.as_str());
        }
        let mut child = GroupChild(cmd.spawn().map_err(|e| {
            ToolError::failed(format!("tool {name:?}: cannot start {program:?}: {e}"))
        })?);
        let (Some(mut stdin), Some(stdout), Some(stderr)) = (
            child.0.stdin.take(),
            child.0.stdout.take(),
            child.0.stderr.take(),
        ) else {
            return Err(ToolError::failed(format!(
                "tool {name:?}: the program's standard streams are not available"
            )));
        };
        let input = arguments.to_string();
        let write = async move {
            // A program that exits without reading its input is not an error by itself.
            match stdin.write_all(input.as_bytes()).await {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
                _ => Ok(()),
            }
            // stdin drops here: the program sees end of input.
        };
        let (written, out, err) = tokio::join!(
            write,
            read_bounded(stdout, self.max_output),
            read_tail(stderr, STDERR_TAIL)
        );
        let io_fail = |what: &str, e: std::io::Error| {
            ToolError::failed(format!("tool {name:?}: cannot {what} the program: {e}"))
        };
        let out = out.map_err(|e| io_fail("read the output of", e))?;
        if out.len() > self.max_output {
            // Dropping `child` kills its group.
            return Err(ToolError::failed(format!(
                "tool {name:?}: output is larger than {} bytes",
                self.max_output
            )));
        }
        let err = err.map_err(|e| io_fail("read the errors of", e))?;
        written.map_err(|e| io_fail("write the arguments to", e))?;
        let status = child.0.wait().await.map_err(|e| io_fail("wait for", e))?;
        let stderr_tail = tail(&err, STDERR_TAIL);
        if !status.success() {
            let how = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was terminated by a signal".to_owned(),
            };
            let msg = if stderr_tail.is_empty() {
                format!("tool {name:?}: program {how}")
            } else {
                format!("tool {name:?}: program {how}: {stderr_tail}")
            };
            return Err(ToolError::failed(msg)
                .with_details(json!({"exit_code": status.code(), "stderr": stderr_tail})));
        }
        let text = String::from_utf8_lossy(&out);
        if text.trim().is_empty() {
            return Ok(Value::Null.into());
        }
        serde_json::from_str::<Value>(text.trim())
            .map(ToolOutput::from)
            .map_err(|e| {
                let mut msg = format!("tool {name:?}: program output is not JSON ({e})");
                if !stderr_tail.is_empty() {
                    msg.push_str(": ");
                    msg.push_str(&stderr_tail);
                }
                ToolError::failed(msg).with_details(json!({
                    "stdout": tail(&out, STDERR_TAIL),
                    "stderr": stderr_tail,
                }))
            })
    }
}
