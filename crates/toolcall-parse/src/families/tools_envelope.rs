//! `tools_envelope` (F-JSON-1..4): `{"tools":[{"name","arguments"}, ...]}`, in a
//! fence or raw in prose; every entry, in order. The envelope is specific enough to accept
//! any tool name (unknown ones are flagged); the executor answers them with `unknown_tool`.
//! An object with other top-level keys, or entries carrying `type`/`description`/`function`
//! (a tools *definition* list), is not an envelope (R-4).

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};
use std::ops::Range;

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value, json};

use super::json::{CallEntries, CallObjVisitor, Key};
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};
use crate::scanner::SERDE_MAX_DEPTH;

/// On a match the names, ids and arguments are moved out of `v`; on `None`, `v` is
/// untouched.
///
/// Each entry's few keys are walked in order rather than looked up (a lookup in the
/// order-preserving map hashes the key): one read-only pass checks the shape of every
/// entry, then one pass moves what the drafts keep out of the value, so a call costs no
/// copy of its name, id or arguments.
pub(crate) fn classify(v: &mut Value, ctx: &Ctx, span: Range<usize>) -> Option<Outcome> {
    let Value::Object(m) = v else {
        return None;
    };
    // Only the `tools` key, holding a non-empty list of entries.
    if m.len() != 1 {
        return None;
    }
    let (key, list) = m.iter_mut().next()?;
    let Value::Array(entries) = list else {
        return None;
    };
    if key != "tools" || entries.is_empty() || !entries.iter().all(entry_shape) {
        return None;
    }
    let mut out = Outcome {
        drafts: Vec::with_capacity(entries.len()),
        ..Outcome::default()
    };
    for e in entries.iter_mut() {
        let Value::Object(e) = e else {
            continue; // `entry_shape` said every entry is an object
        };
        let mut name = String::new();
        let (mut args, mut params, mut id, mut call_id) = (None, None, None, None);
        for (k, val) in e.iter_mut() {
            match k.as_str() {
                "name" => {
                    if let Value::String(s) = val {
                        name = std::mem::take(s);
                    }
                }
                "arguments" => args = Some(val),
                "parameters" => params = Some(val),
                "id" => id = Some(val),
                "call_id" => call_id = Some(val),
                _ => {}
            }
        }
        out.diagnostics
            .extend(ctx.unknown_name_warning(&name, span.clone()));
        // `arguments` wins over `parameters`; `id` over `call_id`, even when it is no
        // string (then the call has no id of the model's).
        let mut d = Draft::new(
            name,
            args.or(params).map(Value::take),
            FormatId::TOOLS_ENVELOPE,
        );
        d.id = match id.or(call_id) {
            Some(Value::String(s)) => Some(toolcall_core::CallId::from(s.as_str())),
            _ => None,
        };
        d.span = span.clone();
        out.drafts.push(d);
    }
    Some(out)
}

