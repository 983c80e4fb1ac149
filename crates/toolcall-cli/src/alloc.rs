//! The process's allocator: mimalloc, returning freed memory to the system at once.
//!
//! A whole request through `toolcall serve` allocates and frees a few hundred small blocks
//! (the request's JSON values, the turn, the reply, the log lines). With mimalloc in place
//! of glibc's malloc a whole request takes 183 k instructions instead of 215 k (−14.8 %),
//! a streamed one (63 chunks) 1 034 k instead of 1 139 k (−9.2 %)
//! (`crates/toolcall-serve/bench/instructions.sh`; BENCHMARKS.md, "Gateway CPU per
//! request, session 40").
//!
//! mimalloc delays purging the pages it frees (`purge_delay`, 1 s in its v3), and a delayed
//! purge runs only when a thread allocates again: a gateway whose worker threads go idle
//! after a spike kept them, 143 MB resident once idle against the 128 MB bound of
//! `tests/serve_memory.rs` (`hostile_tool_declarations_…_it_is_given_back`, run with
//! `MIMALLOC_PURGE_DELAY=1000`). [`toolcall_alloc::purge_at_once`], called first in `main`, makes the purge immediate unless
//! `MIMALLOC_PURGE_DELAY` says otherwise: 95 MB once idle in that test, and 120 `madvise`
//! calls in 10 546 whole requests at 16 clients (`strace -c`), no measurable cost.

#[global_allocator]
static GLOBAL: toolcall_alloc::Mimalloc = toolcall_alloc::Mimalloc;
