//! The official `anthropic` Python package as the client of the gateway's `/v1/messages`, in
//! front of a stand-in Chat upstream answering in plain text (Hermes, Qwen3-Coder XML, gpt-oss
//! markup, …). The checks live in `anthropic_client.py`; this side checks what reached the
//! upstream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// The model's calls of Anthropic's three built-in client tools, in Qwen3-Coder's XML.
const DESKTOP_CALLS: &str = "<tool_call>\n<function=computer>\n<parameter=action>\nleft_click\n</parameter>\n<parameter=coordinate>\n[100, 200]\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=bash>\n<parameter=command>\nls /tmp\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=str_replace_based_edit_tool>\n<parameter=command>\nview\n</parameter>\n<parameter=path>\n/tmp/a.txt\n</parameter>\n</function>\n</tool_call>";

/// The SDK's built-in tools reached the upstream as three schemas, and its screenshot
/// `tool_result` as an image part paired with the computer's call.
fn built_ins_reached_the_upstream(standin: &StandIn, stdout: &str) {
    let requests = standin.requests();
    let desk: Vec<&Value> = requests
        .iter()
        .filter(|r| r["model"] == "desktop-builtins")
        .collect();
    assert_eq!(desk.len(), 2, "whole and streamed");
    for r in desk {
        let tools = r["tools"].as_array().unwrap();
        let names: Vec<&str> = tools
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["computer", "bash", "str_replace_based_edit_tool"]);
        assert!(
            tools
                .iter()
                .all(|t| t["function"]["parameters"]["properties"].is_object())
        );
        let about = tools[0]["function"]["description"].as_str().unwrap();
        assert!(about.contains("1024x768"), "{about}");
    }
    let ids: Vec<String> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("built-in ids: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    let shot = requests
        .iter()
        .find(|r| r["model"] == "desktop-shot")
        .unwrap();
    let results: Vec<&Value> = shot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 3, "{shot}");
    assert_eq!(results[0]["tool_call_id"], json!(ids[0]));
    let image = results[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "image_url")
        .unwrap_or_else(|| panic!("{shot}"));
    assert!(
        image["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBOR")
    );
    assert_eq!(results[1]["content"], "a.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_gets_tool_use_blocks_whole_and_streamed() {
    let Some(SdkRun {
        standin,
        ids,
        stdout,
    }) = run_sdk_client_with(
        "anthropic_client.py",
        "tool_use ids: ",
        &[&[("desktop-builtins", DESKTOP_CALLS)], CHOICE_REPLIES].concat(),
    )
    .await
    else {
        return;
    };
    built_ins_reached_the_upstream(&standin, &stdout);
    check_choices(&standin);
    // The tool results reached the upstream as `tool` messages paired with the calls the
    // assistant message (the SDK's own reply, sent back) holds, in order, after it.
    let requests = standin.requests();
    let follow = requests
        .iter()
        .find(|r| r["model"] == "followup-check")
        .unwrap();
    let messages = follow["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    let mut want = vec!["user", "assistant"];
    want.extend(ids.iter().map(|_| "tool"));
    assert_eq!(roles, want, "{follow}");
    let sent: Vec<&str> = messages[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ids);
    for (m, id) in messages[2..].iter().zip(&ids) {
        assert_eq!(m["tool_call_id"], json!(id));
    }
    assert_eq!(messages[2]["content"], "sunny, 21 C");
    if ids.len() > 1 {
        assert_eq!(messages[3]["content"], "Error: no such city");
    }

    // Claude Code's shape: system blocks joined, the mid-conversation system message kept,
    // max_tokens and the thinking budget mapped, nothing Anthropic-only passed on.
    let cc = requests.iter().find(|r| r["max_tokens"] == 32000).unwrap();
    assert_eq!(
        cc["messages"][0],
        json!({"role": "system", "content": "You are a coding agent.\nBe brief."})
    );
    assert_eq!(cc["messages"][2]["role"], "system");
    assert_eq!(cc["reasoning_effort"], "low");
    for field in [
        "thinking",
        "metadata",
        "context_management",
        "output_config",
        "system",
    ] {
        assert!(cc.get(field).is_none(), "{field} went upstream: {cc}");
    }
    let cc_tools = cc["tools"].as_array().unwrap();
    assert!(
        cc_tools
            .iter()
            .all(|t| t.get("cache_control").is_none()
                && t["function"].get("cache_control").is_none())
    );
    // All 27 tools reached the upstream, the 24 large 2020-12 schemas as declared.
    assert_eq!(cc_tools.len(), 27);
    assert_eq!(cc_tools[26]["function"]["name"], "Code23");
    let schema = &cc_tools[26]["function"]["parameters"];
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    assert_eq!(
        schema["properties"]["options"]["propertyNames"]["pattern"],
        "^[a-z_]+$"
    );
    let _: &Value = cc;
}
