//! A custom tool's input grammar (Lark or a regular expression, as OpenAI's `custom` tools
//! declare it) read into this crate's grammar, so that it can sit inside the constraint
//! sent upstream: as the raw text value of a tag family's parameter, or JSON-escaped inside
//! the JSON string of a JSON family's `input` argument.
//!
//! Lark has no public Rust parser, so this reads the subset tool grammars use: rules and
//! terminals (`name: …`, `NAME: …`, `|` alternatives on continuation lines), string literals
//! (`"…"`), regular expressions (`/…/` without flags), `"a".."z"` ranges, groups, `[…]`
//! optionals, `?`, `*`, `+`, `~ n` / `~ n..m`, `-> alias` (ignored), `?rule` / `!rule`
//! prefixes, `//` comments and `%import common.X` for common's small terminals. Regular
//! expressions: literals, escapes (`\d`, `\w`, `\s`, their negations, `\n`, …), `.`,
//! classes, groups (`(?:…)` too), `|`, `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}` and anchors at
//! either end. Anything else (`%ignore`, priorities, case-insensitive strings, regex flags,
//! lookarounds, back-references, `%declare`, templates) is [`Unreadable`]: the caller
//! leaves that tool's input unconstrained, says so, and still checks it afterwards.

use std::collections::HashMap;

use crate::grammar::{Grammar, Node};

/// The notation of a custom tool's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputSyntax {
    Lark,
    Regex,
}

/// A custom tool's input grammar as declared.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InputGrammar {
    pub syntax: InputSyntax,
    pub definition: String,
}

/// Why a grammar is left out of the constraint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// The most nesting, repetition count and rules read (a constraint stays small).
const MAX_DEPTH: usize = 64;
const MAX_COUNT: u32 = 1000;
const MAX_RULES: usize = 512;

/// One expression of a read grammar.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Lit(String),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Another rule or terminal, by name.
    Ref(String),
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Repeat(Box<Expr>, u32, Option<u32>),
}

/// A grammar read, ready to be written into a constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadGrammar {
    rules: Vec<(String, Expr)>,
    start: String,
}

impl InputGrammar {
    /// Reads the grammar (the subset in the module doc).
    pub fn read(&self) -> Result<ReadGrammar, Unreadable> {
        match self.syntax {
            InputSyntax::Regex => Ok(ReadGrammar {
                rules: vec![("start".into(), regex(&self.definition, true)?)],
                start: "start".into(),
            }),
            InputSyntax::Lark => lark(&self.definition),
        }
    }
}

impl ReadGrammar {
    /// Its start rule as a node of `g` (rules named `stem-…`); `json_escaped`: the text as
    /// it is written inside a JSON string (quotes, backslashes and control characters
    /// escaped).
    pub(crate) fn node(&self, g: &mut Grammar, stem: &str, json_escaped: bool) -> Node {
        let mode = if json_escaped { "j" } else { "r" };
        let ids: HashMap<&str, usize> = self
            .rules
            .iter()
            .map(|(name, _)| {
                let (id, _) = g.declare(&format!("{stem}-{mode}-{}", rule_name(name)));
                (name.as_str(), id)
            })
            .collect();
        for (name, body) in &self.rules {
            let node = lower(body, &ids, json_escaped);
            if let Some(&id) = ids.get(name.as_str()) {
                g.define(id, node);
            }
        }
        ids.get(self.start.as_str())
            .map_or_else(Node::empty, |&id| Node::Rule(id))
    }
}

