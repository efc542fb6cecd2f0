"""Typed results of model calls (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR_KINDS = ("timeout", "rate_limit", "server", "malformed", "auth", "bad_request", "empty",
               "connection", "unknown")
RETRYABLE_KINDS = frozenset({"timeout", "rate_limit", "server", "malformed", "empty", "connection"})


@dataclass
class ToolCall:
    """A tool call the model asked for.

    Attributes:
        id: Provider tool-call id (generated for the JSON protocol).
        name: Tool name as given.
        arguments: Parsed arguments ({} when they did not parse).
        raw_arguments: The argument string as the model wrote it.
        error: Why the arguments did not parse, if they did not.
    """

    id: str
    name: str
    arguments: dict = field(default_factory=dict)
    raw_arguments: str | None = None
    error: str | None = None


@dataclass
class LLMUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass
class LLMResult:
    """What one model call (with its retries and fallbacks) produced. Never raised."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: LLMUsage = field(default_factory=LLMUsage)
    cost: float | None = None
    latency: float = 0.0
    model: str = ""
    attempts: int = 0
    error: str | None = None
    error_kind: str | None = None
    finish_reason: str | None = None
    fallback_used: bool = False
    native_tools: bool = True
    raw: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None
