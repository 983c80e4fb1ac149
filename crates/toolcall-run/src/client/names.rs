//! Provider-safe tool names and back.
//!
//! OpenAI-style APIs accept only `[a-zA-Z0-9_-]{1,64}`; registry ids may contain `.` and `::`.
//! Each id that is not already safe gets a stable alias (unsafe characters become `_`,
//! truncated, de-duplicated with a numeric suffix), and names in replies are translated back.
//! A name the model invents is passed through unchanged, so the executor can answer
//! `unknown_tool` with it.

use std::collections::HashMap;

use toolcall_core::ToolSpec;

const MAX_LEN: usize = 64;

/// Two-way map between registry ids and wire names.
#[derive(Debug, Clone, Default)]
pub struct WireNames {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

fn is_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl WireNames {
    pub fn new<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let mut map = WireNames::default();
        let specs: Vec<&ToolSpec> = specs.into_iter().collect();
        // Safe names first so an alias never takes a real tool's name.
        for s in specs.iter().filter(|s| is_safe(&s.name)) {
            map.insert(s.name.clone(), s.name.clone());
        }
        for s in specs.iter().filter(|s| !is_safe(&s.name)) {
            let base: String = s
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(MAX_LEN)
                .collect();
            let mut alias = base.clone();
            let mut n = 2;
            while map.from_wire.contains_key(&alias) {
                let suffix = format!("_{n}");
                let keep = MAX_LEN.saturating_sub(suffix.len()).min(base.len());
                alias = format!("{}{}", &base[..keep], suffix);
                n += 1;
            }
            map.insert(s.name.clone(), alias);
        }
        map
    }

    fn insert(&mut self, id: String, wire: String) {
        self.from_wire.insert(wire.clone(), id.clone());
        self.to_wire.insert(id, wire);
    }

    /// The name a provider sees for a registry id.
    pub fn wire<'a>(&'a self, id: &'a str) -> &'a str {
        self.to_wire.get(id).map(String::as_str).unwrap_or(id)
    }

    /// The registry id for a name in a reply.
    pub fn id<'a>(&'a self, wire: &'a str) -> &'a str {
        self.from_wire.get(wire).map(String::as_str).unwrap_or(wire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // covers O-1
    #[test]
    fn unsafe_ids_get_reversible_aliases() {
        let specs = [
            ToolSpec::new("vista.command.start_workflow::triage", "", json!({})),
            ToolSpec::new("vista_command_start_workflow__triage", "", json!({})),
            ToolSpec::new("plain", "", json!({})),
        ];
        let m = WireNames::new(&specs);
        let a = m.wire("vista.command.start_workflow::triage");
        assert!(is_safe(a));
        assert_ne!(a, "vista_command_start_workflow__triage");
        assert_eq!(m.id(a), "vista.command.start_workflow::triage");
        assert_eq!(m.wire("plain"), "plain");
        assert_eq!(m.id("invented"), "invented");
    }
}
