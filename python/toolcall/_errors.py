"""The exceptions toolcall raises. Every one derives from :class:`ToolcallError`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class ToolcallError(Exception):
    """Base class of every error toolcall raises."""


class InputError(ToolcallError, ValueError):
    """A value toolcall cannot read: nested too deeply (or cyclic), NaN or infinity, an
    integer outside 64 bits."""


class DecodeError(InputError):
    """Model output given as bytes is not UTF-8 (or ends inside a UTF-8 sequence)."""


class UnknownFormat(InputError):
    """A format, provider or text-format name toolcall does not know."""


class ToolsError(InputError):
    """A tools document (or fallback rules) that cannot be loaded; the message names the
    entry."""


class StreamFinished(ToolcallError):
    """``feed`` or ``finish`` on a :class:`StreamParser` that was finished and not reset."""


class ValidationError(ToolcallError, ValueError):
    """A call's arguments do not match its tool's schema.

    ``errors`` lists each violation as ``{"pointer": JSON pointer into the arguments,
    "message": str}``; ``tool`` is the tool's name.
    """

    def __init__(self, message: str, tool: str, errors: List[Dict[str, Any]]) -> None:
        super().__init__(message)
        self.tool = tool
        self.errors = errors

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.tool, self.errors))


class UnknownTool(ToolcallError, LookupError):
    """A call names a tool the toolset lacks.

    ``suggestion`` is the tool the model probably meant (or None); ``available`` lists the
    enabled tools.
    """

    def __init__(
        self, message: str, name: str, suggestion: Optional[str], available: List[str]
    ) -> None:
        super().__init__(message)
        self.name = name
        self.suggestion = suggestion
        self.available = available

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.name, self.suggestion, self.available))


class ToolDisabled(ToolcallError):
    """A call names a tool that is disabled in the toolset."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.name))


class ArchiveError(ToolcallError):
    """A session archive could not be read. ``location`` is the archive's file or URL (any
    password hidden)."""

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.location = location

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.location))


class ArchiveUnavailable(ArchiveError):
    """The archive cannot be opened: no such file, a database that does not answer (or
    refuses the connection), a URL that cannot be read."""


class SessionNotFound(ArchiveError, LookupError):
    """The archive has no session with this id (``session``)."""

    def __init__(self, message: str, session: str, location: str) -> None:
        super().__init__(message, location)
        self.session = session

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.session, self.location))


class NewerSchema(ArchiveError):
    """The archive was written by a newer toolcall: its schema version ``found`` is beyond
    the ``known`` one of this build. Upgrade the package."""

    def __init__(self, message: str, found: int, known: int, location: str) -> None:
        super().__init__(message, location)
        self.found = found
        self.known = known

    def __reduce__(self) -> Any:
        return (type(self), (str(self), self.found, self.known, self.location))
