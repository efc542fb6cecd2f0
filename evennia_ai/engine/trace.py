"""Typed records of what one tick did: stop reasons, iterations, tool calls, tokens, cost.

Pure: plain dataclasses that convert to and from JSON-able dicts, so a bounded ring of them can
live in an Attribute and be shown by the admin commands and the staff dashboard.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any, Iterable

from evennia_ai.llm.usage import UsageRecord
from evennia_ai.utils import iso_utc, truncate


class StopReason(str, Enum):
    """Why a tick's ReAct loop ended."""

    TERMINAL_TOOL = "terminal_tool"  # a TERMINAL tool (or an exit-loop rule) ended it
    TEXT_REPLY = "text_reply"  # the model answered with text and no tool call
    MAX_ITERATIONS = "max_iterations"  # the pattern's iteration limit was reached
    ERROR = "error"  # the model failed after retries, or tool calls kept failing
    BUDGET = "budget"  # the tick's token or cost budget ran out
    CANCELLED = "cancelled"  # the NPC was paused, deleted or moved away mid-tick
    CONTEXT_OVERFLOW = "context_overflow"  # a request did not fit the window: it was not sent
    CONTRACT_VIOLATION = "contract_violation"  # a request lacked what its kind must carry: unsent
    AWAITING_APPROVAL = "awaiting_approval"  # a DANGEROUS call was parked for staff's approval


def _from_dict(cls, data: dict):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in (data or {}).items() if k in names})


@dataclass
class ToolCallTrace:
    """One tool call the model asked for and what came of it.

    Attributes:
        id: The provider's tool-call id.
        name: Tool name as the model gave it.
        arguments: Parsed arguments (empty when they did not parse).
        category: The tool's category, or "" for unknown tools.
        success: Whether the tool ran and succeeded.
        result: The text fed back to the model (truncated for the trace).
        error: Error text when it failed or was refused.
        status: "ran", "refused", "pending" (awaiting confirmation), "skipped" (not run because
            the loop ended first), "error" (raised or failed validation).
        latency: Seconds the tool took.
        stream: For a ``say`` shown while the model wrote it: how many sentences were shown,
            and why the rest was withheld if it was (:mod:`evennia_ai.engine.streaming`).
    """

    id: str
    name: str
    arguments: dict = field(default_factory=dict)
    category: str = ""
    success: bool = False
    result: str = ""
    error: str | None = None
    status: str = "ran"
    latency: float = 0.0
    stream: str = ""

    @classmethod
    def from_dict(cls, data: dict) -> "ToolCallTrace":
        return _from_dict(cls, data)


@dataclass
class IterationTrace:
    """One model call inside the loop.

    Attributes:
        index: 0-based iteration number (calls outside the loop's iterations use -1).
        kind: What the call was for (:data:`~evennia_ai.llm.usage.CALL_KINDS`).
        sections: Token count per prompt section of the request exactly as sent.
        prompt_tokens: Tokens of the whole request as counted locally.
        usage: Token usage as the provider reported it.
        cost: Cost in USD when known.
        latency: Seconds the model call took.
        model: Model that answered.
        text: Text the model returned (truncated).
        tool_calls: Tool calls and their outcomes.
        error: Provider error, if the call failed.
    """

    index: int
    kind: str = "act"
    sections: dict = field(default_factory=dict)
    prompt_tokens: int = 0
    usage: dict = field(default_factory=dict)
    cost: float | None = None
    latency: float = 0.0
    model: str = ""
    text: str | None = None
    tool_calls: list[ToolCallTrace] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def from_dict(cls, data: dict) -> "IterationTrace":
        obj = _from_dict(cls, data)
        obj.tool_calls = [ToolCallTrace.from_dict(tc) for tc in (data or {}).get("tool_calls", [])]
        return obj


