//! `lfm2`: LFM2 writes a Python list of calls between `<|tool_call_start|>` and
//! `<|tool_call_end|>`.

use super::text_example::python_call;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::marked::{CallList, CallListReader};

impl FormatId {
    pub(crate) const LFM2: FormatId = FormatId::builtin("lfm2");
}

pub(crate) struct Lfm2;

impl Family for Lfm2 {
    fn id(&self) -> &'static str {
        FormatId::LFM2.as_str()
    }
    fn description(&self) -> &'static str {
        "<|tool_call_start|>[f(a=1), g()]<|tool_call_end|> (LFM2)"
    }
    fn example(&self) -> &'static str {
        r#"<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|tool_call_start|>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(CallListReader::new(
            FormatId::LFM2,
            "<|tool_call_start|>",
            "<|tool_call_end|>",
            CallList::List,
        )))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <|tool_call_start|>, a Python list of calls like [tool_name(argument="value", other=1)], then <|tool_call_end|>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
            several: "- To make several calls, put several calls in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|tool_call_start|>[{}]<|tool_call_end|>", python_call(name, args)))
    }
}
