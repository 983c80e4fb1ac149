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
/// ones. Python's own objects still come from CPython's allocator. Freed pages are purged on
/// mimalloc's own delay (the interpreter's process is not the gateway's: no purge_at_once).
#[global_allocator]
static GLOBAL: toolcall_alloc::Mimalloc = toolcall_alloc::Mimalloc;

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
