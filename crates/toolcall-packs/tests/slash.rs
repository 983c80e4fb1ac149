//! Slash commands and mentions: routing user input to calls, and the tools over the local
//! clinic data (context ids carried in the call and echoed in the result metadata).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Map, Value, json};
use toolcall_core::{ErrorCode, ToolContext, ToolError, ToolKind, ToolOutput};
use toolcall_packs::slash::{self, SlashContext, SlashError, SlashSetup, route};
use toolcall_packs::{Pack, PackConfig, load_pack};

fn config() -> PackConfig {
    PackConfig {
        base_dir: common::fixtures(),
        options: common::options(&[("data", "clinic.json")]),
    }
}

fn ctx(visit: Option<&str>) -> SlashContext {
    SlashSetup::load(&config()).unwrap().context(visit)
}

async fn call(p: &Pack, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    common::call_with(p, &ToolContext::for_call("call_test".into()), name, args).await
}

// covers P-SLASH
#[test]
fn each_surface_routes_to_its_tool_with_a_context_id() {
    let c = ctx(Some("vis_123"));
    let calls = route("/summary", &c).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "vista.command.summary");
    assert_eq!(
        calls[0].arguments,
        json!({"visit_id": "vis_123", "context_id": "slash:summary:vis_123"})
    );
    assert_eq!(calls[0].origin.format, "slash");

    let calls = route("/order lab", &c).unwrap();
    assert_eq!(calls[0].name, "vista.command.order_lab");
    assert_eq!(
        calls[0].arguments,
        json!({"visit_id": "vis_123", "context_id": "slash:order_lab:vis_123"})
    );
    let calls = route("/order lab CBC with diff", &c).unwrap();
    assert_eq!(calls[0].arguments["test"], "CBC with diff");

    let calls = route("@Anna Nowak", &c).unwrap();
    assert_eq!(calls[0].name, "vista.context.lookup_patient");
    assert_eq!(
        calls[0].arguments,
        json!({"patient_id": "pat_456", "query": "Anna Nowak", "context_id": "mention:patient:pat_456"})
    );

    let calls = route("/workflow triage", &c).unwrap();
    assert_eq!(calls[0].name, "vista.command.start_workflow::triage");
    assert_eq!(
        calls[0].arguments,
        json!({"visit_id": "vis_123", "context_id": "slash:workflow:triage:vis_123"})
    );
}

// covers P-SLASH
#[test]
fn a_mention_selects_the_visit_for_the_commands_after_it() {
    let c = ctx(None);
    let calls = route(
        "please and/or @jan kowalski jr and @Jan Kowalski /summary /order lab CRP",
        &c,
    )
    .unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "vista.context.lookup_patient",
            "vista.context.lookup_patient",
            "vista.command.summary",
            "vista.command.order_lab"
        ]
    );
    // Longest name wins: "Jan Kowalski Jr" is not "Jan Kowalski".
    assert_eq!(calls[0].arguments["patient_id"], "pat_790");
    assert_eq!(calls[1].arguments["patient_id"], "pat_789");
    assert_eq!(calls[2].arguments["context_id"], "slash:summary:vis_200");
    assert_eq!(calls[3].arguments["test"], "CRP");
    // Mention by id; the latest visit (by date) of Anna is vis_123.
    let calls = route("@pat_456 /summary", &c).unwrap();
    assert_eq!(calls[1].arguments["visit_id"], "vis_123");
    // No surfaces: nothing to call; e-mail addresses and paths inside words are text.
    assert!(
        route("mail anna@example.org about the x-ray", &c)
            .unwrap()
            .is_empty()
    );
}

