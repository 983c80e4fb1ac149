//! toolcall's parser driven three ways: one-shot, streamed in fixed-size pushes (`push`,
//! `push_into`, `push_events`), and the
//! "re-parse the whole buffer on every push" loop most servers use (the quadratic baseline).

use std::time::Instant;

use toolcall_core::{Event, StreamEvent};
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

/// [`stream`] through `push_into`: one event buffer for the whole reply, drained after each
/// push as a streaming consumer does; returns the number of finished calls.
pub fn stream_into(pushes: &[&str], options: &ParseOptions) -> usize {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    let mut calls = 0;
    for p in pushes {
        parser.push_into(p, &mut events);
        calls += count_finished(&events);
        events.clear();
    }
    parser.finish_into(&mut events);
    calls + count_finished(&events)
}

/// [`stream`] through `push_events`: each push's events borrowed from the parser's reused
/// buffers, as a streaming consumer reads them (each event is looked at: text and fragment
/// bytes summed, finished calls counted); returns the number of finished calls.
pub fn stream_events(pushes: &[&str], options: &ParseOptions) -> usize {
    let mut parser = StreamParser::new(options.clone());
    let mut calls = 0;
    let mut bytes = 0;
    let mut look = |e: Event<'_>| match e {
        Event::Text { text } | Event::Reasoning { text } => bytes += text.len(),
        Event::ArgumentsDelta { fragment, .. } => bytes += fragment.len(),
        Event::CallFinished { .. } => calls += 1,
        Event::CallStarted { .. } | Event::Diagnostic { .. } => {}
    };
    for p in pushes {
        parser.push_events(p).for_each(&mut look);
    }
    parser.finish_events().for_each(&mut look);
    std::hint::black_box(bytes);
    calls
}

/// How many of `pushes` complete at least one event.
pub fn pushes_with_events(pushes: &[&str], options: &ParseOptions) -> usize {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    let mut n = 0;
    for p in pushes {
        parser.push_into(p, &mut events);
        n += usize::from(!events.is_empty());
        events.clear();
    }
    n
}

/// Re-parses the whole accumulated text after every push, as servers without an incremental
/// parser do; returns the number of calls in the last parse.
pub fn reparse_every_push(pushes: &[&str], options: &ParseOptions) -> usize {
    reparse_until(pushes, options, None).unwrap_or(0)
}

/// [`reparse_every_push`], giving up at `deadline`: `Err(pushes done)` then (the loop is
/// quadratic; on 1 MB it runs for minutes).
pub fn reparse_until(
    pushes: &[&str],
    options: &ParseOptions,
    deadline: Option<Instant>,
) -> Result<usize, usize> {
    let mut buf = String::new();
    let mut calls = 0;
    for (i, p) in pushes.iter().enumerate() {
        buf.push_str(p);
        calls = parse(&buf, options).calls.len();
        if deadline.is_some_and(|d| Instant::now() >= d) && i + 1 < pushes.len() {
            return Err(i + 1);
        }
    }
    Ok(calls)
}

fn count_finished(events: &[StreamEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::CallFinished { .. }))
        .count()
}
