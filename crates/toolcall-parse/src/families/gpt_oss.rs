//! `gpt_oss`: gpt-oss writes the harmony format. A message is
//! `<|start|>assistant<|channel|>CHANNEL<|message|>…<|end|>`: `analysis` is reasoning (reported
//! apart), `final` is the reply (ends with `<|return|>`), and a call is a `commentary` message
//! addressed `to=functions.NAME` (in the channel header or in the role header), with an
//! optional `<|constrain|>json`, JSON arguments and `<|call|>`. The reply begins after the
//! template's `<|start|>assistant`, so it may start with `<|channel|>` or inside a message:
//! the control tokens are removed from the visible text wherever they appear.

use super::described::{Body, Described};
use crate::family::ToolResultText;
use crate::results::{bare_name, break_marker};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, ReasoningMarker, find_from, parse_lenient};

use super::args_object::JsonCallTags;
use super::tags::{Block, BodyRule, Lead, LeadRule, skip_space, valid_name};
use crate::scanner::{Scan, Scanner};

impl FormatId {
    pub(crate) const GPT_OSS: FormatId = FormatId::builtin("gpt_oss");
}

const MESSAGE: &str = "<|message|>";
const CALL: &str = "<|call|>";
const END: &str = "<|end|>";
/// Where a message addressed to a tool starts: the recipient in the role header or in the
/// channel header, on the commentary channel or (as gpt-oss also writes it, and harmony
/// readers take it) the analysis channel; and the same with the one space after each
/// control token that LLM-jp's harmony dialect writes.
const OPENERS: [&str; 7] = [
    "<|start|>assistant<|channel|>commentary to=",
    "<|channel|>commentary to=",
    "<|start|>assistant to=",
    "<|channel|>analysis to=",
    "<|channel|> commentary to=",
    "<|channel|> analysis to=",
    "<|start|> assistant to=",
];

const fn block(open: &'static str) -> Block {
    Block {
        format: FormatId::GPT_OSS,
        open,
        close: CALL,
        lead: LeadRule::Fn(lead),
        body: BodyRule::Call {
            body,
            // One-shot reads need nothing of the parse.
            ahead: |after, close, _, format| read_ahead(after, close, format),
        },
    }
}

static BLOCKS: [Block; 7] = [
    block(OPENERS[0]),
    block(OPENERS[1]),
    block(OPENERS[2]),
    block(OPENERS[3]),
    block(OPENERS[4]),
    block(OPENERS[5]),
    block(OPENERS[6]),
];

/// One call per block: the recipient, the header, `<|message|>`, then the JSON.
static STREAM: JsonCallTags = JsonCallTags {
    call: "",
    head: call_head,
    call_end: "",
};

/// `functions.NAME …<|message|>` → the name.
fn call_head(head: &str) -> Option<(String, Option<String>)> {
    if !head.trim_end().ends_with(MESSAGE) {
        return None;
    }
    let (to, _) = recipient(head);
    let name = to.strip_prefix("functions.").unwrap_or(to);
    valid_name(name).then(|| (name.to_owned(), None))
}


/// A harmony message from the tool to the assistant on the commentary channel, per
/// result: `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`.
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results
        .iter()
        .map(|r| {
            format!(
                "<|start|>functions.{} to=assistant<|channel|>commentary<|message|>{}<|end|>",
                bare_name(r.name),
                break_marker(r.content, "<|")
            )
        })
        .collect()
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{}<|call|>", Value::Object(args.clone()))
}

static BODIES: [Body; 7] = [
    Body::JsonTags(&BLOCKS[0], &STREAM),
    Body::JsonTags(&BLOCKS[1], &STREAM),
    Body::JsonTags(&BLOCKS[2], &STREAM),
    Body::JsonTags(&BLOCKS[3], &STREAM),
    Body::JsonTags(&BLOCKS[4], &STREAM),
    Body::JsonTags(&BLOCKS[5], &STREAM),
    Body::JsonTags(&BLOCKS[6], &STREAM),
];

