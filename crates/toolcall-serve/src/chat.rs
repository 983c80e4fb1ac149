//! `POST /v1/chat/completions`, whole and streamed (SSE): the Chat Completions front end of
//! the one turn driver ([`crate::front`]).
//!
//! Whole: the upstream is asked for a whole reply, which is parsed and checked; with the
//! `retry` policy, rejected calls make one more upstream request carrying the errors.
//! Streamed ([`crate::stream`]): text and reasoning deltas go out as they arrive; a call's
//! chunk with `index`, `id`, `type` and `function.name` goes out as soon as the model wrote
//! the name and the name passed its checks, then its checked arguments in one fragment once
//! the call is complete (see [`crate::turn::StreamTurn`] for why and for the invalid-call
//! policy in streams); `finish_reason` is `tool_calls` when there are calls, and `length`
//! stays `length` (a call cut inside its arguments is never delivered). A cut upstream
//! stream ends the client's stream with an `error` event and no `finish_reason`, so no
//! client takes it for a reply. A client that goes away drops the stream, which drops the
//! upstream request.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::Map;
use toolcall_wire::Api;

use crate::metrics::Metrics;
use crate::{ApiError, AppState, auth, front};

/// The response header listing repairs applied to calls.
pub const REPAIRS_HEADER: &str = "x-toolcall-repairs";

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    mut body: Bytes,
) -> Response {
    Metrics::add(&state.metrics.chat_requests, 1);
    let result = async {
        if !auth::authorized(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        // The bytes go once decoded: a body is several copies of itself on its way.
        let decoded = front::decode_chat(&state, &std::mem::take(&mut body))?;
        front::run(&state, &headers, Api::CHAT, decoded, Map::new()).await
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.into_response()
    })
}

/// A request body as JSON of type `T`, with a clear error.
pub fn parse_request<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    toolcall_wire::from_json_bytes(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid: {e}")))
}

/// The `x-toolcall-constrain` header: what decoding constraint went upstream.
pub fn add_constrain_header(response: &mut Response, note: Option<&str>) {
    if let Some(v) = note.and_then(|n| HeaderValue::from_str(n).ok()) {
        response
            .headers_mut()
            .insert(crate::constrain::CONSTRAIN_HEADER, v);
    }
}

/// The `x-toolcall-repairs` header, from [`crate::turn::Checked::repairs_header`].
pub fn add_repairs_header(response: &mut Response, repairs: Option<&str>) {
    if let Some(v) = repairs
        && let Ok(v) = HeaderValue::from_str(v)
    {
        response.headers_mut().insert(REPAIRS_HEADER, v);
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
