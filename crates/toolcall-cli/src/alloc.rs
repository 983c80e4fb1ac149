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
//! `MIMALLOC_PURGE_DELAY=1000`). [`init`] makes the purge immediate unless
//! `MIMALLOC_PURGE_DELAY` says otherwise: 95 MB once idle in that test, and 120 `madvise`
//! calls in 10 546 whole requests at 16 clients (`strace -c`), no measurable cost.

#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc, asked for plain blocks where the layout allows, as the Python extension's
/// allocator is (`python/src/lib.rs`): `mimalloc::MiMalloc` calls `mi_malloc_aligned` for
/// every allocation, which checks the alignment of the block it would hand out first, about
/// 79 instructions an allocation in a whole request's ~170 (13.4 k of its instructions,
/// session 40). Every mimalloc block is aligned to at least 8 bytes (its size classes are
/// multiples of the word size), so a layout aligned to 8 or less takes `mi_malloc`,
/// `mi_zalloc` or `mi_realloc`; a larger alignment the aligned calls.
struct Mimalloc;

/// The alignment every mimalloc block has.
const MI_BLOCK_ALIGN: usize = 8;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` frees blocks of
// either kind); the plain calls are used only where their guaranteed alignment suffices.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: forwarded to mimalloc with the layout's size (and alignment).
        unsafe {
            if layout.align() <= MI_BLOCK_ALIGN {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= MI_BLOCK_ALIGN {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator, hence from mimalloc.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: `ptr` came from this allocator with `layout`; the new block keeps its
        // alignment (plain blocks are 8-aligned, aligned ones are reallocated as such).
        unsafe {
            if layout.align() <= MI_BLOCK_ALIGN {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

/// mimalloc v3's `mi_option_purge_delay` (`include/mimalloc.h` of `libmimalloc-sys`
/// 0.1.49, which builds v3 unless its `v2` feature is on: the 16th entry of `mi_option_e`;
/// `libmimalloc-sys` names it only under its `extended` feature).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

unsafe extern "C" {
    /// Sets an option's value unless it was set already (by `mi_option_set` or from its
    /// `MIMALLOC_` environment variable, read when the process loads).
    fn mi_option_set_default(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Makes mimalloc purge freed pages at once. Called first in `main`, before any thread.
pub fn init() {
    // SAFETY: `mi_option_set_default` is mimalloc's own (linked by `libmimalloc-sys`,
    // declared here as in its `mimalloc.h`); it writes one entry of mimalloc's option table
    // and is not thread safe, so it is called before `main` starts any thread. Measured
    // reason: see the module doc (the idle memory is given back; instructions in
    // BENCHMARKS.md, session 40).
    unsafe { mi_option_set_default(MI_OPTION_PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    /// The option number is mimalloc's `purge_delay`: the only option of its table whose
    /// default is 1000 (ms). Read only: `init` is not called here, as other tests' threads
    /// are running.
    #[test]
    fn the_option_set_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads one entry of mimalloc's option table (set once, at load).
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, 1000);
    }
}