pub(crate) static GPT_OSS: Described = Described {
    id: FormatId::GPT_OSS,
    description: "harmony: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{json}<|call|>; analysis channel = reasoning (gpt-oss)",
    example: r#"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>"#,
    body: Body::each(&OPENERS, &BODIES),
    model_names: &["gpt-oss*"],
    template_markers: &["<|channel|>", "<|message|>", "<|call|>"],
    reasoning: &[
        ReasoningMarker {
            open: "<|start|>assistant<|channel|>analysis<|message|>",
            close: "<|end|>",
        },
        ReasoningMarker {
            open: "<|channel|>analysis<|message|>",
            close: "<|end|>",
        },
        ReasoningMarker {
            open: "<|channel|> analysis<|message|>",
            close: "<|end|>",
        },
    ],
    strip: &[
        "<|start|>assistant<|channel|>final<|message|>",
        "<|channel|>final<|message|>",
        "<|start|> assistant<|channel|> final<|message|>",
        "<|channel|> final<|message|>",
        "<|return|>",
        "<|end|>",
    ],
    instructions: Some(Instructions {
        how: "To call a tool, write <|channel|>commentary to=functions.TOOL_NAME <|constrain|>json<|message|>, the arguments as a JSON object, then <|call|>.",
        several: "- Make one call per reply and wait for its result before the next.\n",
    }),
    example_call: Some(example_call),
    write_results,
    ..Described::BASE
};


/// The recipient: `functions.NAME` (or a built-in tool such as `browser.search`).
///
/// Read eight bytes at a time while none of them can end it (no byte below `!`, no `<`,
/// no non-ASCII byte), then byte by byte, and by chars from the first non-ASCII byte, so
/// that Unicode whitespace ends it as before (the char closure `find` cost ~400 a call of
/// `gpt_oss/small`, the byte loop ~240; twice a call: the lead and the body).
fn recipient(s: &str) -> (&str, usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte below 0x21, a byte equal to `<`, a byte with its high bit: exact for "any".
        let low = x.wrapping_sub(0x21 * ONES) & !x;
        let y = x ^ (u64::from(b'<') * ONES);
        let lt = y.wrapping_sub(ONES) & !y;
        if (low | lt | x) & HIGH != 0 {
            break;
        }
        i += 8;
    }
    loop {
        let Some(k) = b
            .get(i..)
            .and_then(|r| r.iter().position(|&c| c <= b' ' || c == b'<' || c >= 0x80))
        else {
            return (s, s.len());
        };
        i += k;
        match b.get(i) {
            Some(b'<' | b' ' | b'\t'..=b'\r') => return (&s[..i], i),
            Some(0x80..) => {
                let n = s[i..]
                    .find(|c: char| c.is_whitespace() || c == '<')
                    .map_or(s.len(), |k| i + k);
                return (&s[..n], n);
            }
            // Another control byte, no whitespace.
            _ => i += 1,
        }
    }
}

fn lead(lead: &str, complete: bool) -> Lead<'_> {
    let (to, n) = recipient(lead);
    if n == lead.len() && !complete && n < 256 {
        return Lead::NeedMore;
    }
    let name = to.strip_prefix("functions.").unwrap_or(to);
    // MuseGlimmer's channels share the header: `to=self`/`to=user` are no tools, and a
    // message opening straight with ATEM markup is its call (`muse_glimmer`).
    if !valid_name(name) || ["self", "user"].contains(&to) {
        return Lead::NotMine;
    }
    if let Some(body) = lead[n..].strip_prefix(MESSAGE) {
        let body = body.trim_start();
        if body.starts_with("<atem:") {
            return Lead::NotMine;
        }
        if "<atem:".starts_with(body) && !complete {
            return Lead::NeedMore;
        }
    } else if MESSAGE.starts_with(&lead[n..]) && !complete && lead.len() - n < MESSAGE.len() {
        return Lead::NeedMore;
    }
    Lead::Mine(Some(name.into()))
}

/// The call message's JSON arguments; LLM-jp's dialect ends a call message with `<|end|>`
/// instead of `<|call|>` and writes its parallel calls as the next messages, so a message
/// whose JSON is followed by `<|end|>` and another call message is read as that many calls.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    read_body(body, cx.ctx.limits.max_depth, format)
}

