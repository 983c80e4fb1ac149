//! `olmo3`: Olmo 3 writes one Python call per line between `<function_calls>` and
//! `</function_calls>`.

use super::described::{Body, Described};
use super::marked::CallList;
use super::text_example::python_call;
use crate::FormatId;
use crate::family::Instructions;

impl FormatId {
    pub(crate) const OLMO3: FormatId = FormatId::builtin("olmo3");
}

pub(crate) static OLMO3: Described = Described {
    id: FormatId::OLMO3,
    description: "<function_calls>\\nf(a=1)\\n</function_calls>, one call per line (Olmo 3)",
    example: "<function_calls>\\nget_weather(city=\"Paris\")\\n</function_calls>",
    body: Body::Calls {
        open: &["<function_calls>"],
        close: "</function_calls>",
        layout: CallList::Lines,
    },
    model_names: &["olmo-3*"],
    template_markers: &["<function_calls>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <function_calls>, then one Python call per line like tool_name(argument="value", other=1), then </function_calls>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
        several: "- To make several calls, write each on its own line inside the one block; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!("<function_calls>\n{}\n</function_calls>", python_call(name, args))
    }),
    constraint: None,
    ..Described::BASE
};
