//! `parse`, `StreamParser` and `formats`: `toolcall_parse` with Python values in and out.
//!
//! Results use the CLI's JSON shapes: a call is `{"call_id", "name", "arguments", "format",
//! "repairs", "span"}`, a diagnostic `{"level", "message", "span"}` (spans are UTF-8 byte
//! offsets), a stream event `{"event": "text" | "reasoning" | "call_started" |
//! "arguments_delta" | "call_finished" | "diagnostic", ...}`.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyInt, PyList, PyString};
use toolcall_core::{Diagnostic, Level, Parsed, Registry, StreamEvent, ToolCall};
use toolcall_parse::{FormatSelection, ParseOptions, ReplyEnd};

use crate::convert;
use crate::errors;
use crate::toolset::Toolset;

/// Inputs at least this long are parsed with the GIL released. Below it, the two thread-state
/// switches cost more than other threads could gain while the parser runs (the parser reads
/// 1–2 GB/s, so 64 KiB takes tens of microseconds).
const DETACH_BYTES: usize = 64 * 1024;

/// Model text given as `str`, `bytes` or `bytearray`, held without copying where Python allows:
/// a `str` is read through its own UTF-8 form, `bytes` in place (a `bytearray` is copied).
enum Text<'a> {
    Str(&'a str),
    Bytes(PyBackedBytes),
}

impl<'a> Text<'a> {
    fn extract(value: &'a Bound<'_, PyAny>) -> PyResult<Text<'a>> {
        if let Ok(s) = value.cast::<PyString>() {
            return Ok(Text::Str(str_utf8(s)?));
        }
        if value.is_instance_of::<PyBytes>() || value.is_instance_of::<PyByteArray>() {
            return Ok(Text::Bytes(value.extract()?));
        }
        Err(PyTypeError::new_err(format!(
            "text must be str or bytes, not {}",
            value.get_type().name()?
        )))
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Str(s) => s.as_bytes(),
            Text::Bytes(b) => b,
        }
    }
}

/// A `str`'s UTF-8 form, borrowed from the object. `PyBackedStr` copies the text into a new
/// `bytes` object under the 3.9 stable ABI (its `PyUnicode_AsUTF8AndSize` joined the limited
/// API in 3.10): for a 1 MB reply that copy, and the page faults of its fresh memory, were a
/// fifth of `toolcall.parse`'s time. The function itself is exported by every CPython since
/// 3.3 with this signature, so the abi3 wheel still loads on 3.9.
fn str_utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<&'a str> {
    unsafe extern "C" {
        fn PyUnicode_AsUTF8AndSize(
            unicode: *mut pyo3::ffi::PyObject,
            size: *mut pyo3::ffi::Py_ssize_t,
        ) -> *const std::ffi::c_char;
    }
    let mut size: pyo3::ffi::Py_ssize_t = 0;
    // SAFETY: `s` is a live `str` (the GIL is held: `Bound`); the call only reads it and
    // writes `size`.
    let data = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
    if data.is_null() {
        // A lone surrogate has no UTF-8 form: CPython set `UnicodeEncodeError`.
        return Err(PyErr::fetch(s.py()));
    }
    let len = usize::try_from(size)
        .map_err(|_| errors::input(s.py(), "str reports a negative length"))?;
    // SAFETY: CPython returns `size` bytes of UTF-8 cached inside the `str` object, freed
    // only with it; `s` borrows the object for `'a`, and a `str` never changes.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    // CPython encoded it itself, but a bad `&str` would be undefined behaviour: checked here
    // (tens of microseconds per MB), which also frees `parse` from checking again.
    std::str::from_utf8(bytes).map_err(|e| utf8_error(s.py(), 0, e))
}

