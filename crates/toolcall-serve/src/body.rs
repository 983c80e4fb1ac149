//! Request bodies read whole, within the body limit, the body read timeout and the bodies'
//! memory budget, before any handler runs.
//!
//! A client that dribbles its body (a byte every few seconds) would otherwise hold its
//! connection and its task for as long as it likes: the body read timeout bounds the whole
//! body, from the end of the head to its last byte, not the wait between bytes. A body not
//! complete in time is answered `408` (and the connection closed); one over the limit `413`;
//! both in the error shape of the API the path belongs to.
//!
//! The body limit bounds one body's bytes, not what bodies cost once decoded, nor how many
//! are in flight: an 8 MiB body of `[0,0,…]` peaked at 924 MB of resident memory and one of
//! `[{"a":0},…]` at 1.3 GB (a real `toolcall serve`, debug build), as every small JSON value
//! becomes a `serde_json::Value` and its place in an array or map, and the request is
//! copied on its way upstream (decoded, the upstream request, its encoding). So every body
//! holds a share of one budget (`bodies_memory_mib`, a [`MemoryBudget`]), weighed by
//! [`estimate`]: a scan of its bytes that builds nothing. A declared `content-length` is
//! charged at once (its bytes at [`BYTES_FACTOR`]); a body without one is charged as its
//! bytes arrive; either grows to the estimate once the body is whole, and the share is held
//! until the response has been sent (a stream's last event), whatever the handler does. A
//! body that does not fit waits up to [`BUSY_WAIT`] in all, then gets `503 overloaded` with
//! `Retry-After: 1`; one larger than the whole budget gets `413`; both name the setting.
//!
//! The estimate's factors come from `tests/body_size.rs`, which measures the peak heap of
//! one request through the router with a counting allocator and checks the estimate stays
//! above it: 6.0x the bytes for one long message, 46x for many short messages, 109x for
//! `[0,…]`, 139x for `[{"a":0},…]`, 94x for objects of four keys, 85x for `[[],…]`; about
//! 24 KB for a tiny request.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use toolcall_wire::Api;

use crate::budget::{MemoryBudget, Refused, Share};
use crate::{ApiError, AppState};

/// The default budget for request bodies in flight (`bodies_memory_mib`).
pub const DEFAULT_BUDGET_MIB: u64 = 64;

/// The longest a body waits, in all, for others to give their shares back.
pub const BUSY_WAIT: Duration = Duration::from_secs(2);

/// Times a body's bytes charged for its copies (the bytes read, the decoded request, the
/// upstream request, its encoding), whatever they hold.
pub const BYTES_FACTOR: u64 = 7;
/// Charged per JSON value besides (a `serde_json::Value` and its place in its array or
/// object, in each decoded copy).
pub const PER_VALUE: u64 = 256;
/// Charged per array or object besides (its own allocations, in each decoded copy).
pub const PER_CONTAINER: u64 = 512;
/// Charged per body that has any bytes (the request's fixed parts).
pub const PER_BODY: u64 = 32 * 1024;
/// Charged at once with a declared length besides its bytes: the fixed part and a few
/// values, so that a body of few values (a long message) needs nothing more once read,
/// as growing then may wait behind bodies waiting for their own share.
const FLOOR_EXTRA: u64 = PER_BODY + 32 * PER_VALUE + 8 * PER_CONTAINER;
/// Times the bytes charged while they arrive (the chunks read, then one contiguous copy).
const READING_FACTOR: u64 = 2;

/// The estimated heap, in bytes, of a request body of these bytes as the gateway decodes
/// and forwards it: counted by one pass over the bytes that builds nothing (strings
/// skipped, escapes included; any nesting depth). Valid or not: an invalid body is charged
/// as if it were JSON until the decoder refuses it.
pub fn estimate(body: &[u8]) -> u64 {
    if body.is_empty() {
        return 0;
    }
    let (mut separators, mut containers) = (0u64, 0u64);
    let mut in_string = false;
    let mut escaped = false;
    for &b in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b':' => separators += 1,
            b'[' | b'{' => containers += 1,
            _ => {}
        }
    }
    // Values: one per separator (the next element, or a key's value) and per container
    // (its first element), plus the body's own.
    let values = separators + containers + 1;
    (body.len() as u64)
        .saturating_mul(BYTES_FACTOR)
        .saturating_add(values.saturating_mul(PER_VALUE))
        .saturating_add(containers.saturating_mul(PER_CONTAINER))
        .saturating_add(PER_BODY)
}

/// Why a body was not read.
enum NotRead {
    TooLong,
    Refused(Refused),
    Failed(String),
}