/// A rule name as both writers accept it (letters, digits and `-`).
fn rule_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn lower(e: &Expr, ids: &HashMap<&str, usize>, esc: bool) -> Node {
    match e {
        Expr::Lit(s) if esc => Node::lit(json_escape(s)),
        Expr::Lit(s) => Node::lit(s.clone()),
        Expr::Class { negated, ranges } if esc => escaped_class(*negated, ranges),
        Expr::Class { negated, ranges } => Node::Class {
            negated: *negated,
            ranges: ranges.clone(),
        },
        Expr::Ref(name) => ids
            .get(name.as_str())
            .map_or_else(Node::empty, |&id| Node::Rule(id)),
        Expr::Seq(items) => Node::seq(items.iter().map(|i| lower(i, ids, esc))),
        Expr::Alt(items) => Node::alt(items.iter().map(|i| lower(i, ids, esc))),
        Expr::Repeat(inner, min, max) => lower(inner, ids, esc).repeat(*min, *max),
    }
}

/// `s` as it is written inside a JSON string.
fn json_escape(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// Characters a JSON string writes escaped, and how.
const ESCAPED: [(char, &str); 5] = [
    ('"', "\\\""),
    ('\\', "\\\\"),
    ('\n', "\\n"),
    ('\t', "\\t"),
    ('\r', "\\r"),
];

fn in_ranges(c: char, ranges: &[(char, char)]) -> bool {
    ranges.iter().any(|&(a, b)| a <= c && c <= b)
}

/// A character class as written inside a JSON string: its plain characters as a class,
/// its quote, backslash, newline, tab and carriage return as their escapes (other control
/// characters are left out).
fn escaped_class(negated: bool, ranges: &[(char, char)]) -> Node {
    let special = [('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')];
    let mut alts = Vec::new();
    if negated {
        let mut all = ranges.to_vec();
        all.extend(special);
        alts.push(Node::not_class(&all));
    } else {
        let mut plain = ranges.to_vec();
        for (lo, hi) in special {
            plain = plain
                .into_iter()
                .flat_map(|(a, b)| {
                    let mut parts = Vec::new();
                    if a < lo {
                        parts.push((a, prev(lo).min(b)));
                    }
                    if b > hi {
                        parts.push((next(hi).max(a), b));
                    }
                    parts
                })
                .collect();
        }
        if !plain.is_empty() {
            alts.push(Node::class(&plain));
        }
    }
    for (c, esc) in ESCAPED {
        if in_ranges(c, ranges) != negated {
            alts.push(Node::lit(esc));
        }
    }
    Node::alt(alts)
}

fn next(c: char) -> char {
    char::from_u32(c as u32 + 1)
        .or_else(|| char::from_u32(0xE000))
        .unwrap_or(c)
}

fn prev(c: char) -> char {
    (c as u32)
        .checked_sub(1)
        .and_then(char::from_u32)
        .unwrap_or(c)
}

// ---------------------------------------------------------------------------------------
// Lark

/// Lark's `common` terminals tools import.
fn common(name: &str) -> Option<Expr> {
    let digit = Expr::Class {
        negated: false,
        ranges: vec![('0', '9')],
    };
    let lower = ('a', 'z');
    let upper = ('A', 'Z');
    let class = |r: Vec<(char, char)>| Expr::Class {
        negated: false,
        ranges: r,
    };
    let plus = |e: Expr| Expr::Repeat(Box::new(e), 1, None);
    Some(match name {
        "LF" => Expr::Lit("\n".into()),
        "CR" => Expr::Lit("\r".into()),
        "NEWLINE" => plus(Expr::Seq(vec![
            Expr::Repeat(Box::new(Expr::Lit("\r".into())), 0, Some(1)),
            Expr::Lit("\n".into()),
        ])),
        "WS_INLINE" => plus(class(vec![(' ', ' '), ('\t', '\t')])),
        "WS" => plus(class(vec![
            (' ', ' '),
            ('\t', '\t'),
            ('\n', '\n'),
            ('\r', '\r'),
            ('\u{c}', '\u{c}'),
        ])),
        "DIGIT" => digit,
        "HEXDIGIT" => class(vec![('0', '9'), ('a', 'f'), ('A', 'F')]),
        "INT" => plus(digit),
        "SIGNED_INT" => Expr::Seq(vec![
            Expr::Repeat(Box::new(class(vec![('+', '+'), ('-', '-')])), 0, Some(1)),
            plus(digit),
        ]),
        "NUMBER" | "DECIMAL" => Expr::Seq(vec![
            plus(digit.clone()),
            Expr::Repeat(
                Box::new(Expr::Seq(vec![
                    Expr::Lit(".".into()),
                    Expr::Repeat(Box::new(digit), 0, None),
                ])),
                0,
                Some(1),
            ),
        ]),
        "LCASE_LETTER" => class(vec![lower]),
        "UCASE_LETTER" => class(vec![upper]),
        "LETTER" => class(vec![lower, upper]),
        "WORD" => plus(class(vec![lower, upper])),
        "CNAME" => Expr::Seq(vec![
            class(vec![('_', '_'), lower, upper]),
            Expr::Repeat(
                Box::new(class(vec![('_', '_'), lower, upper, ('0', '9')])),
                0,
                None,
            ),
        ]),
        "ESCAPED_STRING" => Expr::Seq(vec![
            Expr::Lit("\"".into()),
            Expr::Repeat(
                Box::new(Expr::Alt(vec![
                    Expr::Class {
                        negated: true,
                        ranges: vec![('"', '"'), ('\\', '\\'), ('\n', '\n')],
                    },
                    Expr::Seq(vec![
                        Expr::Lit("\\".into()),
                        Expr::Class {
                            negated: true,
                            ranges: vec![('\n', '\n')],
                        },
                    ]),
                ])),
                0,
                None,
            ),
            Expr::Lit("\"".into()),
        ]),
        _ => return None,
    })
}

fn lark(text: &str) -> Result<ReadGrammar, Unreadable> {
    let mut rules: Vec<(String, Expr)> = Vec::new();
    let mut imports: Vec<String> = Vec::new();
    // Join continuation lines (starting with `|`) to their rule.
    let mut statements: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = strip_comment(line);
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with('|')
            && let Some(last) = statements.last_mut()
        {
            last.push(' ');
            last.push_str(trimmed);
        } else {
            statements.push(trimmed.to_owned());
        }
    }
    for s in &statements {
        if let Some(rest) = s.strip_prefix("%import") {
            imports.extend(import_names(rest.trim())?);
            continue;
        }
        if s.starts_with('%') {
            return Err(Unreadable(format!(
                "the Lark directive {:?} is not read",
                s.split_whitespace().next().unwrap_or(s)
            )));
        }
        let Some((head, body)) = s.split_once(':') else {
            return Err(Unreadable(format!("a Lark line that is no rule: {s:?}")));
        };
        let name = head.trim().trim_start_matches(['?', '!']);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Unreadable(format!(
                "the Lark rule head {:?} is not read (priorities and templates are not)",
                head.trim()
            )));
        }
        let mut p = LarkParser {
            s: body.as_bytes(),
            text: body,
            i: 0,
            depth: 0,
        };
        let expr = p.alternatives()?;
        p.skip_ws();
        if p.i < p.s.len() {
            return Err(Unreadable(format!(
                "the Lark rule {name:?} has something not read at {:?}",
                &body[p.i..]
            )));
        }
        rules.push((name.to_owned(), expr));
        if rules.len() > MAX_RULES {
            return Err(Unreadable("more rules than are read".into()));
        }
    }
    for name in imports {
        if rules.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let Some(e) = common(&name) else {
            return Err(Unreadable(format!(
                "the Lark import common.{name} is not read"
            )));
        };
        rules.push((name, e));
    }
    if !rules.iter().any(|(n, _)| n == "start") {
        return Err(Unreadable("the Lark grammar has no start rule".into()));
    }
    // Every reference names a rule.
    let names: Vec<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    for (_, e) in &rules {
        check_refs(e, &names)?;
    }
    Ok(ReadGrammar {
        rules,
        start: "start".into(),
    })
}

