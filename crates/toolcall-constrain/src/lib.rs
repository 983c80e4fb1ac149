//! Decoding constraints that make a model's tool calls valid by construction.
//!
//! Given a family (how the model writes calls), the offered tools (their JSON Schemas) and
//! the request's `tool_choice` / `parallel_tool_calls`, [`build`] writes a constraint the
//! upstream's decoder enforces, in the dialect that engine reads ([`Dialect`]):
//!
//! | dialect | engine | where it goes |
//! |---|---|---|
//! | `structural_tag` | vLLM, SGLang (xgrammar) | `response_format: {"type": "structural_tag", "format": …}` |
//! | `gbnf` | llama.cpp server | `grammar` (with no `tools`: llama.cpp refuses both) |
//! | `lark` | llguidance (vLLM/SGLang `guidance` backend, llama.cpp `%llguidance`) | the grammar text |
//! | `json_schema` | Ollama, LM Studio, llama.cpp | `response_format: {"type": "json_schema", …}`; only families whose call is one JSON document, and only for a forced call |
//!
//! What a constraint accepts: the family's own call markup ([`Shape`], declared by each
//! family in its own module of `toolcall-parse`, read here through [`shape()`]), tool names limited to the offered tools, arguments matching each
//! tool's schema (JSON for JSON families; for the tag families the schema-typed text values:
//! strings as raw text, other types as JSON), reasoning first and free text where the family
//! allows them. `tool_choice`: `"auto"` lets prose run until the family's opener and
//! constrains from there (written as a full grammar: llama.cpp ignores `grammar_lazy` on
//! `/v1/chat/completions`); `"required"` or a named tool starts with the call markup;
//! `"none"` bans the opener. `parallel_tool_calls: false` allows one call.
//!
//! Where a family cannot be expressed in a dialect (Python-like call lists, free-text
//! families, a JSON Schema for prose-and-calls), [`build`] returns
//! [`ConstrainError::Unsupported`] saying why, and callers keep parse-and-repair alone. The
//! constraint is a guide, never a guarantee: replies are still parsed and validated.
//!
//! A crate of its own (not a module of `toolcall-parse`): it owns grammar writing and
//! JSON-Schema-to-grammar conversion, which the parser never needs; the parser and its
//! users stay free of it, and the gateway, CLI and bindings depend on it alone.

#[cfg(feature = "check")]
pub mod check;
mod grammar;
pub mod input_grammar;
mod schema;
mod structural_tag;

use serde_json::{Value, json};
use thiserror::Error;
use toolcall_core::ToolSpec;

use crate::grammar::{Grammar, Node, text_until};
use crate::input_grammar::ReadGrammar;
pub use crate::input_grammar::{InputGrammar, InputSyntax, Unreadable};
pub use toolcall_parse::shape::{Args, Piece, Shape, TextParams};

/// The declared call markup of family `id` (its module in `toolcall-parse` declares it);
/// `None`: an unknown family, or one no constraint is written for (Python-like or
/// free-form calls), for which callers keep parse-and-repair alone.
pub fn shape(id: &str) -> Option<&'static Shape> {
    toolcall_parse::FormatId::from_name(id)?.constraint_shape()
}

/// The constraint language an upstream reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    StructuralTag,
    Gbnf,
    Lark,
    JsonSchema,
}

impl Dialect {
    pub const ALL: [Dialect; 4] = [
        Dialect::StructuralTag,
        Dialect::Gbnf,
        Dialect::Lark,
        Dialect::JsonSchema,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::StructuralTag => "structural_tag",
            Dialect::Gbnf => "gbnf",
            Dialect::Lark => "lark",
            Dialect::JsonSchema => "json_schema",
        }
    }
}

impl std::str::FromStr for Dialect {
    type Err = ConstrainError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| ConstrainError::UnknownDialect(s.to_owned()))
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The request's `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    Required,
    None,
    /// This tool, and a call is forced.
    Named(String),
}

impl ToolChoice {
    /// `auto`, `required`, `none`, or a tool's name.
    pub fn parse(s: &str) -> ToolChoice {
        match s {
            "auto" => ToolChoice::Auto,
            "required" | "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Named(name.to_owned()),
        }
    }

    /// From an OpenAI Chat `tool_choice` value (`"auto"`, `{"type": "function",
    /// "function": {"name": …}}`); `None`: absent or not understood (then `auto`).
    pub fn from_openai(v: &Value) -> Option<ToolChoice> {
        match v {
            Value::String(s) => Some(ToolChoice::parse(s)),
            Value::Object(o) => o
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| o.get("name"))
                .and_then(Value::as_str)
                .map(|n| ToolChoice::Named(n.to_owned())),
            _ => None,
        }
    }
}

