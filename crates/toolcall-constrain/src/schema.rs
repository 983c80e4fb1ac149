//! JSON Schema → grammar: the JSON a schema accepts, and the text values of the tag
//! families (`<parameter=days>3</parameter>`: JSON for every type but strings, which are
//! the raw text up to the closing tag).
//!
//! The grammar may accept more than the schema (never less for what it covers): keywords
//! that a context-free grammar cannot track cheaply (`pattern`, `minimum`, `format`,
//! `$ref`, `allOf` of several, `uniqueItems`, ...) are left to the validator that checks
//! every parsed call anyway. What it does enforce: types, `enum`/`const`, `anyOf`/`oneOf`,
//! the declared properties of an object with its required keys, and array items.
//!
//! Object members may come in any order (models and the fixtures written from their chat
//! templates do not keep the schema's order). A required key appears exactly once: the
//! grammar tracks which required keys were written, one rule per subset, so objects with
//! more than [`MAX_TRACKED_REQUIRED`] required keys keep the schema's order instead.
//! Optional keys are not tracked and may repeat (the validator sees the last one).

use serde_json::{Map, Value};

use crate::grammar::{Grammar, Node, text_until};

/// Required keys tracked in any order (2^n rules per object).
pub(crate) const MAX_TRACKED_REQUIRED: usize = 4;
/// Deepest schema nesting followed; deeper values are any JSON.
const MAX_DEPTH: usize = 12;
/// Whitespace run between JSON tokens and markup pieces (bounded: an unbounded run lets a
/// constrained model spin on blanks forever).
pub(crate) const MAX_WS: u32 = 40;

