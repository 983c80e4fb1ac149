//! The benchmark corpus, generated from a fixed seed so every run (Rust and Python) measures
//! the same bytes.
//!
//! Shapes, per the benchmark issue: prose with no calls (≥ 1 MB); each format with small
//! calls; one call carrying 1 MB of arguments; 100 calls in one reply. Replies are written the
//! way models emit each format (the same spelling `tool-parser` documents for the shared ones),
//! so both parsers read identical input.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{FormatSelection, ParseOptions};

/// Bytes of arguments in the "large" case.
pub const LARGE_ARGS: usize = 1 << 20;
/// Bytes of prose in the prose-only case.
pub const PROSE_BYTES: usize = 1 << 20;
/// Calls in the "many" case.
pub const MANY_CALLS: usize = 100;

/// Every text format toolcall reads, by its format id.
pub const FORMATS: [&str; 9] = [
    "tools_envelope",
    "call_syntax",
    "action_response",
    "key_value",
    "hermes",
    "mistral",
    "llama",
    "pythonic",
    "json",
];

/// The model families: every registered family besides the base formats above that has a
/// text syntax (`toolcall_parse::example_call`), in registry order. A family joins the
/// corpus when its module is registered; [`render_family`] writes the hand-tuned spellings
/// of the families the figures have tracked, the family's own example writer the others.
pub fn families() -> Vec<&'static str> {
    let none = Map::new();
    toolcall_parse::FormatId::all()
        .filter(|f| !FORMATS.contains(&f.as_str()))
        .filter(|f| toolcall_parse::example_call(*f, "f", &none).is_some())
        .map(toolcall_parse::FormatId::as_str)
        .collect()
}

/// Every format the corpus covers in this build: the base formats, then the registered
/// families.
pub fn formats() -> Vec<&'static str> {
    FORMATS.into_iter().chain(families()).collect()
}

/// The `tool-parser` parser that reads the same spelling, for the formats both crates share.
pub fn peer_parser(format: &str) -> Option<&'static str> {
    match format {
        "json" => Some("json"),
        "hermes" => Some("qwen"),
        "mistral" => Some("mistral"),
        "llama" => Some("llama"),
        "pythonic" => Some("pythonic"),
        "deepseek_v3" => Some("deepseek"),
        "deepseek_v3_1" => Some("deepseek31"),
        "deepseek_dsml" => Some("deepseek_dsml"),
        "kimi_k2" => Some("kimik2"),
        "glm" => Some("glm45"),
        "qwen3_coder" => Some("qwen_xml"),
        "minimax_m2" => Some("minimax_m2"),
        "step3" => Some("step3"),
        "cohere" => Some("cohere"),
        "gemma4" => Some("gemma4"),
        "kimi_k3" => Some("kimi_k3"),
        "minimax_m3" => Some("minimax_m3"),
        "hunyuan" => Some("hy_v4"),
        "inkling" => Some("inkling"),
        "sarashina" => Some("sarashina"),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Prose with no calls at all.
    Prose,
    /// A short reply with one to three small calls.
    Small,
    /// One reply with [`MANY_CALLS`] calls.
    Many,
    /// One call whose arguments are about `n` bytes.
    Large(usize),
}

impl Shape {
    pub fn label(self) -> String {
        match self {
            Shape::Prose => "prose".into(),
            Shape::Small => "small".into(),
            Shape::Many => format!("{MANY_CALLS} calls"),
            Shape::Large(n) if n >= 1 << 20 => format!("{} MB args", n >> 20),
            Shape::Large(n) => format!("{} KB args", n >> 10),
        }
    }
}

/// One benchmark input.
#[derive(Debug, Clone)]
pub struct Case {
    /// `format/shape`, also the file stem when the corpus is written out.
    pub name: String,
    /// The toolcall format id; `auto` for prose.
    pub format: &'static str,
    pub shape: Shape,
    /// The model reply.
    pub text: String,
    /// The bare JSON documents the calls are made of (the `serde_json` floor); empty when
    /// the format is not JSON.
    pub json: Vec<String>,
    /// Calls a correct parser finds.
    pub expected_calls: usize,
}

impl Case {
    /// Parse options used for this case: only its format (prose: auto, the common setting).
    pub fn options(&self, registry: &Arc<Registry>) -> ParseOptions {
        let format = if self.format == "auto" {
            FormatSelection::Auto
        } else {
            FormatSelection::Only(self.format.to_owned())
        };
        // The parser may add option fields; keep their defaults.
        #[allow(clippy::needless_update)]
        ParseOptions {
            format,
            tools: Some(Arc::clone(registry)),
            ..ParseOptions::default()
        }
    }

    pub fn peer(&self) -> Option<&'static str> {
        peer_parser(self.format)
    }
}

