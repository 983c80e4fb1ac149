//! `hermes`: `<tool_call>{json}</tool_call>` (Hermes, Qwen 2.5/3). Explicit markup: any name
//! is accepted (flagged when unregistered). The closing tag may be missing at the very end
//! of the output; the content is still a call when its JSON is complete, never when cut.

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";
