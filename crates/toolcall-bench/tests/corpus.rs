//! Every corpus case is read correctly by toolcall, one-shot and streamed, so the benches time
//! real work (a parser that found nothing would look fast).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolcall_bench::corpus::{self, Shape};
use toolcall_bench::ours;

// covers F-AUTO-1 (prose: nothing found), F-JSON-3 (every call of a reply, in order)
#[test]
fn toolcall_finds_every_expected_call() {
    let registry = corpus::registry();
    let mut failures = Vec::new();
    for case in corpus::corpus() {
        let opts = case.options(&registry);
        let one = ours::one_shot(&case.text, &opts);
        // 64-byte pushes keep the debug-build test quick on the 1 MB cases.
        let streamed = ours::stream(&corpus::chunks(&case.text, 64), &opts);
        if one != case.expected_calls || streamed != case.expected_calls {
            failures.push(format!(
                "{}: expected {}, one-shot {one}, streamed {streamed}",
                case.name, case.expected_calls
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn byte_by_byte_streaming_matches_one_shot_on_small_cases() {
    let registry = corpus::registry();
    for case in corpus::corpus()
        .into_iter()
        .filter(|c| matches!(c.shape, Shape::Small | Shape::Many))
    {
        let opts = case.options(&registry);
        let pushes = corpus::chunks(&case.text, 1);
        assert_eq!(
            ours::stream(&pushes, &opts),
            ours::one_shot(&case.text, &opts),
            "{}",
            case.name
        );
        assert_eq!(
            ours::reparse_every_push(&corpus::chunks(&case.text, 64), &opts),
            case.expected_calls,
            "{}",
            case.name
        );
    }
}

// The adversarial inputs hold no call: one-shot and streamed agree on zero (their timing is
// the bench's business; a small size keeps this quick in debug builds).
#[test]
fn adversarial_inputs_hold_no_call() {
    let opts = toolcall_parse::ParseOptions {
        tools: Some(corpus::registry()),
        ..toolcall_parse::ParseOptions::default()
    };
    for (label, unit) in corpus::ADVERSARIAL {
        let text = corpus::adversarial(unit, 2048);
        assert!(text.len() >= 2048, "{label}");
        assert_eq!(ours::one_shot(&text, &opts), 0, "{label}");
        assert_eq!(
            ours::stream(&corpus::chunks(&text, 64), &opts),
            0,
            "{label}"
        );
    }
}

// Every registered family with a text syntax is in the corpus (the list is the
// registry's), and its calls render and parse back to the expected count.
#[test]
fn every_family_renders_and_joins_once_registered() {
    let families = corpus::families();
    assert!(families.len() >= 25, "{families:?}");
    for f in families {
        for shape in [Shape::Small, Shape::Many] {
            let c = corpus::case(f, shape);
            assert!(c.text.contains("get_weather"), "{}: {}", c.name, c.text);
            assert_eq!(
                c.expected_calls,
                if shape == Shape::Small { 3 } else { 100 }
            );
        }
        assert!(corpus::formats().contains(&f), "{f}");
    }
}
