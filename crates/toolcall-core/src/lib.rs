//! The shared vocabulary of toolcall.
//!
//! Every other crate speaks in these types: a [`ToolCall`] found by the parser, the
//! [`ToolSpec`]s a [`Registry`] offers, the [`Tool`] implementations that run, and the
//! [`ToolResult`] that goes back to the model under the same [`CallId`].
//!
//! This crate owns the registry ([`registry`]: ids, sorting, enable/disable, one compiled
//! schema validator per tool), loading tools files ([`tools_file`]), checking calls with
//! schema-directed coercion ([`validate`]), and offering the registry to models ([`render`]:
//! provider tool lists with name aliases, and example arguments for text-mode prompts).

pub mod call;
pub mod diagnostic;
pub mod registry;
pub mod render;
pub mod result;
pub mod spec;
pub mod tool;
pub mod tools_file;
pub mod validate;

pub use call::{CallId, Origin, Repair, ToolCall};
pub use diagnostic::{Diagnostic, Event, Level, Parsed, StreamEvent};
pub use registry::{Registry, RegistryError};
pub use render::{NameMap, Provider};
pub use result::{ErrorCode, ToolError, ToolOutput, ToolResult};
pub use spec::{Backend, McpServer, ToolAnnotations, ToolKind, ToolSpec};
pub use tool::{StateTool, Tool, ToolContext, Transactional};
pub use validate::{SchemaError, ValidationError, json_kind};
