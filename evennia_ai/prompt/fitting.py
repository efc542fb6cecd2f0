"""Fit a request into the model's window, shrinking the lowest-priority sources first.

Pure module. The budget is enforced on the request **exactly as sent**: the caller supplies a
``measure(values) -> tokens`` that assembles the messages from the source values and counts
them together with the tool schemas. While the total exceeds the limit (the context window
minus the reserved response tokens, or the context type's ``token_budget`` if smaller), the
next source in :data:`SHRINK_ORDER` is shrunk: lists (the conversation history) lose their
oldest tick batch at a time, keeping at least the newest one; texts are halved at a line
boundary, then dropped. The system prompt and the pending event are shrunk last and never
dropped entirely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# Lowest priority first.
SHRINK_ORDER = (
    "fewshot_examples",
    "context_buffer",
    "procedural_hints",
    "self_model",
    "semantic_memories",
    "entity_context",
    "archival_hits",
    "memory_blocks",
    "goals",
    "conversation_history",
    "character_context",
    "behaviour_rules",
    "tool_result",
    "pending_event",
    "system_prompt",
)
NEVER_EMPTY = ("system_prompt", "pending_event")
MIN_TEXT = 200  # characters a never-empty source keeps at least


@dataclass
class BudgetResult:
    """What fitting did."""

    values: dict
    total: int
    limit: int
    fits: bool
    shrunk: dict[str, str] = field(default_factory=dict)


def _halve_text(text: str, floor: int) -> str:
    if len(text) <= floor:
        return text
    cut = max(floor, len(text) // 2)
    head = text[:cut]
    newline = head.rfind("\n")
    if newline > floor // 2:
        head = head[:newline]
    return head.rstrip() + "\n[...]"


def _drop_oldest_batch(history: list) -> list:
    """Drop the oldest tick batch (messages sharing the first message's 'batch')."""
    if len(history) <= 1:
        return history
    first = history[0].get("batch") if isinstance(history[0], dict) else None
    if first is None:
        # No batch marks: drop up to the next user message so tool pairs stay together.
        for index in range(1, len(history)):
            if history[index].get("role") == "user":
                return history[index:]
        return history[-1:]
    rest = [m for m in history if m.get("batch") != first]
    return rest if rest else history


def fit_to_window(
    values: dict,
    measure: Callable[[dict], int],
    limit: int,
    order: tuple = SHRINK_ORDER,
    max_rounds: int = 400,
) -> BudgetResult:
    """Shrink ``values`` until ``measure(values) <= limit`` (see module docstring)."""
    values = dict(values)
    shrunk: dict[str, str] = {}
    total = measure(values)
    rounds = 0
    for key in order:
        while total > limit and rounds < max_rounds:
            rounds += 1
            value: Any = values.get(key)
            if not value:
                break
            if isinstance(value, list):
                smaller = _drop_oldest_batch(value)
                if len(smaller) == len(value):
                    if key in NEVER_EMPTY:
                        break
                    smaller = []
                values[key] = smaller
                shrunk[key] = f"{len(smaller)} messages kept"
            elif isinstance(value, str):
                floor = MIN_TEXT if key in NEVER_EMPTY else 0
                smaller = (
                    _halve_text(value, floor)
                    if len(value) > max(floor, 80)
                    else ("" if not floor else value)
                )
                if smaller == value:
                    if key in NEVER_EMPTY:
                        break
                    smaller = ""
                values[key] = smaller
                shrunk[key] = "dropped" if not smaller else f"{len(smaller)} chars kept"
            else:
                values[key] = ""
                shrunk[key] = "dropped"
            total = measure(values)
        if total <= limit:
            break
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
