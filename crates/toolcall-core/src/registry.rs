//! The set of tools on offer: specs by id, sorted, each optionally backed by an implementation.
//!
//! Each tool's arguments schema is compiled into a validator once, when the tool is added; an
//! invalid schema is refused there (a load error for tools files), so validating a call never
//! compiles anything. Loading tools files lives in [`crate::tools_file`], call validation and
//! coercion in [`crate::validate`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::diagnostic::Diagnostic;
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
    #[error("tool {id:?}: invalid JSON Schema for its parameters: {message}")]
    InvalidSchema { id: String, message: String },
    #[error("tools entry #{index}{}: {source}", name.as_deref().map(|n| format!(" ({n:?})")).unwrap_or_default())]
    Entry {
        /// Zero-based position of the entry in the tools array.
        index: usize,
        name: Option<String>,
        #[source]
        source: Box<RegistryError>,
    },
    /// The tools document is not one of the accepted shapes.
    #[error("{0}")]
    Shape(String),
    #[error("cannot read tools file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tools file {path} is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("tools file {path} is not valid JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
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
    /// Compiled argument validators by tool id, built once at insert.
    validators: BTreeMap<String, Arc<jsonschema::Validator>>,
    /// Per tool id: the non-standard type names its schema used and what they were read as.
    schema_notes: BTreeMap<String, Vec<String>>,
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

    fn insert(&mut self, mut entry: Entry) -> Result<(), RegistryError> {
        Self::validate_id(&entry.spec.name)?;
        if self.entries.contains_key(&entry.spec.name) {
            return Err(RegistryError::Duplicate(entry.spec.name));
        }
        let mut notes = Vec::new();
        normalise_type_names(
            &mut entry.spec.parameters,
            &mut String::new(),
            0,
            &mut notes,
        );
        let validator = Arc::new(compile_schema(&entry.spec.name, &entry.spec.parameters)?);
        if !notes.is_empty() {
            self.schema_notes.insert(entry.spec.name.clone(), notes);
        }
        self.insert_compiled(entry, validator);
        Ok(())
    }

    /// One warning per tool whose schema wrote a type name JSON Schema lacks (`int`,
    /// `list`, `uint32`, …) and was read as the JSON Schema type it stands for.
    pub fn schema_warnings(&self) -> Vec<Diagnostic> {
        self.schema_notes
            .iter()
            .map(|(name, notes)| {
                Diagnostic::warning(
                    format!(
                        "tool {name:?}: its schema's non-standard type names were read as JSON Schema types: {}",
                        notes.join("; ")
                    ),
                    0..0,
                )
            })
            .collect()
    }

    fn insert_compiled(&mut self, entry: Entry, validator: Arc<jsonschema::Validator>) {
        self.validators.insert(entry.spec.name.clone(), validator);
        self.entries.insert(entry.spec.name.clone(), entry);
    }

    /// The compiled validator of a tool's arguments.
    pub(crate) fn validator(&self, name: &str) -> Option<&jsonschema::Validator> {
        self.validators.get(name).map(|v| v.as_ref())
    }

    /// Tools that have a declared [`crate::Backend`] but no implementation yet.
    pub fn unbacked(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries
            .values()
            .filter(|e| e.handler.is_none() && e.spec.backend.is_some())
            .map(|e| &e.spec)
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

    /// Adds every tool of `other`; fails on the first duplicate id.
    pub fn merge(&mut self, mut other: Registry) -> Result<(), RegistryError> {
        for (name, entry) in other.entries {
            if self.entries.contains_key(&name) {
                return Err(RegistryError::Duplicate(name));
            }
            let validator = match other.validators.remove(&name) {
                Some(v) => v,
                None => Arc::new(compile_schema(&name, &entry.spec.parameters)?),
            };
            if let Some(notes) = other.schema_notes.remove(&name) {
                self.schema_notes.insert(name, notes);
            }
            self.insert_compiled(entry, validator);
        }
        Ok(())
    }
}

