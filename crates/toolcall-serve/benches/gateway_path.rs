//! The gateway's own CPU per request, in process (no sockets, no HTTP), against the cost of
//! just decoding and encoding the same bodies with `serde_json` as the floor, in one run:
//!
//! - `whole`: the client's request body → the upstream's request body (parse, route, tools
//!   compiled or taken from the cache, serialise), then the upstream's whole reply → the
//!   client's reply body (read, parse the calls written as text, check them against the
//!   schemas, write native `tool_calls`);
//! - `streamed`: the same request, then each upstream SSE data line (a Qwen3 reply with a
//!   think block and one `<tool_call>`, in 3-byte content chunks) → the client's events.
//!
//! No log subscriber is installed, so the gateway's JSON log lines (two per whole request)
//! are not in these figures. `cargo bench -p toolcall-serve --bench gateway_path`; for
//! instruction counts under callgrind see [`profile`].

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use toolcall_serve::chat::parse_request;
use toolcall_serve::front::into_reply;
use toolcall_serve::stream::End;
use toolcall_serve::turn::{StreamTurn, Turn};
use toolcall_serve::{AppState, Config};
use toolcall_wire::chat::ChatRequest;
use toolcall_wire::dialect::ReplyMeta;
use toolcall_wire::{Api, Limits};

const REPLY: &str = "<think>\nThe user wants the weather in Paris.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";

fn request_body(stream: bool) -> Vec<u8> {
    let body = json!({"model": "qwen3-8b", "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"]}}}],
        "stream": stream});
    serde_json::to_vec(&body).unwrap_or_default()
}

fn whole_reply() -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "qwen3-8b",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": REPLY}}]})
    .to_string()
}

/// The upstream's SSE data lines: the reply in 3-byte content chunks, a finish, `[DONE]`.
fn stream_lines() -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "qwen3-8b", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut lines = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let mut rest = REPLY;
    while !rest.is_empty() {
        let mut n = 3.min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        lines.push(chunk(json!({"content": &rest[..n]}), None));
        rest = &rest[n..];
    }
    lines.push(chunk(json!({}), Some("stop")));
    lines.push("[DONE]".to_owned());
    lines
}

/// Request body → the turn and the upstream's request body.
fn prepare(state: &AppState, body: &[u8]) -> (Turn, Vec<u8>) {
    let request = parse_request::<ChatRequest>(body).unwrap_or_default();
    let route = state.upstreams.route(&request.model);
    let Ok(turn) = Turn::for_chat(request, route, &state.config, &state.tools) else {
        panic!("the bench request is valid");
    };
    let upstream = Api::CHAT
        .dialect()
        .encode_request_bytes(&turn.upstream_request)
        .unwrap_or_default();
    (turn, upstream)
}

fn whole(state: &AppState, body: &[u8], reply: &str) -> (Vec<u8>, Vec<u8>) {
    let (turn, upstream) = prepare(state, body);
    let chat = Api::CHAT.dialect();
    let Ok((reply, meta)) = chat.decode_reply(reply, &Limits::default()) else {
        panic!("the bench reply is valid");
    };
    let mut checked = turn.check_reply(reply);
    turn.settle(&mut checked);
    (
        upstream,
        chat.encode_reply_bytes(&into_reply(checked), &meta),
    )
}

fn streamed(state: &AppState, body: &[u8], lines: &[String]) -> (Vec<u8>, usize) {
    let (turn, upstream) = prepare(state, body);
    let chat = Api::CHAT.dialect();
    let mut writer = chat.stream_encoder(ReplyMeta {
        model: turn.upstream_request.model.clone(),
        ..ReplyMeta::default()
    });
    let mut decoder = chat.stream_decoder(Limits::default());
    let mut st = StreamTurn::new(turn);
    let mut events = Vec::new();
    let mut deltas = Vec::new();
    for line in lines {
        let mut outs = Vec::new();
        deltas.clear();
        if decoder.push("", line, &mut deltas).is_err() {
            panic!("the bench stream is valid");
        }
        for d in deltas.drain(..) {
            if st.push(d, &mut outs).is_err() {
                panic!("the bench stream is valid");
            }
        }
        writer.push(outs, &mut events);
    }
    let mut outs = Vec::new();
    let end = match st.finish(&mut outs) {
        Ok(()) => End::Finished(st.checked.finish_reason()),
        Err(e) => End::Failed(e.message),
    };
    writer.push(outs, &mut events);
    writer.end(end, &mut events);
    (upstream, events.len())
}

