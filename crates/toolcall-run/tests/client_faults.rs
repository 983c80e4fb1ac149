//! Model clients against a faulty server on loopback: retries with backoff on 429/502/503/504
//! (honouring `Retry-After`), no retry on other statuses, timeouts that say "timeout", error
//! kinds kept, and a cut stream that is an error, never a reply, and never runs a call.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_run::client::TimeoutPhase;
use toolcall_run::{
    Agent, AgentConfig, AgentError, AgentEvent, ApiClient, ClientError, Executor, Mode,
    ModelClient, RetryPolicy, Timeouts,
};

fn quick_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(2),
    }
}

fn client(url: &str, retries: u32) -> ApiClient {
    ApiClient::chat(url, "m")
        .unwrap()
        .with_transport(Timeouts::default(), quick_retries(retries))
        .unwrap()
}

fn status(code: u16, retry_after: Option<&str>) -> Answer {
    Answer::Raw {
        status: code,
        headers: retry_after
            .map(|v| vec![("retry-after", v.to_owned())])
            .unwrap_or_default(),
        body: format!("{{\"error\":{{\"message\":\"status {code}\"}}}}"),
    }
}

/// An SSE body of these chunks, ended (or not) as given.
fn sse(chunks: &[Value], end: &str) -> Answer {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str(end);
    Answer::Raw {
        status: 200,
        headers: vec![("content-type", "text/event-stream".into())],
        body,
    }
}

fn delta(d: Value) -> Value {
    json!({"choices":[{"index":0,"delta":d,"finish_reason":null}]})
}

#[tokio::test]
async fn transient_statuses_are_retried_until_an_answer() {
    let (url, script) = serve(
        vec![
            status(503, None),
            status(502, None),
            status(429, Some("0")),
            status(504, None),
            chat(text_message("finally")),
        ],
        false,
    )
    .await;
    let reply = client(&url, 4).complete(&Default::default()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("finally"));
    assert_eq!(script.requests().len(), 5);
}

#[tokio::test]
async fn retries_are_bounded_and_other_statuses_are_not_retried() {
    let (url, script) = serve(vec![status(503, None)], true).await;
    let err = client(&url, 2)
        .complete(&Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Status { status: 503, .. }),
        "{err}"
    );
    assert_eq!(script.requests().len(), 3);

    let (url, script) = serve(vec![status(500, None), chat(text_message("x"))], false).await;
    let err = client(&url, 3)
        .complete(&Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Status { status: 500, .. }),
        "{err}"
    );
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured_and_a_long_one_is_not_waited_for() {
    let (url, script) = serve(
        vec![status(429, Some("1")), chat(text_message("ok"))],
        false,
    )
    .await;
    let reply = client(&url, 1).complete(&Default::default()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("ok"));
    assert_eq!(script.requests().len(), 2);

    // Asked to come back in an hour: the error is returned now, with the wait it asked for.
    let (url, script) = serve(
        vec![status(429, Some("3600")), chat(text_message("ok"))],
        false,
    )
    .await;
    let err = client(&url, 3)
        .complete(&Default::default())
        .await
        .unwrap_err();
    match err {
        ClientError::Status {
            status: 429,
            retry_after,
            ..
        } => assert_eq!(retry_after, Some(Duration::from_secs(3600))),
        other => panic!("{other}"),
    }
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_read_timeout() {
    let (url, _script) = serve(vec![Answer::Hang], true).await;
    let timeouts = Timeouts {
        read: Duration::from_millis(300),
        ..Timeouts::default()
    };
    let c = ApiClient::chat(&url, "m")
        .unwrap()
        .with_transport(timeouts, quick_retries(2))
        .unwrap();
    let err = c.complete(&Default::default()).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                phase: TimeoutPhase::Read,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_refused_connection_keeps_its_kind_and_is_retried() {
    // Bind then drop a listener: its port now refuses connections.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = client(&format!("http://127.0.0.1:{port}"), 1)
        .complete(&Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
    assert!(err.is_retryable());
}

//
#[tokio::test]
async fn a_cut_stream_is_an_error_and_its_call_never_runs() {
    let cut = sse(
        &[
            delta(json!({"role":"assistant","content":"Deleting "})),
            delta(json!({"tool_calls":[{"index":0,"id":"c1","type":"function",
                "function":{"name":"echo","arguments":"{\"text\":\"a\"}"}}]})),
        ],
        "",
    );
    let (url, script) = serve(vec![cut.clone()], true).await;
    let c = client(&url, 1).streaming(true);
    let err = c.complete(&Default::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Cut { .. }), "{err}");
    // Retried once (a model request has no side effects), then given up.
    assert_eq!(script.requests().len(), 2);

    // Through the agent: the turn fails, and no call was executed.
    let mut agent = Agent::new(
        Arc::new(client(&url, 0).streaming(true)),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Native,
            max_rounds: 3,
            ..AgentConfig::default()
        },
    );
    let err = agent.run_turn("go").await.unwrap_err();
    assert!(err.to_string().contains("cut"), "{err}");
    assert_eq!(script.requests().len(), 3);

    // A cut stream followed by a whole one: the retry gives the whole reply.
    let whole = sse(
        &[
            delta(json!({"content":"done"})),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        ],
        "data: [DONE]\n\n",
    );
    let (url, _script) = serve(vec![cut, whole], false).await;
    let reply = client(&url, 1)
        .streaming(true)
        .complete(&Default::default())
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("done"));
    assert!(reply.calls.is_empty());
}

