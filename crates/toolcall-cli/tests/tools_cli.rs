//! `toolcall tools list|render|check`, run as the real binary.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use serde_json::{Value, json};

use common::{bin, stderr, stdout};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/tools/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn toolcall(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

// covers V-2, V-4
#[test]
fn list_shows_a_sorted_table() {
    let vista = fixture("vista.json");
    let o = toolcall(&["tools", "list", "--tools", &vista]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{out}");
    let names: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "vista.command.order_lab",
            "vista.command.start_workflow::triage",
            "vista.command.summary"
        ]
    );
    let triage = lines.iter().find(|l| l.contains("triage")).unwrap();
    let cells: Vec<&str> = triage.split_whitespace().collect();
    assert_eq!(&cells[1..4], ["yes", "job", "-"]);
    assert!(triage.ends_with("Start the triage workflow"), "{triage}");
    let order = lines.iter().find(|l| l.contains("order_lab")).unwrap();
    assert_eq!(order.split_whitespace().nth(1), Some("no"));
    let echo = lines.iter().find(|l| l.starts_with("echo")).unwrap();
    assert_eq!(echo.split_whitespace().nth(3), Some("program"));
}

// covers V-1, V-4
#[test]
fn list_json_merges_files_and_applies_switches() {
    let (vista, openai) = (fixture("vista.json"), fixture("openai.json"));
    let o = toolcall(&[
        "tools",
        "list",
        "--json",
        "--tools",
        &vista,
        "--tools",
        &openai,
        "--disable",
        "vista.*",
        "--enable",
        "vista.command.order_lab",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let specs: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let enabled: Vec<(&str, bool)> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["enabled"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        enabled,
        [
            ("echo", true),
            ("get_weather", true),
            ("vista.command.order_lab", true),
            ("vista.command.start_workflow::triage", false),
            ("vista.command.summary", false)
        ]
    );
    let triage = &specs[3];
    assert_eq!(triage["kind"], "job");
    assert_eq!(triage["timeout_ms"], 5000);
}

// covers O-1, V-4
#[test]
fn render_openai_aliases_names_and_omits_disabled() {
    let vista = fixture("vista.json");
    let o = toolcall(&["tools", "render", "--provider", "openai", "--tools", &vista]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "vista_command_start_workflow__triage",
            "vista_command_summary"
        ]
    );
    assert!(stderr(&o).contains("\"vista.command.start_workflow::triage\" is sent as \"vista_command_start_workflow__triage\""));
}

// covers O-1
#[test]
fn render_each_provider_shape() {
    let openai = fixture("openai.json");
    let render = |p: &str| -> Value {
        let o = toolcall(&["tools", "render", "--provider", p, "--tools", &openai]);
        assert!(o.status.success(), "{p}: {}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let params = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
        "additionalProperties": false
    });
    assert_eq!(
        render("openai"),
        json!([{"type":"function","function":{"name":"get_weather","description":"Current weather for a city","parameters":params}}])
    );
    assert_eq!(
        render("responses"),
        json!([{"type":"function","name":"get_weather","description":"Current weather for a city","parameters":params}])
    );
    assert_eq!(
        render("anthropic"),
        json!([{"name":"get_weather","description":"Current weather for a city","input_schema":params}])
    );
    assert_eq!(
        render("gemini"),
        json!({"functionDeclarations":[{"name":"get_weather","description":"Current weather for a city",
            "parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}]})
    );
}

// covers O-2
#[test]
fn render_prompt_for_a_text_format() {
    let vista = fixture("vista.json");
    let o = toolcall(&[
        "tools",
        "render",
        "--provider",
        "prompt:key_value",
        "--tools",
        &vista,
        "--disable",
        "echo",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = stdout(&o);
    // first enabled tool, arguments from its schema (examples, minimum)
    assert!(
        p.contains(
            "TOOL_CALL: vista.command.start_workflow::triage\nPATIENT_ID: pat_456\nPRIORITY: 1"
        ),
        "{p}"
    );
    assert!(p.contains("- `vista.command.summary`: Summarise the current visit"));
    assert!(!p.contains("order_lab"));

    let o = toolcall(&[
        "tools",
        "render",
        "--provider",
        "prompt:yaml",
        "--tools",
        &vista,
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("tools_envelope"), "{}", stderr(&o));
    let o = toolcall(&["tools", "render", "--provider", "bard", "--tools", &vista]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("prompt:FORMAT"), "{}", stderr(&o));
}

// covers V-1, V-3, V-5, R-10
#[test]
fn check_validates_coerces_and_names_errors() {
    let vista = fixture("vista.json");
    let o = toolcall(&[
        "tools",
        "check",
        "vista.command.start_workflow::triage",
        r#"{"patient_id": "pat_1", "priority": "3"}"#,
        "--tools",
        &vista,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["arguments"],
        json!({"patient_id": "pat_1", "priority": 3})
    );
    assert_eq!(v["repairs"][0]["kind"], "coerced_integer");

    let o = toolcall(&["tools", "check", "nope", "--tools", &vista]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["code"], "unknown_tool");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("vista.command.summary")
    );

    let o = toolcall(&[
        "tools",
        "check",
        "vista.command.order_lab",
        r#"{"test":"x"}"#,
        "--tools",
        &vista,
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["code"], "tool_disabled");

    let o = toolcall(&[
        "tools",
        "check",
        "vista.command.start_workflow::triage",
        r#"{"priority": 9}"#,
        "--tools",
        &vista,
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["code"], "invalid_arguments");
    let pointers: Vec<&str> = v["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["pointer"].as_str().unwrap())
        .collect();
    assert!(
        pointers.contains(&"/priority") && pointers.contains(&""),
        "{pointers:?}"
    );
}

// covers X-3, V-5
#[test]
fn check_run_executes_the_program_backend() {
    let vista = fixture("vista.json");
    let o = toolcall(&[
        "tools",
        "check",
        "echo",
        r#"{"text": "; rm -rf /", "n": "7"}"#,
        "--run",
        "--tools",
        &vista,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["result"],
        json!({"status": "ok", "data": {"text": "; rm -rf /", "n": 7}})
    );
}

// covers V-1, V-2
#[test]
fn load_errors_are_clear() {
    let o = toolcall(&["tools", "list", "--tools", &fixture("bad_schema.json")]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("#1") && e.contains("broken") && e.contains("invalid JSON Schema"),
        "{e}"
    );

    let o = toolcall(&["tools", "list", "--tools", &fixture("missing.json")]);
    assert!(
        stderr(&o).contains("cannot read tools file"),
        "{}",
        stderr(&o)
    );

    let o = toolcall(&["tools", "list"]);
    assert!(
        stderr(&o).contains("--tools FILE, --pack NAME or --mcp NAME="),
        "{}",
        stderr(&o)
    );

    let vista = fixture("vista.json");
    let o = toolcall(&["tools", "list", "--tools", &vista, "--tools", &vista]);
    assert!(stderr(&o).contains("declared twice"), "{}", stderr(&o));

    let o = toolcall(&["tools", "list", "--tools", &vista, "--enable", "ghost"]);
    assert!(
        stderr(&o).contains("\"ghost\" matches no tool"),
        "{}",
        stderr(&o)
    );

    let o = toolcall(&["tools", "list", "--pack", "no_such_pack"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no_such_pack"), "{}", stderr(&o));
}

// Every pack lists its tools with no options; options reach the pack through --pack-opt.
#[test]
fn every_pack_lists_without_options() {
    for (pack, tool) in [
        ("highlight", "highlight_object"),
        ("slash", "vista.command.summary"),
        ("world", "move_player"),
        ("apps", "open_app"),
        ("computer", "computer_use"),
    ] {
        let o = toolcall(&["tools", "list", "--pack", pack]);
        assert!(o.status.success(), "{pack}: {}", stderr(&o));
        assert!(stdout(&o).contains(tool), "{pack}: {}", stdout(&o));
    }
    let scene = r#"highlight.scene=[{"box_2d":[0,0,10,10],"label":"cup"}]"#;
    let o = toolcall(&[
        "tools",
        "check",
        "highlight_object",
        r#"{"object": "the cups"}"#,
        "--run",
        "--pack",
        "highlight",
        "--pack-opt",
        scene,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["result"]["data"]["label"], "cup");
}

// `tools check --run` goes through the executor: approval applies as in `toolcall run`.
#[test]
fn check_run_asks_for_approval_like_run() {
    let tools = fixture("approval.json");
    let args = [
        "tools",
        "check",
        "wipe",
        r#"{"what": "x"}"#,
        "--run",
        "--tools",
        &tools,
    ];
    let o = toolcall(&args);
    assert!(!o.status.success());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["result"]["error"]["code"], "denied", "{v}");
    let o = toolcall(&[&args[..], &["--yes"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["result"]["data"], json!({"what": "x"}));
}
