# Stubs of the compiled core (python/src/*.rs).
from os import PathLike
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._types import Event, FormatInfo, Parsed, Repair, SessionRecord, SessionSummary, TemplateInfo

__version__: str

_T = TypeVar("_T", bound="Toolset")
_Text = Union[str, bytes, bytearray]
_ToolsArg = Union["Toolset", Sequence[Mapping[str, Any]], Mapping[str, Any], None]

def parse(
    text: _Text,
    *,
    tools: _ToolsArg = None,
    format: str = "auto",
    model: Optional[str] = None,
    fallbacks: Optional[Sequence[Mapping[str, Any]]] = None,
    starts_in_reasoning: bool = False,
    finish_reason: Optional[str] = None,
    reasoning_calls: Optional[str] = None,
) -> Parsed:
    """Finds the tool calls in one whole model reply.

    ``format`` is ``"auto"``, a format id, or a comma-separated priority list (see
    :func:`formats`); with ``format="auto"``, ``model`` (e.g. ``"Qwen/Qwen2.5-7B-Instruct"``)
    picks its family's format (auto again for an unknown name). With ``tools``, formats that could misfire on prose accept only
    registered names. Raises ``DecodeError`` for bytes that are not UTF-8, ``UnknownFormat``,
    ``ToolsError``, ``TypeError`` for a ``text`` that is neither str nor bytes. Input beyond
    16 MiB is passed through as text with an error diagnostic. ``finish_reason`` is how the
    reply ended (the server's ``finish_reason``): a call missing its closing marker at the
    end (servers strip end tokens) is a call after ``"stop"``/``"tool_calls"`` or when
    unknown (``None``), truncated after ``"length"``. ``reasoning_calls`` says what calls
    written inside reasoning are: ``"ignore"`` (drafts) or ``"take_if_none_after"`` (the
    reply's calls when none follows the reasoning); ``None``: the family's default.
    """

def formats() -> List[FormatInfo]:
    """Every format toolcall reads, in auto mode's order."""

def detect(source: Union[str, Mapping[str, Any]]) -> TemplateInfo:
    """What a chat template (text) or tokenizer config (text or dict) says about the output."""

class StreamParser:
    def __init__(
        self,
        tools: _ToolsArg = None,
        *,
        format: str = "auto",
        model: Optional[str] = None,
        fallbacks: Optional[Sequence[Mapping[str, Any]]] = None,
        starts_in_reasoning: bool = False,
        finish_reason: Optional[str] = None,
        reasoning_calls: Optional[str] = None,
    ) -> None: ...
    def feed(self, chunk: _Text) -> List[Event]: ...
    def finish(self, finish_reason: Optional[str] = None) -> List[Event]: ...
    def reset(self) -> None: ...
    @property
    def finished(self) -> bool: ...

class Toolset:
    def __init__(self, tools: Union[Sequence[Mapping[str, Any]], Mapping[str, Any]]) -> None: ...
    @classmethod
    def from_file(cls: type[_T], path: Union[str, PathLike[str]]) -> _T: ...
    def validate(
        self, name: str, arguments: Union[Mapping[str, Any], str, None]
    ) -> Tuple[Dict[str, Any], List[Repair]]: ...
    def render(self, provider: str) -> Any: ...
    def instructions(self, format: str) -> str: ...
    def constrain(
        self,
        format: str,
        dialect: str = "gbnf",
        tool_choice: str = "auto",
        parallel_tool_calls: bool = True,
        trigger: Optional[str] = None,
    ) -> Any:
        """The decoding constraint for `format`'s call markup and the enabled tools: grammar
        text (`gbnf`, `lark`) or a dict (`structural_tag`, `json_schema`)."""
        ...
    def enable(self, name: str) -> None: ...
    def disable(self, name: str) -> None: ...
    @property
    def names(self) -> List[str]: ...
    @property
    def enabled(self) -> List[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...

class Archive:
    """A session archive (what ``toolcall run`` and ``toolcall serve`` write), opened for
    reading from either backend.

    ``location`` is an SQLite file (``str`` or path) or a ``postgres://`` /
    ``postgresql://`` URL: the ``--archive`` argument of ``toolcall sessions``. Opening
    applies the migrations an older archive lacks, as the CLI does. Raises
    ``ArchiveUnavailable`` when there is no such file or the database cannot be reached
    (within 10 s), ``NewerSchema`` for an archive written by a newer toolcall, and
    ``ArchiveError`` for anything else the archive refuses (e.g. a file that is not an
    archive). Reads release the GIL.
    """

    def __init__(self, location: Union[str, PathLike[str]]) -> None: ...
    @property
    def location(self) -> str:
        """The location, with any password in a URL hidden."""
    def list_sessions(self) -> List[SessionSummary]:
        """Every session, newest first."""
    def show_session(self, session_id: str) -> SessionRecord:
        """Everything archived for one session: messages, calls with their results (paired
        by call id), pack states. Raises ``SessionNotFound`` for an unknown id."""
