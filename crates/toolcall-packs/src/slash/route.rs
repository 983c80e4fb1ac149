//! User input → tool calls: `/summary`, `/order lab [test]`, `/workflow <name>` and
//! `@Patient Name` mentions, each call carrying its `context_id`.
//!
//! A surface starts at the beginning of the input or after whitespace (so `and/or` and
//! `a@b.org` are plain text); text that is not a surface is left for the model. A mention
//! selects the patient (and their latest visit) for the commands after it.

use serde_json::{Map, Value, json};
use toolcall_core::{Registry, ToolCall};

/// Longest input routed, in bytes.
pub const MAX_INPUT: usize = 8 * 1024;
/// Longest workflow name.
pub const MAX_WORKFLOW_NAME: usize = 64;

pub const LOOKUP_PATIENT: &str = "vista.context.lookup_patient";
pub const SUMMARY: &str = "vista.command.summary";
pub const ORDER_LAB: &str = "vista.command.order_lab";
pub const START_WORKFLOW: &str = "vista.command.start_workflow";

/// A patient the router can recognise in a mention.
#[derive(Debug, Clone, PartialEq)]
pub struct PatientRef {
    pub id: String,
    pub name: String,
    /// The latest visit, used by commands after the mention.
    pub visit_id: Option<String>,
}

/// What the router knows besides the input.
#[derive(Debug, Clone, Default)]
pub struct SlashContext {
    /// The visit open in the UI, if any.
    pub visit_id: Option<String>,
    pub patients: Vec<PatientRef>,
    /// Workflow names that exist; empty means "any well-formed name".
    pub workflows: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    #[error("unknown command {command:?}; commands: {known}")]
    UnknownCommand { command: String, known: String },
    #[error("no patient matches \"@{0}\"")]
    UnknownPatient(String),
    #[error(
        "{command} needs a visit: mention a patient first (e.g. @Anna Nowak {command}) or open a visit"
    )]
    NoVisit { command: String },
    #[error("invalid workflow name {name:?}: {reason}")]
    BadWorkflow { name: String, reason: String },
    #[error("unknown workflow {name:?}; workflows: {known}")]
    UnknownWorkflow { name: String, known: String },
    #[error("{command}: {message}")]
    Usage { command: String, message: String },
    #[error("input is longer than {MAX_INPUT} bytes")]
    TooLong,
}

const COMMANDS: &str = "/summary, /order lab [test], /workflow <name>";

/// The context id of a command on a visit: `slash:<command>:<visit>`.
pub fn command_context_id(command: &str, visit: Option<&str>) -> String {
    match visit {
        Some(v) => format!("slash:{command}:{v}"),
        None => format!("slash:{command}"),
    }
}

/// The context id of a patient mention: `mention:patient:<id>`.
pub fn mention_context_id(patient_id: &str) -> String {
    format!("mention:patient:{patient_id}")
}

/// Where surfaces start: `/` or `@` at the start or after whitespace.
fn surface_starts(input: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut prev_ws = true;
    for (i, c) in input.char_indices() {
        if prev_ws && (c == '/' || c == '@') {
            starts.push(i);
        }
        prev_ws = c.is_whitespace();
    }
    starts
}

fn call(name: &str, args: Map<String, Value>) -> ToolCall {
    ToolCall::new(name, Value::Object(args), "slash")
}

