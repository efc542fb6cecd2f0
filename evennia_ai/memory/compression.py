"""Conversation-history compression (pure): when, what, and how.

History is a list of message dicts tagged with ``batch`` (the tick id). A batch is one tick's
messages and is compressed whole; the active batch (the tick running now) never is.

When: :func:`compaction_reason` — at ``EVENNIA_AI_COMPACTION_SLEEP_RATIO`` (70 %) of the history
budget while asleep, at ``EVENNIA_AI_COMPACTION_EMERGENCY_RATIO`` (80 %) at any time, and never on
the tick right after a compaction. The last ``EVENNIA_AI_COMPACTION_KEEP_RECENT`` (20) messages
are always kept verbatim.

How (two strategies, ``EVENNIA_AI_COMPACTION_STRATEGY``):

- **Truncate** (``keep_recent``): the oldest whole batches are dropped.
- **RecursiveSummarization** (``chunk_size``, summarisation model): the old batches' transcript is
  cut into chunks that fit the summariser's window, each chunk summarised, and the summaries
  summarised again until one remains; the result replaces the old batches as one
  ``[Summary of earlier conversation]`` message (batch ``"summary"``), merged with an earlier
  summary if there is one. The summariser is a callable (the glue runs it in a thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from evennia_ai.wording import SUMMARY_PREFIX

SUMMARY_BATCH = "summary"


@dataclass
class CompactionPlan:
    """Which messages go and which stay."""

    old: list[dict] = field(default_factory=list)
    kept: list[dict] = field(default_factory=list)
    previous_summary: str = ""


def compaction_reason(
    history_tokens: int,
    history_budget: int,
    *,
    asleep: bool,
    tick: int,
    last_compaction_tick: int | None,
    sleep_ratio: float = 0.7,
    emergency_ratio: float = 0.8,
) -> str | None:
    """ "sleep", "emergency" or None."""
    if history_budget <= 0:
        return None
    if last_compaction_tick is not None and tick - last_compaction_tick <= 1:
        return None
    ratio = history_tokens / history_budget
    if ratio >= emergency_ratio:
        return "emergency"
    if asleep and ratio >= sleep_ratio:
        return "sleep"
    return None


def _batches(history: list[dict]) -> list[tuple[object, list[dict]]]:
    groups: list[tuple[object, list[dict]]] = []
    for message in history or []:
        key = message.get("batch")
        if groups and groups[-1][0] == key:
            groups[-1][1].append(message)
        else:
            groups.append((key, [message]))
    return groups


def plan(history: list[dict], keep_recent: int = 20, active_batch=None) -> CompactionPlan:
    """Split history into whole old batches to compress and the recent ones to keep."""
    groups = _batches(history)
    previous = ""
    if groups and groups[0][0] == SUMMARY_BATCH:
        previous = (
            "\n".join(m.get("content") or "" for m in groups[0][1])
            .replace(SUMMARY_PREFIX, "")
            .strip()
        )
        groups = groups[1:]
    kept: list[list[dict]] = []
    count = 0
    for key, messages in reversed(groups):
        if key == active_batch or count < keep_recent:
            kept.insert(0, messages)
            count += len(messages)
        else:
            break
    old_groups = groups[: len(groups) - len(kept)]
    return CompactionPlan(
        old=[m for _, ms in old_groups for m in ms],
        kept=[m for ms in kept for m in ms],
        previous_summary=previous,
    )


def truncate(
    history: list[dict], keep_recent: int = 20, active_batch=None
) -> tuple[list[dict], int]:
    """Drop the oldest whole batches beyond ``keep_recent`` messages. Returns (history, dropped)."""
    p = plan(history, keep_recent, active_batch)
    head = [m for m in history if m.get("batch") == SUMMARY_BATCH]
    return head + p.kept, len(p.old)


def transcript(messages: list[dict]) -> str:
    """Plain text of messages for a summariser."""
    lines = []
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = ", ".join(
                f"{c['function']['name']}({c['function'].get('arguments', '')})"
                for c in m["tool_calls"]
            )
            lines.append(f"You (actions): {calls}")
            if m.get("content"):
                lines.append(f"You: {m['content']}")
        elif role == "tool":
            lines.append(f"(result) {str(m.get('content') or '')[:300]}")
        elif m.get("content"):
            lines.append(f"{'You' if role == 'assistant' else 'Event'}: {m['content']}")
    return "\n".join(lines)


def chunk_text(text: str, chunk_chars: int) -> list[str]:
    """Cut ``text`` at line boundaries into chunks of at most ``chunk_chars`` characters."""
    chunks, current = [], ""
    for line in text.splitlines():
        while len(line) > chunk_chars:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(line[:chunk_chars])
            line = line[chunk_chars:]
        if len(current) + len(line) + 1 > chunk_chars and current:
            chunks.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        chunks.append(current)
    return chunks


def summary_problem(summary: str, text: str) -> str | None:
    """Why ``summary`` cannot replace ``text`` in history, or None when it can.

    Empty, or longer than what it summarises (past a few hundred characters: a short chunk's
    summary may run a little longer), or a reply that opens a prompt section (``## ...``) or
    carries a task heading is not a summary.
    """
    summary = (summary or "").strip()
    if not summary:
        return "the model returned an empty summary"
    if len(summary) > max(400, len(text)):
        return f"the summary ({len(summary)} characters) is longer than the log ({len(text)})"
    if any(line.lstrip().startswith("## ") for line in summary.splitlines()):
        return "the summary opens a prompt section (a line starting with '## ')"
    return None


def recursive_summary(
    text: str, summarize: Callable[[str], str], chunk_chars: int, max_rounds: int = 5
) -> str:
    """Summarise chunks, then the summaries, until one text fits a chunk (blocking)."""
    for _ in range(max_rounds):
        chunks = chunk_text(text, chunk_chars)
        if len(chunks) <= 1:
            return summarize(text) if text else ""
        text = "\n".join(summarize(chunk) for chunk in chunks)
    return text[:chunk_chars]


def summarized_history(
    history: list[dict],
    summarize: Callable[[str], str],
    *,
    keep_recent: int = 20,
    active_batch=None,
    chunk_chars: int = 12000,
) -> tuple[list[dict], int]:
    """RecursiveSummarization: old batches become one summary message. Returns (history, n)."""
    p = plan(history, keep_recent, active_batch)
    if not p.old:
        return list(history), 0
    text = transcript(p.old)
    if p.previous_summary:
        text = f"Earlier summary: {p.previous_summary}\n{text}"
    summary = recursive_summary(text, summarize, chunk_chars).strip()
    head = {"role": "user", "content": f"{SUMMARY_PREFIX}\n{summary}", "batch": SUMMARY_BATCH}
    return [head] + p.kept, len(p.old)