fn check_refs(e: &Expr, names: &[&str]) -> Result<(), Unreadable> {
    match e {
        Expr::Ref(n) if !names.contains(&n.as_str()) => Err(Unreadable(format!(
            "the Lark grammar names {n:?} and never defines it"
        ))),
        Expr::Seq(items) | Expr::Alt(items) => items.iter().try_for_each(|i| check_refs(i, names)),
        Expr::Repeat(inner, _, _) => check_refs(inner, names),
        _ => Ok(()),
    }
}

/// `common.LF` or `common (LF, WS)`.
fn import_names(rest: &str) -> Result<Vec<String>, Unreadable> {
    let unread = || Unreadable(format!("the Lark import {rest:?} is not read"));
    if let Some(name) = rest.strip_prefix("common.") {
        let name = name.split("->").next().unwrap_or(name).trim();
        return Ok(vec![name.to_owned()]);
    }
    let list = rest
        .strip_prefix("common")
        .map(str::trim)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(unread)?;
    Ok(list.split(',').map(|n| n.trim().to_owned()).collect())
}

/// The line without a `//` comment outside strings and regular expressions.
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(_), b'\\') => i += 1,
            (Some(q), c) if c == q => quote = None,
            (None, b'"') => quote = Some(b'"'),
            // A `/` starts a regex where an expression may start.
            (None, b'/') if b.get(i + 1) == Some(&b'/') => return &line[..i],
            (None, b'/') => quote = Some(b'/'),
            _ => {}
        }
        i += 1;
    }
    line
}