/// The tools the corpus calls, as a registry (formats such as `call_syntax` and `key_value`
/// accept only registered names).
pub fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    let specs = [
        ToolSpec::new(
            "computer_use",
            "Control the screen",
            json!({"type":"object","properties":{
                "action":{"type":"string"},
                "coordinate":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2},
                "text":{"type":"string"}},"required":["action"]}),
        ),
        ToolSpec::new(
            "get_weather",
            "Weather for a city",
            json!({"type":"object","properties":{
                "city":{"type":"string"},"unit":{"type":"string"},"days":{"type":"integer"}},
                "required":["city"]}),
        ),
        ToolSpec::new(
            "write_file",
            "Write a file",
            json!({"type":"object","properties":{
                "path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}),
        ),
        ToolSpec::new(
            "highlight_object",
            "Highlight an object in view",
            json!({"type":"object","properties":{"object":{"type":"string"}},"required":["object"]}),
        ),
        ToolSpec::new(
            "open_app",
            "Open an application",
            json!({"type":"object","properties":{
                "app_name":{"type":"string"},"app_path":{"type":"string"}}}),
        ),
    ];
    for spec in specs {
        // The names above are fixed and valid; a failure here is a bug in this file.
        if let Err(e) = r.add_spec(spec) {
            panic!("corpus registry: {e}");
        }
    }
    Arc::new(r)
}

/// xorshift64*: a fixed, dependency-free sequence so the corpus never changes between runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const WORDS: [&str; 48] = [
    "the",
    "model",
    "answer",
    "window",
    "screen",
    "button",
    "weather",
    "today",
    "in",
    "of",
    "and",
    "to",
    "a",
    "with",
    "click",
    "file",
    "report",
    "patient",
    "summary",
    "order",
    "lab",
    "result",
    "chest",
    "key",
    "room",
    "north",
    "light",
    "camera",
    "object",
    "cup",
    "table",
    "before",
    "after",
    "because",
    "every",
    "request",
    "value",
    "check",
    "first",
    "then",
    "again",
    "quickly",
    "carefully",
    "system",
    "user",
    "reply",
    "text",
    "done",
];

/// English-like prose: sentences of common words, commas, periods, the odd parenthesis,
/// paragraphs; no call markers.
fn prose(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 64);
    let mut sentence_len = 0;
    while s.len() < bytes {
        let w = WORDS[rng.below(WORDS.len())];
        if sentence_len == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                s.push(f.to_ascii_uppercase());
                s.push_str(c.as_str());
            }
        } else {
            s.push_str(w);
        }
        sentence_len += 1;
        match rng.below(40) {
            0..=2 if sentence_len > 4 => {
                s.push_str(". ");
                sentence_len = 0;
                if rng.below(6) == 0 {
                    s.push_str("\n\n");
                }
            }
            3 => s.push_str(", "),
            4 if sentence_len > 2 => s.push_str(" (see above) "),
            _ => s.push(' '),
        }
    }
    s.push_str("Done.\n");
    s
}

/// A long string argument: prose with escapes a JSON scanner must handle (`\n`, `\"`).
fn big_content(rng: &mut Rng, bytes: usize, newlines: bool) -> String {
    let mut p = prose(rng, bytes);
    if !newlines {
        p = p.replace('\n', " ");
    }
    // Sprinkle quotes so the encoded form carries escapes.
    p.replace(" key ", " \"key\" ")
}

const CITIES: [&str; 4] = ["Paris", "Warsaw", "Kyiv", "Lisbon"];
const OBJECTS: [&str; 4] = ["cup", "headphones", "phone", "book"];

/// (tool name, arguments) for small call number `i`.
fn small_call(rng: &mut Rng, i: usize) -> (&'static str, Value) {
    match i % 3 {
        0 => (
            "get_weather",
            json!({"city": CITIES[rng.below(CITIES.len())], "unit": "celsius", "days": rng.below(7) + 1}),
        ),
        1 => (
            "computer_use",
            json!({"action": "left_click", "coordinate": [rng.below(1024), rng.below(768)]}),
        ),
        _ => (
            "highlight_object",
            json!({"object": OBJECTS[rng.below(OBJECTS.len())]}),
        ),
    }
}

/// JSON as models write it: Python `json.dumps` separators (`", "`, `": "`), which is what
/// chat templates and training data use; peers that split on `"}, {"` rely on it.
pub fn to_json(v: &Value) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first { Ok(()) } else { w.write_all(b", ") }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first { Ok(()) } else { w.write_all(b", ") }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
        ) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    // Serialising a `Value` into a `Vec` cannot fail, and the output is UTF-8.
    if serde::Serialize::serialize(v, &mut ser).is_err() {
        return v.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_string())
}

