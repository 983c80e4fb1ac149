//! Shared helpers for the integration tests: fixtures and a registry of the seed tools.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{FormatSelection, ParseOptions};

pub fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn registry() -> Arc<Registry> {
    let list: Vec<Value> = serde_json::from_str(&fixture("tools.json")).unwrap();
    let mut r = Registry::new();
    for t in list {
        r.add_spec(ToolSpec::new(
            t["name"].as_str().unwrap(),
            t["description"].as_str().unwrap_or(""),
            t["parameters"].clone(),
        ))
        .unwrap();
    }
    Arc::new(r)
}

pub fn auto() -> ParseOptions {
    ParseOptions::default()
}

pub fn with_tools() -> ParseOptions {
    ParseOptions {
        tools: Some(registry()),
        ..ParseOptions::default()
    }
}

pub fn only(format: &str, tools: bool) -> ParseOptions {
    ParseOptions {
        format: FormatSelection::Only(format.into()),
        tools: tools.then(registry),
        ..ParseOptions::default()
    }
}
