//! Gemini `generateContent` / `streamGenerateContent?alt=sse`: requests as `google-genai`,
//! `@ai-sdk/google` and Gemini CLI send them, whole replies, the streamed chunks, errors.
//!
//! Mapping to the neutral request: `systemInstruction` becomes a system message; `contents`
//! with role `user` user messages, role `model` assistant messages; `text` parts text
//! (`thought: true` parts reasoning), `inlineData` Chat image parts, `functionCall` parts an
//! assistant's calls, each `functionResponse` part a `tool` message. Ids: a client may mint
//! its own `id` on a `functionCall` and its `functionResponse` (Gemini CLI, the AI SDK); a
//! call without one gets `{name}_{n}` by position, and a response without one answers the
//! oldest unanswered call of its name. `functionDeclarations` are function tools, the schema
//! under `parameters`, `parametersJsonSchema` or `parameters_json_schema`; other tools
//! (`googleSearch`, `codeExecution`, …) keep their kind. `toolConfig.functionCallingConfig`
//! modes `AUTO`/`ANY`/`NONE`/`VALIDATED` map to Chat's `auto`/`required`/`none`/`auto`
//! (`ANY` with one allowed name: that tool); otherwise, with `ANY` or `VALIDATED`,
//! `allowedFunctionNames` leaves the other functions out of the offer. `generationConfig`'s `temperature`, `topP`, `topK`, `maxOutputTokens`,
//! `stopSequences` carry over, `thinkingConfig.thinkingBudget`/`thinkingLevel` become
//! `reasoning_effort`; the rest is reported as ignored. Keys are read in camelCase or
//! snake_case, as both reach servers.
//!
//! The model is in the URL, not the body: the front end sets it (and `stream`, from the
//! method) after decoding. Replies: reasoning is a `thought` part, then text, then each call
//! a `functionCall` part with its id; `finishReason` is `STOP` (Gemini says `STOP` for calls
//! too) or `MAX_TOKENS`. Streamed, each chunk is one `GenerateContentResponse`; a call goes
//! out whole once checked (Gemini never streams a call's arguments).

use serde_json::{Map, Value, json};

use crate::chat::{
    ChatMessage, ChatRequest, ChatTool, ChatToolCall, FunctionDef, FunctionDelta, ImagePart,
    ToolCallDelta,
};
use crate::dialect::{
    Decoded, Delta, Dialect, End, ErrorInfo, FlatDeclaration, Fragment, Out, ReplyMeta, SseEvent,
    StreamDecoder, StreamEncoder, Usage, arguments_object,
};
use crate::{Limits, Reply, WireCall, WireError, excerpt, not_json};

pub mod schema;

/// The Gemini dialect (registered in [`crate::DIALECTS`] as `gemini`).
pub struct Gemini;

