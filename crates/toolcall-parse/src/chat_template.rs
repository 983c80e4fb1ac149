//! Chat-template detection (W-FAM): which family a model's chat template writes its calls
//! in, which reasoning markers it uses, and whether its generation prompt already opens
//! `<think>` (then parse with `starts_in_reasoning`).
//!
//! A template renders past assistant turns, so the markup it writes for their tool calls is
//! the markup the model was trained to emit. Detection is a marker table: a family matches
//! when all of its markers occur in the template, and the match whose markers are longest in
//! total wins (`<tool_call>` + `<function=` + `<parameter=` beats `<tool_call>` alone). The
//! markers that decided are reported. Templates are read as text, never executed.
//!
//! The markers are each family's own ([`crate::family::Family::template_markers`] and
//! [`crate::family::Family::reasoning`], beside its reader); `<think>` is everyone's.

use serde::Serialize;
use serde_json::Value;

use crate::family::{ReasoningMarker, THINK};

/// Longest template text looked at (published templates are under 64 KiB).
const MAX_TEMPLATE: usize = 1 << 20;

/// A pair of reasoning markers found in a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReasoningMarkers {
    pub open: String,
    pub close: String,
}

/// What a chat template says about the model's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateInfo {
    /// The family id (`toolcall formats`), if a family's markers were found.
    pub family: Option<String>,
    /// The markers that decided the family.
    pub decided_by: Vec<String>,
    /// Reasoning markers the template uses.
    pub reasoning: Vec<ReasoningMarkers>,
    /// The generation prompt opens `<think>` itself: the reply starts inside reasoning.
    pub opens_reasoning: bool,
    /// The templates read: `chat_template`, each named template, `response_template`.
    pub templates: Vec<String>,
    /// The per-checkpoint suffix of the family's tags (`:opensource` of Hy4's
    /// `<tool_calls:opensource>`), from the tokenizer config's `token_suffix` or the tags
    /// the template writes; `None` for a family without suffixed tags or when neither says.
    /// The parser reads any suffix, so this is a report, not an option to pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_suffix: Option<String>,
}

/// Errors of reading a template file.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no `chat_template` (a string or a list of {{name, template}})")]
    NoTemplate,
    #[error("the template is larger than {MAX_TEMPLATE} bytes")]
    TooLarge,
}

/// Detects from one template's text (a `.jinja` file).
pub fn detect_template(template: &str) -> Result<TemplateInfo, TemplateError> {
    detect_named(&[("chat_template".to_owned(), template.to_owned())], None)
}

/// Detects from a `tokenizer_config.json` value: its `chat_template` (a string, or a list of
/// `{name, template}`) and its `response_template` when present.
pub fn detect_tokenizer_config(config: &Value) -> Result<TemplateInfo, TemplateError> {
    let mut named: Vec<(String, String)> = Vec::new();
    match config.get("chat_template") {
        Some(Value::String(t)) => named.push(("chat_template".into(), t.clone())),
        Some(Value::Array(list)) => {
            for entry in list {
                let name = entry.get("name").and_then(Value::as_str);
                let template = entry.get("template").and_then(Value::as_str);
                if let (Some(n), Some(t)) = (name, template) {
                    named.push((n.to_owned(), t.to_owned()));
                }
            }
        }
        _ => {}
    }
    if named.is_empty() {
        return Err(TemplateError::NoTemplate);
    }
    if let Some(t) = config.get("response_template").and_then(Value::as_str) {
        named.push(("response_template".into(), t.to_owned()));
    }
    let suffix = config.get("token_suffix").and_then(Value::as_str);
    detect_named(&named, suffix)
}

/// Detects from a file's text: a tokenizer config when it is a JSON object (starts with `{`
/// but not with Jinja's `{{`, `{%` or `{#`), otherwise a Jinja template.
pub fn detect_file_text(text: &str) -> Result<TemplateInfo, TemplateError> {
    if text.len() > MAX_TEMPLATE {
        return Err(TemplateError::TooLarge);
    }
    let start = text.trim_start();
    let jinja = ["{{", "{%", "{#"].iter().any(|j| start.starts_with(j));
    if start.starts_with('{') && !jinja {
        let v: Value = serde_json::from_str(text)?;
        return detect_tokenizer_config(&v);
    }
    detect_template(text)
}

