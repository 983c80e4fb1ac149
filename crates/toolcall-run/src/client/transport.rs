//! HTTP to model servers, shared by the clients here and the `toolcall serve` gateway's
//! upstream calls: connect and idle-read timeouts and a total deadline per attempt, bounded
//! bodies and SSE streams, and bounded retries with jittered exponential backoff on
//! 429/502/503/504, connection errors and cut streams, honouring `Retry-After`.
//!
//! A request is sent with [`Transport::retrying`] around one attempt (post and read), so a
//! retry covers what the caller still owns: the clients retry a whole reply (a model request
//! has no side effects), the gateway retries only until it starts answering its client.
//!
//! The total deadline ([`Timeouts::total`]) runs from the request until the last byte of the
//! body, streamed or not, so a server that keeps a stream alive with SSE comments (which
//! restart the idle read timeout) cannot hold a request past it. Redirects are followed only
//! within the request's origin (scheme, host, port), at most [`MAX_REDIRECTS`]: a model
//! request carries the conversation, which never goes to another host (the rule HTTP tools
//! follow too). The backoff's jitter ("equal jitter": half the exponential delay plus a
//! random part of the other half, and on top of `Retry-After` a random part of the base
//! delay) keeps replicas that failed together from retrying in lockstep; it is a few lines
//! over `rand`, which the workspace already has, where a backoff crate would bring its own
//! retry loop in place of [`Transport::retrying_until_committed`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use rand::RngExt;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use super::{ClientError, MAX_RESPONSE_BYTES, TimeoutPhase};
use toolcall_wire::excerpt;

/// How long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// Between two reads of the response (a model that stops sending); any bytes restart
    /// it, SSE comments included.
    pub read: Duration,
    /// One attempt as a whole, from sending the request to the last byte of its reply
    /// (streamed or not); nothing the server sends extends it. `None`: no deadline.
    pub total: Option<Duration>,
}

/// The default total deadline of one model request: long enough for a long answer from a
/// slow local model, short enough that a server cannot hold a request forever.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(120),
            total: Some(DEFAULT_TOTAL_TIMEOUT),
        }
    }
}

/// Redirects a model request follows, all within the origin of its URL.
pub const MAX_REDIRECTS: usize = 5;

/// When and how often to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it (jittered: see [`Self::delay`]).
    pub base_delay: Duration,
    /// The longest wait between attempts; a `Retry-After` asking for more is not retried.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn never() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (0-based) after `err`, with random jitter;
    /// `None` = do not retry.
    pub fn delay(&self, retry: u32, err: &ClientError) -> Option<Duration> {
        self.jittered_delay(retry, err, rand::rng().random_range(0.0..=1.0))
    }

    /// [`Self::delay`] with the jitter's draw `unit` (0 to 1) given: the exponential delay
    /// `d` (the base doubled per retry, at most `max_delay`) becomes `d/2 + unit·d/2`; a
    /// `Retry-After` within `max_delay` is waited for in full, plus `unit·base_delay`.
    pub fn jittered_delay(&self, retry: u32, err: &ClientError, unit: f64) -> Option<Duration> {
        if retry >= self.max_retries || !err.is_retryable() {
            return None;
        }
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if let ClientError::Status {
            retry_after: Some(after),
            ..
        } = err
        {
            return (*after <= self.max_delay).then(|| *after + self.base_delay.mul_f64(unit));
        }
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        Some(full / 2 + (full / 2).mul_f64(unit))
    }
}

/// An HTTP client for model servers.
#[derive(Debug, Clone)]
pub struct Transport {
    http: reqwest::Client,
    timeouts: Timeouts,
    retry: RetryPolicy,
}

