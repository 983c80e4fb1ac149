//! Floods of an opener followed by something other than a call (the flood units of
//! `corpus::FLOOD_VARIANTS`): fences with one byte of content, which make no sub-engine
//! (`holds_no_nested_region`), and Mistral's marker followed by a word or a blank, which
//! it declines without a reader, and one byte between two stops (`[x`), read without the
//! text scan's block search. A real call after 0–1000 of them is found as before, one
//! shot and in 1-, 7- and 64-byte pushes, with the same text and diagnostics.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::assert_stream_equals_one_shot;
use toolcall_core::Parsed;
use toolcall_parse::ParseOptions;

const OBJECT_CALL: &str = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;

#[test]
fn a_call_after_a_flood_of_variants_is_found() {
    let o = ParseOptions::default();
    let calls = [
        format!("[TOOL_CALLS][{OBJECT_CALL}]"),
        r#"[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}"#.to_owned(),
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("\n```json\n{OBJECT_CALL}\n```\n"),
        format!("\n```\n[{OBJECT_CALL}]\n```\n"),
    ];
    let units = [
        "```\nx\n```\n",
        "```json\nx\n```\n",
        "```json\n x \n```\n",
        "```tool_call\nTOOL\n```\n",
        "```json\nhello world\n\n```\n",
        "[TOOL_CALLS]x",
        "[TOOL_CALLS] ",
        "[TOOL_CALLS]get now ",
        "[TOOL_CALLS]x[AR ",
        // One byte between stops, read without the text scan's block search.
        "[x",
        "<x",
        "[x]",
        "x(",
    ];
    for unit in units {
        for n in [0, 1, 2, 3, 10, 1000] {
            for call in &calls {
                let text = format!("a {}ok {call} b", unit.repeat(n));
                let context = format!("{n} × {unit:?} then {call:.30}");
                let p = assert_stream_equals_one_shot(&text, &o, &context);
                // Mistral's named form after a fence is read as text (so it was before
                // fences made no sub-engine): only the stream is compared there.
                if n > 0 && unit.starts_with("```") && call.contains("[ARGS]") {
                    assert!(p.calls.is_empty(), "{context}: {:?}", p.calls);
                    continue;
                }
                assert_eq!(p.calls.len(), 1, "{context}: {:?}", p.calls);
                assert_eq!(p.calls[0].name, "get_weather", "{context}");
                assert_eq!(p.calls[0].arguments["city"], "Paris", "{context}");
            }
        }
    }
}

// Fences whose content does open a region in their sub-engine (a bare call, a registered
// `name(`, a line-start opener, after blanks too) still read it, flood or not.
#[test]
fn a_fence_whose_content_may_hold_a_call_is_still_read() {
    let o = ParseOptions {
        tools: Some(common::registry()),
        ..ParseOptions::default()
    };
    let contents = [
        format!("x\n{OBJECT_CALL}"),
        format!("  {OBJECT_CALL}"),
        "get_weather(city=\"Paris\")".to_owned(),
        "x\n  TOOL_CALL: get_weather\n{\"city\": \"Paris\"}".to_owned(),
    ];
    for content in &contents {
        for n in [0, 1, 7] {
            let text = format!("{}```json\n{content}\n```\n", "```json\nx\n```\n".repeat(n));
            let whole = assert_stream_equals_one_shot(&text, &o, &format!("{n} then {content:?}"));
            for c in &whole.calls {
                assert_eq!(c.name, "get_weather", "{content:?}");
            }
        }
    }
}