/// [`body`], given the parse's nesting limit.
fn read_body(body: &str, max_depth: usize, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut rest = body;
    loop {
        let (to, _) = recipient(rest);
        let name = to.strip_prefix("functions.").unwrap_or(to);
        if !valid_name(name) {
            return Err(format!("invalid tool name {name:?}"));
        }
        let m = find_from(rest, MESSAGE, 0)
            .ok_or("the call has no <|message|> before its arguments")?;
        let text = &rest[m + MESSAGE.len()..];
        let (json, next) = match ended_message(text, max_depth) {
            Some((json, next)) => (json, next),
            None => (text, None),
        };
        let (args, repairs) = parse_lenient(json.trim())
            .map_err(|e| format!("the arguments of {name:?} are not JSON: {e}"))?;
        let mut d = Draft::new(name, Some(args), format);
        d.repairs = repairs;
        drafts.push(d);
        match next {
            Some(n) => rest = n,
            None => return Ok(drafts),
        }
    }
}

/// The block from after its opener, one-shot ([`BodyRule::Call`]): the call as [`body`]
/// reads the body that ends at the first `<|call|>` outside JSON strings (where the close
/// search ends it), and that body's length, when the header before `<|message|>` holds no
/// quote and no `<|call|>`, the message is one JSON object, list or string (serde's own
/// read, as [`parse_lenient`] reads it first) holding no `<|end|>`, and the closing tag
/// follows it after JSON blanks. The tag cannot be anywhere before: the header holds none
/// and opens no string, and JSON holds `<` only inside its strings. One pass, where the
/// close search then [`body`] read each call twice (the search ~880 instructions a call
/// of `gpt_oss/small`, two `memchr2` a JSON string: `bench_profile "gpt_oss/small" one`).
/// Anything else is left to the search and [`body`] (`None`).
fn read_ahead(after: &str, close: &str, format: FormatId) -> Option<(usize, Vec<Draft>)> {
    let (to, _) = recipient(after);
    let name = to.strip_prefix("functions.").unwrap_or(to);
    if !valid_name(name) {
        return None;
    }
    let m = find_from(after, MESSAGE, 0)?;
    let head = after.get(..m)?;
    if memchr::memchr(b'"', head.as_bytes()).is_some() || find_from(head, close, 0).is_some() {
        return None;
    }
    let from = m + MESSAGE.len();
    let text = after.get(from..)?;
    // A stream of values reads one and says where it ended; a value that is not an
    // object, a list or a string is checked for what follows it (`<` fails): left out.
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let args = values.next()?.ok()?;
    let json = text.get(..values.byte_offset())?;
    if find_from(json, END, 0).is_some() {
        return None;
    }
    let blanks = crate::scanner::json_blanks(text.as_bytes().get(json.len()..)?);
    let end = from + json.len() + blanks;
    if !after.get(end..)?.starts_with(close) {
        return None;
    }
    Some((end, vec![Draft::new(name, Some(args), format)]))
}

