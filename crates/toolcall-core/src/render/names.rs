//! Provider-safe tool names and the way back.
//!
//! Providers restrict function names: OpenAI `^[a-zA-Z0-9_-]{1,64}$`, Gemini a letter or `_`
//! first and at most 63-64 characters depending on the API version, Anthropic
//! `^[a-zA-Z0-9_-]{1,64}$` (newer versions allow 128). One rule satisfies all of them:
//! `^[A-Za-z_][A-Za-z0-9_-]{0,62}$`. Ids that already match are sent unchanged; others
//! (`vista.command.start_workflow::triage`) get an alias: `::` becomes `__`, other forbidden
//! characters `_`, and when that is too long or taken, a prefix plus 8 hex digits of a stable
//! hash of the id. Aliases are deterministic for a given set of ids and never collide.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::registry::Registry;

/// Longest name every provider accepts.
pub const MAX_PROVIDER_NAME: usize = 63;

/// Whether `name` is accepted by every provider as is.
pub fn is_provider_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PROVIDER_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Tool ids ↔ provider names, built from a registry (or any set of ids).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    to_provider: BTreeMap<String, String>,
    from_provider: BTreeMap<String, String>,
}

impl NameMap {
    /// Aliases for every tool of the registry (enabled or not, so an alias never changes when
    /// a tool is toggled).
    pub fn new(registry: &Registry) -> Self {
        Self::from_names(registry.names())
    }

    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names: Vec<&str> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let mut map = NameMap::default();
        // Safe ids keep their name: reserve them before any alias is chosen.
        for &n in names.iter().filter(|n| is_provider_safe(n)) {
            map.bind(n, n.to_owned());
        }
        for &n in names.iter().filter(|n| !is_provider_safe(n)) {
            let alias = map.choose_alias(n);
            map.bind(n, alias);
        }
        map
    }

    fn bind(&mut self, id: &str, alias: String) {
        self.from_provider.insert(alias.clone(), id.to_owned());
        self.to_provider.insert(id.to_owned(), alias);
    }

    fn choose_alias(&self, id: &str) -> String {
        let plain = sanitise(id);
        if plain.len() <= MAX_PROVIDER_NAME && !self.from_provider.contains_key(&plain) {
            return plain;
        }
        let hash = fnv1a(id);
        // 63 = 54 chars of prefix + '_' + 8 hex digits.
        let prefix: String = plain.chars().take(MAX_PROVIDER_NAME - 9).collect();
        let mut candidate = format!("{prefix}_{:08x}", hash as u32);
        let mut salt = 0u64;
        while self.from_provider.contains_key(&candidate) {
            salt += 1;
            let h = fnv1a(&format!("{id}#{salt}"));
            candidate = format!("{prefix}_{:08x}", h as u32);
        }
        candidate
    }

    /// The name to send to the provider for tool `id` (unchanged when not in the map).
    pub fn to_provider<'a>(&'a self, id: &'a str) -> Cow<'a, str> {
        match self.to_provider.get(id) {
            Some(alias) if alias != id => Cow::Borrowed(alias.as_str()),
            Some(_) => Cow::Borrowed(id),
            None if is_provider_safe(id) => Cow::Borrowed(id),
            None => Cow::Owned(sanitise(id)),
        }
    }

    /// The tool id a provider's name stands for; `None` when the name is not one this map
    /// produced (pass it on unchanged, validation will name it unknown).
    pub fn from_provider(&self, name: &str) -> Option<&str> {
        self.from_provider.get(name).map(String::as_str)
    }

    /// Whether any id needed an alias.
    pub fn has_aliases(&self) -> bool {
        self.to_provider.iter().any(|(k, v)| k != v)
    }
}

/// `::` → `__`, other characters outside `[A-Za-z0-9_-]` → `_`, a leading digit or `-`
/// prefixed with `_`.
fn sanitise(id: &str) -> String {
    let mut out = id.replace("::", "__");
    out = out
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

/// FNV-1a, 64 bit: stable across runs and platforms (unlike `DefaultHasher`).
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers O-1, V-2
    #[test]
    fn safe_names_pass_and_others_round_trip() {
        let long = format!("vista.command.start_workflow::{}", "x".repeat(80));
        let ids = [
            "computer_use",
            "vista.command.summary",
            "vista.command.start_workflow::triage",
            long.as_str(),
        ];
        let m = NameMap::from_names(ids);
        assert_eq!(m.to_provider("computer_use"), "computer_use");
        assert!(matches!(m.to_provider("computer_use"), Cow::Borrowed(_)));
        assert_eq!(
            m.to_provider("vista.command.summary"),
            "vista_command_summary"
        );
        assert_eq!(
            m.to_provider("vista.command.start_workflow::triage"),
            "vista_command_start_workflow__triage"
        );
        for id in ids {
            let alias = m.to_provider(id);
            assert!(is_provider_safe(&alias), "{alias}");
            assert_eq!(m.from_provider(&alias), Some(id));
        }
        assert_eq!(m.to_provider(&long).len(), MAX_PROVIDER_NAME);
        assert!(m.has_aliases());
        assert_eq!(m.from_provider("nope"), None);
    }

    // covers O-1
    #[test]
    fn aliases_never_collide_and_are_deterministic() {
        // `a.b` would sanitise to `a_b`, which is a real tool: it must get a hashed alias.
        let ids = ["a.b", "a_b", "a::b", "a__b", "a-b"];
        let m = NameMap::from_names(ids);
        let mut aliases: Vec<String> = ids.iter().map(|i| m.to_provider(i).into_owned()).collect();
        assert_eq!(m.to_provider("a_b"), "a_b");
        assert_eq!(m.to_provider("a__b"), "a__b");
        for (id, alias) in ids.iter().zip(&aliases) {
            assert_eq!(m.from_provider(alias), Some(*id));
        }
        aliases.sort();
        aliases.dedup();
        assert_eq!(aliases.len(), ids.len());
        // same ids in another order: same aliases
        let again = NameMap::from_names(ids.iter().rev().copied());
        assert_eq!(again, m);
        // two long ids sharing a 54-char prefix stay distinct
        let p = "p".repeat(70);
        let (x, y) = (format!("{p}.x"), format!("{p}.y"));
        let m = NameMap::from_names([x.as_str(), y.as_str()]);
        assert_ne!(m.to_provider(&x), m.to_provider(&y));
        assert_eq!(m.from_provider(&m.to_provider(&y)), Some(y.as_str()));
    }

    // covers O-1
    #[test]
    fn provider_safety_rule() {
        assert!(is_provider_safe("get_weather-2"));
        assert!(is_provider_safe("_x"));
        for bad in ["", "9x", "-x", "a.b", "a::b", "a b", &"x".repeat(64)] {
            assert!(!is_provider_safe(bad), "{bad}");
        }
    }

    proptest::proptest! {
        // covers O-1, V-2: any set of valid ids gets safe, unique aliases that map back.
        #[test]
        fn aliases_round_trip(ids in proptest::collection::btree_set(
            "[a-z_][a-zA-Z0-9_.-]{0,70}(::[a-zA-Z0-9_.-]{1,20})?", 1..20)) {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let m = NameMap::from_names(ids.iter().copied());
            let mut seen = std::collections::BTreeSet::new();
            for id in &ids {
                let alias = m.to_provider(id).into_owned();
                proptest::prop_assert!(is_provider_safe(&alias), "{} -> {}", id, alias);
                proptest::prop_assert_eq!(m.from_provider(&alias), Some(*id));
                proptest::prop_assert!(seen.insert(alias));
            }
        }
    }
}
