//! A small context-free grammar (literals, character classes, rule references, sequence,
//! choice, bounded repetition) and its two text forms: llama.cpp GBNF and llguidance Lark.
//!
//! Both writers take the same rules, so the two dialects accept the same language. The Lark
//! form writes every literal one character per lexeme: llguidance lexes greedily, and a
//! multi-character literal next to the one-character lexemes of free text (`"<think>"`
//! against `"<"`) would make it commit to the longer one and reject `<thin!` (measured
//! with llguidance 1.9). GBNF has no lexer, so it keeps literals whole.

use std::collections::HashMap;
use std::fmt::Write as _;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Lit(String),
    /// One character in (or, `negated`, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Rule(usize),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

impl Node {
    pub(crate) fn lit(s: impl Into<String>) -> Node {
        Node::Lit(s.into())
    }

    pub(crate) fn empty() -> Node {
        Node::Seq(Vec::new())
    }

    pub(crate) fn class(ranges: &[(char, char)]) -> Node {
        Node::Class {
            negated: false,
            ranges: ranges.to_vec(),
        }
    }

    pub(crate) fn not_class(ranges: &[(char, char)]) -> Node {
        Node::Class {
            negated: true,
            ranges: ranges.to_vec(),
        }
    }

    pub(crate) fn opt(self) -> Node {
        self.repeat(0, Some(1))
    }

    pub(crate) fn star(self) -> Node {
        self.repeat(0, None)
    }

    pub(crate) fn repeat(self, min: u32, max: Option<u32>) -> Node {
        Node::Repeat {
            node: Box::new(self),
            min,
            max,
        }
    }

    /// A sequence, flattening nested sequences and dropping empty literals.
    pub(crate) fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        let mut out = Vec::new();
        for item in items {
            match item {
                Node::Seq(inner) => out.extend(inner),
                Node::Lit(s) if s.is_empty() => {}
                other => out.push(other),
            }
        }
        if out.len() == 1 {
            out.pop().unwrap_or_else(Node::empty)
        } else {
            Node::Seq(out)
        }
    }

    pub(crate) fn alt(items: impl IntoIterator<Item = Node>) -> Node {
        let mut out: Vec<Node> = items.into_iter().collect();
        if out.len() == 1 {
            out.pop().unwrap_or_else(Node::empty)
        } else {
            Node::Alt(out)
        }
    }
}

/// Named rules; rule 0 is the root.
#[derive(Debug, Default)]
pub(crate) struct Grammar {
    names: Vec<String>,
    bodies: Vec<Node>,
    by_name: HashMap<String, usize>,
}

impl Grammar {
    pub(crate) fn new() -> Grammar {
        let mut g = Grammar::default();
        g.declare("root");
        g
    }

    /// The rule called `name`, declared (with an empty body) if new; `true` when new.
    pub(crate) fn declare(&mut self, name: &str) -> (usize, bool) {
        if let Some(&id) = self.by_name.get(name) {
            return (id, false);
        }
        let id = self.names.len();
        self.names.push(name.to_owned());
        self.bodies.push(Node::empty());
        self.by_name.insert(name.to_owned(), id);
        (id, true)
    }

    pub(crate) fn define(&mut self, id: usize, body: Node) {
        if let Some(slot) = self.bodies.get_mut(id) {
            *slot = body;
        }
    }

    /// A reference to the rule `name`, built by `body` the first time it is asked for.
    pub(crate) fn shared(&mut self, name: &str, body: impl FnOnce(&mut Grammar) -> Node) -> Node {
        let (id, new) = self.declare(name);
        if new {
            let node = body(self);
            self.define(id, node);
        }
        Node::Rule(id)
    }

    /// A fresh rule name starting with `stem` (`stem-7`).
    pub(crate) fn fresh(&mut self, stem: &str) -> usize {
        let name = format!("{stem}-{}", self.names.len());
        self.declare(&name).0
    }

    pub(crate) fn set_root(&mut self, body: Node) {
        self.define(0, body);
    }

    /// GBNF as llama.cpp reads it (`root ::= …`).
    pub(crate) fn to_gbnf(&self) -> String {
        let mut out = String::new();
        for (name, body) in self.names.iter().zip(&self.bodies) {
            let _ = write!(out, "{name} ::= ");
            write_node(&mut out, body, Syntax::Gbnf, &self.names, false);
            out.push('\n');
        }
        out
    }

