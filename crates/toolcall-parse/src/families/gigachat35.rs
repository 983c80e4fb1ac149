//! `gigachat35`: GigaChat 3.5 writes its calls in GCML, a `<｜GCML｜tool_calls>` block of
//! `<｜GCML｜invoke name="NAME">` elements with
//! `<｜GCML｜parameter name="K" string="true|false">V</｜GCML｜parameter>` children:
//! `string="true"` keeps V as text, `string="false"` reads it as JSON (without the
//! attribute, the tool's schema decides, else it is text), closed by
//! `</｜GCML｜tool_calls>`. The turn ends with `<|message_sep|>` (read by `gigachat`'s
//! opener in auto mode, stripped when this family is chosen) and the server may leave a
//! `</s>`. The reasoning checkpoint writes `<think>…</think>` first.
//!
//! Sources: vLLM's and SGLang's `gigachat35` readers (the block, the attributes, a value
//! marked `string="false"` that is not JSON kept as text, a trailing `</s>` /
//! `<|message_sep|>`), llama.cpp's GigaChat 3.5 format (the layout: a newline after the
//! invoke's head, blanks between parameters, `<|role_sep|>` turns) and SGLang's GigaChat 3.5
//! cookbook (the `ai-sage/GigaChat3.5-*` checkpoints, the GCML marker in the template).

use super::described::{Body, Described};
use serde_json::{Map, Value};

use super::marked::InvokeTags;
use super::tags::{Block, BodyRule, LeadRule, StreamTags};
use super::text_example::tag_text;
use crate::FormatId;
use crate::family::{Instructions, WhenChosen};
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const GIGACHAT35: FormatId = FormatId::builtin("gigachat35");
}

const OPEN: &str = "<｜GCML｜tool_calls>";
const CLOSE: &str = "</｜GCML｜tool_calls>";

static TAGS: InvokeTags = InvokeTags {
    invoke: "<｜GCML｜invoke name=\"",
    invoke_end: "</｜GCML｜invoke>",
    param: "<｜GCML｜parameter name=\"",
    param_end: "</｜GCML｜parameter>",
    between: &[],
    verbatim: false,
};

static BLOCK: Block = Block {
    format: FormatId::GIGACHAT35,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Invoke(&TAGS),
    body: BodyRule::Invokes(&TAGS),
};

static STREAM: StreamTags = StreamTags::invokes(&TAGS);

static WHEN_CHOSEN: WhenChosen = WhenChosen {
    strip: &["<|message_sep|>", "</s>"],
    ..WhenChosen::NONE
};

/// The call markup a decoder is held to, laid out as llama.cpp's GigaChat 3.5 grammar
/// writes it (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit(OPEN), Piece::Ws("\n")],
    &[Piece::Lit(CLOSE)],
    &[
        Piece::Lit("<｜GCML｜invoke name=\""),
        Piece::Name,
        Piece::Lit("\">"),
        Piece::Ws("\n"),
        Piece::Args(Args::Text(&TextParams {
            key_open: "<｜GCML｜parameter name=\"",
            key_close_text: &[Piece::Lit("\" string=\"true\">")],
            key_close_json: &[Piece::Lit("\" string=\"false\">")],
            value_close: "</｜GCML｜parameter>",
        })),
        Piece::Ws("\n"),
        Piece::Lit("</｜GCML｜invoke>"),
    ],
    &[Piece::Ws("\n")],
);


fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("{OPEN}\n<｜GCML｜invoke name=\"{name}\">\n");
    for (k, v) in args {
        let string = v.is_string();
        s.push_str(&format!(
            "<｜GCML｜parameter name=\"{k}\" string=\"{string}\">{}</｜GCML｜parameter>\n",
            tag_text(v)
        ));
    }
    s.push_str("</｜GCML｜invoke>\n");
    s.push_str(CLOSE);
    s
}

