//! The request's tools, compiled once per distinct declaration and reused, within a memory
//! budget.
//!
//! Clients send the same `tools` array with every request of a conversation, and compiling
//! each tool's JSON Schema into a validator was the largest cost of a small request (about a
//! tenth of the gateway's CPU per request in a `perf` profile of the whole-reply path, more
//! than parsing and checking the reply). [`ToolsCache`] keys the compiled
//! [`CompiledTools`] by the declaration's exact JSON text (names, descriptions, schemas and
//! any other field), compared in full, not by a hash alone: a changed schema is a different
//! key and never reuses a stale validator.
//!
//! Compiled schemas cost far more than their text (measured below), so memory is bounded by
//! the compiled size, estimated before compiling ([`estimate`]):
//!
//! - the cache is `quick_cache`'s (concurrent, S3-FIFO eviction) weighed by that estimate,
//!   holding at most half the budget;
//! - every compiled declaration alive, cached or in use by a request, holds its estimate
//!   from one budget ([`ToolsCache::new`], a [`crate::budget::MemoryBudget`] as request
//!   bodies' is); a declaration larger than half the budget is
//!   refused (`400`, [`CompileRefused::TooLarge`]), and one that does not fit beside those
//!   alive is refused at once with `503` (`overloaded`, `Retry-After: 1`,
//!   [`CompileRefused::Busy`]) rather
//!   than waiting, as requests are answered synchronously here and a waiting request would
//!   still hold its body.
//!
//! The estimate, measured with a counting allocator (`tests/compiled_size.rs`, which checks
//! it stays above the measured heap for every shape it tries): live heap after compiling
//! was 1.0x the declaration's JSON text for long descriptions, 19x for 500 tools of five
//! described properties, 28-32x for 500 trivial tools (about 1.3-2.5 KB each), 42x for
//! `anyOf`/`enum`/nested-object schemas, 74x for small `pattern`s and 82x for 60-deep
//! nesting. [`estimate`] charges 96x the text (a tool's own description 4x), 4 KiB per tool and 128 KiB per regex (a
//! `pattern` or a `patternProperties` key: `toolcall_core`'s registry bounds each one's
//! compiled program and lazy DFA to 64 KiB; before, a 20-byte `(\w{100}){100}` compiled to
//! over 1 MB).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{Registry, ToolSpec};
use toolcall_wire::chat::ChatTool;

use crate::budget::{Budgeted, MemoryBudget, Share, kib};

/// One request's tools, ready to check calls.
#[derive(Debug, Default)]
pub struct CompiledTools {
    pub registry: Arc<Registry>,
    /// Offered names the registry could not take (unusual characters, invalid schemas):
    /// their calls pass unchecked.
    pub unchecked: HashSet<String>,
    /// Decoding constraints built for these tools (`constrain`), kept with them.
    pub constraints: crate::constrain::ConstraintMemo,
    /// The estimated heap of this compiled form and its key ([`estimate`]).
    pub weight: u64,
    /// Its share of the budget, given back when the last user drops it.
    _budget: Option<Share>,
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
            weight: 0,
            _budget: None,
        }
    }
}

/// Times the declaration's JSON text charged for its compiled form.
pub const BYTES_FACTOR: u64 = 96;
/// Times a tool's own description is charged (kept as text: in the key, in the registry).
pub const DESCRIPTION_FACTOR: u64 = 4;
/// Charged per tool besides.
pub const PER_TOOL: u64 = 4 * 1024;
/// Charged per regex in a schema (`toolcall_core`'s registry bounds each to 64 KiB of
/// compiled program plus 64 KiB of lazy DFA).
pub const PER_REGEX: u64 = 2 * toolcall_core::registry::PATTERN_SIZE_LIMIT as u64;

/// The estimated heap, in bytes, of `tools` compiled, whose JSON text is `text_len` bytes
/// (the text itself included: it is the cache key).
pub fn estimate(tools: &[ChatTool], text_len: usize) -> u64 {
    let regexes: u64 = tools
        .iter()
        .filter_map(|t| t.function.parameters.as_ref())
        .map(regex_count)
        .sum();
    // A tool's own description is kept as text only (in the key and the registry's spec):
    // measured 1.0x, charged DESCRIPTION_FACTOR, not the schemas' factor.
    let described: u64 = tools
        .iter()
        .filter_map(|t| t.function.description.as_ref())
        .map(|d| d.len() as u64)
        .sum();
    let described = described.min(text_len as u64);
    (text_len as u64 - described)
        .saturating_mul(BYTES_FACTOR + 1)
        .saturating_add(described.saturating_mul(DESCRIPTION_FACTOR))
        .saturating_add(PER_TOOL.saturating_mul(tools.len() as u64))
        .saturating_add(PER_REGEX.saturating_mul(regexes))
}

