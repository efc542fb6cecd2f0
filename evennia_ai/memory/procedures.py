"""Procedural memory: tool sequences that worked, recalled as hints for similar events (pure).

After a ``tick_event`` whose tools all succeeded, the tick records ``{"event_class", "words",
"tools", "time"}``; :func:`best_procedures` returns the sequences of past events of the same
class sharing the most words with the current one.
"""

from __future__ import annotations

import re

from evennia_ai.wording import PROCEDURES_HEADING

MAX_PROCEDURES = 100
_WORD = re.compile(r"[a-z0-9']{3,}")
_STOP = {"the", "and", "you", "says", "said", "your", "for", "with", "that", "this", "are", "was"}


def words(text: str) -> list[str]:
    return sorted({w for w in _WORD.findall((text or "").lower()) if w not in _STOP})


def record(
    procedures: list | None, event_class: str, text: str, tools: list[str], time: str
) -> list:
    """Add a successful sequence (consecutive duplicates of a tool folded); bounded."""
    sequence = [t for i, t in enumerate(tools) if i == 0 or tools[i - 1] != t]
    if not sequence:
        return list(procedures or [])
    entry = {
        "event_class": event_class,
        "words": [w[:30] for w in words(text)[:40]],  # a pasted blob is not 40 long words
        "tools": [str(t)[:64] for t in sequence[:20]],
        "time": time,
    }
    return (list(procedures or []) + [entry])[-MAX_PROCEDURES:]


def best_procedures(
    procedures: list | None, event_class: str, text: str, limit: int = 3
) -> list[dict]:
    """Up to ``limit`` distinct sequences for the same class, most shared words first."""
    current = set(words(text))
    scored = []
    for index, entry in enumerate(procedures or []):
        if entry.get("event_class") != event_class:
            continue
        overlap = len(current & set(entry.get("words", [])))
        if overlap:
            scored.append((overlap, index, entry))
    out, seen = [], set()
    for _, _, entry in sorted(scored, key=lambda s: (-s[0], -s[1])):
        key = tuple(entry["tools"])
        if key not in seen:
            seen.add(key)
            out.append(entry)
        if len(out) >= limit:
            break
    return out


def render_procedures(entries: list[dict]) -> str:
    if not entries:
        return ""
    lines = [PROCEDURES_HEADING]
    for entry in entries:
        lines.append("• " + " -> ".join(entry["tools"]))
    return "\n".join(lines)
