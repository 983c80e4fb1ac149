//! `json` (and the JSON half of `llama`): a bare object `{"name", "arguments"|"parameters"}`
//! or an array of them. Ordinary JSON (data, configs) must not become a call (R-4): the
//! object may only carry call keys, must have an arguments key, and with a registry the
//! name must be registered. Objects using `parameters` are attributed to `llama` when that
//! format comes first in the priority order.

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::text_example::name_arguments;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};
use crate::shape::{Piece, Shape};

/// The values of a call object's keys; `None` from [`CallKeys::of`] when it has any other
/// key. One pass over the (few) entries: cheaper than a hashed lookup per key, which
/// showed in the profile of replies with many calls.
#[derive(Default)]
struct CallKeys<'a> {
    name: Option<&'a Value>,
    arguments: Option<&'a Value>,
    parameters: Option<&'a Value>,
    id: Option<&'a Value>,
    call_id: Option<&'a Value>,
    kind: Option<&'a Value>,
}

impl<'a> CallKeys<'a> {
    /// `late_ids`: whether an id written after the arguments is the call's id. Where calls
    /// stream, a call is announced (under a generated id) when its arguments start, so an
    /// id after them cannot be its id, and reading the text whole must give the same call
    /// (R-1). Keys come in document order (`preserve_order`).
    fn of(entries: impl IntoIterator<Item = (&'a str, &'a Value)>, late_ids: bool) -> Option<Self> {
        let mut k = CallKeys::default();
        let mut after_args = false;
        for (key, v) in entries {
            let slot = match key {
                "name" => &mut k.name,
                "arguments" => &mut k.arguments,
                "parameters" => &mut k.parameters,
                "id" | "call_id" if after_args && !late_ids => continue,
                "id" => &mut k.id,
                "call_id" => &mut k.call_id,
                "type" => &mut k.kind,
                _ => return None,
            };
            *slot = Some(v);
            after_args |= matches!(key, "arguments" | "parameters");
        }
        Some(k)
    }
}

/// The draft for one call object, without its name and arguments, the name, and the key
/// holding the arguments: the caller moves both out once every object of the value is
/// accepted (no clone).
fn draft<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a Value)>,
    format: FormatId,
    need_args: bool,
) -> Option<(Draft, &'a str, Option<Key>)> {
    // Mistral's `[TOOL_CALLS][…]` list writes its ids after the arguments and is never
    // announced before it is complete.
    let keys = CallKeys::of(entries, format == FormatId::MISTRAL)?;
    if let Some(t) = keys.kind
        && t.as_str() != Some("function")
    {
        return None;
    }
    let name = keys.name?.as_str()?;
    let (key, args) = match (keys.arguments, keys.parameters) {
        (Some(a), None) => {
            if format == FormatId::LLAMA && need_args {
                return None;
            }
            (Some(Key::Arguments), Some(a))
        }
        (None, Some(p)) => (Some(Key::Parameters), Some(p)),
        (None, None) if !need_args => (None, None),
        _ => return None,
    };
    if let Some(a) = args
        && !(a.is_object() || a.is_string() || a.is_null())
    {
        return None;
    }
    let mut d = Draft::new(String::new(), None, format);
    d.id = keys
        .id
        .or(keys.call_id)
        .and_then(Value::as_str)
        .map(toolcall_core::CallId::from);
    Some((d, name, key))
}

/// Moves the name and the arguments (under `key`) of an accepted call object into its
/// draft: one pass over the object's few entries.
fn take_parts(d: &mut Draft, m: &mut Map<String, Value>, key: Option<Key>) {
    for (k, v) in m.iter_mut() {
        if key.is_some_and(|key| k == key.as_str()) {
            d.args = Some(v.take());
        } else if k == "name"
            && let Value::String(name) = v
        {
            d.name = std::mem::take(name);
        }
    }
}