/// Reads `body` whole, within `limit` bytes, its share holding `floor` from the start and
/// growing with the bytes as they arrive; `waited` adds up the time spent waiting for the
/// budget. A body refused by the budget (`refused` already, or once it does not fit) is
/// still read to its end, keeping nothing, so that its client gets the answer rather than
/// a reset connection.
async fn read(
    mut body: Body,
    limit: usize,
    budget: &MemoryBudget,
    share: &mut Share,
    waited: &mut Duration,
    floor: u64,
    mut refused: Option<Refused>,
) -> Result<Bytes, NotRead> {
    // The least the body will need, taken at once: bodies that took part of what they need
    // would otherwise wait for each other's parts.
    if refused.is_none()
        && let Err(e) = grow(budget, share, floor, waited).await
    {
        refused = Some(e);
    }
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| NotRead::Failed(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers: nothing to keep
        };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(NotRead::TooLong);
        }
        if refused.is_some() {
            continue;
        }
        match grow(budget, share, len as u64 * READING_FACTOR, waited).await {
            Ok(()) => chunks.push(data),
            Err(e) => {
                refused = Some(e);
                chunks = Vec::new();
                *share = budget.empty_share();
            }
        }
    }
    if let Some(e) = refused {
        return Err(NotRead::Refused(e));
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => {
            let mut whole = Vec::with_capacity(len);
            chunks.iter().for_each(|c| whole.extend_from_slice(c));
            Bytes::from(whole)
        }
    })
}

/// Grows `share` to `bytes`, waiting what is left of [`BUSY_WAIT`].
async fn grow(
    budget: &MemoryBudget,
    share: &mut Share,
    bytes: u64,
    waited: &mut Duration,
) -> Result<(), Refused> {
    let start = Instant::now();
    let result = budget
        .grow(share, bytes, BUSY_WAIT.saturating_sub(*waited))
        .await;
    *waited += start.elapsed();
    result
}

/// The declared `content-length`, if any.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `e` in `api`'s shape, closing the connection: the rest of the body may still be coming.
fn closing(e: ApiError, api: Api) -> Response {
    let mut response = e.response_in(api);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The middleware: the request continues with its body in memory, and its response holds
/// the body's share of the budget until it has been sent.
pub async fn read_whole(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let api = api_of(parts.uri.path());
    let limit = state.config.max_body_bytes;
    let budget = state.bodies.clone();
    // A declared length is charged at once, its bytes at BYTES_FACTOR; one the budget could
    // never hold is refused, its bytes read but not kept.
    let floor = content_length(&parts.headers)
        .filter(|&len| len > 0 && len <= limit as u64)
        .map_or(0, |len| {
            len.saturating_mul(BYTES_FACTOR).saturating_add(FLOOR_EXTRA)
        });
    let refused = budget.check(floor).err();
    let mut share = budget.empty_share();
    let mut waited = Duration::ZERO;
    let read = read(
        body,
        limit,
        &budget,
        &mut share,
        &mut waited,
        floor,
        refused,
    );
    let read = match state.config.body_read_timeout() {
        Some(t) => match tokio::time::timeout(t, read).await {
            Ok(r) => r,
            Err(_) => {
                return closing(
                    ApiError {
                        status: StatusCode::REQUEST_TIMEOUT,
                        kind: "invalid_request_error",
                        code: Some("request_timeout"),
                        message: format!(
                            "the request body did not arrive within {} s",
                            t.as_secs()
                        ),
                        retry_after: None,
                    },
                    api,
                );
            }
        },
        None => read.await,
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(NotRead::TooLong) => {
            return closing(
                ApiError {
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    kind: "invalid_request_error",
                    code: Some("request_too_large"),
                    message: format!("the request body is larger than {limit} bytes"),
                    retry_after: None,
                },
                api,
            );
        }
        Err(NotRead::Refused(e)) => return ApiError::from(e).response_in(api),
        Err(NotRead::Failed(e)) => {
            return ApiError::bad_request(format!("cannot read the request body: {e}"))
                .response_in(api);
        }
    };
    if let Err(e) = grow(&budget, &mut share, estimate(&bytes), &mut waited).await {
        return ApiError::from(e).response_in(api);
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    response.map(|body| {
        Body::new(Holding {
            body,
            _share: share,
        })
    })
}

/// A response body holding its request body's share until it is sent (or dropped).
struct Holding {
    body: Body,
    _share: Share,
}

impl http_body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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

    #[test]
    fn the_estimate_counts_values_and_containers_outside_strings_only() {
        assert_eq!(estimate(b""), 0);
        let base = |len: u64, values: u64, containers: u64| {
            len * BYTES_FACTOR + values * PER_VALUE + containers * PER_CONTAINER + PER_BODY
        };
        assert_eq!(estimate(b"0"), base(1, 1, 0));
        // Three zeros in one array: two commas, one container.
        assert_eq!(estimate(b"[0,0,0]"), base(7, 4, 1));
        // Keys' colons count; brackets, commas and quotes inside strings do not, escaped
        // quotes included.
        let text = br#"{"a":"[,{:}\"]","b":[]}"#;
        assert_eq!(estimate(text), base(text.len() as u64, 6, 2));
        // Any depth, without recursion.
        let deep = [b"[".repeat(100_000), b"]".repeat(100_000)].concat();
        assert_eq!(estimate(&deep), base(200_000, 100_001, 100_000));
    }
}
