//! `minimax_m2`: MiniMax M2 writes `<minimax:tool_call>` holding one or more
//! `<invoke name="NAME">` with `<parameter name="K">V</parameter>` children; values are text
//! typed by the tool's schema.

use super::described::{Body, Described};
use super::marked::InvokeTags;
use super::tags::{Block, BodyRule, LeadRule, StreamTags};
use super::text_example::named_parameters;
use crate::FormatId;
use crate::family::Untyped;
use crate::family::{Instructions, WhenChosen};
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const MINIMAX_M2: FormatId = FormatId::builtin("minimax_m2");
}

/// Shared with `dots`: the same `invoke` elements behind other block tags.
pub(super) static TAGS: InvokeTags = InvokeTags {
    invoke: "<invoke name=\"",
    invoke_end: "</invoke>",
    param: "<parameter name=\"",
    param_end: "</parameter>",
    between: &[],
    verbatim: false,
};

static BLOCK: Block = Block {
    format: FormatId::MINIMAX_M2,
    open: "<minimax:tool_call>",
    close: "</minimax:tool_call>",
    lead: LeadRule::Invoke(&TAGS),
    body: BodyRule::Invokes(&TAGS),
};

pub(super) static STREAM: StreamTags = StreamTags::invokes(&TAGS);

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<minimax:tool_call>")],
    &[Piece::Lit("</minimax:tool_call>")],
    INVOKE_CALL,
    &[Piece::Ws("\n")],
);

/// One `<invoke name="NAME">` element with its `<parameter name="K">V</parameter>`
/// children (dots writes the same inside its own block).
pub(super) const INVOKE_CALL: &[Piece] = &[
    Piece::Lit("<invoke name=\""),
    Piece::Name,
    Piece::Lit("\">"),
    Piece::Args(Args::Text(&TextParams {
        key_open: "<parameter name=\"",
        key_close_text: &[Piece::Lit("\">")],
        key_close_json: &[Piece::Lit("\">")],
        value_close: "</parameter>",
    })),
    Piece::Ws("\n"),
    Piece::Lit("</invoke>"),
];

/// MiniMax M2's chat template ends its generation prompt with `<think>`: the reply starts
/// inside reasoning and only closes it (vLLM's `minimax_m2_append_think` reasoning parser
/// puts the `<think>` back in front of the content).
static WHEN_CHOSEN: WhenChosen = WhenChosen {
    opens_think: true,
    ..WhenChosen::NONE
};

pub(crate) static MINIMAX_M2: Described = Described {
    id: FormatId::MINIMAX_M2,
    description: "<minimax:tool_call><invoke name=\"NAME\"><parameter name=\"K\">V</parameter></invoke></minimax:tool_call> (MiniMax M2); values typed by the schema",
    example: r#"<minimax:tool_call><invoke name="get_weather"><parameter name="city">Paris</parameter></invoke></minimax:tool_call>"#,
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["minimax-m2*"],
    template_markers: &["<minimax:tool_call>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <minimax:tool_call>, then per call <invoke name="TOOL_NAME"> with one <parameter name="ARGUMENT_NAME">value</parameter> per argument (text as is; numbers, booleans, arrays and objects as JSON) and </invoke>, then </minimax:tool_call>."#,
        several: "- To make several calls, write several <invoke> blocks inside the one <minimax:tool_call>; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!(
            "<minimax:tool_call>\n<invoke name=\"{name}\">\n{}</invoke>\n</minimax:tool_call>",
            named_parameters("parameter", "\n", args)
        )
    }),
    constraint: Some(&CONSTRAINT),
    untyped: Untyped::Null(&["null", "none", "nil"]),
    when_chosen: &WHEN_CHOSEN,
    ..Described::BASE
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{FormatSelection, ParseOptions, StreamParser, parse};
    use toolcall_core::StreamEvent;

    // Single-quoted and bare names are read (as vLLM's and SGLang's readers do) and each is
    // reported as the repair `attribute_quotes`, one-shot and streamed alike.
    #[test]
    fn unquoted_names_are_read_and_reported() {
        let text = "<minimax:tool_call>\n<invoke name='get_weather'>\n<parameter name=city>Paris</parameter>\n<parameter name=\"unit\">c</parameter>\n</invoke>\n</minimax:tool_call>";
        let o = ParseOptions {
            format: FormatSelection::Only("minimax_m2".into()),
            ..ParseOptions::default()
        };
        let one = parse(text, &o);
        assert_eq!(one.calls.len(), 1, "{:?}", one.diagnostics);
        let c = &one.calls[0];
        assert_eq!(c.arguments, serde_json::json!({"city": "Paris", "unit": "c"}));
        let kinds: Vec<&str> = c.origin.repairs.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["attribute_quotes", "attribute_quotes"]);
        let mut sp = StreamParser::new(o);
        let mut events = Vec::new();
        for ch in text.chars() {
            events.extend(sp.push(&ch.to_string()));
        }
        events.extend(sp.finish());
        let streamed: Vec<_> = events
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::CallFinished { call, .. } => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(streamed.len(), 1);
        assert_eq!(streamed[0].arguments, c.arguments);
        assert_eq!(streamed[0].origin.repairs, c.origin.repairs);
    }
}
