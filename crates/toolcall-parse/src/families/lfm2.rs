//! `lfm2`: LFM2 writes a Python list of calls between `<|tool_call_start|>` and
//! `<|tool_call_end|>`.

use super::described::{Body, Described};
use super::marked::CallList;
use super::text_example::python_call;
use crate::FormatId;
use crate::family::Instructions;

impl FormatId {
    pub(crate) const LFM2: FormatId = FormatId::builtin("lfm2");
}

pub(crate) static LFM2: Described = Described {
    id: FormatId::LFM2,
    description: "<|tool_call_start|>[f(a=1), g()]<|tool_call_end|> (LFM2)",
    example: r#"<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>"#,
    body: Body::Calls {
        open: &["<|tool_call_start|>"],
        close: "<|tool_call_end|>",
        layout: CallList::List,
    },
    model_names: &["lfm2*"],
    template_markers: &["<|tool_call_start|>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|tool_call_start|>, a Python list of calls like [tool_name(argument="value", other=1)], then <|tool_call_end|>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
        several: "- To make several calls, put several calls in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!("<|tool_call_start|>[{}]<|tool_call_end|>", python_call(name, args))
    }),
    constraint: None,
    ..Described::BASE
};
