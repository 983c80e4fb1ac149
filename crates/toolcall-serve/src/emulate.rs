//! Tools for models without native tool calling (`--emulate-tools`, or `emulate_tools` per
//! model): the request's tools go into the system prompt as the family's own text-format
//! instructions, `tools`/`tool_choice`/`parallel_tool_calls` are taken out of the upstream
//! request, earlier calls are written back in the family's syntax, and each run of tool
//! results (`role: "tool"`) becomes one user message written as that family's models read
//! results (Hermes `<tool_response>` blocks unless the family's template says otherwise),
//! the results' images (a screenshot) after the text as that message's image parts.
//! The reply is then read with that family alone.
//!
//! Every emulated call begins with a per-request random [`Trigger`] (as toolify does): the
//! prompt's example and rules put it right before the call markup, the reply is read
//! through a [`TriggerGate`] (markup without the trigger right before it stays text, so
//! prose quoting the syntax, or a tool result echoing it, is never taken for a call), and a
//! `constrain` route's grammar starts its calls with the same trigger. The token comes from
//! a CSPRNG (`rand::rng()`, ChaCha seeded by the OS), not from the conversation, so neither
//! a user nor a document in the context can write a call the gateway runs.

use std::collections::HashMap;

use std::ops::Range;

use rand::RngExt;
use serde_json::Value;
use toolcall_core::{Parsed, Registry, StreamEvent};
use toolcall_parse::{
    FormatId, ParseOptions, StreamParser, ToolResultText, example_call, render_prompt_with_trigger,
    write_tool_results,
};
use toolcall_wire::chat::{ChatMessage, ChatRequest, ImagePart};
use toolcall_wire::decode_arguments;

use crate::ApiError;

/// The family used when the configured format is not one text family.
pub const DEFAULT_FORMAT: &str = "hermes";

/// The text family to emulate with: the configured one when it names a text format, else
/// Hermes (`None` only if no text format is registered).
pub fn format_for(configured: Option<&str>) -> Option<FormatId> {
    configured
        .and_then(FormatId::from_name)
        .filter(|f| toolcall_parse::text_formats().contains(f))
        .or_else(|| FormatId::from_name(DEFAULT_FORMAT))
        .or_else(|| toolcall_parse::text_formats().first().copied())
}

/// The marker every emulated call of one request begins with: `<call_` + 16 random
/// lowercase letters and digits (82 bits) + `/>`, fresh for each request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger(String);

impl Trigger {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    const RANDOM_CHARS: usize = 16;

