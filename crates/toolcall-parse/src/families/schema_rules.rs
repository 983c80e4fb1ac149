//! How a family's reference reader holds a call's parameters to its tool's schema, beyond
//! typing their values ([`crate::family::convert_text_value`]): a family declares its
//! [`SchemaRules`] in its own module (`Described::schema_rules`) where its reference parser
//! does this and the model's users expect it (MiniCPM5). The shared `invoke`/`parameter`
//! reader ([`super::marked::invokes`]) applies them to each parameter as it reads it, and a
//! stream does not send a value the rules drop or unwrap before its parameter completes
//! ([`SchemaRules::reshapes`]), so one-shot and streamed reads agree.
//!
//! What no rule does: rename a call to another tool (a near name is an unknown tool, R-10),
//! or refuse a call for a missing required argument (validation does, and the gateway's
//! invalid-call policy can then ask the model again).

use serde_json::{Map, Value};
use toolcall_core::{Repair, ToolSpec};

/// The rules; all of them apply only when the tool is registered with a schema that
/// declares properties.
pub(crate) struct SchemaRules {
    /// Parameter names that, when the schema does not declare them, hold the arguments
    /// object itself (`<param name="arguments">{"city": "Oslo"}</param>`): its entries are
    /// the call's arguments, each as if written as a parameter of its own.
    pub wrappers: &'static [&'static str],
    /// An argument the schema does not declare is dropped, with a repair naming it, unless
    /// the schema allows other properties (`additionalProperties` true or a schema).
    pub drop_undeclared: bool,
    /// A parameter written twice makes the call broken (which value was meant is not
    /// known; its siblings still run), instead of the last value winning.
    pub repeated_breaks: bool,
}

/// The properties the tool's schema declares, when it declares any.
fn declared(spec: Option<&ToolSpec>) -> Option<&Map<String, Value>> {
    spec?
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
}

/// Whether the schema allows properties it does not declare.
fn allows_others(spec: Option<&ToolSpec>) -> bool {
    spec.and_then(|s| s.parameters.get("additionalProperties"))
        .is_some_and(|a| a.as_bool() != Some(false))
}

impl SchemaRules {
    /// Whether the rules drop or unwrap parameter `key` of a call to `spec` (so a stream
    /// sends its value only as the rules read it, once the parameter completes).
    pub(crate) fn reshapes(&self, spec: Option<&ToolSpec>, key: &str) -> bool {
        declared(spec).is_some_and(|props| {
            !props.contains_key(key)
                && (self.wrappers.contains(&key) || (self.drop_undeclared && !allows_others(spec)))
        })
    }

    /// Adds parameter `key` with `value` to `args` by the rules; `Err` with the reason when
    /// it makes the call broken.
    pub(crate) fn add(
        &self,
        args: &mut Map<String, Value>,
        key: &str,
        value: Value,
        spec: Option<&ToolSpec>,
        repairs: &mut Vec<Repair>,
    ) -> Result<(), String> {
        let Some(props) = declared(spec) else {
            return self.put(args, key.to_owned(), value);
        };
        if !props.contains_key(key)
            && self.wrappers.contains(&key)
            && let Value::Object(inner) = value
        {
            repairs.push(Repair::new(
                "unwrapped_arguments",
                format!(
                    "parameter {key:?} held the arguments object; its entries are the arguments"
                ),
            ));
            for (k, v) in inner {
                if self.keeps(props, spec, &k, repairs) {
                    self.put(args, k, v)?;
                }
            }
            return Ok(());
        }
        if self.keeps(props, spec, key, repairs) {
            self.put(args, key.to_owned(), value)?;
        }
        Ok(())
    }

    /// Whether argument `key` stays (a repair says when it is dropped).
    fn keeps(
        &self,
        props: &Map<String, Value>,
        spec: Option<&ToolSpec>,
        key: &str,
        repairs: &mut Vec<Repair>,
    ) -> bool {
        if props.contains_key(key) || !self.drop_undeclared || allows_others(spec) {
            return true;
        }
        repairs.push(Repair::new(
            "undeclared_argument",
            format!("argument {key:?} is not a property of the tool's schema; dropped"),
        ));
        false
    }

    fn put(&self, args: &mut Map<String, Value>, key: String, value: Value) -> Result<(), String> {
        if self.repeated_breaks && args.contains_key(&key) {
            return Err(format!("argument {key:?} is given twice"));
        }
        args.insert(key, value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const RULES: SchemaRules = SchemaRules {
        wrappers: &["arguments"],
        drop_undeclared: true,
        repeated_breaks: true,
    };

    fn spec(params: Value) -> ToolSpec {
        ToolSpec::new("t", "", params)
    }

    fn add_all(spec: Option<&ToolSpec>, pairs: &[(&str, Value)]) -> Result<Value, String> {
        let mut args = Map::new();
        let mut repairs = Vec::new();
        for (k, v) in pairs {
            RULES.add(&mut args, k, v.clone(), spec, &mut repairs)?;
        }
        Ok(Value::Object(args))
    }

    // covers: the rules need declared properties; additionalProperties keeps extras
    #[test]
    fn rules_apply_only_to_declared_properties() {
        let declared = spec(json!({"type": "object", "properties": {"city": {"type": "string"}}}));
        let open = spec(
            json!({"type": "object", "properties": {"city": {}}, "additionalProperties": true}),
        );
        let none = spec(json!({"type": "object"}));
        let pairs = [("city", json!("Oslo")), ("unit", json!("c"))];
        assert_eq!(
            add_all(Some(&declared), &pairs).unwrap(),
            json!({"city": "Oslo"})
        );
        assert_eq!(
            add_all(Some(&open), &pairs).unwrap(),
            json!({"city": "Oslo", "unit": "c"})
        );
        assert_eq!(
            add_all(Some(&none), &pairs).unwrap(),
            json!({"city": "Oslo", "unit": "c"})
        );
        assert_eq!(
            add_all(None, &pairs).unwrap(),
            json!({"city": "Oslo", "unit": "c"})
        );
        assert!(RULES.reshapes(Some(&declared), "unit"));
        assert!(!RULES.reshapes(Some(&declared), "city"));
        assert!(!RULES.reshapes(Some(&open), "unit"));
        assert!(RULES.reshapes(Some(&open), "arguments"));
        assert!(!RULES.reshapes(Some(&none), "arguments"));
        assert!(add_all(None, &[("a", json!(1)), ("a", json!(2))]).is_err());
        let wrapped = [("arguments", json!({"city": "Oslo", "x": 1}))];
        assert_eq!(
            add_all(Some(&declared), &wrapped).unwrap(),
            json!({"city": "Oslo"})
        );
        let twice = [
            ("city", json!("Oslo")),
            ("arguments", json!({"city": "Rome"})),
        ];
        assert!(add_all(Some(&declared), &twice).is_err());
    }
}
