//! World pack tools through their own API: success, validation failures, not-found, and
//! that a failed call leaves the world unchanged.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Value, json};
use toolcall_core::{ErrorCode, ToolContext, ToolError, ToolOutput};
use toolcall_packs::Pack;
use toolcall_packs::world::World;

use common::{fixtures, world_fixture_pack as pack};

async fn call(p: &Pack, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    common::call_with(p, &ToolContext::default(), name, args).await
}

fn snapshot(p: &Pack) -> Value {
    p.state.as_ref().unwrap().snapshot()
}

fn world(p: &Pack) -> World {
    World::from_value(snapshot(p)).unwrap()
}

/// Runs a call that must fail, checks the message mentions `needle`, and that the world is
/// exactly as before (X-5).
async fn fails(p: &Pack, name: &str, args: Value, needle: &str) {
    let before = snapshot(p);
    let err = call(p, name, args.clone()).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ToolFailed);
    assert!(
        err.message.contains(needle),
        "{name}({args}): {:?} does not mention {needle:?}",
        err.message
    );
    assert_eq!(snapshot(p), before, "{name}({args}) changed the world");
}

/// [`fails`] for each `(arguments, needle)` in turn.
async fn fails_all<const N: usize>(p: &Pack, name: &str, cases: [(Value, &str); N]) {
    for (args, needle) in cases {
        fails(p, name, args, needle).await;
    }
}

// covers P-WORLD
#[tokio::test]
async fn pack_offers_the_six_tools() {
    let p = pack();
    assert_eq!(
        p.registry.names().collect::<Vec<_>>(),
        [
            "create_object",
            "delete_attribute",
            "delete_object",
            "move_object",
            "move_player",
            "set_attribute"
        ]
    );
}

