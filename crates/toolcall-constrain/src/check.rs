//! Checking a text against a client's grammar: the `format` of a Responses or Chat `custom`
//! tool (`{"type": "grammar", "syntax": "lark" | "regex", "definition": …}`), read by
//! llguidance, the engine vLLM, SGLang and llama.cpp run for the same grammars, so the
//! gateway accepts exactly what a constrained decoder would have let the model write.
//!
//! The text is fed byte by byte over a single-byte token set; the engine bounds its own work
//! per byte (its lexer fuel and grammar size limits), and the text is bounded here
//! ([`MAX_INPUT_BYTES`]), so a client's grammar and a model's text cost linear time at most.

use std::sync::OnceLock;

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use toktrie::{ApproximateTokEnv, InferenceCapabilities};

/// The longest text checked.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// A grammar's notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Lark, as llguidance reads it (`start: …`).
    Lark,
    /// One regular expression the whole text must match.
    Regex,
}

impl Syntax {
    /// The notation named in a tool's `format.syntax`.
    pub fn from_name(name: &str) -> Option<Syntax> {
        match name {
            "lark" => Some(Syntax::Lark),
            "regex" => Some(Syntax::Regex),
            _ => None,
        }
    }
}

/// Why a text does not pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The grammar itself cannot be read.
    #[error("the grammar cannot be read: {0}")]
    Grammar(String),
    /// The text leaves the grammar at byte `at`.
    #[error("the input does not match the grammar at byte {at}: {why}")]
    Mismatch { at: usize, why: String },
    /// The text is a prefix of the grammar's language, not a whole sentence.
    #[error("the input ends before the grammar allows it to")]
    Incomplete,
    #[error("the input is longer than {MAX_INPUT_BYTES} bytes")]
    TooLong,
}

fn factory() -> Result<&'static ParserFactory, CheckError> {
    static FACTORY: OnceLock<Result<ParserFactory, String>> = OnceLock::new();
    FACTORY
        .get_or_init(|| {
            let env = ApproximateTokEnv::single_byte_env();
            ParserFactory::new(&env, InferenceCapabilities::default(), &[])
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| CheckError::Grammar(e.clone()))
}

/// Checks that `grammar` (in `syntax`) accepts `text` whole.
pub fn check(syntax: Syntax, grammar: &str, text: &str) -> Result<(), CheckError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(CheckError::TooLong);
    }
    let top = match syntax {
        Syntax::Lark => TopLevelGrammar::from_lark(grammar.to_owned()),
        Syntax::Regex => TopLevelGrammar::from_regex(grammar),
    };
    let mut m = Matcher::new(factory()?.create_parser(top));
    if let Some(e) = m.get_error() {
        return Err(CheckError::Grammar(first_line(&e)));
    }
    for (at, b) in text.bytes().enumerate() {
        if let Err(e) = m.consume_token(u32::from(b)) {
            return Err(CheckError::Mismatch {
                at,
                why: first_line(&e.to_string()),
            });
        }
    }
    match m.is_accepting() {
        Ok(true) => Ok(()),
        _ => Err(CheckError::Incomplete),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = r#"
start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: add_hunk
add_hunk: "*** Add File: " filename LF add_line+
filename: /(.+)/
add_line: "+" /(.*)/ LF -> line
%import common.LF
"#;

    #[test]
    fn lark_and_regex_grammars_accept_and_refuse() {
        let good = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n";
        assert_eq!(check(Syntax::Lark, PATCH, good), Ok(()));
        let bad = "*** Begin Patch\n*** Delete Everything\n*** End Patch\n";
        assert!(matches!(
            check(Syntax::Lark, PATCH, bad),
            Err(CheckError::Mismatch { .. })
        ));
        assert_eq!(
            check(Syntax::Lark, PATCH, "*** Begin Patch\n"),
            Err(CheckError::Incomplete)
        );
        assert_eq!(check(Syntax::Regex, r"\d{4}-\d{2}", "2025-11"), Ok(()));
        assert!(check(Syntax::Regex, r"\d{4}-\d{2}", "2025-1x").is_err());
        assert!(matches!(
            check(Syntax::Lark, "start: (", "x"),
            Err(CheckError::Grammar(_))
        ));
    }
}
