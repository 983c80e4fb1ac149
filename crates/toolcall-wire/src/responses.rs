//! OpenAI Responses (`POST /v1/responses`): the request (with its conversion to a Chat
//! Completions request, for servers that only speak Chat), the output items, and reading a
//! streamed reply.
//!
//! A streamed reply is the output of its `response.completed` event; a stream that ends
//! before it is [`WireError::Cut`] (R-18).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, ChatRequest, ChatTool, ChatToolCall, FunctionDef};
use crate::{Limits, Reply, WireCall, WireError, excerpt, not_json};

/// A Responses request. Fields toolcall does not model stay in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponsesRequest {
    #[serde(default)]
    pub model: String,
    /// A string (one user message) or a list of input items.
    #[serde(default)]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Function tools, flat: `{"type":"function","name":..,"parameters":..}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Request fields with a different name in Chat Completions.
const RENAMED: [(&str, &str); 1] = [("max_output_tokens", "max_tokens")];
/// Request fields that only mean something to a Responses server (state, storage).
const RESPONSES_ONLY: [&str; 6] = [
    "store",
    "previous_response_id",
    "include",
    "truncation",
    "reasoning",
    "text",
];

impl ResponsesRequest {
    /// The same conversation as a Chat Completions request: `instructions` becomes a system
    /// message, input items become messages (consecutive `function_call`s one assistant
    /// message), tools are nested under `function`, and `tool_choice` `{"type":"function",
    /// "name":..}` becomes `{"type":"function","function":{"name":..}}`.
    pub fn to_chat(&self) -> Result<ChatRequest, WireError> {
        let mut messages = Vec::new();
        if let Some(i) = &self.instructions {
            messages.push(ChatMessage::text("system", i.clone()));
        }
        match &self.input {
            Value::String(s) => messages.push(ChatMessage::text("user", s.clone())),
            Value::Array(items) => {
                for item in items {
                    input_item_to_chat(item, &mut messages)?;
                }
            }
            Value::Null => {}
            _ => return Err(WireError::Missing("input as a string or a list of items")),
        }
        let tools = self.tools.as_ref().map(|tools| {
            tools
                .iter()
                .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
                .map(|t| ChatTool {
                    kind: "function".into(),
                    function: FunctionDef {
                        name: str_of(t, "name").to_owned(),
                        description: t
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        parameters: t.get("parameters").cloned(),
                        extra: t
                            .get("strict")
                            .map(|s| Map::from_iter([("strict".to_owned(), s.clone())]))
                            .unwrap_or_default(),
                    },
                })
                .collect()
        });
        let tool_choice = self.tool_choice.as_ref().map(|c| match c {
            Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("function") => {
                json!({"type": "function", "function": {"name": m.get("name").cloned().unwrap_or(Value::Null)}})
            }
            other => other.clone(),
        });
        let mut extra = Map::new();
        for (k, v) in &self.extra {
            if RESPONSES_ONLY.contains(&k.as_str()) {
                continue;
            }
            let key = RENAMED
                .iter()
                .find(|(from, _)| from == k)
                .map_or(k.as_str(), |(_, to)| to);
            extra.insert(key.to_owned(), v.clone());
        }
        Ok(ChatRequest {
            model: self.model.clone(),
            messages,
            tools,
            tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            stream: self.stream,
            extra,
        })
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Text of a message's content: a string, or its parts' `text` joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn input_item_to_chat(item: &Value, out: &mut Vec<ChatMessage>) -> Result<(), WireError> {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("function_call") => {
            let call = ChatToolCall::new(
                str_of(item, "call_id"),
                str_of(item, "name"),
                crate::encode_arguments(item.get("arguments").unwrap_or(&Value::Null)),
            );
            // Consecutive calls belong to one assistant message.
            match out.last_mut() {
                Some(m) if m.role == "assistant" && m.tool_calls.is_some() => {
                    m.tool_calls.get_or_insert_with(Vec::new).push(call);
                }
                _ => out.push(ChatMessage {
                    role: "assistant".into(),
                    tool_calls: Some(vec![call]),
                    ..ChatMessage::default()
                }),
            }
        }
        Some("function_call_output") => {
            let output = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => content_text(Some(other)),
                None => String::new(),
            };
            out.push(ChatMessage {
                tool_call_id: Some(str_of(item, "call_id").to_owned()),
                ..ChatMessage::text("tool", output)
            });
        }
        Some("reasoning") => {}
        None | Some("message") => {
            let role = match str_of(item, "role") {
                "developer" => "system",
                "" => return Err(WireError::Missing("role in an input message")),
                r => r,
            };
            out.push(ChatMessage::text(role, content_text(item.get("content"))));
        }
        Some(_) => {}
    }
    Ok(())
}

