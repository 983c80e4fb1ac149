//! The request's tools, compiled once per distinct declaration and reused.
//!
//! Clients send the same `tools` array with every request of a conversation, and compiling
//! each tool's JSON Schema into a validator was the largest cost of a small request (about a
//! tenth of the gateway's CPU per request in a `perf` profile of the whole-reply path, more
//! than parsing and checking the reply). [`ToolsCache`] keys the compiled
//! [`CompiledTools`] by the declaration's exact JSON text (names, descriptions, schemas and
//! any other field), compared in full, not by a hash alone: a changed schema is a different
//! key and never reuses a stale validator. The cache is bounded in entries and in key bytes
//! and drops the least recently used entries when full; a declaration larger than the whole
//! byte bound is compiled without being kept.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use toolcall_core::{Registry, ToolSpec};
use toolcall_wire::chat::ChatTool;

/// One request's tools, ready to check calls.
#[derive(Debug, Default)]
pub struct CompiledTools {
    pub registry: Arc<Registry>,
    /// Offered names the registry could not take (unusual characters, invalid schemas):
    /// their calls pass unchecked.
    pub unchecked: HashSet<String>,
    /// Decoding constraints built for these tools (`constrain`), kept with them.
    pub constraints: crate::constrain::ConstraintMemo,
}

impl CompiledTools {
    /// Compiles `tools`: each declared function with its parameters schema (an absent
    /// schema is `{"type": "object"}`).
    pub fn compile(tools: &[ChatTool]) -> Self {
        let mut registry = Registry::new();
        let mut unchecked = HashSet::new();
        for t in tools {
            let f = &t.function;
            let parameters = f
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            let spec = ToolSpec::new(
                &f.name,
                f.description.clone().unwrap_or_default(),
                parameters,
            );
            if let Err(e) = registry.add_spec(spec) {
                tracing::warn!(tool = %f.name, error = %e, "tool kept unchecked");
                unchecked.insert(f.name.clone());
            }
        }
        CompiledTools {
            registry: Arc::new(registry),
            unchecked,
            constraints: Default::default(),
        }
    }
}

/// Most declarations kept.
pub const MAX_ENTRIES: usize = 256;
/// Most bytes of declaration text kept (the compiled validators grow with it).
pub const MAX_KEY_BYTES: usize = 16 * 1024 * 1024;

/// Compiled tools by declaration, bounded, least recently used dropped first.
#[derive(Debug)]
pub struct ToolsCache {
    max_entries: usize,
    max_key_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_key: HashMap<Arc<str>, Entry>,
    key_bytes: usize,
    /// A use counter: an entry's `used` is when it was last returned.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    tools: Arc<CompiledTools>,
    used: u64,
}

impl Default for ToolsCache {
    fn default() -> Self {
        ToolsCache::new(MAX_ENTRIES, MAX_KEY_BYTES)
    }
}

