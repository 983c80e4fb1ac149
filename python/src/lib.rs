//! The compiled core of the `toolcall` Python package (`toolcall._toolcall`).
//!
//! Owns the binding only: [`parse`] (one-shot and streaming parsing), [`toolset`] (validation,
//! rendering, instructions), `archive` (reading session archives; the `archive` feature),
//! [`convert`] (Python values ⇄ JSON) and [`errors`] (raising the package's exception
//! classes, which live in `toolcall/_errors.py`). The pure-Python layer
//! (`toolcall/__init__.py`) re-exports these and adds what is easier in Python: iterating
//! over sync and async streams of chunks.
//!
//! Everything crosses the boundary as plain Python values in the CLI's JSON shapes; long
//! work (large inputs, compiling a toolset's schemas) runs with the GIL released.

use pyo3::prelude::*;

/// The extension's Rust allocations (the parser's values, strings and vectors) go through
/// mimalloc: a parse allocates per call and per JSON value, and glibc's malloc costs more per
/// small block and serves each fresh large block (a 1 MB argument) from new pages until its
/// thresholds adapt, so the first 1 MB replies of a process ran 3-10x slower than the next
/// ones. Python's own objects still come from CPython's allocator.
#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// mimalloc, asked for plain blocks where the layout allows. `mimalloc::MiMalloc` calls
/// `mi_malloc_aligned` for every allocation, which checks the alignment of the free block it
/// would hand out before taking it (a `json/small` parse makes ~140 allocations: 1.7 % of
/// its instructions went to that, 1.0 % of a `json/100 calls` parse). Every mimalloc block
/// is aligned to at least 8 bytes (its size classes are multiples of the word size), so a
/// layout aligned to 8 or less takes `mi_malloc`/`mi_zalloc`/`mi_realloc`; a larger
/// alignment the aligned calls.
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

#[cfg(feature = "archive")]
mod archive;
mod convert;
mod errors;
mod parse;
mod toolset;

#[pymodule]
fn _toolcall(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("parse", parse::parse_function(m)?)?;
    m.add_function(wrap_pyfunction!(parse::formats, m)?)?;
    m.add_function(wrap_pyfunction!(parse::detect, m)?)?;
    m.add_class::<parse::StreamParser>()?;
    m.add_class::<toolset::Toolset>()?;
    #[cfg(feature = "archive")]
    m.add_class::<archive::Archive>()?;
    Ok(())
}