/// Whether one call object (its entries in document order) is a call: its draft (pushed
/// on `out`, without name and arguments) and the key holding its arguments. The one rule
/// of [`classify`] and [`classify_doc`].
fn accept<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a Value)>,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: &Range<usize>,
    out: &mut Outcome,
) -> Option<Option<Key>> {
    let (mut d, name, key) = draft(entries, format, !lenient)?;
    if lenient {
        out.diagnostics
            .extend(ctx.unknown_name_warning(name, span.clone()));
    } else if !ctx.strict_name_ok(name) {
        return None;
    }
    d.span = span.clone();
    // One object's draft: room for one (a push would make room for four); a list that
    // has calls already (a chain's) grows as a push grows it.
    room(out, 1);
    out.drafts.push(d);
    Some(key)
}

fn map_entries(m: &Map<String, Value>) -> impl Iterator<Item = (&str, &Value)> {
    m.iter().map(|(k, v)| (k.as_str(), v))
}

/// `lenient`: inside explicit markup (any name, arguments optional, flagged if unknown).
/// On a match the names and arguments are moved out of `v`; on `None`, `v` is untouched.
pub(crate) fn classify(
    v: &mut Value,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: Range<usize>,
) -> Option<Outcome> {
    let mut out = Outcome::default();
    classify_into(v, ctx, format, lenient, span, &mut out).then_some(out)
}

/// [`classify`], its calls and findings added to `out` (a chain of calls' one list);
/// `false`, `out` as it was, when `v` is not calls.
pub(crate) fn classify_into(
    v: &mut Value,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: Range<usize>,
    out: &mut Outcome,
) -> bool {
    let marks = Marks::of(out);
    let ok = (|| {
        match v {
            Value::Object(m) => {
                let key = accept(map_entries(m), ctx, format, lenient, &span, out)?;
                if let Some(d) = out.drafts.get_mut(marks.drafts) {
                    take_parts(d, m, key);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                room(out, a.len());
                let mut keys = Vec::with_capacity(a.len());
                for e in a.iter() {
                    let m = e.as_object()?;
                    keys.push(accept(map_entries(m), ctx, format, lenient, &span, out)?);
                }
                let drafts = out.drafts.get_mut(marks.drafts..).unwrap_or_default();
                for ((d, key), e) in drafts.iter_mut().zip(keys).zip(a.iter_mut()) {
                    if let Value::Object(m) = e {
                        take_parts(d, m, key);
                    }
                }
            }
            _ => return None,
        }
        Some(())
    })()
    .is_some();
    marks.keep_if(ok, out)
}

/// Room for `n` more calls in `out`: exactly `n` in a fresh list, as a push grows a list
/// that has calls already (a chain's).
fn room(out: &mut Outcome, n: usize) {
    if out.drafts.capacity() == 0 {
        out.drafts.reserve_exact(n);
    } else {
        out.drafts.reserve(n);
    }
}

/// How long an outcome's lists were before a value was offered to it.
#[derive(Clone, Copy)]
struct Marks {
    drafts: usize,
    diagnostics: usize,
}

impl Marks {
    fn of(out: &Outcome) -> Self {
        Marks {
            drafts: out.drafts.len(),
            diagnostics: out.diagnostics.len(),
        }
    }

    /// `ok`; when not, what the value added to `out` is taken back.
    fn keep_if(self, ok: bool, out: &mut Outcome) -> bool {
        if !ok {
            out.drafts.truncate(self.drafts);
            out.diagnostics.truncate(self.diagnostics);
        }
        ok
    }
}

/// [`classify`] of a value decoded as a [`CallsDoc`]: what `classify` gives for
/// `doc.into_value()` (the same rule, [`accept`], over the same entries in the same
/// order), without building the call objects' maps. On `None`, `doc` is untouched.
pub(crate) fn classify_doc(
    doc: &mut CallsDoc,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: Range<usize>,
) -> Option<Outcome> {
    let mut out = Outcome::default();
    classify_doc_into(doc, ctx, format, lenient, span, &mut out).then_some(out)
}

/// [`classify_doc`], its calls and findings added to `out`; `false`, `out` as it was,
/// when `doc` is not calls.
pub(crate) fn classify_doc_into(
    doc: &mut CallsDoc,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: Range<usize>,
    out: &mut Outcome,
) -> bool {
    let marks = Marks::of(out);
    let ok = (|| {
        match doc {
            CallsDoc::One(o) => {
                let key = accept(o.entries(), ctx, format, lenient, &span, out)?;
                if let Some(d) = out.drafts.get_mut(marks.drafts) {
                    o.take_parts(d, key);
                }
            }
            CallsDoc::Many(list) if !list.is_empty() => {
                room(out, list.len());
                let mut keys = Vec::with_capacity(list.len());
                for o in list.iter() {
                    keys.push(accept(o.entries(), ctx, format, lenient, &span, out)?);
                }
                let drafts = out.drafts.get_mut(marks.drafts..).unwrap_or_default();
                for ((d, key), o) in drafts.iter_mut().zip(keys).zip(list.iter_mut()) {
                    o.take_parts(d, key);
                }
            }
            CallsDoc::Many(_) => return None,
        }
        Some(())
    })()
    .is_some();
    marks.keep_if(ok, out)
}

/// A key of a call object read typed: those [`CallKeys::of`] reads, and `tools` (the one
/// key of a `tools_envelope`). Any other key fails the decode with a data error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Name,
    Arguments,
    Parameters,
    Id,
    CallId,
    Type,
    Tools,
}