/// Reads the `tools=` argument: a `Toolset`, a tools document (list or dict), or None.
pub fn registry_arg(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<Registry>>> {
    let Some(tools) = tools.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    if let Ok(set) = tools.cast::<Toolset>() {
        return Ok(Some(set.borrow().registry()));
    }
    Ok(Some(Toolset::load(tools)?.registry()))
}

/// The keyword arguments both `parse` and `StreamParser` take.
struct Keywords<'a, 'py> {
    tools: Option<&'a Bound<'py, PyAny>>,
    format: &'a str,
    model: Option<&'a str>,
    fallbacks: Option<&'a Bound<'py, PyAny>>,
    starts_in_reasoning: bool,
    /// How the reply ended: the server's `finish_reason` (`None`: unknown).
    finish_reason: Option<&'a str>,
    /// Calls written inside reasoning: `ignore` or `take_if_none_after` (`None`: the
    /// family's default).
    reasoning_calls: Option<&'a str>,
}

/// Builds parse options. An explicit `format` wins; with `format="auto"`, a `model` name
/// picks its family's format (auto again when the name is unknown).
fn options(py: Python<'_>, kw: Keywords<'_, '_>) -> PyResult<ParseOptions> {
    let format = match (format_selection(py, kw.format)?, kw.model) {
        (FormatSelection::Auto, Some(model)) => FormatSelection::for_model(model),
        (format, _) => format,
    };
    let fallbacks = match kw.fallbacks.filter(|f| !f.is_none()) {
        None => Vec::new(),
        Some(rules) => {
            let text = convert::to_json(rules)?.to_string();
            toolcall_parse::load_fallback_rules(&text)
                .map_err(|e| errors::tools(py, e.to_string()))?
        }
    };
    let reasoning_calls = kw
        .reasoning_calls
        .map(str::parse)
        .transpose()
        .map_err(|e: String| errors::input(py, e))?;
    Ok(ParseOptions {
        format,
        reasoning_calls,
        tools: registry_arg(kw.tools)?,
        fallbacks,
        starts_in_reasoning: kw.starts_in_reasoning,
        reply_end: kw
            .finish_reason
            .map_or(ReplyEnd::Unknown, ReplyEnd::from_finish_reason),
        ..ParseOptions::default()
    })
}

/// The last `format=` argument read and what it selects.
static LAST_FORMAT: Mutex<Option<(String, FormatSelection)>> = Mutex::new(None);

/// `format` read as a selection (`UnknownFormat` for a name that is none). A process
/// passes the same `format` to call after call: the last one's selection is kept and
/// cloned, which costs a comparison and at most one allocation where reading the name
/// again (splitting the list, a `String` per name, looking each up) cost ~1,100
/// instructions of a ~50,000-instruction small parse.
fn format_selection(py: Python<'_>, format: &str) -> PyResult<FormatSelection> {
    if let Ok(last) = LAST_FORMAT.try_lock()
        && let Some((name, selection)) = last.as_ref()
        && name == format
    {
        return Ok(selection.clone());
    }
    let selection = FormatSelection::from_name(format)
        .map_err(|e| errors::unknown_format(py, e.to_string()))?;
    if let Ok(mut last) = LAST_FORMAT.try_lock() {
        *last = Some((format.to_owned(), selection.clone()));
    }
    Ok(selection)
}

/// Where the first invalid UTF-8 byte is, as the error `feed` and `parse` raise.
fn utf8_error(py: Python<'_>, offset: usize, e: std::str::Utf8Error) -> PyErr {
    errors::decode(
        py,
        format!(
            "input is not valid UTF-8 (invalid byte at offset {})",
            offset + e.valid_up_to()
        ),
    )
}

/// `parse`'s docstring, its first line the signature CPython reads into `__text_signature__`
/// (`inspect.signature(toolcall.parse)`).
const PARSE_DOC: &std::ffi::CStr = c"parse(text, *, tools=None, format=\"auto\", model=None, fallbacks=None, starts_in_reasoning=False, finish_reason=None, reasoning_calls=None)
--

Finds the tool calls in one whole model reply.

Returns ``{\"text\", \"calls\", \"reasoning\", \"diagnostics\"}``: the visible text, each call
(``name``, ``arguments``, ``format``, ``span``, ``repairs``), the reasoning blocks and
what went wrong. ``format`` is ``\"auto\"``, a format id, or a comma-separated priority
list (see ``formats()``); with ``format=\"auto\"``, ``model`` (e.g.
``\"Qwen/Qwen2.5-7B-Instruct\"``) picks its family's format. With ``tools`` (a ``Toolset``
or a tools list), formats that could misfire on prose accept only registered names.
Raises ``DecodeError`` for bytes that are not UTF-8, ``UnknownFormat``, ``ToolsError``,
``TypeError`` for a ``text`` that is neither str nor bytes. Input beyond 16 MiB is
passed through as text with an error diagnostic. ``finish_reason``: how the reply ended
(the server's); ``reasoning_calls``: ``\"ignore\"`` or ``\"take_if_none_after\"`` for calls
written inside reasoning (``None``: the family's default); ``InputError`` for another.";

/// `parse`'s parameters, in order: `text` (positional or keyword), then the keyword-only ones.
const PARSE_PARAMS: [&str; 8] = [
    "text",
    "tools",
    "format",
    "model",
    "fallbacks",
    "starts_in_reasoning",
    "finish_reason",
    "reasoning_calls",
];

/// [`PARSE_PARAMS`] as interned `str`s: a call's keyword names are interned identifiers, so
/// a keyword is usually found by comparing pointers.
static PARSE_NAMES: PyOnceLock<[Py<PyString>; 8]> = PyOnceLock::new();

/// CPython's flag for the vectorcall convention (`PyObject *const *args, Py_ssize_t nargs,
/// PyObject *kwnames`). pyo3 leaves it out of the 3.9 stable ABI's bindings because the
/// limited API documents it from 3.10; CPython has called `METH_FASTCALL | METH_KEYWORDS`
/// functions this way since 3.7, so the abi3 wheel still runs on 3.9.
const METH_FASTCALL: std::ffi::c_int = 0x0080;

type FastCallKeywords = unsafe extern "C" fn(
    *mut pyo3::ffi::PyObject,
    *const *mut pyo3::ffi::PyObject,
    pyo3::ffi::Py_ssize_t,
    *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject;

/// A method table entry CPython only reads.
struct MethodDef(pyo3::ffi::PyMethodDef);

// SAFETY: never written after it is made; CPython reads it under the GIL.
unsafe impl Sync for MethodDef {}

static PARSE_DEF: MethodDef = MethodDef(pyo3::ffi::PyMethodDef {
    ml_name: c"parse".as_ptr(),
    ml_meth: pyo3::ffi::PyMethodDefPointer {
        // SAFETY: CPython calls `ml_meth` by the signature `ml_flags` names (vectorcall
        // with keywords); the union only has a field of that type from 3.10 on.
        PyCFunctionWithKeywords: unsafe {
            std::mem::transmute::<FastCallKeywords, pyo3::ffi::PyCFunctionWithKeywords>(
                parse_fastcall,
            )
        },
    },
    ml_flags: METH_FASTCALL | pyo3::ffi::METH_KEYWORDS,
    ml_doc: PARSE_DOC.as_ptr(),
});

/// `toolcall._toolcall.parse`, made for `module`: a built-in function that CPython calls
/// through the vectorcall convention.
///
/// Hand-written, not `#[pyfunction]`, for its cost: under the 3.9 stable ABI pyo3 declares
/// functions `METH_VARARGS | METH_KEYWORDS`, so each call had CPython pack its arguments
/// into a tuple and a keyword dict, pyo3 unpack them again and copy `format`'s text into a
/// new `bytes` to read it. Vectorcall passes the caller's array, and `str` arguments are read
/// in place: a `json/small` parse 47,611 → 45,561 instructions (−4.3 %), `hermes/small`
/// 62,566 → 60,620, `action_response/small` 29,341 → 26,947 (session 36's callgrind of
/// Python). The `TypeError`s are those of a Python function of this signature (tested).
pub fn parse_function<'py>(module: &Bound<'py, PyModule>) -> PyResult<Bound<'py, PyAny>> {
    let py = module.py();
    let name = module.name()?;
    // SAFETY: `PARSE_DEF` lives for the process and is only read; `module` and `name` are
    // live objects (CPython keeps its own references). The result is a new reference or NULL
    // with an exception set.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyCMethod_New(
                std::ptr::from_ref(&PARSE_DEF.0).cast_mut(),
                module.as_ptr(),
                name.as_ptr(),
                std::ptr::null_mut(),
            ),
        )
    }
}

