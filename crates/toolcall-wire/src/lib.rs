//! Provider wire formats: one module per API dialect, each implementing the one
//! [`Dialect`] trait (request decode and encode, whole reply decode and encode, stream
//! events decode and encode, tool declarations, tool results, errors) over the neutral types
//! of [`dialect`].
//!
//! Owned here: [`chat`] (OpenAI Chat Completions, which Ollama, vLLM, llama.cpp server,
//! LM Studio and SGLang also speak), [`responses`] (OpenAI Responses), [`anthropic`]
//! (Anthropic Messages), [`gemini`] (Gemini generateContent), the one policy for decoding a tool call's arguments
//! ([`arguments`]), and the rule that a stream is a reply only when it says it finished
//! ([`dialect::Accumulator`], [`chat::ChatAccumulator`]).
//!
//! **Adding a dialect** is one module (a unit struct implementing [`Dialect`]) plus one
//! registration line in [`DIALECTS`]; [`Api::from_name`] then finds it, so the gateway's
//! `upstream_api` setting and `toolcall run --api` accept it, and tools files read its
//! declaration shape ([`tools_file_entry`]).
//!
//! Used by `toolcall run`'s model clients, the parser's native shapes and the `toolcall serve`
//! gateway, so all three read a provider's reply the same way. This crate is plain serde:
//! no HTTP, no runtime; the transport (timeouts, retries) lives with the clients.
//!
//! Types keep the fields they do not model in `extra` (flattened), so a gateway passes
//! unknown request fields through untouched.

pub mod anthropic;
pub mod arguments;
pub mod built_in_tools;
pub mod chat;
pub mod crossing;
pub mod dialect;
pub mod gemini;
pub mod json_schema;
pub mod responses;
pub mod tool_kinds;

pub use arguments::{ArgumentsError, decode_arguments, encode_arguments};
pub use dialect::Dialect;

/// Every dialect, by name. Registering a dialect is one line here.
pub static DIALECTS: &[&dyn Dialect] = &[
    &chat::Chat,
    &responses::Responses,
    &anthropic::Messages,
    &gemini::Gemini,
];

/// A registered dialect, chosen by name: the one value for "which API" in configuration,
/// on the command line and in the clients.
#[derive(Clone, Copy)]
pub struct Api(&'static dyn Dialect);

impl Api {
    /// Chat Completions, the default.
    pub const CHAT: Api = Api(&chat::Chat);

    /// The dialect registered as `name`.
    pub fn from_name(name: &str) -> Option<Api> {
        DIALECTS
            .iter()
            .find(|d| d.name().eq_ignore_ascii_case(name))
            .map(|d| Api(*d))
    }

    /// Every registered name.
    pub fn names() -> Vec<&'static str> {
        DIALECTS.iter().map(|d| d.name()).collect()
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn dialect(self) -> &'static dyn Dialect {
        self.0
    }
}

/// A tools file's entry read by the registered dialect whose declaration shape it is
/// ([`Dialect::tools_file_entry`]); `None` when it is in none (the file's own format).
pub fn tools_file_entry(
    entry: &serde_json::Map<String, serde_json::Value>,
) -> Option<Vec<dialect::FlatDeclaration>> {
    DIALECTS.iter().find_map(|d| d.tools_file_entry(entry))
}

impl Default for Api {
    fn default() -> Self {
        Api::CHAT
    }
}

impl PartialEq for Api {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Api {}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no registered dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API {name:?} (known: {known})")]
pub struct UnknownApi {
    pub name: String,
    pub known: String,
}

impl std::str::FromStr for Api {
    type Err = UnknownApi;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Api::from_name(s).ok_or_else(|| UnknownApi {
            name: s.to_owned(),
            known: Api::names().join(", "),
        })
    }
}

