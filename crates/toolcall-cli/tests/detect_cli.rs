//! `toolcall detect` and `toolcall parse --model`, run as the built binary.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;

use common::bin;

fn toolcall(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A template holding the markers a DeepSeek-R1 template renders (our own text).
const R1_TEMPLATE: &str = "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n```json\\n' + args + '\\n```<｜tool▁call▁end｜>'}}{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}{% set c = c.split('</think>')[-1] %}";

#[test]
fn detect_names_family_reasoning_and_deciding_markers_of_a_jinja_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r1.jinja");
    std::fs::write(&path, R1_TEMPLATE).unwrap();
    let out = stdout(&toolcall(&["detect", path.to_str().unwrap()], b""));
    assert!(out.contains("family:          deepseek_v3"), "{out}");
    assert!(out.contains("<｜tool▁sep｜>"), "{out}");
    assert!(out.contains("reasoning:       <think> … </think>"), "{out}");
    assert!(out.contains("opens <think>:   yes"), "{out}");
}

#[test]
fn detect_reads_a_tokenizer_config_with_named_templates_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer_config.json");
    let config = serde_json::json!({
        "chat_template": [
            {"name": "default", "template": "{{ m.content }}"},
            {"name": "tool_use", "template": "{{ '<|START_ACTION|>' }}{{ calls|tojson }}{{ '<|END_ACTION|>' }}"},
        ],
        "response_template": "<|START_RESPONSE|>{{ r }}<|END_RESPONSE|>",
    });
    std::fs::write(&path, config.to_string()).unwrap();
    let out = stdout(&toolcall(
        &["detect", "--json", path.to_str().unwrap()],
        b"",
    ));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["family"], "cohere");
    assert_eq!(v["decided_by"][0], "<|START_ACTION|>");
    assert_eq!(v["opens_reasoning"], false);
    assert_eq!(v["templates"].as_array().unwrap().len(), 3);
}

#[test]
fn detect_reports_a_config_without_a_template() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer_config.json");
    std::fs::write(&path, r#"{"bos_token": "<s>"}"#).unwrap();
    let o = toolcall(&["detect", path.to_str().unwrap()], b"");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("chat_template"));
}

#[test]
fn parse_model_picks_the_family_by_name() {
    let reply = br#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#;
    let qwen = stdout(&toolcall(
        &["parse", "--model", "Qwen/Qwen2.5-7B-Instruct"],
        reply,
    ));
    let v: Value = serde_json::from_str(&qwen).unwrap();
    assert_eq!(v["calls"][0]["format"], "hermes");
    // A Mistral model's reader does not take Hermes markup: the reply stays text.
    let mistral = stdout(&toolcall(
        &["parse", "--model", "mistralai/Mistral-7B-Instruct-v0.3"],
        reply,
    ));
    let v: Value = serde_json::from_str(&mistral).unwrap();
    assert_eq!(v["calls"].as_array().unwrap().len(), 0);
    let unknown = toolcall(&["parse", "--model", "someone/own-model"], reply);
    let v: Value = serde_json::from_str(&stdout(&unknown)).unwrap();
    assert_eq!(v["calls"][0]["format"], "hermes");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("auto mode"));
}

#[test]
fn parse_model_and_format_conflict() {
    let o = toolcall(
        &[
            "parse",
            "--model",
            "openai/gpt-oss-20b",
            "--format",
            "hermes",
        ],
        b"x",
    );
    assert!(!o.status.success());
}

/// Templates holding the markers the newer families' published templates render (our own
/// text): `toolcall detect` names each family and its reasoning markers.
#[test]
fn detect_names_the_newer_families() {
    let dir = tempfile::tempdir().unwrap();
    for (file, template, family, reasoning) in [
        (
            "functiongemma.jinja",
            "{% for tc in m.tool_calls %}<start_function_call>call:{{ tc.name }}{{ '{' }}{% for k, v in tc.arguments.items() %}{{ k }}:<escape>{{ v }}<escape>{% endfor %}{{ '}' }}<end_function_call>{% endfor %}",
            "functiongemma",
            None,
        ),
        (
            "granite20bfc.jinja",
            "{% for tc in m.tool_calls %}<function_call> {{ tc | tojson }}{% endfor %}",
            "granite_20b_fc",
            None,
        ),
        (
            "magistral.jinja",
            "{{ '[THINK]' + m.thinking + '[/THINK]' }}{% for tc in m.tool_calls %}{{ '[TOOL_CALLS]' + tc.name + '[ARGS]' + tc.arguments|tojson }}{% endfor %}",
            "mistral",
            Some("[THINK] … [/THINK]"),
        ),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, template).unwrap();
        let out = stdout(&toolcall(&["detect", path.to_str().unwrap()], b""));
        assert!(
            out.contains(&format!("family:          {family} (decided by")),
            "{file}: {out}"
        );
        if let Some(r) = reasoning {
            assert!(
                out.contains(&format!("reasoning:       {r}")),
                "{file}: {out}"
            );
        }
    }
}
