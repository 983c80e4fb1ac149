"""The shapes of what toolcall returns: plain dicts, typed for checkers."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict


class Repair(TypedDict):
    """One fix applied to make a call usable (``trailing_comma``, ``coerced_integer``, ...)."""

    kind: str
    message: str


class Call(TypedDict):
    """A complete, repaired tool call. ``span`` is ``[start, end]`` in UTF-8 bytes of the
    input (``[0, 0]`` for native calls)."""

    call_id: str
    name: str
    arguments: Dict[str, Any]
    format: str
    repairs: List[Repair]
    span: List[int]


class Diagnostic(TypedDict):
    """What was found or rejected, and where (``level``: ``info``, ``warning``, ``error``)."""

    level: str
    message: str
    span: List[int]


class Parsed(TypedDict):
    """The result of :func:`toolcall.parse`: the visible ``text`` (call markup and reasoning
    removed), the ``calls``, the ``diagnostics`` and the ``reasoning`` blocks."""

    text: str
    calls: List[Call]
    diagnostics: List[Diagnostic]
    reasoning: List[str]


class FormatInfo(TypedDict):
    id: str
    description: str
    example: str


class ReasoningMarkers(TypedDict):
    open: str
    close: str


class TemplateInfo(TypedDict):
    """What :func:`toolcall.detect` found in a chat template."""

    family: Optional[str]
    decided_by: List[str]
    reasoning: List[ReasoningMarkers]
    opens_reasoning: bool
    templates: List[str]


Event = Dict[str, Any]
"""A stream event: ``{"event": "text", "text"}``, ``{"event": "reasoning", "text"}``,
``{"event": "call_started", "index", "call_id", "name"}``, ``{"event": "arguments_delta",
"index", "fragment"}``, ``{"event": "call_finished", "index", "call": Call}`` or
``{"event": "diagnostic", "diagnostic": Diagnostic}``."""


class SessionSummary(TypedDict):
    """One archived session, as :func:`toolcall.list_sessions` lists it: ``messages`` and
    ``calls`` are counts; ``created_at`` is the archive's timestamp text (UTC)."""

    id: str
    created_at: str
    description: str
    messages: int
    calls: int


class ArchivedResult(TypedDict):
    """A result archived for a call: ``outcome`` is what the model was told
    (``{"status": "ok", "data": ...}`` or ``{"error": {...}}``, secrets redacted);
    ``delivery`` is ``"inline"`` or ``"job"`` (a job's result delivered later)."""

    outcome: Dict[str, Any]
    duration_ms: int
    delivery: str


class ArchivedCall(TypedDict):
    """An archived call with the results archived for it (paired by call id). ``round`` is
    the model round it came from; no ``results`` means the process stopped before the call
    finished."""

    round: int
    call_id: str
    name: str
    arguments: Any
    format: str
    repairs: List[Repair]
    results: List[ArchivedResult]


class SessionRecord(TypedDict):
    """Everything archived for a session (:func:`toolcall.show_session`): the conversation's
    ``messages`` in order (dicts with ``role``: ``system``, ``user``, ``assistant`` with
    ``text`` and ``calls``, ``tool`` with ``call_id`` and ``content``, ``job_result``,
    ``text_results``), the ``calls`` with their results, and each pack's last state."""

    session: SessionSummary
    messages: List[Dict[str, Any]]
    calls: List[ArchivedCall]
    pack_states: Dict[str, Any]