/// Python literal for a JSON value (pythonic format). JSON string escapes are valid Python.
fn py(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => v.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(py).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Renders calls in one format. Returns (reply text, its bare JSON documents).
fn render(format: &str, calls: &[(&'static str, Value)], rng: &mut Rng) -> (String, Vec<String>) {
    let intro = "Let me take care of that for you. ";
    let outro = "\nI will report back when it is done.";
    let named = |key: &str| -> Vec<Value> {
        calls
            .iter()
            .map(|(n, a)| {
                let mut m = Map::new();
                m.insert("name".into(), Value::String((*n).into()));
                m.insert(key.into(), a.clone());
                Value::Object(m)
            })
            .collect()
    };
    match format {
        "tools_envelope" => {
            let j = to_json(&json!({ "tools": named("arguments") }));
            (format!("{intro}\n```json\n{j}\n```\n{outro}"), vec![j])
        }
        "json" => {
            let list = named("arguments");
            let j = if list.len() == 1 {
                to_json(&list[0])
            } else {
                to_json(&Value::Array(list))
            };
            (j.clone(), vec![j])
        }
        "hermes" => {
            let mut s = String::from(intro);
            s.push('\n');
            let mut bare = Vec::new();
            for v in named("arguments") {
                let j = to_json(&v);
                s.push_str("<tool_call>\n");
                s.push_str(&j);
                s.push_str("\n</tool_call>\n");
                bare.push(j);
            }
            (s, bare)
        }
        "mistral" => {
            let j = to_json(&Value::Array(named("arguments")));
            (format!("[TOOL_CALLS] {j}"), vec![j])
        }
        "llama" => {
            let parts: Vec<String> = named("parameters").iter().map(to_json).collect();
            (format!("<|python_tag|>{}", parts.join(";")), parts)
        }
        "pythonic" => {
            let items: Vec<String> = calls
                .iter()
                .map(|(n, a)| {
                    let args: Vec<String> = obj(a)
                        .iter()
                        .map(|(k, v)| format!("{k}={}", py(v)))
                        .collect();
                    format!("{n}({})", args.join(", "))
                })
                .collect();
            (format!("[{}]", items.join(", ")), Vec::new())
        }
        "call_syntax" => {
            // Positional form of F-PY-1: computer_use("action", x, y) / ("type", "text").
            let mut s = String::from(intro);
            s.push('\n');
            for (_, a) in calls {
                let action = a
                    .get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("screenshot");
                match (a.get("coordinate"), a.get("text")) {
                    (Some(Value::Array(xy)), _) if xy.len() == 2 => s.push_str(&format!(
                        "computer_use(\"{action}\", {}, {})\n",
                        xy[0], xy[1]
                    )),
                    (_, Some(t)) => s.push_str(&format!("computer_use(\"{action}\", {t})\n")),
                    _ => s.push_str(&format!("computer_use(\"{action}\")\n")),
                }
            }
            s.push_str(outro);
            (s, Vec::new())
        }
        "action_response" => {
            let (n, a) = calls.first().cloned().unwrap_or(("open_app", json!({})));
            let j = to_json(&json!({"session_id": "sess-42", "command": n, "args": a,
                "text": "Sure, doing that now."}));
            (j.clone(), vec![j])
        }
        "key_value" => {
            let (n, a) = calls
                .first()
                .cloned()
                .unwrap_or(("highlight_object", json!({})));
            let mut s = format!("TOOL_CALL: {n}\n");
            for (k, v) in obj(&a) {
                let v = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                s.push_str(&format!("{}: {v}\n", k.to_ascii_uppercase()));
            }
            s.push_str(&prose(rng, 80));
            (s, Vec::new())
        }
        family => render_family(family, calls),
    }
}

/// A value as text-valued families write it: strings as they are, anything else as JSON.
fn text_value(v: &Value) -> String {
    v.as_str().map(str::to_owned).unwrap_or_else(|| to_json(v))
}

/// Python call syntax with keyword arguments.
fn py_call(name: &str, args: &Value) -> String {
    let kw: Vec<String> = obj(args)
        .iter()
        .map(|(k, v)| format!("{k}={}", py(v)))
        .collect();
    format!("{name}({})", kw.join(", "))
}

/// Gemma 4 literal: bare keys, strings between `<|"|>` markers.
fn gemma_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("<|\"|>{s}<|\"|>"),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(gemma_value).collect::<Vec<_>>().join(",")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{k}:{}", gemma_value(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

/// Renders calls in a family's markup, as the family's chat template writes them (the same
/// spellings as `toolcall-parse/tests/fixtures/<family>/`). Returns (reply, bare JSON
/// documents; empty for text-valued families).
fn render_family(family: &str, calls: &[(&'static str, Value)]) -> (String, Vec<String>) {
    let intro = "Let me take care of that for you.\n\n";
    let docs: Vec<String> = calls.iter().map(|(_, a)| to_json(a)).collect();
    let each = |f: &dyn Fn(&str, &Value, &str) -> String| -> String {
        calls
            .iter()
            .zip(&docs)
            .map(|((n, a), j)| f(n, a, j))
            .collect::<String>()
    };
    let named = |key: &str| -> Vec<String> {
        calls
            .iter()
            .map(|(n, a)| {
                let mut m = Map::new();
                m.insert("name".into(), Value::String((*n).into()));
                m.insert(key.into(), a.clone());
                to_json(&Value::Object(m))
            })
            .collect()
    };
    let params = |open: &dyn Fn(&str) -> String, close: &str, a: &Value| -> String {
        obj(a)
            .iter()
            .map(|(k, v)| format!("{}{}{close}\n", open(k), text_value(v)))
            .collect()
    };
    let text = match family {
        "qwen3_coder" => each(&|n, a, _| {
            let p: String = obj(a)
                .iter()
                .map(|(k, v)| format!("<parameter={k}>\n{}\n</parameter>\n", text_value(v)))
                .collect();
            format!("<tool_call>\n<function={n}>\n{p}</function>\n</tool_call>\n")
        }),
        "seed_oss" => each(&|n, a, _| {
            let p = params(&|k| format!("<parameter={k}>"), "</parameter>", a);
            format!("<seed:tool_call>\n<function={n}>\n{p}</function>\n</seed:tool_call>\n")
        }),
        "glm" => each(&|n, a, _| {
            let p: String = obj(a)
                .iter()
                .map(|(k, v)| {
                    format!(
                        "<arg_key>{k}</arg_key>\n<arg_value>{}</arg_value>\n",
                        text_value(v)
                    )
                })
                .collect();
            format!("<tool_call>{n}\n{p}</tool_call>\n")
        }),
        "functionary_v3_1" => each(&|n, _, j| format!("<function={n}>{j}</function>")),
        "functionary_v3_2" => format!(">>>all\n{intro}{}", each(&|n, _, j| format!(">>>{n}\n{j}"))),
        "deepseek_v3" => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            each(&|n, _, j| format!(
                "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{j}\n```<｜tool▁call▁end｜>\n"
            ))
        ),
        "deepseek_v3_1" => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            each(&|n, _, j| format!(
                "<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{j}<｜tool▁call▁end｜>"
            ))
        ),
        "deepseek_dsml" => format!(
            "<｜DSML｜function_calls>\n{}</｜DSML｜function_calls>",
            each(&|n, a, _| {
                let p: String = obj(a)
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "<｜DSML｜parameter name=\"{k}\" string=\"{}\">{}</｜DSML｜parameter>\n",
                            v.is_string(),
                            text_value(v)
                        )
                    })
                    .collect();
                format!("<｜DSML｜invoke name=\"{n}\">\n{p}</｜DSML｜invoke>\n")
            })
        ),
        "kimi_k2" => {
            let mut body = String::new();
            for (i, ((n, _), j)) in calls.iter().zip(&docs).enumerate() {
                body.push_str(&format!(
                    "<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{j}<|tool_call_end|>"
                ));
            }
            format!("<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>")
        }
        "gpt_oss" => format!(
            "<|channel|>analysis<|message|>The user asked for this; calling the tools.<|end|>{}",
            each(&|n, _, j| format!(
                "<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{j}<|call|>"
            ))
        ),
        "gemma4" => each(&|n, a, _| format!("<|tool_call>call:{n}{}<tool_call|>", gemma_value(a))),
        "step3" => format!(
            "<｜tool_calls_begin｜>{}<｜tool_calls_end｜>",
            each(&|n, a, _| {
                let p: String = obj(a)
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "<steptml:parameter name=\"{k}\">{}</steptml:parameter>",
                            text_value(v)
                        )
                    })
                    .collect();
                format!(
                    "<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"{n}\">{p}</steptml:invoke><｜tool_call_end｜>"
                )
            })
        ),
        "cohere" => {
            let items: Vec<String> = calls
                .iter()
                .enumerate()
                .map(|(i, (n, a))| {
                    to_json(
                        &json!({"tool_call_id": i.to_string(), "tool_name": n, "parameters": a}),
                    )
                })
                .collect();
            format!(
                "<|START_ACTION|>[\n    {}\n]<|END_ACTION|>",
                items.join(",\n    ")
            )
        }
        "minimax_m2" => format!(
            "<minimax:tool_call>\n{}</minimax:tool_call>",
            each(&|n, a, _| {
                let p = params(&|k| format!("<parameter name=\"{k}\">"), "</parameter>", a);
                format!("<invoke name=\"{n}\">\n{p}</invoke>\n")
            })
        ),
        "granite" => format!("<|tool_call|>[{}]", named("arguments").join(", ")),
        "nemotron" => format!("<TOOLCALL>[{}]</TOOLCALL>", named("arguments").join(", ")),
        "tool_calls_tag" => format!(
            "<tool_calls>[{}]</tool_calls>",
            named("arguments").join(", ")
        ),
        "functools" => format!("functools[{}]", named("arguments").join(", ")),
        "internlm" => named("parameters")
            .iter()
            .map(|j| format!("<|action_start|><|plugin|>\n{j}<|action_end|>\n"))
            .collect(),
        "longcat" => named("arguments")
            .iter()
            .map(|j| format!("<longcat_tool_call>{j}</longcat_tool_call>\n"))
            .collect(),
        "apertus" => {
            let items: Vec<String> = calls
                .iter()
                .map(|(n, a)| to_json(&json!({ *n: a })))
                .collect();
            format!("<|tools_prefix|>[{}]<|tools_suffix|>", items.join(", "))
        }
        "xlam" => format!("```json\n[{}]\n```", named("arguments").join(", ")),
        "llama4_pythonic" => {
            let items: Vec<String> = calls.iter().map(|(n, a)| py_call(n, a)).collect();
            format!("<|python_start|>[{}]<|python_end|>", items.join(", "))
        }
        "lfm2" => {
            let items: Vec<String> = calls.iter().map(|(n, a)| py_call(n, a)).collect();
            format!("<|tool_call_start|>[{}]<|tool_call_end|>", items.join(", "))
        }
        "olmo3" => {
            let lines: Vec<String> = calls.iter().map(|(n, a)| py_call(n, a)).collect();
            format!("<function_calls>\n{}\n</function_calls>", lines.join("\n"))
        }
        // The 2026–27 families whose templates write every call of a turn in one block
        // (the spelling `tool-parser` 1.10 reads as well): the family's own example writer
        // per call, the block's wrapper once.
        "kimi_k3" => one_block(
            family,
            calls,
            "<|open|>tools<|sep|>",
            "<|close|>tools<|sep|>",
            "",
        )
        .map(|calls| {
            // The template numbers the calls of a block from 1.
            let mut out = String::new();
            for (i, c) in calls.split_inclusive("<|close|>call<|sep|>").enumerate() {
                out.push_str(&c.replacen("index=\"1\"", &format!("index=\"{}\"", i + 1), 1));
            }
            format!("<|open|>tools<|sep|>{out}<|close|>tools<|sep|>")
        })
        .unwrap_or_default(),
        "minimax_m3" => one_block(
            family,
            calls,
            "]<]minimax[>[<tool_call>\n",
            "]<]minimax[>[</tool_call>",
            "",
        )
        .map(|c| format!("]<]minimax[>[<tool_call>\n{c}]<]minimax[>[</tool_call>"))
        .unwrap_or_default(),
        "sarashina" => one_block(family, calls, "<|tool_calls|>[", "]", ", ")
            .map(|c| format!("<|tool_calls|>[{c}]"))
            .unwrap_or_default(),
        // Command R / R+ (2024): one `Action:` fence holding the turn's calls as one JSON list.
        "command_r_plus" => {
            let items: Vec<String> = calls
                .iter()
                .map(|(n, a)| to_json(&json!({"tool_name": n, "parameters": a})))
                .collect();
            format!("Action: ```json\n[\n    {}\n]\n```", items.join(",\n    "))
        }
        // A message to the tool per call, as the template writes them: ATEM markup is a call
        // only in a tool's message or opening the reply (after text in the reply it is
        // quoted text).
        "muse_glimmer" => {
            let Some(format) = toolcall_parse::FormatId::from_name(family) else {
                return (String::new(), Vec::new());
            };
            calls
                .iter()
                .filter_map(|(n, a)| {
                    let c = toolcall_parse::example_call(format, n, &obj(a))?;
                    Some(format!("<|start|>assistant to={n}<|message|>{c}<|eom|>"))
                })
                .collect()
        }
        // Hy4's spelling (every structural token carries the checkpoint's suffix, no
        // `<tool_sep>`), which both parsers read; Hy3's suffix-less one only toolcall does.
        "hunyuan" => {
            let s = ":opensource";
            let body = each(&|n, a, _| {
                let p: String = obj(a)
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "<arg_key{s}>{k}</arg_key{s}><arg_value{s}>{}</arg_value{s}>",
                            text_value(v)
                        )
                    })
                    .collect();
                format!("<tool_call{s}>{n}{p}</tool_call{s}>")
            });
            format!("<tool_calls{s}>{body}</tool_calls{s}>")
        }
        other => {
            let Some(format) = toolcall_parse::FormatId::from_name(other) else {
                return (String::new(), Vec::new());
            };
            let written: Option<Vec<String>> = calls
                .iter()
                .map(|(n, a)| toolcall_parse::example_call(format, n, &obj(a)))
                .collect();
            return match written {
                Some(w) => (format!("{intro}{}", w.join("\n")), Vec::new()),
                None => (String::new(), Vec::new()),
            };
        }
    };
    let text_valued = matches!(
        family,
        "qwen3_coder"
            | "seed_oss"
            | "glm"
            | "deepseek_dsml"
            | "step3"
            | "minimax_m2"
            | "gemma4"
            | "llama4_pythonic"
            | "lfm2"
            | "olmo3"
            | "kimi_k3"
            | "minimax_m3"
            | "sarashina"
            | "hunyuan"
            | "muse_glimmer"
    );
    let reply = if matches!(family, "functionary_v3_2" | "muse_glimmer") {
        text
    } else {
        format!("{intro}{text}")
    };
    (reply, if text_valued { Vec::new() } else { docs })
}