/// Regexes a schema may compile: `pattern` strings and `patternProperties` keys, at any
/// depth (walked without recursion: the depth is the client's).
fn regex_count(schema: &Value) -> u64 {
    let mut count = 0u64;
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    match (k.as_str(), child) {
                        ("pattern", Value::String(_)) => count += 1,
                        ("patternProperties", Value::Object(p)) => count += p.len() as u64,
                        _ => {}
                    }
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    count
}

/// Why a declaration was not compiled: larger than any request may compile (a `400`), or
/// not now, the budget being held by other requests' tools (a `503`, to retry).
pub type CompileRefused = crate::budget::Refused;

/// The default budget for compiled tools alive at once (`tools_memory_mib`).
pub const DEFAULT_BUDGET_MIB: u64 = 128;

/// Weighs an entry by its estimate.
#[derive(Debug, Clone, Copy)]
struct ByEstimate;

impl quick_cache::Weighter<Arc<str>, Arc<CompiledTools>> for ByEstimate {
    fn weight(&self, _key: &Arc<str>, tools: &Arc<CompiledTools>) -> u64 {
        tools.weight.max(1)
    }
}

/// Compiled tools by declaration, weighed by their estimated heap; see the module doc.
pub struct ToolsCache {
    cache: quick_cache::sync::Cache<Arc<str>, Arc<CompiledTools>, ByEstimate>,
    /// The estimated heap compiled tools alive may take; one request at most half.
    budget: MemoryBudget,
    /// Chat requests' `tools` as decoded, by their text ([`DecodedTools`]).
    pub decoded: DecodedTools,
}

/// Most texts [`DecodedTools`] keeps.
const DECODED_KEPT: usize = 16;
/// Most bytes of text [`DecodedTools`] keeps, all texts together: their decoded form is at
/// most about 140 times their text (`crate::body`'s measures of decoded JSON), so at most
/// about 9 MB, and about 30 times (2 MB) for tool declarations.
const DECODED_TEXT_BYTES: usize = 64 * 1024;

/// Chat requests' `tools` as decoded, by their exact JSON text, for
/// [`toolcall_wire::chat::decode_request_keeping_tools`]: a copy of decoded tools costs less
/// than half their decode (6.8 k instructions against 15.0 k for one tool of two
/// properties), and clients send the same `tools` with every request of a conversation.
/// The last [`DECODED_KEPT`] texts used, within [`DECODED_TEXT_BYTES`].
#[derive(Default)]
pub struct DecodedTools {
    kept: std::sync::Mutex<Vec<KeptTools>>,
}

/// A `tools` text and its decoded tools.
type KeptTools = (Box<str>, Arc<Vec<ChatTool>>);

impl toolcall_wire::chat::ToolsMemo for DecodedTools {
    fn get(&self, text: &str) -> Option<Vec<ChatTool>> {
        let tools = {
            let mut kept = self.kept.lock().ok()?;
            let at = kept.iter().position(|(t, _)| **t == *text)?;
            // The last used goes last: the first is the one dropped.
            kept[at..].rotate_left(1);
            kept.last()?.1.clone()
        };
        Some(tools.as_ref().clone())
    }

    fn put(&self, text: &str, tools: &[ChatTool]) {
        if text.len() > DECODED_TEXT_BYTES / 4 {
            return;
        }
        let tools = Arc::new(tools.to_vec());
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.iter().any(|(t, _)| **t == *text) {
            return;
        }
        let mut bytes: usize = kept.iter().map(|(t, _)| t.len()).sum::<usize>() + text.len();
        while !kept.is_empty() && (kept.len() >= DECODED_KEPT || bytes > DECODED_TEXT_BYTES) {
            bytes -= kept.remove(0).0.len();
        }
        kept.push((text.into(), tools));
    }
}

impl std::fmt::Debug for ToolsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsCache")
            .field("entries", &self.cache.len())
            .field("weight", &self.cache.weight())
            .field("budget_kib", &self.budget.total_kib())
            .finish()
    }
}

