//! The executor: runs the calls of one reply in order and returns exactly one result per call,
//! in call order, under the same `call_id`.
//!
//! Every way a call can go wrong is a result, never a crash of the loop: unknown or disabled
//! tools, invalid arguments, a spec without an implementation, a denied approval, a timeout
//! a panic (the handler runs in its own task), a failure, or an oversized output.
//! Job tools answer at once with a job id and deliver their result later under the same
//! `call_id` through [`Executor::finished_jobs`] / [`Executor::wait_jobs`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use toolcall_core::{
    ErrorCode, Registry, ToolCall, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult,
    ToolSpec,
};

use crate::redact::redact;

/// Timeout for tools whose spec sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest serialised output data accepted from a tool, by default (8 MiB: room for a
/// base64 screenshot).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// What the executor knows about the session a call belongs to.
#[derive(Debug, Clone, Default)]
pub struct SessionContext {
    pub session_id: Option<String>,
    /// Metadata handed to every tool in its [`ToolContext`].
    pub metadata: Map<String, Value>,
}

/// Decides whether a tool flagged `requires_approval` may run.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn approve(&self, call: &ToolCall, spec: &ToolSpec) -> bool;
}

/// Approves everything (the CLI's `--yes`).
pub struct ApproveAll;

#[async_trait]
impl Approver for ApproveAll {
    async fn approve(&self, _: &ToolCall, _: &ToolSpec) -> bool {
        true
    }
}

/// Denies everything: the default when no approver is configured.
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn approve(&self, _: &ToolCall, _: &ToolSpec) -> bool {
        false
    }
}

/// An approver from a closure (the library callback).
pub struct ApproveWith<F>(pub F);

#[async_trait]
impl<F> Approver for ApproveWith<F>
where
    F: Fn(&ToolCall, &ToolSpec) -> bool + Send + Sync,
{
    async fn approve(&self, call: &ToolCall, spec: &ToolSpec) -> bool {
        (self.0)(call, spec)
    }
}

/// A result with how long the call took, and the call as it ran (after validation's
/// coercions, with their repairs recorded in `call.origin.repairs`).
#[derive(Debug, Clone)]
pub struct Timed {
    pub call: ToolCall,
    pub result: ToolResult,
    pub duration: Duration,
}

/// Runs calls against a registry's implementations.
pub struct Executor {
    registry: Arc<Registry>,
    default_timeout: Duration,
    max_output_bytes: usize,
    approver: Arc<dyn Approver>,
    jobs: Mutex<JoinSet<Timed>>,
}

impl Executor {
    pub fn new(registry: Arc<Registry>) -> Self {
        Executor {
            registry,
            default_timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            approver: Arc::new(DenyAll),
            jobs: Mutex::new(JoinSet::new()),
        }
    }

    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs all calls in order; one result per call, in call order, same `call_id`.
    pub async fn execute(&self, calls: Vec<ToolCall>, ctx: &SessionContext) -> Vec<ToolResult> {
        let mut out = Vec::with_capacity(calls.len());
        self.execute_with(calls, ctx, &mut |t| out.push(t.result.clone()))
            .await;
        out
    }

    /// Like [`Self::execute`], handing each result (with its duration) to `on_result` as soon
    /// as it exists, so a caller can archive it before the next call starts.
    pub async fn execute_with(
        &self,
        calls: Vec<ToolCall>,
        ctx: &SessionContext,
        on_result: &mut (dyn FnMut(&Timed) + Send),
    ) {
        for call in calls {
            let timed = self.execute_one(call, ctx).await;
            on_result(&timed);
        }
    }

    /// Runs one call (the unit [`Self::execute`] repeats).
    pub async fn execute_one(&self, call: ToolCall, ctx: &SessionContext) -> Timed {
        self.execute_one_observed(call, ctx, &mut |_, _| {}).await
    }

