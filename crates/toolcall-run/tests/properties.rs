//! Property tests: pairing of results with calls, and redaction.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolcall_core::ToolCall;
use toolcall_run::redact::redact;
use toolcall_run::{Executor, SessionContext};

fn arb_call() -> impl Strategy<Value = ToolCall> {
    (
        prop::sample::select(vec![
            "echo",
            "flaky",
            "sleep",
            "nope",
            "vista.command.summary",
        ]),
        prop_oneof![
            Just(json!({})),
            Just(json!({"text": "t"})),
            Just(json!({"text": 5})),
            Just(json!({"ms": "1"})),
            Just(json!("{broken")),
            Just(json!([1, 2])),
        ],
        "[a-z0-9_]{1,12}",
    )
        .prop_map(|(name, args, id)| {
            let mut c = ToolCall::new(name, args, "test");
            c.call_id = id.into();
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    //
    #[test]
    fn exactly_one_result_per_call_in_call_order(calls in prop::collection::vec(arb_call(), 0..12)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let ex = Executor::new(Arc::new(registry()));
        let results = rt.block_on(ex.execute(calls.clone(), &SessionContext::default()));
        prop_assert_eq!(results.len(), calls.len());
        for (c, r) in calls.iter().zip(&results) {
            prop_assert_eq!(&c.call_id, &r.call_id);
            prop_assert_eq!(&c.name, &r.name);
            let j = r.to_json();
            prop_assert!(j.get("status") == Some(&json!("ok")) || j["error"]["code"].is_string());
        }
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        let key = prop_oneof![
            "[a-z]{1,6}",
            Just("password".to_owned()),
            Just("Api-Key".to_owned()),
            Just("refresh_token".to_owned()),
            Just("AUTHORIZATION".to_owned()),
            Just("client_secret".to_owned()),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn secret_values_survive(v: &Value, out: &mut bool) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if toolcall_run::redact::is_secret_key(k) && v != &json!("[REDACTED]") {
                    *out = true;
                }
                secret_values_survive(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| secret_values_survive(v, out)),
        _ => {}
    }
}

proptest! {
    //
    #[test]
    fn no_value_under_a_secret_key_survives_redaction(v in arb_json()) {
        let r = redact(&v);
        let mut leaked = false;
        secret_values_survive(&r, &mut leaked);
        prop_assert!(!leaked, "{}", r);
        // Redaction is idempotent and keeps non-secret structure.
        prop_assert_eq!(redact(&r), r);
    }
}