/// [`classify`] of the JSON value at the start of a one-shot `region` when `tools_envelope`
/// is the first family offered a bare value (so it is the one to claim an envelope), read
/// without building the envelope's own objects: serde decodes the entries straight into
/// their parts, and only the arguments (and ids) become `Value`s. The `Value` the generic
/// path builds would be classified by this family first, so the outcome is the same:
/// `Some((end, outcome))` exactly when that path would give `Done { end, outcome }` without
/// repairs. Anything else (another key, an entry that is not one, a value that does not
/// decode) gives `None`, and the caller decodes the region as it does without this.
pub(crate) fn decode_first(
    region: &str,
    max_depth: usize,
    ctx: &Ctx,
    base: usize,
) -> Option<(usize, Outcome)> {
    if ctx.order.first() != Some(&FormatId::TOOLS_ENVELOPE)
        || !region.starts_with('{')
        || max_depth < SERDE_MAX_DEPTH
    {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(region).into_iter::<Envelope>();
    let Envelope(entries) = values.next()?.ok()?;
    let end = values.byte_offset();
    let span = base..base + end;
    let mut out = Outcome {
        drafts: Vec::with_capacity(entries.len()),
        ..Outcome::default()
    };
    for e in entries {
        out.diagnostics
            .extend(ctx.unknown_name_warning(&e.name, span.clone()));
        let mut d = Draft::new(e.name, e.args, FormatId::TOOLS_ENVELOPE);
        d.id = e.id.map(toolcall_core::CallId::from);
        d.span = span.clone();
        out.drafts.push(d);
    }
    Some((end, out))
}

/// The `{"tools": [entry, ...]}` object [`classify`] claims: `tools` the only key (the last
/// one when repeated, as the decoded map keeps it), a non-empty list of [`Entry`]s.
struct Envelope(Vec<Entry>);

/// An entry [`entry_shape`] accepts, in the parts [`classify`] keeps: the last value of a
/// repeated key, as in the decoded map; `name` a string; `arguments` over `parameters`, a
/// string `id` over `call_id` as [`classify`] picks them. (Small: a list of entries stays
/// within the allocator's small-block sizes.) Read by the one call-object visitor
/// ([`CallObjVisitor`]) through [`EntryKeys`].
struct Entry {
    name: String,
    args: Option<Value>,
    id: Option<String>,
}

/// An entry's keys as the call-object visitor hands them over, kept as [`Entry`]'s parts
/// (a few words more: five `Value`s here cost a copy of the whole per entry): the last
/// `name`, the last `arguments` or else the last `parameters`, the last `id` or else the
/// last `call_id`, as the decoded map and [`classify`] pick them.
#[derive(Default)]
struct EntryKeys {
    /// `Some(None)`: the name is no string.
    name: Option<Option<String>>,
    args: Option<Value>,
    /// `args` came from `arguments`, which a `parameters` does not replace.
    args_named: bool,
    /// `Some(None)`: the id is no string (no id of the model's).
    id: Option<Option<String>>,
    /// `id` came from `id`, which a `call_id` does not replace.
    id_named: bool,
}

fn string(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

impl CallEntries for EntryKeys {
    type Out = Entry;
    #[inline(always)]
    fn entry<'de, A: MapAccess<'de>>(&mut self, k: Key, m: &mut A) -> Result<(), A::Error> {
        if matches!(k, Key::Type | Key::Tools) {
            // A tools *definition* (`type`), or an envelope inside: no entry.
            return Err(de::Error::custom("not a tools envelope entry"));
        }
        let v = m.next_value::<Value>()?;
        match k {
            Key::Name => self.name = Some(string(v)),
            Key::Arguments => (self.args, self.args_named) = (Some(v), true),
            Key::Parameters if !self.args_named => self.args = Some(v),
            Key::Id => (self.id, self.id_named) = (Some(string(v)), true),
            Key::CallId if !self.id_named => self.id = Some(string(v)),
            _ => {}
        }
        Ok(())
    }
    #[inline(always)]
    fn finish<E: de::Error>(self) -> Result<Entry, E> {
        match self.name {
            Some(Some(name)) => Ok(Entry {
                name,
                args: self.args,
                id: self.id.flatten(),
            }),
            _ => Err(de::Error::custom("not a tools envelope entry")),
        }
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tools envelope")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Envelope, A::Error> {
                let mut tools = None;
                while let Some(k) = m.next_key::<Key>()? {
                    match k {
                        Key::Tools => tools = Some(m.next_value::<Vec<Entry>>()?),
                        _ => return Err(de::Error::custom("not a tools envelope")),
                    }
                }
                match tools {
                    Some(entries) if !entries.is_empty() => Ok(Envelope(entries)),
                    _ => Err(de::Error::custom("not a tools envelope")),
                }
            }
        }
        d.deserialize_map(EnvelopeVisitor)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(CallObjVisitor::<EntryKeys>::new())
    }
}

