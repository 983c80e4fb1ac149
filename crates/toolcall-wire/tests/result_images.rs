//! Images in tool results and in ordinary messages, through each dialect's request decoder
//! and encoder: a result's images travel inside the result where the dialect has a place for
//! them (Messages' `tool_result`, Gemini's `functionResponse.parts`, Responses'
//! `function_call_output`), and Gemini's calling modes offer only the allowed functions.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use toolcall_wire::Dialect;
use toolcall_wire::anthropic::Messages;
use toolcall_wire::chat::{ChatMessage, ChatRequest};
use toolcall_wire::gemini::Gemini;
use toolcall_wire::responses::Responses;

const PNG: &str = "iVBORw0KGgo=";
const URL: &str = "https://example.com/shot.png";

fn data_uri() -> String {
    format!("data:image/png;base64,{PNG}")
}

/// A neutral request whose one tool result holds text, an image as data and one by address.
fn with_result_images() -> ChatRequest {
    serde_json::from_value(json!({"model": "m", "messages": [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "computer", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [
            {"type": "text", "text": "the screen"},
            {"type": "image_url", "image_url": {"url": data_uri()}},
            {"type": "image_url", "image_url": {"url": URL}}]}]}))
    .unwrap()
}

#[test]
fn an_anthropic_upstream_gets_a_results_images_inside_the_tool_result() {
    let v = Messages.encode_request(&with_result_images()).unwrap();
    assert_eq!(
        v["messages"][2]["content"][0]["content"],
        json!([{"type": "text", "text": "the screen"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": URL}}]),
        "{v}"
    );
    // A text-only result stays a string.
    let mut plain = with_result_images();
    plain.messages[2] = ChatMessage::tool_result("c1", "done");
    let v = Messages.encode_request(&plain).unwrap();
    assert_eq!(v["messages"][2]["content"][0]["content"], "done");
}

#[test]
fn a_gemini_upstream_gets_a_results_images_as_inline_data_in_the_function_response() {
    let v = Gemini.encode_request(&with_result_images()).unwrap();
    let response = &v["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["response"], json!({"output": "the screen"}), "{v}");
    // The image by address cannot be inlined: it is left out.
    assert_eq!(
        response["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": PNG}}]),
        "{v}"
    );
    // A Gemini client's functionResponse parts come back as the same neutral images.
    let back = Gemini
        .decode_request(v.to_string().as_bytes())
        .unwrap()
        .request;
    let result = &back.messages[2];
    assert_eq!(result.role, "tool");
    assert_eq!(result.content_text().as_deref(), Some("the screen"));
    assert_eq!(
        result.content.as_ref().unwrap()[1]["image_url"]["url"],
        data_uri()
    );
}

#[test]
fn a_responses_upstream_gets_a_results_images_in_the_function_call_output() {
    let v = Responses.encode_request(&with_result_images()).unwrap();
    let output = v["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()["output"]
        .clone();
    assert_eq!(
        output,
        json!([{"type": "input_text", "text": "the screen"},
            {"type": "input_image", "image_url": data_uri()},
            {"type": "input_image", "image_url": URL}])
    );
    // Read back as a client's request: the same neutral result.
    let back = Responses.decode_request(v.to_string().as_bytes()).unwrap();
    let result = back
        .request
        .messages
        .iter()
        .find(|m| m.role == "tool")
        .unwrap();
    assert_eq!(result.content, with_result_images().messages[2].content);
}

#[test]
fn a_responses_input_image_in_a_message_stays_an_image() {
    let body = json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": data_uri()}]}]});
    let request = Responses
        .decode_request(body.to_string().as_bytes())
        .unwrap()
        .request;
    assert_eq!(
        request.messages[0].content,
        Some(json!([{"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": data_uri()}}]))
    );
    // Text-only content stays a string.
    let body = json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "hi"}]}]});
    let request = Responses
        .decode_request(body.to_string().as_bytes())
        .unwrap()
        .request;
    assert_eq!(request.messages[0].content, Some(json!("hi")));
}

fn offered(body: Value) -> (Vec<String>, Value) {
    let r = Gemini
        .decode_request(body.to_string().as_bytes())
        .unwrap()
        .request;
    let names = r
        .tools
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.function.name)
        .collect();
    (names, r.tool_choice.unwrap_or_default())
}

#[test]
fn gemini_validated_offers_only_the_allowed_functions_without_forcing_a_call() {
    let body = |mode: &str, allowed: &[&str]| {
        json!({"contents": [], "tools": [{"functionDeclarations": [
            {"name": "a"}, {"name": "b"}, {"name": "c"}]}],
            "toolConfig": {"functionCallingConfig": {"mode": mode,
                "allowedFunctionNames": allowed}}})
    };
    assert_eq!(
        offered(body("VALIDATED", &["a"])),
        (vec!["a".to_owned()], json!("auto"))
    );
    assert_eq!(
        offered(body("VALIDATED", &["a", "c"])),
        (vec!["a".to_owned(), "c".to_owned()], json!("auto"))
    );
    assert_eq!(
        offered(body("ANY", &["b"])),
        (
            vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
            json!({"type": "function", "function": {"name": "b"}})
        )
    );
    assert_eq!(
        offered(body("ANY", &["a", "b"])),
        (vec!["a".to_owned(), "b".to_owned()], json!("required"))
    );
    assert_eq!(offered(body("AUTO", &[])).0, ["a", "b", "c"]);
}
