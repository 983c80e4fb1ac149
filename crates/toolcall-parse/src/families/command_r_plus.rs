//! `command_r_plus`: Cohere Command R and Command R+ (2024) write their calls after
//! `Action:` as a fenced JSON list of `{"tool_name", "parameters"}` objects,
//! ```` Action: ```json\n[…]\n``` ````; the chat template writes `Action: ```json`, and
//! llama.cpp's reader also takes the fence on the next line. Command R7B and Command A
//! write `<|START_ACTION|>` instead (`cohere`).

use serde_json::{Map, Value, json};

use super::args_object::{EntryKeys, LiveList};
use super::described::{Body, Described};
use super::cohere;
use super::tags::{Block, BlockStream, BodyRule, LeadRule};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::Instructions;

impl FormatId {
    pub(crate) const COMMAND_R_PLUS: FormatId = FormatId::builtin("command_r_plus");
}

const OPENERS: [&str; 2] = ["Action: ```json", "Action:\n```json"];
const FENCE: &str = "```";

const fn block(open: &'static str) -> Block {
    Block {
        format: FormatId::COMMAND_R_PLUS,
        open,
        close: FENCE,
        lead: LeadRule::Json,
        // Cohere's `{tool_name, parameters}` entries.
        body: BodyRule::JsonItems(cohere::one),
    }
}

static BLOCKS: [Block; 2] = [block(OPENERS[0]), block(OPENERS[1])];

/// `{"tool_name": "NAME", "parameters": {…}}`, streamed as it arrives.
static ENTRY: EntryKeys = EntryKeys {
    name: &["tool_name"],
    args: &["parameters"],
    skip: &[],
};

fn live_inline(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveList::with_keys(OPENERS[0].len(), ctx.limits.max_depth, Some(&ENTRY)))
}

fn live_next_line(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveList::with_keys(OPENERS[1].len(), ctx.limits.max_depth, Some(&ENTRY)))
}

static BODIES: [Body; 2] = [
    Body::Live(&BLOCKS[0], live_inline),
    Body::Live(&BLOCKS[1], live_next_line),
];

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "Action: ```json\n{}\n```",
        json!([{"tool_name": name, "parameters": args}])
    )
}

pub(crate) static COMMAND_R_PLUS: Described = Described {
    id: FormatId::COMMAND_R_PLUS,
    description: "Action: ```json [{\"tool_name\", \"parameters\"}] ``` (Cohere Command R, Command R+)",
    example: r#"Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```"#,
    body: Body::each(&OPENERS, &BODIES),
    model_names: &["c4ai-command-r-plus*", "command-r-plus*", "c4ai-command-r-v01*", "command-r-08-2024*"],
    template_markers: &["Action: ```json"],
    instructions: Some(Instructions {
        how: r#"To call tools, write Action: ```json, then a JSON list of calls, each {"tool_name": TOOL_NAME, "parameters": {...}}, then ```."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_command_r_plus() {
        let t = "{% if tool_calls %}Action: ```json\n[{% for tc in tool_calls %}{\"tool_name\": \"{{ tc.name }}\"}{% endfor %}]```{% endif %}";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("command_r_plus"));
        assert_eq!(model_family("CohereForAI/c4ai-command-r-plus-08-2024").unwrap().family, "command_r_plus");
    }
}
