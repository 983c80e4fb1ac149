//! A family's call markup as data, for decoding constraints: the pieces of one call
//! (literal markup, the tool's name, its arguments as JSON or as the family's tagged text
//! values), the section around a run of calls, and whether prose may come before a call.
//!
//! Each family declares its own shape in its module (`Family::constraint_shape`, or the
//! `constraint` field of a described family), next to its reader: the markup it reads and
//! the markup a decoder is held to are described in one file. The parser itself never reads
//! a shape; `toolcall-constrain` reads them through [`FormatId::constraint_shape`] and
//! writes every dialect's grammar from the same declaration. Plain `&'static` data: no
//! dependency and no code here, so the parser stays free of grammar writing.
//!
//! [`FormatId::constraint_shape`]: crate::FormatId::constraint_shape

use crate::family::{ReasoningMarker, THINK};

/// One piece of a family's call markup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Markup written exactly.
    Lit(&'static str),
    /// Optional blanks (spaces, tabs, newlines); the text is the canonical layout used where
    /// a dialect fixes the layout (structural tags).
    Ws(&'static str),
    /// The tool's name, as is (`<function=NAME>`).
    Name,
    /// The tool's name as a JSON string (`"NAME"`).
    NameString,
    /// A call index written as decimal digits (Kimi K2's `functions.NAME:0`).
    Index,
    /// A call id the model writes (letters and digits: Mistral's `[CALL_ID]a1b2c3d4e`).
    CallId,
    /// Pieces that may be left out (left out in a fixed layout).
    Optional(&'static [Piece]),
    /// Either layout; the first is the canonical one.
    Either(&'static [Piece], &'static [Piece]),
    /// `{"NAME_KEY": "tool", "ARGS_KEY": {…}}`, optionally led by `"ID_KEY": "…"`.
    JsonCall {
        id_key: Option<&'static str>,
        name_key: &'static str,
        args_key: &'static str,
    },
    /// The arguments: one JSON object, or the family's tagged text values.
    Args(Args),
}

impl Piece {
    /// `{"name": …, "arguments": {…}}`.
    pub const NAME_ARGUMENTS: Piece = Piece::JsonCall {
        id_key: None,
        name_key: "name",
        args_key: "arguments",
    };
    /// `{"name": …, "parameters": {…}}`.
    pub const NAME_PARAMETERS: Piece = Piece::JsonCall {
        id_key: None,
        name_key: "name",
        args_key: "parameters",
    };
}

/// How the arguments are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    /// A JSON object.
    Json,
    /// One tagged parameter per argument (`<parameter=KEY>VALUE</parameter>`): strings as the
    /// raw text, other types as JSON.
    Text(&'static TextParams),
}

/// One tagged parameter: `key_open KEY key_close VALUE value_close`, blanks before each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextParams {
    pub key_open: &'static str,
    /// After the key when the value is text (a string).
    pub key_close_text: &'static [Piece],
    /// After the key when the value is JSON (DeepSeek DSML says `string="false"`).
    pub key_close_json: &'static [Piece],
    pub value_close: &'static str,
}

/// A family's call markup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Markup around a run of calls (`<|tool_calls_section_begin|>` … `_end|>`), blanks
    /// allowed inside it.
    pub section: Option<(&'static [Piece], &'static [Piece])>,
    /// One call.
    pub call: &'static [Piece],
    /// Between two calls of one section.
    pub separator: &'static [Piece],
    /// Whether prose may come before (and after) the markup; `false`: the reply is the
    /// markup alone (bare JSON), so only a forced call can be constrained.
    pub prose: bool,
    /// The reasoning block the family's models may open the reply with.
    pub reasoning: ReasoningMarker,
}

/// Nothing between two calls but optional blanks.
pub const NO_SEPARATOR: &[Piece] = &[Piece::Ws("")];
/// A JSON list's comma.
pub const LIST_SEPARATOR: &[Piece] = &[Piece::Ws(""), Piece::Lit(","), Piece::Ws(" ")];

impl Shape {
    /// Calls one by one in prose, each its own markup (`<tool_call>…</tool_call>`).
    pub const fn prose(call: &'static [Piece]) -> Shape {
        Shape {
            section: None,
            call,
            separator: NO_SEPARATOR,
            prose: true,
            reasoning: THINK,
        }
    }

    /// The reply is one call and nothing else (bare JSON).
    pub const fn whole_reply(call: &'static [Piece]) -> Shape {
        Shape {
            prose: false,
            ..Shape::prose(call)
        }
    }

    /// A run of calls between `open` and `close`, in prose.
    pub const fn sectioned(
        open: &'static [Piece],
        close: &'static [Piece],
        call: &'static [Piece],
        separator: &'static [Piece],
    ) -> Shape {
        Shape {
            section: Some((open, close)),
            call,
            separator,
            prose: true,
            reasoning: THINK,
        }
    }

    /// A JSON list of calls between two markers (`<TOOLCALL>[` … `]</TOOLCALL>`).
    pub const fn json_list(
        open: &'static [Piece],
        close: &'static [Piece],
        call: &'static [Piece],
    ) -> Shape {
        Shape::sectioned(open, close, call, LIST_SEPARATOR)
    }
}