// covers R-18: the text a consumer was handed all belongs to one attempt
#[tokio::test]
async fn a_stream_cut_after_its_first_text_is_the_error_and_never_retried() {
    let cut = sse(
        &[delta(json!({"role":"assistant","content":"Once upon "}))],
        "",
    );
    let other = sse(
        &[
            delta(json!({"content":"A different reply."})),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        ],
        "data: [DONE]\n\n",
    );
    let (url, script) = serve(vec![cut.clone(), other.clone()], false).await;
    let mut shown = String::new();
    let err = client(&url, 3)
        .streaming(true)
        .complete_streaming(&Default::default(), &mut |t| shown.push_str(t))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Cut { .. }), "{err}");
    assert_eq!(shown, "Once upon ");
    assert_eq!(
        script.requests().len(),
        1,
        "retried after text was handed on"
    );

    // Through the agent: the events tell the first attempt's text, then the turn fails;
    // the other reply's text never follows it.
    let (url, script) = serve(vec![cut, other.clone()], false).await;
    let mut agent = Agent::new(
        Arc::new(client(&url, 3).streaming(true)),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Native,
            ..AgentConfig::default()
        },
    );
    let items: Vec<Result<AgentEvent, AgentError>> = agent.run_turn_stream("go").collect().await;
    let texts: Vec<&str> = items
        .iter()
        .filter_map(|e| match e {
            Ok(AgentEvent::TextDelta { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Once upon "]);
    assert!(
        matches!(
            items.last(),
            Some(Err(AgentError::Client(ClientError::Cut { .. })))
        ),
        "{:?}",
        items.last()
    );
    assert!(
        !items
            .iter()
            .any(|e| matches!(e, Ok(AgentEvent::TurnFinished { .. })))
    );
    assert_eq!(script.requests().len(), 1);

    // Cut before any text: nothing was shown, so the request is retried.
    let early = sse(&[delta(json!({"role":"assistant"}))], "");
    let (url, script) = serve(vec![early, other], false).await;
    let mut shown = String::new();
    let reply = client(&url, 3)
        .streaming(true)
        .complete_streaming(&Default::default(), &mut |t| shown.push_str(t))
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("A different reply."));
    assert_eq!(shown, "A different reply.");
    assert_eq!(script.requests().len(), 2);
}

//
#[tokio::test]
async fn a_responses_stream_without_completed_is_cut() {
    let body = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n";
    let (url, _script) = serve(
        vec![Answer::Raw {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            body: body.into(),
        }],
        true,
    )
    .await;
    let c = ApiClient::responses(&url, "m")
        .unwrap()
        .streaming(true)
        .with_transport(Timeouts::default(), RetryPolicy::never())
        .unwrap();
    let err = c.complete(&Default::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Cut { .. }), "{err}");
}

#[tokio::test]
async fn invalid_json_is_a_bad_response_not_retried() {
    let (url, script) = serve(
        vec![Answer::Raw {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body: "{\"choices\": [".into(),
        }],
        true,
    )
    .await;
    let err = client(&url, 3)
        .complete(&Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::BadResponse(_)), "{err}");
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn a_server_keeping_the_connection_alive_meets_the_total_deadline() {
    // SSE comments (or spaces in a JSON body) every 100 ms restart the idle read timeout;
    // only the total deadline ends the request. The read timeout is far longer than the
    // deadline, so a loaded machine that delays a beat cannot make it fire first.
    for (content_type, stream) in [("text/event-stream", true), ("application/json", false)] {
        let (url, script) = serve(vec![Answer::KeepAlive(content_type)], true).await;
        let timeouts = Timeouts {
            read: Duration::from_secs(30),
            total: Some(Duration::from_millis(1200)),
            ..Timeouts::default()
        };
        let c = ApiClient::chat(&url, "m")
            .unwrap()
            .with_transport(timeouts, quick_retries(2))
            .unwrap()
            .streaming(stream);
        let err = tokio::time::timeout(Duration::from_secs(60), c.complete(&Default::default()))
            .await
            .expect("the total deadline never ended the request")
            .unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::Timeout {
                    phase: TimeoutPhase::Total,
                    ..
                }
            ),
            "{content_type}: {err}"
        );
        assert!(err.to_string().contains("request timeout"), "{err}");
        // A deadline met is not retried: waiting again would double it.
        assert_eq!(script.requests().len(), 1);
    }
    assert!(Timeouts::default().total.is_some(), "a deadline by default");
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_with_the_conversation() {
    let (elsewhere, other) = serve(vec![chat(text_message("stolen"))], true).await;
    let redirect = |to: String| Answer::Raw {
        status: 307,
        headers: vec![("location", to)],
        body: String::new(),
    };
    let (url, script) = serve(
        vec![redirect(format!("{elsewhere}/v1/chat/completions"))],
        true,
    )
    .await;
    let request = toolcall_run::ModelRequest {
        messages: vec![toolcall_run::Message::user("my secret plans")],
        ..Default::default()
    };
    let err = client(&url, 2).complete(&request).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Status { status: 307, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not followed"), "{err}");
    assert!(
        other.requests().is_empty(),
        "the conversation went elsewhere"
    );
    assert_eq!(script.requests().len(), 1);

    // Within the origin, a redirect is followed (a 307 keeps the body).
    let (url, script) = serve(
        vec![redirect("/v1/responses".into()), chat(text_message("ok"))],
        false,
    )
    .await;
    let reply = client(&url, 0).complete(&request).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("ok"));
    assert_eq!(script.requests().len(), 2);
    assert_eq!(script.requests()[1], script.requests()[0]);
}