fn detect_named(
    named: &[(String, String)],
    config_suffix: Option<&str>,
) -> Result<TemplateInfo, TemplateError> {
    if named.iter().map(|(_, t)| t.len()).sum::<usize>() > MAX_TEMPLATE {
        return Err(TemplateError::TooLarge);
    }
    let texts: Vec<&str> = named.iter().map(|(_, t)| t.as_str()).collect();
    let found = |m: &str| texts.iter().any(|t| t.contains(m));
    let mut best: Option<(usize, &dyn crate::family::Family)> = None;
    for f in crate::families::all() {
        let markers = f.template_markers();
        if markers.is_empty() || !markers.iter().all(|m| found(m)) {
            continue;
        }
        let weight = markers.iter().map(|m| m.chars().count()).sum();
        if best.is_none_or(|(w, _)| weight > w) {
            best = Some((weight, *f));
        }
    }
    let mut reasoning = reasoning_markers(&found);
    let token_suffix = best.and_then(|(_, f)| {
        if f.suffixed_tags().is_empty() {
            return None;
        }
        config_suffix
            .and_then(suffix_token)
            .or_else(|| written_suffix(&texts, f.suffixed_tags()))
    });
    if let (Some((_, f)), Some(suffix)) = (best, token_suffix.as_deref()) {
        // The family's suffixed reasoning markers as this checkpoint writes them.
        for m in f.suffixed_reasoning() {
            let open = format!("{}{}>", m.open, &suffix[1..]);
            let close = format!("{}{}>", m.close, &suffix[1..]);
            if !reasoning.iter().any(|r| r.open == open) {
                reasoning.push(ReasoningMarkers { open, close });
            }
        }
    }
    Ok(TemplateInfo {
        family: best.map(|(_, f)| f.id().to_owned()),
        decided_by: best
            .map(|(_, f)| {
                f.template_markers()
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect()
            })
            .unwrap_or_default(),
        reasoning,
        opens_reasoning: texts.iter().any(|t| generation_prompt_opens_think(t)),
        templates: named.iter().map(|(n, _)| n.clone()).collect(),
        token_suffix,
    })
}

/// A token suffix as a tokenizer config writes it (`:opensource`; the colon may be left
/// out): `:` and 1 to [`MAX_MARKER_SUFFIX`](crate::family::MAX_MARKER_SUFFIX) token bytes.
fn suffix_token(s: &str) -> Option<String> {
    let tail = s.strip_prefix(':').unwrap_or(s);
    let ok = !tail.is_empty()
        && tail.len() <= crate::family::MAX_MARKER_SUFFIX
        && tail
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    ok.then(|| format!(":{tail}"))
}

/// The suffix the first of `tags` written with one (`<tool_calls:opensource>`) carries in
/// the templates; the first occurrence of each tag whose suffix is a token counts.
fn written_suffix(texts: &[&str], tags: &[&str]) -> Option<String> {
    for tag in tags {
        for text in texts {
            let mut from = 0;
            while let Some(i) = text[from..].find(tag) {
                let after = &text[from + i + tag.len()..];
                // Bounded: a suffix is short, so only its window is looked at.
                let window =
                    &after.as_bytes()[..after.len().min(crate::family::MAX_MARKER_SUFFIX + 1)];
                if let Some(end) = window.iter().position(|&b| b == b'>')
                    && let Some(s) = after.get(..end).and_then(suffix_token)
                {
                    return Some(s);
                }
                from += i + tag.len();
            }
        }
    }
    None
}

/// The reasoning markers (`<think>`, then each family's in registry order) whose open and
/// close both occur. A marker whose open only extends another found one with the same
/// close (gpt-oss's `<|start|>assistant` + `<|channel|>analysis<|message|>`) is the same
/// block and is not reported twice.
fn reasoning_markers(found: &dyn Fn(&str) -> bool) -> Vec<ReasoningMarkers> {
    let mut all: Vec<ReasoningMarker> = vec![THINK];
    for f in crate::families::all() {
        for m in f.reasoning() {
            if !all.contains(m) {
                all.push(*m);
            }
        }
    }
    let present: Vec<ReasoningMarker> = all
        .into_iter()
        .filter(|m| found(m.open) && found(m.close))
        .collect();
    present
        .iter()
        .filter(|m| {
            !present.iter().any(|o| {
                o.close == m.close && o.open.len() < m.open.len() && m.open.ends_with(o.open)
            })
        })
        .map(|m| ReasoningMarkers {
            open: m.open.to_owned(),
            close: m.close.to_owned(),
        })
        .collect()
}

