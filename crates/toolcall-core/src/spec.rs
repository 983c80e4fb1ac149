//! What the registry knows about a tool.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Whether a call answers in place or runs as a job whose result arrives later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    #[default]
    Immediate,
    Job,
}

/// How a tool declared in a tools file is carried out, without writing Rust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Backend {
    /// A program run with this argument vector (never a shell); arguments as JSON on stdin,
    /// the result as JSON on stdout.
    Program {
        argv: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// An HTTP endpoint that receives the arguments as a JSON POST body.
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

/// Hints about a tool's effects, offered to MCP clients as the tool's annotations. Absent
/// hints are unknown (MCP's defaults apply: not read-only, destructive, not idempotent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite things (a click, starting a program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
}

impl ToolAnnotations {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// An MCP server whose tools a tools file brings in (`{"type": "mcp", ...}` entries), run as
/// a child process over stdio or reached over Streamable HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum McpServer {
    /// A program started with this argument vector (never a shell), speaking MCP on stdio.
    Stdio {
        /// The prefix of its tools' ids (`NAME.tool`).
        name: String,
        argv: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        name: String,
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl McpServer {
    /// The prefix of its tools' ids.
    pub fn name(&self) -> &str {
        match self {
            McpServer::Stdio { name, .. } | McpServer::Http { name, .. } => name,
        }
    }
}

/// A tool as offered to the model and checked by the validator (V-1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool id; may contain `.` and `::` (`vista.command.start_workflow::triage`).
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub kind: ToolKind,
    /// Per-tool timeout; the executor's default applies when absent.
    #[serde(
        default,
        with = "opt_millis",
        skip_serializing_if = "Option::is_none",
        rename = "timeout_ms"
    )]
    pub timeout: Option<Duration>,
    #[serde(default)]
    pub requires_approval: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    #[serde(default, skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
}

fn yes() -> bool {
    true
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            enabled: true,
            kind: ToolKind::Immediate,
            timeout: None,
            requires_approval: false,
            backend: None,
            annotations: ToolAnnotations::default(),
        }
    }

    pub fn with_kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    pub fn requiring_approval(mut self) -> Self {
        self.requires_approval = true;
        self
    }

    /// Property names of the arguments schema, in declared order.
    pub fn property_names(&self) -> impl Iterator<Item = &str> {
        self.parameters
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.keys().map(String::as_str))
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(d.as_millis().min(u64::MAX as u128) as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