/// An envelope's entry: an object of `name` (a string, required), `arguments` or
/// `parameters`, `id` and `call_id`, and nothing else.
fn entry_shape(e: &Value) -> bool {
    let Value::Object(e) = e else {
        return false;
    };
    let mut named = false;
    for (k, val) in e {
        match k.as_str() {
            "name" if val.is_string() => named = true,
            "arguments" | "parameters" | "id" | "call_id" => {}
            _ => return false,
        }
    }
    named
}

impl FormatId {
    pub(crate) const TOOLS_ENVELOPE: FormatId = FormatId::builtin("tools_envelope");
}


fn classify_json(v: &mut Value, cx: &JsonCx<'_>, _format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, cx.span.clone())
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "```json\n{}\n```",
        json!({"tools": [{"name": name, "arguments": args}]})
    )
}

pub(crate) static TOOLS_ENVELOPE: Described = Described {
    id: FormatId::TOOLS_ENVELOPE,
    description: "{\"tools\":[...]} envelope in a ```json fence or raw in prose; every entry in order",
    example: r#"{"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}}]}"#,
    bare: Some(Bare {
        objects: true,
        arrays: false,
        classify: classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["tools"]],
            elements: &[],
        },
    }),
    generic_because: Some("a JSON envelope many agent prompts ask for, not one model's markup"),
    instructions: Some(Instructions {
        how: "To call tools, include one fenced ```json block holding an object with a \"tools\" array; each entry has the tool's \"name\" and an \"arguments\" object.",
        several: "- To make several calls, put several entries in the \"tools\" array; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

#[cfg(test)]
mod tests {
    use crate::{FormatSelection, ParseOptions, parse};

    fn only() -> ParseOptions {
        ParseOptions {
            format: FormatSelection::Only("tools_envelope".into()),
            ..ParseOptions::default()
        }
    }

    /// (name, id, arguments) of each call, or `None` when the text gave no call.
    fn calls(text: &str) -> Option<Vec<(String, String, serde_json::Value)>> {
        let p = parse(text, &only());
        (!p.calls.is_empty()).then(|| {
            p.calls
                .into_iter()
                .map(|c| (c.name, c.call_id.as_str().to_owned(), c.arguments))
                .collect()
        })
    }

    // A fence's content is read by a sub-engine that counts its diagnostics in the
    // reply's cap: an envelope of 40 calls gives the same notes in a fence as bare, the 8
    // found-call notes over the cap counted in the reply's "not reported" warning (the
    // sub-engine's own cap lost them: no warning in a fence).
    #[test]
    fn a_fenced_envelope_reports_and_counts_its_notes_as_a_bare_one() {
        let entries: Vec<String> = (0..40)
            .map(|i| format!(r#"{{"name":"t{i}","arguments":{{"i":{i}}}}}"#))
            .collect();
        let json = format!(r#"{{"tools":[{}]}}"#, entries.join(","));
        let notes = |text: &str| {
            let p = parse(text, &only());
            assert_eq!(p.calls.len(), 40, "{text}");
            p.diagnostics
                .into_iter()
                .map(|d| (d.level, d.message))
                .collect::<Vec<_>>()
        };
        let bare = notes(&json);
        assert_eq!(bare.len(), 33);
        assert_eq!(
            bare[32].1,
            "8 further diagnostics not reported (more than 32 of one kind)"
        );
        assert_eq!(notes(&format!("Sure.\n```json\n{json}\n```\nDone.")), bare);
    }

    // With `tools_envelope` first, a one-shot parse reads an envelope straight into its
    // calls (`decode_first`); with a family before it that claims no bare value, the value
    // is decoded whole and classified. Both give the same reply for envelopes and for
    // objects that are none (repeated keys: the last one counts, as in the decoded map).
    #[test]
    fn an_envelope_read_into_its_calls_gives_what_its_decoded_value_gives() {
        let later = ParseOptions {
            format: FormatSelection::Priority(vec!["hermes".into(), "tools_envelope".into()]),
            ..ParseOptions::default()
        };
        let view = |p: crate::Parsed| {
            let calls: Vec<_> = p
                .calls
                .into_iter()
                .map(|c| {
                    let id = c.call_id.as_str().to_owned();
                    let id = if id.starts_with("call_") && id.len() == 29 {
                        "generated".to_owned()
                    } else {
                        id
                    };
                    (c.name, id, c.arguments, c.origin.format, c.origin.span)
                })
                .collect();
            let diags: Vec<_> = p
                .diagnostics
                .into_iter()
                .map(|d| (d.level, d.message, d.span))
                .collect();
            (p.text, calls, diags)
        };
        let objects = [
            r#"{"tools":[{"name":"a","arguments":{"x":1}},{"name":"b"}]}"#,
            r#"{"tools":[{"name":"a","parameters":{"x":1},"arguments":{"y":2}}]}"#,
            r#"{"tools":[{"call_id":"c1","name":"a","parameters":{"p":[1]}}]}"#,
            r#"{"tools":[{"name":"a","parameters":[1]}]}"#,
            r#"{"tools":[{"id":7,"call_id":"c1","name":"a","arguments":null}]}"#,
            r#"{"tools":[{"id":"i1","name":"a","arguments":"{\"x\":1}"}]}"#,
            r#"{"tools":[{"name":1,"name":"a"}]}"#,
            r#"{"tools":[{"name":"a","name":2}]}"#,
            r#"{"tools":[{"n\u0061me":"a\u00e9","arguments":{"k":[{"d":{}}]}}]}"#,
            r#"{"tools":5,"tools":[{"name":"a"}]}"#,
            r#"{"tools":[{"name":"a"}],"tools":[]}"#,
            r#"{"tools":[{"name":"a"}],"other":1}"#,
            r#"{"tools":[{"name":"a","type":"function"}]}"#,
            r#"{"tools":[{"name":"a"},[1]]}"#,
            r#"{"tools":[]}"#,
            r#"{"tools":[{"arguments":{}}]}"#,
            r#"{}"#,
            r#"{"tools":[{"name":"a","arguments":{"x":1}}]"#,
            r#"{"tools":[{"name":"a","arguments":{"x":1,}}]}"#,
        ];
        for json in objects {
            for text in [
                json.to_owned(),
                format!("Sure.\n```json\n{json}\n```\nDone."),
                format!("Calling {json} now, then {json}."),
            ] {
                assert_eq!(
                    view(parse(&text, &only())),
                    view(parse(&text, &later)),
                    "{text}"
                );
            }
        }
        // The fast path did read the first kind: a call, its arguments and id.
        let p = parse(objects[2], &only());
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].call_id.as_str(), "c1");
        assert_eq!(p.calls[0].arguments, serde_json::json!({"p": [1]}));
    }

    // The call-object visitor `json` shares reads an envelope's entries by this family's
    // rule: a repeated key keeps its last value (the typed `json` reader refuses it
    // instead), `type` and `tools` refuse the entry, `arguments` wins over `parameters` and
    // a string `id` over `call_id`.
    #[test]
    fn decode_first_keeps_the_last_of_a_repeated_key_and_refuses_type() {
        let (ctx, _) = only().ctx();
        let read = |json: &str| {
            super::decode_first(json, 128, &ctx, 0).map(|(end, o)| {
                let calls: Vec<_> = o
                    .drafts
                    .into_iter()
                    .map(|d| (d.name, d.args, d.id.map(|i| i.as_str().to_owned())))
                    .collect();
                (end, calls)
            })
        };
        let json = r#"{"tools":[{"name":1,"name":"a","arguments":{"x":1},"arguments":{"y":2},"parameters":{"z":3},"id":"i1","id":"i2"}]} after"#;
        let (end, calls) = read(json).unwrap();
        assert_eq!(end, json.len() - " after".len());
        assert_eq!(
            calls,
            vec![(
                "a".to_owned(),
                Some(serde_json::json!({"y": 2})),
                Some("i2".to_owned())
            )]
        );
        let json = r#"{"tools":[{"call_id":"c1","parameters":{"p":1},"name":"b","id":7}]}"#;
        assert_eq!(
            read(json).unwrap().1,
            vec![("b".to_owned(), Some(serde_json::json!({"p": 1})), None)]
        );
        for refused in [
            r#"{"tools":[{"name":"a","type":"function"}]}"#,
            r#"{"tools":[{"name":"a","tools":[]}]}"#,
            r#"{"tools":[{"name":"a","extra":1}]}"#,
            r#"{"tools":[{"name":"a","name":2}]}"#,
            r#"{"tools":[{"arguments":{}}]}"#,
        ] {
            assert!(read(refused).is_none(), "{refused}");
        }
    }

    // A fence's info string names a call fence in any ASCII case, around spaces; any other
    // name makes its content a code sample, whose envelope is no call.
    #[test]
    fn a_fence_is_named_in_any_ascii_case() {
        let json = r#"{"tools":[{"name":"t","arguments":{"a":1}}]}"#;
        for info in ["json", "JSON", " Json ", "jSoNc", "TOOL_CALL", ""] {
            let text = format!("Sure.\n```{info}\n{json}\n```\nDone.");
            assert_eq!(
                calls(&text).map(|c| c.len()),
                Some(1),
                "{text}"
            );
        }
        for info in ["python", "jsonx", "js on", "j\u{17f}on", "xml"] {
            let text = format!("Sure.\n```{info}\n{json}\n```\nDone.");
            assert_eq!(calls(&text), None, "{text}");
        }
    }

    // The envelope's shape, entry by entry: which keys an entry may have, which of
    // `arguments`/`parameters` and `id`/`call_id` a call takes, and what is no envelope.
    #[test]
    fn entries_keep_their_names_ids_and_arguments_and_other_shapes_are_text() {
        let got = calls(
            r#"{"tools":[{"name":"a","arguments":{"x":1},"parameters":{"y":2},"id":"i1","call_id":"c1"},{"call_id":"c2","parameters":{"y":3},"name":"b"},{"name":"c","id":7,"call_id":"c3"},{"name":"d"}]}"#,
        )
        .unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(
            (&got[0].0[..], &got[0].1[..], &got[0].2),
            ("a", "i1", &serde_json::json!({"x": 1}))
        );
        assert_eq!(
            (&got[1].0[..], &got[1].1[..], &got[1].2),
            ("b", "c2", &serde_json::json!({"y": 3}))
        );
        // An `id` that is no string is no id of the model's, and `call_id` is not used.
        assert_eq!(got[2].0, "c");
        assert!(got[2].1.starts_with("call_") && got[2].1 != "c3", "{}", got[2].1);
        assert_eq!(got[2].2, serde_json::json!({}));
        assert_eq!((&got[3].0[..], &got[3].2), ("d", &serde_json::json!({})));
        for not_envelope in [
            r#"{"tools":[]}"#,
            r#"{"tools":[{"name":"a","arguments":{}}],"extra":1}"#,
            r#"{"tools":[{"name":"a","arguments":{},"type":"function"}]}"#,
            r#"{"tools":[{"name":"a","arguments":{}},{"arguments":{}}]}"#,
            r#"{"tools":[{"name":"a","arguments":{}},{"name":3}]}"#,
            r#"{"tools":[{"name":"a","arguments":{}},"b"]}"#,
            r#"{"tools":{"name":"a","arguments":{}}}"#,
            r#"{"tool":[{"name":"a","arguments":{}}]}"#,
        ] {
            assert_eq!(calls(not_envelope), None, "{not_envelope}");
        }
    }
}
