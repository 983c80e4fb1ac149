//! The accept loop: every connection held to the configured bounds.
//!
//! `axum::serve` bounds neither how many connections are open nor how long a client may take
//! to send a request, so half-sent requests held every descriptor and locked real clients
//! out. This loop serves the router with hyper-util's `auto` builder (HTTP/1 and HTTP/2, as
//! `axum::serve` does) and adds:
//!
//! - **a cap on open connections** ([`ConnLimits::max_connections`]): beyond it, new
//!   connections are not accepted and **wait** in the kernel's listen backlog until an open
//!   one closes (none is refused by the gateway itself);
//! - **a header read timeout**: a request's head must be complete within it, counted from
//!   the connection's accept, or on a kept-alive connection from the first byte of the next
//!   request;
//! - **an idle keep-alive timeout**: a connection with no request in flight and no byte of
//!   a next request is closed after it.
//!
//! The body read timeout is the router's ([`crate::body`]), as it answers `408`.
//!
//! Why a watchdog of our own rather than hyper's `http1::Builder::header_read_timeout`:
//! hyper starts that timer whenever a connection waits for a head, so on a kept-alive
//! connection it is also the idle limit (an idle keep-alive timeout longer than the header
//! timeout could not be set), and HTTP/2 has no such timer. One watchdog per connection
//! looks at two counters (requests in flight, their response bodies included; bytes read)
//! a few times per timeout and closes the connection when one of its limits passed.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower::ServiceExt;

/// How long clients may hold a connection, and how many may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// The longest a request's head may take; `None`: no limit.
    pub header_read: Option<Duration>,
    /// The longest a connection may stay open with nothing in flight; `None`: no limit.
    pub keep_alive: Option<Duration>,
    /// Most connections open at once (at least 1); more wait to be accepted.
    pub max_connections: usize,
}

impl ConnLimits {
    /// How often a connection's watchdog looks: a quarter of the shortest limit, between
    /// 10 ms and 1 s (a limit is thus kept to within a quarter of itself, or 1 s).
    fn tick(&self) -> Option<Duration> {
        let shortest = [self.header_read, self.keep_alive]
            .into_iter()
            .flatten()
            .min()?;
        Some((shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then stops
/// accepting, lets open requests and streams finish, and returns once every connection
/// closed. Accepted connections get `TCP_NODELAY`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // Dropping `stop_rx` tells the connections to finish; each holds a `done_rx` clone, and
    // `done_tx.closed()` resolves once the last one is gone.
    let (stop_tx, stop_rx) = watch::channel(());
    let (done_tx, done_rx) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let app = app.clone();
        let stop = stop_tx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            serve_connection(tcp, app, limits, stop).await;
            drop(permit);
            drop(done);
        });
    }
    drop(listener);
    drop(stop_rx);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

/// An accept error: a connection that failed before it was accepted is skipped; running
/// out of descriptors (or anything else) waits a little so as not to spin, as hyper did.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn serve_connection(
    tcp: TcpStream,
    app: Router,
    limits: ConnLimits,
    stop: watch::Sender<()>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Counted {
        inner: tcp,
        activity: activity.clone(),
    });
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let in_flight = InFlight::begin(&requests);
        let app = app.clone();
        async move {
            let response = match app.oneshot(request.map(Body::new)).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| {
                Body::new(Held {
                    body,
                    _in_flight: in_flight,
                })
            }))
        }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let mut conn = pin!(builder.serve_connection_with_upgrades(io, service));
    let mut stopping = pin!(stop.closed());
    let mut stopped = false;
    let mut watchdog = pin!(watch(&activity, limits));
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(error = %e, "connection ended");
                }
                return;
            }
            () = &mut stopping, if !stopped => {
                stopped = true;
                conn.as_mut().graceful_shutdown();
            }
            why = &mut watchdog => {
                tracing::debug!(why, "connection closed");
                return;
            }
        }
    }
}

/// Resolves when the connection passed one of its limits, with which one.
async fn watch(activity: &Activity, limits: ConnLimits) -> &'static str {
    let Some(tick) = limits.tick() else {
        return std::future::pending().await;
    };
    let mut ticks = tokio::time::interval(tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Some(why) = activity.expired(Instant::now(), &limits) {
            return why;
        }
    }
}

