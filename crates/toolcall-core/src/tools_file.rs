//! Loading tools files: the `tools` array of OpenAI Chat, of the Responses API, Anthropic's
//! `tools`, and the project's own [`ToolSpec`] format, detected per entry.
//!
//! | shape | entry |
//! |---|---|
//! | OpenAI Chat | `{"type":"function","function":{"name","description","parameters"}}` |
//! | Responses | `{"type":"function","name","description","parameters"}` |
//! | Anthropic | `{"name","description","input_schema"}` |
//! | Gemini | `{"functionDeclarations":[{"name","description","parameters"}]}` (types such as `"STRING"` are lower-cased) |
//! | own | `{"name","description","parameters","enabled","kind","timeout_ms","requires_approval","backend"}` |
//!
//! Each provider shape is read by its dialect's module in `toolcall-wire`
//! ([`toolcall_wire::Dialect::tools_file_entry`]), so a new dialect's declarations are
//! accepted here once it is registered; an entry in none of them is the own format.
//!
//! The document is an array of entries or an object `{"tools": [...]}`; Gemini's
//! `functionDeclarations` lists are flattened in place (entry indexes count declarations). The project's own keys
//! (`enabled`, `kind`, `backend`, ...) are also read beside the provider shapes, so an OpenAI
//! tools array can be given a backend without rewriting it. Errors name the entry's index.
//!
//! An entry `{"type": "mcp", "server_label": NAME, ...}` (the Responses API's shape) brings in
//! every tool of an MCP server as `NAME.tool`: `"command": [argv...]` (plus `"env"`) runs a
//! program speaking MCP on stdio, `"server_url"` (plus `"headers"`) reaches a Streamable HTTP
//! endpoint. Such entries are not tools themselves: [`mcp_servers_from_tools_json`] returns
//! them, and the tools are listed when the server is connected.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use toolcall_wire::dialect::FlatDeclaration;

use crate::registry::{Registry, RegistryError};
use crate::spec::{McpServer, ToolSpec};

/// Largest tools file read.
pub const MAX_TOOLS_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most tools in one document.
pub const MAX_TOOLS: usize = 10_000;

impl Registry {
    /// Builds a registry from a tools document (see the module docs for accepted shapes).
    pub fn from_tools_json(doc: &Value) -> Result<Registry, RegistryError> {
        let mut registry = Registry::new();
        for (index, spec) in specs_from_tools_json(doc)?.into_iter().enumerate() {
            let name = spec.name.clone();
            registry
                .add_spec(spec)
                .map_err(|source| RegistryError::Entry {
                    index,
                    name: Some(name),
                    source: Box::new(source),
                })?;
        }
        Ok(registry)
    }

    /// Reads and loads a tools file, at most [`MAX_TOOLS_FILE_BYTES`].
    pub fn from_tools_file(path: &Path) -> Result<Registry, RegistryError> {
        Self::from_tools_json(&read_tools_document(path)?)
    }
}

/// Reads a tools file as JSON, at most [`MAX_TOOLS_FILE_BYTES`].
pub fn read_tools_document(path: &Path) -> Result<Value, RegistryError> {
    {
        let io = |source| RegistryError::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut bytes = Vec::new();
        file.take(MAX_TOOLS_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_TOOLS_FILE_BYTES {
            return Err(RegistryError::TooLarge {
                path: path.to_owned(),
                limit: MAX_TOOLS_FILE_BYTES,
            });
        }
        serde_json::from_slice(&bytes).map_err(|source| RegistryError::Json {
            path: path.to_owned(),
            source,
        })
    }
}

/// Whether an entry declares an MCP server rather than a tool.
fn is_mcp_entry(entry: &Value) -> bool {
    entry.get("type").and_then(Value::as_str) == Some("mcp")
}

/// The MCP servers a tools document declares (`{"type": "mcp", ...}` entries, in order).
pub fn mcp_servers_from_tools_json(doc: &Value) -> Result<Vec<McpServer>, RegistryError> {
    let top: &[Value] = match doc {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(a)) => a,
            _ => &[],
        },
        _ => &[],
    };
    top.iter()
        .enumerate()
        .filter(|(_, e)| is_mcp_entry(e))
        .map(|(index, entry)| {
            mcp_server_from_entry(entry).map_err(|message| RegistryError::Entry {
                index,
                name: entry
                    .get("server_label")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                source: Box::new(RegistryError::Shape(message)),
            })
        })
        .collect()
}

/// Letters, digits, `_` and `-`: a prefix that keeps `NAME.tool` a valid tool id.
pub fn is_valid_mcp_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn string_map(
    entry: &Value,
    key: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Default::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| format!("\"{key}\" must be an object of strings")),
    }
}