    /// A fresh trigger from the thread's CSPRNG.
    pub fn random() -> Trigger {
        let mut rng = rand::rng();
        let mut t = String::with_capacity(Self::RANDOM_CHARS + 8);
        t.push_str("<call_");
        for _ in 0..Self::RANDOM_CHARS {
            t.push(Self::ALPHABET[rng.random_range(0..Self::ALPHABET.len())] as char);
        }
        t.push_str("/>");
        Trigger(t)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `request` rewritten for an upstream that is told about tools only in its prompt; every
/// call, earlier ones written back included, begins with `trigger`.
pub fn rewrite(
    request: &ChatRequest,
    registry: &Registry,
    format: FormatId,
    trigger: &Trigger,
) -> Result<ChatRequest, ApiError> {
    let prompt = render_prompt_with_trigger(registry, format, Some(trigger.as_str()))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut out = request.clone();
    out.tools = None;
    out.tool_choice = None;
    out.parallel_tool_calls = None;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let mut rest = request.messages.iter().peekable();
    match rest.peek() {
        Some(first) if first.role == "system" || first.role == "developer" => {
            let own = first.content_text().unwrap_or_default();
            messages.push(ChatMessage::text("system", format!("{own}\n\n{prompt}")));
            rest.next();
        }
        _ => messages.push(ChatMessage::text("system", prompt)),
    }
    // A run of tool results becomes one user message, written as the family's models read
    // results; each result's name comes from the call it answers.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut results: Vec<(String, String, String)> = Vec::new();
    let mut images: Vec<String> = Vec::new();
    for m in rest {
        if m.role == "tool" {
            let call_id = m.tool_call_id.clone().unwrap_or_default();
            let name = m
                .name
                .clone()
                .or_else(|| names.get(&call_id).cloned())
                .unwrap_or_default();
            let content = match &m.content {
                Some(Value::String(s)) => s.clone(),
                _ => m.content_text().unwrap_or_default(),
            };
            results.push((call_id, name, content));
            if let Some(Value::Array(parts)) = &m.content {
                images.extend(parts.iter().filter_map(ImagePart::of).map(|i| match i {
                    ImagePart::Data { media_type, data } => {
                        format!("data:{media_type};base64,{data}")
                    }
                    ImagePart::Url(url) => url.to_owned(),
                }));
            }
            continue;
        }
        flush_results(format, &mut results, &mut images, &mut messages);
        messages.push(match m.role.as_str() {
            "assistant" if m.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) => {
                let mut text = m.content_text().unwrap_or_default();
                for c in m.tool_calls.iter().flatten() {
                    names.insert(c.id.clone(), c.function.name.clone());
                    let args = decode_arguments(Some(&c.function.arguments)).unwrap_or_default();
                    if let Some(call) = example_call(format, &c.function.name, &args) {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(trigger.as_str());
                        text.push_str(&call);
                    }
                }
                ChatMessage::text("assistant", text)
            }
            _ => m.clone(),
        });
    }
    flush_results(format, &mut results, &mut images, &mut messages);
    out.messages = messages;
    Ok(out)
}

/// Writes the pending tool results `(call id, name, content)` as one user message, their
/// `images` (their URLs) after the text.
fn flush_results(
    format: FormatId,
    results: &mut Vec<(String, String, String)>,
    images: &mut Vec<String>,
    messages: &mut Vec<ChatMessage>,
) {
    if results.is_empty() {
        return;
    }
    let texts: Vec<ToolResultText<'_>> = results
        .iter()
        .map(|(call_id, name, content)| ToolResultText {
            call_id,
            name,
            content,
        })
        .collect();
    let text = write_tool_results(format, &texts);
    messages.push(if images.is_empty() {
        ChatMessage::text("user", text)
    } else {
        ChatMessage::text_and_images("user", &text, images.drain(..))
    });
    results.clear();
}

/// Reads an emulated reply's text so that only markup right after the trigger is a call.
///
/// Sits between the reply text and the family's [`StreamParser`]: [`TriggerGate::push`]
/// takes the trigger out of the text the parser reads (holding back a tail that may be the
/// start of one) and remembers where each was; [`TriggerGate::filter`] then keeps a
/// finished call only when blanks alone separate its markup from a trigger (or from a
/// kept call's markup just before it: one run of calls), and gives the markup of any
/// other call back as the text it was. Calls are therefore sent once complete, never
/// announced by name first. Memory: the text read so far (the turn bounds the reply).
#[derive(Debug)]
pub struct TriggerGate {
    trigger: String,
    /// The end of the text so far that may be the start of a trigger.
    held: String,
    /// Everything given to the parser (the coordinates of the calls' spans).
    read: String,
    /// Where in `read` each trigger was taken out, in order.
    at: Vec<usize>,
    /// The last kept call's markup.
    kept: Option<Range<usize>>,
    /// The last markup given back as text (a section's calls share one span).
    refused: Option<Range<usize>>,
}

impl TriggerGate {
    pub fn new(trigger: &Trigger) -> TriggerGate {
        TriggerGate {
            trigger: trigger.0.clone(),
            held: String::new(),
            read: String::new(),
            at: Vec::new(),
            kept: None,
            refused: None,
        }
    }

    /// The part of `text` (after what was held back) the parser may read now, triggers
    /// taken out.
    pub fn push(&mut self, text: &str) -> String {
        let mut pending = std::mem::take(&mut self.held);
        pending.push_str(text);
        let mut out = String::with_capacity(pending.len());
        let mut rest = pending.as_str();
        while let Some(i) = rest.find(self.trigger.as_str()) {
            out.push_str(&rest[..i]);
            self.at.push(self.read.len() + out.len());
            rest = &rest[i + self.trigger.len()..];
        }
        // Hold back the longest end of `rest` that starts a trigger (ASCII: on a boundary).
        let keep = (1..self.trigger.len().min(rest.len() + 1))
            .rev()
            .find(|&n| {
                rest.as_bytes()
                    .get(rest.len() - n..)
                    .is_some_and(|end| self.trigger.as_bytes().starts_with(end))
            })
            .unwrap_or(0);
        let (now, later) = rest.split_at(rest.len() - keep);
        out.push_str(now);
        self.held = later.to_owned();
        self.read.push_str(&out);
        out
    }