/// What a connection's watchdog looks at.
#[derive(Debug)]
struct Activity {
    /// Bytes read from the client so far.
    read: AtomicU64,
    /// Requests being answered, until their response body ended or was dropped.
    in_flight: AtomicUsize,
    idle: Mutex<Idle>,
}

/// Since when nothing is in flight.
#[derive(Debug)]
struct Idle {
    since: Instant,
    /// `read` then: more means a next request is arriving.
    read_then: u64,
    /// When the watchdog first saw bytes of the next request.
    arriving_since: Option<Instant>,
    /// No request yet on this connection.
    fresh: bool,
}

impl Activity {
    fn new() -> Self {
        Activity {
            read: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            idle: Mutex::new(Idle {
                since: Instant::now(),
                read_then: 0,
                arriving_since: None,
                fresh: true,
            }),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Idle> {
        // Every change under the lock is a plain assignment: a poisoned lock is consistent.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Which limit the connection passed at `now`, if any.
    fn expired(&self, now: Instant, limits: &ConnLimits) -> Option<&'static str> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let mut idle = self.idle();
        let read = self.read.load(Ordering::Acquire);
        let past = |since: Instant, limit: Option<Duration>| {
            limit.is_some_and(|l| now.saturating_duration_since(since) >= l)
        };
        if idle.fresh {
            // A new connection's first head, counted from the accept.
            return past(idle.since, limits.header_read).then_some("header read timeout");
        }
        if read == idle.read_then {
            return past(idle.since, limits.keep_alive).then_some("idle keep-alive timeout");
        }
        let since = *idle.arriving_since.get_or_insert(now);
        past(since, limits.header_read).then_some("header read timeout")
    }
}

/// One request in flight on a connection, from its head to its response body's end.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        // Under the lock, so the watchdog never sees "nothing in flight" with a stale `Idle`.
        let mut idle = activity.idle();
        if activity.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            *idle = Idle {
                since: Instant::now(),
                read_then: activity.read.load(Ordering::Acquire),
                arriving_since: None,
                fresh: false,
            };
        }
    }
}

/// A response body that keeps its request in flight until it ends or is dropped.
struct Held {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Held {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The client's socket, counting the bytes read from it.
struct Counted {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.activity.read.fetch_add(read as u64, Ordering::AcqRel);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnLimits {
        ConnLimits {
            header_read: Some(Duration::from_secs(10)),
            keep_alive: Some(Duration::from_secs(60)),
            max_connections: 8,
        }
    }

    #[test]
    fn each_limit_counts_from_its_own_start() {
        let a = Arc::new(Activity::new());
        let t0 = a.idle().since;
        let s = Duration::from_secs;
        // A fresh connection has the header timeout, whether or not bytes came.
        assert_eq!(a.expired(t0 + s(9), &limits()), None);
        assert_eq!(
            a.expired(t0 + s(10), &limits()),
            Some("header read timeout")
        );
        // A request in flight is never cut by the watchdog.
        let r = InFlight::begin(&a);
        assert_eq!(a.expired(t0 + s(1000), &limits()), None);
        drop(r);
        let t1 = a.idle().since;
        // Kept alive with nothing arriving: the keep-alive timeout.
        assert_eq!(a.expired(t1 + s(30), &limits()), None);
        assert_eq!(
            a.expired(t1 + s(60), &limits()),
            Some("idle keep-alive timeout")
        );
        // A next head arriving: the header timeout from when it was first seen.
        a.read.fetch_add(5, Ordering::AcqRel);
        assert_eq!(a.expired(t1 + s(50), &limits()), None);
        assert_eq!(a.expired(t1 + s(59), &limits()), None);
        assert_eq!(
            a.expired(t1 + s(60), &limits()),
            Some("header read timeout")
        );
        let none = ConnLimits {
            header_read: None,
            keep_alive: None,
            ..limits()
        };
        assert_eq!(none.tick(), None);
        assert_eq!(limits().tick(), Some(Duration::from_secs(1)));
    }
}