/// Compiles a tool's arguments schema. It must be a JSON object describing an object
/// (`type` absent or `"object"`), since arguments are always an object (V-1).
fn compile_schema(
    id: &str,
    schema: &serde_json::Value,
) -> Result<jsonschema::Validator, RegistryError> {
    let bad = |message: String| RegistryError::InvalidSchema {
        id: id.to_owned(),
        message,
    };
    let obj = schema
        .as_object()
        .ok_or_else(|| bad("the parameters schema must be a JSON object".to_owned()))?;
    match obj.get("type") {
        None => {}
        Some(serde_json::Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(bad(format!(
                "arguments are an object, so \"type\" must be \"object\", not {other}"
            )));
        }
    }
    jsonschema::options()
        .with_pattern_options(
            jsonschema::PatternOptions::fancy_regex()
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_SIZE_LIMIT),
        )
        .build(schema)
        .map_err(|e| bad(e.to_string()))
}

/// JSON Schema's own type names.
const SCHEMA_TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// The JSON Schema type a common non-standard type name stands for (case-insensitive):
/// the names people write in tool schemas from their language's types.
fn type_alias(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if let Some(t) = SCHEMA_TYPES.iter().find(|t| **t == lower) {
        return Some(t);
    }
    Some(match lower.as_str() {
        "int" | "int8" | "int16" | "int32" | "int64" | "uint" | "uint8" | "uint16" | "uint32"
        | "uint64" | "long" | "short" => "integer",
        "float" | "float32" | "float64" | "double" | "decimal" => "number",
        "str" => "string",
        "bool" => "boolean",
        "list" | "tuple" => "array",
        "dict" | "map" => "object",
        _ => return None,
    })
}

/// Deepest schema nesting rewritten; deeper parts are left as written (and compiled as such).
const NORMALISE_DEPTH: usize = 64;

