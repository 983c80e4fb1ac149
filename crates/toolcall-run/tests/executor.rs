//! Executor: one result per call in call order, every error code, timeouts, panics,
//! transactions, jobs, approval (redacted tracing is in `tracing_events.rs`).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::{
    ErrorCode, Registry, StateTool, Tool, ToolCall, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolSpec, Transactional,
};
use toolcall_run::{ApproveAll, ApproveWith, Executor, SessionContext};

/// A tool whose behaviour is chosen by its `mode` argument.
struct Probe {
    spec: ToolSpec,
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    async fn call(&self, ctx: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        match a["mode"].as_str().unwrap_or("ok") {
            "fail" => Err(ToolError::failed("it broke")),
            "panic" => panic!("probe exploded"),
            "hang" => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(json!("never").into())
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(a["ms"].as_u64().unwrap_or(50))).await;
                Ok(json!({"slept": true, "call_id": ctx.call_id}).into())
            }
            "big" => Ok(json!("x".repeat(10_000)).into()),
            _ => Ok(json!({"echo": a, "call_id": ctx.call_id}).into()),
        }
    }
}

fn probe(name: &str) -> Arc<dyn Tool> {
    Arc::new(Probe {
        spec: ToolSpec::new(name, "probe", json!({"type":"object"})),
    })
}

fn probe_spec(spec: ToolSpec) -> Arc<dyn Tool> {
    Arc::new(Probe { spec })
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    let mut c = ToolCall::new(name, args, "test");
    c.call_id = id.into();
    c
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_tool(probe("probe")).unwrap();
    r.add_tool(probe("off")).unwrap();
    r.set_enabled("off", false).unwrap();
    r.add_spec(ToolSpec::new(
        "declared_only",
        "no handler",
        json!({"type":"object"}),
    ))
    .unwrap();
    r.add_tool(probe_spec(
        ToolSpec::new("quick", "", json!({"type":"object"}))
            .with_timeout(Duration::from_millis(100)),
    ))
    .unwrap();
    r.add_tool(probe_spec(
        ToolSpec::new("guarded", "", json!({"type":"object"})).requiring_approval(),
    ))
    .unwrap();
    r
}

fn code(r: &toolcall_core::ToolResult) -> Option<ErrorCode> {
    r.outcome.as_ref().err().map(|e| e.code)
}

// covers, V-3
#[tokio::test]
async fn one_result_per_call_in_order_for_every_outcome() {
    let ex = Executor::new(Arc::new(registry())).with_max_output_bytes(1000);
    let calls = vec![
        call("c1", "probe", json!({"n": 1})),
        call("c2", "nope", json!({})),
        call("c3", "off", json!({})),
        call("c4", "probe", json!({"mode": "fail"})),
        call("c5", "probe", json!({"mode": "panic"})),
        call("c6", "quick", json!({"mode": "hang"})),
        call("c7", "declared_only", json!({})),
        call("c8", "guarded", json!({})),
        call("c9", "probe", json!("{\"mode\":")),
        call("c10", "probe", json!({"mode": "big"})),
        call("c11", "probe", json!({"n": 11})),
    ];
    let t0 = Instant::now();
    let results = ex.execute(calls, &SessionContext::default()).await;
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "a hung tool stalled the executor"
    );
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11"
        ]
    );
    let codes: Vec<Option<ErrorCode>> = results.iter().map(code).collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ErrorCode::UnknownTool),
            Some(ErrorCode::ToolDisabled),
            Some(ErrorCode::ToolFailed),
            Some(ErrorCode::ToolPanicked),
            Some(ErrorCode::Timeout),
            Some(ErrorCode::ToolFailed),
            Some(ErrorCode::Denied),
            Some(ErrorCode::InvalidArguments),
            Some(ErrorCode::ToolFailed),
            None,
        ]
    );
    assert_eq!(
        results[0].to_json(),
        json!({"status":"ok","data":{"echo":{"n":1},"call_id":"c1"}})
    );
    let unknown = &results[1].outcome.as_ref().unwrap_err().message;
    assert!(
        unknown.contains("probe") && unknown.contains("guarded"),
        "{unknown}"
    );
    assert!(
        results[4]
            .outcome
            .as_ref()
            .unwrap_err()
            .message
            .contains("probe exploded")
    );
    assert!(
        results[6]
            .outcome
            .as_ref()
            .unwrap_err()
            .message
            .contains("no implementation")
    );
    assert!(
        results[9]
            .outcome
            .as_ref()
            .unwrap_err()
            .message
            .contains("limit")
    );
}

//
#[tokio::test]
async fn a_tool_that_sleeps_forever_times_out_at_its_limit() {
    let ex = Executor::new(Arc::new(registry()));
    let t0 = Instant::now();
    let r = ex
        .execute(
            vec![call("h", "quick", json!({"mode":"hang"}))],
            &SessionContext::default(),
        )
        .await;
    let took = t0.elapsed();
    assert_eq!(code(&r[0]), Some(ErrorCode::Timeout));
    // The tool's own 100 ms limit applied, not the executor's 30 s default: the upper
    // bound only tells the two apart (loose enough for any loaded machine).
    assert!(
        took >= Duration::from_millis(100) && took < Duration::from_secs(20),
        "{took:?}"
    );
    // The default applies to tools without their own timeout.
    let ex = Executor::new(Arc::new(registry())).with_default_timeout(Duration::from_millis(50));
    let r = ex
        .execute(
            vec![call("h2", "probe", json!({"mode":"hang"}))],
            &SessionContext::default(),
        )
        .await;
    assert_eq!(code(&r[0]), Some(ErrorCode::Timeout));
}

