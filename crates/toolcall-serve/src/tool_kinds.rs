//! What the gateway does with each kind of tool a client declares
//! ([`toolcall_wire::tool_kinds::ToolKind`]), before the turn runs: nothing is dropped in
//! silence.
//!
//! **Hosted tools** (`web_search`, `file_search`, `code_interpreter`, Anthropic's
//! `web_search_…`, `web_fetch_…`, `code_execution_…`, Gemini's `googleSearch`, any kind the
//! gateway does not know) run only on the provider's own servers. Per route,
//! `hosted_tools = "warn"` (the default) leaves them out of the upstream request, logs one
//! line per request naming them and names them in the [`DROPPED_TOOLS_HEADER`] response
//! header; `"reject"` answers `400` in the front end's error shape naming them. A
//! server-side tool (`--pack`, `--tools`, MCP) of the same name is neither: it is offered to
//! the model by the server-side turn and runs here instead.

use axum::http::HeaderValue;
use axum::response::Response;
use toolcall_wire::chat::ChatRequest;
use toolcall_wire::tool_kinds::{ToolKind, display_name};

use crate::ApiError;
use crate::config::HostedTools;

/// The response header naming the hosted tools left out of the upstream request.
pub const DROPPED_TOOLS_HEADER: &str = "x-toolcall-dropped-tools";

/// The most tool names listed in a header or a message.
const MAX_NAMED: usize = 16;

/// Takes the hosted tools out of `request` and applies `policy`: their names (the tools
/// left out, to report), or the `400` that `reject` answers. `served_here`: whether a
/// server-side tool of that name runs instead (left out without a word: the server-side
/// turn offers its own declaration).
pub fn take_hosted(
    request: &mut ChatRequest,
    policy: HostedTools,
    served_here: impl Fn(&str) -> bool,
) -> Result<Vec<String>, ApiError> {
    let Some(tools) = &mut request.tools else {
        return Ok(Vec::new());
    };
    let mut dropped = Vec::new();
    let mut served = Vec::new();
    tools.retain(|t| {
        if ToolKind::of(&t.kind) != ToolKind::Hosted {
            return true;
        }
        let name = display_name(t).to_owned();
        if served_here(&name) {
            served.push(name);
        } else if !dropped.contains(&name) {
            dropped.push(name);
        }
        false
    });
    if !served.is_empty() {
        tracing::info!(tools = %served.join(", "), "hosted tools run by the gateway's own tools of the same name");
    }
    if dropped.is_empty() {
        return Ok(dropped);
    }
    let names = listed(&dropped);
    match policy {
        HostedTools::Reject => Err(ApiError::bad_request(format!(
            "hosted tools cannot run behind this gateway: {names} (only the provider's own \
             servers run them; hosted_tools = \"reject\" on this route)"
        ))),
        HostedTools::Warn => {
            tracing::warn!(tools = %names, model = %request.model,
                "hosted tools left out of the upstream request: only the provider's own servers run them");
            Ok(dropped)
        }
    }
}

/// At most [`MAX_NAMED`] names, comma-separated.
fn listed(names: &[String]) -> String {
    let mut out = names
        .iter()
        .take(MAX_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_NAMED {
        out.push_str(&format!(" and {} more", names.len() - MAX_NAMED));
    }
    out
}

/// Names the dropped tools in the [`DROPPED_TOOLS_HEADER`] header (ASCII names only).
pub fn add_dropped_header(response: &mut Response, dropped: &[String]) {
    let ascii: Vec<String> = dropped.iter().filter(|n| n.is_ascii()).cloned().collect();
    if ascii.is_empty() {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(&listed(&ascii)) {
        response.headers_mut().insert(DROPPED_TOOLS_HEADER, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ChatRequest {
        let mut r: ChatRequest = serde_json::from_value(json!({"model": "m", "messages": [],
            "tools": [{"type": "function", "function": {"name": "f"}}]}))
        .unwrap_or_default();
        for (kind, name) in [
            ("web_search", ""),
            ("web_search_20250305", "web_search"),
            ("code_interpreter", ""),
        ] {
            let t = json!({"type": kind, "name": name});
            r.tools
                .get_or_insert_with(Vec::new)
                .push(toolcall_wire::responses::other_tool(kind, &t));
        }
        r
    }

    #[test]
    fn hosted_tools_are_left_out_named_once_or_rejected() {
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Warn, |_| false).unwrap_or_default();
        assert_eq!(dropped, ["web_search", "code_interpreter"]);
        assert_eq!(r.tools.as_ref().map(Vec::len), Some(1));
        let mut r = request();
        let e = take_hosted(&mut r, HostedTools::Reject, |_| false).err();
        assert!(e.is_some_and(|e| e.message.contains("web_search, code_interpreter")));
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Reject, |n| n == "web_search");
        assert_eq!(dropped.ok(), None, "code_interpreter is still rejected");
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Reject, |n| n != "x").unwrap_or_default();
        assert!(dropped.is_empty());
        assert_eq!(r.tools.as_ref().map(Vec::len), Some(1));
    }
}
