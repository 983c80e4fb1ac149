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

type Bytes = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

/// Server-sent events of a response, at most [`MAX_RESPONSE_BYTES`] in all (which also bounds
/// one line), with read timeouts and cut connections reported by kind.
pub struct SseReader {
    bytes: Bytes,
    parser: SseParser,
    /// Events parsed and not yet given out: their names and data.
    ready: std::collections::VecDeque<(String, String)>,
    /// The body ended.
    ended: bool,
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
            bytes: Box::pin(bytes),
            parser: SseParser::default(),
            ready: std::collections::VecDeque::new(),
            ended: false,
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
        loop {
            if let Some((event, data)) = self.ready.pop_front() {
                let trimmed = data.trim();
                if trimmed.is_empty() {
                    continue;
                }
                let data = if trimmed.len() == data.len() {
                    data
                } else {
                    trimmed.to_owned()
                };
                return Ok(Some((event, data)));
            }
            if self.ended {
                break;
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => self.parser.push(&chunk, &mut self.ready),
                Some(Err(e)) => {
                    let last = Duration::from_millis(self.last_bytes_ms.load(Ordering::Relaxed));
                    let idle = self.opened.elapsed().saturating_sub(last);
                    return Err(classify(e, &self.url, idle, self.timeouts));
                }
                None => {
                    self.ended = true;
                    self.parser
                        .finish(&mut self.ready)
                        .map_err(|e| ClientError::BadResponse(format!("SSE stream: {e}")))?;
                }
            }
        }
        if self.over_limit.load(Ordering::Relaxed) {
            return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
        }
        Ok(None)
    }
}

/// Server-sent events read from a body's bytes, event for event as `eventsource-stream` 0.2
/// (which the gateway used before) reads them: the bytes decoded as UTF-8 across chunk
/// boundaries (bytes that are not valid UTF-8 hold back everything after them, and are an
/// error once the body ends), a byte-order mark dropped at the start, lines ended by CRLF,
/// CR or LF (a CR at the end of what has come waits for a possible LF), `event:` naming the
/// event, `data:` lines joined with LF, comments and other fields skipped, and an event
/// given (named `message` when unnamed) at an empty line if it has data; an event not
/// ended by an empty line when the body ends is not given. Its events are names and data
/// only (the gateway reads no `id` or `retry`).
///
/// Written by hand because `eventsource-stream`'s nom parser and its copy of the rest of
/// the buffer after every line cost about 7 000 instructions per event, a fifth of a
/// streamed request through the gateway (`bench/instructions.sh 100 true`, session 38);
/// this reads an event in a few hundred. The test
/// `the_hand_written_sse_reader_reads_as_eventsource_stream` holds the two to the same
/// events and errors on generated bodies cut into any chunks.
#[derive(Debug, Default)]
struct SseParser {
    /// Bytes held back as not (yet) valid UTF-8.
    pending: Vec<u8>,
    /// Text not yet read as whole lines.
    text: String,
    /// Some text came (the byte-order mark is dropped only at the start).
    started: bool,
    /// The event being read: its name and data.
    event: String,
    data: String,
}

