//! Program and HTTP tool backends against real processes and a real HTTP server on loopback.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use toolcall_core::{Backend, CallId, ErrorCode, Registry, Tool, ToolCall, ToolContext, ToolSpec};
use toolcall_packs::backend::http::MAX_REDIRECTS;
use toolcall_packs::backend::{
    BackendError, HttpTool, HttpToolClient, ProgramTool, attach_backends,
};

fn program(argv: &[&str]) -> ProgramTool {
    let spec = ToolSpec {
        backend: Some(Backend::Program {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
        }),
        ..ToolSpec::new("prog", "a program tool", json!({"type":"object"}))
    };
    ProgramTool::new(spec).unwrap()
}

fn ctx() -> ToolContext {
    ToolContext::for_call(CallId::from("call_test_1"))
}

// covers X-3, P-APP (never through a shell)
#[tokio::test]
async fn arguments_reach_the_program_verbatim_on_stdin() {
    let tool = program(&["cat"]);
    let args =
        json!({"cmd": "; rm -rf / && echo $(whoami) `id` | tee /tmp/x", "n": 1.5, "q": "\"'\n"});
    let out = tool.call(&ctx(), args.clone()).await.unwrap();
    assert_eq!(out.data, args);
}

// covers X-2
#[tokio::test]
async fn program_sees_call_id_and_tool_name() {
    let tool = program(&[
        "sh",
        "-c",
        r#"printf '{"id":"%s","tool":"%s"}' "$TOOLCALL_CALL_ID" "$TOOLCALL_TOOL""#,
    ]);
    let out = tool.call(&ctx(), json!({})).await.unwrap();
    assert_eq!(out.data, json!({"id": "call_test_1", "tool": "prog"}));
}

// covers X-3
#[tokio::test]
async fn nonzero_exit_is_tool_failed_with_stderr_tail() {
    let tool = program(&[
        "sh",
        "-c",
        "cat >/dev/null; echo 'disk on fire' >&2; exit 3",
    ]);
    let e = tool.call(&ctx(), json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(e.message.contains("status 3"), "{}", e.message);
    assert!(e.message.contains("disk on fire"), "{}", e.message);
    assert_eq!(e.details.unwrap()["exit_code"], 3);
}

// covers X-3
#[tokio::test]
async fn stderr_tail_is_bounded() {
    let tool = program(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 5000 ]; do echo \"line $i of noise\" >&2; i=$((i+1)); done; echo LAST >&2; exit 1",
    ]);
    let e = tool.call(&ctx(), json!({})).await.unwrap_err();
    assert!(e.message.ends_with("LAST"), "{}", e.message);
    assert!(e.message.len() < 2048 + 200, "{}", e.message.len());
    assert!(!e.message.contains("line 0 of noise"));
}

