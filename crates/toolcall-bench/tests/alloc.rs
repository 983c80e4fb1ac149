//! The counting allocator measures what it claims, when installed as the global allocator.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolcall_bench::alloc::{CountingAlloc, live, peak_during};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[test]
fn peak_covers_a_freed_allocation() {
    let (peak, len) = peak_during(|| {
        let v = vec![7u8; 1 << 20];
        let len = v.len();
        drop(v);
        len
    });
    assert_eq!(len, 1 << 20);
    assert!(peak >= 1 << 20, "peak {peak}");
    // A second, smaller peak is measured from the new baseline.
    let (small, _) = peak_during(|| vec![1u8; 1000].len());
    assert!((1000..1 << 20).contains(&small), "small {small}");
    assert!(live() < usize::MAX);
}
