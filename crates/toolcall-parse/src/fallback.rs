//! `fallback` (F-FB-1): declarative per-tool rules, off unless configured, tried
//! in the order given and only when no other format produced a call. Every match adds a
//! diagnostic naming the rule that fired. Rules (JSON file, `--fallbacks FILE`):
//!
//! ```json
//! [{"tool":"highlight_object","rule":"label_list","argument":"object"},
//!  {"tool":"highlight_object","rule":"intent","argument":"object",
//!   "verbs":["highlight","highlighting","point out","showing","locating"]},
//!  {"tool":"highlight_object","rule":"completion","argument":"object",
//!   "phrases":["is now highlighted","are now highlighted"]}]
//! ```
//!
//! `label_list`: a JSON array of objects with a `label` string (`[{"box_2d":[...],"label":"cup"}]`)
//! → the first label. `intent`: a verb, an optional article, then words up to punctuation or
//! a stop word. `completion`: the words before a phrase, after the last article.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolcall_core::Diagnostic;

use crate::FormatId;
use crate::builder::Draft;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackKind {
    LabelList,
    Intent,
    Completion,
}

/// One fallback rule for one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackRule {
    pub tool: String,
    pub rule: FallbackKind,
    /// The argument that receives the extracted value.
    pub argument: String,
    /// `intent`: verbs that introduce the value (default: `VERBS`, "highlight", "point out", ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<String>,
    /// `completion`: phrases that follow the value (default: `is/are now highlighted`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrases: Vec<String>,
    /// `intent`: words that end the value (default: for, in, on, at, now, please, so, and, to).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_words: Vec<String>,
}

/// Reads a rules file's text.
pub fn load_fallback_rules(json: &str) -> Result<Vec<FallbackRule>, crate::ParseError> {
    serde_json::from_str(json).map_err(crate::ParseError::Fallbacks)
}

const VERBS: &[&str] = &[
    "highlight",
    "highlighting",
    "point out",
    "showing",
    "locating",
];
const PHRASES: &[&str] = &["is now highlighted", "are now highlighted"];
const STOP: &[&str] = &[
    "for", "in", "on", "at", "now", "please", "so", "and", "to", "with",
];
const ARTICLES: &[&str] = &["the", "your", "my", "a", "an", "this", "that"];

fn list<'a>(given: &'a [String], default: &'a [&'a str]) -> Vec<&'a str> {
    if given.is_empty() {
        default.to_vec()
    } else {
        given.iter().map(String::as_str).collect()
    }
}

fn word_boundary(text: &[u8], at: usize) -> bool {
    !text.get(at).is_some_and(u8::is_ascii_alphanumeric)
}

fn cleanup(words: &str, stop: &[&str]) -> Option<String> {
    let mut kept: Vec<&str> = Vec::new();
    for (i, w) in words.split_whitespace().enumerate() {
        let lw = w.to_ascii_lowercase();
        if i == 0 && ARTICLES.contains(&lw.as_str()) && kept.is_empty() {
            continue;
        }
        if stop.contains(&lw.as_str()) {
            break;
        }
        kept.push(w);
    }
    let s = kept.join(" ");
    (!s.is_empty()).then_some(s)
}

fn intent(text: &str, rule: &FallbackRule) -> Option<(String, std::ops::Range<usize>)> {
    let lower = text.to_ascii_lowercase();
    let lb = lower.as_bytes();
    let stop = list(&rule.stop_words, STOP);
    for verb in list(&rule.verbs, VERBS) {
        let verb = verb.to_ascii_lowercase();
        let mut from = 0;
        while let Some(off) = lower.get(from..).and_then(|s| s.find(&verb)) {
            let at = from + off;
            from = at + verb.len().max(1);
            let end = at + verb.len();
            let before_ok = at == 0 || !lb.get(at - 1).is_some_and(u8::is_ascii_alphanumeric);
            if !before_ok || !word_boundary(lb, end) {
                continue;
            }
            let rest = text.get(end..)?;
            if !rest.starts_with(char::is_whitespace) {
                continue;
            }
            let run_len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphabetic() || *b == b' ')
                .count();
            if let Some(v) = rest.get(..run_len).and_then(|r| cleanup(r, &stop)) {
                return Some((v, at..end + run_len));
            }
        }
    }
    None
}

