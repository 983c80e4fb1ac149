//! A tool call as found in model output, and its identity.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The identifier that pairs a call with its result.
///
/// Kept exactly as the model sent it; generated as `call_` + 24 alphanumerics otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallId(pub String);

/// The letters of generated ids.
const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Every pair of [`ALPHABET`] letters by its index below 62² (`[i / 62, i % 62]`); the
/// entries from 62² on are never used (such pieces are skipped), so every pair, and each
/// letter, stays uniform.
const LETTER_PAIRS: [[u8; 2]; 4096] = {
    let mut t = [[0u8; 2]; 4096];
    let mut i = 0;
    while i < 62 * 62 {
        t[i] = [ALPHABET[i / 62], ALPHABET[i % 62]];
        i += 1;
    }
    t
};

impl CallId {
    /// A fresh, unique id: `call_` followed by 24 random ASCII alphanumerics.
    pub fn generate() -> Self {
        // Each 64-bit draw is read as five 12-bit pieces; a piece below 62² (3844 of 4096)
        // is a uniform pair of letters, the others are skipped. About three draws and no
        // division an id (ids are made for every call of every reply: base-62 digits of
        // each draw, with a division a letter, cost more than the rest of a small call's
        // build; 6-bit pieces, a letter each, measured ~110 instructions an id more). Every
        // piece is written where the next pair goes and kept only when it is one: no branch
        // a piece, and no `String` growth check a letter (the letters are copied once).
        let mut rng = rand::rng();
        let mut letters = [0u8; 24 + 10];
        let mut n = 0;
        while n < 24 {
            let mut draw = rng.next_u64();
            for _ in 0..5 {
                let piece = (draw & 0xfff) as usize;
                draw >>= 12;
                // `n` stays below 24 + 10 - 1: the last draw starts below 24.
                if let Some(slot) = letters.get_mut(n..n + 2) {
                    slot.copy_from_slice(&LETTER_PAIRS[piece]);
                }
                n += 2 * usize::from(piece < 62 * 62);
            }
        }
        let mut id = String::with_capacity(29);
        id.push_str("call_");
        // SAFETY: every byte of `letters[..24]` was copied from `LETTER_PAIRS`, whose bytes
        // are `ALPHABET`'s ASCII letters (the loop above leaves no zero below 24: `n`
        // reaches 24 only by pairs written), so they are UTF-8. Checked, the conversion
        // cost ~74 instructions an id (`bench_profile "gemma4/100 calls" stream4`); the
        // debug assertion checks it in tests.
        debug_assert!(letters[..24].iter().all(|b| ALPHABET.contains(b)));
        id.push_str(unsafe { std::str::from_utf8_unchecked(&letters[..24]) });
        CallId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for CallId {
    fn from(s: &str) -> Self {
        CallId(s.to_owned())
    }
}

impl From<String> for CallId {
    fn from(s: String) -> Self {
        CallId(s)
    }
}

/// One repair applied to make a call usable (V-5), reported to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Machine-readable kind, e.g. `trailing_comma`, `single_quotes`, `coerced_integer`.
    pub kind: String,
    /// What was changed, for a person.
    pub message: String,
}

impl Repair {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Repair {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// Where a call came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Origin {
    /// The format that produced the call, e.g. `tools_envelope`, `hermes`, `openai_chat`.
    /// A built-in format's name is borrowed (no copy a call: every call of every reply has
    /// one); a deserialized or caller-made origin owns its text.
    pub format: Cow<'static, str>,
    /// Byte span of the call's markup in the model output (empty for native calls),
    /// serialised as `[start, end]` like a diagnostic's span.
    #[serde(default, with = "crate::diagnostic::span_as_pair")]
    pub span: Range<usize>,
    /// Repairs applied while parsing or validating.
    #[serde(default)]
    pub repairs: Vec<Repair>,
}

/// A complete tool call: a name and an arguments object, ready to validate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub call_id: CallId,
    pub name: String,
    /// Always a JSON object; a call without arguments carries `{}`.
    pub arguments: Value,
    #[serde(default)]
    pub origin: Origin,
}

impl ToolCall {
    /// A call with a generated id and the given origin format.
    pub fn new(name: impl Into<String>, arguments: Value, format: impl Into<String>) -> Self {
        ToolCall {
            call_id: CallId::generate(),
            name: name.into(),
            arguments,
            origin: Origin {
                format: Cow::Owned(format.into()),
                ..Origin::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    //
    #[test]
    fn generated_ids_have_the_documented_shape_and_differ() {
        let a = CallId::generate();
        let b = CallId::generate();
        assert_ne!(a, b);
        let suffix = a.as_str().strip_prefix("call_").unwrap();
        assert_eq!(suffix.len(), 24);
        assert!(suffix.chars().all(|c| c.is_ascii_alphanumeric()));
    }

    // Every letter of the alphabet is drawn (4800 draws: missing one has odds ~1e-32).
    #[test]
    fn generated_ids_use_the_whole_alphabet() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.extend(CallId::generate().as_str()[5..].chars());
        }
        assert_eq!(seen.len(), 62, "{seen:?}");
    }
}
