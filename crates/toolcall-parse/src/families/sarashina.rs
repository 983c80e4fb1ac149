//! `sarashina`: SB Intuitions' Sarashina writes `<|tool_calls|>` and a list of
//! `{'name', 'arguments'}` dicts as a Python literal (single quotes, `True`, `None`); no
//! closing marker: the call ends with the list. The marker is a special token a server
//! usually strips, which leaves a bare list (read by `json` in auto mode, as every bare
//! `[{"name", "arguments"}]` is).
//!
//! Sources: the SGLang model gateway's Sarashina tool parser and its tests (the marker,
//! the Python-literal list or a single dict, `True`/`False`/`None`, an apostrophe escaped
//! inside a value).

use super::described::{Body, Described};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::Instructions;

impl FormatId {
    pub(crate) const SARASHINA: FormatId = FormatId::builtin("sarashina");
}

const OPEN: &str = "<|tool_calls|>";

pub(crate) static SARASHINA: Described = Described {
    id: FormatId::SARASHINA,
    description: "<|tool_calls|>[{'name': …, 'arguments': {…}}] as a Python literal (Sarashina); ends with the list",
    example: "<|tool_calls|>[{'name': 'get_weather', 'arguments': {'city': 'Paris'}}]",
    body: Body::OpenJson {
        open: &[OPEN],
        from: OPEN.len(),
    },
    model_names: &["sarashina*"],
    template_markers: &[OPEN],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|tool_calls|> followed by a list of calls, each {"name": TOOL_NAME, "arguments": {...}}; nothing follows the list."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| format!("{OPEN}{}", name_arguments_list(name, args))),
    // No decoding constraint: the model writes Python literals (single quotes, True,
    // None), which a grammar written from JSON shape data would refuse.
    constraint: None,
    ..Described::BASE
};