// Units whose bare JSON scan only nests (a string or ordinary bytes after each bracket):
// every region fails too deep after the same bytes, and one that starts with the bytes a
// kept failed scan read fails as it did without a scan (`FailedScan::repeats`). A stream
// in 1-byte pushes mostly holds too few bytes for that at a region, so scans it: the
// text, calls and diagnostics (the rescan budget's warning, its span too) are the same.
#[test]
fn a_call_after_a_flood_of_nesting_units_is_found_as_streamed() {
    let calls = [
        OBJECT_CALL.to_owned(),
        format!("[{OBJECT_CALL}]"),
        format!("[TOOL_CALLS][{OBJECT_CALL}]"),
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
    ];
    let units = [
        "{\"",
        "{\"a\"",
        "{\"k\":",
        "{'a'",
        "[x",
        "[1,",
        "{\"a\":[",
        "[\"{\"",
        "{\"name\":",
    ];
    for max_depth in [1, 2, 5, 128] {
        let o = ParseOptions {
            limits: toolcall_parse::Limits {
                max_depth,
                ..toolcall_parse::Limits::default()
            },
            ..ParseOptions::default()
        };
        for unit in units {
            for n in [0, 1, 2, 3, 10, 1000] {
                for call in &calls {
                    let text = format!("a {}ok {call} b", unit.repeat(n));
                    let context = format!("depth {max_depth}: {n} × {unit:?} then {call:.30}");
                    let p = stream_matches_one_shot(&text, &o, &context);
                    // An unclosed unit may swallow the call after it (as a string or
                    // a truncated call), flood or not: what is found is the stream's
                    // (above). Without a flood, the call (3 deep) is found.
                    assert!(p.calls.len() <= 1, "{context}: {:?}", p.calls);
                    if n == 0 && max_depth >= 3 {
                        assert_eq!(p.calls.len(), 1, "{context}: {:?}", p.calls);
                        assert_eq!(p.calls[0].name, "get_weather", "{context}");
                    }
                }
            }
        }
    }
}

/// The test registry's options with nesting bounded at `max_depth`, and no bound on failed
/// call attempts: the tests that use them find a call after floods of more failures than
/// `Limits::max_failed_calls` allows (past it the rest of a reply is text; the floods the
/// other tests compare streamed and one-shot reach it).
fn with_tools(max_depth: usize) -> ParseOptions {
    ParseOptions {
        tools: Some(common::registry()),
        limits: toolcall_parse::Limits {
            max_depth,
            max_failed_calls: usize::MAX,
            ..toolcall_parse::Limits::default()
        },
        ..ParseOptions::default()
    }
}

/// [`assert_stream_equals_one_shot`]: where the rescan budget runs out, its warning too
/// (its text and span; the budget counted the bytes received until session 41, so a
/// stream ran out at another region than one-shot, and only the text and calls were
/// compared here).
fn stream_matches_one_shot(text: &str, o: &ParseOptions, context: &str) -> Parsed {
    assert_stream_equals_one_shot(text, o, context)
}

// Floods of a registered `name(` with something after each `(` (issue 23's call-syntax
// variants), of two alternating names, of a `name(` whose inner call closes, and of
// alternating `TOOL_CALL:` lines: one-shot (where runs of failing openers are passed at
// once) equals 1-byte pushes (where none is: each opener is decided as its bytes arrive)
// and 7- and 64-byte pushes, in text, calls and every diagnostic with its span; a call
// after the flood (behind a stray bracket that ends the open scans) is found.
// A closed `name(...)` whose arguments do not parse is decided as text with a note; one
// with the same bytes as the last such reuses its note (`NameMemo::call_text`): each note
// is the one its own region gets read alone, one shot and streamed.
#[test]
fn a_failing_closed_call_gets_the_note_of_its_own_bytes() {
    let o = ParseOptions {
        tools: Some(common::registry()),
        ..ParseOptions::default()
    };
    let regions = [
        "get_weather(x)",
        "get_weather(x)",
        "get_weather(y)",
        "get_weather(z, 1)",
        "get_weather(x)",
        "get_weather(x)",
    ];
    let alone: Vec<String> = regions
        .iter()
        .map(|r| {
            let p = toolcall_parse::parse(&format!("a {r} b"), &o);
            assert_eq!(p.diagnostics.len(), 1, "{r}: {:?}", p.diagnostics);
            p.diagnostics[0].message.to_string()
        })
        .collect();
    assert_ne!(alone[0], alone[2]);
    assert_ne!(alone[0], alone[3]);
    for sep in [" ", "\n", ") (", " get_weather(] "] {
        let text = format!("a {} b", regions.join(sep));
        let p = assert_stream_equals_one_shot(&text, &o, &format!("{sep:?}"));
        let notes: Vec<String> = p
            .diagnostics
            .iter()
            .map(|d| d.message.to_string())
            .filter(|m| m.contains("not run"))
            .collect();
        assert_eq!(notes, alone, "{sep:?}: {:?}", p.diagnostics);
    }
}

