//! Test support: a reply streamed in pushes of `n` characters, its events gathered per
//! call, beside the same reply read one-shot. The families whose streams build their calls
//! from what they read (Gemma 4, Hunyuan, MiniMax M3) check that against one-shot with it.

use serde_json::Value;
use toolcall_core::StreamEvent;

use crate::{ParseOptions, StreamParser, parse};

/// One finished call of a replayed stream.
pub(crate) struct StreamedCall {
    pub name: String,
    pub arguments: Value,
    pub repairs: usize,
    /// Its `ArgumentsDelta` fragments joined.
    pub sent: String,
}

impl StreamedCall {
    /// Name, arguments and repair count: what one-shot's calls are compared on.
    pub fn key(&self) -> (String, Value, usize) {
        (self.name.clone(), self.arguments.clone(), self.repairs)
    }

    /// The fragments sent decode to the finished call's arguments.
    pub fn assert_sent_is_arguments(&self, context: &str) {
        let decoded: Value = serde_json::from_str(&self.sent)
            .unwrap_or_else(|e| panic!("{context}: sent {:?}: {e}", self.sent));
        assert_eq!(decoded, self.arguments, "{context}");
    }
}

/// A replayed stream's finished calls and diagnostic messages.
pub(crate) struct Streamed {
    pub calls: Vec<StreamedCall>,
    pub diagnostics: Vec<String>,
}

/// One-shot's calls (name, arguments, repair count) and diagnostic messages.
pub(crate) fn one_shot(
    text: &str,
    options: &ParseOptions,
) -> (Vec<(String, Value, usize)>, Vec<String>) {
    let whole = parse(text, options);
    let calls = whole
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone(), c.origin.repairs.len()))
        .collect();
    let diagnostics = whole.diagnostics.into_iter().map(|d| d.message).collect();
    (calls, diagnostics)
}

/// `text` pushed `n` characters at a time; `on_push` sees the bytes pushed so far and each
/// push's events.
pub(crate) fn stream_in_char_pushes(
    text: &str,
    options: &ParseOptions,
    n: usize,
    mut on_push: impl FnMut(usize, &[StreamEvent]),
) -> Streamed {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut pushed = 0;
    for chunk in chars.chunks(n) {
        let piece: String = chunk.iter().collect();
        pushed += piece.len();
        let got = parser.push(&piece);
        on_push(pushed, &got);
        events.extend(got);
    }
    events.extend(parser.finish());
    let mut sent = Vec::<String>::new();
    let mut streamed = Streamed {
        calls: Vec::new(),
        diagnostics: Vec::new(),
    };
    for event in events {
        match event {
            StreamEvent::CallStarted { .. } => sent.push(String::new()),
            StreamEvent::ArgumentsDelta { index, fragment } => sent[index].push_str(&fragment),
            StreamEvent::CallFinished { index, call } => streamed.calls.push(StreamedCall {
                name: call.name,
                arguments: call.arguments,
                repairs: call.origin.repairs.len(),
                sent: std::mem::take(&mut sent[index]),
            }),
            StreamEvent::Diagnostic { diagnostic } => streamed.diagnostics.push(diagnostic.message),
            _ => {}
        }
    }
    streamed
}

/// What a stream sent after one push: calls started, calls finished, each started call's
/// fragments so far.
type AfterPush = (usize, usize, Vec<String>);

/// `text` pushed `n` characters at a time: what was sent after each push, with the bytes
/// pushed so far.
pub(crate) fn sent_after_each_push(
    text: &str,
    options: &ParseOptions,
    n: usize,
) -> Vec<(usize, AfterPush)> {
    let mut at = Vec::new();
    let (mut started, mut finished, mut sent) = (0, 0, Vec::<String>::new());
    stream_in_char_pushes(text, options, n, |pushed, events| {
        for e in events {
            match e {
                StreamEvent::CallStarted { .. } => {
                    started += 1;
                    sent.push(String::new());
                }
                StreamEvent::ArgumentsDelta { index, fragment } => sent[*index].push_str(fragment),
                StreamEvent::CallFinished { .. } => finished += 1,
                _ => {}
            }
        }
        at.push((pushed, (started, finished, sent.clone())));
    });
    at
}

/// A push that does not wake the region's reader ([`crate::family::ReadCx::wake`]: the
/// engine appends it and returns) delays nothing: after every push of `text` in pushes of
/// 1 to `max_n` characters, the calls started and finished, and the fragments sent for the
/// calls still open, are those of a stream given the same bytes in one push (which reads
/// them all; a call it finishes may send its arguments whole, so what was sent for finished
/// calls is not compared). Returns, after each byte (ASCII `text`), the calls finished.
pub(crate) fn assert_no_push_waits(text: &str, options: &ParseOptions, max_n: usize) -> Vec<usize> {
    assert!(text.is_ascii(), "{text:?}");
    let whole: Vec<AfterPush> = (1..=text.len())
        .filter_map(|end| {
            let prefix = text.get(..end).unwrap_or_default();
            sent_after_each_push(prefix, options, end)
                .pop()
                .map(|(_, sent)| sent)
        })
        .collect();
    for n in 1..=max_n {
        for (pushed, (started, finished, sent)) in sent_after_each_push(text, options, n) {
            let (want_started, want_finished, want_sent) = &whole[pushed - 1];
            let context = format!("{text:?} in {n}-char pushes, {pushed} bytes");
            assert_eq!(
                (started, finished),
                (*want_started, *want_finished),
                "{context}"
            );
            let open = |sent: &[String]| sent.get(finished..).unwrap_or_default().to_vec();
            assert_eq!(open(&sent), open(want_sent), "{context}");
        }
    }
    whole.into_iter().map(|(_, finished, _)| finished).collect()
}

impl Streamed {
    /// The stream finished one-shot's calls (name, arguments, repair count); with
    /// `check_sent`, each call's fragments decode to its arguments. A reply that writes a key
    /// twice (`repeated_key`) sent the first value before the second came, so the stream
    /// warns that what it sent differs; any other reply has one-shot's diagnostics.
    pub fn assert_equals_one_shot(
        &self,
        (want, want_diagnostics): &(Vec<(String, Value, usize)>, Vec<String>),
        check_sent: bool,
        repeated_key: bool,
        context: &str,
    ) {
        if check_sent {
            for call in &self.calls {
                call.assert_sent_is_arguments(context);
            }
        }
        let calls: Vec<_> = self.calls.iter().map(StreamedCall::key).collect();
        assert_eq!(&calls, want, "{context}");
        if repeated_key {
            assert!(
                self.diagnostics.iter().any(|d| d.contains("differ")),
                "{context}: {:?}",
                self.diagnostics
            );
        } else {
            assert_eq!(&self.diagnostics, want_diagnostics, "{context}");
        }
    }
}