impl ToolsCache {
    /// A cache of at most `max_entries` declarations and `max_key_bytes` bytes of their text.
    pub fn new(max_entries: usize, max_key_bytes: usize) -> Self {
        ToolsCache {
            max_entries,
            max_key_bytes,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// The compiled form of `tools`, compiled now unless an identical declaration was.
    pub fn get(&self, tools: &[ChatTool]) -> Arc<CompiledTools> {
        if tools.is_empty() {
            return Arc::new(CompiledTools::default());
        }
        let Ok(key) = serde_json::to_string(tools) else {
            return Arc::new(CompiledTools::compile(tools));
        };
        if let Some(hit) = self.lookup(&key) {
            return hit;
        }
        // Compiled outside the lock: concurrent misses on one declaration compile twice,
        // which costs time once and never blocks other requests behind a compile.
        let compiled = Arc::new(CompiledTools::compile(tools));
        if key.len() <= self.max_key_bytes {
            self.insert(key, compiled.clone());
        }
        compiled
    }

    /// How many declarations are kept.
    pub fn len(&self) -> usize {
        self.entries().by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic elsewhere while holding the lock leaves the map consistent (every change
        // is a single insert or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lookup(&self, key: &str) -> Option<Arc<CompiledTools>> {
        let mut entries = self.entries();
        entries.clock += 1;
        let now = entries.clock;
        let entry = entries.by_key.get_mut(key)?;
        entry.used = now;
        Some(entry.tools.clone())
    }

    fn insert(&self, key: String, tools: Arc<CompiledTools>) {
        let mut entries = self.entries();
        if entries.by_key.contains_key(key.as_str()) {
            return;
        }
        while !entries.by_key.is_empty()
            && (entries.by_key.len() >= self.max_entries
                || entries.key_bytes + key.len() > self.max_key_bytes)
        {
            // A linear scan, only on a miss, over at most `max_entries`: far cheaper than
            // the compile that preceded it.
            let Some(oldest) = entries
                .by_key
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            entries.by_key.remove(&oldest);
            entries.key_bytes -= oldest.len();
        }
        entries.clock += 1;
        let used = entries.clock;
        entries.key_bytes += key.len();
        entries.by_key.insert(Arc::from(key), Entry { tools, used });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use toolcall_core::ToolCall;

    fn tools(parameters: Value) -> Vec<ChatTool> {
        serde_json::from_value(json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": parameters}}
        ]))
        .unwrap()
    }

    fn accepts(compiled: &CompiledTools, arguments: Value) -> bool {
        let mut call = ToolCall::new("get_weather", arguments, "test");
        compiled.registry.validate_call(&mut call).is_ok()
    }

    #[test]
    fn the_same_declaration_is_compiled_once() {
        let cache = ToolsCache::default();
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let a = cache.get(&tools(schema.clone()));
        let b = cache.get(&tools(schema));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_changed_schema_gets_its_own_validator() {
        let cache = ToolsCache::default();
        let strict = json!({"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false});
        let loose = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let first = cache.get(&tools(strict.clone()));
        assert!(!accepts(&first, json!({"town": "Paris"})));
        // Same tool name, same size class, different schema: never the stale validator.
        let changed = cache.get(&tools(loose));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(accepts(&changed, json!({"town": "Paris"})));
        // And the first declaration still gets its own.
        assert!(!accepts(
            &cache.get(&tools(strict)),
            json!({"town": "Paris"})
        ));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_changed_description_is_another_declaration() {
        let cache = ToolsCache::default();
        let mut t = tools(json!({"type": "object"}));
        let a = cache.get(&t);
        t[0].function.description = Some("Weather now.".into());
        let b = cache.get(&t);
        assert!(!Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn entries_are_bounded_and_the_least_recently_used_goes_first() {
        let cache = ToolsCache::new(3, MAX_KEY_BYTES);
        let d: Vec<_> = (0..4)
            .map(|i| tools(json!({"type": "object", "description": format!("v{i}")})))
            .collect();
        let a0 = cache.get(&d[0]);
        let a1 = cache.get(&d[1]);
        let a2 = cache.get(&d[2]);
        // 0 used again: 1 is now the least recently used, and goes when 3 comes.
        assert!(Arc::ptr_eq(&a0, &cache.get(&d[0])));
        cache.get(&d[3]);
        assert_eq!(cache.len(), 3);
        assert!(Arc::ptr_eq(&a2, &cache.get(&d[2])));
        assert!(Arc::ptr_eq(&a0, &cache.get(&d[0])));
        assert!(!Arc::ptr_eq(&a1, &cache.get(&d[1])));
        for i in 0..50 {
            cache.get(&tools(json!({"type": "object", "title": format!("t{i}")})));
        }
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn key_bytes_are_bounded() {
        let small = tools(json!({"type": "object"}));
        let key_len = serde_json::to_string(&small).unwrap().len();
        // Room for two keys of this size; a big declaration is compiled but not kept.
        let cache = ToolsCache::new(100, key_len * 2 + key_len / 2);
        cache.get(&tools(json!({"type": "object", "title": "a"})));
        cache.get(&tools(json!({"type": "object", "title": "b"})));
        cache.get(&tools(json!({"type": "object", "title": "c"})));
        assert!(cache.len() <= 2);
        let big = tools(json!({"type": "object", "description": "x".repeat(key_len * 4)}));
        let compiled = cache.get(&big);
        assert!(compiled.registry.contains("get_weather"));
        assert!(cache.len() <= 2);
    }

    #[test]
    fn bad_names_and_schemas_are_kept_unchecked() {
        let cache = ToolsCache::default();
        let t: Vec<ChatTool> = serde_json::from_value(json!([
            {"type": "function", "function": {"name": "has space"}},
            {"type": "function", "function": {"name": "bad_schema", "parameters": {"type": "string"}}},
            {"type": "function", "function": {"name": "ok"}}
        ]))
        .unwrap();
        let c = cache.get(&t);
        assert!(c.unchecked.contains("has space"));
        assert!(c.unchecked.contains("bad_schema"));
        assert!(c.registry.contains("ok"));
        assert!(cache.get(&[]).registry.is_empty());
    }
}