#[test]
fn a_call_after_a_flood_of_call_syntax_variants_is_found() {
    let units = [
        "get_weather( ",
        "get_weather(x ",
        "get_weather(  x, y ",
        "computer_use(1, ",
        "get_weather(x.y ",
        "get_weather(é ",
        // A filler that ends in a name byte: the next name is tracked from it.
        "get_weather(1",
        "get_weather(1get_weather(",
        // Fillers the bracket scan reads as markup or the text scan stops at.
        "get_weather('a' ",
        "get_weather(\"a\" ",
        "get_weather(/ ",
        "get_weather(< ",
        "get_weather(\n",
        "get_weather(x\ny ",
        "get_weather(\n ",
        "get_weather(\n\n",
        "get_weather(\nTOOL_CALL: x\n",
        // A line-start opener (any case, after blanks too) on the filler's next line:
        // read at that line start, so the unit is not passed at once.
        "get_weather(\ntool_call: x\n",
        "get_weather(\n tool_call: x\n",
        "get_weather(\n\ttool_call: x\n",
        "get_weather(\n\rtool_call: x\n",
        "get_weather(x\n\ntool_call: x\n",
        "get_weather(\ntool_call: get_weather\n",
        "get_weather(get_weather(x)",
        "get_weather(computer_use(",
        "get_weather( computer_use( ",
        "get_weather(get_weather(computer_use(",
        "TOOL_CALL: y\nTOOL_CALL: x\n",
        "TOOL_CALL: x\nfoo\n",
        "TOOL_CALL: x\n\n",
        "TOOL_CALL: x\n ",
        "TOOL_CALL: x\nfunctools\n",
        "TOOL_CALL: x\n  tool_call: y\nbar\nTOOL_CALL: z\n",
        "TOOL_CALL: x\nfoo(\n",
        "TOOL_CALL: x\n`\n",
        // A registered tool's header in the unit: a call at every copy, never passed.
        "TOOL_CALL: x\nTOOL_CALL: get_weather\n",
        "TOOL_CALL: x\nget_weather(city=\"Paris\")\n",
        // More lines a unit than are passed at once.
        "TOOL_CALL: a\nTOOL_CALL: b\nTOOL_CALL: c\nTOOL_CALL: d\nTOOL_CALL: e\nTOOL_CALL: f\n",
    ];
    let tails = [
        "] get_weather(city=\"Paris\") b",
        "get_weather(city=\"Paris\") b",
        "\nTOOL_CALL: get_weather\nCITY: Paris\n\nb",
    ];
    for max_depth in [1, 2, 3, 128] {
        let o = with_tools(max_depth);
        for unit in units {
            for n in [0, 1, 2, 40, 1000] {
                for tail in tails {
                    let text = format!("a {}{tail}", unit.repeat(n));
                    let context = format!("depth {max_depth}: {n} × {unit:?} then {tail:?}");
                    let p = assert_stream_equals_one_shot(&text, &o, &context);
                    // Units holding a call (a registered header) add theirs before it.
                    if tail.starts_with(']') || n == 0 {
                        let last = p.calls.last().expect(&context);
                        assert_eq!(last.name, "get_weather", "{context}");
                        assert_eq!(last.arguments["city"], "Paris", "{context}");
                        if !unit.contains("get_weather\n") && !unit.contains("Paris") {
                            assert_eq!(p.calls.len(), 1, "{context}: {:?}", p.calls);
                        }
                    }
                }
            }
        }
    }
}

