//! Who approves tools marked `requires_approval`: `--yes`, else the person at the terminal,
//! else nobody (denied when stdin is not a terminal).

use std::io::IsTerminal;
use std::sync::Arc;

use async_trait::async_trait;
use toolcall_core::{ToolCall, ToolSpec};
use toolcall_run::{ApproveAll, Approver, DenyAll};

/// The approver for a command run with or without `--yes`.
pub fn approver(yes: bool) -> Arc<dyn Approver> {
    if yes {
        Arc::new(ApproveAll)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TtyApprover)
    } else {
        Arc::new(DenyAll)
    }
}

/// Asks on the terminal before a tool that requires approval runs.
struct TtyApprover;

#[async_trait]
impl Approver for TtyApprover {
    async fn approve(&self, call: &ToolCall, spec: &ToolSpec) -> bool {
        let question = format!(
            "Run {} [{}] with {}? [y/N] ",
            spec.name,
            call.call_id,
            toolcall_run::redact::redact(&call.arguments)
        );
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
        })
        .await
        .unwrap_or(false)
    }
}
