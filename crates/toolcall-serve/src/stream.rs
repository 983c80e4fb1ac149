//! The streamed turn's driver, shared by every front end: it asks the upstream to stream (in
//! the route's dialect), reads each event into neutral deltas with that dialect's decoder,
//! feeds them to a [`StreamTurn`] and hands the front end the text, reasoning and calls to
//! send (each front end writes them in its own dialect's events), then how the stream ended.
//!
//! With the `retry` policy, a call rejected before anything of it was sent makes the driver
//! drop the rest of the upstream reply and ask again, once, with the error
//! ([`Turn::stream_retry_request`]); the retried reply continues the client's stream.
//! Retried connections are retried on transport errors only until the upstream starts
//! answering: after that, the client owns the bytes. A cut upstream stream, or one whose
//! announced call never completed, ends as [`End::Failed`]: never as a reply.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use toolcall_run::ClientError;
use toolcall_run::client::SseReader;
use toolcall_wire::Limits;
use toolcall_wire::chat::ChatRequest;
pub use toolcall_wire::dialect::End;
use toolcall_wire::dialect::StreamDecoder;

use crate::error::without_userinfo;
use crate::metrics::Metrics;
use crate::turn::{Out, StreamTurn, Turn, log_call};
use crate::upstream::Route;
use crate::{ApiError, AppState};

/// Counts an open stream while it lives.
struct OpenStream(Arc<Metrics>);

impl OpenStream {
    fn new(m: Arc<Metrics>) -> Self {
        m.open_streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(m)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One streamed turn against its upstream.
pub struct TurnStream {
    route: Route,
    events: SseReader,
    decoder: Box<dyn StreamDecoder>,
    pub turn: StreamTurn,
    /// The deltas of the event being read (kept for the next).
    deltas: Vec<toolcall_wire::dialect::Delta>,
    metrics: Arc<Metrics>,
    done: bool,
    _open: OpenStream,
}

/// Asks `route` to stream the answer to `request` (a streamed turn's, so `stream: true`),
/// in the route's dialect.
async fn connect(route: &Route, request: &ChatRequest) -> Result<SseReader, ClientError> {
    let url = route.turn_url(&request.model, true)?;
    let body = route
        .api
        .dialect()
        .encode_request_bytes(request)
        .map_err(|e| ClientError::from_wire(e, url.as_str()))?;
    let headers = route.auth_headers();
    let response = route
        .transport
        .retrying(|| route.transport.post_json_text_to(&url, &headers, &body))
        .await?;
    Ok(route.transport.events(response, url.as_str()))
}

impl TurnStream {
    /// Opens the upstream stream for `turn`; an upstream that refuses gives the client an
    /// error status (nothing was sent yet).
    pub async fn open(state: &AppState, route: &Route, turn: Turn) -> Result<Self, ApiError> {
        let events = connect(route, &turn.upstream_request).await.map_err(|e| {
            Metrics::add(&state.metrics.upstream_errors, 1);
            tracing::warn!(error = %without_userinfo(&e.to_string()), "upstream failed");
            ApiError::upstream(&e)
        })?;
        Ok(TurnStream {
            route: route.clone(),
            events,
            decoder: route.api.dialect().stream_decoder(Limits::default()),
            turn: StreamTurn::new(turn),
            deltas: Vec::new(),
            metrics: state.metrics.clone(),
            done: false,
            _open: OpenStream::new(state.metrics.clone()),
        })
    }

    /// The next outputs, and the end when the stream is over; `None` after the end.
    pub async fn next(&mut self) -> Option<(Vec<Out>, Option<End>)> {
        if self.done {
            return None;
        }
        let mut outs = Vec::new();
        let end = match self.events.next().await {
            Ok(Some((event, data))) => match self.push(&event, &data, &mut outs) {
                Ok(()) => self.retry_if_asked().await,
                Err(e) => Some(self.fail(&e.message)),
            },
            Ok(None) if self.turn.finished => match self.turn.finish(&mut outs) {
                Err(e) => Some(self.fail(&e.message)),
                Ok(()) if self.turn.retry.is_some() => self.retry_if_asked().await,
                Ok(()) => {
                    self.done = true;
                    let checked = &self.turn.checked;
                    Metrics::add(&self.metrics.calls, checked.calls.len() as u64);
                    Metrics::add(&self.metrics.repairs, checked.repair_count() as u64);
                    Metrics::add(&self.metrics.invalid_calls, self.turn.invalid_sent as u64);
                    checked.calls.iter().for_each(log_call);
                    Some(End::Finished(checked.finish_reason()))
                }
            },
            Ok(None) => Some(self.fail("the upstream stream was cut before it finished")),
            Err(e) => Some(self.fail(&e.to_string())),
        };
        Some((outs, end))
    }

    /// Asks the upstream again when the turn wants a retry; a failed retry ends the stream.
    async fn retry_if_asked(&mut self) -> Option<End> {
        let request = self.turn.retry.take()?;
        Metrics::add(&self.metrics.invalid_calls, 1);
        Metrics::add(&self.metrics.upstream_retries_for_validation, 1);
        match connect(&self.route, &request).await {
            Ok(events) => {
                self.events = events;
                self.decoder = self.route.api.dialect().stream_decoder(Limits::default());
                self.turn.restart();
                None
            }
            Err(e) => Some(self.fail(&e.to_string())),
        }
    }

    /// One upstream event: its deltas, in order, to the turn.
    fn push(&mut self, event: &str, data: &str, outs: &mut Vec<Out>) -> Result<(), ApiError> {
        // One buffer for every event's deltas rather than one each.
        let mut deltas = std::mem::take(&mut self.deltas);
        let pushed = self
            .decoder
            .push(event, data, &mut deltas)
            .map_err(|e| ApiError::upstream_reply(&e.to_string()))
            .and_then(|()| deltas.drain(..).try_for_each(|d| self.turn.push(d, outs)));
        deltas.clear();
        self.deltas = deltas;
        pushed
    }

    fn fail(&mut self, message: &str) -> End {
        Metrics::add(&self.metrics.upstream_errors, 1);
        let message = without_userinfo(message);
        tracing::warn!(error = %message, "stream failed");
        self.done = true;
        End::Failed(message)
    }
}