/// A message body that is a JSON value then `<|end|>`: the JSON, and what follows the
/// next call message's opener when one follows (`None` when nothing does).
///
/// A body with no `<|end|>` has none after its JSON: answered by a byte search, without
/// scanning the JSON (~950 a call of `gpt_oss/small`, which `parse_lenient` reads again).
fn ended_message(text: &str, max_depth: usize) -> Option<(&str, Option<&str>)> {
    find_from(text, END, 0)?;
    let t = skip_space(text);
    let Scan::Done(n) = Scanner::new(max_depth, false).advance(t.as_bytes()) else {
        return None;
    };
    let after = skip_space(t.get(n..)?).strip_prefix(END)?;
    let after = skip_space(after);
    if after.is_empty() {
        return Some((&t[..n], None));
    }
    let open = OPENERS.iter().find(|o| after.starts_with(**o))?;
    Some((&t[..n], Some(&after[open.len()..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recipient as it was read before the byte reads: by chars.
    fn by_chars(s: &str) -> (&str, usize) {
        let n = s
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(s.len());
        (&s[..n], n)
    }

    /// What [`read_ahead`] reads is what the close search outside JSON strings and [`body`]
    /// give; what it leaves is left to them.
    #[test]
    fn ahead_reads_what_the_close_search_and_the_body_read() {
        use super::super::tags::CloseOutsideStrings;
        let read = [
            r#"functions.get_weather <|constrain|>json<|message|>{"city": "Kyiv", "days": 3}<|call|>"#,
            r#"functions.f<|message|>{"a":"<|call|> and <|end|"}<|call|>"#,
            "functions.f <|constrain|>json<|message|> \n{\"a\":[1,{\"b\":null}]} \r\n\t<|call|> more",
            r#"functions.f<|message|>"text"<|call|>"#,
            r#"functions.f<|message|>[1, 2.5e3, "x"]<|call|><|call|>"#,
            r#"functions.f<|message|>{"a":"\"<|call|>\\","b":"\u00e9"}<|call|>"#,
            r#"browser.search <|message|>{}<|call|>"#,
            r#"functions.f<|message|>{"a":1,"a":2}<|call|>"#,
            r#"functions.f<|message|>true <|call|>"#,
        ];
        let left = [
            r#"functions.f "x<|message|>{"a":1}<|call|>"#,
            r#"functions.f <|call|><|message|>{"a":1}<|call|>"#,
            r#"functions.f<|message|>12<|call|>"#,
            r#"functions.f<|message|>{"a":"<|end|>"}<|call|>"#,
            r#"functions.f<|message|>{"a":1}<|end|><|start|>assistant to=functions.g<|message|>{}<|call|>"#,
            r#"functions.f<|message|>{"a":1} x<|call|>"#,
            "functions.f<|message|>\u{a0}{\"a\":1}<|call|>",
            "functions.f<|message|>{\"a\":1}\u{a0}<|call|>",
            r#"functions.f<|message|>{'a':1}<|call|>"#,
            r#"functions.f<|message|>{"a":1,}<|call|>"#,
            r#"functions.f<|message|>{"a":1}"#,
            r#"functions.f<|message|>{"a":1}<|call|"#,
            r#"functions.<|message|>{}<|call|>"#,
            r#"functions.f {"a":1}<|call|>"#,
            r#"functions.f<|message|>{"a":"x}<|call|>"#,
            r#"functions.f<|message|>"#,
            r#"functions.f<|message|>  <|call|>"#,
        ];
        for after in read.iter().chain(&left) {
            let Some((n, drafts)) = read_ahead(after, CALL, FormatId::GPT_OSS) else {
                assert!(!read.contains(after), "{after}");
                continue;
            };
            assert!(read.contains(after), "{after}");
            let i = CloseOutsideStrings::new(0).find(after, CALL).unwrap();
            assert_eq!(n, i, "{after}");
            let want = read_body(&after[..i], 64, FormatId::GPT_OSS).unwrap();
            assert_eq!(drafts.len(), want.len());
            for (d, w) in drafts.iter().zip(&want) {
                assert_eq!((&d.name, &d.args, &d.repairs), (&w.name, &w.args, &w.repairs));
            }
        }
    }

    #[test]
    fn the_recipient_ends_where_the_char_read_ends_it() {
        let ends = [
            " ", "\t", "\n", "\x0b", "\x0c", "\r", "<", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}",
            "\x1f", "\x00", "!", "é", "\u{7f}", "",
        ];
        let names = ["", "f", "functions.get", "functions.get_weather", "functions.highlight_object_x", "browser.search"];
        for name in names {
            for end in ends {
                for tail in ["", "<|message|>{}", " <|constrain|>json", "é x"] {
                    let s = format!("{name}{end}{tail}");
                    assert_eq!(recipient(&s), by_chars(&s), "{s:?}");
                    for cut in (0..=s.len()).filter(|&c| s.is_char_boundary(c)) {
                        assert_eq!(recipient(&s[cut..]), by_chars(&s[cut..]), "{:?}", &s[cut..]);
                    }
                }
            }
        }
    }
}
