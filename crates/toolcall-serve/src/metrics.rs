//! Prometheus text metrics: requests by endpoint and outcome, upstream errors, calls found,
//! repairs, invalid calls, open streams.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

use crate::AppState;

/// Counters, updated lock-free.
#[derive(Debug, Default)]
pub struct Metrics {
    pub chat_requests: AtomicU64,
    pub responses_requests: AtomicU64,
    pub messages_requests: AtomicU64,
    pub gemini_requests: AtomicU64,
    pub streamed_requests: AtomicU64,
    pub errors: AtomicU64,
    pub upstream_errors: AtomicU64,
    pub calls: AtomicU64,
    pub repairs: AtomicU64,
    pub invalid_calls: AtomicU64,
    pub upstream_retries_for_validation: AtomicU64,
    pub open_streams: AtomicI64,
}

impl Metrics {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, lines: &[(&str, u64)]| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
            for (labels, v) in lines {
                out.push_str(&format!("{name}{labels} {v}\n"));
            }
        };
        counter(
            "toolcall_requests_total",
            "Requests received, by endpoint.",
            &[
                ("{endpoint=\"chat\"}", c(&self.chat_requests)),
                ("{endpoint=\"responses\"}", c(&self.responses_requests)),
                ("{endpoint=\"messages\"}", c(&self.messages_requests)),
                ("{endpoint=\"gemini\"}", c(&self.gemini_requests)),
            ],
        );
        counter(
            "toolcall_streamed_requests_total",
            "Streamed requests.",
            &[("", c(&self.streamed_requests))],
        );
        counter(
            "toolcall_errors_total",
            "Requests answered with an error.",
            &[("", c(&self.errors))],
        );
        counter(
            "toolcall_upstream_errors_total",
            "Upstream failures after retries.",
            &[("", c(&self.upstream_errors))],
        );
        counter(
            "toolcall_calls_total",
            "Tool calls returned to clients.",
            &[("", c(&self.calls))],
        );
        counter(
            "toolcall_repairs_total",
            "Repairs and schema coercions applied to calls.",
            &[("", c(&self.repairs))],
        );
        counter(
            "toolcall_invalid_calls_total",
            "Calls that failed validation.",
            &[("", c(&self.invalid_calls))],
        );
        counter(
            "toolcall_validation_retries_total",
            "Upstream requests repeated with a validation error.",
            &[("", c(&self.upstream_retries_for_validation))],
        );
        out.push_str(&format!(
            "# HELP toolcall_open_streams Streams being answered.\n# TYPE toolcall_open_streams gauge\ntoolcall_open_streams {}\n",
            self.open_streams.load(Ordering::Relaxed)
        ));
        out
    }
}

/// `GET /metrics`.
pub async fn handle(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}
