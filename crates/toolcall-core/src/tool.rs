//! What runs: the [`Tool`] trait, and [`Transactional`] for stateful tools.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::call::CallId;
use crate::result::{ToolError, ToolOutput};
use crate::spec::ToolSpec;

/// What a tool knows about the call it serves.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    pub call_id: Option<CallId>,
    pub session_id: Option<String>,
    /// Metadata carried with the call (e.g. a slash command's `context_id`).
    pub metadata: Map<String, Value>,
}

impl ToolContext {
    pub fn for_call(call_id: CallId) -> Self {
        ToolContext {
            call_id: Some(call_id),
            ..Self::default()
        }
    }
}

/// A tool implementation. Arguments arrive already validated against [`Tool::spec`].
///
/// Errors are results for the model, never panics; the executor still isolates panics.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError>;
}

/// A tool over a state `S`: it edits the state it is given, and that edit is kept only
/// when it returns `Ok` (clone, edit, then commit).
pub trait StateTool<S>: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn apply(
        &self,
        state: &mut S,
        ctx: &ToolContext,
        arguments: Value,
    ) -> Result<ToolOutput, ToolError>;
}

/// Wraps a [`StateTool`] over shared state into a [`Tool`] that commits only on success:
/// a failed (or panicking) call leaves the state exactly as it was.
pub struct Transactional<S, T> {
    state: Arc<Mutex<S>>,
    tool: T,
}

impl<S, T> Transactional<S, T> {
    pub fn new(state: Arc<Mutex<S>>, tool: T) -> Self {
        Transactional { state, tool }
    }
}

#[async_trait]
impl<S, T> Tool for Transactional<S, T>
where
    S: Clone + Send + 'static,
    T: StateTool<S>,
{
    fn spec(&self) -> ToolSpec {
        self.tool.spec()
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        // A poisoned lock means a tool panicked on a *copy*; the committed state is intact.
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut draft = guard.clone();
        let out = self.tool.apply(&mut draft, ctx, arguments)?;
        *guard = draft;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Push;
    impl StateTool<Vec<i64>> for Push {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("push", "push a number", json!({"type":"object"}))
        }
        fn apply(
            &self,
            s: &mut Vec<i64>,
            _: &ToolContext,
            a: Value,
        ) -> Result<ToolOutput, ToolError> {
            let n = a["n"]
                .as_i64()
                .ok_or_else(|| ToolError::failed("n missing"))?;
            s.push(n);
            if n < 0 {
                return Err(ToolError::failed("negative numbers are refused"));
            }
            Ok(json!(s.len()).into())
        }
    }

    //
    #[tokio::test]
    async fn failed_call_leaves_state_unchanged() {
        let state = Arc::new(Mutex::new(vec![1]));
        let tool = Transactional::new(state.clone(), Push);
        let ctx = ToolContext::default();
        assert!(tool.call(&ctx, json!({"n": 2})).await.is_ok());
        assert!(tool.call(&ctx, json!({"n": -3})).await.is_err());
        assert_eq!(*state.lock().unwrap(), vec![1, 2]);
    }
}