impl Default for ToolsCache {
    fn default() -> Self {
        ToolsCache::new(DEFAULT_BUDGET_MIB * 1024 * 1024)
    }
}

/// The cache's options: one shard, as quick_cache splits the weight capacity between its
/// shards (4 per CPU by default) and never keeps an entry heavier than one shard's share,
/// so a large declaration on a many-core host would never be kept.
fn options(weight_capacity: u64) -> quick_cache::Options {
    let mut options = quick_cache::OptionsBuilder::new();
    options
        .estimated_items_capacity(256)
        .weight_capacity(weight_capacity)
        .shards(1);
    // Only a zero capacity or item count fails to build, and neither is.
    options
        .build()
        .unwrap_or_else(|_| unreachable!("non-zero cache options"))
}

impl ToolsCache {
    /// A cache for compiled tools of at most `budget_bytes` estimated heap alive at once,
    /// half of it kept for reuse.
    pub fn new(budget_bytes: u64) -> Self {
        let half = kib(budget_bytes).max(2) / 2 * 1024;
        ToolsCache {
            cache: quick_cache::sync::Cache::with_options(
                options(half),
                ByEstimate,
                Default::default(),
                Default::default(),
            ),
            budget: MemoryBudget::new(Budgeted::Tools, budget_bytes.max(2048), half),
            decoded: DecodedTools::default(),
        }
    }

