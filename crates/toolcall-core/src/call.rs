//! A tool call as found in model output, and its identity. [`CallId`] is a small string
//! written here (a generated id, and any id of at most 30 bytes, kept in place, no
//! allocation): its doc gives the measured reason.

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
/// `CallStarted` and in its `ToolCall`). A generated id (29 ASCII bytes) and any id given
/// by the model or a caller of at most 30 bytes are kept in place; a longer id is shared
/// (`Arc<str>`); all compare, hash, order, print and serialise as their text, as the
/// `String` this was did. The models' own ids are short (Kimi K2's `functions.NAME:0`,
/// Mistral's 9 letters): kept as an `Arc<str>`, each was an allocation with a layout
/// computation and an atomic release on drop, and `kimi_k2/100 calls` one-shot lost 2.7 %
/// against the `String` id (1,040-1,044 k → 1,069 k instructions); in place, see the
/// session 43 round 2 figures in BENCHMARKS.md.
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

/// What a [`CallId`] holds (32 bytes either way).
#[derive(Clone)]
enum Repr {
    /// An id of at most [`INLINE_MAX`] bytes: `bytes[..len]` is the id, a copy of a whole
    /// `&str` (so UTF-8) or a generated id's ASCII; `len <= INLINE_MAX`. Made only by
    /// [`CallId::generate`] and [`CallId::inline`].
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    /// A longer id, as given.
    Given(Arc<str>),
}

/// The longest id kept in place: the enum's 32 bytes less its tag and `len`.
const INLINE_MAX: usize = 30;

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
        let mut id = [0u8; INLINE_MAX];
        id[..5].copy_from_slice(b"call_");
        id[5..GENERATED_LEN].copy_from_slice(&letters[..24]);
        // Every byte of `letters[..24]` was copied from `LETTER_PAIRS`, whose bytes are
        // `ALPHABET`'s ASCII letters (the loop above leaves no zero below 24: `n` reaches 24
        // only by pairs written): `as_str` relies on it.
        debug_assert!(letters[..24].iter().all(|b| ALPHABET.contains(b)));
        CallId(Repr::Inline {
            len: GENERATED_LEN as u8,
            bytes: id,
        })
    }

    /// `s` kept in place when it fits ([`INLINE_MAX`] bytes), `None` otherwise.
    fn inline(s: &str) -> Option<Self> {
        let mut bytes = [0u8; INLINE_MAX];
        bytes.get_mut(..s.len())?.copy_from_slice(s.as_bytes());
        Some(CallId(Repr::Inline {
            len: s.len() as u8,
            bytes,
        }))
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // SAFETY: `Repr::Inline` is made only by `generate`, which writes `call_` and
            // `ALPHABET` letters (ASCII), and by `inline`, which copies a whole `&str`:
            // `bytes[..len]` is UTF-8 either way. Checked, reading a generated id cost ~74
            // instructions each time (the `from_utf8` check measured at `generate` in
            // session 41, `bench_profile "gemma4/100 calls" stream4`), and ids are read to
            // compare, hash and serialise every call; the debug assertion checks it in
            // tests. `len <= INLINE_MAX` (both makers): the slice is in bounds.
            Repr::Inline { len, bytes } => {
                let b = &bytes[..usize::from(*len)];
                debug_assert!(std::str::from_utf8(b).is_ok());
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
        CallId::inline(s).unwrap_or_else(|| CallId(Repr::Given(Arc::from(s))))
    }
}

impl From<String> for CallId {
    fn from(s: String) -> Self {
        CallId::inline(&s).unwrap_or_else(|| CallId(Repr::Given(Arc::from(s))))
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
        assert!(matches!(a.0, Repr::Inline { len: 29, .. }));
        assert!(matches!(b.0, Repr::Inline { len: 29, .. }));
        assert_eq!(a, b);
        assert_eq!(b, c);
        // Ids up to 30 bytes are kept in place, longer ones shared; each is its text.
        let fits = "functions.get_w:0é·日本語";
        let long = format!("{fits}x");
        assert_eq!((fits.len(), long.len()), (30, 31));
        let (d, e) = (CallId::from(fits), CallId::from(long.clone()));
        assert!(matches!(d.0, Repr::Inline { len: 30, .. }));
        assert!(matches!(e.0, Repr::Given(_)));
        assert_eq!((d.as_str(), e.as_str()), (fits, long.as_str()));
        assert_eq!(CallId::from(fits.to_owned()), d);
        assert_eq!(CallId::from(long.as_str()), e);
        assert!(d < e);
        assert_eq!(hash(&e), hash(&CallId::from(long.as_str())));
        assert_eq!(std::mem::size_of::<CallId>(), 32);
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
