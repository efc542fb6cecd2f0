"""Fit a request into the model's window, shrinking what matters least first.

Pure module. The budget is enforced on the request **exactly as sent**: the caller supplies a
``measure(values) -> tokens`` that assembles the messages from the source values and counts
them together with the tool schemas. While the total exceeds the limit (the context window
minus the reserved response tokens, or the context type's ``token_budget`` if smaller), the
next step of :data:`SHRINK_ORDER` runs:

1. **Optional sections** (:data:`OPTIONAL`): examples, the room's chatter, hints, memories,
   memory blocks. Texts are halved at a line boundary, then dropped.
2. **Raw history**, oldest tick batch first, down to the newest batch. The
   ``[Summary of earlier conversation]`` is kept (the caller schedules a compaction to fold what
   was left out; see ``BudgetResult.history_cut``).
3. **Tool schemas** the context can do without (``drop_tools``, when the caller gives it).
4. **The people present and the goals**, then the summary and the newest batch of history,
   then the character, the tool result, the task or event and the NPC's own system prompt
   (the last two never below :data:`MIN_TEXT` characters, then to their first words).

The operator's section (:data:`NEVER_SHRUNK`: the override file, the operator's prompt, the tool
rules and, when the section carries it, the trust note; see :mod:`evennia_ai.prompt.operator`)
is never touched: when nothing else is left to shrink, the request does not fit and the caller
must not send it.

Steps 1-3 aim ``reserve`` tokens lower than the limit: room for the loop's next request, which
adds the model's tool call and its (cut) result. Step 4 only shrinks to the limit itself, so
the reserve never costs the request its essentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from evennia_ai.memory.compression import SUMMARY_BATCH, SUMMARY_PREFIX

OPTIONAL = (
    "fewshot_examples",
    "context_buffer",
    "procedural_hints",
    "self_model",
    "semantic_memories",
    "archival_hits",
    "memory_blocks",
)
RAW_HISTORY = "conversation_history"  # step 2: raw batches only
TOOLS = "_tools"  # step 3: the caller's drop_tools
ALL_HISTORY = "conversation_history!"  # step 4: the summary and the newest batch too
ESSENTIAL = (
    "entity_context",
    "goals",
    ALL_HISTORY,
    "character_context",
    "behaviour_rules",
    "tool_result",
    "pending_event",
    "system_prompt",
)
# Lowest priority first.
SHRINK_ORDER = OPTIONAL + (RAW_HISTORY, TOOLS) + ESSENTIAL
NEVER_EMPTY = ("system_prompt", "pending_event")
NEVER_SHRUNK = ("operator_override", "operator_prompt", "tool_rules", "trust_note")
MIN_TEXT = 200  # characters a never-empty source keeps at least


@dataclass
class BudgetResult:
    """What fitting did."""

    values: dict[str, Any]
    total: int
    limit: int
    fits: bool
    shrunk: dict[str, str] = field(default_factory=dict)

    @property
    def history_cut(self) -> bool:
        """Whether history had to be left out of the request (a compaction should fold it)."""
        return RAW_HISTORY in self.shrunk


def _halve_text(text: str, floor: int) -> str:
    if len(text) <= floor:
        return text
    cut = max(floor, len(text) // 2)
    head = text[:cut]
    newline = head.rfind("\n")
    if newline > floor // 2:
        head = head[:newline]
    return head.rstrip() + "\n[...]"


def _is_summary(message: Any) -> bool:
    """The summary of earlier conversation (by its batch, or its text once batches are gone)."""
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    return message.get("batch") == SUMMARY_BATCH or (
        isinstance(content, str) and content.startswith(SUMMARY_PREFIX)
    )


def _drop_oldest_batch(history: list[Any], keep_summary: bool) -> list[Any]:
    """Drop the oldest tick batch (messages sharing a 'batch'), the summary kept if asked."""
    head = [m for m in history[:1] if keep_summary and _is_summary(m)]
    rest = history[len(head) :]
    if len(rest) <= 1:
        return history
    first = rest[0].get("batch") if isinstance(rest[0], dict) else None
    if first is None:
        # No batch marks: drop up to the next user message so tool pairs stay together.
        for index in range(1, len(rest)):
            if rest[index].get("role") == "user":
                return head + rest[index:]
        return head + rest[-1:]
    kept = [m for m in rest if m.get("batch") != first]
    return head + kept if kept else history


def _shrink(key: str, value: Any, keep_summary: bool) -> tuple[Any, str]:
    """One shrinking step of one source: (smaller value, how) or (value, "") if it cannot."""
    if isinstance(value, list):
        smaller = _drop_oldest_batch(value, keep_summary)
        if len(smaller) == len(value):
            if key in NEVER_EMPTY or keep_summary:
                return value, ""
            smaller = []
        return smaller, f"{len(smaller)} messages kept"
    if isinstance(value, str):
        floor = MIN_TEXT if key in NEVER_EMPTY else 0
        shorter = (
            _halve_text(value, floor)
            if len(value) > max(floor, 80)
            else ("" if not floor else value)
        )
        if shorter == value:
            if key in NEVER_EMPTY:
                return value, ""
            shorter = ""
        return shorter, "dropped" if not shorter else f"{len(shorter)} chars kept"
    return "", "dropped"


def fit_to_window(
    values: dict[str, Any],
    measure: Callable[[dict[str, Any]], int],
    limit: int,
    order: tuple[str, ...] = SHRINK_ORDER,
    max_rounds: int = 400,
    drop_tools: Callable[[], str | None] | None = None,
    reserve: int = 0,
) -> BudgetResult:
    """Shrink ``values`` until ``measure(values) <= limit`` (see module docstring).

    Args:
        drop_tools: Called once at the tool-schema step; it removes the schemas the request can
            do without (``measure`` must count them no more) and says what it did, or returns
            None when there was nothing to drop.
        reserve: Tokens the optional steps (1-3) keep free below ``limit``.
    """
    values = dict(values)
    shrunk: dict[str, str] = {}
    total = measure(values)
    rounds = 0
    for step in order:
        target = limit if step in ESSENTIAL else limit - max(0, reserve)
        if total <= target:
            continue
        if step == TOOLS:
            done = drop_tools() if drop_tools is not None else None
            if done:
                shrunk["tools"] = done
                total = measure(values)
            continue
        key = RAW_HISTORY if step == ALL_HISTORY else step
        if key in NEVER_SHRUNK:
            continue
        keep_summary = step == RAW_HISTORY
        while total > target and rounds < max_rounds:
            rounds += 1
            value: Any = values.get(key)
            if not value:
                break
            smaller, how = _shrink(key, value, keep_summary)
            if not how:
                break
            values[key] = smaller
            shrunk[key] = how
            total = measure(values)
    # Last resort: cut the never-empty sources to their first words.
    for key in NEVER_EMPTY:
        while (
            total > limit
            and isinstance(values.get(key), str)
            and len(values[key]) > 40
            and rounds < max_rounds
        ):
            rounds += 1
            values[key] = _halve_text(values[key], 20)
            shrunk[key] = f"{len(values[key])} chars kept"
            total = measure(values)
    return BudgetResult(values=values, total=total, limit=limit, fits=total <= limit, shrunk=shrunk)
