//! A tool call as found in model output, and its identity. [`CallId`] is a small string
//! written here (a generated id kept in place, no allocation): its doc gives the measured
//! reason.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The identifier that pairs a call with its result.
///
/// Kept exactly as the model sent it; generated as `call_` + 24 alphanumerics otherwise.
/// Serialised as a plain string. Generating one allocates nothing, nor does cloning one:
/// every call of every reply gets an id, and a streamed call's goes out twice (in
/// `CallStarted` and in its `ToolCall`). A generated id is kept in place (its 29 ASCII
/// bytes), an id given by the model or a caller is shared (`Arc<str>`); both compare, hash,
/// order, print and serialise as their text, as the `String` this was did.
///
/// Written here rather than taken from a crate: the inline strings of the common crates
/// (`compact_str`, `smol_str`) hold at most 24 bytes, short of a generated id, and the
/// workspace has none of them. Measured against the `String` id (callgrind,
/// `bench_profile CASE MODE N` minus N = 0): `llama/100 calls` one-shot 826-850 k → 770-818 k
/// instructions over runs of one binary; an id that is only an `Arc<str>` (one allocation
/// to generate, none to clone) left `gemma4/100 calls` stream4 where it was (1,696 k) and
/// `llama/100 calls` one-shot at 854 k, where this form takes the stream (with the engine's
/// announce keeping a call's name where the region wrote it) to 1,668 k.
#[derive(Clone)]
pub struct CallId(Repr);

/// What a [`CallId`] holds.
#[derive(Clone)]
enum Repr {
    /// A generated id, `call_` + 24 letters of [`ALPHABET`]; made only by
    /// [`CallId::generate`], so its bytes are ASCII.
    Generated([u8; GENERATED_LEN]),
    /// Any other id, as given.
    Given(Arc<str>),
}

/// Bytes of a generated id: `call_` and 24 letters.
const GENERATED_LEN: usize = 5 + 24;

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
        let mut id = [0u8; GENERATED_LEN];
        id[..5].copy_from_slice(b"call_");
        id[5..].copy_from_slice(&letters[..24]);
        // Every byte of `letters[..24]` was copied from `LETTER_PAIRS`, whose bytes are
        // `ALPHABET`'s ASCII letters (the loop above leaves no zero below 24: `n` reaches 24
        // only by pairs written): `as_str` relies on it.
        debug_assert!(letters[..24].iter().all(|b| ALPHABET.contains(b)));
        CallId(Repr::Generated(id))
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: `Repr::Generated` is made only by `generate`, which writes `call_` and
            // `ALPHABET` letters: ASCII, so UTF-8. Checked, reading a generated id cost ~74
            // instructions each time (the `from_utf8` check measured at `generate` in
            // session 41, `bench_profile "gemma4/100 calls" stream4`), and ids are read to
            // compare, hash and serialise every call; the debug assertion checks it in
            // tests.
            Repr::Generated(b) => {
                debug_assert!(b.is_ascii());
                unsafe { std::str::from_utf8_unchecked(b) }
            }
            Repr::Given(s) => s,
        }
    }
}

impl fmt::Debug for CallId {
    /// As the `String` id wrote itself: `CallId("call_…")`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CallId").field(&self.as_str()).finish()
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for CallId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for CallId {}

impl Hash for CallId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for CallId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CallId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Serialize for CallId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CallId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(CallId::from)
    }
}

impl From<&str> for CallId {
    fn from(s: &str) -> Self {
        CallId(Repr::Given(Arc::from(s)))
    }
}

impl From<String> for CallId {
    fn from(s: String) -> Self {
        CallId(Repr::Given(Arc::from(s)))
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

    // A generated id and the same text given compare, hash, order, print and serialise
    // alike, as the `String` id did.
    #[test]
    fn generated_and_given_ids_are_their_text() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |id: &CallId| {
            let mut h = DefaultHasher::new();
            id.hash(&mut h);
            h.finish()
        };
        let a = CallId::generate();
        let b = CallId::from(a.as_str());
        let c = CallId::from(a.as_str().to_owned());
        assert!(matches!(a.0, Repr::Generated(_)));
        assert!(matches!(b.0, Repr::Given(_)));
        assert_eq!(a, b);
        assert_eq!(b, c);
        assert_eq!(hash(&a), hash(&b));
        let mut s = DefaultHasher::new();
        a.as_str().to_owned().hash(&mut s);
        assert_eq!(hash(&a), s.finish());
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert!(CallId::from("call_A") < CallId::from("call_B"));
        assert_eq!(a.to_string(), a.as_str());
        assert_eq!(format!("{a:?}"), format!("CallId({:?})", a.as_str()));
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, format!("\"{}\"", a.as_str()));
        let back: CallId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        assert_eq!(a.clone().as_str(), a.as_str());
        assert_eq!(CallId::from("").as_str(), "");
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
