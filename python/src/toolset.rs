//! `Toolset`: a `toolcall_core::Registry` from Python — validation with repairs, rendering
//! for the four providers, text-mode instructions, enable/disable.
//!
//! The registry sits behind an `Arc` so parsers built from the toolset share it; enabling or
//! disabling a tool copies it on write (parsers already built keep the set they were given).

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple, PyType};
use toolcall_core::render::render;
use toolcall_core::{Provider, Registry, RegistryError, ToolCall};
use toolcall_parse::{FormatId, render_prompt};

use crate::convert;
use crate::errors;
use crate::parse::repairs_to_py;

/// A set of tools: validates calls against their schemas (with unambiguous repairs),
/// renders them for a provider, writes text-format instructions, switches tools on and off.
///
/// ``Toolset(tools)`` takes a tools document: a list of OpenAI Chat, Responses, Anthropic,
/// Gemini (``{"functionDeclarations": [...]}``) or toolcall tool entries, or
/// ``{"tools": [...]}``; ``toolcall.Toolset`` also takes functions made tools with
/// ``@toolcall.tool`` and runs their calls with ``execute``.
#[pyclass(subclass, module = "toolcall._toolcall", name = "Toolset")]
pub struct Toolset {
    registry: Arc<Registry>,
}

impl Toolset {
    /// Loads a tools document given as Python values.
    pub fn load(tools: &Bound<'_, PyAny>) -> PyResult<Toolset> {
        let py = tools.py();
        let doc = convert::to_json(tools)?;
        // Compiling every schema is the long part: let other threads run meanwhile.
        let registry = py
            .detach(|| Registry::from_tools_json(&doc))
            .map_err(|e| errors::tools(py, e.to_string()))?;
        Ok(Toolset {
            registry: Arc::new(registry),
        })
    }

    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    fn set_enabled(&mut self, py: Python<'_>, name: &str, enabled: bool) -> PyResult<()> {
        match Arc::make_mut(&mut self.registry).set_enabled(name, enabled) {
            Ok(()) => Ok(()),
            Err(RegistryError::Unknown(_)) => Err(errors::unknown_tool_name(
                py,
                name,
                self.registry.names().map(str::to_owned).collect(),
            )),
            Err(e) => Err(errors::tools(py, e.to_string())),
        }
    }
}

#[pymethods]
impl Toolset {
    /// A tools document: a list of OpenAI Chat, Responses, Anthropic, Gemini
    /// (`{"functionDeclarations": [...]}`) or toolcall tool entries, or `{"tools": [...]}`.
    #[new]
    fn new(tools: &Bound<'_, PyAny>) -> PyResult<Self> {
        Toolset::load(tools)
    }

    /// Reads a tools file (JSON, at most 8 MiB), as an instance of the class it is called on.
    #[classmethod]
    fn from_file<'py>(cls: &Bound<'py, PyType>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let registry = py
            .detach(|| Registry::from_tools_file(&path))
            .map_err(|e| errors::tools(py, e.to_string()))?;
        // An empty toolset of `cls` (a subclass keeps its own state), then the file's tools.
        let toolset = cls.call1((PyList::empty(py),))?;
        toolset.cast::<Toolset>()?.borrow_mut().registry = Arc::new(registry);
        Ok(toolset)
    }

    /// Checks a call's arguments (a dict, or a JSON string) against the tool's schema and
    /// returns `(arguments, repairs)`: the arguments to run with, after unambiguous
    /// coercions, and the repairs applied. Raises `UnknownTool`, `ToolDisabled` or
    /// `ValidationError`.
    fn validate<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        arguments: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut call = ToolCall::new(name, convert::to_json(arguments)?, "python");
        self.registry
            .validate_call(&mut call)
            .map_err(|e| errors::validation(py, name, e))?;
        PyTuple::new(
            py,
            [
                convert::to_py(py, &call.arguments)?,
                repairs_to_py(py, &call.origin.repairs)?.into_any(),
            ],
        )
    }

    /// The enabled tools in a provider's shape: `openai` (Chat Completions), `responses`,
    /// `anthropic`, or `gemini` (one `{"functionDeclarations": [...]}` object).
    fn render<'py>(&self, py: Python<'py>, provider: &str) -> PyResult<Bound<'py, PyAny>> {
        let provider: Provider = provider
            .parse()
            .map_err(|e: String| errors::unknown_format(py, e))?;
        let (tools, _names) = render(&self.registry, provider);
        convert::to_py(py, &tools)
    }

    /// System-prompt instructions for a model without native tool calling: how to write a
    /// call in `format` (a text format id such as `hermes` or `tools_envelope`) and the
    /// enabled tools with their schemas.
    fn instructions(&self, py: Python<'_>, format: &str) -> PyResult<String> {
        let id = FormatId::from_name(format)
            .ok_or_else(|| errors::unknown_format(py, format!("unknown text format {format:?}")))?;
        render_prompt(&self.registry, id).map_err(|e| errors::unknown_format(py, e.to_string()))
    }

    /// The decoding constraint that keeps a model's calls to the enabled tools valid by
    /// construction, in `format`'s call markup: `dialect` `gbnf` (llama.cpp) or `lark`
    /// (llguidance) gives the grammar text; `structural_tag` (vLLM, SGLang) and `json_schema`
    /// give a dict. `tool_choice` is `auto`, `required`, `none` or a tool's name (that tool,
    /// forced); `parallel_tool_calls=False` allows one call; `trigger` is a literal every
    /// call must start with. Raises `UnknownFormat` for an unknown family or dialect and
    /// `InputError` when the family's markup cannot be written in that dialect.
    #[pyo3(signature = (format, dialect = "gbnf", tool_choice = "auto", parallel_tool_calls = true, trigger = None))]
    fn constrain<'py>(
        &self,
        py: Python<'py>,
        format: &str,
        dialect: &str,
        tool_choice: &str,
        parallel_tool_calls: bool,
        trigger: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        use toolcall_constrain::{Body, ConstrainError, Dialect, Options, ToolChoice};
        let dialect: Dialect = dialect
            .parse()
            .map_err(|e: ConstrainError| errors::unknown_format(py, e.to_string()))?;
        let tools: Vec<_> = self.registry.enabled_specs().cloned().collect();
        let options = Options {
            choice: ToolChoice::parse(tool_choice),
            parallel: parallel_tool_calls,
            trigger,
        };
        let constraint = py
            .detach(|| toolcall_constrain::build(format, &tools, dialect, &options))
            .map_err(|e| match e {
                ConstrainError::UnknownFamily(_) => errors::unknown_format(py, e.to_string()),
                _ => errors::input(py, e.to_string()),
            })?;
        match &constraint.body {
            Body::Grammar(text) => Ok(PyString::new(py, text).into_any()),
            Body::Json(value) => convert::to_py(py, value),
        }
    }

    /// Offers the tool to models again and accepts its calls.
    fn enable(&mut self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.set_enabled(py, name, true)
    }

    /// Stops offering the tool; its calls then fail with `ToolDisabled`.
    fn disable(&mut self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.set_enabled(py, name, false)
    }

    /// Every tool's name, sorted.
    #[getter]
    fn names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.registry.names())
    }

    /// The names of the enabled tools, sorted.
    #[getter]
    fn enabled<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.registry.enabled_specs().map(|s| s.name.as_str()))
    }

    fn __len__(&self) -> usize {
        self.registry.len()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.registry.contains(name)
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.registry.names().collect();
        format!("Toolset({names:?})")
    }
}