fn mcp_server_from_entry(entry: &Value) -> Result<McpServer, String> {
    let name = entry
        .get("server_label")
        .and_then(Value::as_str)
        .ok_or("an MCP entry needs a \"server_label\" string")?;
    if !is_valid_mcp_server_name(name) {
        return Err(format!(
            "server_label {name:?} must be 1-64 letters, digits, '_' or '-'"
        ));
    }
    let name = name.to_owned();
    match (entry.get("command"), entry.get("server_url")) {
        (Some(command), None) => {
            let argv: Vec<String> = serde_json::from_value(command.clone())
                .map_err(|_| "\"command\" must be an array of strings (an argument vector)")?;
            if argv.first().is_none_or(|p| p.is_empty()) {
                return Err("\"command\" must name a program".into());
            }
            Ok(McpServer::Stdio {
                name,
                argv,
                env: string_map(entry, "env")?,
            })
        }
        (None, Some(Value::String(url))) => Ok(McpServer::Http {
            name,
            url: url.clone(),
            headers: string_map(entry, "headers")?,
        }),
        (None, Some(_)) => Err("\"server_url\" must be a string".into()),
        (Some(_), Some(_)) => Err("give \"command\" or \"server_url\", not both".into()),
        (None, None) => {
            Err("an MCP entry needs \"command\" (stdio) or \"server_url\" (HTTP)".into())
        }
    }
}

/// The specs of a tools document, in document order.
pub fn specs_from_tools_json(doc: &Value) -> Result<Vec<ToolSpec>, RegistryError> {
    const SHAPES: &str =
        "a tools document is an array of tools or an object with a \"tools\" array";
    let top: Vec<&Value> = match doc {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(_) => return Err(RegistryError::Shape("\"tools\" must be an array".into())),
            // A document that is one provider entry (Gemini's `{"functionDeclarations": …}`).
            None if toolcall_wire::tools_file_entry(o).is_some() => vec![doc],
            None => return Err(RegistryError::Shape(SHAPES.into())),
        },
        _ => return Err(RegistryError::Shape(SHAPES.into())),
    };
    // Each entry read flat by the dialect whose declaration shape it is (one entry may hold
    // several declarations: entry indexes count declarations), else in the own format.
    let mut entries: Vec<(Option<String>, FlatDeclaration)> = Vec::new();
    for entry in top.into_iter().filter(|e| !is_mcp_entry(e)) {
        let Some(obj) = entry.as_object() else {
            entries.push((None, Err("each tool must be a JSON object".to_owned())));
            continue;
        };
        match toolcall_wire::tools_file_entry(obj) {
            Some(declarations) => entries.extend(declarations.into_iter().map(|d| {
                let name = d
                    .as_ref()
                    .ok()
                    .and_then(name_of)
                    .or_else(|| entry_name(entry));
                (name, d)
            })),
            None => entries.push((entry_name(entry), own_entry(obj))),
        }
        if entries.len() > MAX_TOOLS {
            return Err(RegistryError::Shape(format!(
                "more than {MAX_TOOLS} tools declared"
            )));
        }
    }
    entries
        .into_iter()
        .enumerate()
        .map(|(index, (name, flat))| {
            flat.and_then(spec_from_flat)
                .map_err(|message| RegistryError::Entry {
                    index,
                    name,
                    source: Box::new(RegistryError::Shape(message)),
                })
        })
        .collect()
}

fn name_of(flat: &Map<String, Value>) -> Option<String> {
    flat.get("name").and_then(Value::as_str).map(str::to_owned)
}

