"""toolcall: find, validate and render LLM tool calls, whole or streamed, and run them.

The compiled core (``toolcall._toolcall``, Rust) does the work; this layer re-exports it and
adds iteration over sync and async streams of chunks, and Python functions as tools
(:func:`tool`, :meth:`Toolset.execute`). Everything goes in and comes out as
plain Python values in the shapes of the ``toolcall`` CLI's JSON.

>>> import toolcall
>>> toolcall.parse('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')["calls"][0]["arguments"]
{'city': 'Paris'}
"""

from __future__ import annotations

import inspect
import os
from typing import (
    Any,
    AsyncIterable,
    AsyncIterator,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Tuple,
    Union,
)

from . import _toolcall
from ._errors import (
    ArchiveError,
    ArchiveUnavailable,
    DecodeError,
    InputError,
    NewerSchema,
    SessionNotFound,
    StreamFinished,
    ToolcallError,
    ToolDisabled,
    ToolsError,
    UnknownFormat,
    UnknownTool,
    ValidationError,
)
from ._toolcall import __version__, formats, parse
from ._tools import FunctionTool, jsonable, result_error, result_ok, tool
from ._types import (
    ArchivedCall,
    ArchivedResult,
    Call,
    Diagnostic,
    Event,
    FormatInfo,
    Parsed,
    Repair,
    SessionRecord,
    SessionSummary,
    TemplateInfo,
)

Chunk = Union[str, bytes]
ArchiveLocation = Union[str, "os.PathLike[str]"]

__all__ = [
    "Archive",
    "ArchiveError",
    "ArchiveUnavailable",
    "ArchivedCall",
    "ArchivedResult",
    "Call",
    "Chunk",
    "DecodeError",
    "Diagnostic",
    "Event",
    "FunctionTool",
    "FormatInfo",
    "InputError",
    "NewerSchema",
    "Parsed",
    "Repair",
    "StreamFinished",
    "SessionNotFound",
    "SessionRecord",
    "SessionSummary",
    "StreamParser",
    "TemplateInfo",
    "ToolDisabled",
    "ToolcallError",
    "Toolset",
    "ToolsError",
    "UnknownFormat",
    "UnknownTool",
    "ValidationError",
    "__version__",
    "result_error",
    "result_ok",
    "detect",
    "formats",
    "list_sessions",
    "parse",
    "show_session",
    "tool",
]


class StreamParser(_toolcall.StreamParser):
    """An incremental parser: ``feed`` chunks as they arrive, then ``finish``.

    ``StreamParser(tools=None, *, format="auto", model=None, fallbacks=None,
    starts_in_reasoning=False, finish_reason=None, reasoning_calls=None)``
    takes the options of :func:`parse`. ``feed(chunk)`` accepts ``str`` or ``bytes`` (a UTF-8
    sequence may be split across ``bytes`` chunks) and returns the events it completed;
    ``finish(finish_reason=None)`` returns the rest and reports calls cut off by the end of
    the stream (``finish_reason``, the server's: ``"length"`` means cut, so a call missing
    its closing marker is truncated; ``"stop"`` or unknown: a complete one is a call);
    ``reset()`` starts over. Act on ``call_finished`` events: they carry the complete,
    repaired call, the same one :func:`parse` returns for the whole text.
    """

    def stream(self, chunks: Iterable[Chunk]) -> Iterator[Event]:
        """Feeds every chunk, then finishes, yielding the events as they complete."""
        for chunk in chunks:
            yield from self.feed(chunk)
        yield from self.finish()

    async def astream(self, chunks: AsyncIterable[Chunk]) -> AsyncIterator[Event]:
        """:meth:`stream` for an async iterable of chunks."""
        async for chunk in chunks:
            for event in self.feed(chunk):
                yield event
        for event in self.finish():
            yield event


