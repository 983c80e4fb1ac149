//! The facade's `constrain` re-export builds a family's constraint from a registry's tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolcall::constrain::{Body, Dialect, Options, ToolChoice, build};
use toolcall::{Registry, ToolSpec};

#[test]
fn a_registrys_tools_constrain_a_family() {
    let mut registry = Registry::new();
    let params =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    registry
        .add_spec(ToolSpec::new("get_weather", "", params))
        .unwrap();
    let tools: Vec<ToolSpec> = registry.enabled_specs().cloned().collect();
    let options = Options {
        choice: ToolChoice::Required,
        ..Options::default()
    };
    let c = build("qwen3_coder", &tools, Dialect::Gbnf, &options).unwrap();
    let Body::Grammar(g) = c.body else { panic!() };
    assert!(
        g.contains("\"<function=\"") && g.contains("\"city\""),
        "{g}"
    );
}
