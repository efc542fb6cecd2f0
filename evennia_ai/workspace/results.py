"""Results and text helpers shared by the workspace modules.

Every workspace function that the model can drive returns an :class:`OpResult` next to the new
data instead of raising: a tool hands ``result.to_dict()`` (or its message) back to the model,
which can then correct itself. Exceptions are kept for programming errors of the caller (a
negative tick, an unknown journal source), never for what the model sent.

Timestamps are ISO-8601 UTC strings with second precision and a ``Z`` suffix
(``2025-12-06T10:00:00Z``, :func:`evennia_ai.utils.iso_utc`), as every stored time is;
:func:`evennia_ai.utils.parse_iso` also reads the ``+00:00`` form with microseconds, so always
compare timestamps through it rather than as strings.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class OpResult:
    """The outcome of one workspace operation.

    Attributes:
        success: Whether the operation did what was asked.
        message: What happened, or on failure what went wrong (readable by the model).
        data: Structured details (the goal added, the entries found, counts removed, ...).
        suggestion: On failure, how to rephrase or what to do instead.
    """

    success: bool
    message: str
    data: dict = field(default_factory=dict)
    suggestion: str | None = None

    @classmethod
    def ok(cls, message: str, **data: Any) -> "OpResult":
        return cls(True, message, dict(data))

    @classmethod
    def fail(cls, message: str, suggestion: str | None = None, **data: Any) -> "OpResult":
        return cls(False, message, dict(data), suggestion)

    @property
    def error(self) -> str | None:
        """The failure message (None on success)."""
        return None if self.success else self.message

    def to_dict(self) -> dict:
        """JSON-able form for a tool result.

        Success: ``{"success": True, "message": ..., **data}``. Failure: ``{"success": False,
        "error": ..., "suggestion": ...?, **data}`` (the suggestion only when there is one).
        """
        if self.success:
            return {"success": True, "message": self.message, **self.data}
        out: dict[str, Any] = {"success": False, "error": self.message}
        if self.suggestion:
            out["suggestion"] = self.suggestion
        out.update(self.data)
        return out


_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}“”‘’«»…—–]")
_SPACES = re.compile(r"\s+")


def clean_text(value: Any) -> str:
    """Strip a text and collapse its runs of whitespace (non-strings give "")."""
    if not isinstance(value, str):
        return ""
    return _SPACES.sub(" ", value).strip()


def normalise(value: Any) -> str:
    """The comparison form of a text: lowercase, punctuation removed, whitespace collapsed."""
    text = _PUNCTUATION.sub(" ", clean_text(value).casefold())
    return _SPACES.sub(" ", text).strip()