/// `v[camel]` or `v[snake]`.
fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn parts_of(content: &Value) -> &[Value] {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The text of a content's non-thought text parts.
fn text_of(content: &Value) -> String {
    parts_of(content)
        .iter()
        .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// A thinking budget or level as an effort level.
fn effort(thinking: &Value) -> Option<&'static str> {
    if let Some(level) = field(thinking, "thinkingLevel", "thinking_level").and_then(Value::as_str)
    {
        return match level.to_ascii_lowercase().as_str() {
            "low" | "minimal" => Some("low"),
            "medium" => Some("medium"),
            "high" => Some("high"),
            _ => None,
        };
    }
    match field(thinking, "thinkingBudget", "thinking_budget").and_then(Value::as_i64) {
        Some(b) if b > 0 && b < 4096 => Some("low"),
        Some(b) if (4096..16384).contains(&b) => Some("medium"),
        Some(b) if b >= 16384 => Some("high"),
        _ => None,
    }
}

/// Pairs function responses with calls by id, or by name in order when ids are absent.
#[derive(Default)]
struct Ids {
    /// Calls not yet answered: (id, name).
    pending: Vec<(String, String)>,
    minted: usize,
}

impl Ids {
    fn call(&mut self, part: &Value) -> String {
        let id = match str_of(part, "id") {
            "" => {
                self.minted += 1;
                format!("{}_{}", str_of(part, "name"), self.minted)
            }
            id => id.to_owned(),
        };
        self.pending
            .push((id.clone(), str_of(part, "name").to_owned()));
        id
    }

    fn response(&mut self, part: &Value) -> String {
        let name = str_of(part, "name");
        let at = match str_of(part, "id") {
            "" => self.pending.iter().position(|(_, n)| n == name),
            id => self.pending.iter().position(|(i, _)| i == id),
        };
        match (at, str_of(part, "id")) {
            (Some(i), _) => self.pending.remove(i).0,
            (None, "") => format!("{name}_unpaired"),
            (None, id) => id.to_owned(),
        }
    }
}

/// A Gemini request body in neutral terms (model and stream left for the caller).
pub fn to_chat(body: &Value) -> Result<Decoded, WireError> {
    let mut ignored = Vec::new();
    let mut messages = Vec::new();
    if let Some(system) = field(body, "systemInstruction", "system_instruction") {
        let text = match system {
            Value::String(s) => s.clone(),
            other => text_of(other),
        };
        if !text.is_empty() {
            messages.push(ChatMessage::text("system", text));
        }
    }
    let mut ids = Ids::default();
    let contents = match body.get("contents") {
        Some(Value::Array(c)) => c.as_slice(),
        None | Some(Value::Null) => &[],
        Some(_) => return Err(WireError::Missing("contents as a list")),
    };
    for content in contents {
        content_to_chat(content, &mut ids, &mut messages);
    }
    let mut tools: Vec<ChatTool> = Vec::new();
    for t in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(obj) = t.as_object() else { continue };
        for (kind, v) in obj {
            match kind.as_str() {
                "functionDeclarations" | "function_declarations" => {
                    for d in v.as_array().into_iter().flatten() {
                        // `parameters` is Gemini's OpenAPI schema, whose types the SDKs
                        // write in capitals (`OBJECT`, `STRING`): JSON Schema's are lower-case.
                        let schema = d
                            .get("parametersJsonSchema")
                            .or_else(|| d.get("parameters_json_schema"))
                            .cloned()
                            .or_else(|| d.get("parameters").map(|p| lowercase_types(p, 0)));
                        tools.push(ChatTool {
                            kind: "function".into(),
                            function: FunctionDef {
                                name: str_of(d, "name").to_owned(),
                                description: d
                                    .get("description")
                                    .and_then(Value::as_str)
                                    .map(str::to_owned),
                                parameters: schema,
                                extra: Map::new(),
                            },
                        });
                    }
                }
                other => tools.push(crate::responses::other_tool(
                    other,
                    &json!({"name": other, "config": v}),
                )),
            }
        }
    }
    let mut tool_choice = None;
    if let Some(config) = body
        .get("toolConfig")
        .or_else(|| body.get("tool_config"))
        .and_then(|c| field(c, "functionCallingConfig", "function_calling_config"))
    {
        let allowed: Vec<&str> = field(config, "allowedFunctionNames", "allowed_function_names")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mode = str_of(config, "mode").to_ascii_uppercase();
        tool_choice = Some(match mode.as_str() {
            "ANY" if allowed.len() == 1 => {
                json!({"type": "function", "function": {"name": allowed[0]}})
            }
            "ANY" => json!("required"),
            "NONE" => json!("none"),
            // `VALIDATED`: the model calls an allowed function or answers in text.
            _ => json!("auto"),
        });
        let one_named = mode == "ANY" && allowed.len() == 1;
        if !allowed.is_empty() && matches!(mode.as_str(), "ANY" | "VALIDATED") && !one_named {
            // Chat has no "one of these" choice: the other functions are left out instead
            // (`ANY` with one name is Chat's named choice, which already restricts it).
            tools.retain(|t| t.kind != "function" || allowed.contains(&t.function.name.as_str()));
        }
    }
    let mut extra = Map::new();
    for (k, v) in body.as_object().into_iter().flatten() {
        match k.as_str() {
            "contents" | "systemInstruction" | "system_instruction" | "tools" | "toolConfig"
            | "tool_config" => {}
            "generationConfig" | "generation_config" => {
                generation_config(v, &mut extra, &mut ignored);
            }
            _ => ignored.push(k.clone()),
        }
    }
    Ok(Decoded {
        request: ChatRequest {
            model: String::new(),
            messages,
            tools: (!tools.is_empty()).then_some(tools),
            tool_choice,
            parallel_tool_calls: None,
            stream: None,
            extra,
        },
        ignored,
    })
}

fn generation_config(v: &Value, extra: &mut Map<String, Value>, ignored: &mut Vec<String>) {
    for (k, value) in v.as_object().into_iter().flatten() {
        let name = match k.as_str() {
            "temperature" => "temperature",
            "topP" | "top_p" => "top_p",
            "topK" | "top_k" => "top_k",
            "maxOutputTokens" | "max_output_tokens" => "max_tokens",
            "stopSequences" | "stop_sequences" => "stop",
            "seed" => "seed",
            "thinkingConfig" | "thinking_config" => {
                match effort(value) {
                    Some(e) => {
                        extra.insert("reasoning_effort".into(), json!(e));
                    }
                    None => ignored.push(format!("generationConfig.{k}")),
                }
                continue;
            }
            _ => {
                ignored.push(format!("generationConfig.{k}"));
                continue;
            }
        };
        extra.insert(name.to_owned(), value.clone());
    }
}