struct LarkParser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    depth: usize,
}

impl LarkParser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn alternatives(&mut self) -> Result<Expr, Unreadable> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unreadable("the Lark grammar nests too deep".into()));
        }
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            alts.push(self.sequence()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Alt(alts)
        })
    }

    fn sequence(&mut self) -> Result<Expr, Unreadable> {
        let mut items = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'|' | b')' | b']') => break,
                Some(b'-') if self.s.get(self.i + 1) == Some(&b'>') => {
                    // `-> alias`: only names the tree node.
                    self.i += 2;
                    self.skip_ws();
                    while self.i < self.s.len()
                        && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                    {
                        self.i += 1;
                    }
                }
                Some(_) => {
                    let atom = self.atom()?;
                    items.push(self.postfix(atom)?);
                }
            }
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Seq(items)
        })
    }

    fn postfix(&mut self, mut e: Expr) -> Result<Expr, Unreadable> {
        loop {
            // No whitespace is skipped before `?`, `*`, `+` in Lark either way.
            match self.s.get(self.i) {
                Some(b'?') => e = Expr::Repeat(Box::new(e), 0, Some(1)),
                Some(b'*') => e = Expr::Repeat(Box::new(e), 0, None),
                Some(b'+') => e = Expr::Repeat(Box::new(e), 1, None),
                _ => {
                    if self.peek() == Some(b'~') {
                        self.i += 1;
                        self.skip_ws();
                        let min = self.number()?;
                        let max = if self.s[self.i..].starts_with(b"..") {
                            self.i += 2;
                            self.number()?
                        } else {
                            min
                        };
                        if max < min {
                            return Err(Unreadable(
                                "a Lark repetition whose bounds are reversed".into(),
                            ));
                        }
                        e = Expr::Repeat(Box::new(e), min, Some(max));
                        continue;
                    }
                    return Ok(e);
                }
            }
            self.i += 1;
        }
    }

    fn number(&mut self) -> Result<u32, Unreadable> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.text[start..self.i]
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= MAX_COUNT)
            .ok_or_else(|| Unreadable("a Lark repetition count that is not read".into()))
    }

    fn atom(&mut self) -> Result<Expr, Unreadable> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let e = self.alternatives()?;
                self.expect(b')')?;
                Ok(e)
            }
            Some(b'[') => {
                self.i += 1;
                let e = self.alternatives()?;
                self.expect(b']')?;
                Ok(Expr::Repeat(Box::new(e), 0, Some(1)))
            }
            Some(b'"') => {
                let s = self.string()?;
                if self.s.get(self.i) == Some(&b'i') {
                    return Err(Unreadable(
                        "case-insensitive Lark strings are not read".into(),
                    ));
                }
                if self.s[self.i..].starts_with(b"..") {
                    self.i += 2;
                    self.skip_ws();
                    let end = self.string()?;
                    let (mut a, mut b) = (s.chars(), end.chars());
                    return match (a.next(), a.next(), b.next(), b.next()) {
                        (Some(a), None, Some(b), None) if a <= b => Ok(Expr::Class {
                            negated: false,
                            ranges: vec![(a, b)],
                        }),
                        _ => Err(Unreadable(
                            "a Lark range that is not one character to another".into(),
                        )),
                    };
                }
                Ok(Expr::Lit(s))
            }
            Some(b'/') => {
                let start = self.i + 1;
                let mut j = start;
                while j < self.s.len() && self.s[j] != b'/' {
                    if self.s[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                if j >= self.s.len() {
                    return Err(Unreadable("an unterminated Lark regular expression".into()));
                }
                let body = &self.text[start..j];
                self.i = j + 1;
                if self.s.get(self.i).is_some_and(|c| c.is_ascii_alphabetic()) {
                    return Err(Unreadable(
                        "Lark regular expressions with flags are not read".into(),
                    ));
                }
                regex(body, false)
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                let name = &self.text[start..self.i];
                if self.s.get(self.i) == Some(&b'{') || self.s.get(self.i) == Some(&b'.') {
                    return Err(Unreadable(format!(
                        "the Lark template or priority at {name:?} is not read"
                    )));
                }
                Ok(Expr::Ref(name.to_owned()))
            }
            other => Err(Unreadable(format!(
                "the Lark grammar has {:?} where an expression starts",
                other.map(char::from)
            ))),
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), Unreadable> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Unreadable(format!(
                "the Lark grammar misses a {:?}",
                char::from(c)
            )))
        }
    }

    /// A `"…"` literal (Python escapes), the quote at `self.i`.
    fn string(&mut self) -> Result<String, Unreadable> {
        self.i += 1;
        let mut out = String::new();
        let rest = &self.text[self.i..];
        let mut chars = rest.char_indices();
        while let Some((k, c)) = chars.next() {
            match c {
                '"' => {
                    self.i += k + 1;
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some(c @ ('"' | '\\' | '\'')) => out.push(c),
                    _ => return Err(Unreadable("a Lark string escape that is not read".into())),
                },
                c => out.push(c),
            }
        }
        Err(Unreadable("an unterminated Lark string".into()))
    }
}

