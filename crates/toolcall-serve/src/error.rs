//! Errors as the OpenAI API shapes them: `{"error":{"message","type","code"}}` with a status.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolcall_run::ClientError;

/// An error answered to the client.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub code: Option<&'static str>,
    pub message: String,
    /// Seconds the client should wait before retrying (`Retry-After`): the gateway's own
    /// `503 overloaded`, or an upstream 429's own value passed through.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code: None,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn unauthorized() -> Self {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            kind: "invalid_request_error",
            code: Some("invalid_api_key"),
            message: "missing or unknown API key (send Authorization: Bearer KEY)".into(),
            retry_after: None,
        }
    }

    /// The gateway's own store (the session archive, or the tool switches) cannot be read
    /// or written: a `503`, never blamed on the upstream. `message` names the store.
    pub fn archive(message: &str) -> Self {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: "server_error",
            code: Some("archive_unavailable"),
            message: without_userinfo(message),
            retry_after: None,
        }
    }

    /// An upstream reply that cannot be used (502).
    pub fn upstream_reply(message: &str) -> Self {
        ApiError {
            status: StatusCode::BAD_GATEWAY,
            kind: "upstream_error",
            code: Some("upstream_error"),
            message: format!("upstream: {}", without_userinfo(message)),
            retry_after: None,
        }
    }

    /// An upstream failure: its own 4xx status passes through (the client's request was
    /// wrong; a 429 as the API's `rate_limit_error`); 5xx, bad replies, cut streams and
    /// redirects not followed are 502; timeouts 504.
    pub fn upstream(e: &ClientError) -> Self {
        let message = format!("upstream: {}", without_userinfo(&e.to_string()));
        if let ClientError::Status {
            status: 429,
            retry_after,
            ..
        } = e
        {
            return ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                kind: "rate_limit_error",
                code: Some("rate_limit_exceeded"),
                message,
                // The upstream's own wait, once the gateway gave up retrying.
                retry_after: retry_after.map(|d| d.as_secs()),
            };
        }
        let (status, code) = match e {
            ClientError::Status { status, .. } if (400..500).contains(status) => (
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY),
                None,
            ),
            ClientError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, Some("upstream_timeout")),
            ClientError::Cut { .. } => (StatusCode::BAD_GATEWAY, Some("upstream_stream_cut")),
            ClientError::Connect { .. } | ClientError::Transport { .. } => {
                (StatusCode::BAD_GATEWAY, Some("upstream_unreachable"))
            }
            _ => (StatusCode::BAD_GATEWAY, Some("upstream_error")),
        };
        ApiError {
            status,
            kind: if status.is_client_error() {
                "invalid_request_error"
            } else {
                "upstream_error"
            },
            code,
            message,
            retry_after: None,
        }
    }

    /// The error body.
    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": null, "code": self.code}})
    }
}

impl ApiError {
    /// The error body in `api`'s shape (Anthropic's `{"type":"error",…}`, …).
    pub fn body_in(&self, api: toolcall_wire::Api) -> Value {
        api.dialect()
            .encode_error(&toolcall_wire::dialect::ErrorInfo {
                status: self.status.as_u16(),
                kind: self.kind,
                code: self.code,
                message: &self.message,
            })
    }

    /// The error as a response in `api`'s shape.
    pub fn response_in(self, api: toolcall_wire::Api) -> Response {
        let response = (self.status, Json(self.body_in(api))).into_response();
        self.with_headers(response)
    }

    /// `response` with this error's headers (`Retry-After`).
    fn with_headers(&self, mut response: Response) -> Response {
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let response = (self.status, Json(self.body())).into_response();
        self.with_headers(response)
    }
}

/// `text` with the credentials of any URL in it (`scheme://user:password@host`) replaced by
/// `***`: an upstream URL may carry them, and errors go to clients and logs.
pub fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first `/`, `?`, `#` or whitespace; userinfo before `@`.
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str("***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_never_reach_a_message() {
        assert_eq!(
            without_userinfo("cannot connect to http://u:s3cret@10.0.0.1:8000/v1/chat (refused)"),
            "cannot connect to http://***@10.0.0.1:8000/v1/chat (refused)"
        );
        assert_eq!(
            without_userinfo("a http://h:1/x and https://k@h/y?q=a@b"),
            "a http://h:1/x and https://***@h/y?q=a@b"
        );
        assert_eq!(without_userinfo("no url :// here@"), "no url :// here@");
    }
}