fn content_to_chat(content: &Value, ids: &mut Ids, out: &mut Vec<ChatMessage>) {
    let role = match str_of(content, "role") {
        "model" => "assistant",
        _ => "user",
    };
    let mut parts: Vec<Value> = Vec::new();
    let mut text_only = true;
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for p in parts_of(content) {
        if let Some(call) = field(p, "functionCall", "function_call") {
            let id = ids.call(call);
            calls.push(ChatToolCall::new(
                id,
                str_of(call, "name"),
                crate::encode_arguments(call.get("args").unwrap_or(&json!({}))),
            ));
        } else if let Some(r) = field(p, "functionResponse", "function_response") {
            let id = ids.response(r);
            let response = r.get("response").cloned().unwrap_or_default();
            // `{output: "…"}` / `{content: …}` wrappers hold the result; anything else is
            // the result itself.
            let text = match response
                .get("output")
                .or_else(|| response.get("content"))
                .or_else(|| response.get("result"))
            {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => response.to_string(),
            };
            let mut message = ChatMessage {
                tool_call_id: Some(id),
                name: Some(str_of(r, "name").to_owned()),
                ..ChatMessage::text("tool", text.clone())
            };
            // The response's own `parts` (a screenshot's `inlineData`) stay images.
            let images: Vec<Value> = r
                .get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| field(p, "inlineData", "inline_data"))
                .map(image_of_inline)
                .collect();
            if !images.is_empty() {
                let mut parts = vec![json!({"type": "text", "text": text})];
                parts.extend(images);
                message.content = Some(Value::Array(parts));
            }
            out.push(message);
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought") == Some(&Value::Bool(true)) {
                reasoning.push_str(t);
            } else {
                parts.push(json!({"type": "text", "text": t}));
            }
        } else if let Some(d) = field(p, "inlineData", "inline_data") {
            text_only = false;
            parts.push(image_of_inline(d));
        }
    }
    if parts.is_empty() && calls.is_empty() && reasoning.is_empty() {
        return;
    }
    let content = if text_only {
        let text: Vec<&str> = parts.iter().map(|p| str_of(p, "text")).collect();
        (!text.is_empty()).then(|| Value::String(text.join("")))
    } else {
        Some(Value::Array(parts))
    };
    out.push(ChatMessage {
        role: role.to_owned(),
        content,
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls: (!calls.is_empty()).then_some(calls),
        ..ChatMessage::default()
    });
}

