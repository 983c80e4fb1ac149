//! `minimax_m2`: MiniMax M2 writes `<minimax:tool_call>` holding one or more
//! `<invoke name="NAME">` with `<parameter name="K">V</parameter>` children; values are text
//! typed by the tool's schema.

use super::described::{Body, Described};
use super::marked::InvokeTags;
use super::tags::{Block, BodyRule, LeadRule, ParamsWake, StreamTags};
use super::text_example::named_parameters;
use crate::FormatId;
use crate::family::Untyped;
use crate::family::{Instructions, Wake, WhenChosen};
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

const CLOSE: &str = "</minimax:tool_call>";

static BLOCK: Block = Block {
    format: FormatId::MINIMAX_M2,
    open: "<minimax:tool_call>",
    close: CLOSE,
    lead: LeadRule::Invoke(&TAGS),
    body: BodyRule::Invokes(&TAGS),
};

pub(super) static STREAM: StreamTags = StreamTags::invokes(&TAGS);

/// What wakes the block's reader while its stream waits ([`super::tags::params_wake`]):
/// the last byte of the tag it looks for, and the block's closing tag. Between calls that
/// is the `=` of the next call's `<parameter name=` (a `>` there ends only `<invoke …>`,
/// which the stream reads with its first parameter); inside a call every tag it looks for
/// ends with `>` (an opening tag, `</parameter>`, `</invoke>`), so the `=` of each further
/// `<parameter name=` wakes nothing.
/// Inside a text value whose last bytes may begin `</parameter>`, a push that only
/// continues that tag changes nothing.
pub(super) static WAKE: ParamsWake = ParamsWake {
    head: Wake::new(b"=", CLOSE),
    params: Wake::new(b">", CLOSE),
    held: Wake::holding("</parameter>"),
};

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

    /// MiniMax M2 alone, with `get_weather` registered under `parameters`.
    fn with_weather_schema(parameters: serde_json::Value) -> ParseOptions {
        let mut tools = toolcall_core::Registry::new();
        tools
            .add_spec(toolcall_core::ToolSpec::new("get_weather", "", parameters))
            .unwrap();
        ParseOptions {
            format: FormatSelection::Only("minimax_m2".into()),
            tools: Some(std::sync::Arc::new(tools)),
            ..ParseOptions::default()
        }
    }

    /// Text values the schema types as strings are read when they close without reading
    /// their tag again (`tags::read_text_param`): streamed in pushes of every size, with a
    /// schema, every call equals one-shot and what was sent is its arguments.
    #[test]
    fn streamed_text_values_equal_one_shot() {
        use crate::stream_replay::{one_shot, stream_in_char_pushes};
        let o = with_weather_schema(serde_json::json!({"type": "object", "properties": {
            "city": {"type": "string"}, "note": {"type": "string"},
            "days": {"type": "integer"}, "any": {"type": ["string", "integer"]}}}));
        let block = |params: &str| {
            format!(
                "Sure. <minimax:tool_call>\n<invoke name=\"get_weather\">\n{params}</invoke>\n</minimax:tool_call> ok"
            )
        };
        let texts = [
            block("<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n"),
            block("<parameter name=\"city\">\nSão Paulo\n</parameter>\n<parameter name=\"note\">a \"b\" <c> </param</parameter>\n"),
            block("<parameter name='city'>Kyiv</parameter>\n<parameter name=note>x\r\n</parameter>\n"),
            block("<parameter name=\"city\" string=\"true\">007</parameter>\n<parameter name=\"any\">42</parameter>\n"),
            block("<parameter name=\"city\"><![CDATA[a</parameter>b]]></parameter>\n"),
            block("<parameter name=\"city\">a</parameter>\n<parameter name=\"city\">b</parameter>\n"),
            block("<parameter name=\"ci</parameter>ty\">Rome</parameter>\n"),
            block("<parameter name=\"city\">\n\n</parameter>\n"),
        ];
        for text in &texts {
            let want = one_shot(text, &o);
            for n in 1..=9 {
                let got = stream_in_char_pushes(text, &o, n, |_, _| {});
                let context = format!("{text:?} in {n}-char pushes");
                let repeated = text.contains(">b</parameter>");
                got.assert_equals_one_shot(&want, !repeated, repeated, &context);
            }
        }
    }

    /// A push that the block's reader is not called for (none of `WAKE`'s bytes while its
    /// stream is quiet) delays nothing: after every push of every size, the calls
    /// announced and finished and the fragments sent are those of the same pushes each read
    /// (`marked::READ_EVERY_PUSH`), with a schema and without.
    #[test]
    fn pushes_that_wake_nothing_delay_nothing() {
        use crate::stream_replay::sent_after_each_push as replay;
        let with_schema = with_weather_schema(serde_json::json!({"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "at": {"type": "array"}}}));
        let texts = [
            "Sure. <minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n<parameter name=\"at\">[1, 2]</parameter>\n</invoke>\n<invoke name=\"get_time\">\n<parameter name=\"tz\">UTC</parameter>\n</invoke>\n</minimax:tool_call> ok",
            "<minimax:tool_call><invoke name=\"get_weather\"><parameter name='city'>a <b> </param c</parameter><parameter name=days>\n4\n</parameter></invoke></minimax:tool_call>",
            "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"days\">12345678901234567890</parameter>\n<parameter name=\"city\"><![CDATA[x</parameter>]]></parameter>\n</invoke>\n</minimax:tool_call>",
            "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</minimax:tool_call> rest",
            "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"days\">3</parameter>\nstray <parameter name=\"city\">x</parameter></invoke>\n</minimax:tool_call>",
            "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Par",
        ];
        let every = |read: bool| crate::families::marked::READ_EVERY_PUSH.with(|c| c.set(read));
        let plain = ParseOptions {
            format: FormatSelection::Only("minimax_m2".into()),
            ..ParseOptions::default()
        };
        for o in [&with_schema, &plain] {
            for text in texts {
                for n in 1..=12 {
                    every(true);
                    let want = replay(text, o, n);
                    every(false);
                    let got = replay(text, o, n);
                    assert_eq!(got, want, "{text:?} in {n}-char pushes");
                }
            }
        }
    }

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