/// The vectorcall entry of `parse`: `nargs` positional arguments at `args`, then one value
/// per name in the `kwnames` tuple (NULL: none).
unsafe extern "C" fn parse_fastcall(
    _module: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    // `Python::attach` although CPython calls with the thread attached: pyo3 counts its own
    // entries, and a `Py` dropped while that count is zero (the `bytes` behind a `bytes`
    // text, an evicted cache slot) is queued for a later pyo3 call instead of released.
    Python::attach(|py| {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: CPython's vectorcall contract: `args` holds `nargs` positional values
            // and then one per name of `kwnames`, all borrowed for the call.
            unsafe { parse_vectorcall(py, args, nargs, kwnames) }
        }));
        let err = match result {
            Ok(Ok(out)) => return out.into_ptr(),
            Ok(Err(e)) => e,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "panic from Rust code".to_owned());
                pyo3::panic::PanicException::new_err((message,))
            }
        };
        err.restore(py);
        std::ptr::null_mut()
    })
}

/// Reads `parse`'s arguments as CPython passes them (see [`parse_fastcall`]) and parses.
/// Raises the `TypeError`s a Python function with `parse`'s signature would.
///
/// # Safety
/// `args` points to `nargs` + len(`kwnames`) live objects (or `kwnames` is NULL and `args`
/// holds `nargs`), borrowed for the call; `kwnames` is NULL or a tuple of `str`.
unsafe fn parse_vectorcall<'py>(
    py: Python<'py>,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> PyResult<Bound<'py, PyDict>> {
    let nargs = usize::try_from(nargs).unwrap_or(0);
    let nkw = if kwnames.is_null() {
        0
    } else {
        // SAFETY: `kwnames` is a tuple (vectorcall contract).
        usize::try_from(unsafe { pyo3::ffi::PyTuple_Size(kwnames) }).unwrap_or(0)
    };
    let all: &[*mut pyo3::ffi::PyObject] = if args.is_null() {
        &[]
    } else {
        // SAFETY: the vectorcall contract (above).
        unsafe { std::slice::from_raw_parts(args, nargs + nkw) }
    };
    // SAFETY: every pointer of `all` is a live object borrowed for the call.
    let value = |ptr| unsafe { pyo3::Borrowed::from_ptr(py, ptr) };
    let mut found: [Option<pyo3::Borrowed<'_, 'py, PyAny>>; 8] = Default::default();
    match nargs {
        0 => {}
        1 => found[0] = all.first().map(|&p| value(p)),
        n => {
            return Err(PyTypeError::new_err(format!(
                "parse() takes 1 positional arguments but {n} were given"
            )));
        }
    }
    if nkw > 0 {
        let names = PARSE_NAMES.get_or_init(py, || {
            PARSE_PARAMS.map(|name| PyString::intern(py, name).unbind())
        });
        for (i, &v) in all.iter().skip(nargs).enumerate() {
            // SAFETY: `i` < len(`kwnames`); the item is borrowed from the tuple.
            let key = unsafe {
                pyo3::ffi::PyTuple_GetItem(kwnames, pyo3::ffi::Py_ssize_t::try_from(i).unwrap_or(0))
            };
            if key.is_null() {
                return Err(PyErr::fetch(py));
            }
            let index = match names.iter().position(|n| n.as_ptr() == key) {
                Some(index) => index,
                None => {
                    let key = value(key);
                    let text = match key.cast::<PyString>() {
                        Ok(s) => str_utf8(&s)?.to_owned(),
                        Err(_) => key.str()?.to_cow()?.into_owned(),
                    };
                    match PARSE_PARAMS.iter().position(|p| *p == text) {
                        Some(index) => index,
                        None => {
                            return Err(PyTypeError::new_err(format!(
                                "parse() got an unexpected keyword argument '{text}'"
                            )));
                        }
                    }
                }
            };
            if found[index].is_some() {
                return Err(PyTypeError::new_err(format!(
                    "parse() got multiple values for argument '{}'",
                    PARSE_PARAMS[index]
                )));
            }
            found[index] = Some(value(v));
        }
    }
    let [
        text,
        tools,
        format,
        model,
        fallbacks,
        starts,
        finish_reason,
        reasoning_calls,
    ] = found;
    let Some(text) = text else {
        return Err(PyTypeError::new_err(
            "parse() missing 1 required positional argument: 'text'",
        ));
    };
    let format = match &format {
        Some(f) => str_utf8(Bound::cast(f)?)?,
        None => "auto",
    };
    parse_text(
        py,
        &text,
        Keywords {
            tools: tools.as_deref(),
            format,
            model: optional_str(&model)?,
            fallbacks: fallbacks.as_deref(),
            starts_in_reasoning: match &starts {
                Some(s) => s.extract::<bool>()?,
                None => false,
            },
            finish_reason: optional_str(&finish_reason)?,
            reasoning_calls: optional_str(&reasoning_calls)?,
        },
    )
}