/// The neutral request as a Gemini body (for a Gemini upstream).
pub fn from_chat(request: &ChatRequest) -> Value {
    let mut system: Vec<String> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let push = |role: &str, part: Value, contents: &mut Vec<Value>| match contents.last_mut() {
        Some(last) if last["role"] == role => {
            if let Some(parts) = last["parts"].as_array_mut() {
                parts.push(part);
            }
        }
        _ => contents.push(json!({"role": role, "parts": [part]})),
    };
    for m in &request.messages {
        match m.role.as_str() {
            "system" | "developer" => system.push(m.content_text().unwrap_or_default()),
            "tool" => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let name = m
                    .name
                    .clone()
                    .or_else(|| names.get(&id).cloned())
                    .unwrap_or_default();
                let output = m.content_text().unwrap_or_default();
                let mut response = json!({"id": id, "name": name,
                    "response": {"output": output}});
                // A result's images (a screenshot) go inside the `functionResponse` as its
                // `parts`; one given only by address cannot be inlined and is left out.
                let images: Vec<Value> = m.images().into_iter().filter_map(inline_data).collect();
                if !images.is_empty() {
                    response["parts"] = Value::Array(images);
                }
                push("user", json!({"functionResponse": response}), &mut contents);
            }
            "assistant" => {
                if let Some(t) = m.content_text().filter(|t| !t.is_empty()) {
                    push("model", json!({"text": t}), &mut contents);
                }
                for c in m.tool_calls.iter().flatten() {
                    names.insert(c.id.clone(), c.function.name.clone());
                    let args = crate::decode_arguments(Some(&c.function.arguments))
                        .map(Value::Object)
                        .unwrap_or_else(|_| json!({}));
                    push(
                        "model",
                        json!({"functionCall": {"id": c.id, "name": c.function.name,
                            "args": args}}),
                        &mut contents,
                    );
                }
            }
            _ => match &m.content {
                Some(Value::Array(parts)) => {
                    for p in parts.iter().filter_map(part_of) {
                        push("user", p, &mut contents);
                    }
                }
                _ => push(
                    "user",
                    json!({"text": m.content_text().unwrap_or_default()}),
                    &mut contents,
                ),
            },
        }
    }
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system.join("\n\n")}]}),
        );
    }
    let declarations: Vec<Value> = request
        .tools
        .iter()
        .flatten()
        .filter(|t| t.kind == "function")
        .map(|t| {
            let mut d = Map::new();
            d.insert("name".into(), json!(t.function.name));
            if let Some(desc) = &t.function.description {
                d.insert("description".into(), json!(desc));
            }
            if let Some(p) = &t.function.parameters {
                d.insert("parametersJsonSchema".into(), p.clone());
            }
            Value::Object(d)
        })
        .collect();
    if !declarations.is_empty() {
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    if let Some(c) = &request.tool_choice {
        let config = match c {
            Value::String(s) if s == "required" => json!({"mode": "ANY"}),
            Value::String(s) if s == "none" => json!({"mode": "NONE"}),
            Value::Object(m) => json!({"mode": "ANY", "allowedFunctionNames":
                [m.get("function").and_then(|f| f.get("name")).cloned().unwrap_or(Value::Null)]}),
            _ => json!({"mode": "AUTO"}),
        };
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": config}),
        );
    }
    let mut generation = Map::new();
    for (k, v) in &request.extra {
        let name = match k.as_str() {
            "temperature" => "temperature",
            "top_p" => "topP",
            "top_k" => "topK",
            "max_tokens" | "max_completion_tokens" => "maxOutputTokens",
            "seed" => "seed",
            "stop" => {
                let stops = match v {
                    Value::String(s) => json!([s]),
                    other => other.clone(),
                };
                generation.insert("stopSequences".into(), stops);
                continue;
            }
            _ => continue,
        };
        generation.insert(name.to_owned(), v.clone());
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// Function tools as one Gemini `tools` entry, `{"functionDeclarations": [..]}`, each in the
/// classic form of [`function_declaration`].
pub fn function_declarations(tools: &[ChatTool]) -> Value {
    let declarations: Vec<Value> = tools.iter().map(function_declaration).collect();
    json!({"functionDeclarations": declarations})
}

/// A neutral function tool as a `functionDeclarations` entry in Gemini's classic form:
/// `name`, `description`, and `parameters` in Gemini's OpenAPI subset ([`schema`]), left out
/// when the schema has no properties (Gemini rejects an empty object schema).
pub fn function_declaration(t: &ChatTool) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(t.function.name));
    if let Some(desc) = &t.function.description {
        d.insert("description".into(), json!(desc));
    }
    if let Some(p) = &t.function.parameters {
        let params = schema::openapi_schema(p);
        let has_props = params
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has_props {
            d.insert("parameters".into(), params);
        }
    }
    Value::Object(d)
}

/// One `functionDeclarations` entry read flat ([`Dialect::tools_file_entry`]).
fn flat_declaration(d: &Value) -> FlatDeclaration {
    let mut flat = d
        .as_object()
        .cloned()
        .ok_or_else(|| "each tool must be a JSON object".to_owned())?;
    let schema = flat
        .remove("parametersJsonSchema")
        .or_else(|| flat.remove("parameters_json_schema"));
    match schema {
        Some(schema) => {
            flat.insert("parameters".into(), schema);
        }
        None => {
            if let Some(p) = flat.get_mut("parameters") {
                *p = lowercase_types(p, 0);
            }
        }
    }
    Ok(flat)
}

/// Deepest schema nesting whose types are lower-cased; deeper parts stay as sent.
const MAX_SCHEMA_DEPTH: usize = 64;