impl SseParser {
    /// Reads one chunk of the body; events it completes go to `out`.
    fn push(&mut self, bytes: &[u8], out: &mut std::collections::VecDeque<(String, String)>) {
        if self.pending.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(text) => self.push_text(text, out),
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    self.pending = rest.to_vec();
                    // Valid up to there, by `from_utf8`'s answer.
                    let text = std::str::from_utf8(valid).unwrap_or_default();
                    self.push_text(text, out);
                }
            }
        } else {
            let mut all = std::mem::take(&mut self.pending);
            all.extend_from_slice(bytes);
            match String::from_utf8(all) {
                Ok(text) => self.push_text(&text, out),
                Err(e) => {
                    let valid = e.utf8_error().valid_up_to();
                    let mut all = e.into_bytes();
                    self.pending = all.split_off(valid);
                    let text = std::str::from_utf8(&all).unwrap_or_default();
                    self.push_text(text, out);
                }
            }
        }
    }

    /// The end of the body: bytes still held back are an error (`UTF8 error: …`, as
    /// `eventsource-stream` words it).
    fn finish(
        &mut self,
        out: &mut std::collections::VecDeque<(String, String)>,
    ) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        match String::from_utf8(std::mem::take(&mut self.pending)) {
            Ok(text) => {
                self.push_text(&text, out);
                Ok(())
            }
            Err(e) => Err(format!("UTF8 error: {e}")),
        }
    }

    fn push_text(&mut self, text: &str, out: &mut std::collections::VecDeque<(String, String)>) {
        if text.is_empty() {
            return;
        }
        let text = if self.started {
            text
        } else {
            self.started = true;
            text.strip_prefix('\u{feff}').unwrap_or(text)
        };
        self.text.push_str(text);
        let mut at = 0;
        let bytes = self.text.as_bytes();
        while let Some(i) = memchr::memchr2(b'\n', b'\r', &bytes[at..]) {
            let end = at + i;
            let next = match bytes[end] {
                b'\n' => end + 1,
                // A CR last of what came may be the first half of a CRLF.
                _ if end + 1 == bytes.len() => break,
                _ if bytes[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            // Split at ASCII bytes: char boundaries.
            let line = &self.text[at..end];
            at = next;
            if line.is_empty() {
                let mut data = std::mem::take(&mut self.data);
                let mut event = std::mem::take(&mut self.event);
                // Each data line ends with the LF added after it: the last one goes.
                if data.pop().is_some() {
                    if event.is_empty() {
                        event.push_str("message");
                    }
                    out.push_back((event, data));
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (name, value) = match line.split_once(':') {
                Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match name {
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                "data" => {
                    // Room for the LF too: one allocation, not one and a reallocation.
                    self.data.reserve(value.len() + 1);
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                _ => {}
            }
        }
        self.text.drain(..at);
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

    /// An upstream's event stream that starts with a byte-order mark, the mark itself split
    /// across two writes: its events are read (the reader of eventsource-stream 0.2.3, used
    /// before, sliced inside the mark and panicked the task reading the stream).
    #[tokio::test]
    async fn an_event_stream_starting_with_a_byte_order_mark_is_read() {
        use futures::stream;
        let bom = "\u{feff}".as_bytes();
        let pieces: Vec<Vec<u8>> = vec![
            bom[..1].to_vec(),
            [&bom[1..], b"data: {\"a\":1}\r\n\r\nevent: done\n"].concat(),
            b"data:  [DONE] \n\n".to_vec(),
        ];
        let app = axum::Router::new().route(
            "/v1/sse",
            axum::routing::post(move || {
                let chunks = pieces.clone();
                async move {
                    let body = stream::iter(
                        chunks
                            .into_iter()
                            .map(Ok::<Vec<u8>, std::convert::Infallible>),
                    );
                    axum::body::Body::from_stream(body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let t = Transport::new(Timeouts::default(), RetryPolicy::never()).unwrap();
        let url = reqwest::Url::parse(&format!("http://{addr}/v1/sse")).unwrap();
        let r = t.post_json_text_to(&url, &[], b"{}").await.unwrap();
        let mut events = t.events(r, url.as_str());
        let mut got = Vec::new();
        while let Some(e) = events.next().await.unwrap() {
            got.push(e);
        }
        assert_eq!(
            got,
            [
                ("message".to_owned(), r#"{"a":1}"#.to_owned()),
                ("done".to_owned(), "[DONE]".to_owned()),
            ]
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

    /// The hand-written reader gives the events and errors `eventsource-stream` 0.2 gives
    /// (as the reader used it: each event's name and trimmed data, when not empty), for
    /// bodies of SSE-like lines (CRLF, CR and LF ends, comments, BOMs, fields without a
    /// colon, multi-byte and invalid UTF-8) cut into chunks anywhere.
    #[test]
    fn the_hand_written_sse_reader_reads_as_eventsource_stream() {
        use eventsource_stream::Eventsource;
        use proptest::prelude::*;
        type Chunks = Vec<Result<Vec<u8>, std::convert::Infallible>>;
        /// The events (names and trimmed data) and the error that ended the stream.
        type Read = (Vec<(String, String)>, Option<String>);
        /// `None`: eventsource-stream panicked (it slices a leading byte-order mark at
        /// byte 1, inside the mark's three bytes).
        fn theirs(chunks: Chunks) -> Option<Read> {
            let items = std::panic::catch_unwind(|| {
                let stream = futures::stream::iter(chunks).eventsource();
                futures::executor::block_on(stream.collect::<Vec<_>>())
            })
            .ok()?;
            let mut events = Vec::new();
            for item in items {
                match item {
                    Ok(e) => {
                        let data = e.data.trim();
                        if !data.is_empty() {
                            events.push((e.event, data.to_owned()));
                        }
                    }
                    Err(e) => return Some((events, Some(e.to_string()))),
                }
            }
            Some((events, None))
        }
        fn ours(chunks: Chunks) -> Read {
            let mut parser = SseParser::default();
            let mut ready = std::collections::VecDeque::new();
            let mut events = Vec::new();
            let mut drain = |ready: &mut std::collections::VecDeque<(String, String)>| {
                for (event, data) in ready.drain(..) {
                    let data = data.trim();
                    if !data.is_empty() {
                        events.push((event, data.to_owned()));
                    }
                }
            };
            for chunk in chunks.into_iter().flatten() {
                parser.push(&chunk, &mut ready);
                drain(&mut ready);
            }
            let end = parser.finish(&mut ready).err();
            drain(&mut ready);
            (events, end)
        }
        let piece = prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"data".to_vec()),
            Just(b"event: ping".to_vec()),
            Just(b"event:".to_vec()),
            Just(b"id: 7".to_vec()),
            Just(b"retry: 10".to_vec()),
            Just(b": comment".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\n\n".to_vec()),
            Just(b" ".to_vec()),
            Just(b":".to_vec()),
            Just(b"{\"a\": 1}".to_vec()),
            Just("\u{feff}".as_bytes().to_vec()),
            Just("é✓😀".as_bytes().to_vec()),
            Just(vec![0xff]),
            Just(vec![0xe2, 0x9c]),
            Just(b"[DONE]".to_vec()),
        ];
        let body = proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat());
        let cuts = proptest::collection::vec(0usize..64, 0..6);
        proptest!(ProptestConfig::with_cases(2000), |(body in body, mut cuts in cuts)| {
            cuts.iter_mut().for_each(|c| *c %= body.len() + 1);
            cuts.sort_unstable();
            let mut chunks: Chunks = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([body.len()]) {
                chunks.push(Ok(body[from..c].to_vec()));
                from = c;
            }
            match theirs(chunks.clone()) {
                Some(theirs) => prop_assert_eq!(ours(chunks), theirs),
                // Only a body whose text starts with the mark: read here without it.
                None => {
                    let bom = "\u{feff}".as_bytes();
                    let valid = match std::str::from_utf8(&body) {
                        Ok(_) => body.len(),
                        Err(e) => e.valid_up_to(),
                    };
                    prop_assert!(body[..valid].starts_with(bom), "{body:?}");
                    let rest: Chunks = vec![Ok(body[bom.len()..].to_vec())];
                    let whole: Chunks = vec![Ok(body.clone())];
                    prop_assert_eq!(ours(chunks), ours(whole.clone()));
                    if let Some(theirs) = theirs(rest) {
                        prop_assert_eq!(ours(whole), theirs);
                    }
                }
            }
        });
        // A stream read whole, for the record of what both give.
        let whole =
            b"\xef\xbb\xbfdata: a\r\n\r\nevent: e\ndata: b\ndata:c\n\n: x\n\ndata: cut".to_vec();
        let expected = vec![
            ("message".to_owned(), "a".to_owned()),
            ("e".to_owned(), "b\nc".to_owned()),
        ];
        assert_eq!(ours(vec![Ok(whole.clone())]), (expected, None));
        // eventsource-stream panicked on the byte-order mark; without it, the same events.
        assert_eq!(theirs(vec![Ok(whole.clone())]), None);
        assert_eq!(
            theirs(vec![Ok(whole[3..].to_vec())]),
            Some(ours(vec![Ok(whole)]))
        );
    }
}