// Floods of a registered `name(` whose unit holds what the bracket scan reads as markup
// (a string that swallows the next unit, brackets, quotes, a stop the text scan asks about,
// a name no tool has), passed at once one-shot where every copy's scan reads bytes that
// are copies of the first's (`Family::failed_call_scans`), and headers naming no tool
// (declined before a reader is built, `KeyValue::line_text`): one-shot equals 1-, 7- and
// 64-byte pushes (where nothing is passed) in text, calls and every diagnostic, with
// whatever ends the run after it.
#[test]
fn floods_of_openers_whose_scans_read_markup_read_as_opener_by_opener() {
    let units = [
        "get_weather({\"",
        "computer_use({\"",
        "get_weather(computer_use({\"",
        "get_weather( {\"",
        "get_weather(x {\"",
        "computer_use(1, {\"",
        "get_weather({\"x",
        "get_weather({\"\n",
        "get_weather({\"1,",
        "get_weather([",
        "get_weather('a",
        "get_weather(<{\"",
        "get_weather(<tool_call>",
        "get_weather(\"(\"",
        "get_weather(/*",
        "get_weather(]",
        "get_weather(}x",
        "get_weather(computer_use(x",
        "get_weather(computer_use(x)",
        "get_weather(get_weather(x)",
        "get_weather(get_weather(city=\"x\")",
        "get_weather(computer_use(\"(\")",
        "get_weather(get_weather(x)\n",
        "get_weather(computer_use(x) get_weather(",
        "get_weather(get_weather(x)get_weather(",
        "get_weather(get_weather(x)]",
        "get_weather(get_weather(\"x\")",
        "get_weather(x(",
        "get_weather(x(computer_use(\"",
        "get_weather(`x",
        "get_weather({\"\ntool_call: x\n",
        "tool_call:\n",
        "tool_call:\nx",
        "tool_call:  \n",
        "tool_call: a b\n",
        "tool_call:<x\n",
        "tool_call:\nTOOL_CALL: x\n",
        "TOOL_CALL: x\ntool_call:\n",
    ];
    let tails = [
        "",
        "] get_weather(city=\"Paris\") b",
        "\"}}]) get_weather(city=\"Paris\") b",
        "\nTOOL_CALL: get_weather\nCITY: Paris\n\nb",
    ];
    for max_depth in [1, 3, 128] {
        let o = with_tools(max_depth);
        for unit in units {
            for n in [1, 2, 40, 700] {
                for tail in tails {
                    // A cut unit after the run too: the last copies read past it.
                    for cut in [0, unit.len() / 2] {
                        let text = format!("a {}{}{tail}", unit.repeat(n), &unit[..cut]);
                        let context =
                            format!("depth {max_depth}: {n} × {unit:?} + {cut} then {tail:?}");
                        assert_stream_equals_one_shot(&text, &o, &context);
                    }
                }
            }
        }
    }
}