@dataclass
class TickTrace:
    """Everything one tick did, for status, traces and the dashboard.

    Attributes:
        tick_id: The NPC's tick counter.
        context_type: Context type of the tick (tick_event, reflection, ...).
        started / ended: ISO-8601 UTC times.
        event_ids: Queue events this tick answered.
        event_text: The rendered pending event (truncated).
        pattern: The ExecutionPattern used, as a dict (with source_layers).
        stop_reason: A StopReason value.
        iterations: Model calls in order.
        prompt_tokens / completion_tokens / cost: Totals over the tick.
        error: Summary of what went wrong, if anything.
        budget: Set when a daily budget was exceeded: what the tick did instead.
        notes: What else happened around the tick (why its events woke the NPC, lines it heard
            without being woken, events dropped as floods, ...).
        tool_groups: The tool groups whose schemas the first request sent (empty: every
            allowed tool); ``request_tools`` calls show the groups added later.
    """

    tick_id: int
    context_type: str = ""
    started: str = field(default_factory=lambda: iso_utc(precise=True))
    ended: str | None = None
    event_ids: list[str] = field(default_factory=list)
    event_text: str = ""
    pattern: dict = field(default_factory=dict)
    stop_reason: str = ""
    iterations: list[IterationTrace] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    duration: float = 0.0
    prefix_cache_share: float | None = None
    shrunk: dict = field(default_factory=dict)
    error: str | None = None
    budget: str | None = None
    notes: list[str] = field(default_factory=list)
    tool_groups: list[str] = field(default_factory=list)

    def add_iteration(self, iteration: IterationTrace) -> None:
        """Append an iteration and add its usage to the tick's totals."""
        self.iterations.append(iteration)
        self.prompt_tokens += int(iteration.usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(iteration.usage.get("completion_tokens") or 0)
        self.cost += float(iteration.cost or 0.0)

    def add_records(self, records: Iterable[UsageRecord]) -> None:
        """Add model calls made outside the tick's own loop (assessment, helpers, memory...).

        Records the loop already put in the trace (``in_trace``) are skipped, so each call is
        in the trace, and in its totals, exactly once.
        """
        for record in records:
            if record.in_trace:
                continue
            self.add_iteration(
                IterationTrace(
                    index=-1,
                    kind=record.kind,
                    usage={
                        "prompt_tokens": record.prompt_tokens,
                        "completion_tokens": record.completion_tokens,
                    },
                    cost=record.cost,
                    latency=record.latency,
                    model=record.model,
                    text=record.text,
                    error=record.error,
                )
            )

    @property
    def tool_calls(self) -> list[ToolCallTrace]:
        """All tool calls of the tick in order."""
        return [tc for it in self.iterations for tc in it.tool_calls]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (what is stored in the NPC's trace ring)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TickTrace":
        obj = _from_dict(cls, data)
        obj.iterations = [IterationTrace.from_dict(it) for it in (data or {}).get("iterations", [])]
        return obj


def bounded_trace(data: dict, limit: int) -> dict:
    """A trace dict made to fit ``limit`` characters of JSON before it is stored.

    Texts are cut in rounds (the model's texts, tool results and errors, then tool-call
    arguments replaced by an excerpt, then the iterations' sections), each round halving what
    it keeps, until the JSON fits or nothing more can be cut. The tick's totals, ids and stop
    reason are never touched.
    """

    def size(value) -> int:
        return len(json.dumps(value, default=str))

    if size(data) <= limit:
        return data
    data = json.loads(json.dumps(data, default=str))  # a private plain copy
    keep = 4000
    while size(data) > limit and keep >= 50:
        data["event_text"] = truncate(data.get("event_text") or "", keep)
        data["error"] = truncate(data["error"], keep) if data.get("error") else data.get("error")
        for it in data.get("iterations") or []:
            if it.get("text"):
                it["text"] = truncate(it["text"], keep)
            if it.get("error"):
                it["error"] = truncate(it["error"], keep)
            if keep < 1000:
                it["sections"] = {k: v for k, v in list((it.get("sections") or {}).items())[:20]}
            for call in it.get("tool_calls") or []:
                call["result"] = truncate(call.get("result") or "", keep)
                if call.get("error"):
                    call["error"] = truncate(call["error"], keep)
                arguments = json.dumps(call.get("arguments") or {}, default=str)
                if len(arguments) > keep:
                    call["arguments"] = {"_excerpt": truncate(arguments, keep)}
        keep //= 2
    return data
