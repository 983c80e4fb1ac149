//! Model name → family (W-FAM): a table of name globs, the longest match wins.
//!
//! Names are matched case-insensitively, whole or after their organisation prefix, so
//! `deepseek-ai/DeepSeek-V3.1`, `DeepSeek-V3.1` and `unsloth/DeepSeek-V3.1-GGUF` all find
//! `deepseek-v3.1*`. "Longest" counts a pattern's literal characters, so a specific entry
//! (`deepseek-v3.1*`) beats a general one (`deepseek-v3*`); a tie goes to the earlier entry.
//! `*` matches any run of characters, `?` one character.

/// Longest model name looked at; longer names match nothing.
const MAX_NAME: usize = 512;

/// `(glob, family id)`. Family ids are those of `toolcall formats`; an entry may name a family
/// that is not registered yet, [`crate::FormatSelection::for_model`] then falls back to auto.
static TABLE: &[(&str, &str)] = &[
    // Qwen: Qwen2.5 / Qwen3 write Hermes JSON; Qwen3-Coder and Qwen3.5 the XML form.
    ("qwen2.5*", "hermes"),
    ("qwen3*", "hermes"),
    ("qwq*", "hermes"),
    ("hermes-*", "hermes"),
    ("qwen3-coder*", "qwen3_coder"),
    ("qwen3.5*", "qwen3_coder"),
    ("*nemotron-3-nano*", "qwen3_coder"),
    ("seed-oss*", "seed_oss"),
    ("glm-4.5*", "glm"),
    ("glm-4.6*", "glm"),
    ("glm-4.7*", "glm"),
    ("functionary-*v3.1*", "functionary_v3_1"),
    ("functionary-*v3.2*", "functionary_v3_2"),
    ("llama-3.1*", "llama"),
    ("llama-3.2*", "llama"),
    ("llama-3.3*", "llama"),
    ("meta-llama-3.1*", "llama"),
    ("llama-4*", "llama4_pythonic"),
    ("mistral-*", "mistral"),
    ("mixtral-*", "mistral"),
    ("ministral-*", "mistral"),
    ("magistral-*", "mistral"),
    ("devstral-*", "mistral"),
    ("codestral-*", "mistral"),
    ("pixtral-*", "mistral"),
    ("deepseek-v3", "deepseek_v3"),
    ("deepseek-v3-*", "deepseek_v3"),
    ("deepseek-r1*", "deepseek_v3"),
    ("deepseek-v3.1*", "deepseek_v3_1"),
    ("deepseek-v3.2*", "deepseek_dsml"),
    ("deepseek-v4*", "deepseek_dsml"),
    ("kimi-k2*", "kimi_k2"),
    ("gpt-oss*", "gpt_oss"),
    ("gemma-4*", "gemma4"),
    ("step3*", "step3"),
    ("step-3*", "step3"),
    ("c4ai-command-r7b*", "cohere"),
    ("command-r7b*", "cohere"),
    ("c4ai-command-a*", "cohere"),
    ("command-a-*", "cohere"),
    ("minimax-m2*", "minimax_m2"),
    ("granite-3*", "granite"),
    ("*-nemotron-*", "nemotron"),
    ("llama-3_3-nemotron*", "nemotron"),
    ("hunyuan*", "tool_calls_tag"),
    ("ai21-jamba*", "tool_calls_tag"),
    ("jamba-*", "tool_calls_tag"),
    ("apriel*", "tool_calls_tag"),
    ("phi-4-mini*", "functools"),
    ("firefunction*", "functools"),
    ("internlm*", "internlm"),
    ("longcat*", "longcat"),
    ("apertus*", "apertus"),
    ("*xlam*", "xlam"),
    ("lfm2*", "lfm2"),
    ("olmo-3*", "olmo3"),
];

/// The table entry a model name matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFamily {
    /// The family id (`toolcall formats`).
    pub family: &'static str,
    /// The glob that decided.
    pub pattern: &'static str,
}

/// The family a model name writes its calls in, if the table knows the name.
pub fn model_family(name: &str) -> Option<ModelFamily> {
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_NAME {
        return None;
    }
    let full = name.to_ascii_lowercase();
    let base = full.rsplit('/').next().unwrap_or(&full);
    let mut best: Option<(usize, ModelFamily)> = None;
    for (pattern, family) in TABLE {
        if !(glob(pattern, base) || glob(pattern, &full)) {
            continue;
        }
        let weight = pattern.bytes().filter(|b| *b != b'*').count();
        if best.is_none_or(|(w, _)| weight > w) {
            best = Some((weight, ModelFamily { family, pattern }));
        }
    }
    best.map(|(_, m)| m)
}

/// Every `(glob, family)` entry, for documentation and listings.
pub fn model_table() -> &'static [(&'static str, &'static str)] {
    TABLE
}

