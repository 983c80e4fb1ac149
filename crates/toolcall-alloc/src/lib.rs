//! The global allocator the `toolcall` binary and the Python extension install.
//!
//! Owns [`Mimalloc`], mimalloc as a `GlobalAlloc` that takes its plain calls where the
//! layout allows, and [`purge_at_once`], which makes mimalloc give freed pages back to the
//! system at once. Each user installs it with `#[global_allocator]` and says why in its own
//! docs (the gateway: `toolcall-cli`'s `alloc` module; the extension: `python/src/lib.rs`).

/// mimalloc, asked for plain blocks where the layout allows: `mimalloc::MiMalloc` calls
/// `mi_malloc_aligned` for every allocation, which checks the alignment of the block it
/// would hand out first (measured: ~79 instructions an allocation in a gateway's whole
/// request, 13.4 k of its instructions in session 40; 1.7 % of a Python `json/small`
/// parse). Every mimalloc block is aligned to at least 8 bytes (its size classes are
/// multiples of the word size), so a layout aligned to 8 or less takes `mi_malloc`,
/// `mi_zalloc` or `mi_realloc`; a larger alignment the aligned calls.
pub struct Mimalloc;

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

/// Makes mimalloc purge freed pages at once (unless `MIMALLOC_PURGE_DELAY` says otherwise).
/// Call it first in `main`, before any thread starts.
pub fn purge_at_once() {
    // SAFETY: `mi_option_set_default` is mimalloc's own (linked by `libmimalloc-sys`,
    // declared here as in its `mimalloc.h`); it writes one entry of mimalloc's option table
    // and is not thread safe, so its caller calls it before any thread starts.
    unsafe { mi_option_set_default(MI_OPTION_PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    /// The option number is mimalloc's `purge_delay`: the only option of its table whose
    /// default is 1000 (ms). Read only: `purge_at_once` is not called here, as other tests' threads
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