impl serde::Serialize for Api {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Api {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

use serde_json::{Map, Value};

/// Bounds on what one reply may hold (untrusted upstream data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most tool calls in one reply.
    pub max_calls: usize,
    /// Most bytes of text, reasoning and arguments accumulated from one stream.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_calls: 1024,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Why a provider's reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The stream ended without saying it finished (`finish_reason`, `[DONE]`,
    /// `response.completed`): a cut connection, never a reply.
    #[error("the stream was cut before it finished ({0})")]
    Cut(String),
    #[error("{what} is not JSON ({message}): {excerpt}")]
    NotJson {
        what: &'static str,
        message: String,
        excerpt: String,
    },
    #[error("the reply has no {0}")]
    Missing(&'static str),
    #[error("the model server reported an error: {0}")]
    Upstream(String),
    #[error("the reply holds more than {0} tool calls")]
    TooManyCalls(usize),
    #[error("the reply is larger than {0} bytes")]
    TooLarge(usize),
    #[error("cannot write the request: {0}")]
    Encode(String),
}

/// One tool call as a provider sent it, before name mapping and validation.
#[derive(Debug, Clone, PartialEq)]
pub struct WireCall {
    /// The provider's call id; `None` or empty when it sent none.
    pub id: Option<String>,
    pub name: String,
    /// The decoded arguments, or why they could not be decoded (see [`arguments`]).
    pub arguments: Result<Map<String, Value>, ArgumentsError>,
}

impl WireCall {
    pub fn new(id: Option<&str>, name: &str, arguments: Option<&Value>) -> Self {
        WireCall {
            id: id.filter(|s| !s.is_empty()).map(str::to_owned),
            name: name.to_owned(),
            arguments: decode_arguments(arguments),
        }
    }

    /// The arguments as a value for a caller that must keep an undecodable call: an object,
    /// or the raw string, which validation rejects as `invalid_arguments` instead of running
    /// the tool with `{}` (R-6).
    pub fn arguments_value(&self) -> Value {
        match &self.arguments {
            Ok(m) => Value::Object(m.clone()),
            Err(e) => Value::String(e.raw.clone()),
        }
    }
}

/// A provider's reply in provider-neutral terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The visible text; `None` when the provider sent none.
    pub text: Option<String>,
    /// Reasoning the provider kept apart from the text (`reasoning_content`, reasoning items).
    pub reasoning: Option<String>,
    pub calls: Vec<WireCall>,
    /// Why the model stopped, as the provider said it (`stop`, `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
}

/// The last `n` characters of `s`, for error messages.
pub fn excerpt(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        s.to_owned()
    } else {
        let tail: String = s.chars().skip(count - n).collect();
        format!("…{tail}")
    }
}

/// `serde_json::from_slice(body)`, with the same result and the same error, read as a `&str`
/// when the body is valid UTF-8 (every JSON text is): checked once as a whole, its strings
/// are then taken without `from_slice` checking each one apart again (about 90 instructions
/// a string, 2.7 k of a small Chat request's 19 k decode in the running gateway, session
/// 39). Anything else goes through `from_slice`, which names where its bytes go wrong.
pub fn from_json_bytes<'de, T: serde::Deserialize<'de>>(body: &'de [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

pub(crate) fn not_json(what: &'static str, text: &str, e: &serde_json::Error) -> WireError {
    WireError::NotJson {
        what,
        message: e.to_string(),
        excerpt: excerpt(text, 200),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bytes_read_as_from_slice_reads_them() {
        let bodies: [&[u8]; 10] = [
            br#"{"model":"m","messages":[{"role":"user","content":"h\u00e9\n\"i\""}]}"#,
            "{\"a\":\"caf\u{e9} \u{1F600}\"}".as_bytes(),
            br#"{"a": [1, 2.5, -3, true, null, {"b": "c"}]}"#,
            br#"{"a": "\ud800"}"#,
            br#"{"a": "\ud83d\ude00"}"#,
            b"{\"a\": \"\xff\"}",
            b"\xef\xbb\xbf{}",
            br#"{"a": 1,}"#,
            b"{\"a\": \"tab\there\"}",
            br#"{"a": 1} x"#,
        ];
        for body in bodies {
            let fast = from_json_bytes::<serde_json::Value>(body).map_err(|e| e.to_string());
            let slice =
                serde_json::from_slice::<serde_json::Value>(body).map_err(|e| e.to_string());
            assert_eq!(fast, slice, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn every_dialect_is_found_by_its_name() {
        assert_eq!(Api::names(), ["chat", "responses", "anthropic", "gemini"]);
        for name in Api::names() {
            let api: Api = name.parse().unwrap();
            assert_eq!(api.name(), name);
            let back: Api = serde_json::from_value(serde_json::to_value(api).unwrap()).unwrap();
            assert_eq!(back, api);
        }
        assert_eq!(
            Api::from_name("Anthropic").map(Api::name),
            Some("anthropic")
        );
        let err = "claude".parse::<Api>().unwrap_err();
        assert!(
            err.to_string()
                .contains("chat, responses, anthropic, gemini"),
            "{err}"
        );
        assert_eq!(Api::default(), Api::CHAT);
    }
}