/// One output item of a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message {
        id: String,
        role: String,
        status: String,
        content: Vec<OutputText>,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        status: String,
    },
    Reasoning {
        id: String,
        summary: Vec<Value>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        content: Vec<ReasoningText>,
    },
}

/// A message's text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputText {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    #[serde(default)]
    pub annotations: Vec<Value>,
}

impl OutputText {
    pub fn new(text: impl Into<String>) -> Self {
        OutputText {
            kind: "output_text".into(),
            text: text.into(),
            annotations: Vec::new(),
        }
    }
}

/// A reasoning item's text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningText {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

impl ReasoningText {
    pub fn new(text: impl Into<String>) -> Self {
        ReasoningText {
            kind: "reasoning_text".into(),
            text: text.into(),
        }
    }
}

/// A whole reply (`"object": "response"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    pub object: String,
    pub created_at: u64,
    pub model: String,
    pub status: String,
    pub output: Vec<OutputItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Response {
    /// A completed response with the fields clients expect set to their defaults.
    pub fn completed(id: &str, created_at: u64, model: &str, output: Vec<OutputItem>) -> Self {
        let extra = json!({"error": null, "incomplete_details": null, "instructions": null,
            "metadata": {}, "parallel_tool_calls": true, "temperature": null,
            "tool_choice": "auto", "tools": [], "top_p": null});
        Response {
            id: id.to_owned(),
            object: "response".into(),
            created_at,
            model: model.to_owned(),
            status: "completed".into(),
            output,
            usage: None,
            extra: extra.as_object().cloned().unwrap_or_default(),
        }
    }
}

/// Reads a reply's `output` items (as JSON, so unknown item types are skipped, not errors).
pub fn decode_output(output: &[Value], limits: &Limits) -> Result<Reply, WireError> {
    let mut reply = Reply::default();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let text = reply.text.get_or_insert_with(String::new);
                text.push_str(&content_text(item.get("content")));
            }
            Some("function_call") => {
                if reply.calls.len() >= limits.max_calls {
                    return Err(WireError::TooManyCalls(limits.max_calls));
                }
                let id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str);
                reply.calls.push(WireCall::new(
                    id,
                    str_of(item, "name"),
                    item.get("arguments"),
                ));
            }
            Some("reasoning") => {
                let parts = item
                    .get("content")
                    .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
                    .or_else(|| item.get("summary"));
                let text = content_text(parts);
                if !text.is_empty() {
                    reply
                        .reasoning
                        .get_or_insert_with(String::new)
                        .push_str(&text);
                }
            }
            _ => {}
        }
    }
    reply.finish_reason = Some(if reply.calls.is_empty() {
        "stop".into()
    } else {
        "tool_calls".into()
    });
    Ok(reply)
}

/// Reads a whole reply's body into its `output` items.
pub fn output_of_body(body: &str) -> Result<Vec<Value>, WireError> {
    let v: Value = serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))?;
    output_of(&v)
}

fn output_of(response: &Value) -> Result<Vec<Value>, WireError> {
    response
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .ok_or(WireError::Missing("output array"))
}

/// Reads a Responses event stream: feed each SSE event; the output arrives with
/// `response.completed`.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    completed: Option<Vec<Value>>,
}

