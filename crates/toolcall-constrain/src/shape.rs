//! How a family writes its calls, as data: the pieces of one call (literal markup, the
//! tool's name, its arguments as JSON or as the family's tagged text values), the section
//! around a run of calls, and whether prose may come before a call. Every dialect's writer
//! reads the same declaration, so a family is described once.

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
    pub reasoning: (&'static str, &'static str),
}

const THINK: (&str, &str) = ("<think>", "</think>");
const NO_SEP: &[Piece] = &[Piece::Ws("")];
const LIST_SEP: &[Piece] = &[Piece::Ws(""), Piece::Lit(","), Piece::Ws(" ")];
const NAME_ARGS: Piece = Piece::JsonCall {
    id_key: None,
    name_key: "name",
    args_key: "arguments",
};
const NAME_PARAMETERS: Piece = Piece::JsonCall {
    id_key: None,
    name_key: "name",
    args_key: "parameters",
};

const fn prose(call: &'static [Piece]) -> Shape {
    Shape {
        section: None,
        call,
        separator: NO_SEP,
        prose: true,
        reasoning: THINK,
    }
}

const fn sectioned(
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
const fn json_list(
    open: &'static [Piece],
    close: &'static [Piece],
    call: &'static [Piece],
) -> Shape {
    sectioned(open, close, call, LIST_SEP)
}

const QWEN_PARAMS: TextParams = TextParams {
    key_open: "<parameter=",
    key_close_text: &[Piece::Lit(">")],
    key_close_json: &[Piece::Lit(">")],
    value_close: "</parameter>",
};
const GLM_PARAMS: TextParams = TextParams {
    key_open: "<arg_key>",
    key_close_text: &[
        Piece::Lit("</arg_key>"),
        Piece::Ws("\n"),
        Piece::Lit("<arg_value>"),
    ],
    key_close_json: &[
        Piece::Lit("</arg_key>"),
        Piece::Ws("\n"),
        Piece::Lit("<arg_value>"),
    ],
    value_close: "</arg_value>",
};
const MINIMAX_PARAMS: TextParams = TextParams {
    key_open: "<parameter name=\"",
    key_close_text: &[Piece::Lit("\">")],
    key_close_json: &[Piece::Lit("\">")],
    value_close: "</parameter>",
};
const STEP3_PARAMS: TextParams = TextParams {
    key_open: "<steptml:parameter name=\"",
    key_close_text: &[Piece::Lit("\">")],
    key_close_json: &[Piece::Lit("\">")],
    value_close: "</steptml:parameter>",
};
const DSML_PARAMS: TextParams = TextParams {
    key_open: "<｜DSML｜parameter name=\"",
    key_close_text: &[Piece::Lit("\" string=\"true\">")],
    key_close_json: &[Piece::Lit("\" string=\"false\">")],
    value_close: "</｜DSML｜parameter>",
};

/// The declared shape of family `id`; `None`: no constraint is written for it (its
/// markup is Python-like or free-form), the gateway falls back to parse-and-repair.
pub fn shape(id: &str) -> Option<&'static Shape> {
    static HERMES: Shape = prose(&[
        Piece::Lit("<tool_call>"),
        Piece::Ws("\n"),
        NAME_ARGS,
        Piece::Ws("\n"),
        Piece::Lit("</tool_call>"),
    ]);
    static QWEN3_CODER: Shape = prose(&[
        Piece::Lit("<tool_call>"),
        Piece::Ws("\n"),
        Piece::Lit("<function="),
        Piece::Name,
        Piece::Lit(">"),
        Piece::Args(Args::Text(&QWEN_PARAMS)),
        Piece::Ws("\n"),
        Piece::Lit("</function>"),
        Piece::Ws("\n"),
        Piece::Lit("</tool_call>"),
    ]);
    static SEED_OSS: Shape = Shape {
        reasoning: ("<seed:think>", "</seed:think>"),
        ..prose(&[
            Piece::Lit("<seed:tool_call>"),
            Piece::Ws("\n"),
            Piece::Lit("<function="),
            Piece::Name,
            Piece::Lit(">"),
            Piece::Args(Args::Text(&QWEN_PARAMS)),
            Piece::Ws("\n"),
            Piece::Lit("</function>"),
            Piece::Ws("\n"),
            Piece::Lit("</seed:tool_call>"),
        ])
    };
    static GLM: Shape = prose(&[
        Piece::Lit("<tool_call>"),
        Piece::Name,
        Piece::Args(Args::Text(&GLM_PARAMS)),
        Piece::Ws("\n"),
        Piece::Lit("</tool_call>"),
    ]);
    static MINIMAX_M2: Shape = sectioned(
        &[Piece::Lit("<minimax:tool_call>")],
        &[Piece::Lit("</minimax:tool_call>")],
        &[
            Piece::Lit("<invoke name=\""),
            Piece::Name,
            Piece::Lit("\">"),
            Piece::Args(Args::Text(&MINIMAX_PARAMS)),
            Piece::Ws("\n"),
            Piece::Lit("</invoke>"),
        ],
        &[Piece::Ws("\n")],
    );
    static STEP3: Shape = sectioned(
        &[Piece::Lit("<｜tool_calls_begin｜>")],
        &[Piece::Lit("<｜tool_calls_end｜>")],
        &[
            Piece::Lit("<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\""),
            Piece::Name,
            Piece::Lit("\">"),
            Piece::Args(Args::Text(&STEP3_PARAMS)),
            Piece::Ws(""),
            Piece::Lit("</steptml:invoke><｜tool_call_end｜>"),
        ],
        NO_SEP,
    );
    static DEEPSEEK_DSML: Shape = sectioned(
        &[Piece::Lit("<｜DSML｜function_calls>")],
        &[Piece::Lit("</｜DSML｜function_calls>")],
        &[
            Piece::Lit("<｜DSML｜invoke name=\""),
            Piece::Name,
            Piece::Lit("\">"),
            Piece::Args(Args::Text(&DSML_PARAMS)),
            Piece::Ws("\n"),
            Piece::Lit("</｜DSML｜invoke>"),
        ],
        &[Piece::Ws("\n")],
    );
    // `[TOOL_CALLS]NAME[ARGS]{…}` (v11 templates), with an optional `[CALL_ID]`, without
    // `[ARGS]` (older templates), or the legacy one-element list `[TOOL_CALLS][{…}]`.
    static MISTRAL: Shape = prose(&[
        Piece::Lit("[TOOL_CALLS]"),
        Piece::Either(
            &[
                Piece::Name,
                Piece::Optional(&[Piece::Lit("[CALL_ID]"), Piece::CallId]),
                Piece::Either(&[Piece::Lit("[ARGS]")], &[]),
                Piece::Args(Args::Json),
            ],
            &[
                Piece::Lit("["),
                Piece::Ws(""),
                NAME_ARGS,
                Piece::Ws(""),
                Piece::Lit("]"),
            ],
        ),
    ]);
    static FUNCTIONARY_V3_1: Shape = prose(&[
        Piece::Lit("<function="),
        Piece::Name,
        Piece::Lit(">"),
        Piece::Ws(""),
        Piece::Args(Args::Json),
        Piece::Ws(""),
        Piece::Lit("</function>"),
    ]);
    // Llama 3.x writes the JSON call bare or after `<|python_tag|>`: the reply is the call.
    static LLAMA: Shape = Shape {
        section: None,
        call: &[
            Piece::Optional(&[Piece::Lit("<|python_tag|>")]),
            NAME_PARAMETERS,
        ],
        separator: NO_SEP,
        prose: false,
        reasoning: THINK,
    };
    static INTERNLM: Shape = prose(&[
        Piece::Lit("<|action_start|><|plugin|>"),
        Piece::Ws("\n"),
        NAME_PARAMETERS,
        Piece::Ws(""),
        Piece::Lit("<|action_end|>"),
    ]);
    static LONGCAT: Shape = prose(&[
        Piece::Lit("<longcat_tool_call>"),
        Piece::Ws(""),
        NAME_ARGS,
        Piece::Ws(""),
        Piece::Lit("</longcat_tool_call>"),
    ]);
    static DEEPSEEK_V3: Shape = sectioned(
        &[Piece::Lit("<｜tool▁calls▁begin｜>")],
        &[Piece::Lit("<｜tool▁calls▁end｜>")],
        &[
            Piece::Lit("<｜tool▁call▁begin｜>function<｜tool▁sep｜>"),
            Piece::Name,
            Piece::Lit("\n```json"),
            Piece::Ws("\n"),
            Piece::Args(Args::Json),
            Piece::Ws("\n"),
            Piece::Lit("```<｜tool▁call▁end｜>"),
        ],
        &[Piece::Ws("\n")],
    );
    static DEEPSEEK_V3_1: Shape = sectioned(
        &[Piece::Lit("<｜tool▁calls▁begin｜>")],
        &[Piece::Lit("<｜tool▁calls▁end｜>")],
        &[
            Piece::Lit("<｜tool▁call▁begin｜>"),
            Piece::Name,
            Piece::Lit("<｜tool▁sep｜>"),
            Piece::Args(Args::Json),
            Piece::Lit("<｜tool▁call▁end｜>"),
        ],
        NO_SEP,
    );
    static KIMI_K2: Shape = sectioned(
        &[Piece::Lit("<|tool_calls_section_begin|>")],
        &[Piece::Lit("<|tool_calls_section_end|>")],
        &[
            Piece::Lit("<|tool_call_begin|>functions."),
            Piece::Name,
            Piece::Lit(":"),
            Piece::Index,
            Piece::Lit("<|tool_call_argument_begin|>"),
            Piece::Args(Args::Json),
            Piece::Lit("<|tool_call_end|>"),
        ],
        NO_SEP,
    );
    static GRANITE: Shape = json_list(
        &[Piece::Lit("<|tool_call|>["), Piece::Ws("")],
        &[Piece::Lit("]")],
        &[NAME_ARGS],
    );
    static NEMOTRON: Shape = json_list(
        &[Piece::Lit("<TOOLCALL>[")],
        &[Piece::Lit("]</TOOLCALL>")],
        &[NAME_ARGS],
    );
    static TOOL_CALLS_TAG: Shape = json_list(
        &[Piece::Lit("<tool_calls>[")],
        &[Piece::Lit("]</tool_calls>")],
        &[NAME_ARGS],
    );
    static FUNCTOOLS: Shape = json_list(
        &[Piece::Lit("functools[")],
        &[Piece::Lit("]")],
        &[NAME_ARGS],
    );
    static APERTUS: Shape = json_list(
        &[Piece::Lit("<|tools_prefix|>[")],
        &[Piece::Lit("]<|tools_suffix|>")],
        &[
            Piece::Lit("{"),
            Piece::Ws(""),
            Piece::NameString,
            Piece::Ws(""),
            Piece::Lit(":"),
            Piece::Ws(" "),
            Piece::Args(Args::Json),
            Piece::Ws(""),
            Piece::Lit("}"),
        ],
    );
    static COHERE: Shape = json_list(
        &[Piece::Lit("<|START_ACTION|>[")],
        &[Piece::Lit("]<|END_ACTION|>")],
        &[Piece::JsonCall {
            id_key: Some("tool_call_id"),
            name_key: "tool_name",
            args_key: "parameters",
        }],
    );
    static XLAM: Shape = json_list(
        &[Piece::Lit("```json"), Piece::Ws("\n"), Piece::Lit("[")],
        &[Piece::Lit("]"), Piece::Ws("\n"), Piece::Lit("```")],
        &[NAME_ARGS],
    );
    static JSON: Shape = Shape {
        section: None,
        call: &[NAME_ARGS],
        separator: NO_SEP,
        prose: false,
        reasoning: THINK,
    };
    Some(match id {
        "hermes" => &HERMES,
        "qwen3_coder" => &QWEN3_CODER,
        "seed_oss" => &SEED_OSS,
        "glm" => &GLM,
        "minimax_m2" => &MINIMAX_M2,
        "step3" => &STEP3,
        "deepseek_dsml" => &DEEPSEEK_DSML,
        "mistral" => &MISTRAL,
        "functionary_v3_1" => &FUNCTIONARY_V3_1,
        "llama" => &LLAMA,
        "internlm" => &INTERNLM,
        "longcat" => &LONGCAT,
        "deepseek_v3" => &DEEPSEEK_V3,
        "deepseek_v3_1" => &DEEPSEEK_V3_1,
        "kimi_k2" => &KIMI_K2,
        "granite" => &GRANITE,
        "nemotron" => &NEMOTRON,
        "tool_calls_tag" => &TOOL_CALLS_TAG,
        "functools" => &FUNCTOOLS,
        "apertus" => &APERTUS,
        "cohere" => &COHERE,
        "xlam" => &XLAM,
        "json" => &JSON,
        _ => return None,
    })
}