    /// Runs one call; `on_checked` sees the call after validation (coerced, repairs recorded)
    /// just before it runs, or with the error it is rejected with (unknown, disabled,
    /// invalid, denied), so a caller can archive it first.
    pub async fn execute_one_observed(
        &self,
        mut call: ToolCall,
        ctx: &SessionContext,
        on_checked: &mut (dyn FnMut(&ToolCall, Option<&ToolError>) + Send),
    ) -> Timed {
        let started = Instant::now();
        let call_id = call.call_id.clone();
        let name = call.name.clone();
        tracing::info!(
            target: "toolcall",
            event = "tool_call.started",
            call_id = %call_id,
            tool = %name,
            arguments = %redact(&call.arguments),
            "tool_call.started"
        );
        let prepared = self.prepare(&mut call).await;
        on_checked(&call, prepared.as_ref().err());
        let checked = call.clone();
        let result = match prepared {
            Err(e) => ToolResult::err(call_id.clone(), name.clone(), e),
            Ok(Prepared::Job(handler, timeout)) => {
                let job_id = format!("job_{}", call_id);
                let tctx = tool_context(&call, ctx);
                let max = self.max_output_bytes;
                let job_call = call.clone();
                let checked_job = call.clone();
                self.jobs.lock().await.spawn(async move {
                    let t0 = Instant::now();
                    let outcome =
                        run_handler(handler, tctx, job_call.arguments, timeout, max).await;
                    let result = ToolResult {
                        call_id: job_call.call_id,
                        name: job_call.name,
                        outcome,
                    };
                    let duration = t0.elapsed();
                    log_outcome(&result, duration, true);
                    Timed {
                        call: checked_job,
                        result,
                        duration,
                    }
                });
                ToolResult::ok(
                    call_id.clone(),
                    name.clone(),
                    json!({"job_id": job_id, "state": "running"}),
                )
            }
            Ok(Prepared::Run(handler, timeout)) => {
                let tctx = tool_context(&call, ctx);
                let outcome = run_handler(
                    handler,
                    tctx,
                    call.arguments,
                    timeout,
                    self.max_output_bytes,
                )
                .await;
                ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    outcome,
                }
            }
        };
        let duration = started.elapsed();
        log_outcome(&result, duration, false);
        Timed {
            call: checked,
            result,
            duration,
        }
    }

    async fn prepare(&self, call: &mut ToolCall) -> Result<Prepared, ToolError> {
        self.registry.validate_call(call)?;
        if !call.arguments.is_object() {
            // a call runs only with a complete arguments object.
            return Err(ToolError::new(
                ErrorCode::InvalidArguments,
                "arguments must be a JSON object",
            ));
        }
        let Some(entry) = self.registry.get(&call.name) else {
            return Err(ToolError::new(
                ErrorCode::UnknownTool,
                format!("no tool named {:?}", call.name),
            ));
        };
        let Some(handler) = entry.handler.clone() else {
            return Err(ToolError::failed(format!(
                "tool {:?} has no implementation in this process",
                call.name
            )));
        };
        let spec = &entry.spec;
        if spec.requires_approval && !self.approver.approve(call, spec).await {
            return Err(ToolError::new(
                ErrorCode::Denied,
                format!("running {:?} was not approved", call.name),
            ));
        }
        let timeout = spec.timeout.unwrap_or(self.default_timeout);
        Ok(match spec.kind {
            ToolKind::Immediate => Prepared::Run(handler, timeout),
            ToolKind::Job => Prepared::Job(handler, timeout),
        })
    }

    /// Whether job results are still outstanding.
    pub async fn pending_jobs(&self) -> usize {
        self.jobs.lock().await.len()
    }

    /// Job results that have finished since the last call, without waiting.
    pub async fn finished_jobs(&self) -> Vec<Timed> {
        let mut jobs = self.jobs.lock().await;
        let mut out = Vec::new();
        while let Some(joined) = jobs.try_join_next() {
            // A job task never panics: run_handler isolates the tool in its own task.
            if let Ok(t) = joined {
                out.push(t);
            }
        }
        out
    }

    /// Waits up to `timeout` for every outstanding job; returns those that finished.
    pub async fn wait_jobs(&self, timeout: Duration) -> Vec<Timed> {
        let mut jobs = self.jobs.lock().await;
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        while !jobs.is_empty() {
            match tokio::time::timeout_at(deadline, jobs.join_next()).await {
                Ok(Some(Ok(t))) => out.push(t),
                Ok(Some(Err(_))) => {}
                Ok(None) | Err(_) => break,
            }
        }
        out
    }
}

enum Prepared {
    Run(Arc<dyn toolcall_core::Tool>, Duration),
    Job(Arc<dyn toolcall_core::Tool>, Duration),
}

fn tool_context(call: &ToolCall, ctx: &SessionContext) -> ToolContext {
    ToolContext {
        call_id: Some(call.call_id.clone()),
        session_id: ctx.session_id.clone(),
        metadata: ctx.metadata.clone(),
    }
}

/// Runs a handler in its own task so a panic becomes `tool_panicked`, bounded by `timeout`.
async fn run_handler(
    handler: Arc<dyn toolcall_core::Tool>,
    ctx: ToolContext,
    arguments: Value,
    timeout: Duration,
    max_output_bytes: usize,
) -> Result<ToolOutput, ToolError> {
    let mut task = tokio::spawn(async move { handler.call(&ctx, arguments).await });
    let joined = match tokio::time::timeout(timeout, &mut task).await {
        Ok(joined) => joined,
        Err(_) => {
            task.abort();
            // Wait until the tool's future is dropped, so the clean-up its drop does (killing
            // a program, marking an MCP connection stale) is done before the next call runs.
            let _ = task.await;
            return Err(ToolError::new(
                ErrorCode::Timeout,
                format!("the tool did not finish within {} ms", timeout.as_millis()),
            ));
        }
    };
    let output = match joined {
        Ok(outcome) => outcome?,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            return Err(ToolError::new(
                ErrorCode::ToolPanicked,
                format!("the tool panicked: {msg}"),
            ));
        }
        Err(_) => {
            return Err(ToolError::failed("the tool's task was cancelled"));
        }
    };
    let size = serde_json::to_vec(&output.data)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > max_output_bytes {
        return Err(ToolError::failed(format!(
            "the tool's output is {size} bytes, more than the limit of {max_output_bytes}"
        )));
    }
    Ok(output)
}

fn log_outcome(result: &ToolResult, duration: Duration, job: bool) {
    let duration_ms = duration.as_millis() as u64;
    match &result.outcome {
        Ok(_) => tracing::info!(
            target: "toolcall",
            event = "tool_call.completed",
            call_id = %result.call_id,
            tool = %result.name,
            duration_ms,
            job,
            "tool_call.completed"
        ),
        Err(e) => tracing::warn!(
            target: "toolcall",
            event = "tool_call.failed",
            call_id = %result.call_id,
            tool = %result.name,
            duration_ms,
            job,
            code = %e.code,
            message = %e.message,
            "tool_call.failed"
        ),
    }
}
