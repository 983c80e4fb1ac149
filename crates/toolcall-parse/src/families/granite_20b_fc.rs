//! `granite_20b_fc`: IBM granite-20b-functioncalling writes each call as `<function_call>`
//! followed by one JSON `{name, arguments}` object, with no closing marker: the call ends
//! with its JSON, and the next call starts with its own `<function_call>` (vLLM's
//! `granite-20b-fc` parser and its chat template).

use super::described::{Body, Described};
use super::text_example::name_arguments;
use crate::FormatId;
use crate::family::Instructions;

impl FormatId {
    pub(crate) const GRANITE_20B_FC: FormatId = FormatId::builtin("granite_20b_fc");
}

const OPEN: &str = "<function_call>";

pub(crate) static GRANITE_20B_FC: Described = Described {
    id: FormatId::GRANITE_20B_FC,
    description: "<function_call> {\"name\", \"arguments\"} per call (granite-20b-functioncalling); ends with the JSON",
    example: r#"<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}"#,
    body: Body::OpenJson {
        open: &[OPEN],
        from: OPEN.len(),
    },
    model_names: &["granite-20b-functioncalling*", "granite-20b-fc*"],
    template_markers: &[OPEN],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <function_call> followed by one JSON object {"name": TOOL_NAME, "arguments": {...}}; nothing closes it."#,
        several: "- To make several calls, write several <function_call> objects, one after the other; they run in that order.\n",
    }),
    example_call: Some(|name, args| format!("<function_call> {}", name_arguments(name, args))),
    constraint: None,
    ..Described::BASE
};
