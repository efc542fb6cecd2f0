"""What model calls cost: one record per call, and the accountant that adds them up (pure).

Every model call the plugin makes, whatever makes it (a tick's loop, the task assessment, goal
decomposition, a ``delegate_task`` helper, history summarisation, sleep consolidation, mem0's
fact extraction), turns its :class:`~evennia_ai.llm.types.LLMResult` into one
:class:`UsageRecord` and hands it to the :class:`UsageAccountant` of the work it belongs to
(a tick's, passed down through the tool context and the memory calls). The tick moves the
records into its trace; the trace's totals feed the NPC's metrics and the daily budgets, so
nothing is counted twice and nothing is missed.

Calls may finish in worker threads: the accountant is thread-safe, and a record that arrives
after its tick has ended goes to the ``late`` callback given to :meth:`UsageAccountant.close`.

Example:
    usage = UsageAccountant()
    result = client.complete_sync(messages)
    usage.record(UsageRecord.of(result, "summarise"))
    usage.tokens  # prompt + completion tokens so far
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Callable

#: The kinds of model call, as traces and metrics name them.
CALL_KINDS = (
    "act",
    "plan",
    "assessment",
    "decompose_goal",
    "delegate",
    "summarise",
    "memory_extraction",
)


@dataclass(frozen=True)
class UsageRecord:
    """Tokens, cost and outcome of one model call.

    Attributes:
        kind: What the call was for (one of :data:`CALL_KINDS`).
        model: The model that answered (or failed).
        prompt_tokens / completion_tokens: As the provider reported them (estimated offline).
        cost: USD, 0.0 when unknown.
        latency: Seconds the call took, retries included.
        error: Why the call failed, else None.
        error_kind: What kind of failure it was (an ``LLMResult.error_kind``: ``connection``,
            ``timeout``, ``bad_request``...), else None.
        text: The answer's text, cut to 1,000 characters (for traces).
        in_trace: The caller shows this call in the trace itself (the tick's own loop does,
            with its prompt sections); others are added to the trace from the record.
    """

    kind: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency: float = 0.0
    error: str | None = None
    text: str | None = None
    in_trace: bool = False
    error_kind: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def of(cls, result: object, kind: str, *, in_trace: bool = False) -> "UsageRecord":
        """The record of an :class:`~evennia_ai.llm.types.LLMResult` (or anything shaped so:
        a figure it lacks counts as 0)."""
        usage = getattr(result, "usage", None)
        text = getattr(result, "text", None)
        return cls(
            kind=kind,
            model=str(getattr(result, "model", "") or ""),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=float(getattr(result, "cost", 0.0) or 0.0),
            latency=float(getattr(result, "latency", 0.0) or 0.0),
            error=getattr(result, "error", None),
            text=text[:1000] if isinstance(text, str) else None,
            in_trace=in_trace,
            error_kind=getattr(result, "error_kind", None),
        )

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class UsageAccountant:
    """Adds up the model calls of one piece of work (a tick); safe to feed from any thread.

    Args:
        parent: An accountant every record is also handed to (a helper's own accountant, whose
            totals cap the helper, forwards to its tick's).
    """

    def __init__(self, parent: "UsageAccountant | None" = None) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self._records: list[UsageRecord] = []
        self._taken = 0
        self._late: Callable[[UsageRecord], None] | None = None
        self._closed = False
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens of every call so far."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def records(self) -> list[UsageRecord]:
        """Every record so far, in the order they arrived."""
        with self._lock:
            return list(self._records)

    def record(self, record: UsageRecord) -> None:
        """Count one call (after :meth:`close`: hand it to the ``late`` callback)."""
        with self._lock:
            late = self._late if self._closed else None
            if not self._closed:
                self._records.append(record)
                self.prompt_tokens += record.prompt_tokens
                self.completion_tokens += record.completion_tokens
                self.cost += record.cost
        if late is not None:
            late(record)
        if self.parent is not None:
            self.parent.record(record)

    def record_result(self, result: object, kind: str, *, in_trace: bool = False) -> UsageRecord:
        """Count the call that produced ``result``; returns its record."""
        record = UsageRecord.of(result, kind, in_trace=in_trace)
        self.record(record)
        return record

    def take_new(self) -> list[UsageRecord]:
        """The records that arrived since the last call (each is returned once)."""
        with self._lock:
            new = self._records[self._taken :]
            self._taken = len(self._records)
            return new

    def close(self, late: Callable[[UsageRecord], None]) -> None:
        """End the work: records that still arrive go to ``late`` (never dropped)."""
        with self._lock:
            self._closed = True
            self._late = late
