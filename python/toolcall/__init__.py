"""toolcall: find, validate and render LLM tool calls, whole or streamed.

The compiled core (``toolcall._toolcall``, Rust) does the work; this layer re-exports it and
adds iteration over sync and async streams of chunks. Everything goes in and comes out as
plain Python values in the shapes of the ``toolcall`` CLI's JSON.

>>> import toolcall
>>> toolcall.parse('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')["calls"][0]["arguments"]
{'city': 'Paris'}
"""

from __future__ import annotations

from typing import AsyncIterable, AsyncIterator, Iterable, Iterator, Union

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
from ._types import Call, Diagnostic, Event, FormatInfo, Parsed, Repair

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
    "ToolDisabled",
    "ToolcallError",
    "Toolset",
    "ToolsError",
    "UnknownFormat",
    "UnknownTool",
    "ValidationError",
    "__version__",
    "formats",
    "parse",
]


class StreamParser(_toolcall.StreamParser):
    """An incremental parser: ``feed`` chunks as they arrive, then ``finish``.

    ``StreamParser(tools=None, *, format="auto", fallbacks=None, starts_in_reasoning=False)``
    takes the options of :func:`parse`. ``feed(chunk)`` accepts ``str`` or ``bytes`` (a UTF-8
    sequence may be split across ``bytes`` chunks) and returns the events it completed;
    ``finish()`` returns the rest and reports calls cut off by the end of the stream;
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
