"""Python functions as tools: ``@toolcall.tool`` and running calls with ``Toolset.execute``.

The schema of a function tool comes from its signature and docstring, as the OpenAI Agents
SDK's ``@function_tool`` does: each parameter's type hint becomes its JSON Schema (``str``,
``int``, ``float``, ``bool``, ``None``, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``,
``Optional[X]``, ``X | Y``, ``Literal[...]``, ``Enum`` subclasses, ``TypedDict``s,
dataclasses), parameters without a default are required, and the docstring's first
paragraph is the tool's description while an ``Args:`` (Google style) or ``:param name:``
(reST) entry describes its parameter.
"""

from __future__ import annotations

import dataclasses
from collections import abc
import enum
import inspect
import json
import re
import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["FunctionTool", "tool", "result_error", "result_ok"]

_SIMPLE = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}
_MAX_DEPTH = 32


def _schema(hint: Any, depth: int = 0) -> Dict[str, Any]:
    """The JSON Schema of a type hint (``{}``, any value, for a hint it cannot express)."""
    if depth > _MAX_DEPTH:
        return {}
    if hint is inspect.Parameter.empty or hint is Any:
        return {}
    if hint in _SIMPLE:
        return dict(_SIMPLE[hint])
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        values = list(args)
        schema: Dict[str, Any] = {"enum": values}
        kinds = {type(v) for v in values}
        if len(kinds) == 1 and next(iter(kinds)) in _SIMPLE:
            schema["type"] = _SIMPLE[next(iter(kinds))]["type"]
        return schema
    if origin is typing.Union or (sys.version_info >= (3, 10) and _is_union_type(hint)):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1 and len(args) == 2:
            return _schema(options[0], depth + 1)  # Optional[X]: X, not required
        return {"anyOf": [_schema(a, depth + 1) for a in args]}
    if origin in (list, set, frozenset, abc.Sequence, abc.Set) or hint in (list, set):
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema(args[0], depth + 1)
        return schema
    if origin is tuple or hint is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], depth + 1)}
        if args:
            return {
                "type": "array",
                "prefixItems": [_schema(a, depth + 1) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        return {"type": "array"}
    if origin in (dict, abc.Mapping) or hint is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _schema(args[1], depth + 1)
        return schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _schema(typing.Literal[tuple(m.value for m in hint)], depth + 1)
    if _is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        required = sorted(getattr(hint, "__required_keys__", hints.keys()))
        return {
            "type": "object",
            "properties": {k: _schema(v, depth + 1) for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        return {
            "type": "object",
            "properties": {f.name: _schema(hints.get(f.name, Any), depth + 1) for f in fields},
            "required": [
                f.name
                for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ],
            "additionalProperties": False,
        }
    return {}


def _is_typeddict(hint: Any) -> bool:
    return (
        isinstance(hint, type)
        and issubclass(hint, dict)
        and hasattr(hint, "__total__")
        and hasattr(hint, "__annotations__")
    )


def _is_union_type(hint: Any) -> bool:
    import types

    return isinstance(hint, types.UnionType)


def _docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """The description (first paragraph) and the parameter descriptions of a docstring."""
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    description = text.split("\n\n", 1)[0].strip()
    # A first paragraph that is already the Args section describes nothing.
    if re.match(r"(Args|Arguments|Parameters|:param)\b", description):
        description = ""
    params: Dict[str, str] = {}
    for name, about in re.findall(r":param\s+(?:\w+\s+)?(\w+):\s*(.+)", text):
        params[name] = about.strip()
    section = re.search(
        r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?|\s*\n)+)", text, flags=re.M
    )
    if section:
        current = None
        for line in section.group(1).splitlines():
            entry = re.match(r"^\s+(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$", line)
            if entry:
                current = entry.group(1)
                params[current] = entry.group(2).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return " ".join(description.split()), params


class FunctionTool:
    """A Python function with the tool spec derived from it; calling it calls the function.

    ``name``, ``description`` and ``parameters`` (the JSON Schema) describe it; ``spec`` is
    the entry a :class:`toolcall.Toolset` takes (OpenAI Chat's shape).
    """

    def __init__(
        self,
        function: Callable[..., Any],
        name: Optional[str] = None,
        description: Optional[str] = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        about, param_docs = _docstring(function.__doc__)
        self.description = description if description is not None else about
        try:
            hints = typing.get_type_hints(function)
        except Exception:  # unresolvable forward references: fall back to the raw hints
            hints = getattr(function, "__annotations__", {})
        properties: Dict[str, Any] = {}
        required: List[str] = []
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = _schema(hints.get(param.name, param.annotation))
            if param.name in param_docs:
                schema["description"] = param_docs[param.name]
            properties[param.name] = schema
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        self.parameters: Dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        # Parameters typed with an Enum get the member, not its JSON value.
        self._enums = {
            p: h
            for p, h in hints.items()
            if p in properties and isinstance(h, type) and issubclass(h, enum.Enum)
        }
        self.is_async = inspect.iscoroutinefunction(function)
        self.__doc__ = function.__doc__
        self.__name__ = self.name
        self.__wrapped__ = function

    @property
    def spec(self) -> Dict[str, Any]:
        function: Dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def call_with(self, arguments: Dict[str, Any]) -> Any:
        """Calls the function with validated JSON arguments (enum values made members)."""
        converted = {
            k: self._enums[k](v) if k in self._enums and not isinstance(v, enum.Enum) else v
            for k, v in arguments.items()
        }
        return self.function(**converted)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"


def tool(
    function: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
) -> Any:
    """Makes a typed function a tool: ``@toolcall.tool`` or ``@toolcall.tool(name=...)``.

    The schema comes from the type hints, the description and the parameters' descriptions
    from the docstring. Give the result (or a list of them, mixed with tool dicts) to
    :class:`toolcall.Toolset`, whose ``execute`` validates a call and runs the function.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description)

    return wrap(function) if function is not None else wrap


def result_ok(data: Any) -> Dict[str, Any]:
    """toolcall's success result: ``{"status": "ok", "data": data}``."""
    return {"status": "ok", "data": data}


def result_error(code: str, message: str, details: Any = None) -> Dict[str, Any]:
    """toolcall's failure result: ``{"error": {"code", "message"[, "details"]}}``."""
    error: Dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def jsonable(value: Any) -> Any:
    """``value`` as JSON data (dataclasses as dicts, enums as values, others via ``str``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value, default=_fallback))


def _fallback(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
