//! `olmo3`: Olmo 3 writes one Python call per line between `<function_calls>` and
//! `</function_calls>`.

use super::text_example::python_call;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::marked::{CallList, CallListReader};

impl FormatId {
    pub(crate) const OLMO3: FormatId = FormatId::builtin("olmo3");
}

pub(crate) struct Olmo3;

impl Family for Olmo3 {
    fn id(&self) -> &'static str {
        FormatId::OLMO3.as_str()
    }
    fn description(&self) -> &'static str {
        "<function_calls>\\nf(a=1)\\n</function_calls>, one call per line (Olmo 3)"
    }
    fn example(&self) -> &'static str {
        "<function_calls>\\nget_weather(city=\"Paris\")\\n</function_calls>"
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<function_calls>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(CallListReader::new(
            FormatId::OLMO3,
            "<function_calls>",
            "</function_calls>",
            CallList::Lines,
        )))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <function_calls>, then one Python call per line like tool_name(argument="value", other=1), then </function_calls>. Strings are double-quoted; numbers, True, False, lists and dicts are Python literals."#,
            several: "- To make several calls, write each on its own line inside the one block; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<function_calls>\n{}\n</function_calls>", python_call(name, args)))
    }
}
