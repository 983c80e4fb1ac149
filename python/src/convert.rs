//! Python values ⇄ JSON values, directly (no JSON text in between: parse results are built as
//! dicts in one pass, which is what makes `toolcall.parse` cheaper than `json.loads` of the
//! CLI's output).
//!
//! Both directions are bounded: a Python value nested deeper than [`MAX_DEPTH`] (or a cyclic
//! one) is refused with `toolcall.InputError`; values the JSON data model lacks (`set`,
//! `bytes`, non-string keys, objects) raise `TypeError` like `json.dumps`; NaN, infinities and
//! integers outside 64 bits raise `InputError` because no tool schema can accept them.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::errors;

/// Deepest nesting converted either way; deeper than any schema or call the parser accepts
/// (its own bound is 128).
pub const MAX_DEPTH: usize = 256;

/// A Python value (dict, list, tuple, str, int, float, bool, None) as JSON.
pub fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_at(value, 0)
}

fn to_json_at(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(errors::input(
            value.py(),
            format!("value nested deeper than {MAX_DEPTH} levels (or cyclic)"),
        ));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    // `bool` before `int`: in Python `True` is an `int`.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(i) = value.cast::<PyInt>() {
        if let Ok(n) = i.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = i.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(errors::input(
            value.py(),
            "integer outside the 64-bit range JSON numbers are read with",
        ));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| errors::input(value.py(), "NaN and infinities are not JSON numbers"));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "JSON object keys must be str, not {}",
                    k.get_type().name()?
                )));
            };
            map.insert(key.to_cow()?.into_owned(), to_json_at(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = value.cast::<PyList>() {
        return l.iter().map(|v| to_json_at(&v, depth + 1)).collect();
    }
    if let Ok(t) = value.cast::<PyTuple>() {
        return t.iter().map(|v| to_json_at(&v, depth + 1)).collect();
    }
    Err(PyTypeError::new_err(format!(
        "{} is not a JSON value (dict, list, tuple, str, int, float, bool or None)",
        value.get_type().name()?
    )))
}

/// A JSON value as plain Python objects (dict keeps the JSON key order).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, value, 0)
}

fn to_py_at<'py>(py: Python<'py>, value: &Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(errors::input(
            py,
            format!("value nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        // Built at its final length (no growth while appending).
        Value::Array(items) => PyList::new(
            py,
            items
                .iter()
                .map(|item| to_py_at(py, item, depth + 1))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(PyString::new(py, k), to_py_at(py, v, depth + 1)?)?;
            }
            dict.into_any()
        }
    })
}