/// An OpenAPI schema with its `type` names lower-cased (JSON Schema's spelling).
fn lowercase_types(schema: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(m) if depth < MAX_SCHEMA_DEPTH => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("type", Value::String(t)) => Value::String(t.to_ascii_lowercase()),
                        // `properties` maps names to schemas: a property named `type` is
                        // a schema, not a type name.
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(n, p)| (n.clone(), lowercase_types(p, depth + 1)))
                                .collect(),
                        ),
                        (_, v) => lowercase_types(v, depth + 1),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) if depth < MAX_SCHEMA_DEPTH => Value::Array(
            items
                .iter()
                .map(|i| lowercase_types(i, depth + 1))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A Chat content part as a Gemini part: text, or an image given as a data URI as
/// `inlineData` (an image by address has no Gemini part without an upload).
fn part_of(part: &Value) -> Option<Value> {
    match ImagePart::of(part) {
        Some(image) => inline_data(image),
        None if str_of(part, "type") == "text" => Some(json!({"text": str_of(part, "text")})),
        None => None,
    }
}

/// An image as an `inlineData` part; `None` for an image given only by address.
fn inline_data(image: ImagePart<'_>) -> Option<Value> {
    match image {
        ImagePart::Data { media_type, data } => {
            Some(json!({"inlineData": {"mimeType": media_type, "data": data}}))
        }
        ImagePart::Url(_) => None,
    }
}

/// An `inlineData` object (`{mimeType, data}`) as a neutral image part.
fn image_of_inline(d: &Value) -> Value {
    let mime = field(d, "mimeType", "mime_type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ImagePart::part(&format!("data:{mime};base64,{}", str_of(d, "data")))
}

/// Gemini's `finishReason` for Chat's finish reason.
pub fn finish_of(chat: &str) -> &'static str {
    match chat {
        "length" => "MAX_TOKENS",
        _ => "STOP",
    }
}

/// Google's error `status` for an HTTP status.
pub fn error_status(status: u16) -> &'static str {
    match status {
        400 | 413 | 422 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        502 | 503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("promptTokenCount"),
        output_tokens: n("candidatesTokenCount"),
    }
}

fn usage_value(u: Option<&Usage>) -> Value {
    let u = u.copied().unwrap_or_default();
    json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens,
        "totalTokenCount": u.input_tokens + u.output_tokens})
}

/// One chunk or whole reply of `parts`.
fn response(parts: Vec<Value>, finish: Option<&str>, meta: &ReplyMeta) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut r = json!({"candidates": [candidate], "modelVersion": meta.model,
        "responseId": meta.id});
    if finish.is_some() {
        r["usageMetadata"] = usage_value(meta.usage.as_ref());
    }
    r
}

/// Reads one reply (or chunk) into deltas; `calls` counts the calls read so far.
fn reply_deltas(
    v: &Value,
    calls: &mut u32,
    limits: &Limits,
    out: &mut Vec<Delta>,
) -> Result<(), WireError> {
    if let Some(e) = v.get("error") {
        return Err(WireError::Upstream(excerpt(&e.to_string(), 500)));
    }
    if let Some(u) = v.get("usageMetadata") {
        out.push(Delta::Usage(usage_of(u)));
    }
    let Some(candidate) = v
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Ok(());
    };
    for p in candidate.get("content").map(parts_of).unwrap_or_default() {
        if let Some(call) = p.get("functionCall") {
            if *calls as usize >= limits.max_calls {
                return Err(WireError::TooManyCalls(limits.max_calls));
            }
            let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
            out.push(Delta::Call(ToolCallDelta {
                index: *calls,
                id: Some(str_of(call, "id").to_owned()),
                kind: Some("function".into()),
                function: Some(FunctionDelta {
                    name: Some(str_of(call, "name").to_owned()),
                    arguments: Some(args.to_string()),
                }),
            }));
            *calls += 1;
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought") == Some(&Value::Bool(true)) {
                out.push(Delta::Reasoning(t.to_owned()));
            } else {
                out.push(Delta::Text(t.to_owned()));
            }
        }
    }
    if let Some(f) = candidate.get("finishReason").and_then(Value::as_str) {
        let finish = match f {
            "MAX_TOKENS" => "length",
            _ if *calls > 0 => "tool_calls",
            _ => "stop",
        };
        out.push(Delta::Finish(finish.into()));
    }
    Ok(())
}

/// Gemini output: a reply (`candidates`), a content (`parts`, read when it holds a call or
/// is the model's), or one `functionCall` part: its text (thought parts left out) and calls.
pub fn read_fragment(v: &Value) -> Option<Fragment> {
    let m = v.as_object()?;
    let mut out = Fragment::default();
    if let Some(candidates) = m.get("candidates").and_then(Value::as_array) {
        for c in candidates {
            if let Some(parts) = c.pointer("/content/parts").and_then(Value::as_array) {
                parts_fragment(parts, &mut out);
            }
        }
        return Some(out);
    }
    if let Some(parts) = m.get("parts").and_then(Value::as_array) {
        let model = m.get("role").and_then(Value::as_str) == Some("model");
        return (parts_fragment(parts, &mut out) || model).then_some(out);
    }
    if m.contains_key("functionCall") && m.len() <= 2 {
        return parts_fragment(std::slice::from_ref(v), &mut out).then_some(out);
    }
    None
}