/// Rewrites every `type` (a name or a list of names) that JSON Schema does not know but
/// [`type_alias`] does to its JSON Schema type, noting `"int" read as "integer" at /path`.
/// Unknown names are left for the compiler to refuse; literal data (`enum`, `const`,
/// `default`, examples) is not touched.
fn normalise_type_names(
    schema: &mut serde_json::Value,
    path: &mut String,
    depth: usize,
    notes: &mut Vec<String>,
) {
    use serde_json::Value;
    if depth > NORMALISE_DEPTH {
        return;
    }
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if matches!(
                    key.as_str(),
                    "enum" | "const" | "default" | "examples" | "example"
                ) {
                    continue;
                }
                let len = path.len();
                path.push('/');
                path.push_str(key);
                if key == "type" && (value.is_string() || value.is_array()) {
                    let names: Vec<&mut Value> = match value {
                        Value::Array(items) => items.iter_mut().collect(),
                        other => vec![other],
                    };
                    for name in names {
                        if let Value::String(t) = name
                            && !SCHEMA_TYPES.contains(&t.as_str())
                            && let Some(standard) = type_alias(t)
                        {
                            let at = &path[..len];
                            let at = if at.is_empty() { "/" } else { at };
                            notes.push(format!("{t:?} read as {standard:?} at {at}"));
                            *t = standard.to_owned();
                        }
                    }
                } else {
                    normalise_type_names(value, path, depth + 1, notes);
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                normalise_type_names(item, path, depth + 1, notes);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// The most heap one `pattern` of a schema may compile to (and its lazy DFA grow to). The
/// regex engine's default (10 MiB) let a 20-byte pattern such as `(\w{100}){100}` compile
/// to over 1 MB, so a request's tools could cost thousands of times their text; a pattern
/// over this limit makes its schema invalid.
pub const PATTERN_SIZE_LIMIT: usize = 64 * 1024;

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
        for bad in ["", "9lives", "a b", "a::", "x;rm", "a:b", "::a"] {
            assert!(Registry::validate_id(bad).is_err(), "{bad:?} accepted");
        }
        assert!(matches!(
            r.add_spec(ToolSpec::new("a_tool", "", json!({}))),
            Err(RegistryError::Duplicate(_))
        ));
    }

    // covers V-1
    #[test]
    fn invalid_schemas_are_refused_at_insert() {
        let mut r = Registry::new();
        for bad in [
            json!({"type": "objekt"}),
            json!({"type": "string"}),
            json!(true),
            json!({"type": "object", "properties": {"a": {"type": 5}}}),
        ] {
            let err = r.add_spec(ToolSpec::new("t", "", bad.clone())).unwrap_err();
            assert!(
                matches!(err, RegistryError::InvalidSchema { .. }),
                "{bad} gave {err}"
            );
        }
        assert!(r.is_empty());
    }

    // Tool schemas written with their language's type names (vLLM's Hunyuan v4 tests use
    // "int", "list", "uint32") are read as the JSON Schema types, with a warning.
    #[test]
    fn common_type_names_are_read_as_json_schema_types() {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "typed",
            "",
            json!({"type": "Dict", "properties": {
                "a": {"type": "int"}, "b": {"type": "uint32"}, "c": {"type": "List", "items": {"type": "double"}},
                "d": {"type": ["str", "null"]}, "e": {"anyOf": [{"type": "bool"}, {"type": "map"}]},
                "f": {"type": "string", "enum": ["int"], "default": {"type": "int"}},
                "g": {"type": "Long"}, "h": {"type": "tuple"}, "i": {"type": "float"},
                "type": {"type": "int"}
            }}),
        ))
        .unwrap();
        let p = &r.spec("typed").unwrap().parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["properties"]["a"]["type"], "integer");
        assert_eq!(p["properties"]["b"]["type"], "integer");
        assert_eq!(p["properties"]["c"]["type"], "array");
        assert_eq!(p["properties"]["c"]["items"]["type"], "number");
        assert_eq!(p["properties"]["d"]["type"], json!(["string", "null"]));
        assert_eq!(p["properties"]["e"]["anyOf"][0]["type"], "boolean");
        assert_eq!(p["properties"]["e"]["anyOf"][1]["type"], "object");
        assert_eq!(p["properties"]["f"]["enum"], json!(["int"]));
        assert_eq!(p["properties"]["f"]["default"], json!({"type": "int"}));
        assert_eq!(p["properties"]["g"]["type"], "integer");
        assert_eq!(p["properties"]["h"]["type"], "array");
        assert_eq!(p["properties"]["i"]["type"], "number");
        assert_eq!(p["properties"]["type"]["type"], "integer");
        let v = r.validator("typed").unwrap();
        assert!(v.is_valid(&json!({"a": 3, "c": [1.5]})));
        assert!(!v.is_valid(&json!({"a": "3"})));
        let w = r.schema_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].level, crate::diagnostic::Level::Warning);
        for said in [
            "\"int\" read as \"integer\" at /properties/a",
            "\"uint32\" read as \"integer\" at /properties/b",
            "\"Dict\" read as \"object\" at /",
            "\"double\" read as \"number\" at /properties/c/items",
        ] {
            assert!(
                w[0].message.contains(said),
                "{said} not in {}",
                w[0].message
            );
        }
        // Names no language uses are still refused, and a standard schema has no warning.
        let err = r
            .add_spec(ToolSpec::new(
                "u",
                "",
                json!({"type": "object", "properties": {"a": {"type": "integr"}}}),
            ))
            .unwrap_err();
        assert!(matches!(err, RegistryError::InvalidSchema { .. }), "{err}");
        r.add_spec(ToolSpec::new(
            "s",
            "",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        ))
        .unwrap();
        assert_eq!(r.schema_warnings().len(), 1);
    }

    // covers V-1, R-7: remote references are never fetched, even inside an async runtime
    #[tokio::test]
    async fn remote_refs_are_a_load_error_not_a_fetch() {
        let mut r = Registry::new();
        let err = r
            .add_spec(ToolSpec::new(
                "t",
                "",
                json!({"type":"object","properties":{"a":{"$ref":"https://example.invalid/x.json"}}}),
            ))
            .unwrap_err();
        assert!(matches!(err, RegistryError::InvalidSchema { .. }), "{err}");
    }

    // covers V-2
    #[test]
    fn merge_keeps_validators_and_refuses_duplicates() {
        let mut a = Registry::new();
        a.add_spec(ToolSpec::new("x", "", json!({"type":"object"})))
            .unwrap();
        let mut b = Registry::new();
        b.add_spec(ToolSpec::new("y", "", json!({"type":"object"})))
            .unwrap();
        a.merge(b).unwrap();
        assert!(a.validator("y").is_some());
        let mut c = Registry::new();
        c.add_spec(ToolSpec::new("x", "", json!({}))).unwrap();
        assert!(matches!(a.merge(c), Err(RegistryError::Duplicate(n)) if n == "x"));
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
