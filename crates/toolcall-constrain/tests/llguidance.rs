//! Every emitted grammar checked by a real grammar engine: llguidance (byte-level tokens)
//! compiles the Lark form, and the GBNF form read back as Lark, for each family with a
//! declared shape; both accept every valid-call fixture of the family byte by byte and
//! reject schema violations, unknown tools, an opener under `tool_choice: "none"` and a
//! second call under `parallel_tool_calls: false`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use llguidance::{Matcher, ParserFactory, api::TopLevelGrammar};
use serde_json::{Map, Value, json};
use toktrie::{ApproximateTokEnv, InferenceCapabilities};
use toolcall_constrain::{Args, Body, Dialect, Options, Piece, ToolChoice, build, shape};
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{FormatId, FormatSelection, ParseOptions, example_call, parse};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../toolcall-parse/tests/fixtures")
}

fn tools() -> Vec<ToolSpec> {
    let text = std::fs::read_to_string(fixtures().join("families_tools.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The families with a declared shape.
fn shaped() -> Vec<&'static str> {
    FormatId::all()
        .map(|f| f.as_str())
        .filter(|id| shape(id).is_some())
        .collect()
}

struct Case {
    name: String,
    output: String,
    expect: Value,
}

fn cases(family: &str) -> Vec<Case> {
    let Ok(text) = std::fs::read_to_string(fixtures().join(family).join("cases.txt")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("=== case ") else {
            continue;
        };
        let mut body = Vec::new();
        for l in lines.by_ref() {
            if l == "=== expect" {
                break;
            }
            body.push(l);
        }
        let expect: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        out.push(Case {
            name: name.trim().to_owned(),
            output: body.join("\n"),
            expect,
        });
    }
    out
}

/// A case whose reply holds valid calls only (no diagnostics, the shared tools).
fn is_valid_call(case: &Case) -> bool {
    let e = &case.expect;
    e["calls"].as_array().is_some_and(|c| !c.is_empty())
        && e.get("diagnostics").is_none_or(|d| d == "none")
        && e.get("tools").is_none_or(|t| t == true)
        && e.get("starts_in_reasoning").is_none_or(|s| s == false)
}

/// Whether the case is a reply whose end token the model server stripped (the parser assumed
/// its closing marker): the model wrote that token, so the reply as delivered is not what the
/// constraint sees the model write. Likewise a shape the parser tolerates but the family's
/// template never writes (a missing closing tag, an `invoke` holding JSON, a single-quoted
/// or bare name, a Step-3 wrapper variant): its call carries the repair that says so.
fn end_token_stripped(family: &str, output: &str) -> bool {
    let options = ParseOptions {
        format: FormatSelection::Only(family.into()),
        ..ParseOptions::default()
    };
    parse(output, &options).calls.iter().any(|c| {
        c.origin.repairs.iter().any(|r| {
            [
                "closing_marker",
                "closing_tag",
                "invoke_json",
                "attribute_quotes",
                "wrapper_variant",
            ]
            .contains(&r.kind.as_str())
        })
    })
}

/// Whether the case is markup a decoder held to the constraint could not write, though the
/// parser reads it against the tools' schemas (MiniCPM5's reference rules and the schema's
/// typing): arguments wrapped in one undeclared `arguments`/`properties` parameter (read as
/// that key when the tool declares no properties), an argument the schema does not declare
/// (dropped), or a zero-padded integer (read as the integer).
fn outside_the_schema(family: &str, output: &str, tools: &[ToolSpec]) -> bool {
    let mut registry = Registry::new();
    for t in tools {
        registry.add_spec(t.clone()).unwrap();
    }
    let plain = ParseOptions {
        format: FormatSelection::Only(family.into()),
        ..ParseOptions::default()
    };
    let held = ParseOptions {
        tools: Some(Arc::new(registry)),
        ..plain.clone()
    };
    let wrapped = parse(output, &plain).calls.iter().any(|c| {
        let declared = tools
            .iter()
            .find(|t| t.name == c.name)
            .and_then(|t| t.parameters["properties"].as_object());
        ["arguments", "properties"]
            .iter()
            .any(|k| c.arguments.get(k).is_some() && declared.is_none_or(|d| !d.contains_key(*k)))
    });
    wrapped
        || parse(output, &held).calls.iter().any(|c| {
            c.origin.repairs.iter().any(|r| {
                ["unwrapped_arguments", "undeclared_argument"].contains(&r.kind.as_str())
                    || (r.kind == "text_value" && r.message.ends_with("(leading zeros)"))
            })
        })
}

/// Whether a call of the case holds a text value with the family's own value-closing tag in
/// it (Qwen3-Coder's `</parameter>` written inside a file's content): the parser reads it as
/// text of the value, but the constraint holds a decoder to a value that ends at its first
/// closing tag, a subset of what the parser reads.
fn value_holds_its_close(family: &str, output: &str) -> bool {
    let Some(Args::Text(p)) = shape(family).and_then(|s| {
        s.call.iter().find_map(|piece| match piece {
            Piece::Args(a) => Some(*a),
            _ => None,
        })
    }) else {
        return false;
    };
    let options = ParseOptions {
        format: FormatSelection::Only(family.into()),
        ..ParseOptions::default()
    };
    parse(output, &options).calls.iter().any(|c| {
        c.arguments.as_object().is_some_and(|a| {
            a.values()
                .any(|v| v.as_str().is_some_and(|s| s.contains(p.value_close)))
        })
    })
}

/// GBNF read back as llguidance Lark: `name ::= …` → `name: …`, `[…]` → `/[…]/`, and
/// every literal one character per lexeme (as the Lark writer does).
fn gbnf_to_lark(gbnf: &str) -> String {
    let mut out = String::new();
    for line in gbnf.lines() {
        let (name, body) = line.split_once(" ::= ").unwrap();
        out.push_str(if name == "root" { "start" } else { name });
        out.push_str(": ");
        let chars: Vec<char> = body.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '"' => {
                    let mut lit = Vec::new();
                    i += 1;
                    while chars[i] != '"' {
                        if chars[i] == '\\' {
                            lit.push(format!("\\{}", chars[i + 1]));
                            i += 2;
                        } else {
                            lit.push(chars[i].to_string());
                            i += 1;
                        }
                    }
                    i += 1;
                    if lit.is_empty() {
                        out.push_str("\"\"");
                    } else {
                        out.push('(');
                        let quoted: Vec<String> = lit.iter().map(|c| format!("\"{c}\"")).collect();
                        out.push_str(&quoted.join(" "));
                        out.push(')');
                    }
                }
                '[' => {
                    out.push_str("/[");
                    i += 1;
                    while chars[i] != ']' {
                        if chars[i] == '\\' {
                            out.push(chars[i]);
                            out.push(chars[i + 1]);
                            i += 2;
                        } else {
                            if chars[i] == '/' {
                                out.push('\\');
                            }
                            out.push(chars[i]);
                            i += 1;
                        }
                    }
                    out.push_str("]/");
                    i += 1;
                }
                'r' if body[body.char_indices().nth(i).unwrap().0..].starts_with("root")
                    && (i == 0 || !chars[i - 1].is_alphanumeric() && chars[i - 1] != '-') =>
                {
                    out.push_str("start");
                    i += 4;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        out.push('\n');
    }
    out
}

struct Checker {
    factory: ParserFactory,
}

impl Checker {
    fn new() -> Checker {
        let env = ApproximateTokEnv::single_byte_env();
        let factory = ParserFactory::new(&env, InferenceCapabilities::default(), &[]).unwrap();
        Checker { factory }
    }

    /// `Ok(())` when the grammar accepts `text` whole, else where and why it stopped.
    fn check(&self, lark: &str, text: &str) -> Result<(), String> {
        let mut m = Matcher::new(
            self.factory
                .create_parser(TopLevelGrammar::from_lark(lark.to_owned())),
        );
        if let Some(e) = m.get_error() {
            panic!("llguidance refused the grammar: {e}\n{lark}");
        }
        for (i, b) in text.bytes().enumerate() {
            if let Err(e) = m.consume_token(b as u32) {
                let at = (0..=i)
                    .rev()
                    .find(|&k| text.is_char_boundary(k))
                    .unwrap_or(0);
                let e = e.to_string();
                let why = e.lines().next().unwrap_or_default();
                return Err(format!("rejected at byte {i} ({:?}): {why}", &text[at..]));
            }
        }
        match m.is_accepting() {
            Ok(true) => Ok(()),
            _ => Err("accepted as a prefix only".into()),
        }
    }
}

/// The family's constraint in both grammar dialects, as Lark.
fn grammars(family: &str, options: &Options) -> Vec<(&'static str, String)> {
    let tools = tools();
    let lark = match build(family, &tools, Dialect::Lark, options).unwrap().body {
        Body::Grammar(s) => s,
        Body::Json(_) => unreachable!(),
    };
    let gbnf = match build(family, &tools, Dialect::Gbnf, options).unwrap().body {
        Body::Grammar(s) => s,
        Body::Json(_) => unreachable!(),
    };
    vec![("lark", lark), ("gbnf", gbnf_to_lark(&gbnf))]
}

fn options(choice: ToolChoice, parallel: bool) -> Options {
    Options {
        choice,
        parallel,
        trigger: None,
    }
}

fn call(family: &str, name: &str, args: Value) -> String {
    let Value::Object(args) = args else { panic!() };
    let format = FormatId::from_name(family).unwrap();
    example_call(format, name, &args).unwrap_or_else(|| panic!("{family} writes no example call"))
}

#[test]
fn every_valid_call_fixture_is_accepted_byte_by_byte() {
    let checker = Checker::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for family in shaped() {
        let prose = shape(family).unwrap().prose;
        let opts = options(ToolChoice::Auto, true);
        if !prose {
            continue; // only forced calls: covered below
        }
        let tools = tools();
        for (dialect, grammar) in grammars(family, &opts) {
            for case in cases(family).iter().filter(|c| {
                is_valid_call(c)
                    && !end_token_stripped(family, &c.output)
                    && !value_holds_its_close(family, &c.output)
                    && !outside_the_schema(family, &c.output, &tools)
            }) {
                checked += 1;
                if let Err(e) = checker.check(&grammar, &case.output) {
                    failures.push(format!("{family}/{} ({dialect}): {e}", case.name));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} fixtures checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn schema_violations_unknown_tools_and_banned_openers_are_rejected() {
    let checker = Checker::new();
    let mut failures = Vec::new();
    let good = json!({"city": "Paris", "days": 3});
    for family in shaped() {
        let prose = shape(family).unwrap().prose;
        let valid = call(family, "get_weather", good.clone());
        let forced = options(ToolChoice::Required, true);
        let mut expect = |opts: &Options, text: &str, accept: bool, what: &str| {
            for (dialect, grammar) in grammars(family, opts) {
                let got = checker.check(&grammar, text);
                if got.is_ok() != accept {
                    failures.push(format!(
                        "{family} ({dialect}) {what}: expected {}, got {got:?}\n{text}",
                        if accept { "accepted" } else { "rejected" }
                    ));
                }
            }
        };
        expect(&forced, &valid, true, "a valid call, forced");
        let named = options(ToolChoice::Named("get_weather".into()), false);
        expect(&named, &valid, true, "the named tool");
        let other = call(family, "get_time", json!({}));
        expect(&named, &other, false, "another tool than the named one");
        expect(
            &forced,
            &call(
                family,
                "get_weather",
                json!({"city": "Paris", "days": "three"}),
            ),
            false,
            "a string where the schema says integer",
        );
        expect(
            &forced,
            &call(family, "get_weather", json!({"days": 3})),
            false,
            "a missing required key",
        );
        expect(
            &forced,
            &call(family, "get_wether", good.clone()),
            false,
            "an unknown tool name",
        );
        expect(
            &forced,
            &call(
                family,
                "get_weather",
                json!({"city": "Paris", "unit": "kelvin"}),
            ),
            false,
            "a value outside the enum",
        );
        if !prose {
            continue;
        }
        let auto = options(ToolChoice::Auto, true);
        let prose_then_call = format!("Let me check. {valid}\nDone.");
        expect(&auto, &prose_then_call, true, "prose around a call, auto");
        expect(
            &auto,
            "Just prose, <tool no call> [TOOL] here.",
            true,
            "prose alone, auto",
        );
        expect(&forced, "Just prose.", false, "prose alone, required");
        let none = options(ToolChoice::None, true);
        expect(&none, "Just prose.", true, "prose under none");
        expect(&none, &prose_then_call, false, "a call under none");
        let two = format!("{valid}\n{}", call(family, "get_time", json!({})));
        expect(&auto, &two, true, "two calls, parallel");
        let single = options(ToolChoice::Auto, false);
        expect(&single, &valid, true, "one call, parallel_tool_calls false");
        expect(
            &single,
            &two,
            false,
            "a second call, parallel_tool_calls false",
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_trigger_is_required_before_the_markup() {
    let checker = Checker::new();
    let trigger = "<<call-7f3a>>";
    let valid = call("hermes", "get_weather", json!({"city": "Paris"}));
    let opts = Options {
        trigger: Some(trigger.into()),
        ..Options::default()
    };
    for (dialect, grammar) in grammars("hermes", &opts) {
        // Quoted markup without the trigger is prose; with it, a constrained call.
        checker
            .check(&grammar, &format!("It looks like {valid} in prose."))
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        checker
            .check(&grammar, &format!("Calling. {trigger}{valid}"))
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let bad = call("hermes", "get_weather", json!({"town": "Paris"}));
        assert!(
            checker.check(&grammar, &format!("{trigger}{bad}")).is_err(),
            "{dialect}"
        );
    }
}

#[test]
fn json_document_families_constrain_forced_calls_only() {
    let checker = Checker::new();
    let forced = options(ToolChoice::Required, false);
    for (dialect, grammar) in grammars("json", &forced) {
        checker
            .check(
                &grammar,
                r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            )
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        assert!(
            checker
                .check(&grammar, r#"{"name": "get_weather", "arguments": {}}"#)
                .is_err()
        );
    }
    let schema = match build("json", &tools(), Dialect::JsonSchema, &forced)
        .unwrap()
        .body
    {
        Body::Json(v) => v,
        Body::Grammar(_) => unreachable!(),
    };
    // llguidance compiles the JSON Schema itself.
    let mut m = Matcher::new(
        checker
            .factory
            .create_parser(TopLevelGrammar::from_json_schema(schema)),
    );
    assert!(m.get_error().is_none(), "{:?}", m.get_error());
    for b in br#"{"name": "get_weather", "arguments": {"city": "Paris"}}"# {
        m.consume_token(*b as u32).unwrap();
    }
    assert!(m.is_accepting().unwrap());
}

#[test]
fn structural_tags_dispatch_on_the_opener_with_each_tools_schema() {
    let tools = tools();
    for family in shaped().into_iter().filter(|f| shape(f).unwrap().prose) {
        let single = options(ToolChoice::Required, false);
        let c = build(family, &tools, Dialect::StructuralTag, &single).unwrap();
        let v = match &c.body {
            Body::Json(v) => v.clone(),
            Body::Grammar(_) => unreachable!(),
        };
        assert_eq!(v["type"], "structural_tag");
        let format = &v["format"];
        assert_eq!(format["type"], "triggered_tags", "{family}");
        assert_eq!(format["at_least_one"], true);
        assert_eq!(format["stop_after_first"], true);
        let trigger = format["triggers"][0].as_str().unwrap();
        for tag in format["tags"].as_array().unwrap() {
            assert!(
                tag["begin"].as_str().unwrap().starts_with(trigger),
                "{family}: {tag}"
            );
        }
        let text = v.to_string();
        assert!(
            text.contains("get_weather") && text.contains("lookup_code"),
            "{family}"
        );
        let none = build(
            family,
            &tools,
            Dialect::StructuralTag,
            &options(ToolChoice::None, true),
        )
        .unwrap();
        assert_eq!(
            none.response_format().unwrap()["format"]["excludes"][0],
            trigger
        );
        let _ = Map::<String, Value>::new();
    }
}

/// Codex's patch grammar, cut down to added files (as a custom tool declares it).
const PATCH_GRAMMAR: &str = r#"start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: "*** Add File: " filename LF add_line+
filename: /(.+)/
add_line: "+" /(.*)/ LF -> line
%import common.LF
"#;
const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hello \"world\"\n*** End Patch";
const BAD_PATCH: &str = "*** Begin Patch\n*** Remove Everything\n*** End Patch";

/// The gateway's form of a custom tool: one string argument, `input`.
fn patch_tool() -> Vec<ToolSpec> {
    vec![ToolSpec::new(
        "apply_patch",
        "Edit files with a patch.",
        json!({"type": "object", "properties": {"input": {"type": "string"}},
            "required": ["input"], "additionalProperties": false}),
    )]
}

fn inputs(
    syntax: toolcall_constrain::InputSyntax,
    definition: &str,
) -> Vec<(String, toolcall_constrain::InputGrammar)> {
    vec![(
        "apply_patch".into(),
        toolcall_constrain::InputGrammar {
            syntax,
            definition: definition.into(),
        },
    )]
}

fn grammar_text(c: &toolcall_constrain::Constraint) -> String {
    match &c.body {
        Body::Grammar(s) => s.clone(),
        Body::Json(_) => unreachable!(),
    }
}

// Before: the tool's `input` was a free string in the constraint, so a patch breaking the
// grammar was accepted (checked: with `build` instead of `build_with_inputs`, every
// `rejected` assertion below fails).
#[test]
fn a_custom_tools_grammar_is_inside_the_constraint_raw_and_json_escaped() {
    use toolcall_constrain::{InputSyntax, build_with_inputs};
    let checker = Checker::new();
    let forced = options(ToolChoice::Named("apply_patch".into()), true);
    let lark = inputs(InputSyntax::Lark, PATCH_GRAMMAR);
    for family in ["qwen3_coder", "hermes", "glm"] {
        let good = call(family, "apply_patch", json!({"input": PATCH}));
        let bad = call(family, "apply_patch", json!({"input": BAD_PATCH}));
        for dialect in [Dialect::Lark, Dialect::Gbnf] {
            let c = build_with_inputs(family, &patch_tool(), dialect, &forced, &lark).unwrap();
            assert!(c.notes.is_empty(), "{:?}", c.notes);
            let g = grammar_text(&c);
            let g = if dialect == Dialect::Gbnf {
                gbnf_to_lark(&g)
            } else {
                g
            };
            checker
                .check(&g, &good)
                .unwrap_or_else(|e| panic!("{family} {dialect}: {e}\n{good}\n{g}"));
            assert!(
                checker.check(&g, &bad).is_err(),
                "{family} {dialect}: the bad patch was accepted\n{bad}"
            );
        }
    }
    // Structural tags: the arguments become a grammar format holding the tool's grammar.
    let c = build_with_inputs(
        "hermes",
        &patch_tool(),
        Dialect::StructuralTag,
        &forced,
        &lark,
    )
    .unwrap();
    let Body::Json(v) = &c.body else {
        unreachable!()
    };
    let tag = &v["format"]["tags"][0];
    let elements = tag["content"]["elements"]
        .as_array()
        .map(|e| e.to_vec())
        .unwrap_or_else(|| vec![tag["content"].clone()]);
    let grammar = elements
        .iter()
        .find(|e| e["type"] == "grammar")
        .unwrap_or_else(|| panic!("{v}"));
    let g = gbnf_to_lark(grammar["grammar"].as_str().unwrap());
    let args = |patch: &str| json!({"input": patch}).to_string();
    checker.check(&g, &args(PATCH)).unwrap();
    assert!(checker.check(&g, &args(BAD_PATCH)).is_err());

    // A regex grammar, the same way.
    let regex = inputs(InputSyntax::Regex, r"^\d{4}-\d{2}-\d{2}$");
    let c =
        build_with_inputs("qwen3_coder", &patch_tool(), Dialect::Lark, &forced, &regex).unwrap();
    let g = grammar_text(&c);
    let date = call("qwen3_coder", "apply_patch", json!({"input": "2025-01-31"}));
    let word = call("qwen3_coder", "apply_patch", json!({"input": "tomorrow"}));
    checker.check(&g, &date).unwrap();
    assert!(checker.check(&g, &word).is_err());
}

#[test]
fn an_unread_grammar_leaves_the_input_free_and_says_so() {
    use toolcall_constrain::{InputSyntax, build_with_inputs};
    let checker = Checker::new();
    let forced = options(ToolChoice::Named("apply_patch".into()), true);
    let ignoring = format!("{PATCH_GRAMMAR}%ignore \" \"\n");
    let c = build_with_inputs(
        "qwen3_coder",
        &patch_tool(),
        Dialect::Lark,
        &forced,
        &inputs(InputSyntax::Lark, &ignoring),
    )
    .unwrap();
    assert!(c.notes[0].contains("%ignore"), "{:?}", c.notes);
    let bad = call("qwen3_coder", "apply_patch", json!({"input": BAD_PATCH}));
    checker.check(&grammar_text(&c), &bad).unwrap();
}
