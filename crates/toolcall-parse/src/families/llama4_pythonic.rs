//! `llama4_pythonic`: Llama 4 (pythonic tool template) writes a Python list of calls between
//! `<|python_start|>` and `<|python_end|>`.

use super::text_example::python_call;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::marked::{CallList, CallListReader};

impl FormatId {
    pub(crate) const LLAMA4_PYTHONIC: FormatId = FormatId::builtin("llama4_pythonic");
}

pub(crate) struct Llama4Pythonic;

impl Family for Llama4Pythonic {
    fn model_names(&self) -> &'static [&'static str] {
        &["llama-4*"]
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["<|python_start|>", "<|python_end|>"]
    }
    fn id(&self) -> &'static str {
        FormatId::LLAMA4_PYTHONIC.as_str()
    }
    fn description(&self) -> &'static str {
        "<|python_start|>[f(a=1), g()]<|python_end|> (Llama 4)"
    }
    fn example(&self) -> &'static str {
        r#"<|python_start|>[get_weather(city="Paris")]<|python_end|>"#
    }
    /// Llama 4's pythonic chat template asks for a bare `[f(a=1)]` list; the model writes
    /// the `<|python_start|>` markers only sometimes.
    fn also_written(&self) -> &'static [&'static str] {
        &["pythonic"]
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|python_start|>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(CallListReader::new(
            FormatId::LLAMA4_PYTHONIC,
            "<|python_start|>",
            "<|python_end|>",
            CallList::List,
        )))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <|python_start|>, a Python list of calls like [tool_name(argument="value", other=1)], then <|python_end|>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
            several: "- To make several calls, put several calls in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|python_start|>[{}]<|python_end|>", python_call(name, args)))
    }
}