/// An optional `str` argument's text: `None` when absent or `None`.
fn optional_str<'a>(v: &'a Option<pyo3::Borrowed<'_, '_, PyAny>>) -> PyResult<Option<&'a str>> {
    match v {
        Some(v) if !v.is_none() => Ok(Some(str_utf8(Bound::cast(v)?)?)),
        _ => Ok(None),
    }
}

/// `parse` of `text` (str, bytes or bytearray) with the options `kw`.
fn parse_text<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    kw: Keywords<'_, 'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let text = Text::extract(text)?;
    let options = options(py, kw)?;
    let input = match &text {
        Text::Str(s) => s,
        Text::Bytes(b) => std::str::from_utf8(b).map_err(|e| utf8_error(py, 0, e))?,
    };
    let parsed = if input.len() >= DETACH_BYTES {
        py.detach(|| toolcall_parse::parse(input, &options))
    } else {
        toolcall_parse::parse(input, &options)
    };
    parsed_to_py(py, &parsed)
}

/// Every format, in auto mode's order: `[{"id", "description", "example"}]`.
#[pyfunction]
pub fn formats(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for f in toolcall_parse::formats() {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "id"), f.id)?;
        d.set_item(intern!(py, "description"), f.description)?;
        d.set_item(intern!(py, "example"), f.example)?;
        list.append(d)?;
    }
    Ok(list)
}

