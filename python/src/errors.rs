//! Raising the package's exception classes.
//!
//! The classes are defined in Python (`toolcall/_errors.py`) so they carry readable
//! attributes (`errors`, `suggestion`, ...), proper `__init__` signatures and docstrings; this
//! module instantiates them. Should the import itself fail, that failure is raised instead, so
//! an error is never lost.

use pyo3::prelude::*;
use serde_json::Value;
use toolcall_core::{ErrorCode, ToolError};

use crate::convert;

const MODULE: &str = "toolcall._errors";

/// An instance of `toolcall._errors.<class>` built from `args`, as a `PyErr`.
fn raise<'py, A>(py: Python<'py>, class: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made = py
        .import(MODULE)
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `InputError`: a value toolcall cannot read (too deep, not JSON, out of range).
pub fn input(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InputError", (message.into(),))
}

/// `DecodeError`: bytes that are not UTF-8.
pub fn decode(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "DecodeError", (message.into(),))
}

/// `UnknownFormat`: a format, provider or text-format name toolcall does not know.
pub fn unknown_format(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "UnknownFormat", (message.into(),))
}

/// `ToolsError`: a tools document (or fallback rules) toolcall cannot load.
pub fn tools(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "ToolsError", (message.into(),))
}

/// `StreamFinished`: `feed`/`finish` after `finish` without `reset`.
pub fn stream_finished(py: Python<'_>) -> PyErr {
    raise(
        py,
        "StreamFinished",
        ("the stream is finished; call reset() to parse another reply",),
    )
}

/// `UnknownTool` for a name the toolset lacks (no suggestion).
pub fn unknown_tool_name(py: Python<'_>, name: &str, available: Vec<String>) -> PyErr {
    raise(
        py,
        "UnknownTool",
        (
            format!("no tool named {name:?}"),
            name.to_owned(),
            py.None(),
            available,
        ),
    )
}

/// The exception for a call that failed validation: `UnknownTool`, `ToolDisabled` or
/// `ValidationError`, with the structured details the core reported.
pub fn validation(py: Python<'_>, name: &str, error: ToolError) -> PyErr {
    let details = error.details.unwrap_or_default();
    match error.code {
        ErrorCode::UnknownTool => {
            let suggestion = details
                .get("suggestion")
                .and_then(|s| s.as_str())
                .map(str::to_owned);
            let available: Vec<String> = details
                .get("available")
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            raise(
                py,
                "UnknownTool",
                (error.message, name.to_owned(), suggestion, available),
            )
        }
        ErrorCode::ToolDisabled => raise(py, "ToolDisabled", (error.message, name.to_owned())),
        _ => {
            // Schema errors: `[{"pointer", "message"}]`; other failures carry none.
            let errors = match details {
                Value::Array(_) => details,
                _ => Value::Array(Vec::new()),
            };
            match convert::to_py(py, &errors) {
                Ok(errors) => raise(
                    py,
                    "ValidationError",
                    (error.message, name.to_owned(), errors),
                ),
                Err(e) => e,
            }
        }
    }
}

/// `ArchiveUnavailable`: an archive that cannot be reached or opened (no such file, a
/// database that does not answer, a URL that cannot be read).
#[cfg(feature = "archive")]
pub fn archive_unavailable(py: Python<'_>, message: String, location: &str) -> PyErr {
    raise(py, "ArchiveUnavailable", (message, location.to_owned()))
}

/// The exception for a failed archive read: `SessionNotFound`, `NewerSchema`,
/// `ArchiveUnavailable`, else `ArchiveError`; `location` has any password hidden.
#[cfg(feature = "archive")]
pub fn archive(py: Python<'_>, location: &str, error: toolcall_run::ArchiveError) -> PyErr {
    use toolcall_run::ArchiveError as E;
    match error {
        E::NoSession(id) => raise(
            py,
            "SessionNotFound",
            (
                format!("no session {id:?} in the archive at {location}"),
                id,
                location.to_owned(),
            ),
        ),
        e @ E::NewerSchema { found, known } => raise(
            py,
            "NewerSchema",
            (
                format!("{location}: {e}"),
                found,
                known,
                location.to_owned(),
            ),
        ),
        // Raised while connecting: the message names the (redacted) location already.
        e @ E::Location(..) => archive_unavailable(py, e.to_string(), location),
        e => raise(
            py,
            "ArchiveError",
            (format!("{location}: {e}"), location.to_owned()),
        ),
    }
}
