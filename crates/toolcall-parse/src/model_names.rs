//! Model name → family (W-FAM): a table of name globs, the longest match wins.
//!
//! Names are matched case-insensitively, whole or after their organisation prefix, so
//! `deepseek-ai/DeepSeek-V3.1`, `DeepSeek-V3.1` and `unsloth/DeepSeek-V3.1-GGUF` all find
//! `deepseek-v3.1*`. "Longest" counts a pattern's literal characters, so a specific entry
//! (`deepseek-v3.1*`) beats a general one (`deepseek-v3*`); a tie goes to the earlier entry.
//! `*` matches any run of characters, `?` one character. Each family lists its globs in its
//! own module ([`crate::family::Family::model_names`]).

use std::sync::LazyLock;

/// Longest model name looked at; longer names match nothing.
const MAX_NAME: usize = 512;

/// `(glob, family id)`: every registered family's [`crate::family::Family::model_names`],
/// in registry order (the order that breaks a tie).
static TABLE: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    crate::families::all()
        .iter()
        .flat_map(|f| f.model_names().iter().map(|glob| (*glob, f.id())))
        .collect()
});

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
    for (pattern, family) in TABLE.iter() {
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
    &TABLE
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

    // The 2026 names of issue 21: each finds the family its peers' parsers read it with.
    #[test]
    fn newer_models_find_their_family() {
        for (name, family) in [
            ("stepfun-ai/Step-3.5-Flash", "qwen3_coder"),
            ("Qwen/Qwen3.6-35B-A3B", "qwen3_coder"),
            ("PrimeIntellect/INTELLECT-3-FP8", "qwen3_coder"),
            ("XiaomiMiMo/MiMo-V2-Flash", "qwen3_coder"),
            ("zai-org/GLM-5.1", "glm"),
            ("poolside/Laguna-XS", "glm"),
            ("inclusionAI/Ling-3-flash", "glm"),
            ("inclusionAI/Ring-3-mini", "glm"),
            ("ibm-granite/granite-4.0-h-small", "hermes"),
            ("ibm-granite/granite-20b-functioncalling", "granite_20b_fc"),
            ("ibm-granite/granite-3.3-8b-instruct", "granite"),
            ("stepfun-ai/step3", "step3"),
            ("baidu/ERNIE-4.5-21B-A3B-Thinking", "ernie45"),
            ("tencent/Hy3-preview", "hunyuan"),
            ("MiniMaxAI/MiniMax-M3", "minimax_m3"),
            ("moonshotai/Kimi-K3", "kimi_k3"),
            ("XHToken/Spark-X2.5-4B", "glm"),
            ("arcee-ai/trinity-large-preview", "hermes"),
            ("arcee-ai/Trinity-Mini", "hermes"),
            ("ai-sage/GigaChat3.5-432B-A28B", "gigachat35"),
            ("LLM360/K2-Horizon", "k2_horizon"),
            ("sbintuitions/sarashina2.2-3b-instruct-v0.1", "sarashina"),
            ("deepcogito/cogito-671b-v2.1", "deepseek_v3"),
            ("deepcogito/cogito-v2.1-671b", "deepseek_v3"),
            (
                "deepcogito/cogito-v2-preview-deepseek-671B-MoE",
                "deepseek_v3",
            ),
            ("deepcogito/cogito-v2-preview-llama-70B", "llama"),
            ("deepcogito/cogito-v2-preview-llama-405B", "llama"),
            ("deepcogito/cogito-v1-preview-llama-3B", "llama"),
            (
                "deepcogito/cogito-v2-preview-llama-109B-MoE",
                "llama4_pythonic",
            ),
            ("deepcogito/cogito-v1-preview-qwen-14B", "hermes"),
        ] {
            assert_eq!(fam(name), Some(family), "{name}");
        }
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

    // The globs come from the families' modules: one glob names one family, so which
    // family wins never depends on the registry's order.
    #[test]
    fn no_glob_names_two_families() {
        for (i, (p, f)) in TABLE.iter().enumerate() {
            for (q, g) in TABLE.iter().skip(i + 1) {
                assert!(p != q, "{p} names both {f} and {g}");
            }
        }
        assert!(TABLE.len() >= 50, "{}", TABLE.len());
    }

    #[test]
    fn every_entry_is_lowercase() {
        for (p, f) in TABLE.iter() {
            assert_eq!(*p, p.to_ascii_lowercase(), "{p}");
            assert!(!f.is_empty());
        }
    }
}