/// What a chat template says about a model's output: `{"family", "decided_by",
/// "reasoning": [{"open", "close"}], "opens_reasoning", "templates"}`. Takes a template's
/// text, a `tokenizer_config.json`'s text, or that config as a dict.
#[pyfunction]
pub fn detect<'py>(py: Python<'py>, source: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let info = if let Ok(text) = source.cast::<PyString>() {
        let text = text.to_cow()?;
        py.detach(|| toolcall_parse::detect_file_text(&text))
    } else if source.is_instance_of::<PyDict>() {
        let config = convert::to_json(source)?;
        py.detach(|| toolcall_parse::detect_tokenizer_config(&config))
    } else {
        return Err(PyTypeError::new_err(format!(
            "detect takes a chat template or tokenizer config (str or dict), not {}",
            source.get_type().name()?
        )));
    }
    .map_err(|e| errors::input(py, e.to_string()))?;
    let value = serde_json::to_value(&info).map_err(|e| errors::input(py, e.to_string()))?;
    convert::to_py(py, &value)
}

/// An incremental parser: ``feed`` chunks (str or bytes) as they arrive, then ``finish``.
///
/// Takes the options of ``parse``. ``feed`` returns the events it completed (``text``,
/// ``reasoning``, ``call_started``, ``call_delta``, ``call_finished``, ``diagnostic``);
/// ``finish`` returns the rest and reports calls cut off by the end; ``reset`` starts over.
/// Act on ``call_finished``: it carries the complete, repaired call.
#[pyclass(subclass, module = "toolcall._toolcall", name = "StreamParser")]
pub struct StreamParser {
    options: ParseOptions,
    /// `None` once finished, until `reset`.
    inner: Option<toolcall_parse::StreamParser>,
    /// The start of a UTF-8 sequence split across `bytes` chunks.
    pending: Vec<u8>,
    /// Bytes consumed so far, for error offsets.
    offset: usize,
}

#[pymethods]
impl StreamParser {
    #[new]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    #[pyo3(signature = (tools=None, *, format="auto", model=None, fallbacks=None, starts_in_reasoning=false, finish_reason=None, reasoning_calls=None))]
    fn new(
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        format: &str,
        model: Option<&str>,
        fallbacks: Option<&Bound<'_, PyAny>>,
        starts_in_reasoning: bool,
        finish_reason: Option<&str>,
        reasoning_calls: Option<&str>,
    ) -> PyResult<Self> {
        let options = options(
            py,
            Keywords {
                tools,
                format,
                model,
                fallbacks,
                starts_in_reasoning,
                finish_reason,
                reasoning_calls,
            },
        )?;
        Ok(StreamParser {
            inner: Some(toolcall_parse::StreamParser::new(options.clone())),
            options,
            pending: Vec::new(),
            offset: 0,
        })
    }

    /// Parses the next chunk; `bytes` chunks may split a UTF-8 sequence. A chunk with an
    /// invalid byte raises `DecodeError` and is not consumed.
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let chunk = Text::extract(chunk)?;
        let Some(inner) = self.inner.as_mut() else {
            return Err(errors::stream_finished(py));
        };
        let events = match &chunk {
            Text::Str(s) if self.pending.is_empty() => push(py, inner, s),
            Text::Str(_) => {
                return Err(errors::decode(
                    py,
                    format!(
                        "a str chunk arrived inside a UTF-8 sequence split at byte offset {}",
                        self.offset
                    ),
                ));
            }
            Text::Bytes(b) => {
                let mut bytes = std::mem::take(&mut self.pending);
                bytes.extend_from_slice(b);
                let valid = match std::str::from_utf8(&bytes) {
                    Ok(_) => bytes.len(),
                    // Only an incomplete sequence at the very end may wait for more bytes.
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    Err(e) => {
                        let err = utf8_error(py, self.offset, e);
                        // Not consumed: keep what was pending before this chunk.
                        bytes.truncate(bytes.len() - b.len());
                        self.pending = bytes;
                        return Err(err);
                    }
                };
                let text = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
                let events = push(py, inner, text);
                self.pending = bytes.split_off(valid);
                events
            }
        };
        self.offset += chunk.as_bytes().len();
        events_to_py(py, &events)
    }

    /// Ends the reply: flushes what was held back and reports cut-off calls. The parser is
    /// then finished until `reset`. Raises `DecodeError` (and stays open) if the last `bytes`
    /// chunk ended inside a UTF-8 sequence. `finish_reason`: how the reply ended (the
    /// server's `finish_reason`, overriding the constructor's): a call missing its closing
    /// marker at the end is a call after `stop`/`tool_calls`, truncated after `length`.
    #[pyo3(signature = (finish_reason=None))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        finish_reason: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        if !self.pending.is_empty() {
            return Err(errors::decode(
                py,
                format!(
                    "input ends inside a UTF-8 sequence (at byte offset {})",
                    self.offset - self.pending.len()
                ),
            ));
        }
        let Some(inner) = self.inner.take() else {
            return Err(errors::stream_finished(py));
        };
        let events = match finish_reason {
            Some(reason) => inner.finish_as(ReplyEnd::from_finish_reason(reason)),
            None => inner.finish(),
        };
        events_to_py(py, &events)
    }

    /// Starts over for a new reply, with the same options.
    fn reset(&mut self) {
        self.inner = Some(toolcall_parse::StreamParser::new(self.options.clone()));
        self.pending.clear();
        self.offset = 0;
    }

    /// Whether `finish` was called (and `reset` not since).
    #[getter]
    fn finished(&self) -> bool {
        self.inner.is_none()
    }
}

