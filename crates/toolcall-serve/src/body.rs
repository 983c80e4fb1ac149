//! Request bodies read whole, within the body limit and the body read timeout, before any
//! handler runs.
//!
//! A client that dribbles its body (a byte every few seconds) would otherwise hold its
//! connection and its task for as long as it likes: the body read timeout bounds the whole
//! body, from the end of the head to its last byte, not the wait between bytes. A body not
//! complete in time is answered `408` (and the connection closed); one over the limit `413`;
//! both in the error shape of the API the path belongs to.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use toolcall_wire::Api;

use crate::{ApiError, AppState};

/// The middleware: the request continues with its body in memory.
pub async fn read_whole(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let api = api_of(parts.uri.path());
    let limit = state.config.max_body_bytes;
    let read = Limited::new(body, limit).collect();
    let read = match state.config.body_read_timeout() {
        Some(t) => match tokio::time::timeout(t, read).await {
            Ok(r) => r,
            Err(_) => {
                let mut response = ApiError {
                    status: StatusCode::REQUEST_TIMEOUT,
                    kind: "invalid_request_error",
                    code: Some("request_timeout"),
                    message: format!("the request body did not arrive within {} s", t.as_secs()),
                }
                .response_in(api);
                // The rest of the body is still coming: the connection cannot carry another
                // request.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return response;
            }
        },
        None => read.await,
    };
    match read {
        Ok(collected) => {
            next.run(Request::from_parts(parts, Body::from(collected.to_bytes())))
                .await
        }
        Err(e) if e.is::<LengthLimitError>() => ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "invalid_request_error",
            code: Some("request_too_large"),
            message: format!("the request body is larger than {limit} bytes"),
        }
        .response_in(api),
        Err(e) => {
            ApiError::bad_request(format!("cannot read the request body: {e}")).response_in(api)
        }
    }
}

/// The API whose error shape a path's errors take.
fn api_of(path: &str) -> Api {
    let name = if path.starts_with("/v1/messages") {
        "anthropic"
    } else if path.starts_with("/v1/responses") {
        "responses"
    } else if path.starts_with("/v1beta/")
        || path.contains(":generateContent")
        || path.contains(":streamGenerateContent")
    {
        "gemini"
    } else {
        "chat"
    };
    Api::from_name(name).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_take_the_shape_of_the_path_s_api() {
        assert_eq!(api_of("/v1/messages").name(), "anthropic");
        assert_eq!(api_of("/v1/responses").name(), "responses");
        assert_eq!(api_of("/v1beta/models/g:generateContent").name(), "gemini");
        assert_eq!(
            api_of("/v1/models/g:streamGenerateContent").name(),
            "gemini"
        );
        assert_eq!(api_of("/v1/chat/completions").name(), "chat");
    }
}
