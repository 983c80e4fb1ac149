//! Tools backed without Rust: a program ([`ProgramTool`]) or an HTTP endpoint ([`HttpTool`]),
//! as declared by a tools file's `backend` (see [`toolcall_core::Backend`]).
//!
//! [`attach_backends`] gives every declared-but-unimplemented tool of a registry its handler,
//! so a registry loaded from a tools file becomes runnable in one call.

use std::sync::Arc;

use toolcall_core::{Backend, Registry, RegistryError, Tool, ToolSpec};

pub mod http;
pub mod program;

pub use http::{HttpTool, HttpToolClient};
pub use program::ProgramTool;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("tool {tool:?}: {message}")]
    Config { tool: String, message: String },
    #[error("tool {0:?} declares no backend")]
    NoBackend(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl BackendError {
    pub(crate) fn config(tool: &str, message: impl Into<String>) -> Self {
        BackendError::Config {
            tool: tool.to_owned(),
            message: message.into(),
        }
    }
}

/// The implementation of a spec's declared backend. HTTP tools share `client`.
pub fn tool_for_spec(
    spec: &ToolSpec,
    client: &HttpToolClient,
) -> Result<Arc<dyn Tool>, BackendError> {
    match &spec.backend {
        Some(Backend::Program { .. }) => Ok(Arc::new(ProgramTool::new(spec.clone())?)),
        Some(Backend::Http { .. }) => Ok(Arc::new(HttpTool::new(spec.clone(), client.clone())?)),
        None => Err(BackendError::NoBackend(spec.name.clone())),
    }
}

/// Gives every tool that declares a backend and has no handler yet its implementation.
/// Nothing is attached when any backend is misconfigured.
pub fn attach_backends(registry: &mut Registry) -> Result<(), BackendError> {
    let pending: Vec<ToolSpec> = registry.unbacked().cloned().collect();
    if pending.is_empty() {
        return Ok(());
    }
    let client = http::default_client()?;
    let tools = pending
        .iter()
        .map(|spec| tool_for_spec(spec, &client).map(|t| (spec.name.clone(), t)))
        .collect::<Result<Vec<_>, _>>()?;
    for (name, tool) in tools {
        registry.set_handler(&name, tool)?;
    }
    Ok(())
}

/// Keeps the last `max` bytes of `bytes` as text, cut at a character boundary.
pub(crate) fn tail(bytes: &[u8], max: usize) -> String {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let bytes = bytes.get(..end).unwrap_or_default();
    let start = bytes.len().saturating_sub(max);
    let text = String::from_utf8_lossy(bytes.get(start..).unwrap_or_default());
    let text = text.trim();
    if start > 0 {
        format!("…{text}")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    //
    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail(b"hello world\n", 5), "…world");
        assert_eq!(tail(b" short ", 100), "short");
        // a cut inside a multi-byte character does not panic
        let s = "ééé".as_bytes();
        assert!(tail(s, 3).ends_with('é'));
    }
}
