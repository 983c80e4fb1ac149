//! A failed command says its cause once, with the path it concerns.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bin, fixture_path, stderr};

/// The error line of a command that must fail; checked to say no part twice.
fn error_of(args: &[&str]) -> String {
    let out = bin()
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let text = stderr(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("toolcall: "))
        .unwrap_or_else(|| panic!("no error line: {text}"))
        .to_owned();
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(part),
            "{part:?} is said twice: {line}"
        );
    }
    line
}

// The CLI prints error chains (src/error_text.rs).
#[test]
fn a_missing_file_is_named_once_with_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["parse", "--tools", missing, "hi"],
        vec!["run", "--replay", missing],
        vec!["tools", "list", "--tools", missing],
    ] {
        let line = error_of(&args);
        assert!(line.contains(missing), "{args:?}: {line}");
        assert_eq!(line.matches("os error 2").count(), 1, "{args:?}: {line}");
    }
}

// The CLI prints error chains (src/error_text.rs).
#[test]
fn a_bad_schema_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("bad.json");
    std::fs::write(
        &tools,
        r#"{"tools":[{"name":"a","parameters":{"type":"objec"}}]}"#,
    )
    .unwrap();
    let tools = tools.to_str().unwrap();
    let replay = fixture_path("second-turn.json");
    for args in [
        vec![
            "run",
            "--tools",
            tools,
            "--replay",
            replay.to_str().unwrap(),
        ],
        vec!["parse", "--tools", tools, "hi"],
        vec!["tools", "list", "--tools", tools],
    ] {
        let line = error_of(&args);
        assert!(line.contains(tools), "{args:?}: {line}");
        assert_eq!(
            line.matches("invalid JSON Schema").count(),
            1,
            "{args:?}: {line}"
        );
    }
}

// A printing command whose reader has gone (`toolcall formats | head -1`) ends quietly,
// not with a panic message about a broken pipe.
#[test]
fn a_printing_command_ends_quietly_on_a_closed_stdout() {
    use std::os::unix::process::ExitStatusExt;
    let tools = fixture_path("parse/tools.json");
    let tools = tools.to_str().unwrap();
    let reply = fixture_path("parse/qwen_hermes.txt");
    for args in [
        vec!["formats"],
        vec!["tools", "list", "--tools", tools],
        vec!["parse", "--tools", tools, reply.to_str().unwrap()],
    ] {
        // The reader is gone before the command starts, so its first write finds the pipe closed.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = bin()
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .output()
            .unwrap();
        let text = stderr(&out);
        assert!(text.is_empty(), "{args:?} wrote to stderr: {text}");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?}",
            out.status
        );
    }
}
