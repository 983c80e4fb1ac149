//! The stdio transport of [`crate::serve_stdio`]: newline-delimited JSON-RPC with an answer
//! for every request, also for the ones that cannot be served.
//!
//! rmcp's own line transport ignores a line that is not JSON (so does every official SDK, to
//! avoid error storms with peers that echo) and answers a message it cannot decode with
//! `-32600` and a null id even when the id was readable; a client then waits forever for its
//! request. JSON-RPC 2.0 asks for more, and so does toolcall: this transport reads the lines
//! itself (bounded, like rmcp's: [`MAX_LINE`]) and
//!
//! - a line that is not JSON (not UTF-8, cut, nested deeper than serde_json's 128 levels,
//!   longer than [`MAX_LINE`]) gets `-32700 Parse error` with id null;
//! - JSON that is not a message object gets `-32600 Invalid Request` with id null;
//! - a request whose id is readable is always answered under that id: `tools/call` without a
//!   string `name`, or with `arguments` that are not an object, gets `-32602 Invalid params`,
//!   and any other request rmcp cannot decode gets `-32602` (a known method) or `-32600`;
//! - responses and notifications are never answered (no storm: our error replies are
//!   responses, so a peer echoing them back gets nothing).
//!
//! Everything else goes to rmcp unchanged. Writes (rmcp's and these replies) go through one
//! writer task, whole lines at a time, so a reply never interleaves with another message.

use std::io;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest line (one message) read; a longer one is dropped and answered `-32700`.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// Lines waiting for the writer; `send` waits when it is full (back-pressure on stdout).
const WRITE_QUEUE: usize = 64;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// JSON-RPC over a line-oriented byte stream pair, answering what rmcp would not; see the
/// module doc.
pub struct LineTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Skipping the rest of an over-long line (state kept here: `receive` may be cancelled).
    discarding: bool,
    /// An error reply not yet handed to the writer (kept across a cancelled `receive`).
    pending: Option<Vec<u8>>,
    out: mpsc::Sender<Vec<u8>>,
}

/// A transport over `read`/`write`, and the writer task: await it after the service ends so
/// every reply is written before the process exits.
pub fn line_transport<R, W>(read: R, write: W) -> (LineTransport<R>, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut queue) = mpsc::channel::<Vec<u8>>(WRITE_QUEUE);
    let writer = tokio::spawn(async move {
        let mut write = write;
        while let Some(line) = queue.recv().await {
            if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                // The client closed its end: nothing more can reach it.
                return;
            }
        }
    });
    let transport = LineTransport {
        read: BufReader::new(read),
        line: Vec::new(),
        discarding: false,
        pending: None,
        out,
    };
    (transport, writer)
}

enum Read {
    Line,
    Oversized,
    End,
}

/// What to do with one line.
enum Verdict {
    Deliver(Box<RxJsonRpcMessage<RoleServer>>),
    Answer(Vec<u8>),
    Ignore,
}

impl<R: AsyncRead + Unpin + Send> LineTransport<R> {
    /// Reads one line into `self.line` without letting it grow past [`MAX_LINE`];
    /// cancellation-safe (the partial line stays in `self.line`).
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return Read::End,
                Ok(available) => available,
                Err(e) => {
                    tracing::error!("cannot read the MCP client's input: {e}");
                    return Read::End;
                }
            };
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut done = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len().saturating_add(take) > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                done = Some(Read::Oversized);
            } else {
                self.line
                    .extend_from_slice(available.get(..take).unwrap_or_default());
                if newline.is_some() {
                    done = Some(Read::Line);
                }
            }
            self.read.consume(take);
            if let Some(read) = done {
                return read;
            }
        }
    }
}

fn error_line(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// The request's params problem for a `tools/call`, if any.
fn tools_call_params_problem(params: Option<&Value>) -> Option<String> {
    let Some(Value::Object(params)) = params else {
        return Some("tools/call needs params: an object with the tool's name".into());
    };
    if !params.get("name").is_some_and(Value::is_string) {
        return Some("tools/call needs params.name, the tool's name as a string".into());
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => None,
        Some(other) => Some(format!(
            "tools/call params.arguments must be an object, got {}",
            json_kind(other)
        )),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Methods rmcp serves (a request of one it cannot decode has bad params).
fn is_known_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
            | "completion/complete"
            | "logging/setLevel"
    )
}

/// Decides what to do with one line (without its newline).
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    // serde_json stops at 128 levels of nesting, checks UTF-8 and the whole syntax.
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Verdict::Answer(error_line(Value::Null, PARSE_ERROR, parse_error(&e))),
    };
    let Value::Object(message) = value else {
        return Verdict::Answer(error_line(
            Value::Null,
            INVALID_REQUEST,
            format!(
                "Invalid Request: a message is a JSON object, got {}",
                json_kind(&value)
            ),
        ));
    };
    let id = match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        _ => None,
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let (Some(id), Some("tools/call")) = (&id, method.as_deref())
        && let Some(problem) = tools_call_params_problem(message.get("params"))
    {
        return Verdict::Answer(error_line(
            id.clone(),
            INVALID_PARAMS,
            format!("Invalid params: {problem}"),
        ));
    }
    let is_request = method.is_some() && message.contains_key("id");
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(Value::Object(message)) {
        Ok(decoded) => Verdict::Deliver(Box::new(decoded)),
        Err(e) if is_request => {
            let (code, what) = match method.as_deref() {
                Some(m) if is_known_method(m) && id.is_some() => (INVALID_PARAMS, "Invalid params"),
                _ => (INVALID_REQUEST, "Invalid Request"),
            };
            Verdict::Answer(error_line(
                id.unwrap_or(Value::Null),
                code,
                format!("{what}: {e}"),
            ))
        }
        Err(e) => {
            // A notification or a response: JSON-RPC answers neither.
            tracing::debug!("ignoring an MCP message that cannot be decoded: {e}");
            Verdict::Ignore
        }
    }
}