fn push(py: Python<'_>, inner: &mut toolcall_parse::StreamParser, text: &str) -> Vec<StreamEvent> {
    if text.len() >= DETACH_BYTES {
        py.detach(|| inner.push(text))
    } else {
        inner.push(text)
    }
}

/// How many span `int`s one result keeps (a power of two).
const INT_SLOTS: usize = 16;

/// What one result's values share: short `str`s (keys, names, formats, messages), the
/// `int`s of spans (a JSON reply's calls and diagnostics all span the same bytes; a call's
/// "found" diagnostic spans its call), and the process's call and diagnostic templates.
struct Shared<'py> {
    strings: convert::Strings,
    /// Span offsets made, direct-mapped by a hash of the offset: a reply's calls are made
    /// before its diagnostics, so a cache of the last two offsets found none of a tagged
    /// reply's diagnostic spans.
    ints: [Option<(usize, Bound<'py, PyInt>)>; INT_SLOTS],
    /// The process's templates, held for this result (`None`: another conversion holds
    /// them, as for [`convert::Strings`]; dicts are then filled from the bare templates).
    templates: Option<MutexGuard<'static, Templates>>,
}

impl Default for Shared<'_> {
    fn default() -> Self {
        Shared {
            strings: convert::Strings::new(),
            ints: Default::default(),
            templates: Templates::take(),
        }
    }
}

/// How many call and diagnostic templates the process keeps (a power of two).
const TEMPLATE_SLOTS: usize = 256;

/// Names and messages longer than this get no template (a lookup compares the text whole).
const TEMPLATE_MAX_TEXT: usize = 128;

/// Call dicts by format and name and diagnostic dicts by level and message, their other
/// values `None`, one per slot, direct-mapped by a hash of the name or message: a reply's
/// calls repeat their tool names and their "found" diagnostics' messages, and so do the
/// replies of a process. A new call or diagnostic dict is a copy of its template with the
/// values that differ (id, arguments, repairs, span) replaced: one replacement and one
/// `str` lookup fewer a dict than a template holding the format or level alone: a
/// `json/small` parse 45,172 → 43,596 instructions, `json/100 calls` 1,165,663 →
/// 1,130,586 (session 36). Templates are never handed out themselves.
struct Templates {
    slots: Vec<Option<Template>>,
}

/// A kept template and what it was made for.
struct Template {
    /// [`Templates::CALL`], or a diagnostic's level ([`level_kind`]).
    kind: u8,
    /// A call's format (empty for a diagnostic).
    format: String,
    /// A call's name, a diagnostic's message.
    text: String,
    dict: Py<PyDict>,
}

/// The process's [`Templates`], taken by one result's conversion at a time.
static TEMPLATES: Mutex<Templates> = Mutex::new(Templates { slots: Vec::new() });

impl Templates {
    const CALL: u8 = 0;

    fn take() -> Option<MutexGuard<'static, Templates>> {
        let mut guard = match TEMPLATES.try_lock() {
            Ok(guard) => guard,
            // A panic while the templates were held leaves every slot a whole entry.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        if guard.slots.is_empty() {
            guard.slots.resize_with(TEMPLATE_SLOTS, || None);
        }
        Some(guard)
    }
}

/// A diagnostic level's [`Template::kind`].
fn level_kind(level: Level) -> u8 {
    match level {
        Level::Info => 1,
        Level::Warning => 2,
        Level::Error => 3,
    }
}