// A run of a bracket that starts no bare JSON and the bytes up to its next copy (`[x[x…`,
// `[1,[1,…`) is read at once one-shot (`Engine::pass_implausible`), a stream in 1-byte
// pushes reading it byte by byte (it never holds two units and the bytes after them
// when a bracket is decided). Right after the run comes what ends the period inside the
// bytes a unit's reading looks at (a bracket that does open a region, an opener, a
// `name(`, the unit cut short or changed): the text, calls and diagnostics are those of the
// byte-by-byte reading, and the calls are those found without the run.
#[test]
fn a_run_of_implausible_brackets_reads_as_byte_by_byte() {
    let units = [
        "[x",
        "[1,",
        "{x",
        "[ab ",
        "{a b",
        "[x<",
        "[x*",
        "[ x",
        "{1}",
        "[x]",
        "[-",
        "{,",
        "[TOOL_CALL",
        "[x\t",
        "[get_weather",
        "[x(",
        "[x<tool_call>",
        "{x;",
        "[x\n",
        "{\n",
        "[x \n ",
        "{x\n\t",
        "[1,\r\n",
        "[x\nx",
    ];
    let tails = [
        format!("[{OBJECT_CALL}]"),
        OBJECT_CALL.to_owned(),
        "[get_weather(city=\"Paris\")]".to_owned(),
        format!("[TOOL_CALLS][{OBJECT_CALL}]"),
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
        "get_weather(city=\"Paris\")".to_owned(),
        format!("```json\n{OBJECT_CALL}\n```\n"),
        format!("  ```json\n{OBJECT_CALL}\n```\n"),
        "[xy(".to_owned(),
        // The last unit's bracket made plausible by the bytes after it.
        "(".to_owned(),
        "y(".to_owned(),
        ": 1}".to_owned(),
        "y: 1}".to_owned(),
        "[x".to_owned(),
        "[".to_owned(),
        "x".to_owned(),
        "<think:s>r</think:s>".to_owned(),
        String::new(),
    ];
    for max_depth in [2, 128] {
        let o = with_tools(max_depth);
        for unit in units {
            for tail in &tails {
                let alone = toolcall_parse::parse(&format!("a {tail} b"), &o);
                let named = |p: &Parsed| -> Vec<String> {
                    p.calls
                        .iter()
                        .map(|c| format!("{} {}", c.name, c.arguments))
                        .collect()
                };
                for n in [1, 2, 3, 4, 5, 10, 100] {
                    let text = format!("a {}{tail} b", unit.repeat(n));
                    let context = format!("depth {max_depth}: {n} × {unit:?} then {tail:.30}");
                    let p = assert_stream_equals_one_shot(&text, &o, &context);
                    // A tail that starts with a name's byte joins the unit's last word.
                    let joins = tail.starts_with(|c: char| c.is_ascii_alphanumeric());
                    if !joins && !unit.contains(['<', '(', '\n']) {
                        assert_eq!(named(&p), named(&alone), "{context}");
                    }
                }
            }
        }
    }
}

// A run of an opener every family declines and the bytes after it up to its next copy
// (`<tool_call>x<tool_call>x…`) is read at once one-shot (`Engine::declined_units`), a
// stream in 1-byte pushes reading it opener by opener (it never holds two units and the
// bytes after them when an opener is declined). Right after the run comes what ends the
// period inside the bytes a unit's reading looks at (a call the opener does open, the
// unit cut short or changed): the text, calls and diagnostics are those of the opener by
// opener reading.
#[test]
fn a_run_of_declined_openers_with_bytes_after_each_reads_as_opener_by_opener() {
    let units = [
        "<tool_call>x",
        "<tool_call>1,",
        "<tool_call>x ",
        "<tool_call>ab<",
        "<tool_call>x[",
        "<tool_call>\n",
        "<tool_call>x \n\t",
        "<tool_call>\nx",
        "<tool_call>x\n",
        "[TOOL_CALLS]x ",
        "[TOOL_CALLS]x",
        "[TOOL_CALLS]get now ",
        "<|end|>x",
        "<function=x",
        "<tool_call>x<tool_call>",
        // Non-ASCII openers: a window that ended inside a character was never memoised.
        "<｜DSML｜tool_calls>x",
        "<｜GCML｜tool_calls>\n",
        "<｜tool▁calls▁begin｜>é",
        // Suffixed markers with no suffix (`Engine::pass_declined_suffix`).
        "<think:1,",
        "</think:1,",
        "<think: ",
        "</think:x<",
        "<think:\n",
    ];
    let tails = [
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("[TOOL_CALLS][{OBJECT_CALL}]"),
        r#"[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}"#.to_owned(),
        format!("<tool_call>\n{OBJECT_CALL}\n</tool_call>"),
        format!("```json\n{OBJECT_CALL}\n```\n"),
        "<tool_call>".to_owned(),
        "<tool_call>x(".to_owned(),
        "{\"a\": 1}".to_owned(),
        "[TOOL_CALLS]".to_owned(),
        "<".to_owned(),
        "x".to_owned(),
        "<think:s>r</think:s>".to_owned(),
        String::new(),
    ];
    for max_depth in [2, 128] {
        let o = with_tools(max_depth);
        for unit in units {
            for tail in &tails {
                for n in [1, 2, 3, 4, 5, 10, 100] {
                    let text = format!("a {}{tail} b", unit.repeat(n));
                    let context = format!("depth {max_depth}: {n} × {unit:?} then {tail:.30}");
                    assert_stream_equals_one_shot(&text, &o, &context);
                }
            }
        }
    }
}