impl Transport {
    pub fn new(timeouts: Timeouts, retry: RetryPolicy) -> Result<Self, ClientError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.read)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                // `previous` starts with the URL the request was sent to.
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }));
        if let Some(total) = timeouts.total {
            builder = builder.timeout(total);
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Other(format!("cannot build the HTTP client: {e}")))?;
        Ok(Transport {
            http,
            timeouts,
            retry,
        })
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries are used up.
    pub async fn retrying<T, F, Fut>(&self, attempt: F) -> Result<T, ClientError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        self.retrying_until_committed(attempt, || false).await
    }

    /// [`Self::retrying`], except that a failed attempt is not retried once `committed()`
    /// says part of its answer was already passed on (a retry would repeat it): that
    /// failure is the error.
    pub async fn retrying_until_committed<T, F, Fut>(
        &self,
        mut attempt: F,
        committed: impl Fn() -> bool,
    ) -> Result<T, ClientError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let mut retry = 0;
        loop {
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(err) if committed() => return Err(err),
                Err(err) => match self.retry.delay(retry, &err) {
                    Some(wait) => {
                        tracing::warn!(error = %err, retry = retry + 1, wait_ms = wait.as_millis() as u64, "model request failed; retrying");
                        tokio::time::sleep(wait).await;
                        retry += 1;
                    }
                    None => return Err(err),
                },
            }
        }
    }

    /// One POST of a JSON body; the response when its status is a success, else
    /// [`ClientError::Status`] with the body's end and any `Retry-After`.
    pub async fn post_json<T: Serialize + ?Sized>(
        &self,
        url: &str,
        api_key: Option<&str>,
        body: &T,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self.http.post(url).json(body);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        self.send(req, url).await
    }

    /// One POST of a JSON body with the given headers (an upstream's key as its dialect
    /// sends it); the response when its status is a success.
    pub async fn post_json_with<T: Serialize + ?Sized>(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &T,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self.http.post(url).json(body);
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        self.send(req, url).await
    }

    /// One POST of a body already written as JSON text (`content-type: application/json`)
    /// with the given headers, to a URL the caller parsed once (the gateway keeps each
    /// route's parsed upstream URL: parsing it costs several thousand instructions a
    /// request, as much as a small request's own JSON); the response when its status is a
    /// success.
    pub async fn post_json_text_to(
        &self,
        url: &reqwest::Url,
        headers: &[(&'static str, String)],
        body: &[u8],
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        self.send(req, url.as_str()).await
    }

    /// One GET; the response when its status is a success.
    pub async fn get(
        &self,
        url: &str,
        api_key: Option<&str>,
    ) -> Result<reqwest::Response, ClientError> {
        let mut req = self.http.get(url);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        self.send(req, url).await
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, ClientError> {
        let sent = Instant::now();
        let response = req
            .send()
            .await
            .map_err(|e| classify(e, url, sent.elapsed(), self.timeouts))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| excerpt(l, 300));
        let body = self.read_bounded(response, url).await.unwrap_or_default();
        let body_tail = match location {
            // A redirect left unfollowed: to another origin, or one too many.
            Some(to) if status.is_redirection() => format!(
                "a redirect to {to:?}, not followed: a model request follows at most \
                 {MAX_REDIRECTS} redirects, all within the origin of its URL"
            ),
            _ => excerpt(&body, 500),
        };
        Err(ClientError::Status {
            status: status.as_u16(),
            body_tail,
            retry_after,
        })
    }

    /// Reads a response body up to [`MAX_RESPONSE_BYTES`].
    pub async fn read_bounded(
        &self,
        mut response: reqwest::Response,
        url: &str,
    ) -> Result<String, ClientError> {
        let mut body = Vec::new();
        let mut last = Instant::now();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| classify(e, url, last.elapsed(), self.timeouts))?
        {
            last = Instant::now();
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
            }
            body.extend_from_slice(&chunk);
        }
        // Valid UTF-8 (any JSON reply) is kept as read; anything else as before, with
        // U+FFFD for each invalid sequence.
        Ok(String::from_utf8(body)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Server-sent events of a response, bounded (see [`SseReader`]).
    pub fn events(&self, response: reqwest::Response, url: &str) -> SseReader {
        SseReader::new(response, url, self.timeouts)
    }
}

/// A transport error with its kind kept: timeout (which one), refused connection, or other.
/// `idle`: how long nothing had come when it failed; a timeout sooner than the idle read
/// timeout can only be the total deadline.
fn classify(e: reqwest::Error, url: &str, idle: Duration, timeouts: Timeouts) -> ClientError {
    let url = url.to_owned();
    if e.is_timeout() {
        let (phase, after) = match timeouts.total {
            _ if e.is_connect() => (TimeoutPhase::Connect, timeouts.connect),
            Some(total) if idle < timeouts.read => (TimeoutPhase::Total, total),
            _ => (TimeoutPhase::Read, timeouts.read),
        };
        return ClientError::Timeout { url, phase, after };
    }
    let message = error_chain(&e);
    if e.is_connect() {
        ClientError::Connect { url, message }
    } else {
        ClientError::Transport { url, message }
    }
}

/// An error with its sources ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    let mut depth = 0;
    while let Some(inner) = source
        && depth < 8
    {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
        depth += 1;
    }
    s
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured: it is treated as absent).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Server-sent events of a response, at most [`MAX_RESPONSE_BYTES`] in all (which also bounds
/// one line), with read timeouts and cut connections reported by kind.
pub struct SseReader {
    events: Events,
    over_limit: Arc<AtomicBool>,
    /// When bytes last came (comments included), in milliseconds since `opened`.
    last_bytes_ms: Arc<AtomicU64>,
    opened: Instant,
    url: String,
    timeouts: Timeouts,
}

impl SseReader {
    fn new(response: reqwest::Response, url: &str, timeouts: Timeouts) -> Self {
        let over_limit = Arc::new(AtomicBool::new(false));
        let flag = over_limit.clone();
        let opened = Instant::now();
        let last_bytes_ms = Arc::new(AtomicU64::new(0));
        let last = last_bytes_ms.clone();
        let mut seen = 0usize;
        let bytes = response.bytes_stream().take_while(move |chunk| {
            if let Ok(b) = chunk {
                seen = seen.saturating_add(b.len());
                let at = u64::try_from(opened.elapsed().as_millis()).unwrap_or(u64::MAX);
                last.store(at, Ordering::Relaxed);
            }
            let within = seen <= MAX_RESPONSE_BYTES;
            if !within {
                flag.store(true, Ordering::Relaxed);
            }
            futures::future::ready(within)
        });
        SseReader {
            events: Box::pin(bytes.eventsource()),
            over_limit,
            last_bytes_ms,
            opened,
            url: url.to_owned(),
            timeouts,
        }
    }

    /// The next event with data: its name and its trimmed data; `None` at the end of the
    /// stream (whether the stream was complete is the wire format's call).
    pub async fn next(&mut self) -> Result<Option<(String, String)>, ClientError> {
        while let Some(event) = self.events.next().await {
            let event = event.map_err(|e| match e {
                EventStreamError::Transport(e) => {
                    let last = Duration::from_millis(self.last_bytes_ms.load(Ordering::Relaxed));
                    let idle = self.opened.elapsed().saturating_sub(last);
                    classify(e, &self.url, idle, self.timeouts)
                }
                other => ClientError::BadResponse(format!("SSE stream: {other}")),
            })?;
            let data = event.data.trim();
            if !data.is_empty() {
                return Ok(Some((event.event, data.to_owned())));
            }
        }
        if self.over_limit.load(Ordering::Relaxed) {
            return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, retry_after: Option<u64>) -> ClientError {
        ClientError::Status {
            status: code,
            body_tail: String::new(),
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn backoff_doubles_and_is_bounded() {
        let p = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        };
        let e = status(503, None);
        let ms = Duration::from_millis;
        // At its most, the jittered delay is the exponential one; at its least, half of it.
        assert_eq!(p.jittered_delay(0, &e, 1.0), Some(ms(100)));
        assert_eq!(p.jittered_delay(1, &e, 1.0), Some(ms(200)));
        assert_eq!(p.jittered_delay(2, &e, 1.0), Some(ms(300)));
        assert_eq!(p.jittered_delay(0, &e, 0.0), Some(ms(50)));
        assert_eq!(p.jittered_delay(2, &e, 0.0), Some(ms(150)));
        assert_eq!(p.jittered_delay(1, &e, f64::NAN), Some(ms(100)));
        assert_eq!(p.delay(3, &e), None);
        assert_eq!(p.delay(0, &status(500, None)), None);
        assert_eq!(p.delay(0, &status(400, None)), None);
        assert_eq!(RetryPolicy::never().delay(0, &e), None);
    }

    #[test]
    fn retry_after_is_honoured_within_the_bound() {
        let p = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        };
        let asked = status(429, Some(2));
        assert_eq!(
            p.jittered_delay(0, &asked, 0.0),
            Some(Duration::from_secs(2))
        );
        // Never sooner than asked; the jitter comes on top.
        assert_eq!(
            p.jittered_delay(0, &asked, 1.0),
            Some(Duration::from_millis(2100))
        );
        for _ in 0..16 {
            let d = p.delay(0, &asked).unwrap();
            assert!(d >= Duration::from_secs(2) && d <= Duration::from_millis(2100));
        }
        // Asked to wait longer than the bound: give up now rather than hammer the server.
        assert_eq!(p.delay(0, &status(429, Some(60))), None);
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }

    /// A POST to a parsed URL carries its body, content type and headers; a reply in UTF-8
    /// is read as sent, one that is not has U+FFFD for each invalid sequence.
    #[tokio::test]
    async fn a_post_to_a_parsed_url_and_its_reply_read_as_sent() {
        use axum::http::HeaderMap as Heads;
        let echo = |heads: Heads, body: String| async move {
            let h = |n: &str| {
                heads
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-")
                    .to_owned()
            };
            format!("{} {} {body} é✓", h("content-type"), h("x-key"))
        };
        let app = axum::Router::new()
            .route("/v1/ok", axum::routing::post(echo))
            .route(
                "/v1/bad",
                axum::routing::post(|| async { vec![b'a', 0xff, 0xc3, b'b'] }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let t = Transport::new(Timeouts::default(), RetryPolicy::never()).unwrap();
        let ok = reqwest::Url::parse(&format!("http://{addr}/v1/ok")).unwrap();
        let headers = [("x-key", "k1".to_owned())];
        let r = t
            .post_json_text_to(&ok, &headers, br#"{"a":1}"#)
            .await
            .unwrap();
        assert_eq!(
            t.read_bounded(r, ok.as_str()).await.unwrap(),
            r#"application/json k1 {"a":1} é✓"#
        );
        let bad = reqwest::Url::parse(&format!("http://{addr}/v1/bad")).unwrap();
        let r = t.post_json_text_to(&bad, &[], b"{}").await.unwrap();
        assert_eq!(
            t.read_bounded(r, bad.as_str()).await.unwrap(),
            "a\u{FFFD}\u{FFFD}b"
        );
    }

    #[test]
    fn replicas_failing_together_do_not_retry_in_lockstep() {
        let p = RetryPolicy::default();
        let e = status(503, None);
        let waits: std::collections::BTreeSet<Duration> =
            (0..64).map(|_| p.delay(1, &e).unwrap()).collect();
        // 64 draws over a 250 ms span: equal waits for all of them mean no jitter at all.
        assert!(waits.len() > 1, "{waits:?}");
        assert!(
            waits
                .iter()
                .all(|w| *w >= Duration::from_millis(250) && *w <= Duration::from_millis(500))
        );
    }
}