// covers P-WORLD, X-5
#[tokio::test]
async fn move_object_success_and_failures() {
    let p = pack();
    let out = call(
        &p,
        "move_object",
        json!({"objectId":"obj_coin","targetId":"char_001"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data,
        json!("Object \"Gold coin\" given to player \"Jack\".")
    );
    assert_eq!(world(&p).object("obj_coin").unwrap().holder, "char_001");
    let out = call(
        &p,
        "move_object",
        json!({"objectId":"obj_coin","targetId":"obj_chest"}),
    )
    .await
    .unwrap();
    assert!(
        out.data
            .as_str()
            .unwrap()
            .contains("inside object \"Chest\"")
    );
    let out = call(
        &p,
        "move_object",
        json!({"objectId":"obj_rope","targetId":"loc_beach"}),
    )
    .await
    .unwrap();
    assert!(
        out.data
            .as_str()
            .unwrap()
            .contains("placed in location \"Beach\"")
    );

    fails_all(
        &p,
        "move_object",
        [
            (
                json!({"objectId":"obj_nope","targetId":"char_001"}),
                "object \"obj_nope\" not found",
            ),
            (
                json!({"objectId":"obj_coin","targetId":"nowhere"}),
                "target \"nowhere\" not found",
            ),
            (
                json!({"objectId":"obj_chest","targetId":"obj_chest"}),
                "into itself",
            ),
            // The pouch is inside the chest: chest → pouch would make a cycle, and so would a
            // deeper one (chest → coin, the coin being back in the chest now).
            (
                json!({"objectId":"obj_chest","targetId":"obj_pouch"}),
                "inside it",
            ),
            (
                json!({"objectId":"obj_chest","targetId":"obj_coin"}),
                "inside it",
            ),
            (
                json!({"objectId":"obj_pouch","targetId":"obj_chest"}),
                "already held",
            ),
            (json!({"targetId":"obj_chest"}), "objectId is required"),
            (
                json!({"objectId":"","targetId":"obj_chest"}),
                "must not be empty",
            ),
            (
                json!({"objectId":7,"targetId":"obj_chest"}),
                "must be a string",
            ),
        ],
    )
    .await;
}

// covers P-WORLD, X-5
#[tokio::test]
async fn move_player_follows_links_only() {
    let p = pack();
    // Cave → Beach: the beach's link back to the cave is bidirectional.
    let out = call(
        &p,
        "move_player",
        json!({"playerId":"char_001","targetLocationId":"loc_beach"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data,
        json!("Player \"Jack\" moved from location \"Cave\" to location \"Beach\".")
    );
    // Beach → Cliff along an `out` link.
    call(
        &p,
        "move_player",
        json!({"playerId":"char_001","targetLocationId":"loc_cliff"}),
    )
    .await
    .unwrap();
    assert_eq!(world(&p).player("char_001").unwrap().location, "loc_cliff");
    fails_all(
        &p,
        "move_player",
        [
            // Cliff → Beach: the `out` link leads one way only.
            (
                json!({"playerId":"char_001","targetLocationId":"loc_beach"}),
                "no way leads",
            ),
            (
                json!({"playerId":"char_001","targetLocationId":"loc_island"}),
                "no way leads",
            ),
            (
                json!({"playerId":"char_001","targetLocationId":"loc_cliff"}),
                "already in",
            ),
            (
                json!({"playerId":"char_404","targetLocationId":"loc_beach"}),
                "player \"char_404\" not found",
            ),
            (
                json!({"playerId":"char_001","targetLocationId":"loc_404"}),
                "location \"loc_404\" not found",
            ),
            (
                json!({"playerId":"char_001","targetLocationId":"obj_chest"}),
                "location \"obj_chest\" not found",
            ),
            (
                json!({"playerId":"char_001"}),
                "targetLocationId is required",
            ),
        ],
    )
    .await;
}

// covers P-WORLD, X-5
#[tokio::test]
async fn set_and_delete_attribute_on_every_entity_type() {
    let p = pack();
    let out = call(&p, "set_attribute", json!({"entityType":"player","entityId":"char_001","attributeName":"health","value":"wounded in the shoulder"}))
        .await
        .unwrap();
    assert_eq!(
        out.data,
        json!("Player \"Jack\": health changed from \"unhurt\" to \"wounded in the shoulder\".")
    );
    call(&p, "set_attribute", json!({"entityType":"object","entityId":"obj_chest","attributeName":"condition","value":"open"}))
        .await
        .unwrap();
    let out = call(&p, "set_attribute", json!({"entityType":"location","entityId":"loc_cave","attributeName":"smell","value":"damp"}))
        .await
        .unwrap();
    assert_eq!(out.data, json!("Location \"Cave\": smell set to \"damp\"."));
    let w = world(&p);
    assert_eq!(
        w.object("obj_chest").unwrap().attributes["condition"],
        "open"
    );
    assert_eq!(w.location("loc_cave").unwrap().attributes["smell"], "damp");

    fails_all(
        &p,
        "set_attribute",
        [
            (json!({"entityType":"dragon","entityId":"char_001","attributeName":"a","value":"b"}), "entityType must be"),
            (json!({"entityType":"object","entityId":"char_001","attributeName":"a","value":"b"}), "object \"char_001\" not found"),
            (json!({"entityType":"player","entityId":"char_001","attributeName":"a"}), "value is required"),
            (json!({"entityType":"player","entityId":"char_001","attributeName":"","value":"b"}), "must not be empty"),
        ],
    )
    .await;

    let out = call(
        &p,
        "delete_attribute",
        json!({"entityType":"location","entityId":"loc_cave","attributeName":"smell"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.data,
        json!("Location \"Cave\": attribute \"smell\" deleted.")
    );
    assert!(
        !world(&p)
            .location("loc_cave")
            .unwrap()
            .attributes
            .contains_key("smell")
    );
    fails_all(
        &p,
        "delete_attribute",
        [
            (
                json!({"entityType":"location","entityId":"loc_cave","attributeName":"smell"}),
                "has no attribute \"smell\"",
            ),
            (
                json!({"entityType":"player","entityId":"loc_cave","attributeName":"lighting"}),
                "player \"loc_cave\" not found",
            ),
            (
                json!({"entityType":"thing","entityId":"loc_cave","attributeName":"lighting"}),
                "entityType must be",
            ),
        ],
    )
    .await;
}

// covers P-WORLD, X-5
#[tokio::test]
async fn create_object_ids_attributes_and_defaults() {
    let p = pack();
    let out = call(&p, "create_object", json!({"name":"Bottle of rum","connectionId":"char_001","attributes":"{\"condition\": \"full\", \"material\": \"glass\"}"}))
        .await
        .unwrap();
    let id = out.data["objectId"].as_str().unwrap().to_owned();
    let parts: Vec<&str> = id.splitn(3, '_').collect();
    assert_eq!(parts[0], "obj");
    assert!(
        parts[1].parse::<u128>().unwrap() > 1_600_000_000_000,
        "{id}"
    );
    assert_eq!(parts[2].len(), 6);
    let w = world(&p);
    let bottle = w.object(&id).unwrap();
    assert_eq!(bottle.holder, "char_001");
    assert_eq!(bottle.attributes["condition"], "full");
    assert_eq!(bottle.attributes["material"], "glass");
    assert!(
        out.data["message"]
            .as_str()
            .unwrap()
            .contains("held by player \"Jack\"")
    );

    let out = call(
        &p,
        "create_object",
        json!({"name":"Map","connectionId":"obj_chest","attributes":{"age":"old"}}),
    )
    .await
    .unwrap();
    let map_id = out.data["objectId"].as_str().unwrap().to_owned();
    assert_ne!(map_id, id);
    assert_eq!(world(&p).object(&map_id).unwrap().attributes["age"], "old");

    let out = call(
        &p,
        "create_object",
        json!({"name":"Key","connectionId":"loc_cave"}),
    )
    .await
    .unwrap();
    let key = world(&p)
        .object(out.data["objectId"].as_str().unwrap())
        .unwrap()
        .clone();
    assert_eq!(key.attributes["condition"], "in good condition");

    fails_all(
        &p,
        "create_object",
        [
            (
                json!({"name":"Key","connectionId":"nowhere"}),
                "connectionId \"nowhere\" not found",
            ),
            (
                json!({"name":"Key","connectionId":"loc_cave","attributes":"{not json"}),
                "not valid JSON",
            ),
            (
                json!({"name":"Key","connectionId":"loc_cave","attributes":"[1,2]"}),
                "must be a JSON object",
            ),
            (
                json!({"name":"Key","connectionId":"loc_cave","attributes":42}),
                "object or a JSON string",
            ),
            (
                json!({"name":"Key","connectionId":"loc_cave","attributes":{"a":{"b":1}}}),
                "nested",
            ),
            (json!({"connectionId":"loc_cave"}), "name is required"),
        ],
    )
    .await;
}

// covers P-WORLD, X-5
#[tokio::test]
async fn delete_object_moves_contents_to_the_holder() {
    let p = pack();
    let out = call(&p, "delete_object", json!({"objectId":"obj_pouch"}))
        .await
        .unwrap();
    assert_eq!(
        out.data,
        json!("Object \"Pouch\" deleted. Its contents (\"Gold coin\") moved to object \"Chest\".")
    );
    let w = world(&p);
    assert!(w.object("obj_pouch").is_none());
    assert_eq!(w.object("obj_coin").unwrap().holder, "obj_chest");
    call(&p, "delete_object", json!({"objectId":"obj_chest"}))
        .await
        .unwrap();
    assert_eq!(world(&p).object("obj_coin").unwrap().holder, "loc_cave");
    let out = call(&p, "delete_object", json!({"objectId":"obj_rope"}))
        .await
        .unwrap();
    assert_eq!(out.data, json!("Object \"Rope\" deleted."));
    fails(
        &p,
        "delete_object",
        json!({"objectId":"obj_pouch"}),
        "object \"obj_pouch\" not found",
    )
    .await;
    fails(&p, "delete_object", json!({}), "objectId is required").await;
}

// covers P-WORLD (state saved with the session, resumed)
#[tokio::test]
async fn snapshot_and_restore_round_trip() {
    let p = pack();
    let saved = snapshot(&p);
    call(&p, "delete_object", json!({"objectId":"obj_rope"}))
        .await
        .unwrap();
    assert_ne!(snapshot(&p), saved);
    p.state.as_ref().unwrap().restore(saved.clone()).unwrap();
    assert_eq!(snapshot(&p), saved);
    // A corrupt snapshot is refused and the state is kept.
    let mut bad = saved.clone();
    bad["objects"][0]["holder"] = json!("obj_coin");
    assert!(p.state.as_ref().unwrap().restore(bad).is_err());
    assert_eq!(snapshot(&p), saved);
}

// covers P-WORLD
#[test]
fn invalid_worlds_are_refused() {
    for (text, needle) in [
        (
            r#"{"players":[{"id":"a","name":"A","location":"nowhere"}]}"#,
            "unknown location",
        ),
        (
            r#"{"locations":[{"id":"a","name":"A"},{"id":"a","name":"B"}]}"#,
            "used twice",
        ),
        (
            r#"{"locations":[{"id":"l","name":"L","links":[{"to":"x","kind":"out"}]}]}"#,
            "links to unknown",
        ),
        (
            r#"{"locations":[{"id":"l","name":"L"}],"objects":[{"id":"a","name":"A","holder":"b"},{"id":"b","name":"B","holder":"a"}]}"#,
            "inside itself",
        ),
        (
            r#"{"objects":[{"id":"a","name":"A","holder":"zz"}]}"#,
            "unknown holder",
        ),
        (
            r#"{"locations":[{"id":"l","name":"L","links":[{"to":"l","kind":"sideways"}]}]}"#,
            "sideways",
        ),
    ] {
        let err = World::from_json_str(text).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
}

// covers P-WORLD
#[test]
fn tree_shows_who_is_where_and_what_holds_what() {
    let w = World::load(&fixtures().join("world.json")).unwrap();
    let tree = w.render_tree();
    let expected = "\
location Beach (loc_beach) [weather: windy]
  <-> Cave (loc_cave)
  -> Cliff (loc_cliff)
location Cave (loc_cave) [lighting: dim]
  player Jack (char_001) [health: unhurt]
    object Rope (obj_rope)
  object Chest (obj_chest) [condition: locked]
    object Pouch (obj_pouch)
      object Gold coin (obj_coin) [condition: shiny]
location Cliff (loc_cliff)
location Island (loc_island)
";
    assert_eq!(tree, expected);
}

// covers V-1 (the shipped tools file is exactly what the pack registers)
#[test]
fn shipped_tools_file_matches_the_pack() {
    common::assert_shipped_tools_file_matches("world");
}
