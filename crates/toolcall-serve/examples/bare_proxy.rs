//! The baseline the gateway's loopback figures are compared with (`bench/gateway.sh`): a
//! trivial forwarder built from the same HTTP parts as the gateway (axum's hyper server in,
//! reqwest's hyper client out, `TCP_NODELAY` on accepted sockets), that relays each
//! `/v1/chat/completions` body to the upstream and streams the upstream's answer back as
//! it comes, reading nothing of either. What the gateway costs beyond this is its own work.
//!
//! `cargo run --release -p toolcall-serve --example bare_proxy -- 127.0.0.1:9103 http://127.0.0.1:9101`
//!
//! `BARE_SPIN_US=N` (read once at start; default 0): a busy wait of N µs at the start of each
//! request, to give the bare proxy the gateway's request rate and see what the kernel costs
//! at that rate (BENCHMARKS.md, "Gateway CPU per request, session 40", round 2).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;

#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    /// Parsed once, as the gateway's routes hold theirs.
    url: reqwest::Url,
    /// `BARE_SPIN_US`: the busy wait at the start of each request (zero: none).
    spin: std::time::Duration,
}

async fn forward(State(up): State<Upstream>, body: Bytes) -> Response {
    if !up.spin.is_zero() {
        let start = std::time::Instant::now();
        while start.elapsed() < up.spin {
            std::hint::spin_loop();
        }
    }
    let sent = up
        .client
        .post(up.url.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let Ok(answer) = sent else {
        return Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Body::empty())
            .unwrap_or_default();
    };
    let mut out = Response::builder().status(answer.status().as_u16());
    if let Some(t) = answer.headers().get(header::CONTENT_TYPE) {
        out = out.header(header::CONTENT_TYPE, t.as_bytes());
    }
    out.body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9103".into());
    let upstream = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:9101".into());
    let state = Upstream {
        client: reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .map_err(std::io::Error::other)?,
        url: reqwest::Url::parse(&format!(
            "{}/v1/chat/completions",
            upstream.trim_end_matches('/')
        ))
        .map_err(std::io::Error::other)?,
        spin: std::time::Duration::from_micros(
            std::env::var("BARE_SPIN_US")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        ),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(forward))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("bare proxy listening on http://{}", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