fn parse_error(e: &serde_json::Error) -> String {
    format!("Parse error: the line is not JSON ({e})")
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            out.send(line)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::NotConnected, "the client is gone"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.pending.is_some() {
                let permit = self.out.reserve().await.ok()?;
                if let Some(reply) = self.pending.take() {
                    permit.send(reply);
                }
            }
            match self.read_line().await {
                Read::Line => {}
                Read::Oversized => {
                    self.pending = Some(error_line(
                        Value::Null,
                        PARSE_ERROR,
                        format!("Parse error: the message is longer than {MAX_LINE} bytes"),
                    ));
                    continue;
                }
                Read::End => return None,
            }
            let verdict = judge(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
            self.line.clear();
            match verdict {
                Verdict::Deliver(message) => return Some(*message),
                Verdict::Answer(reply) => self.pending = Some(reply),
                Verdict::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once every sender (this one and rmcp's pending sends) is gone.
        let (closed, _) = mpsc::channel(1);
        self.out = closed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn answer(line: &[u8]) -> Value {
        match judge(line) {
            Verdict::Answer(reply) => serde_json::from_slice(&reply).unwrap(),
            Verdict::Deliver(m) => panic!("delivered: {m:?}"),
            Verdict::Ignore => panic!("ignored"),
        }
    }

    #[test]
    fn lines_that_are_not_json_are_parse_errors_with_a_null_id() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for line in [
            &b"garbage"[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/li"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}",
            deep.as_bytes(),
        ] {
            let reply = answer(line);
            assert_eq!(reply["error"]["code"], PARSE_ERROR, "{reply}");
            assert_eq!(reply["id"], Value::Null);
            assert_eq!(reply["jsonrpc"], "2.0");
        }
    }

    #[test]
    fn bad_tools_call_params_are_invalid_params_under_the_request_id() {
        for params in [
            json!({"arguments": {}}),
            json!({"name": 5}),
            json!({"name": "look", "arguments": 5}),
            json!({"name": "look", "arguments": "{\"a\":1}"}),
            json!([1]),
        ] {
            let line = json!({"jsonrpc": "2.0", "id": "req-7", "method": "tools/call",
                "params": params});
            let reply = answer(line.to_string().as_bytes());
            assert_eq!(reply["error"]["code"], INVALID_PARAMS, "{reply}");
            assert_eq!(reply["id"], "req-7");
        }
        let line = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call"});
        assert_eq!(answer(line.to_string().as_bytes())["id"], 3);
    }

    #[test]
    fn good_messages_go_to_rmcp_and_responses_are_never_answered() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "look", "arguments": {"a": 1}}});
        assert!(matches!(
            judge(call.to_string().as_bytes()),
            Verdict::Deliver(_)
        ));
        let ping = br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        assert!(matches!(judge(ping), Verdict::Deliver(_)));
        // Our own error reply echoed back: a response, ignored.
        let echoed = error_line(Value::Null, PARSE_ERROR, "x".into());
        assert!(matches!(
            judge(echoed.strip_suffix(b"\n").unwrap()),
            Verdict::Ignore | Verdict::Deliver(_)
        ));
        assert!(matches!(judge(b"   \r"), Verdict::Ignore));
    }

    #[test]
    fn json_that_is_not_a_message_object_is_an_invalid_request() {
        for line in [&b"5"[..], b"[]", b"\"x\"", b"null"] {
            let reply = answer(line);
            assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply}");
            assert_eq!(reply["id"], Value::Null);
        }
    }

    #[test]
    fn an_undecodable_request_with_a_readable_id_is_answered_under_it() {
        let reply = answer(br#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":5}"#);
        assert_eq!(reply["id"], 9, "{reply}");
        assert_eq!(reply["error"]["code"], INVALID_PARAMS);
    }

    #[tokio::test]
    async fn an_oversized_line_is_answered_and_the_next_line_still_served() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let (mut transport, _writer) = line_transport(server_read, server_write);
        let (client_read, mut client_write) = tokio::io::split(client);
        let feeder = tokio::spawn(async move {
            let big = vec![b'x'; MAX_LINE + 10];
            client_write.write_all(&big).await.unwrap();
            client_write
                .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            client_write
        });
        let next = transport.receive().await.unwrap();
        assert!(format!("{next:?}").contains("PingRequest"), "{next:?}");
        let _client_write = feeder.await.unwrap();
        let mut lines = BufReader::new(client_read).lines();
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(reply["error"]["code"], PARSE_ERROR);
        assert_eq!(reply["id"], Value::Null);
    }
}
