//! HTTP to model servers, shared by the clients here and the `toolcall serve` gateway's
//! upstream calls: connect and read timeouts, bounded bodies and SSE streams, and bounded
//! retries with exponential backoff on 429/502/503/504, connection errors and cut streams,
//! honouring `Retry-After`.
//!
//! A request is sent with [`Transport::retrying`] around one attempt (post and read), so a
//! retry covers what the caller still owns: the clients retry a whole reply (a model request
//! has no side effects), the gateway retries only until it starts answering its client.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use super::{ClientError, MAX_RESPONSE_BYTES, TimeoutPhase};
use toolcall_wire::excerpt;

/// How long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// Between two reads of the response (a model that stops sending).
    pub read: Duration,
    /// The whole request, when set.
    pub total: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(120),
            total: None,
        }
    }
}

/// When and how often to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
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

    /// The wait before retry number `retry` (0-based) after `err`; `None` = do not retry.
    pub fn delay(&self, retry: u32, err: &ClientError) -> Option<Duration> {
        if retry >= self.max_retries || !err.is_retryable() {
            return None;
        }
        if let ClientError::Status {
            retry_after: Some(after),
            ..
        } = err
        {
            return (*after <= self.max_delay).then_some(*after);
        }
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        Some(self.base_delay.saturating_mul(factor).min(self.max_delay))
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
            .read_timeout(timeouts.read);
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
        let response = req
            .send()
            .await
            .map_err(|e| self.classify(e, url, TimeoutPhase::Connect))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let body = self.read_bounded(response, url).await.unwrap_or_default();
        Err(ClientError::Status {
            status: status.as_u16(),
            body_tail: excerpt(&body, 500),
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
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.classify(e, url, TimeoutPhase::Read))?
        {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(ClientError::TooLarge(MAX_RESPONSE_BYTES));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// A transport error with its kind kept: timeout, refused connection, or other.
    pub fn classify(&self, e: reqwest::Error, url: &str, phase: TimeoutPhase) -> ClientError {
        classify(e, url, phase, self.timeouts)
    }

    /// Server-sent events of a response, bounded (see [`SseReader`]).
    pub fn events(&self, response: reqwest::Response, url: &str) -> SseReader {
        SseReader::new(response, url, self.timeouts)
    }
}

fn classify(e: reqwest::Error, url: &str, phase: TimeoutPhase, timeouts: Timeouts) -> ClientError {
    let url = url.to_owned();
    if e.is_timeout() {
        let (phase, after) = if e.is_connect() {
            (TimeoutPhase::Connect, timeouts.connect)
        } else if phase == TimeoutPhase::Connect && timeouts.total.is_none() {
            // Sent, but the headers never came: the read timeout fired.
            (TimeoutPhase::Read, timeouts.read)
        } else {
            (phase, timeouts.total.unwrap_or(timeouts.read))
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
    url: String,
    timeouts: Timeouts,
}

impl SseReader {
    fn new(response: reqwest::Response, url: &str, timeouts: Timeouts) -> Self {
        let over_limit = Arc::new(AtomicBool::new(false));
        let flag = over_limit.clone();
        let mut seen = 0usize;
        let bytes = response.bytes_stream().take_while(move |chunk| {
            if let Ok(b) = chunk {
                seen = seen.saturating_add(b.len());
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
                    classify(e, &self.url, TimeoutPhase::Read, self.timeouts)
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
        assert_eq!(p.delay(0, &e), Some(Duration::from_millis(100)));
        assert_eq!(p.delay(1, &e), Some(Duration::from_millis(200)));
        assert_eq!(p.delay(2, &e), Some(Duration::from_millis(300)));
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
        assert_eq!(
            p.delay(0, &status(429, Some(2))),
            Some(Duration::from_secs(2))
        );
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
}