/// Glob match of a lowercase pattern against a lowercase name, by bytes: `*` any run, `?`
/// one byte. Backtracks only to the last `*`, so the cost is bounded by
/// `pattern.len() * name.len()` (both short: the name is capped at `MAX_NAME`).
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam(name: &str) -> Option<&'static str> {
        model_family(name).map(|m| m.family)
    }

    #[test]
    fn the_issue_examples_find_their_family() {
        assert_eq!(
            fam("Qwen/Qwen3-Coder-30B-A3B-Instruct"),
            Some("qwen3_coder")
        );
        assert_eq!(fam("deepseek-ai/DeepSeek-V3.1"), Some("deepseek_v3_1"));
        assert_eq!(fam("moonshotai/Kimi-K2-Instruct"), Some("kimi_k2"));
        assert_eq!(fam("openai/gpt-oss-20b"), Some("gpt_oss"));
    }

    #[test]
    fn the_longest_match_wins() {
        assert_eq!(fam("Qwen/Qwen3-8B"), Some("hermes"));
        assert_eq!(
            fam("Qwen3-Coder-480B-A35B-Instruct-FP8"),
            Some("qwen3_coder")
        );
        assert_eq!(fam("deepseek-ai/DeepSeek-V3-0324"), Some("deepseek_v3"));
        assert_eq!(fam("deepseek-ai/DeepSeek-V3"), Some("deepseek_v3"));
        assert_eq!(fam("deepseek-ai/DeepSeek-V3.2-Exp"), Some("deepseek_dsml"));
        assert_eq!(
            fam("nvidia/Llama-3.1-Nemotron-Nano-8B-v1"),
            Some("nemotron")
        );
        assert_eq!(
            fam("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"),
            Some("qwen3_coder")
        );
        assert_eq!(
            model_family("deepseek-ai/DeepSeek-V3.1-Terminus").map(|m| m.pattern),
            Some("deepseek-v3.1*")
        );
    }

    #[test]
    fn case_and_organisation_do_not_matter() {
        assert_eq!(fam("GPT-OSS-120B"), Some("gpt_oss"));
        assert_eq!(fam("unsloth/gpt-oss-20b-GGUF"), Some("gpt_oss"));
        assert_eq!(fam("  zai-org/GLM-4.6  "), Some("glm"));
        assert_eq!(fam("Salesforce/Llama-xLAM-2-8b-fc-r"), Some("xlam"));
    }

    #[test]
    fn unknown_empty_and_huge_names_match_nothing() {
        assert_eq!(fam("my-own-model"), None);
        assert_eq!(fam(""), None);
        assert_eq!(fam(&"qwen3-coder".repeat(100)), None);
        // `deepseek-v3` is exact: a later major version is not V3.
        assert_eq!(fam("deepseek-v30"), None);
    }

    #[test]
    fn glob_handles_stars_and_question_marks() {
        assert!(glob("a*c", "abbbc"));
        assert!(glob("*", ""));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("*x*y*", "0x1y2"));
        assert!(!glob("*x*y", "0y1x"));
    }

    #[test]
    fn for_model_picks_the_registered_family_or_auto() {
        use crate::{FormatId, FormatSelection};
        let names = [
            "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
            "Qwen/Qwen3-8B",
            "openai/gpt-oss-20b",
            "Qwen/Qwen3-Coder-30B-A3B-Instruct",
            "someone/unknown",
        ];
        for name in names {
            let selection = FormatSelection::for_model(name);
            match model_family(name) {
                Some(m) if FormatId::from_name(m.family).is_some() => {
                    assert!(matches!(selection, FormatSelection::Only(f) if f == m.family));
                }
                _ => assert!(matches!(selection, FormatSelection::Auto), "{name}"),
            }
        }
        assert!(matches!(
            FormatSelection::for_model("Qwen/Qwen2.5-7B-Instruct"),
            FormatSelection::Only(f) if f == "hermes"
        ));
    }

    /// Llama 4's pythonic template asks for a bare list: a model picked by name must still
    /// find `[get_time()]` (the gateway's recorded Llama 4 reply gave no call before).
    #[test]
    fn a_llama_4_model_reads_its_bare_pythonic_list_too() {
        use std::sync::Arc;

        use crate::{FormatSelection, ParseOptions, parse};
        use toolcall_core::{Registry, ToolSpec};

        let selection = FormatSelection::for_model("meta-llama/Llama-4-Scout-17B-16E-Instruct");
        assert!(
            matches!(&selection, FormatSelection::Priority(v) if v == &["llama4_pythonic", "pythonic"]),
            "{selection:?}"
        );
        let mut tools = Registry::new();
        tools
            .add_spec(ToolSpec::new(
                "get_time",
                "",
                serde_json::json!({"type": "object", "properties": {}}),
            ))
            .unwrap();
        let options = ParseOptions {
            format: selection,
            tools: Some(Arc::new(tools)),
            ..ParseOptions::default()
        };
        for text in ["[get_time()]", "<|python_start|>[get_time()]<|python_end|>"] {
            let parsed = parse(text, &options);
            assert_eq!(parsed.calls.len(), 1, "{text}: {parsed:?}");
            assert_eq!(parsed.calls[0].name, "get_time");
            assert_eq!(parsed.calls[0].arguments, serde_json::json!({}));
            assert_eq!(parsed.text.trim(), "", "{text}");
        }
    }

    #[test]
    fn every_entry_is_lowercase() {
        for (p, f) in TABLE {
            assert_eq!(*p, p.to_ascii_lowercase(), "{p}");
            assert!(!f.is_empty());
        }
    }
}
