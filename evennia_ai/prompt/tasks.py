"""The task message of each context type: its instruction and the inputs the task needs.

A ``tick_event`` tick's task is its event. Every other context type gets a task message
rendered to its contract (:data:`~evennia_ai.llm.contracts.CALL_CONTRACTS`): a
``## Task: <context>`` heading, the instruction, then each input under its own heading. The
context builder places it where the ``pending_event`` component puts the event, or as the
request's last user message when the context has no such component; the client's gate checks
it before the request is sent.

Inputs are sized here, to a share of the model's prompt budget (:data:`TASK_SHARE`), the oldest
lines going first with a note of how many were left out, so fitting the request to the window
never has to cut a task's headings.

Reads the NPC's state on the reactor thread (plain copies, no writes).
"""

from __future__ import annotations

from typing import Any, Protocol

from evennia_ai import conf
from evennia_ai.llm import contracts, tokens
from evennia_ai.memory.compression import plan as compaction_plan
from evennia_ai.memory.history import render_text
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.prompt.snapshot import PromptSnapshot
from evennia_ai.prompt.templates import REFLECTION_METRICS, get_template, safe_render_template
from evennia_ai.utils import fence, iso_utc
from evennia_ai.wording import LEFT_OUT_NOTE, RECENT_ERRORS
from evennia_ai.workspace.journal import entries_since, render_journal

TASK_SHARE = 0.4
"""Share of the model's prompt budget a task's inputs may take together."""


def reflection_baseline(metrics: dict[str, Any], goals: list[dict[str, Any]]) -> dict[str, int]:
    """The counters a reflection measures from (stored with the reflection when it ends)."""
    return {
        "ticks": int(metrics.get("ticks", 0) or 0),
        "tool_calls": int(metrics.get("total_tool_calls", 0) or 0),
        "failed_calls": int(metrics.get("failed_calls", 0) or 0),
        "errors": int(metrics.get("errors", 0) or 0),
        "goals_completed": sum(1 for g in goals or [] if g.get("status") == "completed"),
    }


def reflection_metrics(snapshot: PromptSnapshot, metrics: dict[str, Any]) -> dict[str, Any]:
    """The six figures of the ``reflection`` template, since the last reflection."""
    reflection = snapshot.reflection
    now = reflection_baseline(metrics, snapshot.goals)
    base = reflection.get("baseline") or {}
    since = reflection.get("last_time") or ""

    def delta(key: str) -> int:
        return max(0, now[key] - int(base.get(key, 0) or 0))

    errors = delta("errors")
    last_error = str(metrics.get("last_error") or "").strip()
    return {
        "ticks_since_reflection": delta("ticks"),
        "tool_calls": delta("tool_calls"),
        "tool_failures": delta("failed_calls"),
        "journal_entries": (
            len(entries_since(snapshot.journal, since)) if since else len(snapshot.journal)
        ),
        "goals_completed": delta("goals_completed"),
        "recent_errors": (
            RECENT_ERRORS.format(count=errors, error=last_error[:200])
            if errors and last_error
            else errors
        ),
    }


def _reflection_template() -> str:
    try:
        template = get_prompt_registry().get_template("reflection")
    except Exception:
        template = None
    found = template or get_template("reflection")  # a built-in: never None
    return found.content if found is not None else ""


def fit_lines(text: str, budget_tokens: int, counter: _Counter, what: str = "lines") -> str:
    """``text`` cut from the top (oldest lines first) to ``budget_tokens``, with a note."""
    if not text or counter.count_text(text) <= budget_tokens:
        return text
    lines = text.splitlines()
    low, high = 0, len(lines)
    while low < high:  # the fewest leading lines to drop
        mid = (low + high) // 2
        if counter.count_text("\n".join(lines[mid:])) <= budget_tokens:
            high = mid
        else:
            low = mid + 1
    kept = "\n".join(lines[low:])
    return f"{LEFT_OUT_NOTE.format(count=low, what=what)}\n{kept}".strip()


class _Counter(Protocol):
    def count_text(self, text: str) -> int: ...


