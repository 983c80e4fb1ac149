//! `minicpm3`: MiniCPM3 thinks between `<|thought_start|>` and `<|thought_end|>`, then
//! writes its calls as Python between `<|tool_call_start|>` and `<|tool_call_end|>`, in a
//! fenced block, one call per line:
//!
//! ````text
//! <|tool_call_start|>
//! ```python
//! get_weather(city="Paris")
//! ```
//! <|tool_call_end|>
//! ````
//!
//! Keyword arguments only, values Python literals. The fence may be left out. A line that is
//! no call is reported and its siblings still run.
//!
//! Sources: vLLM's `minicpm` tool parser (MiniCPM3-4B) and its
//! `examples/tool_chat_template_minicpm3.jinja` (the markers, the fence, one call per
//! line, the thought block).

use super::described::{Body, Described};
use serde_json::{Map, Value};

use super::call_syntax::{parse_args, tag_name_len};
use super::pythonic::split_call;
use super::tags::{Block, BodyRule, Lead, LeadRule, skip_space, starts};
use super::text_example::python_call;
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, ReasoningMarker};

impl FormatId {
    pub(crate) const MINICPM3: FormatId = FormatId::builtin("minicpm3");
}

const OPEN: &str = "<|tool_call_start|>";
const CLOSE: &str = "<|tool_call_end|>";
const FENCE: &str = "```";

static BLOCK: Block = Block {
    format: FormatId::MINICPM3,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Fn(body),
};

/// Longest name looked at before the `(` that makes the lead a call.
const MAX_NAME: usize = 256;

/// A call (`name(`) follows the marker, after the fence's opening line if there is one.
fn lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    let s = match starts(s, FENCE) {
        None if !complete => return Lead::NeedMore,
        None => return Lead::NotMine,
        Some(false) => s,
        Some(true) => {
            // The fence's info string (`python`) up to the end of its line.
            let rest = &s[FENCE.len()..];
            match rest.find('\n') {
                Some(nl) if rest[..nl].trim().chars().all(|c| c.is_ascii_alphanumeric()) => {
                    skip_space(&rest[nl + 1..])
                }
                Some(_) => return Lead::NotMine,
                None if complete || rest.len() > 32 => return Lead::NotMine,
                None => return Lead::NeedMore,
            }
        }
    };
    let name_len = tag_name_len(s);
    match s[name_len..].chars().next() {
        Some('(') if name_len > 0 => Lead::Mine(None),
        Some(_) => Lead::NotMine,
        None if complete || name_len > MAX_NAME => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

/// The calls, one per line, inside an optional fence.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut s = body.trim();
    if let Some(rest) = s.strip_prefix(FENCE) {
        // Past the fence's info string.
        s = rest.split_once('\n').map_or("", |(_, after)| after);
        s = s.trim_end();
        s = s.strip_suffix(FENCE).unwrap_or(s);
    }
    let span = cx.span(0, 0);
    let mut drafts = Vec::new();
    for line in s.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let draft = match split_call(line) {
            Some((name, args)) => parse_args(name, args, cx.ctx, format, span.clone())
                .unwrap_or_else(|why| Draft::broken(name, why, format)),
            None => {
                let name: String = line.chars().take_while(|&c| c != '(').collect();
                Draft::broken(
                    name.trim(),
                    format!("not a call: {:?}", line.chars().take(80).collect::<String>()),
                    format,
                )
            }
        };
        drafts.push(draft);
    }
    if drafts.is_empty() {
        return Err("no call in the block".into());
    }
    Ok(drafts)
}


fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "{OPEN}\n```python\n{}\n```\n{CLOSE}",
        python_call(name, args)
    )
}

pub(crate) static MINICPM3: Described = Described {
    id: FormatId::MINICPM3,
    description: "<|tool_call_start|>```python\\nf(a=1)\\n```<|tool_call_end|>, one Python call per line (MiniCPM3; <|thought_start|> reasoning)",
    example: "<|tool_call_start|>\\n```python\\nget_weather(city=\"Paris\")\\n```\\n<|tool_call_end|>",
    body: Body::Whole(&BLOCK),
    model_names: &["minicpm3*", "minicpm-3*"],
    template_markers: &[OPEN, CLOSE],
    reasoning: &[ReasoningMarker {
        open: "<|thought_start|>",
        close: "<|thought_end|>",
    }],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|tool_call_start|>, then a ```python block with one call per line like tool_name(argument="value", other=1), then <|tool_call_end|>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
        several: "- To make several calls, write each on its own line inside the one block; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_minicpm3() {
        let t = "{{- '<|thought_start|>\\n' + message.thought + '\\n<|thought_end|>\\n' if message.thought }}{{- '<|tool_call_start|>\\n```python\\n' }}{%- for tool_call in message.tool_calls %}{{- tool_call.name + '(' }}{{- ')\\n' }}{%- endfor %}{{- '```\\n<|tool_call_end|>\\n' }}";
        let info = detect_template(t).unwrap();
        assert_eq!(info.family.as_deref(), Some("minicpm3"));
        assert!(info.reasoning.iter().any(|r| r.open == "<|thought_start|>"));
        assert_eq!(model_family("openbmb/MiniCPM3-4B").unwrap().family, "minicpm3");
    }
}