// covers P-SLASH
#[test]
fn errors_are_clear() {
    let c = ctx(Some("vis_123"));
    let e = route("/delete everything", &c).unwrap_err();
    assert_eq!(
        e,
        SlashError::UnknownCommand {
            command: "/delete".into(),
            known: "/summary, /order lab [test], /workflow <name>".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "unknown command \"/delete\"; commands: /summary, /order lab [test], /workflow <name>"
    );
    assert!(
        matches!(route("/order pizza", &c), Err(SlashError::UnknownCommand { command, .. }) if command == "/order pizza")
    );
    assert!(matches!(route("/order", &c), Err(SlashError::Usage { .. })));
    assert!(matches!(
        route("/summary now", &c),
        Err(SlashError::Usage { .. })
    ));
    assert_eq!(
        route("@Nobody Here /summary", &c).unwrap_err(),
        SlashError::UnknownPatient("Nobody Here".into())
    );
    assert!(matches!(
        route("/summary", &ctx(None)),
        Err(SlashError::NoVisit { .. })
    ));
    assert!(
        route("/summary", &ctx(None))
            .unwrap_err()
            .to_string()
            .contains("mention a patient first")
    );
    assert!(matches!(
        route(&"x".repeat(9000), &c),
        Err(SlashError::TooLong)
    ));
}

// covers P-SLASH, V-2
#[test]
fn workflow_names_are_validated() {
    let c = ctx(Some("vis_123"));
    assert_eq!(
        route("/workflow sepsis-screen", &c).unwrap()[0].name,
        "vista.command.start_workflow::sepsis-screen"
    );
    for bad in [
        "a::b",
        "../etc",
        "tri age;rm",
        "x".repeat(65).as_str(),
        "ünï",
    ] {
        let err = route(&format!("/workflow {bad}"), &c).unwrap_err();
        assert!(
            matches!(
                err,
                SlashError::BadWorkflow { .. } | SlashError::Usage { .. }
            ),
            "{bad}: {err}"
        );
    }
    assert!(matches!(
        route("/workflow", &c),
        Err(SlashError::Usage { .. })
    ));
    let err = route("/workflow discharge", &c).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown workflow \"discharge\"; workflows: triage, sepsis-screen"
    );
    // Without a list of workflows, any well-formed name routes.
    let open = SlashContext {
        visit_id: None,
        ..SlashContext::default()
    };
    assert_eq!(
        route("/workflow discharge", &open).unwrap()[0].name,
        "vista.command.start_workflow::discharge"
    );
    assert!(slash::route::workflow_tool("a::b", &open).is_err());
}

// covers P-SLASH, X-4
#[test]
fn kinds_come_from_the_tools_file() {
    let p = load_pack("slash", &config()).unwrap();
    let kind = |n: &str| p.registry.spec(n).unwrap().kind;
    assert_eq!(kind("vista.context.lookup_patient"), ToolKind::Immediate);
    assert_eq!(kind("vista.command.summary"), ToolKind::Job);
    assert_eq!(kind("vista.command.order_lab"), ToolKind::Job);
    assert_eq!(kind("vista.command.start_workflow::triage"), ToolKind::Job);
}

