//! Tool specs and results between toolcall's shapes and MCP's.
//!
//! A toolcall result becomes a `CallToolResult` whose `structuredContent` is the result JSON
//! the model would get (`{"status":"ok","data":…}` or `{"error":{"code","message"}}`) and whose
//! text content is the same JSON; images in the data (`{"type":"image","media_type","data"}`)
//! travel as MCP image content and are left out of the JSON. Errors are `isError: true`
//! results. An MCP result becomes toolcall data: its `structuredContent` when present, else
//! its content (a lone text block as the JSON it holds or as text, images as toolcall image
//! blocks).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use toolcall_core::{ErrorCode, Repair, ToolError, ToolOutput, ToolResult, ToolSpec};
use toolcall_run::client::images::take_images_noting;

/// Longest error text kept from a failing MCP result.
const MAX_ERROR_TEXT: usize = 4096;

/// The MCP listing of a spec: name, description, input schema and annotations.
pub fn mcp_tool(spec: &ToolSpec) -> Tool {
    let mut schema: JsonObject = match &spec.parameters {
        Value::Object(m) => m.clone(),
        _ => JsonObject::new(),
    };
    // MCP requires an object schema at the top.
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let mut tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    );
    let a = &spec.annotations;
    if !a.is_empty() {
        let mut hints = ToolAnnotations::new();
        hints.read_only_hint = a.read_only;
        hints.destructive_hint = a.destructive;
        hints.idempotent_hint = a.idempotent;
        tool.annotations = Some(hints);
    }
    tool
}

/// The MCP result of a toolcall result.
pub fn call_tool_result(result: &ToolResult) -> CallToolResult {
    call_tool_result_repaired(result, &[])
}

/// The MCP result of a toolcall result whose arguments validation repaired: the repairs
/// (`[{"kind", "message"}]`, e.g. `coerced_string` for an `objectId` sent as `5`) go with the
/// result under `repairs`, in the structured content and its text, so the client knows its
/// call ran with other arguments than it sent.
pub fn call_tool_result_repaired(result: &ToolResult, repairs: &[Repair]) -> CallToolResult {
    let mut body = result.to_json();
    let repairs_json = (!repairs.is_empty())
        .then(|| serde_json::to_value(repairs).ok())
        .flatten();
    if let Some(r) = &repairs_json {
        body["repairs"] = r.clone();
    }
    match &result.outcome {
        Ok(_) => {
            let images = take_images_noting(&mut body, &|img| {
                format!(
                    "[{} image, {} base64 bytes, sent as image content]",
                    img.media_type,
                    img.data.len()
                )
            });
            let mut content = vec![ContentBlock::text(body.to_string())];
            content.extend(
                images
                    .into_iter()
                    .map(|img| ContentBlock::image(img.data, img.media_type)),
            );
            let mut out = CallToolResult::success(content);
            out.structured_content = Some(body);
            out
        }
        Err(e) => {
            let mut text = format!("{}: {}", e.code, e.message);
            if let Some(r) = &repairs_json {
                text.push_str(&format!(" (its arguments were repaired first: {r})"));
            }
            let mut out = CallToolResult::error(vec![ContentBlock::text(text)]);
            out.structured_content = Some(body);
            out
        }
    }
}

/// The toolcall outcome of an MCP result: `isError` results are `tool_failed`.
pub fn tool_outcome(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    if result.is_error == Some(true) {
        let text: String = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        let mut message: String = text.chars().take(MAX_ERROR_TEXT).collect();
        if message.trim().is_empty() {
            message = "the MCP server reported an error without a message".into();
        }
        let mut err = ToolError::new(ErrorCode::ToolFailed, message);
        if let Some(details) = result.structured_content {
            err = err.with_details(details);
        }
        return Err(err);
    }
    if let Some(data) = result.structured_content {
        return Ok(data.into());
    }
    let mut items: Vec<Value> = result.content.into_iter().map(content_value).collect();
    Ok(match items.len() {
        0 => Value::Null,
        1 => items.pop().unwrap_or(Value::Null),
        _ => Value::Array(items),
    }
    .into())
}

