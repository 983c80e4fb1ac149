//! `POST /v1/responses`: the Responses front end of the one turn driver ([`crate::front`]).
//! The request becomes the neutral request (most model servers speak only Chat), goes
//! through the same turn as every front end, and comes back as Responses output items: a
//! reasoning item, a message, `function_call` items with their `call_id`s.
//!
//! Streamed (`stream: true`), the events go out as the upstream streams, through the same
//! driver ([`crate::stream`]): `response.created`, then per item
//! `response.output_item.added`, its deltas (`response.reasoning_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`), its `.done`
//! events and `response.output_item.done`, and `response.completed` holding every item (the
//! writer is `toolcall_wire::responses::ResponsesEvents`). A call's item is added when its
//! name is known; its arguments come once checked. A failed stream ends with
//! `response.failed` (and an `error` event), never `response.completed`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use toolcall_wire::Api;

use crate::metrics::Metrics;
use crate::{ApiError, AppState, auth, front};

/// The Responses dialect.
fn api() -> Api {
    Api::from_name("responses").unwrap_or_default()
}

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    mut body: Bytes,
) -> Response {
    Metrics::add(&state.metrics.responses_requests, 1);
    let result = async {
        if !auth::authorized(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        // The bytes go once decoded: a body is several copies of itself on its way.
        let body = std::mem::take(&mut body);
        let decoded = front::decode(api(), &body)?;
        let echo = api().dialect().reply_echo(&body);
        drop(body);
        front::run(&state, &headers, api(), decoded, echo).await
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.into_response()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_is_registered() {
        assert_eq!(api().name(), "responses");
    }
}