    /// What was held back, at the end of the reply.
    pub fn finish(&mut self) -> String {
        let out = std::mem::take(&mut self.held);
        self.read.push_str(&out);
        out
    }

    /// The parser's events for what [`TriggerGate::push`] gave it, with untriggered calls
    /// turned back into text and call announcements left out.
    pub fn filter(&mut self, events: Vec<StreamEvent>) -> Vec<StreamEvent> {
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            match e {
                StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
                StreamEvent::CallFinished { index, call } => {
                    let span = call.origin.span.clone();
                    if self.triggered(&span) {
                        self.kept = Some(span);
                        out.push(StreamEvent::CallFinished { index, call });
                    } else if self.refused.as_ref() != Some(&span) {
                        if let Some(text) = self.read.get(span.clone()) {
                            out.push(StreamEvent::Text {
                                text: text.to_owned(),
                            });
                        }
                        self.refused = Some(span);
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    fn triggered(&self, span: &Range<usize>) -> bool {
        let blank_to = |from: usize| {
            from <= span.start
                && self
                    .read
                    .get(from..span.start)
                    .is_some_and(|s| s.trim().is_empty())
        };
        if let Some(kept) = &self.kept
            && (kept == span || blank_to(kept.end))
        {
            return true;
        }
        let before = self.at.partition_point(|&t| t <= span.start);
        before > 0 && self.at.get(before - 1).is_some_and(|&t| blank_to(t))
    }
}

/// A whole emulated reply read through a [`TriggerGate`] (what `toolcall_parse::parse`
/// gives for a reply without one).
pub fn parse_triggered(text: &str, options: &ParseOptions, trigger: &Trigger) -> Parsed {
    let mut gate = TriggerGate::new(trigger);
    let mut parser = StreamParser::new(options.clone());
    let mut events = parser.push(&gate.push(text));
    events.extend(parser.push(&gate.finish()));
    let mut events = gate.filter(events);
    events.extend(gate.filter(parser.finish()));
    let mut parsed = Parsed::default();
    for e in events {
        match e {
            StreamEvent::Text { text } => parsed.text.push_str(&text),
            StreamEvent::Reasoning { text } => match parsed.reasoning.last_mut() {
                Some(r) => r.push_str(&text),
                None => parsed.reasoning.push(text),
            },
            StreamEvent::CallFinished { call, .. } => parsed.calls.push(call),
            StreamEvent::Diagnostic { diagnostic } => parsed.diagnostics.push(diagnostic),
            StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
        }
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::ToolSpec;

    fn request() -> ChatRequest {
        serde_json::from_value(json!({"model": "m", "messages": [
            {"role": "user", "content": "weather in Rome and the time?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "get_time", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"sunny\"}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "user", "content": "thanks"}
        ]}))
        .unwrap()
    }

    fn registry() -> Registry {
        let mut r = Registry::new();
        for name in ["get_weather", "get_time"] {
            r.add_spec(ToolSpec::new(
                name,
                "",
                json!({"type": "object", "properties": {}}),
            ))
            .unwrap();
        }
        r
    }

    fn gated(format: &str, reply: &str, trigger: &Trigger, piece: usize) -> Parsed {
        let options = ParseOptions {
            format: toolcall_parse::FormatSelection::Only(format.into()),
            tools: Some(std::sync::Arc::new(registry())),
            ..ParseOptions::default()
        };
        // Pushed in pieces of `piece` bytes (on char boundaries), as a stream arrives.
        let mut gate = TriggerGate::new(trigger);
        let mut parser = StreamParser::new(options);
        let mut events = Vec::new();
        let mut rest = reply;
        while !rest.is_empty() {
            let mut n = piece.min(rest.len());
            while !rest.is_char_boundary(n) {
                n += 1;
            }
            let fed = gate.push(&rest[..n]);
            events.extend(gate.filter(parser.push(&fed)));
            rest = &rest[n..];
        }
        let fed = gate.finish();
        events.extend(gate.filter(parser.push(&fed)));
        events.extend(gate.filter(parser.finish()));
        let mut out = Parsed::default();
        for e in events {
            match e {
                StreamEvent::Text { text } => out.text.push_str(&text),
                StreamEvent::CallFinished { call, .. } => out.calls.push(call),
                _ => {}
            }
        }
        let whole = parse_triggered(
            reply,
            &ParseOptions {
                format: toolcall_parse::FormatSelection::Only(format.into()),
                tools: Some(std::sync::Arc::new(registry())),
                ..ParseOptions::default()
            },
            trigger,
        );
        assert_eq!(whole.text, out.text, "{format} in {piece}-byte pieces");
        assert_eq!(
            whole.calls.len(),
            out.calls.len(),
            "{format} in {piece}-byte pieces"
        );
        out
    }

    // Only markup right after the trigger is a call, however the reply is cut into pieces;
    // quoted markup comes back as the text it was; the trigger never shows.
    #[test]
    fn the_gate_keeps_only_triggered_calls() {
        let t = Trigger::random();
        let t = t.as_str();
        let hermes = "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
        let kimi = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
        for piece in [1, 3, 7, 4096] {
            let trigger = Trigger(t.to_owned());
            let p = gated(
                "hermes",
                &format!("See {hermes}. Now {t}\n{hermes}{hermes}<{t}"),
                &trigger,
                piece,
            );
            assert_eq!(p.calls.len(), 2, "a run of calls after one trigger");
            assert_eq!(p.text, format!("See {hermes}. Now \n<"), "{piece}");
            let p = gated(
                "kimi_k2",
                &format!("quoted {kimi} then {t}{kimi}"),
                &trigger,
                piece,
            );
            let names: Vec<&str> = p.calls.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["get_time", "get_weather"], "{piece}");
            assert_eq!(p.text, format!("quoted {kimi} then "), "{piece}");
            // A trigger followed by prose arms nothing further on.
            let p = gated("hermes", &format!("{t} so: {hermes}"), &trigger, piece);
            assert!(p.calls.is_empty(), "{piece}");
        }
    }

    #[test]
    fn triggers_are_random_tokens() {
        let a = Trigger::random();
        let b = Trigger::random();
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("<call_") && a.as_str().ends_with("/>"));
        assert_eq!(a.as_str().len(), 6 + Trigger::RANDOM_CHARS + 2);
    }

    // Issue #11: a run of tool results is one user message in the family's own result
    // syntax, each result named after the call it answers.
    #[test]
    fn tool_results_are_written_in_the_family_format() {
        for (format, want) in [
            (
                "hermes",
                "<tool_response call_id=\"call_1\" name=\"get_weather\">\n{\"sky\":\"sunny\"}\n</tool_response>\n\
                 <tool_response call_id=\"call_2\" name=\"get_time\">\nnoon\n</tool_response>\n",
            ),
            (
                "mistral",
                "[TOOL_RESULTS]{\"call_id\":\"call_1\",\"content\":{\"sky\":\"sunny\"}}[/TOOL_RESULTS]\
                 [TOOL_RESULTS]{\"call_id\":\"call_2\",\"content\":\"noon\"}[/TOOL_RESULTS]",
            ),
            (
                "kimi_k2",
                "## Return of call_1\n{\"sky\":\"sunny\"}\n## Return of call_2\nnoon\n",
            ),
        ] {
            let f = FormatId::from_name(format).unwrap();
            let out = rewrite(&request(), &registry(), f, &Trigger::random()).unwrap();
            let roles: Vec<&str> = out.messages.iter().map(|m| m.role.as_str()).collect();
            assert_eq!(
                roles,
                ["system", "user", "assistant", "user", "user"],
                "{format}"
            );
            assert_eq!(out.messages[3].content_text().unwrap(), want, "{format}");
        }
    }

    // A screenshot in a tool result reaches an emulated upstream with the results' message,
    // as an image part after their text (it was dropped: only the text was kept).
    #[test]
    fn a_results_images_follow_the_results_text() {
        let mut r = request();
        let uri = "data:image/png;base64,iVBORw0KGgo=";
        r.messages[2].content = Some(json!([{"type": "text", "text": "{\"sky\":\"sunny\"}"},
            {"type": "image_url", "image_url": {"url": uri}}]));
        let f = FormatId::from_name("hermes").unwrap();
        let out = rewrite(&r, &registry(), f, &Trigger::random()).unwrap();
        let results = &out.messages[3];
        assert_eq!(results.role, "user");
        assert!(results.content_text().unwrap().contains("sunny"));
        let images = results.images();
        assert_eq!(
            images,
            [ImagePart::Data {
                media_type: "image/png",
                data: "iVBORw0KGgo="
            }]
        );
        assert!(out.messages[4].images().is_empty());
    }
}