class Toolset(_toolcall.Toolset):
    """A set of tools: validates calls against their schemas (with unambiguous repairs),
    renders them for a provider, writes text-format instructions, and runs the calls of tools
    that are Python functions.

    ``Toolset(tools)`` takes a list of tool entries (OpenAI Chat, Responses, Anthropic,
    Gemini or toolcall's own dicts) and functions made tools with :func:`tool`, mixed, or a
    ``{"tools": [...]}`` document. ``Toolset.from_file(path)`` reads a JSON tools file.
    """

    def __new__(cls, tools: Any = ()) -> "Toolset":
        entries, functions = _split_tools(tools)
        toolset = super().__new__(cls, entries)
        toolset._functions = functions
        return toolset

    def __init__(self, tools: Any = ()) -> None:
        pass  # all done in __new__ (the compiled base is immutable once made)

    @property
    def functions(self) -> Dict[str, FunctionTool]:
        """The tools that are Python functions, by name."""
        return dict(getattr(self, "_functions", {}))

    def _prepare(self, call: Mapping[str, Any]) -> Union[Dict[str, Any], Tuple[FunctionTool, Dict[str, Any]]]:
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            return result_error("invalid_arguments", "a call is a dict with a string \"name\"")
        name = call["name"]
        arguments = call.get("arguments")
        try:
            arguments, _repairs = self.validate(name, arguments)
        except UnknownTool as e:
            details: Dict[str, Any] = {"available": e.available}
            if e.suggestion:
                details["suggestion"] = e.suggestion
            return result_error("unknown_tool", str(e), details)
        except ToolDisabled as e:
            return result_error("tool_disabled", str(e))
        except ValidationError as e:
            return result_error("invalid_arguments", str(e), e.errors or None)
        except InputError as e:
            return result_error("invalid_arguments", str(e))
        function = getattr(self, "_functions", {}).get(name)
        if function is None:
            return result_error(
                "tool_failed", f"tool {name!r} has no Python function here to run it"
            )
        return function, arguments

    def execute(self, call: Mapping[str, Any]) -> Dict[str, Any]:
        """Validates a call (a dict with ``name`` and ``arguments``, a dict or JSON text, as
        :func:`parse` returns or a model's native call carries), runs its function and returns
        toolcall's result: ``{"status": "ok", "data": ...}`` or ``{"error": {"code",
        "message"[, "details"]}}`` (``unknown_tool``, ``tool_disabled``,
        ``invalid_arguments``, ``tool_failed``). Never raises for a bad call or a failing
        function: the result says what went wrong, for the model to read. An ``async``
        function needs :meth:`aexecute`.
        """
        prepared = self._prepare(call)
        if isinstance(prepared, dict):
            return prepared
        function, arguments = prepared
        if function.is_async:
            return result_error(
                "tool_failed", f"tool {function.name!r} is async: run it with aexecute"
            )
        try:
            return result_ok(jsonable(function.call_with(arguments)))
        except Exception as e:  # the model reads the failure; the loop goes on
            return result_error("tool_failed", f"{type(e).__name__}: {e}")

    async def aexecute(self, call: Mapping[str, Any]) -> Dict[str, Any]:
        """:meth:`execute` for async and plain functions alike (plain ones run inline)."""
        prepared = self._prepare(call)
        if isinstance(prepared, dict):
            return prepared
        function, arguments = prepared
        try:
            data = function.call_with(arguments)
            if inspect.isawaitable(data):
                data = await data
            return result_ok(jsonable(data))
        except Exception as e:
            return result_error("tool_failed", f"{type(e).__name__}: {e}")


def _split_tools(tools: Any) -> Tuple[Any, Dict[str, FunctionTool]]:
    """The tools document for the compiled core, and the function tools by name."""
    if isinstance(tools, FunctionTool):
        tools = [tools]
    if isinstance(tools, (Mapping, str, bytes)):
        return tools, {}
    try:
        listed = iter(tools)
    except TypeError:
        return tools, {}  # not a tools document: the compiled core says so (ToolsError)
    entries: List[Any] = []
    functions: Dict[str, FunctionTool] = {}
    for entry in listed:
        if isinstance(entry, FunctionTool):
            functions[entry.name] = entry
            entries.append(entry.spec)
        elif callable(entry) and not isinstance(entry, Mapping):
            made = FunctionTool(entry)
            functions[made.name] = made
            entries.append(made.spec)
        else:
            entries.append(entry)
    return entries, functions


def detect(source: Union[str, Mapping[str, Any], Any]) -> TemplateInfo:
    """Which family a model's chat template writes tool calls in, and its reasoning markers.

    ``source`` is a template's text, a ``tokenizer_config.json``'s text or that config as a
    dict, or a tokenizer object with a ``chat_template`` attribute (as ``transformers``
    tokenizers have; a dict of named templates is read whole). Returns ``{"family": id or
    None, "decided_by": [markers], "reasoning": [{"open", "close"}], "opens_reasoning":
    bool, "templates": [names read]}``; when ``opens_reasoning`` is true, parse with
    ``starts_in_reasoning=True``. Raises ``InputError`` for a config without a template.
    """
    if not isinstance(source, (str, dict)) and hasattr(source, "chat_template"):
        template = source.chat_template
        if isinstance(template, Mapping):
            template = [{"name": k, "template": v} for k, v in template.items()]
        source = {"chat_template": template}
    elif isinstance(source, Mapping) and not isinstance(source, dict):
        source = dict(source)
    return _toolcall.detect(source)


if hasattr(_toolcall, "Archive"):
    Archive = _toolcall.Archive
else:  # built without the `archive` cargo feature

    class Archive:  # type: ignore[no-redef]
        """Reading session archives needs a build with the ``archive`` feature."""

        def __init__(self, location: ArchiveLocation) -> None:
            raise ArchiveError(
                "this build of toolcall cannot read session archives (built without the "
                "`archive` feature)",
                str(location),
            )


def list_sessions(archive: ArchiveLocation) -> List[SessionSummary]:
    """Every session in the archive at ``archive`` (an SQLite file or a ``postgres://`` URL,
    the ``--archive`` of ``toolcall run``/``serve``/``sessions``), newest first. Raises
    ``ArchiveUnavailable`` (no such file, database unreachable), ``NewerSchema``,
    ``ArchiveError``. To read several times, open an :class:`Archive` once."""
    return Archive(archive).list_sessions()


def show_session(archive: ArchiveLocation, session_id: str) -> SessionRecord:
    """Everything archived for one session: its messages, its calls each with the results
    archived for it (paired by call id), and its packs' last states. Raises
    ``SessionNotFound`` for an unknown id, and what :func:`list_sessions` raises."""
    return Archive(archive).show_session(session_id)