/// What the request allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub choice: ToolChoice,
    /// `parallel_tool_calls` (default true): `false` allows one call.
    pub parallel: bool,
    /// A literal every call's markup starts with (the gateway's per-request emulation
    /// trigger), before the family's own opener.
    pub trigger: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            choice: ToolChoice::Auto,
            parallel: true,
            trigger: None,
        }
    }
}

/// A built constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    pub dialect: Dialect,
    pub body: Body,
    /// The literal(s) a call starts with (for engines with lazy grammars and triggers:
    /// llama.cpp's `/completion` `grammar_triggers`).
    pub triggers: Vec<String>,
    /// What the constraint leaves out and why (a tool's input grammar it cannot read): for
    /// the caller to log.
    pub notes: Vec<String>,
}

/// The constraint itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// GBNF or Lark text.
    Grammar(String),
    /// A structural tag (`{"type": "structural_tag", …}`) or a JSON Schema.
    Json(Value),
}

impl Constraint {
    /// The constraint as text (grammar text, or compact JSON).
    pub fn text(&self) -> String {
        match &self.body {
            Body::Grammar(s) => s.clone(),
            Body::Json(v) => v.to_string(),
        }
    }

    /// Size in bytes of [`Constraint::text`].
    pub fn len(&self) -> usize {
        match &self.body {
            Body::Grammar(s) => s.len(),
            Body::Json(v) => v.to_string().len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The OpenAI-style `response_format` carrying this constraint (structural tags and
    /// JSON Schemas); `None` for grammar text.
    pub fn response_format(&self) -> Option<Value> {
        match (&self.body, self.dialect) {
            (Body::Json(v), Dialect::StructuralTag) => Some(v.clone()),
            (Body::Json(v), Dialect::JsonSchema) => Some(json!({
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": v, "strict": true},
            })),
            _ => None,
        }
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConstrainError {
    #[error("unknown family {0:?} (`toolcall formats` lists them)")]
    UnknownFamily(String),
    #[error("unknown constraint dialect {0:?} (structural_tag, gbnf, lark, json_schema)")]
    UnknownDialect(String),
    #[error("no tools to constrain calls to")]
    NoTools,
    #[error("tool_choice names {0:?}, which is not among the offered tools")]
    UnknownTool(String),
    #[error("{family} cannot be constrained as {dialect}: {why}")]
    Unsupported {
        family: String,
        dialect: Dialect,
        why: &'static str,
    },
}

/// Tools beyond this many are not constrained (the grammar grows with every tool).
pub const MAX_TOOLS: usize = 512;

/// The constraint for `family`'s markup, the `tools` offered and the request's options.
pub fn build(
    family: &str,
    tools: &[ToolSpec],
    dialect: Dialect,
    options: &Options,
) -> Result<Constraint, ConstrainError> {
    build_with_inputs(family, tools, dialect, options, &[])
}

/// [`build`], with the input grammars of custom tools (tool name, grammar): such a tool's
/// one string argument is constrained by its grammar (raw text in a tag family's value,
/// JSON-escaped inside a JSON family's string). A grammar outside the subset read
/// ([`input_grammar`]) leaves that argument a free string and is named in
/// [`Constraint::notes`].
pub fn build_with_inputs(
    family: &str,
    tools: &[ToolSpec],
    dialect: Dialect,
    options: &Options,
    inputs: &[(String, InputGrammar)],
) -> Result<Constraint, ConstrainError> {
    if toolcall_parse::FormatId::from_name(family).is_none() {
        return Err(ConstrainError::UnknownFamily(family.to_owned()));
    }
    let unsupported = |why| ConstrainError::Unsupported {
        family: family.to_owned(),
        dialect,
        why,
    };
    let Some(shape) = shape(family) else {
        return Err(unsupported(
            "its family declares no markup shape for constraints; the reply is parsed and repaired instead",
        ));
    };
    let mut offered: Vec<&ToolSpec> = tools.iter().filter(|t| t.enabled).collect();
    if let ToolChoice::Named(name) = &options.choice {
        offered.retain(|t| &t.name == name);
        if offered.is_empty() {
            return Err(ConstrainError::UnknownTool(name.clone()));
        }
    }
    if offered.is_empty() && options.choice != ToolChoice::None {
        return Err(ConstrainError::NoTools);
    }
    if offered.len() > MAX_TOOLS {
        return Err(unsupported("more tools than a constraint is written for"));
    }
    let forced = matches!(options.choice, ToolChoice::Required | ToolChoice::Named(_));
    if !shape.prose && !forced {
        return Err(unsupported(
            "its call is the whole reply, so prose cannot be told from a call: only a forced call (tool_choice required or named) is constrained",
        ));
    }
    let opener = opener(shape, options.trigger.as_deref())
        .ok_or_else(|| unsupported("its markup does not start with a literal"))?;
    let mut notes = Vec::new();
    let mut read: Vec<(&str, ReadGrammar)> = Vec::new();
    for (name, grammar) in inputs {
        if !offered.iter().any(|t| &t.name == name) {
            continue;
        }
        match grammar.read() {
            Ok(r) => read.push((name.as_str(), r)),
            Err(why) => notes.push(format!(
                "the input grammar of {name:?} is not in the constraint (its input is checked afterwards): {why}"
            )),
        }
    }
    let offered: Vec<Tool> = offered
        .into_iter()
        .map(|spec| Tool {
            spec,
            input: read.iter().find(|(n, _)| *n == spec.name).map(|(_, r)| r),
        })
        .collect();
    let triggers = if shape.prose {
        vec![opener.clone()]
    } else {
        Vec::new()
    };
    let body = match dialect {
        Dialect::Gbnf | Dialect::Lark => {
            let g = grammar_for(shape, &offered, options, &opener);
            Body::Grammar(if dialect == Dialect::Gbnf {
                g.to_gbnf()
            } else {
                g.to_lark()
            })
        }
        Dialect::StructuralTag => {
            Body::Json(structural_tag::build(shape, &offered, options, &opener))
        }
        Dialect::JsonSchema => {
            let specs: Vec<&ToolSpec> = offered.iter().map(|t| t.spec).collect();
            if !read.is_empty() {
                notes.push(
                    "a JSON Schema cannot hold a grammar: custom tools' inputs are free strings in it"
                        .into(),
                );
            }
            Body::Json(json_schema(family, &specs, options).ok_or_else(|| {
                unsupported("its calls are not one JSON document (json and xlam are)")
            })?)
        }
    };
    Ok(Constraint {
        dialect,
        body,
        triggers,
        notes,
    })
}

/// The literal a run of calls starts with (the emulation trigger first, if any).
fn opener(shape: &Shape, trigger: Option<&str>) -> Option<String> {
    let first = shape.section.map_or(shape.call, |(open, _)| open);
    let lit = match first.first() {
        Some(Piece::Lit(s)) => *s,
        // The whole reply is the call: no opener to wait for.
        _ if !shape.prose => "",
        _ => return None,
    };
    Some(format!("{}{lit}", trigger.unwrap_or("")))
}

/// The pieces of a call or section, without its leading literal when `skip_first`.
fn rest(pieces: &[Piece], skip_first: bool) -> &[Piece] {
    match (skip_first, pieces.first()) {
        (true, Some(Piece::Lit(_))) => &pieces[1..],
        _ => pieces,
    }
}

/// GBNF/Lark rules: see the crate doc for what each `tool_choice` allows.
/// An offered tool and its input grammar, if it has one that was read.
#[derive(Clone, Copy)]
pub(crate) struct Tool<'a> {
    pub(crate) spec: &'a ToolSpec,
    pub(crate) input: Option<&'a ReadGrammar>,
}

fn grammar_for(shape: &Shape, tools: &[Tool], options: &Options, opener: &str) -> Grammar {
    let mut g = Grammar::new();
    let single = !options.parallel;
    let ws = schema::ws(&mut g);
    let (think_open, think_close) = (shape.reasoning.open, shape.reasoning.close);
    let think_body = text_until(&mut g, think_close, false);
    let think = Node::seq([Node::lit(think_open), think_body, ws.clone()]).opt();
    if options.choice == ToolChoice::None {
        let text = text_until(&mut g, opener, true);
        g.set_root(Node::seq([think, text]));
        return g;
    }
    // One call (any offered tool), its leading literal left out when the call itself is
    // what the opener starts.
    let skip_in_call = shape.section.is_none() && shape.prose;
    let call = {
        let alts: Vec<Node> = tools
            .iter()
            .map(|t| {
                let id = g.fresh("call");
                let body = pieces(&mut g, rest(shape.call, skip_in_call), Some(*t));
                g.define(id, body);
                Node::Rule(id)
            })
            .collect();
        let id = g.fresh("calls");
        g.define(id, Node::alt(alts));
        Node::Rule(id)
    };
    // What follows the opener: the rest of one block (a section of calls, or one call).
    let block_rest = match shape.section {
        Some((open, close)) => {
            let open = pieces(&mut g, rest(open, shape.prose), None);
            let close = pieces(&mut g, close, None);
            let sep = pieces(&mut g, shape.separator, None);
            let more = if single {
                Node::empty()
            } else {
                Node::seq([sep, call.clone()]).star()
            };
            Node::seq([open, ws.clone(), call, more, ws.clone(), close])
        }
        None => call,
    };
    if !shape.prose {
        // Forced, whole reply: the block alone.
        g.set_root(Node::seq([think, ws.clone(), block_rest, ws]));
        return g;
    }
    let avoid = text_until(&mut g, opener, true);
    let after = if single {
        avoid.clone()
    } else {
        let seg = g.fresh("text-and-calls");
        let until = text_until(&mut g, opener, false);
        let body = Node::alt([
            avoid.clone(),
            Node::seq([until, block_rest.clone(), Node::Rule(seg)]),
        ]);
        g.define(seg, body);
        Node::Rule(seg)
    };
    let root = match options.choice {
        ToolChoice::Auto => {
            let until = text_until(&mut g, opener, false);
            Node::seq([
                think,
                Node::alt([avoid, Node::seq([until, block_rest, after])]),
            ])
        }
        _ => Node::seq([think, ws, Node::lit(opener), block_rest, after]),
    };
    g.set_root(root);
    g
}

/// The grammar of a list of pieces, for `tool` (which `Name`/`Args` pieces need).
fn pieces(g: &mut Grammar, pieces: &[Piece], tool: Option<Tool>) -> Node {
    let mut out = Vec::with_capacity(pieces.len());
    for piece in pieces {
        out.push(piece_node(g, piece, tool));
    }
    Node::seq(out)
}

fn piece_node(g: &mut Grammar, piece: &Piece, tool: Option<Tool>) -> Node {
    let name = tool.map_or("", |t| t.spec.name.as_str());
    match *piece {
        Piece::Lit(s) => Node::lit(s),
        Piece::Ws(_) => schema::ws(g),
        Piece::Name => Node::lit(name),
        Piece::NameString => Node::lit(json_string(name)),
        Piece::Index => Node::class(&[('0', '9')]).repeat(1, Some(6)),
        Piece::CallId => Node::class(&[('a', 'z'), ('A', 'Z'), ('0', '9')]).repeat(1, Some(64)),
        Piece::Optional(inner) => pieces(g, inner, tool).opt(),
        Piece::Either(a, b) => {
            let a = pieces(g, a, tool);
            let b = pieces(g, b, tool);
            Node::alt([a, b])
        }
        Piece::JsonCall {
            id_key,
            name_key,
            args_key,
        } => {
            let ws = schema::ws(g);
            let key = |k: &str| {
                Node::seq([
                    Node::lit(json_string(k)),
                    ws.clone(),
                    Node::lit(":"),
                    ws.clone(),
                ])
            };
            let comma = Node::seq([ws.clone(), Node::lit(","), ws.clone()]);
            let id = match id_key {
                Some(k) => {
                    let any = schema::any_value(g);
                    Node::seq([key(k), any, comma.clone()])
                }
                None => Node::empty(),
            };
            let args = args_node(g, Args::Json, tool);
            Node::seq([
                Node::lit("{"),
                ws.clone(),
                id,
                key(name_key),
                Node::lit(json_string(name)),
                comma,
                key(args_key),
                args,
                ws,
                Node::lit("}"),
            ])
        }
        Piece::Args(args) => args_node(g, args, tool),
    }
}

pub(crate) fn args_node(g: &mut Grammar, args: Args, tool: Option<Tool>) -> Node {
    let empty = Value::Object(Default::default());
    let params = tool.map_or(&empty, |t| &t.spec.parameters);
    let input = tool.and_then(|t| t.input);
    match args {
        Args::Json => match input.and_then(|i| Some((text_argument(params)?, i))) {
            Some((key, input)) => json_input(g, key, input),
            None => schema::json(g, params, 0),
        },
        Args::Text(p) => text_params(g, p, params, input),
    }
}

/// The one string argument a custom tool is offered with (the gateway's `input`), which its
/// grammar constrains; `None` when the schema is not one string property.
fn text_argument(params: &Value) -> Option<&str> {
    let Some(Value::Object(props)) = params.get("properties") else {
        return None;
    };
    let mut keys = props.iter();
    match (keys.next(), keys.next()) {
        (Some((key, sub)), None) if schema::is_text(sub) => Some(key.as_str()),
        _ => None,
    }
}

/// A grammar's rule for a custom tool's input (`json_escaped`: inside a JSON string).
fn input_node(g: &mut Grammar, input: &ReadGrammar, json_escaped: bool) -> Node {
    let id = g.fresh("input");
    let start = input.node(g, &format!("input-{id}"), json_escaped);
    g.define(id, start);
    Node::Rule(id)
}

/// JSON arguments `{"KEY": "…"}` whose string is the input grammar's text, escaped.
fn json_input(g: &mut Grammar, key: &str, input: &ReadGrammar) -> Node {
    let ws = schema::ws(g);
    let value = input_node(g, input, true);
    Node::seq([
        Node::lit("{"),
        ws.clone(),
        Node::lit(json_string(key)),
        ws.clone(),
        Node::lit(":"),
        ws.clone(),
        Node::lit("\""),
        value,
        Node::lit("\""),
        ws,
        Node::lit("}"),
    ])
}

/// Tagged text parameters: one per declared property, in any order, required ones once;
/// with `input`, the one string parameter follows the grammar (a newline allowed around
/// it, as the tag families write values).
fn text_params(
    g: &mut Grammar,
    p: &TextParams,
    params: &Value,
    input: Option<&ReadGrammar>,
) -> Node {
    let input_key = input.and_then(|_| text_argument(params)).map(str::to_owned);
    let ws = schema::ws(g);
    let Some(Value::Object(props)) = params.get("properties") else {
        return Node::empty();
    };
    let required = params
        .as_object()
        .map(schema::required_keys)
        .unwrap_or_default();
    let members: Vec<(Node, bool)> = props
        .iter()
        .map(|(key, sub)| {
            let close = if schema::is_text(sub) {
                p.key_close_text
            } else {
                p.key_close_json
            };
            let close = pieces(g, close, None);
            let value = match input {
                Some(input) if input_key.as_deref() == Some(key.as_str()) => {
                    let nl = Node::lit("\n").opt();
                    let text = input_node(g, input, false);
                    Node::seq([nl.clone(), text, nl, Node::lit(p.value_close)])
                }
                _ => schema::text_value(g, sub, p.value_close, 0),
            };
            let member = Node::seq([Node::lit(p.key_open), Node::lit(key.as_str()), close, value]);
            (member, required.contains(&key.as_str()))
        })
        .collect();
    schema::members_any_order(g, "params", members, ws.clone(), ws)
}

fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// The JSON Schema of a reply that is one call document (`json`: `{"name", "arguments"}`;
/// `xlam`: a list of them). Only for a forced call: a schema cannot allow prose.
fn json_schema(family: &str, tools: &[&ToolSpec], options: &Options) -> Option<Value> {
    if !matches!(options.choice, ToolChoice::Required | ToolChoice::Named(_)) {
        return None;
    }
    let calls: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": t.parameters},
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let call = if calls.len() == 1 {
        calls.into_iter().next().unwrap_or_default()
    } else {
        json!({"anyOf": calls})
    };
    match family {
        "json" => Some(call),
        "xlam" => {
            let mut list = json!({"type": "array", "items": call, "minItems": 1});
            if !options.parallel {
                list["maxItems"] = json!(1);
            }
            Some(list)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec::new(
            "get_weather",
            "",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )]
    }

    #[test]
    fn families_without_a_shape_say_so() {
        let e = build("pythonic", &tools(), Dialect::Gbnf, &Options::default()).unwrap_err();
        assert!(matches!(e, ConstrainError::Unsupported { .. }), "{e}");
        let e = build("no_such", &tools(), Dialect::Gbnf, &Options::default()).unwrap_err();
        assert_eq!(e, ConstrainError::UnknownFamily("no_such".into()));
    }

    #[test]
    fn json_schema_only_for_a_forced_call_of_a_json_document_family() {
        let forced = Options {
            choice: ToolChoice::Required,
            ..Options::default()
        };
        assert!(build("hermes", &tools(), Dialect::JsonSchema, &forced).is_err());
        assert!(build("json", &tools(), Dialect::JsonSchema, &Options::default()).is_err());
        let c = build("json", &tools(), Dialect::JsonSchema, &forced).unwrap();
        assert_eq!(c.response_format().unwrap()["type"], "json_schema");
    }

    #[test]
    fn named_tool_must_be_offered() {
        let named = Options {
            choice: ToolChoice::Named("nope".into()),
            ..Options::default()
        };
        assert_eq!(
            build("hermes", &tools(), Dialect::Gbnf, &named).unwrap_err(),
            ConstrainError::UnknownTool("nope".into())
        );
    }
}