impl Key {
    fn as_str(self) -> &'static str {
        match self {
            Key::Name => "name",
            Key::Arguments => "arguments",
            Key::Parameters => "parameters",
            Key::Id => "id",
            Key::CallId => "call_id",
            Key::Type => "type",
            Key::Tools => "tools",
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key of a call object")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "name" => Key::Name,
                    "arguments" => Key::Arguments,
                    "parameters" => Key::Parameters,
                    "id" => Key::Id,
                    "call_id" => Key::CallId,
                    "type" => Key::Type,
                    "tools" => Key::Tools,
                    _ => return Err(E::custom("not a call key")),
                })
            }
        }
        // How `Value` reads a key (`deserialize_str`), so the same texts decode.
        d.deserialize_str(KeyVisitor)
    }
}

/// What a reader of call objects keeps of one object's entries, as the one typed
/// visitor ([`CallObjVisitor`]) hands them over in document order. Each reader keeps its
/// own rule for a repeated or unwanted key: [`CallObj`] (bare JSON, `[TOOL_CALLS]`,
/// `<|python_tag|>`, Hermes) refuses a repeated key and `tools`, leaving the object to the
/// `Value` path; `tools_envelope`'s entries keep a repeated key's last value, as the
/// decoded map does, and refuse `type` and `tools`.
pub(crate) trait CallEntries: Default {
    /// What the object decodes to.
    type Out;
    /// Reads the value of `key` from `m` (the next value); an error refuses the object.
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: Key, m: &mut A) -> Result<(), A::Error>;
    /// The object once every entry is read; an error refuses it.
    fn finish<E: de::Error>(self) -> Result<Self::Out, E>;
}

/// The one serde visitor of call objects: keys as [`Key`], entries to `T`.
pub(crate) struct CallObjVisitor<T>(std::marker::PhantomData<T>);

impl<T> CallObjVisitor<T> {
    pub(crate) fn new() -> Self {
        CallObjVisitor(std::marker::PhantomData)
    }
}

impl<'de, T: CallEntries> Visitor<'de> for CallObjVisitor<T> {
    type Value = T::Out;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a call object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<T::Out, A::Error> {
        let mut o = T::default();
        while let Some(k) = m.next_key::<Key>()? {
            o.entry(k, &mut m)?;
        }
        o.finish()
    }
}

/// A JSON object with only call keys, each once, decoded without a map: its entries in
/// document order, the first two (a call's usual `name` and `arguments`) inline. Any other
/// object fails its decode with a data error (see
/// [`crate::scanner::decode_calls_prefix`], which then decodes a `Value`).
#[derive(Debug, Default)]
pub(crate) struct CallObj {
    head: [Option<(Key, Value)>; 2],
    /// The entries after the first two.
    tail: Vec<(Key, Value)>,
}

impl CallObj {
    /// The object of exactly two entries, `first` then `second` (two different keys), as
    /// decoding its text gives it: for a reader that read them itself (a streamed list of
    /// calls, `args_object::LiveList`).
    pub(crate) fn pair(first: (Key, Value), second: (Key, Value)) -> Self {
        CallObj {
            head: [Some(first), Some(second)],
            tail: Vec::new(),
        }
    }

