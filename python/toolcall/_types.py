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