    /// The compiled form of `tools`, compiled now unless an identical declaration is kept.
    pub fn get(&self, tools: &[ChatTool]) -> Result<Arc<CompiledTools>, CompileRefused> {
        if tools.is_empty() {
            return Ok(Arc::new(CompiledTools::default()));
        }
        thread_local! {
            /// The declaration's text is written here, so a hit allocates nothing.
            static KEY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        // A declaration always serialises (strings and JSON values); an empty key would
        // only make it uncacheable, never unbounded: it is still estimated from its parts.
        let (hit, key) = KEY.with_borrow_mut(|buf| {
            buf.clear();
            let text = match serde_json::to_writer(&mut *buf, tools) {
                Ok(()) => std::str::from_utf8(buf).unwrap_or_default(),
                Err(_) => "",
            };
            let hit = self.cache.get(text);
            let key: Option<Arc<str>> = hit.is_none().then(|| text.into());
            // A buffer grown by one large declaration is not kept.
            if buf.capacity() > 64 * 1024 {
                *buf = Vec::new();
            }
            (hit, key)
        });
        if let Some(hit) = hit {
            return Ok(hit);
        }
        let key = key.unwrap_or_else(|| Arc::from(""));
        let weight = estimate(tools, key.len());
        // Not waited for: requests are answered synchronously here, and a waiting request
        // would still hold its body.
        let share = self.budget.try_take(weight)?;
        // Compiled outside any lock: concurrent misses on one declaration compile twice
        // (each within the budget), and never block other requests behind a compile.
        let mut compiled = CompiledTools::compile(tools);
        compiled.weight = weight;
        compiled._budget = Some(share);
        let compiled = Arc::new(compiled);
        if !key.is_empty() {
            self.cache.insert(key, compiled.clone());
        }
        Ok(compiled)
    }

    /// How many declarations are kept.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The estimated heap of the declarations kept, in bytes.
    pub fn weight(&self) -> u64 {
        self.cache.weight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use toolcall_core::ToolCall;

    #[test]
    fn decoded_tools_are_kept_by_text_within_their_bounds() {
        use toolcall_wire::chat::ToolsMemo;
        let memo = DecodedTools::default();
        let one = tools(json!({"type": "object"}));
        for i in 0..DECODED_KEPT + 4 {
            memo.put(&format!("[{i}]"), &one);
        }
        assert_eq!(memo.kept.lock().unwrap().len(), DECODED_KEPT);
        // The oldest went first; a use makes a text the last to go.
        assert!(memo.get("[0]").is_none());
        assert_eq!(memo.get("[4]"), Some(one.clone()));
        memo.put("[new]", &one);
        assert!(memo.get("[4]").is_some() && memo.get("[5]").is_none());
        // A text over a quarter of the bytes is not kept; the bytes kept stay bounded.
        memo.put(&" ".repeat(DECODED_TEXT_BYTES / 4 + 1), &one);
        assert!(
            memo.kept
                .lock()
                .unwrap()
                .iter()
                .all(|(t, _)| !t.starts_with(' '))
        );
        for i in 0..8 {
            memo.put(
                &format!("{i}{}", " ".repeat(DECODED_TEXT_BYTES / 4 - 1)),
                &one,
            );
        }
        let kept = memo.kept.lock().unwrap();
        assert!(kept.iter().map(|(t, _)| t.len()).sum::<usize>() <= DECODED_TEXT_BYTES);
        assert!(kept.iter().any(|(t, _)| t.starts_with('7')));
    }

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
        let a = cache.get(&tools(schema.clone())).unwrap();
        let b = cache.get(&tools(schema)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_changed_schema_gets_its_own_validator() {
        let cache = ToolsCache::default();
        let strict = json!({"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false});
        let loose = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let first = cache.get(&tools(strict.clone())).unwrap();
        assert!(!accepts(&first, json!({"town": "Paris"})));
        // Same tool name, same size class, different schema: never the stale validator.
        let changed = cache.get(&tools(loose)).unwrap();
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(accepts(&changed, json!({"town": "Paris"})));
        // And the first declaration still gets its own.
        assert!(!accepts(
            &cache.get(&tools(strict)).unwrap(),
            json!({"town": "Paris"})
        ));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_changed_description_is_another_declaration() {
        let cache = ToolsCache::default();
        let mut t = tools(json!({"type": "object"}));
        let a = cache.get(&t).unwrap();
        t[0].function.description = Some("Weather now.".into());
        let b = cache.get(&t).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
    }

    /// `n` distinct one-tool declarations of about `size` bytes of text each.
    fn distinct(n: usize, size: usize) -> Vec<Vec<ChatTool>> {
        (0..n)
            .map(|i| tools(json!({"type": "object", "description": format!("{i:0size$}")})))
            .collect()
    }

    #[test]
    fn what_is_kept_is_bounded_by_its_estimated_compiled_size() {
        // Half of 4 MiB kept: about 20 declarations of 1 KB text (~100 KB estimated each).
        let cache = ToolsCache::new(4 * 1024 * 1024);
        for d in distinct(200, 1000) {
            let compiled = cache.get(&d).unwrap();
            assert!(compiled.weight >= 96 * 1000);
        }
        assert!(cache.weight() <= 2 * 1024 * 1024, "{cache:?}");
        assert!(cache.len() < 30, "{cache:?}");
        assert!(cache.len() > 5, "{cache:?}");
        // A declaration used again is found again.
        let d = tools(json!({"type": "object", "title": "kept"}));
        let a = cache.get(&d).unwrap();
        assert!(Arc::ptr_eq(&a, &cache.get(&d).unwrap()));
    }

    #[test]
    fn a_declaration_over_half_the_budget_is_refused_and_alive_ones_hold_theirs() {
        let cache = ToolsCache::new(4 * 1024 * 1024);
        // ~3 MiB estimated: over half the budget.
        let big = tools(json!({"type": "object", "description": "x".repeat(32 * 1024)}));
        assert!(matches!(
            cache.get(&big),
            Err(CompileRefused::TooLarge { .. })
        ));
        // Three of ~1.2 MiB each, held by requests: a fourth alive at once does not fit
        // the 4 MiB.
        let all = distinct(4, 12 * 1024);
        let held: Vec<_> = all[..3].iter().map(|d| cache.get(d).unwrap()).collect();
        assert_eq!(
            cache.get(&all[3]).err(),
            Some(CompileRefused::Busy {
                what: Budgeted::Tools
            })
        );
        // Once the requests are done, what the cache could not keep is given back.
        drop(held);
        assert!(cache.get(&all[3]).is_ok(), "{cache:?}");
        let e: crate::ApiError = CompileRefused::Busy {
            what: Budgeted::Tools,
        }
        .into();
        assert_eq!(e.status, 503);
        assert_eq!(e.retry_after, Some(1));
    }

    #[test]
    fn regexes_are_charged_at_any_depth() {
        let t = tools(json!({"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^x"},
            "b": {"type": "array", "items": {"type": "object",
                "patternProperties": {"^p": {}, "^q": {"pattern": "y"}}}}
        }}));
        assert_eq!(regex_count(t[0].function.parameters.as_ref().unwrap()), 4);
        assert!(estimate(&t, 10) >= 4 * PER_REGEX);
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
        let c = cache.get(&t).unwrap();
        assert!(c.unchecked.contains("has space"));
        assert!(c.unchecked.contains("bad_schema"));
        assert!(c.registry.contains("ok"));
        assert!(cache.get(&[]).unwrap().registry.is_empty());
    }
}
