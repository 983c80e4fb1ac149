//! `StreamParser::push_events` allocates nothing for a push's text once its buffers have
//! grown, where `push` allocates an event list and a `String` for every push that
//! completes text. Counted with a counting global allocator, on the test's own thread only
//! (the harness's main thread may allocate meanwhile, more often on a loaded machine: a
//! count of every thread's failed this test now and then).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use toolcall_core::Event;
use toolcall_parse::StreamParser;

struct Counting;

thread_local! {
    /// This thread's allocations and reallocations (a `const` cell: no destructor, so it
    /// is there whenever the allocator is called).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and reallocations) `f` makes.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn push_events_allocates_nothing_for_text_once_its_buffers_have_grown() {
    let reply = "The weather in Paris is mild today, with light wind from the west. ".repeat(60);
    let pieces = common::pieces(&reply, 4);
    let options = common::only("gemma4", false);
    let mut owned = StreamParser::new(options.clone());
    let mut by_push = 0;
    let pushed = allocations(|| {
        for p in &pieces {
            by_push += owned
                .push(p)
                .iter()
                .filter(|e| matches!(e, toolcall_core::StreamEvent::Text { .. }))
                .count();
        }
    });
    let mut borrowed = StreamParser::new(options);
    // The first pushes grow the parser's buffers (the engine's, the events' text).
    for p in &pieces[..pieces.len() / 2] {
        borrowed.push_events(p).for_each(drop);
    }
    let mut texts = 0;
    let mut text = String::with_capacity(reply.len());
    let borrowed_allocations = allocations(|| {
        for p in &pieces[pieces.len() / 2..] {
            for e in borrowed.push_events(p) {
                if let Event::Text { text: t } = e {
                    texts += 1;
                    text.push_str(t);
                }
            }
        }
    });
    assert!(by_push > 400, "{by_push} text events by push");
    assert!(pushed >= by_push, "{pushed} allocations by push");
    assert!(texts > 200, "{texts} text events by push_events");
    assert!(
        borrowed_allocations <= 4,
        "{borrowed_allocations} allocations in {texts} pushes of text by push_events"
    );
    assert!(reply.ends_with(&text));
}
