//! JSON Schema helpers the dialects and the validator share.

use serde_json::Value;

/// Most `$ref` hops followed from one node.
pub const MAX_REF_HOPS: usize = 8;

/// Follows local `$ref`s (`#/...`) to the schema node they name, at most [`MAX_REF_HOPS`]
/// hops; a node with no local `$ref`, or one naming nothing, is returned as it is.
pub fn resolve_local_ref<'a>(mut node: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..MAX_REF_HOPS {
        let Some(r) = node.get("$ref").and_then(Value::as_str) else {
            return node;
        };
        let Some(ptr) = r.strip_prefix('#') else {
            return node;
        };
        match root.pointer(ptr) {
            Some(target) => node = target,
            None => return node,
        }
    }
    node
}