// Floods of a marker followed by junk (issue 23's marker class): special tokens stripped
// or declined, suffixed reasoning markers, tags, `>>>` and `Action:`, where the text scan
// tries the opener it found last first. Units alternating a marker with a longer one it
// starts (`<|eot|>` then `<|eot_id|>`, `<|start|>` then harmony's header) and a call right
// after the junk make a wrong reuse of the last opener show: a real call after 0–1000 of
// them is found (where the unit opens no reasoning block that holds it), one shot and
// pushed in 1-, 7- and 64-byte pieces, with the same text and diagnostics.
#[test]
fn a_call_after_a_flood_of_markers_is_found() {
    let calls = [
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("<|python_tag|>{OBJECT_CALL}<|eom_id|>"),
        ">>>get_weather\n{\"city\": \"Paris\"}".to_owned(),
        format!("<|end|><tool_call>{OBJECT_CALL}</tool_call>"),
    ];
    // (unit, whether the call after it is found)
    let units = [
        ("<|end|>x", true),
        ("<|end|>\n", true),
        ("<|eot|>1,", true),
        ("<|eom|> ", true),
        ("<|eot|>x<|eot_id|>x", true),
        ("<|eot_id|>x<|eot|>", true),
        // Tokens stripped back to back, the next one taken by one compare where it is the
        // same token, and walked where it is a longer one that starts the same.
        ("<|eom|>", true),
        ("<|eot|><|eot_id|>", true),
        ("<|eot|><|eot|><|eot_id|><|eot_id|>", true),
        ("<|message_sep|>{\"", false),
        ("<|start|> ", false),
        ("<|start|>\n", false),
        // At a line start the opener found last is compared first: another token there, a
        // longer one that starts the same, one that ends the input early, blank lines.
        ("<|eot|>\n<|eot_id|>\n", true),
        ("<|eot_id|>\n<|eot|>\n<|eom|>\n", true),
        ("<tool_call>x\n<tool_calls>x\n", false),
        ("<|eot|>\n \t\r\n<|eot|>\n", true),
        ("<|eot|>\n\u{a0}\n<|eom_id|>\n", true),
        ("<|eot|>\n<|eot|", true),
        ("<|start|>x<|start|>assistant<|channel|>x ", false),
        ("<|tool_call>x", false),
        ("<|function_call|>x", false),
        ("<|tool_calls|>1,", false),
        ("<|python_tag|>1,", false),
        ("<think:x", false),
        ("</think:1,", false),
        ("</think>1,", true),
        ("<function=x", false),
        ("<function name=\"1,", false),
        // Decline checks that decide at the first byte no name or header holds.
        ("<function name=\"x>", false),
        ("<function name=\"x\n", false),
        ("<function=ab\"", false),
        ("<|function_call|> \n", false),
        ("<|start|>0", false),
        ("<|start|> a", false),
        ("<TOOLCALL> ", false),
        ("<tool_calls>\n", false),
        (">>>x", true),
        (">>>1,", true),
        (">>>x>>>>", true),
        ("Action: ```json{\"", false),
    ];
    let o = ParseOptions::default();
    for (unit, found_after) in units {
        for n in [0, 1, 2, 3, 10, 1000] {
            for call in &calls {
                let text = format!("a {}ok {call} b", unit.repeat(n));
                let context = format!("{n} × {unit:?} then {call:.30}");
                let p = assert_stream_equals_one_shot(&text, &o, &context);
                if n == 0 || found_after {
                    assert_eq!(p.calls.len(), 1, "{context}: {:?}", p.calls);
                    assert_eq!(p.calls[0].name, "get_weather", "{context}");
                }
            }
        }
    }
}