pub(crate) static GIGACHAT35: Described = Described {
    id: FormatId::GIGACHAT35,
    description: "<｜GCML｜tool_calls> with <｜GCML｜invoke name=\"NAME\"> and <｜GCML｜parameter name=\"K\" string=\"true|false\">V</｜GCML｜parameter> (GigaChat 3.5)",
    example: r#"<｜GCML｜tool_calls>\n<｜GCML｜invoke name="get_weather">\n<｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>\n</｜GCML｜invoke>\n</｜GCML｜tool_calls>"#,
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["gigachat3.5*", "gigachat-3.5*"],
    // GigaChat 3's turn markers too, which outweigh `gigachat`'s when the GCML block is
    // there as well (a 3.5 template may still spell out `function call`).
    template_markers: &["｜GCML｜", "tool_calls", "invoke", "<|role_sep|>", "<|message_sep|>"],
    when_chosen: &WHEN_CHOSEN,
    instructions: Some(Instructions {
        how: r#"To call tools, write <｜GCML｜tool_calls>, then per call <｜GCML｜invoke name="TOOL_NAME"> with one <｜GCML｜parameter name="ARGUMENT_NAME" string="true">text</｜GCML｜parameter> per text argument (string="false" and the value as JSON for numbers, booleans, arrays and objects) and </｜GCML｜invoke>, then </｜GCML｜tool_calls>."#,
        several: "- To make several calls, write several <｜GCML｜invoke> blocks inside the one <｜GCML｜tool_calls>; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_gigachat35() {
        // The GigaChat 3.5 template keeps GigaChat 3's turns and adds the GCML block.
        let t = "{% for m in messages %}{{ m.role }}<|role_sep|>\n{{ m.content }}{% if m.tool_calls %}<｜GCML｜tool_calls>\n{% for c in m.tool_calls %}<｜GCML｜invoke name=\"{{ c.function.name }}\">\n{% endfor %}</｜GCML｜tool_calls>{% endif %}<|message_sep|>\n\n{% if m.function_call %}function call<|role_sep|>\n{% endif %}{% endfor %}assistant<|role_sep|>\n";
        assert_eq!(
            detect_template(t).unwrap().family.as_deref(),
            Some("gigachat35")
        );
        for name in [
            "ai-sage/GigaChat3.5-432B-A28B",
            "ai-sage/GigaChat3.5-432B-A28B-bf16",
            "GigaChat-3.5-Reasoning",
        ] {
            assert_eq!(model_family(name).unwrap().family, "gigachat35", "{name}");
        }
        // GigaChat 3 and 3.1 keep theirs.
        assert_eq!(
            model_family("ai-sage/GigaChat3.1-10B-A1.8B").unwrap().family,
            "gigachat"
        );
    }

    // A parameter without `string=` (the template always writes it): the tool's schema
    // types it, else it is text.
    #[test]
    fn without_the_string_attribute_the_schema_decides() {
        let text = "<｜GCML｜tool_calls><｜GCML｜invoke name=\"get_weather\"><｜GCML｜parameter name=\"city\">Nice</｜GCML｜parameter><｜GCML｜parameter name=\"days\">2</｜GCML｜parameter></｜GCML｜invoke></｜GCML｜tool_calls>";
        let mut registry = toolcall_core::Registry::new();
        registry
            .add_spec(toolcall_core::ToolSpec::new(
                "get_weather",
                "",
                serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}),
            ))
            .unwrap();
        for (tools, days) in [(Some(std::sync::Arc::new(registry)), serde_json::json!(2)), (None, serde_json::json!("2"))] {
            let p = crate::parse(text, &crate::ParseOptions { tools, ..Default::default() });
            assert_eq!(p.calls.len(), 1, "{:?}", p.diagnostics);
            assert_eq!(p.calls[0].origin.format, "gigachat35");
            assert_eq!(p.calls[0].arguments, serde_json::json!({"city": "Nice", "days": days}));
        }
    }
}
