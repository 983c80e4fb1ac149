"""toolcall: find, validate and render LLM tool calls, whole or streamed.

The compiled core (``toolcall._toolcall``, Rust) does the work; this layer re-exports it and
adds iteration over sync and async streams of chunks. Everything goes in and comes out as
plain Python values in the shapes of the ``toolcall`` CLI's JSON.

>>> import toolcall
>>> toolcall.parse('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')["calls"][0]["arguments"]
{'city': 'Paris'}
"""

from __future__ import annotations

from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Union

from . import _toolcall
from ._errors import (
    DecodeError,
    InputError,
    StreamFinished,
    ToolcallError,
    ToolDisabled,
    ToolsError,
    UnknownFormat,
    UnknownTool,
    ValidationError,
)
from ._toolcall import Toolset, __version__, formats, parse
from ._types import Call, Diagnostic, Event, FormatInfo, Parsed, Repair, TemplateInfo

Chunk = Union[str, bytes]

__all__ = [
    "Call",
    "Chunk",
    "DecodeError",
    "Diagnostic",
    "Event",
    "FormatInfo",
    "InputError",
    "Parsed",
    "Repair",
    "StreamFinished",
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
    "detect",
    "formats",
    "parse",
]


class StreamParser(_toolcall.StreamParser):
    """An incremental parser: ``feed`` chunks as they arrive, then ``finish``.

    ``StreamParser(tools=None, *, format="auto", model=None, fallbacks=None,
    starts_in_reasoning=False, finish_reason=None)``
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
