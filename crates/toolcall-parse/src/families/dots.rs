//! `dots`: dots models write `<dots_function_call>` around one or more
//! `<invoke name="NAME">` elements with `<parameter name="K">V</parameter>` children:
//! MiniMax M2's layout behind their own block tags, read by the same `invoke` reader.
//! Values are text typed by the tool's schema.
//!
//! Source: vLLM's `vllm/tool_parsers/dots_tool_parser.py` (the block tokens and the
//! `invoke`/`parameter` body; its JSON-object fallback inside the block is not read here).

use super::described::{Body, Described};
use super::minimax_m2;
use super::tags::{Block, BodyRule, LeadRule};
use super::text_example::named_parameters;
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const DOTS: FormatId = FormatId::builtin("dots");
}

/// MiniMax M2's `invoke` reader, lead test and streaming tags, behind dots' block tags.
static BLOCK: Block = Block {
    format: FormatId::DOTS,
    open: "<dots_function_call>",
    close: "</dots_function_call>",
    lead: LeadRule::Invoke(&minimax_m2::TAGS),
    body: BodyRule::Invokes(&minimax_m2::TAGS),
};

/// The call markup a decoder is held to: MiniMax M2's `invoke` elements in dots' block.
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<dots_function_call>")],
    &[Piece::Lit("</dots_function_call>")],
    minimax_m2::INVOKE_CALL,
    &[Piece::Ws("\n")],
);

pub(crate) static DOTS: Described = Described {
    id: FormatId::DOTS,
    description: "<dots_function_call><invoke name=\"NAME\"><parameter name=\"K\">V</parameter></invoke></dots_function_call> (dots); values typed by the schema",
    example: r#"<dots_function_call><invoke name="get_weather"><parameter name="city">Paris</parameter></invoke></dots_function_call>"#,
    body: Body::Tags(&BLOCK, &minimax_m2::STREAM),
    model_names: &["dots.llm*", "dots-llm*"],
    template_markers: &["<dots_function_call>", "<invoke name="],
    instructions: Some(Instructions {
        how: r#"To call tools, write <dots_function_call>, then per call <invoke name="TOOL_NAME"> with one <parameter name="ARGUMENT_NAME">value</parameter> per argument (text as is; numbers, booleans, arrays and objects as JSON) and </invoke>, then </dots_function_call>."#,
        several: "- To make several calls, write several <invoke> blocks inside the one <dots_function_call>; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!(
            "<dots_function_call>\n<invoke name=\"{name}\">\n{}</invoke>\n</dots_function_call>",
            named_parameters("parameter", "\n", args)
        )
    }),
    constraint: Some(&CONSTRAINT),
    untyped: crate::family::NULL_WORD,
    ..Described::BASE
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_dots() {
        let t = "{% for tc in m.tool_calls %}<dots_function_call>\n<invoke name=\"{{ tc.name }}\">\n{% for k, v in tc.arguments.items() %}<parameter name=\"{{ k }}\">{{ v }}</parameter>\n{% endfor %}</invoke>\n</dots_function_call>{% endfor %}";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("dots"));
        assert_eq!(model_family("rednote-hilab/dots.llm2.inst").unwrap().family, "dots");
    }
}