// covers P-SLASH
#[tokio::test]
async fn tools_answer_from_the_data_and_echo_the_context_id() {
    let p = load_pack("slash", &config()).unwrap();
    let out = call(
        &p,
        "vista.context.lookup_patient",
        json!({"query": "anna nowak", "context_id": "mention:patient:pat_456"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["patient_id"], "pat_456");
    assert_eq!(out.data["visit_id"], "vis_123");
    assert_eq!(out.metadata["context_id"], "mention:patient:pat_456");
    assert_eq!(out.metadata["call_id"], "call_test");

    let out = call(
        &p,
        "vista.command.summary",
        json!({"visit_id": "vis_123", "context_id": "slash:summary:vis_123"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data["subjective"],
        "Three days of fever and productive cough. Mild shortness of breath on stairs."
    );
    assert_eq!(
        out.data["assessment"],
        "Suspected community-acquired pneumonia."
    );
    assert!(
        out.data["plan"]
            .as_str()
            .unwrap()
            .starts_with("Chest X-ray")
    );
    assert_eq!(out.metadata["context_id"], "slash:summary:vis_123");
    // Missing sections say so; a context id is made when the call has none.
    let out = call(&p, "vista.command.summary", json!({"visit_id": "vis_200"}))
        .await
        .unwrap();
    assert_eq!(out.data["plan"], "Not documented.");
    assert_eq!(out.metadata["context_id"], "slash:summary:vis_200");

    let out = call(
        &p,
        "vista.command.start_workflow::triage",
        json!({"visit_id": "vis_123", "context_id": "slash:workflow:triage:vis_123"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["workflow_id"], "wf_triage_0001");
    assert_eq!(out.data["context_id"], "slash:workflow:triage:vis_123");
    assert_eq!(out.metadata["context_id"], "slash:workflow:triage:vis_123");

    for (tool, args, needle) in [
        (
            "vista.context.lookup_patient",
            json!({"query": "Zed"}),
            "no patient matches",
        ),
        (
            "vista.context.lookup_patient",
            json!({}),
            "give patient_id or query",
        ),
        (
            "vista.command.summary",
            json!({"visit_id": "vis_999"}),
            "visit \"vis_999\" not found",
        ),
        ("vista.command.summary", json!({}), "visit_id is required"),
        (
            "vista.command.summary",
            json!({"visit_id": 5}),
            "must be a string",
        ),
        (
            "vista.command.start_workflow::triage",
            json!({"visit_id": "vis_999"}),
            "not found",
        ),
    ] {
        let err = call(&p, tool, args).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::ToolFailed);
        assert!(err.message.contains(needle), "{tool}: {}", err.message);
    }
}

// covers P-SLASH, X-5
#[tokio::test]
async fn order_lab_records_a_task_in_the_pack_state() {
    let p = load_pack("slash", &config()).unwrap();
    let state = p.state.as_ref().unwrap();
    let out = call(
        &p,
        "vista.command.order_lab",
        json!({"visit_id": "vis_123", "test": "CBC", "context_id": "slash:order_lab:vis_123"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data,
        json!({"task_id": "task_0001", "kind": "lab_order", "test": "CBC", "patient_id": "pat_456",
               "visit_id": "vis_123", "status": "open", "call_id": "call_test"})
    );
    assert_eq!(out.metadata["context_id"], "slash:order_lab:vis_123");
    assert_eq!(state.snapshot()["tasks"], json!([out.data]));
    let before = state.snapshot();
    let err = call(
        &p,
        "vista.command.order_lab",
        json!({"visit_id": "vis_999"}),
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("not found"));
    assert_eq!(state.snapshot(), before);
    // Restore (a resumed session) then continue numbering from the saved tasks.
    let fresh = load_pack("slash", &config()).unwrap();
    fresh
        .state
        .as_ref()
        .unwrap()
        .restore(before.clone())
        .unwrap();
    let out = call(
        &fresh,
        "vista.command.order_lab",
        json!({"visit_id": "vis_200"}),
    )
    .await
    .unwrap();
    assert_eq!(out.data["task_id"], "task_0002");
    assert_eq!(out.data["test"], "basic metabolic panel");
    assert!(
        fresh
            .state
            .as_ref()
            .unwrap()
            .restore(json!({"tasks": 3}))
            .is_err()
    );
}

// covers P-SLASH
#[test]
fn pack_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = config().base_dir;
    let load = |tools: Value, data: Value| {
        std::fs::write(dir.path().join("t.json"), tools.to_string()).unwrap();
        std::fs::write(dir.path().join("d.json"), data.to_string()).unwrap();
        let mut options = Map::new();
        options.insert("tools".into(), json!("t.json"));
        options.insert("data".into(), json!("d.json"));
        load_pack(
            "slash",
            &PackConfig {
                base_dir: dir.path().to_owned(),
                options,
            },
        )
        .map(|_| ())
    };
    let tools: Value = serde_json::from_str(include_str!("../src/slash/tools.json")).unwrap();
    let data: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("clinic.json")).unwrap())
            .unwrap();
    assert!(load(tools.clone(), data.clone()).is_ok());
    let unknown = json!([{"type": "function", "name": "vista.command.delete_everything", "parameters": {"type": "object"}}]);
    assert!(
        load(unknown, data.clone())
            .unwrap_err()
            .to_string()
            .contains("does not implement")
    );
    let bad_section = json!({"patients": [{"id": "p", "name": "P", "visits": [{"id": "v", "notes": [{"section": "gossip", "text": "x"}]}]}]});
    assert!(
        load(tools.clone(), bad_section)
            .unwrap_err()
            .to_string()
            .contains("unknown section")
    );
    let dup = json!({"patients": [{"id": "p", "name": "P"}, {"id": "p", "name": "Q"}]});
    assert!(load(tools, dup).is_err());
    // Without options: the pack's own tools over no patients.
    let bare = load_pack("slash", &PackConfig::default()).unwrap();
    assert!(bare.registry.contains("vista.command.summary"));
}