/// Checks a workflow name and returns the tool id `vista.command.start_workflow::<name>`.
pub fn workflow_tool(name: &str, ctx: &SlashContext) -> Result<String, SlashError> {
    let bad = |reason: &str| SlashError::BadWorkflow {
        name: name.to_owned(),
        reason: reason.to_owned(),
    };
    if name.is_empty() || name.len() > MAX_WORKFLOW_NAME {
        return Err(bad("must be 1 to 64 characters"));
    }
    if name.contains("::") {
        return Err(bad(
            "a workflow name is one id segment; '::' is not allowed in it",
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(bad(&format!(
            "character {c:?} is not allowed (letters, digits, '_' and '-')"
        )));
    }
    let id = format!("{START_WORKFLOW}::{name}");
    Registry::validate_id(&id).map_err(|e| bad(&e.to_string()))?;
    if !ctx.workflows.is_empty() && !ctx.workflows.iter().any(|w| w == name) {
        return Err(SlashError::UnknownWorkflow {
            name: name.to_owned(),
            known: ctx.workflows.join(", "),
        });
    }
    Ok(id)
}

/// The patient a mention names: the longest known name (case-insensitive) or id the text
/// after `@` starts with, ending at a word boundary. Returns the patient and bytes used.
fn match_patient<'a>(text: &str, ctx: &'a SlashContext) -> Option<(&'a PatientRef, usize)> {
    let lower = text.to_lowercase();
    // Lowercasing may change lengths outside ASCII; only match when it did not.
    if lower.len() != text.len() {
        return None;
    }
    let mut best: Option<(&PatientRef, usize)> = None;
    for p in &ctx.patients {
        for key in [p.name.to_lowercase(), p.id.to_lowercase()] {
            if key.is_empty() || !lower.starts_with(&key) {
                continue;
            }
            let boundary = lower
                .get(key.len()..)
                .unwrap_or("")
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_');
            if boundary && best.is_none_or(|(_, n)| key.len() > n) {
                best = Some((p, key.len()));
            }
        }
    }
    best
}

/// Turns user input into the calls its surfaces ask for, in input order.
pub fn route(input: &str, ctx: &SlashContext) -> Result<Vec<ToolCall>, SlashError> {
    if input.len() > MAX_INPUT {
        return Err(SlashError::TooLong);
    }
    let starts = surface_starts(input);
    let mut calls = Vec::new();
    let mut visit = ctx.visit_id.clone();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(input.len());
        let Some(segment) = input.get(start..end) else {
            continue;
        };
        if let Some(after) = segment.strip_prefix('@') {
            let Some((patient, used)) = match_patient(after, ctx) else {
                let shown: String = after
                    .split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ");
                return Err(SlashError::UnknownPatient(shown));
            };
            // Text after the name (`after[used..]`) is the user's message, left for the model.
            let _ = used;
            let context_id = mention_context_id(&patient.id);
            let mut args = Map::new();
            args.insert("patient_id".into(), json!(patient.id));
            args.insert("query".into(), json!(patient.name));
            args.insert("context_id".into(), json!(context_id));
            calls.push(call(LOOKUP_PATIENT, args));
            visit = patient.visit_id.clone().or(visit);
            continue;
        }
        let Some(body) = segment.strip_prefix('/') else {
            continue;
        };
        let mut words = body.split_whitespace();
        let command = words.next().unwrap_or("");
        let rest: Vec<&str> = words.collect();
        let need_visit = |name: &str| {
            visit.clone().ok_or_else(|| SlashError::NoVisit {
                command: name.to_owned(),
            })
        };
        match command {
            "summary" => {
                if !rest.is_empty() {
                    return Err(SlashError::Usage {
                        command: "/summary".into(),
                        message: format!("takes no arguments, got {:?}", rest.join(" ")),
                    });
                }
                let v = need_visit("/summary")?;
                let mut args = Map::new();
                args.insert("visit_id".into(), json!(v));
                args.insert(
                    "context_id".into(),
                    json!(command_context_id("summary", Some(&v))),
                );
                calls.push(call(SUMMARY, args));
            }
            "order" => {
                match rest.first() {
                    Some(kind) if kind.eq_ignore_ascii_case("lab") => {}
                    Some(kind) => {
                        return Err(SlashError::UnknownCommand {
                            command: format!("/order {kind}"),
                            known: COMMANDS.into(),
                        });
                    }
                    None => {
                        return Err(SlashError::Usage {
                            command: "/order".into(),
                            message: "say what to order: /order lab [test]".into(),
                        });
                    }
                }
                let v = need_visit("/order lab")?;
                let mut args = Map::new();
                args.insert("visit_id".into(), json!(v));
                let test = rest.get(1..).map(|t| t.join(" ")).unwrap_or_default();
                if !test.is_empty() {
                    args.insert("test".into(), json!(test));
                }
                args.insert(
                    "context_id".into(),
                    json!(command_context_id("order_lab", Some(&v))),
                );
                calls.push(call(ORDER_LAB, args));
            }
            "workflow" => {
                let [name] = rest.as_slice() else {
                    return Err(SlashError::Usage {
                        command: "/workflow".into(),
                        message: "give exactly one workflow name: /workflow <name>".into(),
                    });
                };
                let tool = workflow_tool(name, ctx)?;
                let mut args = Map::new();
                if let Some(v) = &visit {
                    args.insert("visit_id".into(), json!(v));
                }
                let context_id = command_context_id(&format!("workflow:{name}"), visit.as_deref());
                args.insert("context_id".into(), json!(context_id));
                calls.push(call(&tool, args));
            }
            other => {
                return Err(SlashError::UnknownCommand {
                    command: format!("/{other}"),
                    known: COMMANDS.into(),
                });
            }
        }
    }
    Ok(calls)
}