    /// The entries in document order, as a `Map` of the object iterates them.
    fn entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.head
            .iter()
            .flatten()
            .chain(&self.tail)
            .map(|(k, v)| (k.as_str(), v))
    }

    /// [`take_parts`] of the object's map.
    fn take_parts(&mut self, d: &mut Draft, key: Option<Key>) {
        for (k, v) in self.head.iter_mut().flatten().chain(&mut self.tail) {
            if Some(*k) == key {
                d.args = Some(v.take());
            } else if *k == Key::Name
                && let Value::String(name) = v
            {
                d.name = std::mem::take(name);
            }
        }
    }

    /// The `Value` that decoding the object's text gives.
    fn into_value(self) -> Value {
        let mut m = Map::new();
        for (k, v) in self.head.into_iter().flatten().chain(self.tail) {
            m.insert(k.as_str().to_owned(), v);
        }
        Value::Object(m)
    }
}

impl CallEntries for CallObj {
    type Out = CallObj;
    #[inline(always)]
    fn entry<'de, A: MapAccess<'de>>(&mut self, k: Key, m: &mut A) -> Result<(), A::Error> {
        if k == Key::Tools {
            // An envelope's key, no call's: the object is read as a `Value`.
            return Err(de::Error::custom("not a call key"));
        }
        if self.head.iter().flatten().chain(&self.tail).any(|(seen, _)| *seen == k) {
            // A `Map` keeps the first place and the last value: left to it.
            return Err(de::Error::custom("a call key written twice"));
        }
        let entry = (k, m.next_value::<Value>()?);
        match &mut self.head {
            [first @ None, _] => *first = Some(entry),
            [_, second @ None] => *second = Some(entry),
            _ => self.tail.push(entry),
        }
        Ok(())
    }
    #[inline(always)]
    fn finish<E: de::Error>(self) -> Result<CallObj, E> {
        Ok(self)
    }
}

impl<'de> Deserialize<'de> for CallObj {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CallObjVisitor::<CallObj>::new())
    }
}

/// A call object or a list of them, decoded by the typed path of
/// [`crate::scanner::decode_calls_prefix`].
#[derive(Debug)]
pub(crate) enum CallsDoc {
    /// Boxed: the decoded value is moved a dozen times on its way to the classifier (serde's
    /// visitor, the stream deserializer's result, the reader's option), a copy of the
    /// whole object each time while it was inline (~280 instructions a call against the
    /// box's ~120; llama/small −3 %).
    One(Box<CallObj>),
    Many(Vec<CallObj>),
}

impl CallsDoc {
    /// The `Value` that decoding the same text gives.
    pub(crate) fn into_value(self) -> Value {
        match self {
            CallsDoc::One(o) => o.into_value(),
            CallsDoc::Many(list) => Value::Array(list.into_iter().map(CallObj::into_value).collect()),
        }
    }
}

