"""Shared pieces of the memory commands (:mod:`evennia_ai.commands.memory`)."""

from __future__ import annotations

from typing import Any

from evennia.utils.utils import crop


def short(text: Any, width: int = 70) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    return crop(" ".join(str(text or "").split()), width=width, suffix="\u2026")