impl ResponsesStream {
    /// Takes one SSE event (its name and data). Failure events are errors.
    pub fn push(&mut self, event: &str, data: &str) -> Result<(), WireError> {
        if data.trim() == crate::chat::DONE {
            return Ok(());
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| not_json("a stream event", data, &e))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "response.completed" => {
                let response = v.get("response").ok_or(WireError::Missing("response"))?;
                self.completed = Some(output_of(response)?);
            }
            "response.failed" | "response.incomplete" | "error" => {
                return Err(WireError::Upstream(format!(
                    "{kind}: {}",
                    excerpt(data, 500)
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether `response.completed` arrived.
    pub fn is_finished(&self) -> bool {
        self.completed.is_some()
    }

    /// The completed output; [`WireError::Cut`] when the stream ended before it.
    pub fn finish(self) -> Result<Vec<Value>, WireError> {
        self.completed
            .ok_or_else(|| WireError::Cut("the stream ended before response.completed".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_items_decode_with_the_shared_policy() {
        let output = vec![
            json!({"type":"reasoning","id":"r","summary":[],"content":[{"type":"reasoning_text","text":"hm"}]}),
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
            json!({"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}),
            json!({"type":"function_call","call_id":"c2","name":"g","arguments":"oops"}),
            json!({"type":"web_search_call","id":"w"}),
        ];
        let reply = decode_output(&output, &Limits::default()).unwrap();
        assert_eq!(reply.text.as_deref(), Some("ok"));
        assert_eq!(reply.reasoning.as_deref(), Some("hm"));
        assert_eq!(reply.calls[0].arguments_value(), json!({"a":1}));
        assert_eq!(reply.calls[1].arguments_value(), json!("oops"));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    }

    // covers R-18
    #[test]
    fn a_stream_is_a_reply_only_once_completed() {
        let mut s = ResponsesStream::default();
        s.push(
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","delta":"x"}"#,
        )
        .unwrap();
        assert!(matches!(s.finish(), Err(WireError::Cut(_))));
        let mut s = ResponsesStream::default();
        s.push(
            "",
            r#"{"type":"response.completed","response":{"output":[]}}"#,
        )
        .unwrap();
        assert_eq!(s.finish().unwrap(), Vec::<Value>::new());
        let mut s = ResponsesStream::default();
        assert!(s.push("", r#"{"type":"response.failed"}"#).is_err());
    }

    #[test]
    fn a_request_converts_to_chat() {
        let request: ResponsesRequest = serde_json::from_value(json!({
            "model": "m", "instructions": "be brief", "max_output_tokens": 50, "store": false,
            "input": [
                {"role":"user","content":[{"type":"input_text","text":"weather?"}]},
                {"type":"function_call","call_id":"c1","name":"w","arguments":"{\"c\":\"Oslo\"}"},
                {"type":"function_call","call_id":"c2","name":"w","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output":"sunny"}
            ],
            "tools": [{"type":"function","name":"w","parameters":{"type":"object"}}],
            "tool_choice": {"type":"function","name":"w"}
        }))
        .unwrap();
        let chat = request.to_chat().unwrap();
        let v = serde_json::to_value(&chat).unwrap();
        assert_eq!(
            v["messages"][0],
            json!({"role":"system","content":"be brief"})
        );
        assert_eq!(v["messages"][1]["content"], "weather?");
        assert_eq!(v["messages"][2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(v["messages"][3]["tool_call_id"], "c1");
        assert_eq!(v["tools"][0]["function"]["name"], "w");
        assert_eq!(v["tool_choice"]["function"]["name"], "w");
        assert_eq!(v["max_tokens"], 50);
        assert!(v.get("store").is_none());
    }

    #[test]
    fn responses_serialise_as_the_api_defines() {
        let r = Response::completed(
            "resp_1",
            3,
            "m",
            vec![OutputItem::FunctionCall {
                id: "fc_1".into(),
                call_id: "c1".into(),
                name: "f".into(),
                arguments: "{}".into(),
                status: "completed".into(),
            }],
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["output"][0]["type"], "function_call");
        assert_eq!(v["object"], "response");
        assert_eq!(v["tools"], json!([]));
    }
}
