//! Property tests: no input a user or model controls makes the packs' parsers or tools
//! panic, and routing is deterministic.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use proptest::prelude::*;
use serde_json::Value;
use toolcall_core::ToolContext;
use toolcall_packs::PackConfig;
use toolcall_packs::apps::desktop::{parse_entry, parse_exec};
use toolcall_packs::highlight::matching::normalise;
use toolcall_packs::slash::{SlashContext, SlashSetup, route};

use common::{fixtures, world_fixture_pack as world_pack};

fn slash_ctx() -> SlashContext {
    SlashSetup::load(&PackConfig {
        base_dir: fixtures(),
        options: common::options(&[("data", "clinic.json")]),
    })
    .unwrap()
    .context(Some("vis_123"))
}

/// Inputs built from the characters that matter to the router, plus arbitrary text.
fn slash_input() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(
            prop_oneof![
                Just("/summary".to_owned()),
                Just("/order".to_owned()),
                Just("lab".to_owned()),
                Just("/workflow".to_owned()),
                Just("triage".to_owned()),
                Just("@Anna Nowak".to_owned()),
                Just("@".to_owned()),
                Just("/".to_owned()),
                Just("::".to_owned()),
                "[a-zA-Zß€ /@:_-]{0,12}".prop_map(|s| s),
            ],
            0..8
        )
        .prop_map(|parts| parts.join(" ")),
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("obj_chest".to_owned()),
            Just("char_001".to_owned()),
            Just("loc_beach".to_owned()),
            Just("obj_coin".to_owned()),
            Just("player".to_owned()),
            Just("object".to_owned()),
            Just("{\"a\":1}".to_owned()),
            any::<String>(),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn world_args() -> impl Strategy<Value = Value> {
    let keys = prop_oneof![
        Just("objectId"),
        Just("targetId"),
        Just("playerId"),
        Just("targetLocationId"),
        Just("entityType"),
        Just("entityId"),
        Just("attributeName"),
        Just("value"),
        Just("name"),
        Just("connectionId"),
        Just("attributes"),
    ];
    proptest::collection::vec((keys, json_value()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // covers R-7, P-SLASH
    #[test]
    fn routing_never_panics_and_is_deterministic(input in slash_input()) {
        let ctx = slash_ctx();
        let a = route(&input, &ctx);
        let b = route(&input, &ctx);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                let names = |v: &Vec<toolcall_core::ToolCall>| {
                    v.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect::<Vec<_>>()
                };
                prop_assert_eq!(names(&a), names(&b));
                for c in &a {
                    prop_assert!(toolcall_core::Registry::validate_id(&c.name).is_ok());
                    prop_assert!(c.arguments["context_id"].is_string());
                }
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "routing is not deterministic"),
        }
    }

    // covers R-7, P-APP
    #[test]
    fn desktop_parsing_never_panics(text in any::<String>(), exec in "[a-z %\"\\\\$`fFuUx]{0,24}") {
        let _ = parse_exec(&exec);
        let _ = parse_entry(&text, "id", std::path::Path::new("x.desktop"));
        let _ = parse_entry(&format!("[Desktop Entry]\nExec={exec}\n"), "id", std::path::Path::new("x.desktop"));
    }

    // covers R-7, P-HL
    #[test]
    fn normalising_never_panics(name in any::<String>()) {
        let words = normalise(&name);
        prop_assert!(words.iter().all(|w| !w.is_empty()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    // covers, P-WORLD: any arguments give a result or a tool_failed error, and a
    // failure never changes the world; the world stays valid either way.
    #[test]
    fn world_tools_never_panic_and_fail_cleanly(tool in 0usize..6, args in world_args()) {
        let names = ["move_object", "move_player", "set_attribute", "delete_attribute", "create_object", "delete_object"];
        let p = world_pack();
        let state = p.state.as_ref().unwrap();
        let before = state.snapshot();
        let handler = p.registry.get(names[tool]).unwrap().handler.clone().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let out = rt.block_on(handler.call(&ToolContext::default(), args));
        let after = state.snapshot();
        if out.is_err() {
            prop_assert_eq!(&after, &before);
        }
        prop_assert!(toolcall_packs::world::World::from_value(after).is_ok());
    }
}