fn completion(text: &str, rule: &FallbackRule) -> Option<(String, std::ops::Range<usize>)> {
    let lower = text.to_ascii_lowercase();
    for phrase in list(&rule.phrases, PHRASES) {
        let phrase = phrase.to_ascii_lowercase();
        let Some(at) = lower.find(&phrase) else {
            continue;
        };
        let before = text.get(..at)?;
        let run_len = before
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic() || *b == b' ')
            .count();
        let run = before.get(before.len() - run_len..)?;
        let words: Vec<&str> = run.split_whitespace().collect();
        let start = words
            .iter()
            .rposition(|w| ARTICLES.contains(&w.to_ascii_lowercase().as_str()))
            .map_or(0, |i| i + 1);
        let value = words.get(start..)?.join(" ");
        if !value.is_empty() {
            return Some((value, at - run_len..at + phrase.len()));
        }
    }
    None
}

/// Tries the rules in order against the reply; the first match becomes one call.
pub(crate) fn apply(
    rules: &[FallbackRule],
    visible: &str,
    labels: &[(String, std::ops::Range<usize>)],
    registry_ok: &dyn Fn(&str) -> bool,
) -> Option<(Draft, Diagnostic)> {
    for (i, rule) in rules.iter().enumerate() {
        if !registry_ok(&rule.tool) {
            continue;
        }
        let found = match rule.rule {
            FallbackKind::LabelList => labels.first().cloned(),
            FallbackKind::Intent => intent(visible, rule),
            FallbackKind::Completion => completion(visible, rule),
        };
        if let Some((value, span)) = found {
            let mut args = Map::new();
            args.insert(rule.argument.clone(), Value::String(value.clone()));
            let mut d = Draft::new(
                rule.tool.clone(),
                Some(Value::Object(args)),
                FormatId::FALLBACK,
            );
            d.span = span.clone();
            let kind = match rule.rule {
                FallbackKind::LabelList => "label_list",
                FallbackKind::Intent => "intent",
                FallbackKind::Completion => "completion",
            };
            let diag = Diagnostic::info(
                format!(
                    "fallback rule #{} ({kind}) for {:?} fired: {} = {value:?}",
                    i + 1,
                    rule.tool,
                    rule.argument
                ),
                span,
            );
            return Some((d, diag));
        }
    }
    None
}

/// The first `label` of a JSON label list, if `v` is one.
pub(crate) fn label_of(v: &Value) -> Option<String> {
    let first = v.as_array()?.first()?.as_object()?;
    first.get("label")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Callers tell a file that is not JSON from rules of the wrong shape by the typed error.
    #[test]
    fn invalid_rules_keep_the_json_error() {
        use serde_json::error::Category;
        let category = |text: &str| match load_fallback_rules(text) {
            Err(crate::ParseError::Fallbacks(e)) => Some((e.classify(), e.line())),
            _ => None,
        };
        assert_eq!(category("[{"), Some((Category::Eof, 1)));
        assert_eq!(category("[\n{\"tool\": 3}]"), Some((Category::Data, 2)));
        let Err(e) = load_fallback_rules("[1]") else {
            panic!("rules read from [1]")
        };
        assert!(
            e.to_string()
                .starts_with("invalid fallback rules: invalid type"),
            "{e}"
        );
    }

    fn rule(kind: FallbackKind) -> FallbackRule {
        FallbackRule {
            tool: "highlight_object".into(),
            rule: kind,
            argument: "object".into(),
            verbs: vec![],
            phrases: vec![],
            stop_words: vec![],
        }
    }

    // covers F-FB-1
    #[test]
    fn seed_004_phrases() {
        let r = rule(FallbackKind::Intent);
        assert_eq!(
            intent("I'll highlight the cup for you", &r).unwrap().0,
            "cup"
        );
        assert_eq!(intent("highlighting your cup", &r).unwrap().0, "cup");
        assert_eq!(
            intent("I'll highlight the headphones", &r).unwrap().0,
            "headphones"
        );
        assert!(intent("highlights are nice", &r).is_none());
        let c = rule(FallbackKind::Completion);
        assert_eq!(
            completion("the headphones are now highlighted", &c)
                .unwrap()
                .0,
            "headphones"
        );
        assert_eq!(
            completion("Done, the cup is now highlighted.", &c)
                .unwrap()
                .0,
            "cup"
        );
    }
}