impl<'de> Deserialize<'de> for CallsDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DocVisitor;
        impl<'de> Visitor<'de> for DocVisitor {
            type Value = CallsDoc;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a call object or a list of them")
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<CallsDoc, A::Error> {
                CallObjVisitor::<CallObj>::new()
                    .visit_map(m)
                    .map(|o| CallsDoc::One(Box::new(o)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<CallsDoc, A::Error> {
                let mut list = Vec::new();
                while let Some(o) = s.next_element::<CallObj>()? {
                    list.push(o);
                }
                Ok(CallsDoc::Many(list))
            }
        }
        d.deserialize_any(DocVisitor)
    }
}

/// A value at the start of a region as [`crate::scanner::decode_calls_prefix`] gives it:
/// typed when it has the shape of calls, else the general `Value`.
#[derive(Debug)]
pub(crate) enum Decoded {
    Calls(CallsDoc),
    Value(Value),
}

impl Decoded {
    /// [`classify`] of the decoded value.
    pub(crate) fn classify(
        self,
        ctx: &Ctx,
        format: FormatId,
        lenient: bool,
        span: Range<usize>,
    ) -> Option<Outcome> {
        match self {
            Decoded::Calls(mut doc) => classify_doc(&mut doc, ctx, format, lenient, span),
            Decoded::Value(mut v) => classify(&mut v, ctx, format, lenient, span),
        }
    }

    /// [`Decoded::classify`], its calls and findings added to `out`; `false`, `out` as it
    /// was, when the value is not calls.
    pub(crate) fn classify_into(
        self,
        ctx: &Ctx,
        format: FormatId,
        lenient: bool,
        span: Range<usize>,
        out: &mut Outcome,
    ) -> bool {
        match self {
            Decoded::Calls(mut doc) => classify_doc_into(&mut doc, ctx, format, lenient, span, out),
            Decoded::Value(mut v) => classify_into(&mut v, ctx, format, lenient, span, out),
        }
    }
}

/// A JSON list of calls that the end of the input cut (`[{…}, {…}, {"na`), a `tools`
/// envelope whose list was cut (`{"tools": [{…}, {"na`), or objects one a line cut inside
/// a later one (`{…}\n{…}\n{"na`, Cohere's second layout): each entry stands alone, so the
/// complete ones before the cut are calls and the cut one is reported (issue 20: whole and
/// streamed agree).
#[derive(Debug)]
pub(crate) struct CutList {
    /// The complete entries, re-wrapped as the value they were cut from (`[e1,e2]`,
    /// `{"tools":[e1,e2]}`), for the family's own classifier.
    pub json: String,
    /// Complete entries.
    pub entries: usize,
    /// Offset in the text of the entry the cut fell in (`None`: every entry is whole and
    /// only the closing brackets are missing).
    pub cut: Option<usize>,
}

impl CutList {
    /// The finding for the cut: an error naming the entry not run, or a warning that only
    /// the closing brackets were missing.
    pub(crate) fn diagnostic(&self, span: Range<usize>) -> toolcall_core::Diagnostic {
        match self.cut {
            Some(_) => toolcall_core::Diagnostic::error(
                format!(
                    "truncated tool call: the list of calls ends inside entry {}, which is not run; the {} complete call(s) before it are",
                    self.entries + 1,
                    self.entries
                ),
                span,
            ),
            None => toolcall_core::Diagnostic::warning(
                format!(
                    "the list of calls is not closed before the end of output; its {} complete call(s) are run",
                    self.entries
                ),
                span,
            ),
        }
    }
}

/// Reads `text` (starting at its `[` or `{`, the end of the input) as a cut list of calls
/// (see [`CutList`]); `None` when it is not one: another value, a list whose `]` came or
/// objects one a line all whole (the family's rules for a missing closing marker decide),
/// no complete entry, or an entry that is malformed rather than cut. One pass over the
/// bytes.
pub(crate) fn cut_list(text: &str, max_depth: usize) -> Option<CutList> {
    use crate::scanner::{Scan, Scanner};
    let bytes = text.as_bytes();
    let skip = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    // `lines`: objects one after another, each on its own line, no list around them.
    let (mut at, envelope, lines) = match bytes.first()? {
        b'[' => (1, false, false),
        b'{' => {
            let i = skip(1);
            let key = b"\"tools\"";
            if !bytes.get(i..)?.starts_with(key) {
                (0, false, true)
            } else {
                let i = skip(i + key.len());
                if bytes.get(i) != Some(&b':') {
                    return None;
                }
                let i = skip(i + 1);
                if bytes.get(i) != Some(&b'[') {
                    return None;
                }
                (i + 1, true, false)
            }
        }
        _ => return None,
    };
    let mut entries: Vec<&str> = Vec::new();
    let cut = loop {
        let before = at;
        at = skip(at);
        if lines && !entries.is_empty() {
            match bytes.get(at) {
                // Whole objects up to the end: not cut.
                None => return None,
                Some(b'{') if bytes[before..at].contains(&b'\n') => {}
                Some(_) => return None,
            }
        } else if !entries.is_empty() {
            match bytes.get(at) {
                Some(b',') => at = skip(at + 1),
                None => break None,
                Some(_) => return None,
            }
        }
        match bytes.get(at) {
            Some(b'{') => {}
            None => break None,
            Some(_) => return None,
        }
        let rest = bytes.get(at..)?;
        match Scanner::new(max_depth.saturating_sub(1).max(1), false).advance(rest) {
            Scan::Done(n) => {
                entries.push(text.get(at..at + n)?);
                at += n;
            }
            Scan::NeedMore => break Some(at),
            Scan::Fail(_) => return None,
        }
    };
    if entries.is_empty() {
        return None;
    }
    let list = entries.join(",");
    let json = if envelope {
        format!("{{\"tools\":[{list}]}}")
    } else {
        format!("[{list}]")
    };
    Some(CutList {
        json,
        entries: entries.len(),
        cut,
    })
}

impl FormatId {
    pub(crate) const JSON: FormatId = FormatId::builtin("json");
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::whole_reply(&[Piece::NAME_ARGUMENTS]);

fn classify_json(v: &mut Value, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, format, false, cx.span.clone())
}

/// [`classify_json`] of a value decoded as call objects (the typed path of bare JSON).
pub(crate) fn classify_calls(doc: &mut CallsDoc, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    classify_doc(doc, cx.ctx, format, false, cx.span.clone())
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    name_arguments(name, args)
}

pub(crate) static JSON: Described = Described {
    id: FormatId::JSON,
    description: "a bare JSON object or array of {name, arguments|parameters}",
    example: r#"{"name":"get_weather","arguments":{"city":"Paris"}}"#,
    bare: Some(Bare {
        objects: true,
        arrays: true,
        classify: classify_json,
        calls: Some(classify_calls),
        needs: JsonNeeds {
            objects: &[&["name", "arguments"], &["name", "parameters"]],
            elements: &[&["name", "arguments"], &["name", "parameters"]],
        },
    }),
    generic_because: Some("bare JSON calls, written by many models and prompts"),
    instructions: Some(Instructions {
        how: "To call a tool, reply with only a JSON object {\"name\": TOOL_NAME, \"arguments\": {...}}.",
        several: "- Make one call per reply.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::{decode_calls_prefix, decode_prefix};
    use std::sync::Arc;
    use toolcall_core::{Registry, ToolSpec};

    /// Call objects and lists of every shape `classify` tells apart, and values that are
    /// not calls: (text, whether the typed decode should keep it).
    const SHAPES: &[(&str, bool)] = &[
        (r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#, true),
        (r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#, true),
        (r#"{"arguments": {"city": "Paris"}, "name": "get_weather"}"#, true),
        (r#"{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}"#, true),
        (r#"{"name": "get_weather", "arguments": null}"#, true),
        (r#"{"name": "get_weather", "arguments": [1, 2]}"#, true),
        (r#"{"name": "get_weather", "arguments": 3}"#, true),
        (r#"{"name": "get_weather"}"#, true),
        (r#"{"name": "unknown_tool", "arguments": {}}"#, true),
        (r#"{"name": 7, "arguments": {}}"#, true),
        (r#"{"name": null, "arguments": {}}"#, true),
        (r#"{"name": "get_weather", "arguments": {}, "parameters": {}}"#, true),
        (r#"{"id": "c1", "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"name": "get_weather", "arguments": {}, "id": "c1"}"#, true),
        (r#"{"name": "get_weather", "arguments": {}, "call_id": "c2"}"#, true),
        (r#"{"call_id": "c2", "id": "c1", "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"id": 5, "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"type": "function", "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"type": "tool", "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"type": null, "name": "get_weather", "arguments": {}}"#, true),
        (r#"{"na\u006de": "get_weather", "arguments": {}}"#, false),
        (r#"{"name": "get_\u0077eather", "arguments": {"a": "\u00e9"}}"#, true),
        (r#"{}"#, false),
        (r#"[]"#, false),
        (r#"[ {"name": "get_weather"}, {"parameters": {}, "id": 1}]"#, true),
        (r#"[{}, {"name": "get_weather"}]"#, false),
        (r#"[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "unknown_tool", "parameters": {}}]"#, true),
        (r#"[{"name": "get_weather", "arguments": {}}, {"name": 1, "arguments": {}}]"#, true),
        (r#"[{"name": "get_weather", "arguments": {}, "id": "a"}, {"id": "b", "name": "get_weather"}]"#, true),
        (r#"[{"name": "get_weather", "arguments": {}}, {}]"#, true),
        // Not the typed shape: decoded as a `Value`.
        (r#"{"name": "get_weather", "arguments": {}, "extra": 1}"#, false),
        (r#"{"name": "get_weather", "name": "other", "arguments": {}}"#, false),
        (r#"{"arguments": {}, "name": "a", "arguments": {"x": 1}, "id": "c"}"#, false),
        (r#"{"$serde_json::private::RawValue": "{\"name\": \"get_weather\", \"arguments\": {}}"}"#, false),
        (r#"{"tools": [{"name": "get_weather", "arguments": {}}]}"#, false),
        // `tools` is a key of the one call-object visitor (an envelope's), no call's.
        (r#"{"name": "get_weather", "tools": [], "arguments": {}}"#, false),
        (r#"[{"name": "get_weather", "arguments": {}}, {"name": "a", "tools": 1}]"#, false),
        (r#"{"function": {"name": "get_weather", "arguments": "{}"}, "type": "function"}"#, false),
        (r#"[{"name": "get_weather", "arguments": {}}, "text"]"#, false),
        (r#"[{"name": "get_weather", "arguments": {}}, [1]]"#, false),
        (r#"[1, 2]"#, false),
        (r#"[{"name": "get_weather", "arguments": {}}, {"name": "get_weather", "Arguments": {}}]"#, false),
    ];

    /// Not JSON, cut, or JSON the typed decode must leave unread exactly as `Value` does.
    const FAILS: &[&str] = &[
        r#"{"name": "get_weather", "arguments": {}"#,
        r#"[{"name": "get_weather", "arguments": {}},"#,
        r#"{"name": "get_weather", "arguments": {},}"#,
        r#"{"name": 'get_weather', "arguments": {}}"#,
        r#"{"name": "get_weather" "arguments": {}}"#,
        r#"[{"name": "get_weather", "arguments": {"$serde_json::private::RawValue": 5}}]"#,
        r#"{"$serde_json::private::RawValue": "{", "name": "x"}"#,
        r#"{"name": "x", "extra": }"#,
        r#"[{"name": "x"}, {"other": 1,}]"#,
        r#"{"name""#,
        r#"[x]"#,
        r#"{name: "x"}"#,
    ];

    fn contexts() -> Vec<Ctx> {
        let (plain, _) = crate::ParseOptions::default().ctx();
        let mut r = Registry::new();
        let schema = serde_json::json!({"type": "object", "properties": {}});
        assert!(
            r.add_spec(ToolSpec::new("get_weather", "weather", schema))
                .is_ok()
        );
        let (registered, _) = crate::ParseOptions {
            tools: Some(Arc::new(r)),
            ..crate::ParseOptions::default()
        }
        .ctx();
        vec![plain, registered]
    }

    // The typed decode of call-shaped JSON and its classification give what the `Value`
    // decode and `classify` give: the same end, the same value, the same outcome (drafts,
    // names, arguments, ids, diagnostics) for every format and strictness that reads it.
    #[test]
    fn typed_calls_agree_with_the_value_path() {
        let ctxs = contexts();
        for &(text, typed) in SHAPES {
            for tail in ["", " trailing", "; {\"name\": \"x\"}", "]"] {
                let region = format!("{text}{tail}");
                let Some((n, v)) = decode_prefix(&region, 128) else {
                    panic!("{region}: the test's JSON does not decode");
                };
                let Some((m, d)) = decode_calls_prefix(&region, 128) else {
                    panic!("{region}: the typed decode refused what Value reads");
                };
                assert_eq!(n, m, "{region}: ends differ");
                assert_eq!(
                    matches!(d, Decoded::Calls(_)),
                    typed,
                    "{region}: the typed decode kept {d:?}"
                );
                if tail.is_empty() {
                    // Hermes decodes a scanned value whole: `parse_lenient` reads the same.
                    assert_eq!(n, region.len());
                    let lenient = crate::repair::parse_lenient(&region).map(|(v, _)| v);
                    assert_eq!(lenient.as_ref(), Ok(&v), "{region}: parse_lenient differs");
                }
                for format in [
                    FormatId::MISTRAL,
                    FormatId::LLAMA,
                    FormatId::JSON,
                    FormatId::HERMES,
                ] {
                    for lenient in [true, false] {
                        for ctx in &ctxs {
                            let Some((_, d)) = decode_calls_prefix(&region, 128) else {
                                panic!("{region}: decodes once, not twice");
                            };
                            let got = d.classify(ctx, format, lenient, 3..n);
                            let want = classify(&mut v.clone(), ctx, format, lenient, 3..n);
                            assert_eq!(
                                format!("{got:?}"),
                                format!("{want:?}"),
                                "{region}: {format:?} lenient={lenient}"
                            );
                        }
                    }
                }
                let back = match d {
                    Decoded::Calls(doc) => doc.into_value(),
                    Decoded::Value(v) => v,
                };
                assert_eq!(back, v, "{region}: values differ");
                // Key order too (`preserve_order`): the same text when written.
                assert_eq!(back.to_string(), v.to_string(), "{region}: key order differs");
            }
        }
    }

    // What `Value` does not decode, the typed decode does not either (the reader then
    // scans and repairs as before).
    #[test]
    fn typed_decode_fails_where_value_fails() {
        for text in FAILS {
            assert!(decode_prefix(text, 128).is_none(), "{text}: decodes as Value");
            assert!(
                decode_calls_prefix(text, 128).is_none(),
                "{text}: the typed decode read it"
            );
        }
        // Nesting past serde's limit, inside arguments and as the list itself.
        let deep = format!(
            "{{\"name\": \"x\", \"arguments\": {}{}}}",
            "[".repeat(127),
            "]".repeat(127)
        );
        assert!(decode_prefix(&deep, 128).is_none());
        assert!(decode_calls_prefix(&deep, 128).is_none());
        let fits = format!(
            "{{\"name\": \"x\", \"arguments\": {}{}}}",
            "[".repeat(125),
            "]".repeat(125)
        );
        assert_eq!(
            decode_prefix(&fits, 128).map(|(n, _)| n),
            decode_calls_prefix(&fits, 128).map(|(n, _)| n)
        );
        assert!(decode_calls_prefix(&fits, 128).is_some());
    }

    // Bare JSON: the families offered a typed value in priority order answer what they
    // answer for the `Value` (`classify_decoded` against `classify_value`), whichever
    // families are enabled and in whatever order, and an unclaimed value comes back whole.
    #[test]
    fn bare_typed_calls_agree_with_classify_value() {
        let mut r = Registry::new();
        let schema = serde_json::json!({"type": "object", "properties": {}});
        assert!(
            r.add_spec(ToolSpec::new("get_weather", "weather", schema))
                .is_ok()
        );
        let r = Arc::new(r);
        let own = |names: &[&str]| {
            crate::FormatSelection::Priority(names.iter().map(|n| n.to_string()).collect())
        };
        let selections = [
            crate::FormatSelection::Auto,
            crate::FormatSelection::Only("json".into()),
            crate::FormatSelection::Only("llama".into()),
            crate::FormatSelection::Only("xlam".into()),
            own(&["llama", "json"]),
            own(&["xlam", "tools_envelope", "json"]),
            own(&["openai_chat", "llama"]),
        ];
        for &(text, _) in SHAPES {
            let Some((_, v)) = decode_prefix(text, 128) else {
                panic!("{text}: the test's JSON does not decode");
            };
            for format in &selections {
                for tools in [None, Some(r.clone())] {
                    let (ctx, _) = crate::ParseOptions {
                        format: format.clone(),
                        tools,
                        ..Default::default()
                    }
                    .ctx();
                    for at_start in [true, false] {
                        let Some((_, d)) = decode_calls_prefix(text, 128) else {
                            panic!("{text}: the typed decode refused what Value reads");
                        };
                        let got = super::super::classify_decoded(d, &ctx, at_start, 0..4);
                        let mut w = v.clone();
                        let want = super::super::classify_value(&mut w, &ctx, at_start, 0..4);
                        match (got, want) {
                            (Ok(g), Some(w)) => {
                                assert_eq!(format!("{g:?}"), format!("{w:?}"), "{text} {format:?}")
                            }
                            (Err(back), None) => assert_eq!(back, v, "{text} {format:?}"),
                            (got, want) => panic!("{text} {format:?}: {got:?} against {want:?}"),
                        }
                    }
                }
            }
        }
    }
}