impl<'py> Shared<'py> {
    fn int(&mut self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyInt>> {
        // Fibonacci hashing: the top bits of the product pick the slot.
        let slot =
            (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - INT_SLOTS.trailing_zeros());
        let slot = &mut self.ints[slot as usize];
        if let Some((m, i)) = slot
            && *m == n
        {
            return Ok(i.clone());
        }
        let i = n.into_pyobject(py)?;
        *slot = Some((n, i.clone()));
        Ok(i)
    }

    /// A new dict copied from the template for (`kind`, `format`, `text`), which `make`
    /// makes when none is kept; without kept templates (or for a long `text`), `make`'s
    /// dict itself.
    fn keyed_dict(
        &mut self,
        py: Python<'py>,
        kind: u8,
        format: &str,
        text: &str,
        make: impl FnOnce(&mut convert::Strings) -> PyResult<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let Some(templates) = self
            .templates
            .as_mut()
            .filter(|_| text.len() <= TEMPLATE_MAX_TEXT)
        else {
            return make(&mut self.strings);
        };
        let hash = convert::hash(text.as_bytes());
        // The top bits pick the slot (the hash's last multiply mixes into them).
        let index = (hash >> (64 - TEMPLATE_SLOTS.trailing_zeros())) as usize;
        let Some(slot) = templates.slots.get_mut(index) else {
            return make(&mut self.strings);
        };
        if let Some(t) = slot
            && t.kind == kind
            && t.text == text
            && t.format == format
        {
            return t.dict.bind(py).copy();
        }
        let template = make(&mut self.strings)?;
        let out = template.copy()?;
        *slot = Some(Template {
            kind,
            format: format.to_owned(),
            text: text.to_owned(),
            dict: template.unbind(),
        });
        Ok(out)
    }

    /// A new call dict, its keys in order, `format` and `name` set, the others `None`, to be
    /// replaced. CPython copies a dict's key table whole (and the values' references), where
    /// inserting six keys into an empty dict hashes them into place and grows the table once
    /// on the way.
    fn call_dict(
        &mut self,
        py: Python<'py>,
        format: &str,
        name: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.keyed_dict(py, Templates::CALL, format, name, |strings| {
            let d = call_keys(py)?.copy()?;
            d.set_item(intern!(py, "name"), strings.get(py, name))?;
            d.set_item(intern!(py, "format"), strings.get(py, format))?;
            Ok(d)
        })
    }

    /// A new diagnostic dict, its keys in order, `level` and `message` set, `span` `None`.
    fn diagnostic_dict(
        &mut self,
        py: Python<'py>,
        level: Level,
        message: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.keyed_dict(py, level_kind(level), "", message, |strings| {
            let d = diagnostic_dict(py, level)?;
            d.set_item(intern!(py, "message"), strings.get(py, message))?;
            Ok(d)
        })
    }

    /// A span as a new list (lists are mutable: never shared) of shared `int`s.
    fn span(
        &mut self,
        py: Python<'py>,
        span: &std::ops::Range<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, [self.int(py, span.start)?, self.int(py, span.end)?])
    }
}

/// A diagnostic's level as an interned `str` (one object for all diagnostics, no allocation).
fn level_str<'py>(py: Python<'py>, level: Level) -> &'py Bound<'py, PyString> {
    match level {
        Level::Info => intern!(py, "info"),
        Level::Warning => intern!(py, "warning"),
        Level::Error => intern!(py, "error"),
    }
}

pub fn diagnostic_to_py<'py>(py: Python<'py>, d: &Diagnostic) -> PyResult<Bound<'py, PyDict>> {
    diagnostic_to_py_with(py, d, &mut Shared::default())
}

fn diagnostic_to_py_with<'py>(
    py: Python<'py>,
    d: &Diagnostic,
    shared: &mut Shared<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    // `span` is the one key set below.
    let out = shared.diagnostic_dict(py, d.level, &d.message)?;
    out.set_item(intern!(py, "span"), shared.span(py, &d.span)?)?;
    Ok(out)
}

pub fn repairs_to_py<'py>(
    py: Python<'py>,
    repairs: &[toolcall_core::Repair],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for r in repairs {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "kind"), &r.kind)?;
        d.set_item(intern!(py, "message"), &r.message)?;
        list.append(d)?;
    }
    Ok(list)
}

pub fn call_to_py<'py>(py: Python<'py>, c: &ToolCall) -> PyResult<Bound<'py, PyDict>> {
    call_to_py_with(py, c, &mut Shared::default())
}

/// A call's keys in order, each holding `None`: what call templates
/// ([`Shared::call_dict`]) are made from.
static CALL_KEYS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// Per level (info, warning, error), a diagnostic dict with its `level` set and the other
/// keys `None`, never handed out itself: what diagnostic templates
/// ([`Shared::diagnostic_dict`]) are made from.
static DIAGNOSTIC_TEMPLATES: [PyOnceLock<Py<PyDict>>; 3] =
    [PyOnceLock::new(), PyOnceLock::new(), PyOnceLock::new()];

