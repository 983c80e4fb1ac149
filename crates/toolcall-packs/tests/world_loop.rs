//! The world pack through the executor and the agent loop: the shipped recorded session
//! ("Jack finds a key and opens the chest") replayed end to end.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolcall_packs::Pack;
use toolcall_packs::world::World;
use toolcall_run::{Executor, SessionFile, TurnReport};

use common::example;

/// Loads the session's packs, runs its prompt against the recorded replies.
async fn replay(dir: &Path) -> (TurnReport, Vec<Pack>) {
    let session = SessionFile::load(&dir.join("session.json")).unwrap();
    let packs: Vec<Pack> = session
        .setup
        .packs
        .iter()
        .map(|(name, options)| common::load(name, dir, common::options_of(options)))
        .collect();
    let report = common::run_recorded(&session, &packs.iter().collect::<Vec<_>>(), false).await;
    (report, packs)
}

// covers P-WORLD, X-5, R-8
#[tokio::test]
async fn jack_finds_a_key_and_opens_the_chest() {
    let (report, packs) = replay(&example("world")).await;
    let calls: Vec<&str> = report
        .rounds
        .iter()
        .flat_map(|r| r.calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(calls, ["create_object", "move_object", "set_attribute"]);
    for r in &report.rounds {
        assert_eq!(r.results.len(), r.calls.len());
        for (c, res) in r.calls.iter().zip(&r.results) {
            assert_eq!(c.call_id, res.call_id);
            assert!(res.is_ok(), "{}: {:?}", c.name, res.outcome);
        }
    }
    let created = &report.rounds[0].results[0];
    assert_eq!(
        created.outcome.as_ref().unwrap().data["objectId"],
        "obj_1764210832000_m5wcpt"
    );
    assert!(report.final_text.unwrap().contains("rusty iron key"));

    let world = World::from_value(packs[0].state.as_ref().unwrap().snapshot()).unwrap();
    let key = world.object("obj_1764210832000_m5wcpt").unwrap();
    assert_eq!(
        (key.name.as_str(), key.holder.as_str()),
        ("Rusty key", "char_001")
    );
    assert_eq!(key.attributes["material"], json!("iron"));
    assert_eq!(
        world.object("obj_chest").unwrap().attributes["condition"],
        json!("open")
    );
    assert!(world.render_tree().contains("  player Jack (char_001) [health: unhurt]\n    object Rope (obj_rope)\n    object Rusty key"));
}

// covers P-WORLD, X-5, R-8
#[tokio::test]
async fn a_failed_call_in_the_loop_is_a_result_and_leaves_the_world_unchanged() {
    let dir = example("world");
    let pack = common::load("world", &dir, common::options(&[("world", "world.json")]));
    let before = pack.state.as_ref().unwrap().snapshot();
    let executor = Executor::new(Arc::new(pack.registry.clone()));
    let calls = vec![
        toolcall_core::ToolCall::new(
            "move_object",
            json!({"objectId": "obj_chest", "targetId": "obj_coin"}),
            "test",
        ),
        toolcall_core::ToolCall::new(
            "move_player",
            json!({"playerId": "char_001", "targetLocationId": "loc_island"}),
            "test",
        ),
    ];
    let ids: Vec<_> = calls.iter().map(|c| c.call_id.clone()).collect();
    let results = executor.execute(calls, &Default::default()).await;
    common::assert_result_ids(&results, &ids);
    for r in &results {
        let e = r.outcome.as_ref().unwrap_err();
        assert_eq!(e.code, toolcall_core::ErrorCode::ToolFailed);
    }
    assert_eq!(pack.state.as_ref().unwrap().snapshot(), before);
}
