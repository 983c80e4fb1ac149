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
use std::sync::{Mutex, MutexGuard, TryLockError};

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
    to_py_at(py, value, 0, &mut Strings::new())
}

/// [`to_py`] sharing `strings` with the other values of one result.
pub fn to_py_with<'py>(
    py: Python<'py>,
    value: &Value,
    strings: &mut Strings,
) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, value, 0, strings)
}

/// How many `str`s the process keeps for reuse (a power of two).
const SLOTS: usize = 1024;

/// Short Python `str`s kept for reuse across results, one per slot: a slot holds the last
/// text whose hash picked it.
struct StrCache {
    slots: Vec<Slot>,
}

/// A kept `str` and its text (compared in place: asking CPython for the `str`'s UTF-8 cost
/// a call per lookup).
struct Slot {
    hash: u64,
    len: usize,
    text: [u8; Strings::MAX_LEN],
    s: Option<Py<PyString>>,
}

/// The process's one [`StrCache`], taken by one result's conversion at a time.
static CACHE: Mutex<StrCache> = Mutex::new(StrCache { slots: Vec::new() });

/// Short Python `str`s reused for equal text: the keys, names, formats, short values and
/// diagnostic messages of calls repeat within a reply (`"city"`, `"get_weather"`,
/// `"celsius"`) and from reply to reply, and a reused `str` costs neither building (~250
/// instructions: UTF-8 decoding, allocation) nor, as a dict key, hashing again (CPython
/// caches a `str`'s hash in it), nor freeing. `str` is immutable, so sharing one is
/// invisible to Python, as in `json.loads`' own key memo. The process keeps [`SLOTS`] of
/// them, direct-mapped by a hash of the text; a lookup costs that hash and at most one
/// comparison of at most [`Self::MAX_LEN`] bytes, so no input makes it much slower than
/// building each `str`. A conversion holds the cache for its duration; one that finds it
/// taken (a nested conversion: a garbage collection run while building objects may call
/// back into Python) builds every `str` itself.
pub struct Strings {
    cache: Option<MutexGuard<'static, StrCache>>,
}

impl Strings {
    /// Longer text is rarely repeated; it is built each time. 64, not 32: a reply's
    /// `found FORMAT call to "NAME"` diagnostics repeat per tool name and are 30-60 bytes.
    pub const MAX_LEN: usize = 64;

    pub fn new() -> Self {
        let cache = match CACHE.try_lock() {
            Ok(guard) => Some(guard),
            // A panic while the cache was held leaves every slot a whole entry.
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        Strings {
            cache: cache.map(|mut c| {
                if c.slots.is_empty() {
                    c.slots.resize_with(SLOTS, || Slot {
                        hash: 0,
                        len: 0,
                        text: [0; Strings::MAX_LEN],
                        s: None,
                    });
                }
                c
            }),
        }
    }

    /// The `str` for `text`, shared with an earlier equal one when kept.
    pub fn get<'py>(&mut self, py: Python<'py>, text: &str) -> Bound<'py, PyString> {
        let bytes = text.as_bytes();
        let Some(cache) = self.cache.as_mut().filter(|_| bytes.len() <= Self::MAX_LEN) else {
            return PyString::new(py, text);
        };
        let hash = hash(bytes);
        // The top bits pick the slot (the multiply mixes into them).
        let slot = &mut cache.slots[(hash >> (64 - SLOTS.trailing_zeros())) as usize];
        if let Some(s) = &slot.s
            && slot.hash == hash
            && slot.text.get(..slot.len) == Some(bytes)
        {
            return s.bind(py).clone();
        }
        let s = PyString::new(py, text);
        slot.hash = hash;
        slot.len = bytes.len();
        if let Some(dst) = slot.text.get_mut(..bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        slot.s = Some(s.clone().unbind());
        s
    }
}

impl Default for Strings {
    fn default() -> Self {
        Self::new()
    }
}

/// A hash of at most [`Strings::MAX_LEN`] bytes, eight at a time (FxHash's step).
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = step(h, u64::from_le_bytes(b));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(b));
    }
    h
}

/// A new list of `len` items, filled as `items` makes them: built at its final length (no
/// growth while appending) and without collecting the items first (a `Vec` per list).
/// `items` must make `len` items; an error leaves the list unfinished and drops it (CPython
/// frees a list's empty slots as such), and Python never sees it.
pub fn list_of<'py, T>(
    py: Python<'py>,
    len: usize,
    items: impl Iterator<Item = PyResult<Bound<'py, T>>>,
) -> PyResult<Bound<'py, PyList>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len)
        .map_err(|_| errors::input(py, "list longer than Python allows"))?;
    // SAFETY: the GIL is held; `PyList_New` returns a new reference or NULL with an error
    // set, which `from_owned_ptr_or_err` takes over or raises.
    let list = unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyList_New(size))? };
    let mut filled: pyo3::ffi::Py_ssize_t = 0;
    for item in items.take(len) {
        let item = item?;
        // SAFETY: `list` is a new list of `size` slots and `filled < size`; `PyList_SetItem`
        // takes over the item's reference (`into_ptr`), also on failure.
        if unsafe { pyo3::ffi::PyList_SetItem(list.as_ptr(), filled, item.into_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        filled += 1;
    }
    if filled != size {
        return Err(errors::input(py, "fewer list items than announced"));
    }
    // SAFETY: `PyList_New` made a list.
    Ok(unsafe { list.cast_into_unchecked() })
}

fn to_py_at<'py>(
    py: Python<'py>,
    value: &Value,
    depth: usize,
    strings: &mut Strings,
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
        Value::Array(items) => list_of(
            py,
            items.len(),
            items
                .iter()
                .map(|item| to_py_at(py, item, depth + 1, strings)),
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