//
#[tokio::test]
async fn calls_run_sequentially_in_the_given_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    struct Rec(Arc<Mutex<Vec<String>>>);
    #[async_trait]
    impl Tool for Rec {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("rec", "", json!({"type":"object"}))
        }
        async fn call(&self, _: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
            // Earlier calls sleep longer: concurrent execution would reorder the log.
            let ms = a["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.0
                .lock()
                .unwrap()
                .push(a["tag"].as_str().unwrap_or("").to_owned());
            Ok(json!(null).into())
        }
    }
    let mut r = Registry::new();
    r.add_tool(Arc::new(Rec(log.clone()))).unwrap();
    let ex = Executor::new(Arc::new(r));
    let calls = (0..5)
        .map(|i| {
            call(
                &format!("r{i}"),
                "rec",
                json!({"tag": format!("t{i}"), "ms": 50 - i * 10}),
            )
        })
        .collect();
    ex.execute(calls, &SessionContext::default()).await;
    assert_eq!(*log.lock().unwrap(), ["t0", "t1", "t2", "t3", "t4"]);
}

//
#[tokio::test]
async fn transactional_tools_commit_only_on_success_even_when_they_panic() {
    #[derive(Clone, Default, Debug, PartialEq)]
    struct Inventory(Vec<String>);
    struct Take;
    impl StateTool<Inventory> for Take {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("take", "", json!({"type":"object"}))
        }
        fn apply(
            &self,
            s: &mut Inventory,
            _: &ToolContext,
            a: Value,
        ) -> Result<ToolOutput, ToolError> {
            let item = a["item"].as_str().unwrap_or_default().to_owned();
            s.0.push(item.clone());
            match item.as_str() {
                "cursed" => Err(ToolError::failed("the item resists")),
                "bomb" => panic!("boom"),
                _ => Ok(json!({"held": s.0.len()}).into()),
            }
        }
    }
    let state = Arc::new(Mutex::new(Inventory::default()));
    let mut r = Registry::new();
    r.add_tool(Arc::new(Transactional::new(state.clone(), Take)))
        .unwrap();
    let ex = Executor::new(Arc::new(r));
    let results = ex
        .execute(
            vec![
                call("a", "take", json!({"item":"key"})),
                call("b", "take", json!({"item":"cursed"})),
                call("c", "take", json!({"item":"bomb"})),
                call("d", "take", json!({"item":"lamp"})),
            ],
            &SessionContext::default(),
        )
        .await;
    let codes: Vec<_> = results.iter().map(code).collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ErrorCode::ToolFailed),
            Some(ErrorCode::ToolPanicked),
            None
        ]
    );
    let s = state.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(s.0, ["key", "lamp"]);
}

/// A job that finishes only when the test opens its gate, or fails at once when asked to.
struct GatedJob(Arc<tokio::sync::Notify>);

#[async_trait]
impl Tool for GatedJob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("slow_job", "", json!({"type":"object"})).with_kind(ToolKind::Job)
    }
    async fn call(&self, ctx: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        if a["mode"] == "fail" {
            return Err(ToolError::failed("it broke"));
        }
        self.0.notified().await;
        Ok(json!({"slept": true, "call_id": ctx.call_id}).into())
    }
}

//
#[tokio::test]
async fn jobs_answer_at_once_and_deliver_later_under_the_same_call_id() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut r = Registry::new();
    r.add_tool(Arc::new(GatedJob(gate.clone()))).unwrap();
    let ex = Executor::new(Arc::new(r));
    // The gate opens only after `execute` returns: an executor that waited for its jobs
    // would never return, and the timeout turns that into a failure instead of a hang.
    let res = tokio::time::timeout(
        Duration::from_secs(60),
        ex.execute(
            vec![
                call("j1", "slow_job", json!({})),
                call("j2", "slow_job", json!({"mode":"fail"})),
            ],
            &SessionContext::default(),
        ),
    )
    .await
    .expect("execute waited for a job to finish");
    assert_eq!(
        res[0].to_json(),
        json!({"status":"ok","data":{"job_id":"job_j1","state":"running"}})
    );
    assert_eq!(ex.pending_jobs().await, 2);
    gate.notify_one();
    let mut done = ex.wait_jobs(Duration::from_secs(60)).await;
    done.sort_by(|a, b| a.result.call_id.cmp(&b.result.call_id));
    assert_eq!(done.len(), 2);
    assert_eq!(done[0].result.call_id.as_str(), "j1");
    assert_eq!(done[0].result.to_json()["data"]["slept"], json!(true));
    assert_eq!(code(&done[1].result), Some(ErrorCode::ToolFailed));
    assert!(ex.finished_jobs().await.is_empty());
    assert_eq!(ex.pending_jobs().await, 0);
}

//
#[tokio::test]
async fn approval_hook_decides_per_call() {
    let ex = Executor::new(Arc::new(registry())).with_approver(Arc::new(ApproveWith(
        |c: &ToolCall, _: &ToolSpec| c.arguments["please"] == json!(true),
    )));
    let r = ex
        .execute(
            vec![
                call("a", "guarded", json!({"please": true})),
                call("b", "guarded", json!({})),
            ],
            &SessionContext::default(),
        )
        .await;
    assert!(r[0].is_ok());
    assert_eq!(code(&r[1]), Some(ErrorCode::Denied));
    let ex = Executor::new(Arc::new(registry())).with_approver(Arc::new(ApproveAll));
    let r = ex
        .execute(
            vec![call("c", "guarded", json!({}))],
            &SessionContext::default(),
        )
        .await;
    assert!(r[0].is_ok());
}