/// Whether the text a template writes after `add_generation_prompt` (up to the first
/// `endif`) opens `<think>` and leaves it open. Qwen3 and GLM write an empty
/// `<think></think>` there when thinking is off: that closes it again, so it does not count.
fn generation_prompt_opens_think(template: &str) -> bool {
    const WINDOW: usize = 400;
    let mut from = 0;
    while let Some(i) = template[from..].find("add_generation_prompt") {
        let start = from + i + "add_generation_prompt".len();
        let mut end = (start + WINDOW).min(template.len());
        while !template.is_char_boundary(end) {
            end -= 1;
        }
        let mut window = &template[start..end];
        if let Some(e) = window.find("endif") {
            window = &window[..e];
        }
        let mut search = 0;
        while let Some(j) = window[search..].find("<think>") {
            let after = &window[search + j + "<think>".len()..];
            if !after_is_close(after) {
                return true;
            }
            search += j + "<think>".len();
        }
        from = start;
    }
    false
}

/// `after` begins (past whitespace and written `\n` escapes) with `</think>`.
fn after_is_close(after: &str) -> bool {
    let mut rest = after;
    loop {
        let trimmed = rest.trim_start();
        if let Some(r) = trimmed.strip_prefix("\\n") {
            rest = r;
            continue;
        }
        return trimmed.starts_with("</think>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn family(t: &str) -> Option<String> {
        detect_template(t).unwrap().family
    }

    // Small templates holding the markers the published ones render for an assistant's
    // tool calls (our own text, not the published templates).
    const QWEN3_CODER: &str = "{%- for tc in message.tool_calls %}{{- '<tool_call>\\n<function=' + tc.function.name + '>\\n' }}{%- for k, v in tc.function.arguments.items() %}{{- '<parameter=' + k + '>\\n' + v + '\\n</parameter>\\n' }}{%- endfor %}{{- '</function>\\n</tool_call>' }}{%- endfor %}";
    const HERMES_QWEN3: &str = "{%- for tc in message.tool_calls %}{{- '<tool_call>\\n{\"name\": \"' }}{{ tc.function.name }}{{- '\"}\\n</tool_call>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}{# reasoning: <think> ... </think> #}";
    const DEEPSEEK_R1: &str = "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n```json\\n' + tool['function']['arguments'] + '\\n```<｜tool▁call▁end｜>'}}{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}{# </think> #}";
    const DEEPSEEK_V31: &str = "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}";
    const GLM: &str = "{% for tc in m.tool_calls %}<tool_call>{{ tc.name }}{% for k, v in tc.arguments.items() %}<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>{% endfor %}</tool_call>{% endfor %}{%- if add_generation_prompt -%}<|assistant|>{{- '\\n<think></think>' if not enable_thinking else '' -}}{%- endif -%}";
    const GPT_OSS: &str = "{{- '<|start|>assistant to=' + 'functions.' + tc.name + '<|channel|>commentary json<|message|>' + tc.arguments + '<|call|>' }}{{- '<|start|>assistant<|channel|>analysis<|message|>' + m.thinking + '<|end|>' }}";
    const COHERE: &str = "{{ '<|START_THINKING|>' + plan + '<|END_THINKING|><|START_ACTION|>[' }}{{ tool_calls|tojson }}{{ ']<|END_ACTION|>' }}{{ '<|START_RESPONSE|>' }}";
    const KIMI: &str = "{{ '<|tool_calls_section_begin|>' }}{% for tc in m.tool_calls %}{{ '<|tool_call_begin|>' + tc.id + '<|tool_call_argument_begin|>' + tc.arguments + '<|tool_call_end|>' }}{% endfor %}{{ '<|tool_calls_section_end|>' }}";

    #[test]
    fn families_are_told_apart_by_their_markers() {
        assert_eq!(family(QWEN3_CODER).as_deref(), Some("qwen3_coder"));
        assert_eq!(family(HERMES_QWEN3).as_deref(), Some("hermes"));
        assert_eq!(family(DEEPSEEK_R1).as_deref(), Some("deepseek_v3"));
        assert_eq!(family(DEEPSEEK_V31).as_deref(), Some("deepseek_v3_1"));
        assert_eq!(family(GLM).as_deref(), Some("glm"));
        assert_eq!(family(GPT_OSS).as_deref(), Some("gpt_oss"));
        assert_eq!(family(COHERE).as_deref(), Some("cohere"));
        assert_eq!(family(KIMI).as_deref(), Some("kimi_k2"));
        assert_eq!(family("{{ messages[0].content }}"), None);
    }

    // granite-20b-functioncalling's template writes `<function_call>` before each call's
    // JSON; Olmo 3's `<function_calls>` block is another family.
    #[test]
    fn granite_20b_fc_is_told_from_olmo3() {
        let granite = "{% for tc in m.tool_calls %}<function_call> {{ tc | tojson }}{% endfor %}";
        assert_eq!(family(granite).as_deref(), Some("granite_20b_fc"));
        let olmo = "<function_calls>{% for tc in m.tool_calls %}{{ tc.name }}(){% endfor %}</function_calls>";
        assert_eq!(family(olmo).as_deref(), Some("olmo3"));
    }

    // FunctionGemma's template writes Gemma 4's call syntax with its own tokens; Magistral's
    // reasons in [THINK]…[/THINK].
    #[test]
    fn functiongemma_and_magistral_thinking_are_named() {
        let fg = "{% for tc in m.tool_calls %}<start_function_call>call:{{ tc.name }}{{ '{' }}{% for k, v in tc.arguments.items() %}{{ k }}:<escape>{{ v }}<escape>{% endfor %}{{ '}' }}<end_function_call>{% endfor %}";
        assert_eq!(family(fg).as_deref(), Some("functiongemma"));
        let magistral = "{{ '[THINK]' + m.thinking + '[/THINK]' }}{{ '[TOOL_CALLS]' + tc.name + '[ARGS]' + tc.arguments }}";
        let info = detect_template(magistral).unwrap();
        assert_eq!(info.family.as_deref(), Some("mistral"));
        assert_eq!(info.reasoning[0].open, "[THINK]");
    }

    #[test]
    fn the_deciding_markers_are_reported() {
        let info = detect_template(QWEN3_CODER).unwrap();
        assert_eq!(
            info.decided_by,
            ["<tool_call>", "<function=", "<parameter="]
        );
        let info = detect_template("{{ 'plain' }}").unwrap();
        assert!(info.decided_by.is_empty());
    }

    #[test]
    fn reasoning_markers_and_an_opened_think_are_found() {
        let r1 = detect_template(DEEPSEEK_R1).unwrap();
        assert!(r1.opens_reasoning);
        assert_eq!(r1.reasoning[0].open, "<think>");
        // Qwen3 writes `<think>\n\n</think>` only to switch thinking off: not opened.
        let q = detect_template(HERMES_QWEN3).unwrap();
        assert!(!q.opens_reasoning);
        assert_eq!(q.reasoning.len(), 1);
        assert!(!detect_template(GLM).unwrap().opens_reasoning);
        let c = detect_template(COHERE).unwrap();
        assert_eq!(c.reasoning[0].open, "<|START_THINKING|>");
        let g = detect_template(GPT_OSS).unwrap();
        assert_eq!(g.reasoning[0].close, "<|end|>");
    }

    #[test]
    fn tokenizer_configs_with_one_or_several_templates() {
        let one = json!({"chat_template": KIMI, "bos_token": "<s>"});
        let info = detect_tokenizer_config(&one).unwrap();
        assert_eq!(info.family.as_deref(), Some("kimi_k2"));
        assert_eq!(info.templates, ["chat_template"]);
        let several = json!({"chat_template": [
            {"name": "default", "template": "{{ m.content }}"},
            {"name": "tool_use", "template": COHERE},
        ], "response_template": "<|START_RESPONSE|>{{ r }}<|END_RESPONSE|>"});
        let info = detect_tokenizer_config(&several).unwrap();
        assert_eq!(info.family.as_deref(), Some("cohere"));
        assert_eq!(info.templates, ["default", "tool_use", "response_template"]);
        assert!(matches!(
            detect_tokenizer_config(&json!({"bos_token": "<s>"})),
            Err(TemplateError::NoTemplate)
        ));
    }

    #[test]
    fn file_text_is_json_or_jinja() {
        let cfg = serde_json::to_string(&json!({"chat_template": GLM})).unwrap();
        assert_eq!(
            detect_file_text(&cfg).unwrap().family.as_deref(),
            Some("glm")
        );
        assert_eq!(
            detect_file_text(DEEPSEEK_V31).unwrap().family.as_deref(),
            Some("deepseek_v3_1")
        );
        assert!(matches!(
            detect_file_text("{ nope"),
            Err(TemplateError::Json(_))
        ));
        let huge = "x".repeat(MAX_TEMPLATE + 1);
        assert!(matches!(
            detect_file_text(&huge),
            Err(TemplateError::TooLarge)
        ));
    }

    #[test]
    fn a_generation_prompt_near_a_multibyte_char_is_safe() {
        let t = format!("add_generation_prompt{}", "é".repeat(300));
        assert!(!generation_prompt_opens_think(&t));
    }

    // Hy4's tags carry a per-checkpoint suffix: detect names hunyuan whatever the suffix,
    // and reports it (from the tags the template writes, or the tokenizer config's
    // `token_suffix`), with the reasoning markers as that checkpoint writes them.
    #[test]
    fn hy4_templates_with_any_suffix_name_hunyuan_and_report_the_suffix() {
        for suffix in ["opensource", "6124c78e", "a1.b-2_c"] {
            let t = format!(
                "{{%- for tc in m.tool_calls %}}<tool_calls:{suffix}>\n<tool_call:{suffix}>{{{{ tc.function.name }}}}\n{{%- for k, v in tc.function.arguments.items() %}}<arg_key:{suffix}>{{{{ k }}}}</arg_key:{suffix}>\n<arg_value:{suffix}>{{{{ v }}}}</arg_value:{suffix}>\n{{%- endfor %}}</tool_call:{suffix}>\n</tool_calls:{suffix}>{{%- endfor %}}<think:{suffix}>{{{{ r }}}}</think:{suffix}>"
            );
            let info = detect_template(&t).unwrap();
            assert_eq!(info.family.as_deref(), Some("hunyuan"), "{suffix}");
            assert_eq!(info.token_suffix.as_deref(), Some(&*format!(":{suffix}")));
            assert!(
                info.reasoning
                    .iter()
                    .any(|r| r.open == format!("<think:{suffix}>")
                        && r.close == format!("</think:{suffix}>")),
                "{suffix}: {:?}",
                info.reasoning
            );
        }
        // A template that builds the suffixed tags at render time (`'<tool_calls' + HYTK`):
        // the tokenizer config's `token_suffix` names it.
        let built = "{%- set HYTK = token_suffix %}{{- '<tool_calls' + HYTK + '>\\n<tool_call' + HYTK + '>' + tc.name }}{{- '<arg_key' + HYTK + '>' + k + '</arg_key' + HYTK + '><arg_value' + HYTK + '>' + v + '</arg_value' + HYTK + '>' }}{{- '</tool_call' + HYTK + '></tool_calls' + HYTK + '>' }}";
        let cfg = json!({"chat_template": built, "token_suffix": ":xyz9"});
        let info = detect_tokenizer_config(&cfg).unwrap();
        assert_eq!(info.family.as_deref(), Some("hunyuan"));
        assert_eq!(info.token_suffix.as_deref(), Some(":xyz9"));
        let info = detect_template(built).unwrap();
        assert_eq!(info.family.as_deref(), Some("hunyuan"));
        assert_eq!(info.token_suffix, None);
        // Hy3's unsuffixed tags: no suffix; other families never report one.
        let hy3 = "<tool_calls><tool_call>{{ n }}<tool_sep><arg_key>k</arg_key><arg_value>v</arg_value></tool_call></tool_calls>";
        assert_eq!(detect_template(hy3).unwrap().token_suffix, None);
        let cfg = json!({"chat_template": GLM, "token_suffix": ":x"});
        assert_eq!(detect_tokenizer_config(&cfg).unwrap().token_suffix, None);
    }

    #[test]
    fn a_suffix_is_a_short_token() {
        assert_eq!(suffix_token("opensource").as_deref(), Some(":opensource"));
        assert_eq!(suffix_token(":a"), Some(":a".to_owned()));
        for bad in ["", ":", "a b", "x>", "{{ s }}", &"a".repeat(65)] {
            assert_eq!(suffix_token(bad), None, "{bad:?}");
        }
        // Many suffixless tag starts cost one bounded window each.
        let t = "<tool_calls:".repeat(10_000);
        assert_eq!(written_suffix(&[&t], &["<tool_calls:"]), None);
    }
}