/// `parts` into `out`; whether one held a call.
fn parts_fragment(parts: &[Value], out: &mut Fragment) -> bool {
    let mut any = false;
    for p in parts {
        if let Some(fc) = p.get("functionCall").and_then(Value::as_object) {
            if let Some(name) = fc.get("name").and_then(Value::as_str) {
                let id = fc.get("id").and_then(Value::as_str);
                out.calls.push(WireCall::new(id, name, fc.get("args")));
                any = true;
            }
        } else if let Some(t) = p.get("text").and_then(Value::as_str)
            && p.get("thought").and_then(Value::as_bool) != Some(true)
        {
            out.text.push_str(t);
        }
    }
    any
}

impl Dialect for Gemini {
    fn read_fragment(&self, value: &Value) -> Option<Fragment> {
        read_fragment(value)
    }

    fn name(&self) -> &'static str {
        "gemini"
    }

    fn path(&self, model: &str, stream: bool) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("/models/{model}:generateContent")
        }
    }

    fn auth_headers(&self, key: &str) -> Vec<(&'static str, String)> {
        vec![("x-goog-api-key", key.to_owned())]
    }

    fn decode_request(&self, body: &[u8]) -> Result<Decoded, WireError> {
        let v: Value = crate::from_json_bytes(body)
            .map_err(|e| not_json("the request", &String::from_utf8_lossy(body), &e))?;
        to_chat(&v)
    }

    fn encode_request(&self, request: &ChatRequest) -> Result<Value, WireError> {
        Ok(from_chat(request))
    }

    fn decode_reply(&self, body: &str, limits: &Limits) -> Result<(Reply, ReplyMeta), WireError> {
        let v: Value = serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))?;
        let mut deltas = Vec::new();
        let mut calls = 0;
        reply_deltas(&v, &mut calls, limits, &mut deltas)?;
        if v.get("candidates").is_none() {
            return Err(WireError::Missing("candidates"));
        }
        let mut acc = crate::dialect::Accumulator::new(*limits);
        for d in &deltas {
            acc.push(d)?;
        }
        acc.push(&Delta::Done)?;
        let (reply, usage) = acc.finish()?;
        let meta = ReplyMeta {
            id: str_of(&v, "responseId").to_owned(),
            model: str_of(&v, "modelVersion").to_owned(),
            usage,
            ..ReplyMeta::default()
        };
        Ok((reply, meta))
    }

    fn encode_reply(&self, reply: &Reply, meta: &ReplyMeta) -> Value {
        let mut parts = Vec::new();
        if let Some(r) = reply.reasoning.as_ref().filter(|r| !r.is_empty()) {
            parts.push(json!({"text": r, "thought": true}));
        }
        if let Some(t) = reply
            .text
            .as_ref()
            .filter(|t| !t.trim().is_empty() || reply.calls.is_empty())
        {
            parts.push(json!({"text": t}));
        }
        for c in &reply.calls {
            parts.push(call_part(c));
        }
        let finish = crate::dialect::chat_finish(reply);
        response(parts, Some(finish_of(&finish)), meta)
    }

    fn stream_decoder(&self, limits: Limits) -> Box<dyn StreamDecoder> {
        Box::new(GeminiDecoder { limits, calls: 0 })
    }

    fn stream_encoder(&self, meta: ReplyMeta) -> Box<dyn StreamEncoder> {
        Box::new(GeminiChunks {
            meta,
            open: std::collections::HashMap::new(),
        })
    }

    fn declare_tools(&self, tools: &[ChatTool]) -> Value {
        function_declarations(tools)
    }
    fn encode_error(&self, e: &ErrorInfo<'_>) -> Value {
        json!({"error": {"code": e.status, "message": e.message, "status": error_status(e.status)}})
    }

    fn result_images(&self) -> bool {
        true
    }

    /// `{"functionDeclarations": [..]}` (or `function_declarations`): each declaration,
    /// its schema `parametersJsonSchema` as it is or `parameters` (OpenAPI) with its type
    /// names lower-cased.
    fn tools_file_entry(&self, entry: &Map<String, Value>) -> Option<Vec<FlatDeclaration>> {
        let list = entry
            .get("functionDeclarations")
            .or_else(|| entry.get("function_declarations"))?
            .as_array()?;
        Some(list.iter().map(flat_declaration).collect())
    }
}

fn call_part(c: &WireCall) -> Value {
    json!({"functionCall": {"id": c.id.clone().unwrap_or_default(), "name": c.name,
        "args": arguments_object(c)}})
}

struct GeminiDecoder {
    limits: Limits,
    calls: u32,
}

impl StreamDecoder for GeminiDecoder {
    fn push(&mut self, _event: &str, data: &str, out: &mut Vec<Delta>) -> Result<(), WireError> {
        if data.trim() == crate::chat::DONE {
            out.push(Delta::Done);
            return Ok(());
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| not_json("a stream chunk", data, &e))?;
        reply_deltas(&v, &mut self.calls, &self.limits, out)
    }
}

