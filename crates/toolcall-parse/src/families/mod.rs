//! The family registry: one module per model family, one line each in [`registry!`] below,
//! in auto-mode priority order (a [`described::Described`] static, or for the few families
//! with an opener kind its tables do not hold a type implementing [`Family`]). See
//! [`crate::family`] for how to add one.

use std::ops::Range;

use serde_json::Value;

use crate::builder::{Ctx, Outcome};
use crate::family::{Family, JsonCx};

// Helpers shared by several families (not families themselves).
pub(crate) mod args_object;
pub(crate) mod bare_json;
pub(crate) mod described;
pub(crate) mod marked;
pub(crate) mod native;
pub(crate) mod schema_rules;
pub(crate) mod tags;
pub(crate) mod text_example;

/// Declares each family module and lists its family (a static or a unit struct), in
/// priority order.
macro_rules! registry {
    ($($module:ident :: $family:ident),* $(,)?) => {
        $(pub(crate) mod $module;)*
        static FAMILIES: &[&dyn Family] = &[$(&$module::$family),*];
    };
}

registry! {
    // Explicit markup first; families sharing an opener are tried in this order.
    hermes::HERMES,
    qwen3_coder::QWEN3_CODER,
    glm::GLM,
    seed_oss::SEED_OSS,
    functionary_v3_1::FUNCTIONARY_V3_1,
    functionary_v3_2::FUNCTIONARY_V3_2,
    mistral::MISTRAL,
    llama::LLAMA,
    llama3_builtin::LLAMA3_BUILTIN,
    nemotron::NEMOTRON,
    hunyuan::HUNYUAN,
    tool_calls_tag::TOOL_CALLS_TAG,
    longcat::LONGCAT,
    internlm::INTERNLM,
    lfm2::LFM2,
    llama4_pythonic::LLAMA4_PYTHONIC,
    olmo3::OLMO3,
    minicpm3::MINICPM3,
    kimi_k2::KIMI_K2,
    kimi_k3::KIMI_K3,
    deepseek_v3::DEEPSEEK_V3,
    deepseek_v3_1::DEEPSEEK_V3_1,
    deepseek_dsml::DEEPSEEK_DSML,
    minimax_m2::MINIMAX_M2,
    minimax_m3::MINIMAX_M3,
    minicpm5::MINICPM5,
    dots::DOTS,
    step3::STEP3,
    cohere::COHERE,
    command_r_plus::COMMAND_R_PLUS,
    apertus::APERTUS,
    granite::GRANITE,
    granite_20b_fc::GRANITE_20B_FC,
    sarashina::SARASHINA,
    functools::FUNCTOOLS,
    gemma4::GEMMA4,
    functiongemma::FUNCTIONGEMMA,
    gpt_oss::GPT_OSS,
    gigachat::GIGACHAT,
    gigachat35::GIGACHAT35,
    inkling::INKLING,
    muse_glimmer::MUSE_GLIMMER,
    k2_horizon::K2_HORIZON,
    // Hermes' markup with its own around it, read only when chosen.
    ernie45::ERNIE45,
    // Native provider shapes, then the JSON shapes from the most to the least specific.
    openai_chat::OPENAI_CHAT,
    responses::RESPONSES,
    gemini::GEMINI,
    anthropic::ANTHROPIC,
    tools_envelope::TOOLS_ENVELOPE,
    action_response::ACTION_RESPONSE,
    json::JSON,
    xlam::XLAM,
    // Text conventions, then the opt-in fallbacks.
    pythonic::Pythonic,
    key_value::KeyValue,
    call_syntax::CallSyntax,
    fallback::FALLBACK,
}

/// Every registered family, in auto-mode priority order.
pub(crate) fn all() -> &'static [&'static dyn Family] {
    FAMILIES
}

/// One line of `toolcall formats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatInfo {
    pub id: &'static str,
    pub description: &'static str,
    pub example: &'static str,
    /// Model-name globs that pick this family ([`crate::model_family`]).
    pub model_names: &'static [&'static str],
    /// Markers whose presence in a chat template names this family
    /// ([`crate::detect_template`]).
    pub template_markers: &'static [&'static str],
    /// Reasoning blocks its models write besides `<think>`.
    pub reasoning: &'static [crate::ReasoningMarker],
    /// Why it has no model names, template markers or fixtures of its own (a convention
    /// many models share); `None` for a model family.
    pub generic_because: Option<&'static str>,
}

