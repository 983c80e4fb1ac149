//! `ernie45`: ERNIE 4.5 writes Hermes' `<tool_call>{json}</tool_call>`, and around it markup
//! of its own that is read only when the family is chosen (`--format ernie45`, or an
//! ERNIE 4.5 model's name), never in auto mode, where the same text is prose:
//! - its answer wrapped in `<response>…</response>`: the tags are removed, the answer is
//!   the visible text;
//! - the Thinking models' template opens `<think>`, so the reply starts inside reasoning
//!   and only closes it (`abc\n</think>\n\n<response>\ndef\n</response>`, or a call after
//!   the `</think>`).
//!
//! Sources: vLLM's `ernie45_tool_parser.py` and `ernie45_reasoning_parser.py` (the output
//! layouts above; the reasoning parser removes the `<response>` tags from the content);
//! ERNIE-4.5-21B-A3B-Thinking's chat template (history answers written
//! `<response>\n…\n</response>`, the generation prompt ending `<think>\n`).

use super::described::{Body, Described};
use serde_json::{Map, Value};

use super::hermes::{self, tool_call_reader};
use super::text_example::name_arguments;
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{RegionReader, WhenChosen};

impl FormatId {
    pub(crate) const ERNIE45: FormatId = FormatId::builtin("ernie45");
}


static WHEN_CHOSEN: WhenChosen = WhenChosen {
    reasoning: &[],
    strip: &["<response>", "</response>"],
    opens_think: true,
};

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(tool_call_reader(FormatId::ERNIE45, ctx))
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<tool_call>{}</tool_call>", name_arguments(name, args))
}

pub(crate) static ERNIE45: Described = Described {
    id: FormatId::ERNIE45,
    description: "<tool_call>{json}</tool_call> (ERNIE 4.5); when chosen, its <response> wrapper is removed and a reply may start inside the <think> its template opened",
    example: r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#,
    body: Body::Own {
        openers: &[hermes::OPEN],
        reader,
        // Hermes' test, the same function: `open` asks it once for both families.
        declines: hermes::tool_call_declines_at,
    },
    model_names: &["ernie-4.5*", "ernie4.5*"],
    template_markers: &["<tool_call>", "</tool_call>", "<response>"],
    when_chosen: &WHEN_CHOSEN,
    instructions: hermes::HERMES.instructions,
    example_call: Some(example_call),
    // Hermes' `<tool_call>{json}</tool_call>`: the `<response>` wrapper around the answer is
    // prose to the constraint.
    constraint: Some(&hermes::CONSTRAINT),
    // Hermes' reader: `<tool_call>` directly followed by `<` has no JSON body.
    repeats_declined: &[hermes::OPEN],
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{FormatSelection, ParseOptions, detect_template, model_family, parse};

    #[test]
    fn names_and_template_pick_ernie45() {
        assert_eq!(
            model_family("baidu/ERNIE-4.5-21B-A3B-Thinking").unwrap().family,
            "ernie45"
        );
        let t = "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}{{ '<response>\\n' + m['content'] + '\\n</response>\\n' }}{{ '<tool_call>\\n' + tc | tojson + '\\n</tool_call>' }}";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("ernie45"));
    }

    // In auto mode the wrapper and a lone `</think>`'s reasoning are not read as ERNIE's:
    // `<response>` stays text; only a chosen family reads it.
    #[test]
    fn auto_mode_leaves_the_wrapper_alone() {
        let text = "<response>\nHi\n</response>";
        assert_eq!(parse(text, &ParseOptions::default()).text, text);
        let chosen = ParseOptions {
            format: FormatSelection::for_model("baidu/ERNIE-4.5-21B-A3B-Thinking"),
            ..ParseOptions::default()
        };
        assert_eq!(parse(text, &chosen).text.trim(), "Hi");
    }
}
