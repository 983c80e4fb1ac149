//! `Archive`: reads the session archive that `toolcall run` and `toolcall serve` write, from
//! either backend (an SQLite file or a `postgres://` URL), through toolcall-run's own archive
//! code, so the schema is known in one place. Sessions come out in the JSON shapes of
//! `toolcall sessions list --json` / `show --json`.
//!
//! Opening an archive applies the migrations it lacks (as the CLI does) and refuses one from a
//! newer build; reads run with the GIL released (a PostgreSQL query waits on the network).

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use serde_json::Value;
use toolcall_run::archive::{is_postgres_url, redact_url};
use toolcall_run::{Archive as RunArchive, ArchiveError};

use crate::convert;
use crate::errors;

/// A session archive, opened for reading: ``Archive(location)`` with ``location`` an SQLite
/// file (``str`` or path) or a ``postgres://`` / ``postgresql://`` URL, the same argument as
/// ``toolcall sessions --archive``.
#[pyclass(frozen, module = "toolcall._toolcall", name = "Archive")]
pub struct Archive {
    inner: RunArchive,
    /// The location with any password hidden (for messages and `repr`).
    location: String,
}

/// The location as text: a `str`, or a path (`os.PathLike`) that is valid UTF-8.
fn location_text(py: Python<'_>, location: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = location.extract::<String>() {
        return Ok(text);
    }
    let path: PathBuf = location.extract()?;
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| errors::input(py, format!("archive path {path:?} is not UTF-8")))
}

impl Archive {
    fn error(&self, py: Python<'_>, error: ArchiveError) -> PyErr {
        errors::archive(py, &self.location, error)
    }
}

#[pymethods]
impl Archive {
    #[new]
    fn new(py: Python<'_>, location: &Bound<'_, PyAny>) -> PyResult<Self> {
        let location = location_text(py, location)?;
        let shown = redact_url(&location);
        if !is_postgres_url(&location) && !Path::new(&location).is_file() {
            return Err(errors::archive_unavailable(
                py,
                format!("no session archive at {shown}: no such file"),
                &shown,
            ));
        }
        let inner = py
            .detach(|| RunArchive::connect(&location))
            .map_err(|e| errors::archive(py, &shown, e))?;
        Ok(Archive {
            inner,
            location: shown,
        })
    }

    /// The location, with any password in a URL hidden.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Every session, newest first: ``[{"id", "created_at", "description", "messages",
    /// "calls"}]``.
    fn list_sessions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let sessions = py
            .detach(|| self.inner.list_sessions())
            .map_err(|e| self.error(py, e))?;
        to_py(py, &sessions)
    }

    /// One session: ``{"session": summary, "messages": [...], "calls": [{..., "results":
    /// [...]}], "pack_states": {pack: snapshot}}``; each call carries the results archived
    /// for it. Raises ``SessionNotFound`` for an id the archive lacks.
    fn show_session<'py>(&self, py: Python<'py>, session_id: &str) -> PyResult<Bound<'py, PyAny>> {
        let record = py
            .detach(|| self.inner.show_session(session_id))
            .map_err(|e| self.error(py, e))?;
        to_py(py, &record)
    }

    fn __repr__(&self) -> String {
        format!("Archive({:?})", self.location)
    }
}

fn to_py<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json: Value = serde_json::to_value(value).map_err(|e| errors::input(py, e.to_string()))?;
    convert::to_py(py, &json)
}