/// Every format the parser reads, with a one-line description and example.
pub fn formats() -> Vec<FormatInfo> {
    FAMILIES
        .iter()
        .map(|f| FormatInfo {
            id: f.id(),
            description: f.description(),
            example: f.example(),
            model_names: f.model_names(),
            template_markers: f.template_markers(),
            reasoning: f.reasoning(),
            generic_because: f.generic_because(),
        })
        .collect()
}

/// Offers a decoded bare JSON value to the enabled families in priority order.
pub(crate) fn classify_value(
    v: &mut Value,
    ctx: &Ctx,
    at_start: bool,
    span: Range<usize>,
) -> Option<Outcome> {
    let cx = JsonCx {
        ctx,
        span,
        at_start,
    };
    ctx.families.iter().find_map(|f| f.classify_json(v, &cx))
}

/// [`classify_value`] of a value as [`crate::scanner::decode_calls_prefix`] decoded it:
/// call objects are offered typed to the families that read them so
/// ([`Family::classify_calls`]) and the `Value` is built only when a family needs it, so
/// the answer is `classify_value`'s for the same text. `Err`: no family claimed it, and the
/// value (for the reasons and labels of text left as is).
pub(crate) fn classify_decoded(
    d: json::Decoded,
    ctx: &Ctx,
    at_start: bool,
    span: Range<usize>,
) -> Result<Outcome, Value> {
    let mut doc = match d {
        json::Decoded::Calls(doc) => doc,
        json::Decoded::Value(mut v) => {
            return classify_value(&mut v, ctx, at_start, span).ok_or(v);
        }
    };
    let cx = JsonCx {
        ctx,
        span,
        at_start,
    };
    let mut families = ctx.families.iter();
    while let Some(f) = families.next() {
        match f.classify_calls(&mut doc, &cx) {
            Some(Some(o)) => return Ok(o),
            Some(None) => {}
            None => {
                // From this family on, the value as `classify_value` offers it.
                let mut v = doc.into_value();
                return match f.classify_json(&mut v, &cx) {
                    Some(o) => Ok(o),
                    None => families.find_map(|f| f.classify_json(&mut v, &cx)).ok_or(v),
                };
            }
        }
    }
    Err(doc.into_value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FormatId;

    // The registry is the one list of formats: ids unique, every builtin id registered.
    #[test]
    fn ids_are_unique_and_builtins_registered() {
        let ids: Vec<&str> = FAMILIES.iter().map(|f| f.id()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "duplicate family id in {ids:?}");
        for b in [
            FormatId::HERMES,
            FormatId::MISTRAL,
            FormatId::LLAMA,
            FormatId::JSON,
            FormatId::PYTHONIC,
            FormatId::KEY_VALUE,
            FormatId::CALL_SYNTAX,
            FormatId::FALLBACK,
            FormatId::TOOLS_ENVELOPE,
            FormatId::ACTION_RESPONSE,
            FormatId::OPENAI_CHAT,
            FormatId::RESPONSES,
            FormatId::GEMINI,
            FormatId::ANTHROPIC,
        ] {
            assert_eq!(FormatId::from_name(b.as_str()), Some(b));
        }
    }

    // A described family takes what it does not give from `Described::BASE`, which has no
    // id, description or example: every registered family gives all three.
    #[test]
    fn every_family_gives_an_id_a_description_and_an_example() {
        for f in FAMILIES {
            assert!(
                !f.id().is_empty(),
                "a family without an id: {}",
                f.description()
            );
            assert!(!f.description().is_empty(), "{}: no description", f.id());
            assert!(!f.example().is_empty(), "{}: no example", f.id());
        }
    }

    // Every family's advertised example reads back as a call of that family.
    #[test]
    fn every_example_parses_as_its_family() {
        for f in FAMILIES {
            // Positional call syntax needs a schema; fallbacks need rules.
            if ["call_syntax", "fallback"].contains(&f.id()) {
                continue;
            }
            let text = f.example().replace("\\n", "\n");
            let opts = crate::ParseOptions {
                format: crate::FormatSelection::Only(f.id().to_owned()),
                ..Default::default()
            };
            let p = crate::parse(&text, &opts);
            assert!(
                !p.calls.is_empty() && p.calls.iter().all(|c| c.origin.format == f.id()),
                "{}: {text}\n{:?}",
                f.id(),
                p.diagnostics
            );
        }
    }
}
