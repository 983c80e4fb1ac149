//! `POST /v1/messages` (Anthropic Messages) and `POST /v1/messages/count_tokens`: the
//! Messages front end of the one turn driver ([`crate::front`]), whole and streamed, for
//! Claude Code and every app on the `anthropic` SDK. The dialect's mapping is
//! `toolcall_wire::anthropic`; the query (`?beta=true`) is ignored. Clients send their key
//! as `x-api-key` or `Authorization: Bearer`; errors come back in Anthropic's shape
//! (`{"type":"error","error":{"type","message"}}`).
//!
//! `count_tokens` is refused with a clear 404 (`not_found_error`): the gateway has no
//! tokenizer for the upstream's model, and a made-up count would mislead a client that
//! budgets its context by it.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Map;
use toolcall_wire::Api;

use crate::metrics::Metrics;
use crate::{ApiError, AppState, auth, front};

/// The Messages dialect.
fn api() -> Api {
    Api::from_name("anthropic").unwrap_or_default()
}

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    mut body: Bytes,
) -> Response {
    Metrics::add(&state.metrics.messages_requests, 1);
    let result = async {
        if !auth::authorized_any(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        // The bytes go once decoded: a body is several copies of itself on its way.
        let decoded = front::decode(api(), &std::mem::take(&mut body))?;
        front::run(&state, &headers, api(), decoded, Map::new()).await
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.response_in(api())
    })
}

/// `POST /v1/messages/count_tokens`: refused, clearly (see the module doc).
pub async fn count_tokens(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !auth::authorized_any(&headers, &state.upstreams.client_keys) {
        return ApiError::unauthorized().response_in(api());
    }
    let e = ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: None,
        message: "count_tokens is not supported by this gateway: it has no tokenizer for the \
            upstream's model, so it cannot count honestly"
            .into(),
        retry_after: None,
    };
    e.response_in(api()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_is_registered() {
        assert_eq!(api().name(), "anthropic");
    }
}