// A run of inline code and the text after it up to the next backtick (`` `x `` or
// `` `\n ``) is read at once one-shot (`Engine::pass_inline`), a stream in 1-byte pushes
// reading it span by span. Right after the run comes what ends the period inside the bytes
// a unit's reading looks at (a backtick that makes "```" at a line start, so a fence; an
// opener; a bracket; the unit cut short): the text, calls and diagnostics are those of the
// span by span reading, and the call after the run is found.
#[test]
fn a_run_of_inline_code_reads_as_span_by_span() {
    let units = [
        "`x",
        "`x ",
        "`1,",
        "` ",
        "`  ",
        "`\n",
        "`\n ",
        "``x",
        "`a`b",
        "`x\n",
        "`x`\n",
        "`[x",
        "`x`[x",
        "`x`{x",
        "`x`(",
        "`x`<tool_call>",
        "`<tool_call>",
        "`x\n<",
        "`x`y(",
        // An opener cut by the next backtick, which the tail may complete.
        "`x`<tool_c",
        "`x` <tool_c",
        "`x`\n<tool_c",
        "`x`[TOOL_CALL",
    ];
    let tails = [
        format!("``json\n{OBJECT_CALL}\n```\n"),
        format!("```json\n{OBJECT_CALL}\n```\n"),
        format!("\n```json\n{OBJECT_CALL}\n```\n"),
        format!("[{OBJECT_CALL}]"),
        format!("<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("x<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("`<tool_call>{OBJECT_CALL}</tool_call>"),
        format!("` {OBJECT_CALL}"),
        format!("\n{OBJECT_CALL}"),
        "get_weather(city=\"Paris\")".to_owned(),
        "(city=\"Paris\")".to_owned(),
        format!("all>{OBJECT_CALL}</tool_call>"),
        format!("S][{OBJECT_CALL}]"),
        "`".to_owned(),
        "``".to_owned(),
        "x".to_owned(),
        "\n".to_owned(),
        String::new(),
    ];
    let named = |p: &Parsed| -> Vec<String> {
        p.calls
            .iter()
            .map(|c| format!("{} {}", c.name, c.arguments))
            .collect()
    };
    for max_depth in [2, 128] {
        let o = with_tools(max_depth);
        for unit in units {
            for tail in &tails {
                for n in [1, 2, 3, 4, 5, 6, 10, 100, 1000] {
                    let text = format!("a {}{tail} b", unit.repeat(n));
                    let context = format!("depth {max_depth}: {n} × {unit:?} then {tail:.30}");
                    let p = assert_stream_equals_one_shot(&text, &o, &context);
                    // The calls are those after four units (too few for a run, and as
                    // many backticks mod 2), where no bracket or opener of the units
                    // spends the rescan budget.
                    if n == 1000 && !unit.contains(['{', '(']) {
                        let fewer = format!("a {}{tail} b", unit.repeat(4));
                        let q = toolcall_parse::parse(&fewer, &o);
                        assert_eq!(named(&p), named(&q), "{context}");
                    }
                }
            }
        }
    }
}

// Numbered floods of a registered `name(` (each copy with its own number, so no two copies
// alike): copies that differ only in digits outside the names are passed at once one-shot
// (`Engine::pass_failed_calls`), never where the digits are part of a name (a registered
// `get_weather500(` among `get_weather0(`…, `x512(` among `(x0(x1…`) or across a change in
// the number's length. One-shot equals 1-, 7- and 64-byte pushes (where nothing is passed)
// in text, calls and every diagnostic, with whatever ends the run after it.
#[test]
fn numbered_floods_of_openers_read_as_opener_by_opener() {
    use serde_json::json;
    use toolcall_core::{Registry, ToolSpec};
    let mut r = Registry::new();
    for name in [
        "get_weather",
        "computer_use",
        "get_weather7",
        "get_weather500",
        "x12",
        "x512",
    ] {
        let params = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        r.add_spec(ToolSpec::new(name, "", params)).unwrap();
    }
    let registry = std::sync::Arc::new(r);
    let units = [
        "get_weather({#}",
        "computer_use({#}",
        "get_weather( {#}",
        "get_weather(x {#}",
        "computer_use(1, {#}",
        "get_weather(\n{#}",
        "get_weather({\"{#}",
        "get_weather(computer_use({\"{#}",
        "get_weather(get_weather(x){#}",
        "get_weather(computer_use(x){#}",
        "get_weather(get_weather({#})",
        "get_weather(get_weather(x{#})",
        "get_weather(get_weather(city=\"{#}\")",
        "get_weather(computer_use(x)y{#}",
        "get_weather(get_weather(x{#}",
        "({#}",
        "(x{#}",
        "get_weather{#}(",
        "get_weather(get_weather{#}(",
        "get_weather(x{#}(",
        "get_weather({#}x1{#}(",
        "get_weather(1.{#}get_weather(",
        "get_weather(-{#}x",
    ];
    let tails = [
        "",
        "] get_weather(city=\"Paris\") b",
        "\"}}]) get_weather(city=\"Paris\") b",
    ];
    for max_depth in [1, 3, 128] {
        let o = ParseOptions {
            tools: Some(registry.clone()),
            limits: toolcall_parse::Limits {
                max_depth,
                ..toolcall_parse::Limits::default()
            },
            ..ParseOptions::default()
        };
        for unit in units {
            for (first, n) in [(0, 1), (0, 2), (0, 40), (95, 30), (0, 700)] {
                let flood: String = (first..first + n)
                    .map(|i| unit.replace("{#}", &i.to_string()))
                    .collect();
                for tail in tails {
                    let text = format!("a {flood}{tail}");
                    let context =
                        format!("depth {max_depth}: {first}+{n} × {unit:?} then {tail:?}");
                    assert_stream_equals_one_shot(&text, &o, &context);
                }
            }
        }
    }
}

// A flood whose unit holds a call that closes (`get_weather(get_weather(x)`: each inner
// call closes, each outer scan fails `max_depth` copies on) is passed at once one-shot
// where the inner call is text (`Engine::pass_failed_calls`, `Family::failed_call_scans`):
// every copy's notes are counted as reading each gives them, and an inner call that is a
// call is found at every copy, numbered or not; a call after the flood is found.
#[test]
fn floods_whose_inner_calls_close_keep_every_call_and_note() {
    let o = with_tools(128);
    let n = 2000;
    let one_by_one = |unit: &str| {
        // The notes reading each copy gives: the first copies' reported, the rest counted.
        let p = toolcall_parse::parse(&unit.repeat(n), &o);
        (p.calls.len(), p.diagnostics.len(), p.text.len())
    };
    for unit in [
        "get_weather(get_weather(x)",
        "get_weather(computer_use(x)",
        "get_weather(computer_use(x) ",
    ] {
        // (A bracket no scan takes ends the outer calls, left open.)
        let text = format!("{}] get_weather(city=\"Paris\")", unit.repeat(n));
        let p = toolcall_parse::parse(&text, &o);
        assert_eq!(p.calls.len(), 1, "{unit:?}");
        assert_eq!(p.calls[0].arguments, serde_json::json!({"city": "Paris"}));
        assert_eq!(p.text.len(), unit.len() * n + 2, "{unit:?}");
        let (calls, diags, _) = one_by_one(unit);
        assert_eq!(calls, 0);
        assert!(diags > 0);
        assert_stream_equals_one_shot(&text, &o, unit);
    }
    // (Fewer copies than the call limit; the last outer calls, left open, are cut calls
    // that hold the inner calls after them.)
    let n = 600;
    let numbered: String = (0..n)
        .map(|i| format!("get_weather(get_weather(city=\"{i}\")"))
        .collect();
    let units = [
        "get_weather(get_weather(city=\"x\")".repeat(n),
        "get_weather(get_weather(city=\"x\")1".repeat(n),
        numbered,
    ];
    for text in &units {
        let p = assert_stream_equals_one_shot(text, &o, &text[..40]);
        assert_eq!(p.calls.len(), n - 127, "{:?}", &text[..40]);
        assert!(p.calls.iter().all(|c| c.name == "get_weather"));
    }
}