class TaskRequest(Protocol):
    """What a task reads of its request (a :class:`~evennia_ai.prompt.builder.ContextBuilder`)."""

    npc: Any
    config: Any
    model: str
    extra: dict[str, Any]

    @property
    def snapshot(self) -> PromptSnapshot: ...

    @property
    def metrics(self) -> dict[str, Any]: ...


class TaskBuilder:
    """Renders the task message of one request (see the module docstring).

    Args:
        builder: The :class:`~evennia_ai.prompt.builder.ContextBuilder` of the request.
    """

    def __init__(self, builder: TaskRequest) -> None:
        self.builder = builder
        self.npc = builder.npc
        self.counter = tokens.TokenCounter(builder.model)
        budget = tokens.request_limit(builder.model, token_budget=builder.config.token_budget)
        self.input_budget = max(200, int(budget * TASK_SHARE))

    @property
    def snapshot(self) -> PromptSnapshot:
        """The NPC's state the request reads (read by the builder only when a task needs it)."""
        return self.builder.snapshot

    def render(self) -> str | None:
        """The task message of the builder's context type, or None (``tick_event``)."""
        kind = self.builder.config.context_type
        method = getattr(self, f"_{kind}", None)
        if method is not None:
            task: str = method()
            return task
        handed: str | None = self.builder.extra.get("pending_event") or None  # a task handed in
        return handed

    def _journal(self, since: str, share: float = 0.5) -> str:
        limit = conf.get_int("EVENNIA_AI_TASK_JOURNAL_ENTRIES")
        entries = (
            entries_since(self.snapshot.journal, since) if since else list(self.snapshot.journal)
        )
        text = render_journal(entries[-limit:] if limit > 0 else entries)
        return fit_lines(text, int(self.input_budget * share), self.counter, "journal entries")

    def _tick_autonomous(self) -> str:
        return contracts.render_task("tick_autonomous", contracts.AUTONOMOUS_INSTRUCTION)

    def _reflection(self) -> str:
        figures = reflection_metrics(self.snapshot, self.builder.metrics)
        instruction = safe_render_template(_reflection_template(), **figures)
        metrics_text = "\n".join(f"- {name}: {figures[name]}" for name in REFLECTION_METRICS)
        since = self.snapshot.reflection.get("last_time") or ""
        return contracts.render_task(
            "reflection",
            instruction,
            {"metrics": metrics_text, "journal": self._journal(since, 0.9)},
        )

    def _reflection_cont(self) -> str:
        return contracts.render_task("reflection_cont", contracts.REFLECTION_CONT_INSTRUCTION)

    def _sleep_consolidate(self) -> str:
        since = self.snapshot.sleep.get("last_consolidated") or ""
        recent = render_text(self.snapshot.history[-40:], assistant_name=self.npc.key)
        return contracts.render_task(
            "sleep_consolidate",
            contracts.SLEEP_INSTRUCTION,
            {
                "journal": self._journal(since, 0.5),
                "history": fit_lines(recent, int(self.input_budget * 0.5), self.counter),
            },
        )

    def _pre_compaction(self) -> str:
        batch = compaction_batch(self.snapshot.history)
        text = render_text(batch, assistant_name=self.npc.key)
        return contracts.render_task(
            "pre_compaction",
            contracts.PRE_COMPACTION_INSTRUCTION,
            {"batch": fit_lines(text, self.input_budget, self.counter)},
        )


def compaction_batch(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history messages the next compaction folds (older than the kept recent ones)."""
    keep = conf.get_int("EVENNIA_AI_COMPACTION_KEEP_RECENT")
    return compaction_plan(list(history or []), keep).old


def reflection_results(text: str) -> str:
    """The ``tool_result`` of a ``reflection_cont`` request: the reflection tools' results."""
    heading = contracts.REFLECTION_RESULTS.heading
    text = (text or "").strip()
    return f"{heading}\n{fence(text, 'tool results') if text else contracts.NOTHING}"


def reflection_done(
    state: dict[str, Any], metrics: dict[str, Any], goals: list[dict[str, Any]], tick: int
) -> dict[str, Any]:
    """The reflection state after a reflection: when, and the counters the next one starts at."""
    state = dict(state)
    state.update(
        last_tick=tick,
        last_time=iso_utc(),
        count=int(state.get("count", 0) or 0) + 1,
        baseline=reflection_baseline(metrics, goals),
    )
    return state