pub(crate) fn ws(g: &mut Grammar) -> Node {
    g.shared("ws", |_| {
        Node::class(&[(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]).repeat(0, Some(MAX_WS))
    })
}

fn string(g: &mut Grammar) -> Node {
    g.shared("json-string", |g| {
        let ch = g.shared("json-char", |_| {
            Node::alt([
                Node::not_class(&[('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')]),
                Node::seq([
                    Node::lit("\\"),
                    Node::alt([
                        Node::class(&[
                            ('"', '"'),
                            ('\\', '\\'),
                            ('/', '/'),
                            ('b', 'b'),
                            ('f', 'f'),
                            ('n', 'n'),
                            ('r', 'r'),
                            ('t', 't'),
                        ]),
                        Node::seq([
                            Node::lit("u"),
                            Node::class(&[('0', '9'), ('a', 'f'), ('A', 'F')]).repeat(4, Some(4)),
                        ]),
                    ]),
                ]),
            ])
        });
        Node::seq([Node::lit("\""), ch.star(), Node::lit("\"")])
    })
}

fn integer(g: &mut Grammar) -> Node {
    g.shared("json-integer", |_| {
        Node::seq([
            Node::lit("-").opt(),
            Node::alt([
                Node::lit("0"),
                Node::seq([
                    Node::class(&[('1', '9')]),
                    Node::class(&[('0', '9')]).repeat(0, Some(20)),
                ]),
            ]),
        ])
    })
}

fn number(g: &mut Grammar) -> Node {
    g.shared("json-number", |g| {
        let int = integer(g);
        let digits = Node::class(&[('0', '9')]).repeat(1, Some(40));
        Node::seq([
            int,
            Node::seq([Node::lit("."), digits.clone()]).opt(),
            Node::seq([
                Node::class(&[('e', 'e'), ('E', 'E')]),
                Node::class(&[('-', '-'), ('+', '+')]).opt(),
                digits,
            ])
            .opt(),
        ])
    })
}

fn boolean() -> Node {
    Node::alt([Node::lit("true"), Node::lit("false")])
}

/// Any JSON value.
pub(crate) fn any_value(g: &mut Grammar) -> Node {
    let (id, new) = g.declare("json-value");
    if new {
        let ws = ws(g);
        let s = string(g);
        let n = number(g);
        let value = Node::Rule(id);
        let member = Node::seq([
            s.clone(),
            ws.clone(),
            Node::lit(":"),
            ws.clone(),
            value.clone(),
        ]);
        let object = Node::seq([
            Node::lit("{"),
            ws.clone(),
            Node::seq([
                member.clone(),
                Node::seq([ws.clone(), Node::lit(","), ws.clone(), member]).star(),
            ])
            .opt(),
            ws.clone(),
            Node::lit("}"),
        ]);
        let array = Node::seq([
            Node::lit("["),
            ws.clone(),
            Node::seq([
                value.clone(),
                Node::seq([ws.clone(), Node::lit(","), ws.clone(), value]).star(),
            ])
            .opt(),
            ws,
            Node::lit("]"),
        ]);
        let body = Node::alt([object, array, s, n, boolean(), Node::lit("null")]);
        g.define(id, body);
    }
    Node::Rule(id)
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The JSON a schema accepts.
pub(crate) fn json(g: &mut Grammar, schema: &Value, depth: usize) -> Node {
    let Some(obj) = schema.as_object() else {
        return any_value(g);
    };
    if depth > MAX_DEPTH {
        return any_value(g);
    }
    if let Some(c) = obj.get("const") {
        return Node::lit(compact(c));
    }
    if let Some(Value::Array(options)) = obj.get("enum") {
        return Node::alt(options.iter().map(|v| Node::lit(compact(v))));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = obj.get(key)
            && !options.is_empty()
        {
            let alts: Vec<Node> = options.iter().map(|o| json(g, o, depth + 1)).collect();
            return Node::alt(alts);
        }
    }
    if let Some(Value::Array(all)) = obj.get("allOf")
        && let [only] = all.as_slice()
    {
        return json(g, only, depth + 1);
    }
    match obj.get("type") {
        Some(Value::String(t)) => typed(g, t, obj, depth),
        Some(Value::Array(types)) => {
            let alts: Vec<Node> = types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| typed(g, t, obj, depth))
                .collect();
            if alts.is_empty() {
                any_value(g)
            } else {
                Node::alt(alts)
            }
        }
        _ if obj.contains_key("properties") => typed(g, "object", obj, depth),
        _ => any_value(g),
    }
}

fn typed(g: &mut Grammar, t: &str, obj: &Map<String, Value>, depth: usize) -> Node {
    match t {
        "string" => string(g),
        "integer" => integer(g),
        "number" => number(g),
        "boolean" => boolean(),
        "null" => Node::lit("null"),
        "array" => {
            let item = match obj.get("items") {
                Some(items @ Value::Object(_)) => json(g, items, depth + 1),
                _ => any_value(g),
            };
            let ws = ws(g);
            let rule = g.fresh("array");
            let body = Node::seq([
                Node::lit("["),
                ws.clone(),
                Node::seq([
                    item.clone(),
                    Node::seq([ws.clone(), Node::lit(","), ws.clone(), item]).star(),
                ])
                .opt(),
                ws,
                Node::lit("]"),
            ]);
            g.define(rule, body);
            Node::Rule(rule)
        }
        "object" => match obj.get("properties") {
            Some(Value::Object(props)) if !props.is_empty() => {
                let required = required_keys(obj);
                let ws = ws(g);
                let members: Vec<(Node, bool)> = props
                    .iter()
                    .map(|(key, sub)| {
                        let value = json(g, sub, depth + 1);
                        let member = Node::seq([
                            Node::lit(compact(&Value::String(key.clone()))),
                            ws.clone(),
                            Node::lit(":"),
                            ws.clone(),
                            value,
                        ]);
                        (member, required.contains(&key.as_str()))
                    })
                    .collect();
                let sep = Node::seq([ws.clone(), Node::lit(","), ws.clone()]);
                let inner = members_any_order(g, "object", members, Node::empty(), sep);
                Node::seq([Node::lit("{"), ws.clone(), inner, ws, Node::lit("}")])
            }
            _ => {
                let ws = ws(g);
                let any = any_value(g);
                let s = string(g);
                let member = Node::seq([s, ws.clone(), Node::lit(":"), ws.clone(), any]);
                Node::seq([
                    Node::lit("{"),
                    ws.clone(),
                    Node::seq([
                        member.clone(),
                        Node::seq([ws.clone(), Node::lit(","), ws.clone(), member]).star(),
                    ])
                    .opt(),
                    ws,
                    Node::lit("}"),
                ])
            }
        },
        _ => any_value(g),
    }
}

pub(crate) fn required_keys(obj: &Map<String, Value>) -> Vec<&str> {
    match obj.get("required") {
        Some(Value::Array(keys)) => keys.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Members (each `(member, required)`) in any order: every required member exactly once,
/// optional members any number of times; `first` precedes the first member, `sep` every
/// later one. More than [`MAX_TRACKED_REQUIRED`] required members: the given order, each
/// optional member at most once.
pub(crate) fn members_any_order(
    g: &mut Grammar,
    stem: &str,
    members: Vec<(Node, bool)>,
    first: Node,
    sep: Node,
) -> Node {
    let required: Vec<Node> = members
        .iter()
        .filter(|m| m.1)
        .map(|m| m.0.clone())
        .collect();
    let optional: Vec<Node> = members
        .iter()
        .filter(|m| !m.1)
        .map(|m| m.0.clone())
        .collect();
    if required.len() > MAX_TRACKED_REQUIRED {
        return members_in_order(g, stem, members, first, sep);
    }
    let optional = if optional.is_empty() {
        None
    } else {
        let rule = g.fresh(&format!("{stem}-optional"));
        g.define(rule, Node::alt(optional));
        Some(Node::Rule(rule))
    };
    let r = required.len();
    let full = (1usize << r) - 1;
    // after[S]: what may follow once at least one member was written and the required
    // members in S were.
    let after: Vec<usize> = (0..=full)
        .map(|_| g.fresh(&format!("{stem}-rest")))
        .collect();
    let alternatives = |seen: usize, lead: &Node| -> Vec<Node> {
        let mut alts = Vec::new();
        if seen == full {
            alts.push(Node::empty());
        }
        if let Some(opt) = &optional {
            alts.push(Node::seq([
                lead.clone(),
                opt.clone(),
                Node::Rule(after[seen]),
            ]));
        }
        for (i, member) in required.iter().enumerate() {
            if seen & (1 << i) == 0 {
                alts.push(Node::seq([
                    lead.clone(),
                    member.clone(),
                    Node::Rule(after[seen | (1 << i)]),
                ]));
            }
        }
        alts
    };
    for (seen, &rule) in after.iter().enumerate() {
        let body = Node::alt(alternatives(seen, &sep));
        g.define(rule, body);
    }
    Node::alt(alternatives(0, &first))
}

fn members_in_order(
    g: &mut Grammar,
    stem: &str,
    members: Vec<(Node, bool)>,
    first: Node,
    sep: Node,
) -> Node {
    // tail[i]: members i.. after at least one was written.
    let n = members.len();
    let tails: Vec<usize> = (0..=n).map(|_| g.fresh(&format!("{stem}-tail"))).collect();
    for i in (0..n).rev() {
        let (member, required) = &members[i];
        let this = Node::seq([sep.clone(), member.clone()]);
        let this = if *required { this } else { this.opt() };
        g.define(tails[i], Node::seq([this, Node::Rule(tails[i + 1])]));
    }
    // head: the first member written is i (every earlier one optional and absent).
    let mut alts = Vec::new();
    for (i, (member, required)) in members.iter().enumerate() {
        alts.push(Node::seq([
            first.clone(),
            member.clone(),
            Node::Rule(tails[i + 1]),
        ]));
        if *required {
            break;
        }
    }
    if members.iter().all(|m| !m.1) {
        alts.push(Node::empty());
    }
    Node::alt(alts)
}

/// A tag family's value as text, ending with `close`: strings are the raw text up to the
/// first `close`; other types JSON with blanks around it.
pub(crate) fn text_value(g: &mut Grammar, schema: &Value, close: &str, depth: usize) -> Node {
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.is_empty()
        && options.iter().all(Value::is_string)
    {
        let ws = ws(g);
        let words = options.iter().filter_map(Value::as_str).map(Node::lit);
        return Node::seq([ws.clone(), Node::alt(words), ws, Node::lit(close)]);
    }
    if is_text(schema) {
        return text_until(g, close, false);
    }
    let ws = ws(g);
    let value = json(g, schema, depth + 1);
    Node::seq([ws.clone(), value, ws, Node::lit(close)])
}

/// Whether a value of this schema is written as raw text (a string, or anything that may
/// be one): then it runs to the closing tag.
pub(crate) fn is_text(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return true;
    };
    if let Some(Value::Array(options)) = obj.get("enum") {
        return options.iter().any(Value::is_string);
    }
    if let Some(c) = obj.get("const") {
        return c.is_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            return options.iter().any(is_text);
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        _ => !obj.contains_key("properties") && !obj.contains_key("items"),
    }
}