/// Each call written by the family's own example writer, with the block wrapper
/// (`open` … `close`) the writer puts around every call taken off and the calls joined with
/// `sep`: the inside of one block holding them all.
fn one_block(
    family: &str,
    calls: &[(&'static str, Value)],
    open: &str,
    close: &str,
    sep: &str,
) -> Option<String> {
    let format = toolcall_parse::FormatId::from_name(family)?;
    let inner: Option<Vec<String>> = calls
        .iter()
        .map(|(n, a)| {
            let c = toolcall_parse::example_call(format, n, &obj(a))?;
            Some(c.strip_prefix(open)?.strip_suffix(close)?.to_owned())
        })
        .collect();
    Some(inner?.join(sep))
}

/// Which shapes a format can express: action responses and key/value blocks hold one call.
fn shapes_for(format: &str) -> Vec<Shape> {
    match format {
        "action_response" | "key_value" => vec![Shape::Small, Shape::Large(LARGE_ARGS)],
        _ => vec![Shape::Small, Shape::Many, Shape::Large(LARGE_ARGS)],
    }
}

/// The calls of one shape for one format.
fn calls_for(format: &str, shape: Shape, rng: &mut Rng) -> Vec<(&'static str, Value)> {
    let single = matches!(format, "action_response" | "key_value");
    match shape {
        Shape::Prose => Vec::new(),
        Shape::Small => match format {
            "action_response" => vec![("open_app", json!({"app_name": "Safari"}))],
            "key_value" => vec![("highlight_object", json!({"object": "headphones"}))],
            "call_syntax" => (0..2)
                .map(|_| {
                    (
                        "computer_use",
                        json!({"action":"left_click","coordinate":[rng.below(1024), rng.below(768)]}),
                    )
                })
                .collect(),
            _ => (0..3).map(|i| small_call(rng, i)).collect(),
        },
        Shape::Many if !single => (0..MANY_CALLS)
            .map(|i| {
                if format == "call_syntax" {
                    (
                        "computer_use",
                        json!({"action":"left_click","coordinate":[rng.below(1024), rng.below(768)]}),
                    )
                } else {
                    small_call(rng, i)
                }
            })
            .collect(),
        Shape::Many => Vec::new(),
        Shape::Large(n) => {
            // Key/value values are one line; the others carry real newlines (escaped in JSON).
            let content = big_content(rng, n, format != "key_value");
            if format == "call_syntax" {
                vec![("computer_use", json!({"action": "type", "text": content}))]
            } else {
                vec![(
                    "write_file",
                    json!({"path": "notes/big.txt", "content": content}),
                )]
            }
        }
    }
}

/// One case for a format and shape (also used for the scaling sizes of the large case).
pub fn case(format: &'static str, shape: Shape) -> Case {
    // One seed per (format, shape) so adding a case never changes the others.
    let seed = format.bytes().fold(0x9E37_79B9_7F4A_7C15_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
    }) ^ match shape {
        Shape::Prose => 1,
        Shape::Small => 2,
        Shape::Many => 3,
        Shape::Large(n) => 4 + n as u64,
    };
    let mut rng = Rng(seed | 1);
    if shape == Shape::Prose {
        return Case {
            name: "prose/1 MB".into(),
            format: "auto",
            shape,
            text: prose(&mut rng, PROSE_BYTES),
            json: Vec::new(),
            expected_calls: 0,
        };
    }
    let calls = calls_for(format, shape, &mut rng);
    let (text, json) = render(format, &calls, &mut rng);
    Case {
        name: format!("{format}/{}", shape.label()),
        format,
        shape,
        text,
        json,
        expected_calls: calls.len(),
    }
}

/// The whole corpus: prose, then every format in every shape it can express.
pub fn corpus() -> Vec<Case> {
    let mut out = vec![case("auto", Shape::Prose)];
    for f in formats() {
        for s in shapes_for(f) {
            out.push(case(f, s));
        }
    }
    out
}

/// One case of [`corpus`] by its name, generating only that case.
pub fn case_by_name(name: &str) -> Option<Case> {
    if name == "prose/1 MB" {
        return Some(case("auto", Shape::Prose));
    }
    formats().into_iter().find_map(|f| {
        shapes_for(f)
            .into_iter()
            .find(|s| format!("{f}/{}", s.label()) == name)
            .map(|s| case(f, s))
    })
}

/// Adversarial inputs (issue #9): a unit that opens a region which never closes, repeated.
/// A parser that rescans an unfinished region from the next byte is quadratic on them; a
/// linear one grows 4× per 4× of input. `(label, unit)`.
pub const ADVERSARIAL: [(&str, &str); 6] = [
    ("unclosed objects `{'b':'`", "{'b':'"),
    ("unclosed `<tool_call>{\"name\":`", "<tool_call>{\"name\":"),
    ("open brackets `[`", "["),
    ("unclosed fences", "```json\n{\"a\": "),
    // The openers of the families added in issue 21.
    (
        "unclosed FunctionGemma `call:f{a:<escape>`",
        "<start_function_call>call:f{a:<escape>",
    ),
    (
        "unclosed granite-20b-fc `<function_call> {\"name\":`",
        "<function_call> {\"name\":",
    ),
];

/// Flood units beyond the literal openers: registered names and `(` (call syntax with the
/// corpus registry), bare brackets, backticks, fences, and a line-start opener with its line.
const FLOOD_EXTRAS: [&str; 11] = [
    "computer_use(",
    "get_weather(",
    "<",
    "{",
    "[",
    "(",
    "`",
    "```json\n",
    "TOOL_CALL: x\n",
    "functools[",
    "<tool_calls:",
];

/// Flood units that vary an opener unit by what follows it (the classes behind the units,
/// not only the openers themselves), listed after the openers so that the numbers of the
/// units before them stay as they were.
const FLOOD_VARIANTS: [&str; 60] = [
    // A closed fence with one byte of content: one fence (and its content's read) a unit.
    "```\nx\n```\n",
    // The same with a callable info string.
    "```json\nx\n```\n",
    // Mistral's marker followed by a byte no JSON value starts with.
    "[TOOL_CALLS]x",
    // Mistral's marker followed by a blank (its reader skips it, then meets the next marker).
    "[TOOL_CALLS] ",
    // A bracket followed by a byte that is no JSON value: a bare array start, declined.
    "[x",
    // An object start with a key that never gets its `:` (the next unit follows the key).
    "{\"",
    // Session 41 (appended, earlier numbers kept): a bracket no JSON value follows (a
    // number, a blank line), a bracket run ending in a word (its first `[` opens, the
    // second does not), and markers followed by bytes their families decline.
    "[1,",
    "{\n",
    "[[x",
    "<tool_call>x",
    "[TOOL_CALLS]x ",
    // Session 41, calls lane (appended): registered names' `(` with a filler after it, two
    // names in turn, a name whose inner call closes (its arguments no literal), one whose
    // `{"` opens a string the next unit's `(` lies in, and two `TOOL_CALL:` headers of
    // unregistered tools in turn.
    "get_weather( ",
    "get_weather(x ",
    "computer_use(1, ",
    "get_weather(computer_use(",
    "get_weather(get_weather(x)",
    "get_weather({\"",
    "TOOL_CALL: y\nTOOL_CALL: x\n",
    // Session 42, calls lane (appended): two names in turn each opening inside the other's
    // string, a header naming no tool, and numbered units (no two copies alike) of a
    // `name(` whose string swallows the next unit, of two names so, and of a name whose
    // inner call closes.
    "get_weather(computer_use({\"",
    "tool_call:\n",
    "get_weather({\"{#}",
    "get_weather(computer_use({\"{#}",
    "get_weather(get_weather(x){#}",
    // Session 42, markers lane (appended): a suffixed marker with no suffix, a declined
    // opener whose unit holds an implausible bracket, and markers whose copies differ
    // (numbered: each opener decided on its own, no run passed).
    "<think:1,",
    "<tool_call>x[",
    "<|function_call|>{#}",
    "<|message_sep|>{#}",
    "<|message_model|>{#}",
    "<|tool_call>{#}",
    "<function={#}",
    "<function name=\"{#}",
    "<|start|>{#}",
    // Session 42, brackets lane (appended): declined openers whose unit holds a bracket
    // that opens bare JSON until the rescan budget runs out, and implausible brackets whose
    // copies differ.
    "<tool_call>x{\"",
    ">>>{\"",
    "[{#}",
    "{{#}",
    // Session 42, calls lane (appended): a unit whose inner call closes after a second name
    // (each opener scanned its unit afresh while its run was looked for, 798x prose).
    "get_weather(computer_use(x)",
    // Session 42 round 2, brackets lane (appended): numbered bracket floods whose copies
    // hold strings (each opener resumes from the kept scan that saw its bracket outside
    // strings), and a numbered `<tool_call>` whose first word is followed by no tag.
    "{\"{#}",
    "[{\"{#}",
    "<tool_call>{#}",
    // Session 42 end (appended): numbered floods the lead's screen found still over 20x
    // (a fence or `Action:` before JSON, each copy with its own number).
    "```json\n{#}\n```\n{\"",
    "```\n{#}\n```\n{\"",
    "Action: ```json{\"{#}",
    // Session 43, brackets lane (appended): repeated fences around a broken object (a
    // sub-engine a fence, 64-78x prose at the session's start).
    "```\nx\n```\n{\"",
    "```json\nx\n```\n{\"",
    // A repeated implausible object whose copies hold a newline (read byte by byte, 52x).
    "{\nx",
    // Session 43, calls lane (appended): numbered `name(` floods whose copies differ in
    // digits outside the names only (passed at once where the cap drops their notes), and
    // numbered `(` after digits or a name no tool has (read as ordinary with the name
    // bytes after it).
    "get_weather({#}",
    "computer_use({#}",
    "get_weather( {#}",
    "get_weather(x {#}",
    "computer_use(1, {#}",
    "({#}",
    "(x{#}",
    // Session 43, markers lane (appended): a numbered `<tool_call>` with junk around the
    // number (each opener decided on its own), and the repeated MiniMax unit with junk
    // after it (two declined openers a unit, 22-27x prose at the session's start).
    "<tool_call>x{#}",
    "<tool_call>{#}{\"",
    "]<]minimax[>[<tool_call>x",
    "]<]minimax[>[<tool_call>1,",
    "]<]minimax[>[<tool_call>\n",
    // Session 43 round 2, brackets lane (appended): broken `Action:` blocks whose copies
    // differ in words, and the newline form whose block spans lines (each failing block
    // was repaired and its lines decoded again, 38.8x and 70.7x prose).
    "Action: ```json{\"{w}",
    "Action:\n```json{\"",
];

/// The opener floods (`bench_table floods`, `bench_profile flood#N`): [`FLOOD_EXTRAS`], then
/// every literal that starts markup in auto mode ([`toolcall_parse::markup_openers`]), each
/// once, so a family's new opener is measured as soon as it is registered, then
/// [`FLOOD_VARIANTS`].
pub fn flood_units() -> Vec<String> {
    let mut out: Vec<String> = FLOOD_EXTRAS.iter().map(|u| (*u).to_owned()).collect();
    for o in toolcall_parse::markup_openers() {
        if !out.iter().any(|u| u == o) {
            out.push(o.to_owned());
        }
    }
    for v in FLOOD_VARIANTS {
        if !out.iter().any(|u| u == v) {
            out.push(v.to_owned());
        }
    }
    out
}

/// The prose case's text repeated to about `bytes` (cut at a character boundary): the
/// floods' baseline.
pub fn flood_prose(bytes: usize) -> String {
    let prose = case("auto", Shape::Prose).text;
    let mut text = prose.repeat(bytes.div_ceil(prose.len().max(1)));
    let mut cut = bytes.min(text.len());
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.truncate(cut);
    text
}

/// The mark in a flood unit that each copy replaces with its own number (0, 1, 2, …), so no
/// two copies are the same bytes: `get_weather({"{#}` floods `get_weather({"0get_weather({"1…`.
pub const FLOOD_NUMBER: &str = "{#}";

/// The mark in a flood unit that each copy replaces with a word drawn for it from
/// [`FLOOD_WORDS`] (a fixed pseudo-random sequence): copies then differ in letters and in
/// length, not only in digits, as a runaway model's repeats do
/// (`get_weather({"{w}` floods `get_weather({"theget_weather({"weather…`).
pub const FLOOD_WORD: &str = "{w}";

/// The words [`FLOOD_WORD`] draws from: common words and identifiers of 1 to 11 letters.
pub const FLOOD_WORDS: [&str; 16] = [
    "the",
    "weather",
    "a",
    "city",
    "location",
    "unit",
    "query",
    "of",
    "and",
    "celsius",
    "to",
    "arguments",
    "name",
    "is",
    "get_weather",
    "result",
];

/// `unit` repeated to at least `bytes` bytes; a unit holding [`FLOOD_NUMBER`] gets each
/// copy's number in its place, one holding [`FLOOD_WORD`] a word drawn for that copy (a
/// flood no pass over a repeated unit takes at once).
pub fn adversarial(unit: &str, bytes: usize) -> String {
    if !unit.contains(FLOOD_NUMBER) && !unit.contains(FLOOD_WORD) {
        return unit.repeat(bytes / unit.len().max(1) + 1);
    }
    let mut out = String::with_capacity(bytes + unit.len() + 20);
    let mut n = 0u64;
    // A fixed linear congruential sequence (Knuth's MMIX constants): the same text every run.
    let mut draw = 0x2545_f491_4f6c_dd1d_u64;
    while out.len() < bytes {
        draw = draw
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let word = FLOOD_WORDS[(draw >> 60) as usize];
        out.push_str(
            &unit
                .replace(FLOOD_NUMBER, &n.to_string())
                .replace(FLOOD_WORD, word),
        );
        n += 1;
    }
    out
}

/// Splits `text` into pushes of about `n` bytes, never inside a UTF-8 character.
pub fn chunks(text: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / n.max(1) + 1);
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = n.max(1).min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbered_flood_unit_differs_copy_by_copy() {
        assert_eq!(adversarial("ab", 5), "ababab");
        let text = adversarial("f({\"{#}", 40);
        assert!(text.starts_with("f({\"0f({\"1f({\"2"), "{text}");
        assert!(text.len() >= 40 && !text.contains(FLOOD_NUMBER));
    }

    #[test]
    fn a_worded_flood_unit_draws_a_word_per_copy() {
        let text = adversarial("<{w}>", 4000);
        assert_eq!(text, adversarial("<{w}>", 4000), "the same text every run");
        assert!(text.len() >= 4000 && !text.contains(FLOOD_WORD));
        let words: Vec<&str> = text
            .split_terminator('>')
            .map(|w| w.trim_start_matches('<'))
            .collect();
        let drawn: std::collections::BTreeSet<&str> = words.iter().copied().collect();
        assert_eq!(
            drawn.len(),
            FLOOD_WORDS.len(),
            "every word is drawn: {drawn:?}"
        );
        assert!(words.windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn corpus_is_deterministic_and_sized() {
        let a = corpus();
        let b = corpus();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.text, y.text, "{}", x.name);
        }
        let prose = &a[0];
        assert!(prose.text.len() >= PROSE_BYTES);
        assert!(!prose.text.contains(['{', '[', '<']));
        for c in a.iter().filter(|c| matches!(c.shape, Shape::Large(_))) {
            assert!(c.text.len() >= LARGE_ARGS, "{}", c.name);
        }
    }

    #[test]
    fn json_formats_carry_valid_bare_json() {
        for c in corpus() {
            for doc in &c.json {
                serde_json::from_str::<Value>(doc).unwrap();
                assert!(c.text.contains(doc.as_str()), "{}", c.name);
            }
        }
    }

    #[test]
    fn chunks_cover_text_on_char_boundaries() {
        let t = "aé€b🙂c";
        for n in [1, 2, 4, 64] {
            let c = chunks(t, n);
            assert_eq!(c.concat(), t);
        }
        assert_eq!(chunks("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(
            case_by_name("hermes/small").unwrap().text,
            case("hermes", Shape::Small).text
        );
        assert!(case_by_name("nope/small").is_none());
    }
}