// ---------------------------------------------------------------------------------------
// Regular expressions

/// A regular expression (`whole`: a `regex` tool's whole grammar, where `^`/`$` at the
/// ends are allowed).
fn regex(text: &str, whole: bool) -> Result<Expr, Unreadable> {
    let mut body = text;
    if whole || body.starts_with('^') {
        body = body.strip_prefix('^').unwrap_or(body);
    }
    if body.ends_with('$') && !body.ends_with("\\$") {
        body = &body[..body.len() - 1];
    }
    let chars: Vec<char> = body.chars().collect();
    let mut p = RegexParser {
        c: &chars,
        i: 0,
        depth: 0,
    };
    let e = p.alternatives()?;
    if p.i < chars.len() {
        return Err(Unreadable(format!(
            "the regular expression {text:?} has something not read at {}",
            p.i
        )));
    }
    Ok(e)
}

struct RegexParser<'a> {
    c: &'a [char],
    i: usize,
    depth: usize,
}

fn unread_regex(what: &str) -> Unreadable {
    Unreadable(format!("{what} in a regular expression is not read"))
}

const DIGITS: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
const SPACE: &[(char, char)] = &[(' ', ' '), ('\t', '\r')];

impl RegexParser<'_> {
    fn alternatives(&mut self) -> Result<Expr, Unreadable> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(unread_regex("nesting this deep"));
        }
        let mut alts = vec![self.sequence()?];
        while self.c.get(self.i) == Some(&'|') {
            self.i += 1;
            alts.push(self.sequence()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Alt(alts)
        })
    }

    fn sequence(&mut self) -> Result<Expr, Unreadable> {
        let mut items = Vec::new();
        while let Some(&c) = self.c.get(self.i) {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            items.push(self.postfix(atom)?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Seq(items)
        })
    }

    fn postfix(&mut self, mut e: Expr) -> Result<Expr, Unreadable> {
        loop {
            let (min, max) = match self.c.get(self.i) {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    let close = self.c[self.i..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or_else(|| unread_regex("an unclosed `{`"))?;
                    let inner: String = self.c[self.i + 1..self.i + close].iter().collect();
                    let count = |s: &str| {
                        s.trim()
                            .parse::<u32>()
                            .ok()
                            .filter(|n| *n <= MAX_COUNT)
                            .ok_or_else(|| unread_regex("this repetition count"))
                    };
                    let bounds = match inner.split_once(',') {
                        None => {
                            let n = count(&inner)?;
                            (n, Some(n))
                        }
                        Some((a, b)) if b.trim().is_empty() => (count(a)?, None),
                        Some((a, b)) => (count(a)?, Some(count(b)?)),
                    };
                    self.i += close;
                    bounds
                }
                _ => return Ok(e),
            };
            self.i += 1;
            if matches!(self.c.get(self.i), Some('?' | '+')) {
                return Err(unread_regex("a lazy or possessive quantifier"));
            }
            if max.is_some_and(|m| m < min) {
                return Err(unread_regex("a reversed repetition"));
            }
            e = Expr::Repeat(Box::new(e), min, max);
        }
    }

    fn atom(&mut self) -> Result<Expr, Unreadable> {
        let c = self.c[self.i];
        self.i += 1;
        Ok(match c {
            '(' => {
                if self.c.get(self.i) == Some(&'?') {
                    if self.c.get(self.i + 1) == Some(&':') {
                        self.i += 2;
                    } else {
                        return Err(unread_regex("a lookaround or named group"));
                    }
                }
                let e = self.alternatives()?;
                if self.c.get(self.i) != Some(&')') {
                    return Err(unread_regex("an unclosed group"));
                }
                self.i += 1;
                e
            }
            '[' => self.class()?,
            '.' => Expr::Class {
                negated: true,
                ranges: vec![('\n', '\n')],
            },
            '\\' => self.escape(false)?.into_expr(),
            '^' | '$' => return Err(unread_regex("an anchor inside")),
            '*' | '+' | '?' | '{' => {
                return Err(unread_regex("a quantifier with nothing before it"));
            }
            c => Expr::Lit(c.to_string()),
        })
    }

    /// An escape after `\` (`in_class`: inside `[…]`, where `\b` is a backspace).
    fn escape(&mut self, in_class: bool) -> Result<Escape, Unreadable> {
        let c = *self
            .c
            .get(self.i)
            .ok_or_else(|| unread_regex("a trailing backslash"))?;
        self.i += 1;
        Ok(match c {
            'd' => Escape::Set(false, DIGITS),
            'D' => Escape::Set(true, DIGITS),
            'w' => Escape::Set(false, WORD),
            'W' => Escape::Set(true, WORD),
            's' => Escape::Set(false, SPACE),
            'S' => Escape::Set(true, SPACE),
            'n' => Escape::Char('\n'),
            't' => Escape::Char('\t'),
            'r' => Escape::Char('\r'),
            'f' => Escape::Char('\u{c}'),
            'v' => Escape::Char('\u{b}'),
            '0' => Escape::Char('\0'),
            'b' if in_class => Escape::Char('\u{8}'),
            'x' | 'u' => {
                let n = if c == 'x' { 2 } else { 4 };
                let hex: String = self
                    .c
                    .get(self.i..self.i + n)
                    .unwrap_or(&[])
                    .iter()
                    .collect();
                self.i += n;
                let ch = u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| unread_regex("this hex escape"))?;
                Escape::Char(ch)
            }
            c if c.is_ascii_alphanumeric() => {
                return Err(unread_regex(&format!("the escape \\{c}")));
            }
            c => Escape::Char(c),
        })
    }

    fn class(&mut self) -> Result<Expr, Unreadable> {
        let negated = self.c.get(self.i) == Some(&'^');
        if negated {
            self.i += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(&c) = self.c.get(self.i) else {
                return Err(unread_regex("an unclosed class"));
            };
            self.i += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = match c {
                '\\' => match self.escape(true)? {
                    Escape::Char(c) => c,
                    Escape::Set(false, set) => {
                        ranges.extend_from_slice(set);
                        continue;
                    }
                    Escape::Set(true, _) => {
                        return Err(unread_regex("a negated set inside a class"));
                    }
                },
                '[' if self.c.get(self.i) == Some(&':') => {
                    return Err(unread_regex("a POSIX class"));
                }
                c => c,
            };
            if self.c.get(self.i) == Some(&'-') && self.c.get(self.i + 1).is_some_and(|&n| n != ']')
            {
                self.i += 1;
                let hi = match self.c[self.i] {
                    '\\' => {
                        self.i += 1;
                        match self.escape(true)? {
                            Escape::Char(c) => c,
                            Escape::Set(..) => return Err(unread_regex("a set as a range's end")),
                        }
                    }
                    c => {
                        self.i += 1;
                        c
                    }
                };
                if hi < lo {
                    return Err(unread_regex("a reversed range"));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Expr::Class { negated, ranges })
    }
}

enum Escape {
    Char(char),
    Set(bool, &'static [(char, char)]),
}

impl Escape {
    fn into_expr(self) -> Expr {
        match self {
            Escape::Char(c) => Expr::Lit(c.to_string()),
            Escape::Set(negated, set) => Expr::Class {
                negated,
                ranges: set.to_vec(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lark_of(text: &str) -> Result<ReadGrammar, Unreadable> {
        InputGrammar {
            syntax: InputSyntax::Lark,
            definition: text.into(),
        }
        .read()
    }

    #[test]
    fn the_subset_tools_use_is_read_and_the_rest_said() {
        let g = lark_of(
            "start: a+ b? // comment\n?a: \"x\" | \"y\" -> why\n  | /[0-9]{2}/\nb: (\"p\" LF)~2..3 [\"q\"]\n%import common.LF\n",
        )
        .unwrap();
        assert_eq!(g.rules.len(), 4);
        for (text, why) in [
            ("start: a\n%ignore WS", "%ignore"),
            ("start: \"a\"i", "case-insensitive"),
            ("start: /a/i", "flags"),
            ("start: b", "never defines"),
            ("a: \"x\"", "no start"),
            ("start: /(?=a)/", "lookaround"),
            ("start: x\n%import common.FOO", "common.FOO"),
        ] {
            let e = lark_of(text).unwrap_err();
            assert!(e.0.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn a_class_inside_a_json_string_keeps_its_plain_characters_and_escapes_the_rest() {
        let n = escaped_class(false, &[(' ', '~')]);
        let Node::Alt(alts) = n else { panic!("{n:?}") };
        assert_eq!(alts[0], Node::class(&[(' ', '!'), ('#', '['), (']', '~')]));
        assert!(alts.contains(&Node::lit("\\\"")));
        assert!(alts.contains(&Node::lit("\\\\")));
        assert!(!alts.contains(&Node::lit("\\n")));
        assert_eq!(json_escape("a\"b\nc"), "a\\\"b\\nc");
    }
}
