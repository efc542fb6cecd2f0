"""Typed results of model calls (pure).

Every model call made through :class:`~evennia_ai.llm.client.UnifiedLLMClient`, native tool
calling, the JSON tool protocol or the offline model alike, ends in one :class:`LLMResult`.
Provider problems are values here (``error``/``error_kind``), never exceptions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evennia_ai import conf
from evennia_ai.utils import truncate

#: A JSON object as it crosses the model boundary: a chat message, a tool schema, a tool call's
#: arguments, a provider's response as a plain dict. Its values are whatever JSON holds.
JSONObject = dict[str, Any]

#: Every value ``LLMResult.error_kind`` may take.
ERROR_KINDS = (
    "timeout",
    "rate_limit",
    "server",
    "malformed",
    "auth",
    "bad_request",
    "empty",
    "connection",
    "context_overflow",
    "unknown",
)
#: Longest tool name kept from a model's reply (longer ones are cut: no tool has a longer one).
MAX_TOOL_NAME = 64

#: Kinds worth another attempt at the same model: the next try may well succeed. An empty or
#: malformed answer is usually a proxy or server hiccup, so it is retried like a 5xx.
RETRYABLE_KINDS = frozenset({"timeout", "rate_limit", "server", "malformed", "empty", "connection"})


@dataclass
class ToolCall:
    """A tool call the model asked for.

    Attributes:
        id: Provider tool-call id (generated for the JSON protocol and the offline model).
        name: Tool name as the model wrote it (it may name a tool that was not offered).
        arguments: Parsed arguments; ``{}`` when they did not parse.
        raw_arguments: The argument string as the model wrote it (filled with the JSON of
            ``arguments`` when left empty).
        error: Why the arguments are unusable (not valid JSON, not an object, too long), else
            None. The ReAct loop feeds this back to the model instead of running the tool.

    Whatever the model wrote is bounded here, before anything stores it (history, traces):
    a name of more than :data:`MAX_TOOL_NAME` characters is cut, and arguments of more than
    ``EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS`` characters are refused (kept as a short excerpt).
    """

    id: str
    name: str
    arguments: JSONObject = field(default_factory=dict)
    raw_arguments: str = ""
    error: str | None = None

    def __post_init__(self) -> None:
        self.id = str(self.id or "")[:MAX_TOOL_NAME]
        self.name = str(self.name or "")[:MAX_TOOL_NAME]
        if not self.raw_arguments and self.error is None:
            self.raw_arguments = json.dumps(self.arguments or {})
        size = len(self.raw_arguments or "")
        limit = conf.get_int("EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS")
        if size > limit:
            self.raw_arguments = truncate(self.raw_arguments, 200)
            self.arguments = {}
            self.error = (
                f"the arguments are too long ({size:,} characters; at most {limit:,}); send less"
            )


@dataclass
class LLMUsage:
    """Token counts of one call, as the provider reported them (or estimated offline)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass
class LLMResult:
    """What one model call (with its retries and fallbacks) produced. Never raised.

    Attributes:
        text: Reply text. With tool calls in the JSON protocol, the prose around the JSON
            (the model's "thought"); None when there is none.
        tool_calls: Tool calls in the order the model gave them.
        usage: Token counts of the successful attempt (zeros on error).
        cost: USD cost from ``litellm.completion_cost`` when litellm knows the model, else
            None; 0.0 for the offline model.
        latency: Seconds from the call to its result, retries and backoff included.
        model: The model that answered (a fallback's name when one was used).
        attempts: HTTP attempts made over every model tried.
        error: Why the call failed, in words for people ("connection refused to
            http://127.0.0.1:5100/v1", "timed out after 30 s"; made by
            :mod:`evennia_ai.llm.errors`, never a Python repr); None on success.
        error_kind: One of :data:`ERROR_KINDS` when ``error`` is set (for code: retries,
            fallbacks, outage counting; :func:`evennia_ai.llm.errors.kind_of` reads it back
            from a stored ``error``).
        finish_reason: The provider's finish reason ("stop", "tool_calls", "length", ...).
        fallback_used: True when a model other than the first one answered (or failed last).
        native_tools: False when the JSON tool protocol was used for this call.
        raw: The provider's response as a plain dict (None for errors and offline answers).
    """

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
    raw: JSONObject | None = None

    @property
    def ok(self) -> bool:
        """True when the call produced an answer (text and/or tool calls)."""
        return self.error is None


@dataclass(frozen=True)
class ToolCallDelta:
    """The next piece of one native tool call in a streamed answer.

    Attributes:
        index: Which call of the answer this piece belongs to (0 for the first).
        name: The tool's name, on the first piece of a call (empty on the others).
        arguments: The next fragment of the call's arguments, as JSON text.
    """

    index: int
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True)
class StreamDelta:
    """One piece of a streamed answer, in the order the model wrote it.

    Attributes:
        content: The next fragment of the answer's text (on the JSON tool protocol: of the
            JSON object the model writes).
        tool_calls: The next fragments of native tool calls.
    """

    content: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()


#: What :meth:`UnifiedLLMClient.acomplete` calls with each piece of a streamed answer (on the
#: model-call loop's thread: a sink that touches the game hands the piece to the reactor).
StreamSink = Callable[[StreamDelta], None]
