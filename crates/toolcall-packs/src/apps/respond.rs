//! The action-response flow after the calls ran: each `open_app`/`close_app` call
//! becomes one line for the client, `__MCP__` + the compact JSON command payload, and the
//! reply's `text` goes to the speech channel.
//!
//! Which replies are calls (F-ACT-1..3) is decided by the parser's `action_response` format;
//! this module only shapes what leaves the server.

use serde_json::{Value, json};
use toolcall_core::{Parsed, ToolCall, ToolResult};

use crate::{RoundLines, RoundOutput};

/// The format whose replies are action responses; only rounds with such calls get client
/// output.
const ACTION_RESPONSE: &str = "action_response";

/// The line prefix the client watches for.
pub const MCP_PREFIX: &str = "__MCP__";

/// What goes to the client.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientOutput {
    /// One `__MCP__{...}` line per command that ran successfully.
    pub mcp_lines: Vec<String>,
    /// What the speech channel says: the reply's text, plus a sentence for each command that
    /// failed (so the assistant never announces an app that did not open).
    pub speech: String,
}

/// Builds the client output of one parsed action response and the results of its calls.
///
/// Payload: `{"session_id", "command", "args", "call_id", "result"}` with `result` the
/// result's `data`. Calls of other tools, and calls without a result, produce no line.
pub fn respond(parsed: &Parsed, results: &[ToolResult], session_id: &str) -> ClientOutput {
    let mut out = ClientOutput {
        mcp_lines: Vec::new(),
        speech: parsed.text.trim().to_owned(),
    };
    for call in &parsed.calls {
        if call.name != "open_app" && call.name != "close_app" {
            continue;
        }
        let Some(result) = results.iter().find(|r| r.call_id == call.call_id) else {
            continue;
        };
        match &result.outcome {
            Ok(output) => {
                let payload = json!({
                    "session_id": session_id,
                    "command": call.name,
                    "args": call.arguments,
                    "call_id": call.call_id,
                    "result": output.data,
                });
                out.mcp_lines.push(format!("{MCP_PREFIX}{payload}"));
            }
            Err(e) => {
                let sentence = format!("Sorry, {}: {}", call.name.replace('_', " "), e.message);
                if !out.speech.is_empty() {
                    out.speech.push(' ');
                }
                out.speech.push_str(&sentence);
            }
        }
    }
    out
}

/// The apps pack's round output: [`respond`] for rounds whose calls came as action
/// responses; the `__MCP__` lines for the client, the speech as a note.
pub struct ActionResponseOutput;

impl RoundOutput for ActionResponseOutput {
    fn round_output(
        &self,
        text: &str,
        calls: &[ToolCall],
        results: &[ToolResult],
        session_id: &str,
    ) -> RoundLines {
        if !calls.iter().any(|c| c.origin.format == ACTION_RESPONSE) {
            return RoundLines::default();
        }
        let parsed = Parsed {
            text: text.to_owned(),
            calls: calls.to_vec(),
            ..Parsed::default()
        };
        let out = respond(&parsed, results, session_id);
        RoundLines {
            client: out.mcp_lines,
            notes: if out.speech.is_empty() {
                Vec::new()
            } else {
                vec![format!("speech: {}", out.speech)]
            },
        }
    }
}

/// Reads a client line back: the payload of an `__MCP__` line, `None` for other lines.
pub fn parse_mcp_line(line: &str) -> Option<Value> {
    serde_json::from_str(line.strip_prefix(MCP_PREFIX)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcall_core::ToolResult;

    fn open_call(format: &str) -> ToolCall {
        let mut call = ToolCall::new("open_app", json!({"app_name": "Safari"}), format);
        call.call_id = "c1".into();
        call
    }

    #[test]
    fn only_action_response_rounds_get_client_lines() {
        let result = ToolResult::ok("c1".into(), "open_app", json!({"pid": 7}));
        let hook = ActionResponseOutput;
        let native = hook.round_output(
            "Opening.",
            &[open_call("openai_chat")],
            std::slice::from_ref(&result),
            "s1",
        );
        assert_eq!(native, RoundLines::default());
        let lines = hook.round_output("Opening.", &[open_call(ACTION_RESPONSE)], &[result], "s1");
        assert_eq!(lines.client.len(), 1);
        let payload = parse_mcp_line(&lines.client[0]).unwrap();
        assert_eq!(payload["command"], "open_app");
        assert_eq!(payload["session_id"], "s1");
        assert_eq!(lines.notes, ["speech: Opening."]);
    }
}
