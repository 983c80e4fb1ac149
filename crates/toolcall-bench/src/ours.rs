//! toolcall's parser driven three ways: one-shot, streamed in fixed-size pushes, and the
//! "re-parse the whole buffer on every push" loop most servers use (the quadratic baseline).

use toolcall_core::StreamEvent;
use toolcall_parse::{ParseOptions, StreamParser, parse};

/// One-shot parse; returns the number of calls found.
pub fn one_shot(text: &str, options: &ParseOptions) -> usize {
    parse(text, options).calls.len()
}

/// Streams the pre-split `pushes`; returns the number of finished calls.
pub fn stream(pushes: &[&str], options: &ParseOptions) -> usize {
    let mut parser = StreamParser::new(options.clone());
    let mut calls = 0;
    for p in pushes {
        calls += count_finished(&parser.push(p));
    }
    calls + count_finished(&parser.finish())
}

/// Re-parses the whole accumulated text after every push, as servers without an incremental
/// parser do; returns the number of calls in the last parse.
pub fn reparse_every_push(pushes: &[&str], options: &ParseOptions) -> usize {
    let mut buf = String::new();
    let mut calls = 0;
    for p in pushes {
        buf.push_str(p);
        calls = parse(&buf, options).calls.len();
    }
    calls
}

fn count_finished(events: &[StreamEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::CallFinished { .. }))
        .count()
}