// covers X-3
#[tokio::test]
async fn non_json_stdout_is_tool_failed() {
    let tool = program(&["sh", "-c", "echo 'not json'; echo warn >&2"]);
    let e = tool.call(&ctx(), json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(
        e.message.contains("not JSON") && e.message.contains("warn"),
        "{}",
        e.message
    );
    assert_eq!(e.details.unwrap()["stdout"], "not json");
}

// covers X-3
#[tokio::test]
async fn blank_stdout_is_null_data_and_program_may_ignore_stdin() {
    let tool = program(&["true"]);
    let out = tool
        .call(&ctx(), json!({"big": "x".repeat(1 << 20)}))
        .await
        .unwrap();
    assert_eq!(out.data, Value::Null);
}

// covers X-3
#[tokio::test]
async fn oversized_output_is_refused() {
    let tool =
        program(&["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' 'a'"]).with_max_output(1000);
    let e = tool.call(&ctx(), json!({})).await.unwrap_err();
    assert!(e.message.contains("larger than 1000"), "{}", e.message);
}

// covers X-3
#[tokio::test]
async fn missing_program_is_tool_failed() {
    let tool = program(&["/nonexistent/toolcall-test-program"]);
    let e = tool.call(&ctx(), json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(e.message.contains("cannot start"), "{}", e.message);
}

// covers R-9
#[tokio::test]
async fn dropping_the_call_kills_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 600", pidfile.display());
    let tool = program(&["sh", "-c", &script]);
    let pid = drop_once_written(tool.call(&ctx(), json!({})), &pidfile).await;
    // The child is killed on drop and then reaped; wait for /proc to show it gone or dead.
    let started = std::time::Instant::now();
    while !ended(pid) {
        assert!(
            started.elapsed() < HANG_GUARD,
            "program {pid} still running"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A hang guard, never a speed claim: far below the programs' own 600 s sleeps.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Polls `call` until `pidfile` holds a pid, then drops it (as the executor's timeout does)
/// and returns the pid: a gate, not a timer, so the program surely ran that far.
async fn drop_once_written<F: std::future::Future>(call: F, pidfile: &std::path::Path) -> i32 {
    let started = std::time::Instant::now();
    let mut call = std::pin::pin!(call);
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "the program never wrote {}",
            pidfile.display()
        );
        tokio::select! {
            _ = &mut call => panic!("the program ended before the call was dropped"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

// covers V-1
#[test]
fn bad_program_config_is_refused() {
    let spec = ToolSpec {
        backend: Some(Backend::Program {
            argv: vec![],
            env: BTreeMap::new(),
        }),
        ..ToolSpec::new("p", "", json!({}))
    };
    assert!(matches!(
        ProgramTool::new(spec),
        Err(BackendError::Config { .. })
    ));
}

/// A loopback server: `/echo` returns the body and selected headers, `/fail` 500s,
/// `/text` answers non-JSON, `/big` a large body.
async fn server() -> String {
    let app = Router::new()
        .route(
            "/echo",
            post(|headers: HeaderMap, body: String| async move {
                let h = |n: &str| {
                    headers
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned()
                };
                let args: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                axum::Json(json!({
                    "args": args,
                    "auth": h("authorization"),
                    "call_id": h("x-toolcall-call-id"),
                    "content_type": h("content-type"),
                }))
            }),
        )
        .route(
            "/fail",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "database exploded") }),
        )
        .route("/text", post(|| async { "hello, not json" }))
        .route("/big", post(|| async { "x".repeat(100_000) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

fn http_spec(url: String, headers: &[(&str, &str)]) -> ToolSpec {
    ToolSpec {
        backend: Some(Backend::Http {
            url,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }),
        ..ToolSpec::new("web", "", json!({"type":"object"}))
    }
}

fn http(url: String, headers: &[(&str, &str)]) -> HttpTool {
    let env = |n: &str| (n == "TEST_TOKEN").then(|| "tok123".to_owned());
    HttpTool::with_env(http_spec(url, headers), HttpToolClient::new().unwrap(), env).unwrap()
}

// covers X-3, X-2
#[tokio::test]
async fn http_posts_arguments_and_returns_json() {
    let base = server().await;
    let tool = http(
        format!("{base}/echo"),
        &[("Authorization", "Bearer ${TEST_TOKEN}")],
    );
    let args = json!({"q": "; rm -rf /", "n": [1, 2]});
    let out = tool.call(&ctx(), args.clone()).await.unwrap();
    assert_eq!(
        out.data,
        json!({"args": args, "auth": "Bearer tok123", "call_id": "call_test_1", "content_type": "application/json"})
    );
}

// covers X-3
#[tokio::test]
async fn http_errors_are_tool_failed() {
    let base = server().await;
    let e = http(format!("{base}/fail"), &[])
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(
        e.message.contains("500") && e.message.contains("database exploded"),
        "{}",
        e.message
    );
    assert_eq!(e.details.unwrap()["status"], 500);

    let e = http(format!("{base}/text"), &[])
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("not JSON") && e.message.contains("hello"),
        "{}",
        e.message
    );

    let e = http(format!("{base}/big"), &[])
        .with_max_response(1000)
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert!(e.message.contains("larger than 1000"), "{}", e.message);

    let e = http(format!("{base}/missing"), &[])
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert!(e.message.contains("404"), "{}", e.message);

    // nothing listens on port 1
    let e = http("http://127.0.0.1:1/x".into(), &[])
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert!(e.message.contains("request failed"), "{}", e.message);
}

// covers V-1
#[test]
fn bad_http_config_is_refused() {
    let client = HttpToolClient::new().unwrap();
    for (url, headers) in [
        ("ftp://127.0.0.1/x", vec![]),
        ("not a url", vec![]),
        ("http://127.0.0.1/x", vec![("bad header", "v")]),
        (
            "http://127.0.0.1/x",
            vec![("x-key", "${TOOLCALL_TEST_UNSET_VAR}")],
        ),
    ] {
        let r = HttpTool::new(http_spec(url.into(), &headers), client.clone());
        assert!(
            matches!(r, Err(BackendError::Config { .. })),
            "{url} {headers:?}"
        );
    }
}

// covers V-1, X-3: a tools file with backends becomes runnable in one call
#[tokio::test]
async fn attach_backends_from_a_tools_file() {
    let base = server().await;
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/backend_tools.json"
        ))
        .unwrap()
        .replace("{BASE}", &base),
    )
    .unwrap();
    let mut registry = Registry::from_tools_json(&doc).unwrap();
    registry
        .add_spec(ToolSpec::new("plain", "no backend", json!({})))
        .unwrap();
    attach_backends(&mut registry).unwrap();
    assert!(registry.get("plain").unwrap().handler.is_none());

    let mut call = ToolCall::new("echo.stdin", json!({"text": "hi", "times": "2"}), "test");
    registry.validate_call(&mut call).unwrap();
    let handler: Arc<dyn Tool> = registry.get("echo.stdin").unwrap().handler.clone().unwrap();
    let out = handler.call(&ctx(), call.arguments.clone()).await.unwrap();
    assert_eq!(out.data, json!({"text": "hi", "times": 2}));

    let handler = registry.get("web::echo").unwrap().handler.clone().unwrap();
    let out = handler.call(&ctx(), json!({"q": "x"})).await.unwrap();
    assert_eq!(out.data["args"], json!({"q": "x"}));
}

// covers V-1
#[test]
fn attach_backends_reports_bad_config_and_attaches_nothing() {
    let doc = json!([
        {"name": "good", "backend": {"type": "program", "argv": ["cat"]}},
        {"name": "bad", "backend": {"type": "http", "url": "gopher://x"}}
    ]);
    let mut registry = Registry::from_tools_json(&doc).unwrap();
    let e = attach_backends(&mut registry).unwrap_err();
    assert!(e.to_string().contains("bad"), "{e}");
    assert!(registry.get("good").unwrap().handler.is_none());
}

// covers X-3: with the `tls` feature, https URLs are supported (the failure is a connection
// error on a closed port, not "scheme not supported").
#[cfg(feature = "tls")]
#[tokio::test]
async fn https_is_supported_with_the_tls_feature() {
    let e = http("https://127.0.0.1:1/".into(), &[])
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert!(e.message.contains("request failed"), "{}", e.message);
    assert!(!e.message.contains("builder"), "{}", e.message);
}

/// Whether process `pid` has ended (gone, or a zombie waiting for its new parent).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

// covers X-3: a timed-out program's helpers do not outlive it
#[tokio::test]
async fn a_dropped_call_kills_the_programs_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let script = format!("sleep 601 & echo $! > {}; wait", pidfile.to_str().unwrap());
    let tool = program(&["sh", "-c", &script]);
    let ctx = ctx();
    // Dropped the way the executor's timeout drops it.
    let pid = drop_once_written(tool.call(&ctx, json!({})), &pidfile).await;
    let started = std::time::Instant::now();
    while !ended(pid) {
        assert!(
            started.elapsed() < HANG_GUARD,
            "the helper `sleep 601` (pid {pid}) outlived the call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server whose `/hop/N` redirects (307) N times within itself before answering with the
/// headers it got, and whose `/away` redirects to `elsewhere`.
async fn redirecting_server(elsewhere: String) -> String {
    let app = Router::new()
        .route(
            "/hop/{n}",
            post(
                |axum::extract::Path(n): axum::extract::Path<u32>, headers: HeaderMap| async move {
                    if n == 0 {
                        let key = headers
                            .get("x-api-key")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned();
                        axum::Json(json!({"key": key})).into_response()
                    } else {
                        (
                            StatusCode::TEMPORARY_REDIRECT,
                            [("location", format!("/hop/{}", n - 1))],
                        )
                            .into_response()
                    }
                },
            ),
        )
        .route(
            "/away",
            post(move || async move {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [("location", format!("{elsewhere}/steal"))],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

// covers X-7, X-3: arguments and configured headers never follow a redirect to another host
#[tokio::test]
async fn http_tools_follow_only_bounded_same_origin_redirects() {
    let stolen: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
    let seen = stolen.clone();
    let thief = Router::new().route(
        "/steal",
        post(move |headers: HeaderMap, body: String| async move {
            let key = headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            seen.lock().unwrap().push((key, body));
            axum::Json(json!({"stolen": true}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let thief_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, thief).await.unwrap();
    });
    let base = redirecting_server(thief_url).await;
    let key = [("X-Api-Key", "${TEST_TOKEN}")];

    let out = http(format!("{base}/hop/3"), &key)
        .call(&ctx(), json!({"q": 1}))
        .await
        .unwrap();
    assert_eq!(out.data, json!({"key": "tok123"}));

    let e = http(format!("{base}/hop/{}", MAX_REDIRECTS + 1), &key)
        .call(&ctx(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(e.message.contains("not followed"), "{}", e.message);

    let e = http(format!("{base}/away"), &key)
        .call(&ctx(), json!({"password": "p"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolFailed);
    assert!(
        e.message.contains("307") && e.message.contains("/steal"),
        "{}",
        e.message
    );
    assert!(
        stolen.lock().unwrap().is_empty(),
        "{:?}",
        stolen.lock().unwrap()
    );
}
