//! `toolcall constrain`, run as the built binary.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use serde_json::Value;

use common::bin;

fn toolcall(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn tools_file() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.join("../toolcall-parse/tests/fixtures/families_tools.json")
        .display()
        .to_string()
}

#[test]
fn prints_each_dialect_for_a_family_and_tools_file() {
    let tools = tools_file();
    let gbnf = toolcall(&["constrain", "--format", "qwen3_coder", "--tools", &tools]);
    assert!(
        gbnf.status.success(),
        "{}",
        String::from_utf8_lossy(&gbnf.stderr)
    );
    let text = String::from_utf8(gbnf.stdout).unwrap();
    assert!(text.starts_with("root ::= "), "{text}");
    assert!(
        text.contains("\"get_weather\"") && text.contains("\"<parameter=\""),
        "{text}"
    );

    let lark = toolcall(&[
        "constrain",
        "--format",
        "hermes",
        "--tools",
        &tools,
        "--dialect",
        "lark",
    ]);
    assert!(
        String::from_utf8(lark.stdout)
            .unwrap()
            .starts_with("start: ")
    );

    let tag = toolcall(&[
        "constrain",
        "--format",
        "kimi_k2",
        "--tools",
        &tools,
        "--dialect",
        "structural_tag",
        "--tool-choice",
        "get_weather",
        "--single-call",
    ]);
    let v: Value = serde_json::from_slice(&tag.stdout).unwrap();
    assert_eq!(v["type"], "structural_tag");
    assert_eq!(v["format"]["at_least_one"], true);
    assert_eq!(v["format"]["stop_after_first"], true);
    assert!(
        !v.to_string().contains("get_time"),
        "a named tool leaves the others out"
    );

    let schema = toolcall(&[
        "constrain",
        "--format",
        "json",
        "--tools",
        &tools,
        "--dialect",
        "json_schema",
        "--tool-choice",
        "required",
    ]);
    let v: Value = serde_json::from_slice(&schema.stdout).unwrap();
    let names: Vec<&str> = v["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["properties"]["name"]["const"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"get_weather") && names.len() == 8,
        "{names:?}"
    );
}

#[test]
fn says_why_a_family_cannot_be_constrained() {
    let tools = tools_file();
    let out = toolcall(&["constrain", "--format", "pythonic", "--tools", &tools]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pythonic cannot be constrained as gbnf"),
        "{err}"
    );
    let out = toolcall(&[
        "constrain",
        "--format",
        "hermes",
        "--tools",
        &tools,
        "--dialect",
        "json_schema",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one JSON document"));
}