fn entry_name(entry: &Value) -> Option<String> {
    entry
        .get("name")
        .or_else(|| entry.get("function").and_then(|f| f.get("name")))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// An entry in no provider's declaration shape: the own format, flat already; a `type`
/// (a hosted or built-in tool) names what cannot be called through toolcall.
fn own_entry(obj: &Map<String, Value>) -> FlatDeclaration {
    match obj.get("type") {
        Some(Value::String(t)) => Err(format!(
            "tool type {t:?} cannot be called through toolcall; only \"function\" tools can"
        )),
        Some(_) => Err("\"type\" must be a string".to_owned()),
        None => Ok(obj.clone()),
    }
}

/// A flat declaration (the own format's keys) as a spec.
fn spec_from_flat(mut own: Map<String, Value>) -> Result<ToolSpec, String> {
    // `strict` is an OpenAI flag with no meaning here.
    own.remove("strict");
    if own.get("parameters").is_some_and(Value::is_null) {
        own.remove("parameters");
    }
    match own.get("name") {
        Some(Value::String(_)) => {}
        Some(_) => return Err("\"name\" must be a string".to_owned()),
        None => return Err("missing \"name\"".to_owned()),
    }
    if own.get("description").is_some_and(Value::is_null) {
        own.remove("description");
    }
    serde_json::from_value(Value::Object(own)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::spec::{Backend, ToolKind};

    fn params() -> Value {
        json!({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})
    }

    // covers V-1, V-2
    #[test]
    fn openai_chat_tools_array() {
        let doc = json!([{"type":"function","function":{"name":"search","description":"Search","parameters":params(),"strict":true}}]);
        let r = Registry::from_tools_json(&doc).unwrap();
        let s = r.spec("search").unwrap();
        assert_eq!(s.description, "Search");
        assert_eq!(s.parameters, params());
        assert!(s.enabled);
    }

    // covers V-1
    #[test]
    fn responses_tools_array() {
        let doc = json!({"tools":[{"type":"function","name":"search","description":"Search","parameters":params()}]});
        let r = Registry::from_tools_json(&doc).unwrap();
        assert_eq!(r.spec("search").unwrap().parameters, params());
    }

    // covers V-1
    #[test]
    fn anthropic_tools_array() {
        let doc = json!([{"name":"search","description":"Search","input_schema":params()}]);
        let r = Registry::from_tools_json(&doc).unwrap();
        assert_eq!(r.spec("search").unwrap().parameters, params());
    }

    // covers V-1
    #[test]
    fn gemini_function_declarations() {
        let decl = json!({"name":"search","description":"Search",
            "parameters":{"type":"OBJECT","properties":{"q":{"type":"STRING"}},"required":["q"]}});
        for doc in [
            json!({"functionDeclarations": [decl.clone()]}),
            json!([{"functionDeclarations": [decl.clone()]}]),
            json!({"tools": [{"function_declarations": [decl.clone()]}]}),
        ] {
            let r = Registry::from_tools_json(&doc).unwrap();
            assert_eq!(r.spec("search").unwrap().parameters, params(), "{doc}");
        }
        // the index counts declarations
        let doc = json!([{"functionDeclarations": [decl, {"description": "nameless"}]}]);
        let e = Registry::from_tools_json(&doc).unwrap_err().to_string();
        assert!(e.contains("#1"), "{e}");
    }

    // Before: google-genai's `parametersJsonSchema` was not read (the tool took an empty
    // schema); it is toolcall-wire's Gemini module that reads declarations now.
    #[test]
    fn gemini_declarations_with_a_json_schema() {
        let doc = json!({"functionDeclarations": [
            {"name": "search", "description": "Search", "parametersJsonSchema": params()}]});
        let r = Registry::from_tools_json(&doc).unwrap();
        assert_eq!(r.spec("search").unwrap().parameters, params());
    }

    // covers V-1, V-2, V-4
    #[test]
    fn own_format_with_all_fields_and_mixed_shapes() {
        let doc = json!({"tools":[
            {"name":"vista.command.start_workflow::triage","description":"Start triage",
             "parameters":params(),"enabled":false,"kind":"job","timeout_ms":1500,
             "requires_approval":true,"backend":{"type":"program","argv":["/bin/echo","x"]}},
            {"name":"fetch","backend":{"type":"http","url":"http://127.0.0.1:1/x","headers":{"x-a":"b"}}},
            {"type":"function","function":{"name":"chat_style","parameters":params()},"enabled":false}
        ]});
        let r = Registry::from_tools_json(&doc).unwrap();
        assert_eq!(
            r.names().collect::<Vec<_>>(),
            [
                "chat_style",
                "fetch",
                "vista.command.start_workflow::triage"
            ]
        );
        let s = r.spec("vista.command.start_workflow::triage").unwrap();
        assert!(!s.enabled);
        assert_eq!(s.kind, ToolKind::Job);
        assert_eq!(s.timeout, Some(Duration::from_millis(1500)));
        assert!(s.requires_approval);
        assert!(
            matches!(&s.backend, Some(Backend::Program { argv, .. }) if argv == &["/bin/echo", "x"])
        );
        let f = r.spec("fetch").unwrap();
        assert_eq!(f.parameters, json!({"type":"object","properties":{}}));
        assert!(matches!(&f.backend, Some(Backend::Http { url, .. }) if url.ends_with("/x")));
        assert!(!r.spec("chat_style").unwrap().enabled);
        assert_eq!(
            r.enabled_specs()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["fetch"]
        );
    }

    fn err_text(doc: Value) -> String {
        Registry::from_tools_json(&doc).unwrap_err().to_string()
    }

    // covers V-1, V-2
    #[test]
    fn errors_name_the_entry() {
        let ok = json!({"name":"ok"});
        let e = err_text(json!([ok, {"description":"no name"}]));
        assert!(e.contains("#1") && e.contains("missing \"name\""), "{e}");
        let e = err_text(json!([ok, {"name":"bad id!"}]));
        assert!(
            e.contains("#1") && e.contains("bad id!") && e.contains("invalid tool id"),
            "{e}"
        );
        let e = err_text(json!([ok, {"name":"ok"}]));
        assert!(e.contains("#1") && e.contains("declared twice"), "{e}");
        let e = err_text(
            json!([{"name":"s","parameters":{"type":"object","properties":{"a":{"type":"nope"}}}}]),
        );
        assert!(e.contains("#0") && e.contains("invalid JSON Schema"), "{e}");
        let e = err_text(json!([{"type":"web_search"}]));
        assert!(e.contains("#0") && e.contains("web_search"), "{e}");
        let e = err_text(json!([{"name":"k","kind":"later"}]));
        assert!(e.contains("#0") && e.contains("later"), "{e}");
        let e = err_text(json!([1]));
        assert!(e.contains("#0") && e.contains("object"), "{e}");
        let e = err_text(json!({"functions": []}));
        assert!(e.contains("\"tools\" array"), "{e}");
        let e = err_text(json!("tools"));
        assert!(e.contains("array"), "{e}");
    }

    // covers V-1
    #[test]
    fn files_are_read_and_bounded() {
        let dir = std::env::temp_dir().join(format!("toolcall-core-tf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("tools.json");
        std::fs::write(&good, r#"[{"name":"a"}]"#).unwrap();
        assert_eq!(Registry::from_tools_file(&good).unwrap().len(), 1);
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "[{").unwrap();
        assert!(matches!(
            Registry::from_tools_file(&bad),
            Err(RegistryError::Json { .. })
        ));
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; MAX_TOOLS_FILE_BYTES as usize + 1]).unwrap();
        assert!(matches!(
            Registry::from_tools_file(&big),
            Err(RegistryError::TooLarge { .. })
        ));
        assert!(matches!(
            Registry::from_tools_file(&dir.join("missing.json")),
            Err(RegistryError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec![
                "function", "object", "string", "a", "a.b::c", "", "9", "job", "program",
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "tools",
                            "type",
                            "function",
                            "name",
                            "description",
                            "parameters",
                            "properties",
                            "input_schema",
                            "kind",
                            "enabled",
                            "backend",
                            "argv",
                            "url",
                            "functionDeclarations",
                            "timeout_ms",
                            "required",
                        ]),
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        // covers R-7, V-2: any document loads or fails with an error, never a panic, and a
        // loaded registry only holds valid ids.
        #[test]
        fn arbitrary_documents_never_panic(doc in json_value()) {
            if let Ok(r) = Registry::from_tools_json(&doc) {
                for name in r.names() {
                    proptest::prop_assert!(Registry::validate_id(name).is_ok());
                }
            }
        }
    }

    // covers W-MCP
    #[test]
    fn mcp_entries_declare_servers_not_tools() {
        let doc = json!([
            {"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}},
            {"type": "mcp", "server_label": "files", "command": ["mcp-files", "--root", "/srv"],
             "env": {"LOG": "1"}},
            {"type": "mcp", "server_label": "docs", "server_url": "http://127.0.0.1:9/mcp",
             "headers": {"x-team": "a"}}
        ]);
        let registry = Registry::from_tools_json(&doc).unwrap();
        assert_eq!(registry.names().collect::<Vec<_>>(), ["echo"]);
        let servers = mcp_servers_from_tools_json(&doc).unwrap();
        assert_eq!(servers.len(), 2);
        assert!(matches!(&servers[0], McpServer::Stdio { name, argv, env }
            if name == "files" && argv[2] == "/srv" && env["LOG"] == "1"));
        assert!(matches!(&servers[1], McpServer::Http { name, url, headers }
            if name == "docs" && url.ends_with("/mcp") && headers["x-team"] == "a"));
    }

    // covers W-MCP
    #[test]
    fn bad_mcp_entries_name_their_index() {
        for (entry, says) in [
            (json!({"type": "mcp", "command": ["x"]}), "server_label"),
            (
                json!({"type": "mcp", "server_label": "a.b", "command": ["x"]}),
                "server_label",
            ),
            (
                json!({"type": "mcp", "server_label": "a", "command": "x y"}),
                "argument vector",
            ),
            (
                json!({"type": "mcp", "server_label": "a", "command": []}),
                "name a program",
            ),
            (json!({"type": "mcp", "server_label": "a"}), "command"),
            (
                json!({"type": "mcp", "server_label": "a", "command": ["x"], "server_url": "u"}),
                "not both",
            ),
        ] {
            let err = mcp_servers_from_tools_json(&json!([{"name": "t"}, entry]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("#1") && err.contains(says), "{err}");
        }
    }
}
