//! `llama4_pythonic`: Llama 4 (pythonic tool template) writes a Python list of calls between
//! `<|python_start|>` and `<|python_end|>`.

use super::described::{Body, Described};
use super::text_example::python_call;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::family::Instructions;

use super::marked::CallList;

impl FormatId {
    pub(crate) const LLAMA4_PYTHONIC: FormatId = FormatId::builtin("llama4_pythonic");
}


fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<|python_start|>[{}]<|python_end|>", python_call(name, args))
}

pub(crate) static LLAMA4_PYTHONIC: Described = Described {
    id: FormatId::LLAMA4_PYTHONIC,
    description: "<|python_start|>[f(a=1), g()]<|python_end|> (Llama 4)",
    example: r#"<|python_start|>[get_weather(city="Paris")]<|python_end|>"#,
    body: Body::Calls {
        open: &["<|python_start|>"],
        close: "<|python_end|>",
        layout: CallList::List,
    },
    model_names: &["llama-4*", "cogito-v2-preview-llama-109b*"],
    template_markers: &["<|python_start|>", "<|python_end|>"],
    // Llama 4's pythonic chat template asks for a bare `[f(a=1)]` list; the model writes
    // the `<|python_start|>` markers only sometimes.
    also_written: &["pythonic"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|python_start|>, a Python list of calls like [tool_name(argument="value", other=1)], then <|python_end|>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
        several: "- To make several calls, put several calls in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