/// `serde_json` alone: decode and encode each body as a `Value`.
fn floor(bodies: &[&[u8]]) -> usize {
    bodies
        .iter()
        .map(|b| {
            let v: Value = serde_json::from_slice(b).unwrap_or_default();
            serde_json::to_vec(&v).map_or(0, |v| v.len())
        })
        .sum()
}

/// The bodies both paths run on.
struct Inputs {
    state: AppState,
    whole_body: Vec<u8>,
    stream_body: Vec<u8>,
    reply: String,
    lines: Vec<String>,
}

impl Inputs {
    fn new() -> Inputs {
        let state = AppState::new(Config {
            upstream: "http://127.0.0.1:9".into(),
            ..Config::default()
        })
        .unwrap_or_else(|e| panic!("config: {e}"));
        Inputs {
            state,
            whole_body: request_body(false),
            stream_body: request_body(true),
            reply: whole_reply(),
            lines: stream_lines(),
        }
    }

    fn stream_bodies(&self) -> Vec<&[u8]> {
        let mut bodies: Vec<&[u8]> = vec![&self.stream_body];
        bodies.extend(
            self.lines
                .iter()
                .filter(|l| *l != "[DONE]")
                .map(|l| l.as_bytes()),
        );
        bodies
    }
}

fn benches(c: &mut Criterion) {
    let i = Inputs::new();
    let (state, whole_body, stream_body, reply, lines) =
        (&i.state, &i.whole_body, &i.stream_body, &i.reply, &i.lines);
    // The answers checked once, so the bench measures the real path.
    let (_, out) = whole(state, whole_body, reply);
    let out: Value = serde_json::from_slice(&out).unwrap_or_default();
    assert_eq!(
        out["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert!(streamed(state, stream_body, lines).1 > 10);

    let mut g = c.benchmark_group("whole");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("gateway", |b| {
        b.iter(|| whole(state, black_box(whole_body), black_box(reply)))
    });
    g.bench_function("serde_json_floor", |b| {
        b.iter(|| floor(black_box(&[whole_body, reply.as_bytes()])))
    });
    g.finish();

    let mut g = c.benchmark_group("streamed");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("gateway", |b| {
        b.iter(|| streamed(state, black_box(stream_body), black_box(lines)))
    });
    let bodies = i.stream_bodies();
    g.bench_function("serde_json_floor", |b| b.iter(|| floor(black_box(&bodies))));
    g.finish();
}

/// `GATEWAY_PATH_PROFILE=PATH:N` runs one path N times and exits, for instruction counts
/// (`valgrind --tool=callgrind`): a path's instructions per request are the count at N minus
/// the count at 0 (setup), divided by N. PATH: `whole`, `whole_floor`, `streamed`,
/// `streamed_floor`.
fn profile(spec: &str) {
    let (path, n) = spec.split_once(':').unwrap_or((spec, "1000"));
    let n: usize = n
        .parse()
        .unwrap_or_else(|_| panic!("GATEWAY_PATH_PROFILE={spec}"));
    let i = Inputs::new();
    let bodies = i.stream_bodies();
    // Warm as criterion's warm-up does (the tools cache, lazily built tables), so N = 0
    // counts the same one-off work as any N.
    black_box(whole(&i.state, &i.whole_body, &i.reply));
    black_box(streamed(&i.state, &i.stream_body, &i.lines));
    for _ in 0..n {
        match path {
            "whole" => drop(black_box(whole(&i.state, &i.whole_body, &i.reply))),
            "whole_floor" => drop(black_box(floor(&[&i.whole_body, i.reply.as_bytes()]))),
            "streamed" => drop(black_box(streamed(&i.state, &i.stream_body, &i.lines))),
            "streamed_floor" => drop(black_box(floor(&bodies))),
            other => panic!("unknown path {other}"),
        }
    }
}

criterion_group!(gateway_path, benches);

fn main() {
    if let Ok(spec) = std::env::var("GATEWAY_PATH_PROFILE") {
        return profile(&spec);
    }
    gateway_path();
    Criterion::default().configure_from_args().final_summary();
}
