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

/// How many `str`s one [`Strings`] keeps.
const SLOTS: usize = 32;

/// A JSON value as plain Python objects (dict keeps the JSON key order).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, value, 0, &mut Strings::new())
}

/// [`to_py`] sharing `strings` with the other values of one result.
pub fn to_py_with<'a, 'py>(
    py: Python<'py>,
    value: &'a Value,
    strings: &mut Strings<'a, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, value, 0, strings)
}

/// Short Python `str`s made for one result, reused for equal text: the keys, names and short
/// values of a reply's calls repeat (`"city"`, `"get_weather"`, `"celsius"`), and a reused
/// `str` costs neither an allocation nor, as a dict key, hashing again (CPython caches a
/// `str`'s hash in it). `str` is immutable, so sharing one is invisible to Python, as in
/// `json.loads`' own key memo. Direct-mapped: a slot holds the last text whose length and
/// end bytes picked it; a lookup costs at most one comparison of at most [`Self::MAX_LEN`]
/// bytes, so no input makes it slower than building each `str`.
pub struct Strings<'a, 'py> {
    slots: [Option<(&'a str, Bound<'py, PyString>)>; SLOTS],
}

impl<'a, 'py> Strings<'a, 'py> {
    /// Longer text is rarely repeated; it is built each time. 64, not 32: a reply's
    /// `found FORMAT call to "NAME"` diagnostics repeat per tool name and are 30-60 bytes.
    pub const MAX_LEN: usize = 64;

    pub fn new() -> Self {
        Strings {
            slots: std::array::from_fn(|_| None),
        }
    }

    /// The `str` for `text`, shared with an earlier equal one of this result when kept.
    pub fn get(&mut self, py: Python<'py>, text: &'a str) -> Bound<'py, PyString> {
        let bytes = text.as_bytes();
        let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
            return PyString::new(py, text);
        };
        if bytes.len() > Self::MAX_LEN {
            return PyString::new(py, text);
        }
        let slot = (bytes.len() * 7 + usize::from(first) * 3 + usize::from(last)) % SLOTS;
        if let Some((kept, s)) = &self.slots[slot]
            && *kept == text
        {
            return s.clone();
        }
        let s = PyString::new(py, text);
        self.slots[slot] = Some((text, s.clone()));
        s
    }
}

impl Default for Strings<'_, '_> {
    fn default() -> Self {
        Self::new()
    }
}

fn to_py_at<'a, 'py>(
    py: Python<'py>,
    value: &'a Value,
    depth: usize,
    strings: &mut Strings<'a, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
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
        Value::String(s) => strings.get(py, s).into_any(),
        // Built at its final length (no growth while appending).
        Value::Array(items) => PyList::new(
            py,
            items
                .iter()
                .map(|item| to_py_at(py, item, depth + 1, strings))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(strings.get(py, k), to_py_at(py, v, depth + 1, strings)?)?;
            }
            dict.into_any()
        }
    })
}