/// A new diagnostic dict, its keys in order, `level` set, the others `None`: one
/// replacement fewer than filling an empty dict, and the key table copied whole.
fn diagnostic_dict(py: Python<'_>, level: Level) -> PyResult<Bound<'_, PyDict>> {
    let index = match level {
        Level::Info => 0,
        Level::Warning => 1,
        Level::Error => 2,
    };
    let template = DIAGNOSTIC_TEMPLATES[index].get_or_try_init(py, || -> PyResult<_> {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "level"), level_str(py, level))?;
        d.set_item(intern!(py, "message"), py.None())?;
        d.set_item(intern!(py, "span"), py.None())?;
        Ok(d.unbind())
    })?;
    template.bind(py).copy()
}

fn call_keys(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    let keys = CALL_KEYS.get_or_try_init(py, || -> PyResult<_> {
        let d = PyDict::new(py);
        for key in [
            intern!(py, "call_id"),
            intern!(py, "name"),
            intern!(py, "arguments"),
            intern!(py, "format"),
            intern!(py, "repairs"),
            intern!(py, "span"),
        ] {
            d.set_item(key, py.None())?;
        }
        Ok(d.unbind())
    })?;
    Ok(keys.bind(py))
}

fn call_to_py_with<'py>(
    py: Python<'py>,
    c: &ToolCall,
    shared: &mut Shared<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    // Every key but `name` and `format` is set below, in the template's order.
    let out = shared.call_dict(py, &c.origin.format, &c.name)?;
    out.set_item(
        intern!(py, "call_id"),
        PyString::new(py, c.call_id.as_str()),
    )?;
    out.set_item(
        intern!(py, "arguments"),
        convert::to_py_with(py, &c.arguments, &mut shared.strings)?,
    )?;
    out.set_item(
        intern!(py, "repairs"),
        repairs_to_py(py, &c.origin.repairs)?,
    )?;
    out.set_item(intern!(py, "span"), shared.span(py, &c.origin.span)?)?;
    Ok(out)
}

fn parsed_to_py<'py>(py: Python<'py>, p: &Parsed) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item(intern!(py, "text"), PyString::new(py, &p.text))?;
    let mut shared = Shared::default();
    let calls = convert::list_of(
        py,
        p.calls.len(),
        p.calls.iter().map(|c| call_to_py_with(py, c, &mut shared)),
    )?;
    out.set_item(intern!(py, "calls"), calls)?;
    let diagnostics = convert::list_of(
        py,
        p.diagnostics.len(),
        p.diagnostics
            .iter()
            .map(|d| diagnostic_to_py_with(py, d, &mut shared)),
    )?;
    out.set_item(intern!(py, "diagnostics"), diagnostics)?;
    out.set_item(intern!(py, "reasoning"), PyList::new(py, &p.reasoning)?)?;
    Ok(out)
}

fn event_to_py<'py>(py: Python<'py>, e: &StreamEvent) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let kind = intern!(py, "event");
    match e {
        StreamEvent::Text { text } => {
            out.set_item(kind, "text")?;
            out.set_item(intern!(py, "text"), text)?;
        }
        StreamEvent::Reasoning { text } => {
            out.set_item(kind, "reasoning")?;
            out.set_item(intern!(py, "text"), text)?;
        }
        StreamEvent::CallStarted {
            index,
            call_id,
            name,
        } => {
            out.set_item(kind, "call_started")?;
            out.set_item(intern!(py, "index"), index)?;
            out.set_item(intern!(py, "call_id"), call_id.as_str())?;
            out.set_item(intern!(py, "name"), name)?;
        }
        StreamEvent::ArgumentsDelta { index, fragment } => {
            out.set_item(kind, "arguments_delta")?;
            out.set_item(intern!(py, "index"), index)?;
            out.set_item(intern!(py, "fragment"), fragment)?;
        }
        StreamEvent::CallFinished { index, call } => {
            out.set_item(kind, "call_finished")?;
            out.set_item(intern!(py, "index"), index)?;
            out.set_item(intern!(py, "call"), call_to_py(py, call)?)?;
        }
        StreamEvent::Diagnostic { diagnostic } => {
            out.set_item(kind, "diagnostic")?;
            out.set_item(intern!(py, "diagnostic"), diagnostic_to_py(py, diagnostic)?)?;
        }
    }
    Ok(out)
}

fn events_to_py<'py>(py: Python<'py>, events: &[StreamEvent]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for e in events {
        list.append(event_to_py(py, e)?)?;
    }
    Ok(list)
}
