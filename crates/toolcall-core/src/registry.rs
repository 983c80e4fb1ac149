//! The set of tools on offer: specs by id, sorted, each optionally backed by an implementation.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::spec::ToolSpec;
use crate::tool::Tool;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid tool id {id:?}: {reason}")]
    InvalidId { id: String, reason: String },
    #[error("tool {0:?} is declared twice")]
    Duplicate(String),
    #[error("no tool named {0:?}")]
    Unknown(String),
}

/// One registered tool.
#[derive(Clone)]
pub struct Entry {
    pub spec: ToolSpec,
    /// The implementation, when this process can run the tool.
    pub handler: Option<Arc<dyn Tool>>,
}

/// Tools by id, kept sorted (V-2).
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks a tool id: 1–256 chars of ASCII letters, digits, `_`, `-`, `.`, and `::`
    /// separators, starting with a letter or `_`.
    pub fn validate_id(id: &str) -> Result<(), RegistryError> {
        let bad = |reason: &str| RegistryError::InvalidId {
            id: id.to_owned(),
            reason: reason.to_owned(),
        };
        if id.is_empty() || id.len() > 256 {
            return Err(bad("must be 1 to 256 characters"));
        }
        if !id.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Err(bad("must start with a letter or '_'"));
        }
        for segment in id.split("::") {
            if segment.is_empty() {
                return Err(bad("'::' must separate non-empty parts"));
            }
            if let Some(c) = segment
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            {
                return Err(bad(&format!("character {c:?} is not allowed")));
            }
        }
        Ok(())
    }

    /// Adds a spec without an implementation.
    pub fn add_spec(&mut self, spec: ToolSpec) -> Result<(), RegistryError> {
        self.insert(Entry {
            spec,
            handler: None,
        })
    }

    /// Adds a tool with its implementation.
    pub fn add_tool(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.insert(Entry {
            spec: tool.spec(),
            handler: Some(tool),
        })
    }

    fn insert(&mut self, entry: Entry) -> Result<(), RegistryError> {
        Self::validate_id(&entry.spec.name)?;
        if self.entries.contains_key(&entry.spec.name) {
            return Err(RegistryError::Duplicate(entry.spec.name));
        }
        self.entries.insert(entry.spec.name.clone(), entry);
        Ok(())
    }

    /// Attaches an implementation to a tool that was declared by spec.
    pub fn set_handler(&mut self, name: &str, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let entry = self
            .entries
            .get_mut(name)
            .ok_or_else(|| RegistryError::Unknown(name.to_owned()))?;
        entry.handler = Some(tool);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|e| &e.spec)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> Result<(), RegistryError> {
        let entry = self
            .entries
            .get_mut(name)
            .ok_or_else(|| RegistryError::Unknown(name.to_owned()))?;
        entry.spec.enabled = enabled;
        Ok(())
    }

    /// All specs, sorted by id.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.values().map(|e| &e.spec)
    }

    /// The specs offered to a model: enabled only (V-4), sorted by id.
    pub fn enabled_specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.specs().filter(|s| s.enabled)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks a call before it runs: the tool must exist (V-3, R-10) and be enabled, and the
    /// arguments must satisfy its schema (V-1). Unambiguous coercions are applied in place and
    /// recorded in `call.origin.repairs`.
    ///
    /// TEMPORARY: schema validation lands with the registry work; this keeps the signature.
    pub fn validate_call(&self, call: &mut crate::ToolCall) -> Result<(), crate::ToolError> {
        use crate::{ErrorCode, ToolError};
        let Some(entry) = self.entries.get(&call.name) else {
            let known: Vec<&str> = self.enabled_specs().map(|s| s.name.as_str()).collect();
            return Err(ToolError::new(
                ErrorCode::UnknownTool,
                format!(
                    "no tool named {:?}; available tools: {}",
                    call.name,
                    known.join(", ")
                ),
            ));
        };
        if !entry.spec.enabled {
            return Err(ToolError::new(
                ErrorCode::ToolDisabled,
                format!("tool {:?} is disabled", call.name),
            ));
        }
        Ok(())
    }

    /// Adds every tool of `other`; fails on the first duplicate id.
    pub fn merge(&mut self, other: Registry) -> Result<(), RegistryError> {
        for (_, entry) in other.entries {
            self.insert(entry)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // covers V-2
    #[test]
    fn ids_are_validated_and_sorted() {
        let mut r = Registry::new();
        for id in [
            "vista.command.summary",
            "vista.command.start_workflow::triage",
            "a_tool",
        ] {
            r.add_spec(ToolSpec::new(id, "", json!({"type":"object"})))
                .unwrap();
        }
        assert_eq!(
            r.names().collect::<Vec<_>>(),
            [
                "a_tool",
                "vista.command.start_workflow::triage",
                "vista.command.summary"
            ]
        );
        for bad in ["", "9lives", "a b", "a::", "x;rm"] {
            assert!(Registry::validate_id(bad).is_err(), "{bad:?} accepted");
        }
        assert!(matches!(
            r.add_spec(ToolSpec::new("a_tool", "", json!({}))),
            Err(RegistryError::Duplicate(_))
        ));
    }

    // covers V-4
    #[test]
    fn disabled_tools_are_not_offered() {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new("a", "", json!({}))).unwrap();
        r.add_spec(ToolSpec::new("b", "", json!({}))).unwrap();
        r.set_enabled("a", false).unwrap();
        assert_eq!(
            r.enabled_specs()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
    }
}