/// Writes a streamed turn as Gemini chunks.
struct GeminiChunks {
    meta: ReplyMeta,
    /// Announced calls waiting for their arguments: index → (id, name).
    open: std::collections::HashMap<usize, (String, String)>,
}

impl StreamEncoder for GeminiChunks {
    fn push(&mut self, outs: Vec<Out>, events: &mut Vec<SseEvent>) {
        for o in outs {
            let part = match o {
                Out::Text(t) if t.is_empty() => continue,
                Out::Text(t) => json!({"text": t}),
                Out::Reasoning(r) if r.is_empty() => continue,
                Out::Reasoning(r) => json!({"text": r, "thought": true}),
                Out::CallStart { index, id, name } => {
                    self.open.insert(index, (id, name));
                    continue;
                }
                Out::CallEnd { index, arguments } => {
                    let Some((id, name)) = self.open.remove(&index) else {
                        continue;
                    };
                    let call = WireCall::new(Some(&id), &name, Some(&Value::String(arguments)));
                    call_part(&call)
                }
            };
            events.push(SseEvent::data(
                response(vec![part], None, &self.meta).to_string(),
            ));
        }
    }

    fn end(&mut self, end: End, events: &mut Vec<SseEvent>) {
        let body = match end {
            End::Finished(finish) => response(Vec::new(), Some(finish_of(&finish)), &self.meta),
            End::Failed(message) => Gemini.encode_error(&ErrorInfo {
                status: 502,
                kind: "upstream_error",
                code: None,
                message: &message,
            }),
        };
        events.push(SseEvent::data(body.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_reach_a_gemini_upstream_as_inline_data() {
        let request = ChatRequest {
            messages: vec![ChatMessage::text_and_images(
                "user",
                "look",
                ["data:image/png;base64,QUJD".to_owned()],
            )],
            ..ChatRequest::default()
        };
        let body = from_chat(&request);
        assert_eq!(
            body["contents"][0]["parts"],
            json!([{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": "QUJD"}}])
        );
    }

    // Gemini CLI's shape (CLIENTS.md): systemInstruction with role "user", schemas under
    // parametersJsonSchema, client-minted ids with thoughtSignature siblings, results as
    // {output}; google-genai's snake_case schema key; the AI SDK's {name, content} results.
    #[test]
    fn client_requests_decode_with_ids_paired() {
        let d = Gemini
            .decode_request(
                json!({
                "systemInstruction": {"role": "user", "parts": [{"text": "be brief"}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "weather in Rome and Oslo?"}]},
                    {"role": "model", "parts": [
                        {"text": "hm", "thought": true},
                        {"functionCall": {"id": "get_weather_1700_0", "name": "get_weather",
                            "args": {"city": "Rome"}}, "thoughtSignature": "skip_thought_signature_validator"},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"id": "get_weather_1700_0", "name": "get_weather",
                            "response": {"output": "sunny"}}},
                        {"functionResponse": {"name": "get_weather",
                            "response": {"name": "get_weather", "content": {"sky": "grey"}}}}]}
                ],
                "tools": [{"functionDeclarations": [
                    {"name": "get_weather", "parametersJsonSchema": {"type": "object"}},
                    {"name": "get_time", "parameters_json_schema": {"type": "object", "properties": {}}},
                    {"name": "get_news", "parameters": {"type": "OBJECT"}}]},
                    {"googleSearch": {}}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY",
                    "allowedFunctionNames": ["get_weather"]}},
                "generationConfig": {"temperature": 0.1, "maxOutputTokens": 100,
                    "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8000},
                    "responseMimeType": "text/plain"},
                "safetySettings": []
            })
                .to_string()
                .as_bytes(),
            )
            .unwrap();
        let r = d.request;
        let roles: Vec<&str> = r.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
        // Gemini's OpenAPI types in capitals are JSON Schema's lower-case ones.
        let news = &r.tools.as_ref().unwrap()[2].function;
        assert_eq!(news.parameters, Some(json!({"type": "object"})));
        let calls = r.messages[2].tool_calls.as_ref().unwrap();
        assert_eq!(calls[0].id, "get_weather_1700_0");
        assert_eq!(calls[1].id, "get_weather_1");
        assert_eq!(r.messages[2].reasoning_content.as_deref(), Some("hm"));
        assert_eq!(
            r.messages[3].tool_call_id.as_deref(),
            Some("get_weather_1700_0")
        );
        assert_eq!(r.messages[3].content_text().unwrap(), "sunny");
        assert_eq!(r.messages[4].tool_call_id.as_deref(), Some("get_weather_1"));
        assert_eq!(r.messages[4].content_text().unwrap(), "{\"sky\":\"grey\"}");
        let tools = r.tools.unwrap();
        assert_eq!(tools.len(), 4);
        assert_eq!(
            tools[1].function.parameters,
            Some(json!({"type": "object", "properties": {}}))
        );
        assert_eq!(tools[3].kind, "googleSearch");
        assert_eq!(
            r.tool_choice,
            Some(json!({"type": "function", "function": {"name": "get_weather"}}))
        );
        assert_eq!(r.extra["max_tokens"], 100);
        assert_eq!(r.extra["reasoning_effort"], "medium");
        let mut ignored = d.ignored;
        ignored.sort();
        assert_eq!(
            ignored,
            ["generationConfig.responseMimeType", "safetySettings"]
        );
        for (mode, want) in [
            ("AUTO", json!("auto")),
            ("NONE", json!("none")),
            ("ANY", json!("required")),
        ] {
            let d = to_chat(&json!({"contents": [],
                "toolConfig": {"functionCallingConfig": {"mode": mode}}}))
            .unwrap();
            assert_eq!(d.request.tool_choice, Some(want));
        }
    }

    #[test]
    fn replies_round_trip_and_streams_carry_whole_calls() {
        let reply = Reply {
            text: Some("Looking.".into()),
            reasoning: Some("think".into()),
            calls: vec![WireCall::new(
                Some("c1"),
                "get_weather",
                Some(&json!({"city": "Oslo"})),
            )],
            finish_reason: Some("tool_calls".into()),
        };
        let meta = ReplyMeta {
            id: "r1".into(),
            model: "m".into(),
            ..ReplyMeta::default()
        };
        let body = Gemini.encode_reply(&reply, &meta);
        assert_eq!(body["candidates"][0]["finishReason"], "STOP");
        assert_eq!(
            body["candidates"][0]["content"]["parts"][0]["thought"],
            true
        );
        let (back, _) = Gemini
            .decode_reply(&body.to_string(), &Limits::default())
            .unwrap();
        assert_eq!(back, reply);
        let mut w = Gemini.stream_encoder(meta);
        let mut events = Vec::new();
        w.push(
            vec![
                Out::Text("a".into()),
                Out::CallStart {
                    index: 0,
                    id: "c1".into(),
                    name: "f".into(),
                },
                Out::CallEnd {
                    index: 0,
                    arguments: "{\"x\":1}".into(),
                },
            ],
            &mut events,
        );
        w.end(End::Finished("length".into()), &mut events);
        assert_eq!(events.len(), 3);
        let call: Value = serde_json::from_str(&events[1].data).unwrap();
        assert_eq!(
            call["candidates"][0]["content"]["parts"][0]["functionCall"],
            json!({"id": "c1", "name": "f", "args": {"x": 1}})
        );
        let last: Value = serde_json::from_str(&events[2].data).unwrap();
        assert_eq!(last["candidates"][0]["finishReason"], "MAX_TOKENS");
        // Read back: the calls and the finish.
        let mut dec = Gemini.stream_decoder(Limits::default());
        let mut acc = crate::dialect::Accumulator::new(Limits::default());
        for e in &events {
            let mut ds = Vec::new();
            dec.push("", &e.data, &mut ds).unwrap();
            ds.iter().for_each(|d| acc.push(d).unwrap());
        }
        let (r, _) = acc.finish().unwrap();
        assert_eq!(r.calls[0].arguments_value(), json!({"x": 1}));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn a_neutral_request_encodes_for_a_gemini_upstream() {
        let chat: ChatRequest = serde_json::from_value(json!({"model": "m", "max_tokens": 9,
            "tool_choice": "required", "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}))
        .unwrap();
        let v = Gemini.encode_request(&chat).unwrap();
        assert_eq!(v["systemInstruction"]["parts"][0]["text"], "sys");
        assert_eq!(
            v["contents"][1]["parts"][0]["functionCall"]["args"],
            json!({"a": 1})
        );
        assert_eq!(
            v["contents"][2]["parts"][0]["functionResponse"]["name"],
            "f"
        );
        assert_eq!(v["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
        assert_eq!(v["generationConfig"]["maxOutputTokens"], 9);
        let back = to_chat(&v).unwrap().request;
        assert_eq!(back.messages[3].tool_call_id.as_deref(), Some("c1"));
        let err = Gemini.encode_error(&ErrorInfo {
            status: 401,
            kind: "x",
            code: None,
            message: "no",
        });
        assert_eq!(err["error"]["status"], "UNAUTHENTICATED");
    }
}
