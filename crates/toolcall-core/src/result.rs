//! What a tool call produces: `{"status":"ok","data":...}` or `{"error":{...}}`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::call::CallId;

/// Why a call produced no data. Serialised in snake_case (`unknown_tool`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    UnknownTool,
    ToolDisabled,
    InvalidArguments,
    Timeout,
    ToolFailed,
    ToolPanicked,
    Denied,
    /// The call was stopped by the loop (e.g. the repeat-failure breaker).
    Cancelled,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::ToolDisabled => "tool_disabled",
            ErrorCode::InvalidArguments => "invalid_arguments",
            ErrorCode::Timeout => "timeout",
            ErrorCode::ToolFailed => "tool_failed",
            ErrorCode::ToolPanicked => "tool_panicked",
            ErrorCode::Denied => "denied",
            ErrorCode::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure reported to the model, never a crash of the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    /// Structured detail, e.g. the schema errors with their JSON pointers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }
    /// The usual error of a tool that ran and refused or failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ToolFailed, message)
    }
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// What a tool returns on success: its data and optional metadata echoed with the result
/// (for example a `context_id`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    pub data: Value,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl From<Value> for ToolOutput {
    fn from(data: Value) -> Self {
        ToolOutput {
            data,
            metadata: Map::new(),
        }
    }
}

/// The result of one call, paired with it by `call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: CallId,
    pub name: String,
    pub outcome: Result<ToolOutput, ToolError>,
}

impl ToolResult {
    pub fn ok(call_id: CallId, name: impl Into<String>, output: impl Into<ToolOutput>) -> Self {
        ToolResult {
            call_id,
            name: name.into(),
            outcome: Ok(output.into()),
        }
    }

    pub fn err(call_id: CallId, name: impl Into<String>, error: ToolError) -> Self {
        ToolResult {
            call_id,
            name: name.into(),
            outcome: Err(error),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The JSON the model receives: `{"status":"ok","data":...}` (plus `metadata` when
    /// present) or `{"error":{"code","message"[,"details"]}}`.
    pub fn to_json(&self) -> Value {
        match &self.outcome {
            Ok(out) => {
                let mut v = json!({"status": "ok", "data": out.data});
                if !out.metadata.is_empty() {
                    v["metadata"] = Value::Object(out.metadata.clone());
                }
                v
            }
            Err(e) => json!({"error": e}),
        }
    }

    /// [`Self::to_json`] as a string, the form tool-result messages carry.
    pub fn to_json_string(&self) -> String {
        self.to_json().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    //
    #[test]
    fn result_json_shapes() {
        let ok = ToolResult::ok("c1".into(), "t", json!({"x": 1}));
        assert_eq!(ok.to_json(), json!({"status":"ok","data":{"x":1}}));
        let err = ToolResult::err(
            "c2".into(),
            "t",
            ToolError::new(ErrorCode::UnknownTool, "no such tool"),
        );
        assert_eq!(
            err.to_json(),
            json!({"error":{"code":"unknown_tool","message":"no such tool"}})
        );
    }
}
