//! xgrammar structural tags (`{"type": "structural_tag", "format": …}`), as vLLM and SGLang
//! read them in `response_format`.
//!
//! A call is a `tag`: `begin` is the markup up to the tool's name (a fixed string, so the
//! layout is the declaration's canonical one), `content` what comes after it (JSON
//! arguments as a `json_schema` format; the tag families' text values as a `grammar`
//! format, xgrammar's GBNF-style EBNF), `end` the closing markup. `triggered_tags` lets
//! prose run until the opener (`at_least_one` for a forced call, `stop_after_first` for
//! one call); a section family wraps `tags_with_separator` in the section's own tag.
//! Reasoning is left to the engine's reasoning parser (vLLM and SGLang apply the
//! constraint after it).

use serde_json::{Value, json};
use toolcall_core::ToolSpec;
use toolcall_parse::shape::{Args, Piece, Shape};

use crate::grammar::Grammar;
use crate::{Options, Tool, ToolChoice, json_string, text_params};

pub(crate) fn build(shape: &Shape, tools: &[Tool], options: &Options, opener: &str) -> Value {
    let trigger = options.trigger.as_deref().unwrap_or("");
    let format = if options.choice == ToolChoice::None {
        json!({"type": "any_text", "excludes": [opener]})
    } else {
        let forced = options.choice != ToolChoice::Auto;
        let calls: Vec<Value> = tools.iter().map(|t| call_tag(shape.call, t)).collect();
        let (tags, trigger_lit) = match shape.section {
            Some((open, close)) => {
                let inner = json!({
                    "type": "tags_with_separator",
                    "tags": calls,
                    "separator": canonical(shape.separator, ""),
                    "at_least_one": true,
                    "stop_after_first": !options.parallel,
                });
                let section = json!({
                    "type": "tag",
                    "begin": format!("{trigger}{}", canonical(open, "")),
                    "content": inner,
                    "end": canonical(close, ""),
                });
                (vec![section], opener.to_owned())
            }
            None => {
                let tags = calls
                    .into_iter()
                    .map(|mut tag| {
                        if let Some(Value::String(begin)) = tag.get_mut("begin") {
                            begin.insert_str(0, trigger);
                        }
                        tag
                    })
                    .collect();
                (tags, opener.to_owned())
            }
        };
        if shape.prose {
            json!({
                "type": "triggered_tags",
                "triggers": [trigger_lit],
                "tags": tags,
                "at_least_one": forced,
                "stop_after_first": !options.parallel,
            })
        } else {
            json!({"type": "or", "elements": tags})
        }
    };
    json!({"type": "structural_tag", "format": format})
}

/// The canonical text of pieces that are all literal (a name given for `Name` pieces).
fn canonical(pieces: &[Piece], name: &str) -> String {
    let mut out = String::new();
    for p in pieces {
        match p {
            Piece::Lit(s) | Piece::Ws(s) => out.push_str(s),
            Piece::Name => out.push_str(name),
            Piece::NameString => out.push_str(&json_string(name)),
            Piece::Index => out.push('0'),
            Piece::Either(first, _) => out.push_str(&canonical(first, name)),
            Piece::JsonCall { .. } | Piece::Args(_) | Piece::CallId | Piece::Optional(_) => {}
        }
    }
    out
}

/// The canonical layout: optional pieces left out, the first of two layouts.
fn canonical_pieces(pieces: &[Piece], out: &mut Vec<Piece>) {
    for p in pieces {
        match p {
            Piece::Optional(_) => {}
            Piece::Either(first, _) => canonical_pieces(first, out),
            other => out.push(*other),
        }
    }
}

/// The arguments as a `json_schema` format, or, for a custom tool with an input grammar,
/// as a `grammar` format holding it.
fn json_args(tool: &Tool) -> Value {
    if tool.input.is_some() {
        let mut g = Grammar::new();
        let root = crate::args_node(&mut g, Args::Json, Some(*tool));
        g.set_root(root);
        return json!({"type": "grammar", "grammar": g.to_gbnf()});
    }
    json!({"type": "json_schema", "json_schema": tool.spec.parameters})
}

/// One call as a `tag`.
fn call_tag(call: &[Piece], tool: &Tool) -> Value {
    let spec: &ToolSpec = tool.spec;
    let name = spec.name.as_str();
    let mut flat = Vec::with_capacity(call.len());
    canonical_pieces(call, &mut flat);
    let call = flat.as_slice();
    // begin: the literal pieces before the first structured one; end: the literal pieces
    // after the last; content: everything between, as a sequence.
    let is_literal = |p: &Piece| {
        matches!(
            p,
            Piece::Lit(_) | Piece::Ws(_) | Piece::Name | Piece::NameString
        )
    };
    let first = call
        .iter()
        .position(|p| !is_literal(p))
        .unwrap_or(call.len());
    let last = call
        .iter()
        .rposition(|p| !is_literal(p))
        .map_or(first, |i| i + 1);
    let mut begin = canonical(&call[..first], name);
    let mut end = canonical(&call[last..], name);
    let mut elements = Vec::new();
    for p in &call[first..last] {
        match p {
            Piece::JsonCall {
                id_key,
                name_key,
                args_key,
            } => {
                let mut head = String::from("{");
                if let Some(k) = id_key {
                    head.push_str(&format!("{}: \"0\", ", json_string(k)));
                }
                head.push_str(&format!(
                    "{}: {}, {}: ",
                    json_string(name_key),
                    json_string(name),
                    json_string(args_key)
                ));
                elements.push(const_string(&head));
                elements.push(json_args(tool));
                elements.push(const_string("}"));
            }
            Piece::Args(Args::Json) => {
                elements.push(json_args(tool));
            }
            Piece::Args(Args::Text(params)) => {
                let mut g = Grammar::new();
                let root = text_params(&mut g, params, &spec.parameters, tool.input);
                g.set_root(root);
                elements.push(json!({"type": "grammar", "grammar": g.to_gbnf()}));
            }
            Piece::Index => elements.push(json!({"type": "regex", "pattern": "[0-9]+"})),
            Piece::CallId => elements.push(json!({"type": "regex", "pattern": "[a-zA-Z0-9]{9}"})),
            other => elements.push(const_string(&canonical(std::slice::from_ref(other), name))),
        }
    }
    // Fold literal elements at the edges into begin/end (xgrammar dispatches on begin).
    if let Some(Value::String(s)) = elements.first().and_then(|e| e.get("value")).cloned()
        && elements.len() > 1
    {
        begin.push_str(&s);
        elements.remove(0);
    }
    if let Some(Value::String(s)) = elements.last().and_then(|e| e.get("value")).cloned()
        && elements.len() > 1
    {
        end.insert_str(0, &s);
        elements.pop();
    }
    let content = if elements.len() == 1 {
        elements.pop().unwrap_or(Value::Null)
    } else {
        json!({"type": "sequence", "elements": elements})
    };
    json!({"type": "tag", "begin": begin, "content": content, "end": end})
}

fn const_string(s: &str) -> Value {
    json!({"type": "const_string", "value": s})
}