/// One content block as toolcall data.
fn content_value(block: ContentBlock) -> Value {
    match block {
        ContentBlock::Text(t) => {
            serde_json::from_str(&t.text).unwrap_or_else(|_| Value::String(t.text.clone()))
        }
        ContentBlock::Image(img) => {
            json!({"type": "image", "media_type": img.mime_type, "data": img.data})
        }
        other => serde_json::to_value(&other).unwrap_or(Value::Null),
    }
}

/// The toolcall spec of an MCP server's tool, named `SERVER.tool`; `None` when the MCP name
/// cannot be part of a toolcall id.
pub fn spec_from_mcp(server: &str, tool: &Tool) -> Option<ToolSpec> {
    let name = format!("{server}.{}", tool.name);
    toolcall_core::Registry::validate_id(&name).ok()?;
    let mut spec = ToolSpec::new(
        name,
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    if let Some(hints) = &tool.annotations {
        spec.annotations.read_only = hints.read_only_hint;
        spec.annotations.destructive = hints.destructive_hint;
        spec.annotations.idempotent = hints.idempotent_hint;
    }
    Some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcall_core::ToolAnnotations as Hints;

    #[test]
    fn spec_becomes_an_mcp_tool_with_annotations() {
        let spec = ToolSpec::new(
            "computer_use",
            "use the computer",
            json!({"properties": {}}),
        )
        .with_annotations(Hints {
            destructive: Some(true),
            ..Hints::default()
        });
        let tool = serde_json::to_value(mcp_tool(&spec)).unwrap();
        assert_eq!(tool["name"], "computer_use");
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["annotations"], json!({"destructiveHint": true}));
    }

    #[test]
    fn results_carry_structured_content_text_and_images() {
        let ok = ToolResult::ok(
            "c1".into(),
            "shot",
            json!({"screenshot": {"type": "image", "media_type": "image/png", "data": "iVBOR"}}),
        );
        let v = serde_json::to_value(call_tool_result(&ok)).unwrap();
        assert_eq!(v["isError"], false);
        assert_eq!(v["structuredContent"]["status"], "ok");
        assert!(
            v["structuredContent"]["data"]["screenshot"]["data"]
                .as_str()
                .unwrap()
                .contains("sent as image content")
        );
        assert_eq!(
            v["content"][1],
            json!({"type": "image", "data": "iVBOR", "mimeType": "image/png"})
        );

        let err = ToolResult::err(
            "c2".into(),
            "t",
            ToolError::new(ErrorCode::InvalidArguments, "x is missing"),
        );
        let v = serde_json::to_value(call_tool_result(&err)).unwrap();
        assert_eq!(v["isError"], true);
        assert_eq!(v["content"][0]["text"], "invalid_arguments: x is missing");
        assert_eq!(v["structuredContent"]["error"]["code"], "invalid_arguments");
    }

    #[test]
    fn mcp_results_become_outcomes() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("{\"n\": 3}")]);
        assert_eq!(tool_outcome(r.clone()).unwrap().data, json!({"n": 3}));
        r.content.push(ContentBlock::image("AAAA", "image/png"));
        assert_eq!(
            tool_outcome(r).unwrap().data[1],
            json!({"type": "image", "media_type": "image/png", "data": "AAAA"})
        );
        let e = tool_outcome(CallToolResult::error(vec![ContentBlock::text("boom")])).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::ToolFailed, "boom")
        );
    }

    #[test]
    fn mcp_names_get_the_server_prefix_or_are_skipped() {
        let tool = Tool::new("add", "adds", Arc::new(JsonObject::new()));
        assert_eq!(spec_from_mcp("calc", &tool).unwrap().name, "calc.add");
        let bad = Tool::new("a b", "", Arc::new(JsonObject::new()));
        assert!(spec_from_mcp("calc", &bad).is_none());
    }
}