    /// Lark as llguidance reads it (`start: …`).
    pub(crate) fn to_lark(&self) -> String {
        let mut out = String::new();
        for (i, (name, body)) in self.names.iter().zip(&self.bodies).enumerate() {
            let name = if i == 0 { "start" } else { name.as_str() };
            let _ = write!(out, "{name}: ");
            write_node(&mut out, body, Syntax::Lark, &self.names, false);
            out.push('\n');
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Syntax {
    Gbnf,
    Lark,
}

fn write_node(out: &mut String, node: &Node, syntax: Syntax, names: &[String], nested: bool) {
    match node {
        Node::Lit(s) if s.is_empty() => out.push_str("\"\""),
        Node::Lit(s) => match syntax {
            Syntax::Gbnf => write_string(out, s),
            Syntax::Lark => {
                let mut chars = s.chars();
                let several = s.chars().nth(1).is_some();
                if several && nested {
                    out.push('(');
                }
                let mut buf = [0u8; 4];
                if let Some(c) = chars.next() {
                    write_string(out, c.encode_utf8(&mut buf));
                }
                for c in chars {
                    out.push(' ');
                    write_string(out, c.encode_utf8(&mut buf));
                }
                if several && nested {
                    out.push(')');
                }
            }
        },
        Node::Class { negated, ranges } => {
            if syntax == Syntax::Lark {
                out.push('/');
            }
            out.push('[');
            if *negated {
                out.push('^');
            }
            for &(lo, hi) in ranges {
                write_class_char(out, lo, syntax);
                if hi != lo {
                    out.push('-');
                    write_class_char(out, hi, syntax);
                }
            }
            out.push(']');
            if syntax == Syntax::Lark {
                out.push('/');
            }
        }
        Node::Rule(id) => {
            if *id == 0 && syntax == Syntax::Lark {
                out.push_str("start");
            } else {
                out.push_str(names.get(*id).map(String::as_str).unwrap_or("root"));
            }
        }
        Node::Seq(items) => {
            if items.is_empty() {
                out.push_str("\"\"");
                return;
            }
            if nested && items.len() > 1 {
                out.push('(');
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_node(out, item, syntax, names, true);
            }
            if nested && items.len() > 1 {
                out.push(')');
            }
        }
        Node::Alt(items) => {
            if nested {
                out.push('(');
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                write_node(out, item, syntax, names, false);
            }
            if nested {
                out.push(')');
            }
        }
        Node::Repeat { node, min, max } => {
            out.push('(');
            write_node(out, node, syntax, names, false);
            out.push(')');
            match (min, max) {
                (0, Some(1)) => out.push('?'),
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (m, None) => {
                    let _ = write!(out, "{{{m},}}");
                }
                (m, Some(n)) => {
                    let _ = write!(out, "{{{m},{n}}}");
                }
            }
        }
    }
}

/// A double-quoted literal; both dialects read these escapes.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_class_char(out: &mut String, c: char, syntax: Syntax) {
    match c {
        '\\' | ']' | '[' | '^' | '-' => {
            out.push('\\');
            out.push(c);
        }
        '/' if syntax == Syntax::Lark => out.push_str("\\/"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c => out.push(c),
    }
}

/// Text that ends with the first occurrence of `end` (`end` included), one character at
/// a time: a right-linear grammar over the states of the Knuth-Morris-Pratt automaton
/// for `end`, so prose may contain any proper prefix of `end` (`<tool_ca`, `<<tool_call>`).
/// `avoid`: instead, any text that never contains `end` (every state may stop).
pub(crate) fn text_until(g: &mut Grammar, end: &str, avoid: bool) -> Node {
    let key = format!(
        "{}-{}",
        if avoid { "avoid" } else { "until" },
        g.names.len()
    );
    let chars: Vec<char> = end.chars().collect();
    if chars.is_empty() {
        return if avoid {
            Node::not_class(&[]).star()
        } else {
            Node::empty()
        };
    }
    let n = chars.len();
    // Failure function of the pattern.
    let mut fail = vec![0usize; n + 1];
    let mut k = 0;
    for i in 1..n {
        while k > 0 && chars[i] != chars[k] {
            k = fail[k];
        }
        if chars[i] == chars[k] {
            k += 1;
        }
        fail[i + 1] = k;
    }
    let step = |mut state: usize, c: char| -> usize {
        loop {
            if state < n && chars[state] == c {
                return state + 1;
            }
            if state == 0 {
                return 0;
            }
            state = fail[state];
        }
    };
    let mut alphabet: Vec<char> = chars.clone();
    alphabet.sort_unstable();
    alphabet.dedup();
    let ids: Vec<usize> = (0..n).map(|i| g.declare(&format!("{key}-{i}")).0).collect();
    for (state, &id) in ids.iter().enumerate() {
        let mut alts = Vec::new();
        if avoid {
            alts.push(Node::empty());
        }
        for &c in &alphabet {
            let next = step(state, c);
            if next == n {
                if !avoid {
                    alts.push(Node::lit(c.to_string()));
                }
            } else {
                alts.push(Node::seq([Node::lit(c.to_string()), Node::Rule(ids[next])]));
            }
        }
        let others: Vec<(char, char)> = alphabet.iter().map(|&c| (c, c)).collect();
        alts.push(Node::seq([Node::not_class(&others), Node::Rule(ids[0])]));
        g.define(id, Node::alt(alts));
    }
    Node::Rule(ids[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gbnf_and_lark_write_the_same_rules() {
        let mut g = Grammar::new();
        let ws = g.shared("ws", |_| Node::class(&[(' ', ' '), ('\n', '\n')]).star());
        g.set_root(Node::seq([
            Node::lit("a\"b"),
            ws,
            Node::alt([Node::lit("x"), Node::not_class(&[('/', '/'), (']', ']')])]).opt(),
        ]));
        assert_eq!(
            g.to_gbnf(),
            "root ::= \"a\\\"b\" ws (\"x\" | [^/\\]])?\nws ::= ([ \\n])*\n"
        );
        assert_eq!(
            g.to_lark(),
            "start: (\"a\" \"\\\"\" \"b\") ws (\"x\" | /[^\\/\\]]/)?\nws: (/[ \\n]/)*\n"
        );
    }
}
