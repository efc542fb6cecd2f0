"""Session memory: lasting facts, learned patterns and completed tasks (pure logic).

One plain dict per assistant (kept on the character as ``session_memory``)::

    {"key_facts": ["Player Alice prefers formal address", ...],
     "learned_patterns": ["Players tend to explore before asking for help", ...],
     "completed_tasks": [{"description": "...", "timestamp": "2025-12-06T10:00:00Z"}, ...],
     "last_compacted": "2025-12-06T10:00:00Z"}

Lists are kept oldest first and capped (:data:`CAPS`): adding past a cap drops the oldest.

Persona protection: session memory is about the world, the players and events, never about
the assistant, whose identity lives in its persona and prompts. :func:`is_self_referential`
rejects, outside quoted text:

- first-person words: I, I'm, I've, I'll, I'd, me, my, mine, myself, we, us, our, ours,
  ourselves (and their contractions);
- "the assistant", "this assistant", "AI/virtual assistant", "the AI", "language model",
  "as an AI / as an assistant / as a language model / as an LLM";
- any of ``self_names`` (the NPC's own names) as the subject of a sentence ("Innkeeper helped
  Alice", "The innkeeper is tired"); the possessive ("Innkeeper's stew is famous") and the
  name as an object ("Alice thanked the innkeeper") are allowed.

Text inside double quotes (straight or curly) or single quotes used as quotation marks is
ignored, so reported speech such as ``Alice said "I love stew"`` is accepted; if nothing is
left outside the quotes, the whole text is checked. A Roman numeral "I" ("King Henry I") is a
known false positive. The check is a guard against the model storing its own persona as
world knowledge, not a security boundary.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from typing import Any, Iterable

from evennia_ai.utils import iso_utc
from evennia_ai.wording import PERSONA_ERROR, PERSONA_SUGGESTION
from evennia_ai.workspace.results import OpResult, clean_text, normalise

MAX_FACTS = 50
MAX_PATTERNS = 30
MAX_TASKS = 50
MAX_CONTENT = 500  # characters of one entry
RENDERED_TASKS = 5  # completed tasks shown in the prompt (the newest)

CAPS = {"key_facts": MAX_FACTS, "learned_patterns": MAX_PATTERNS, "completed_tasks": MAX_TASKS}

KINDS = {
    "fact": "key_facts",
    "key_fact": "key_facts",
    "key_facts": "key_facts",
    "pattern": "learned_patterns",
    "learned_pattern": "learned_patterns",
    "learned_patterns": "learned_patterns",
    "completed_task": "completed_tasks",
    "completed_tasks": "completed_tasks",
    "task": "completed_tasks",
}


_FIRST_PERSON = frozenset(
    "i i'm i've i'll i'd me my mine myself we we're we've we'll we'd us our ours ourselves".split()
)
_SELF_PHRASES = re.compile(
    r"\b(?:the|this) assistant\b|\b(?:ai|virtual) assistant\b|\bthe ai\b|\blanguage model\b"
    r"|\bas an? (?:ai|assistant|llm|language model|chatbot|bot)\b"
)
# Curly single quotes are turned into straight ones first, so one pattern covers both.
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<!\w)'.*?'(?!\w)")
_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SENTENCES = re.compile(r"(?:[.!?;:]+\s+|\n+)")


def empty_session_memory() -> dict:
    """A new, empty session memory dict."""
    return {"key_facts": [], "learned_patterns": [], "completed_tasks": [], "last_compacted": None}


def _normalised(mem: dict | None) -> dict:
    data = copy.deepcopy(mem) if mem else empty_session_memory()
    for key in CAPS:
        if not isinstance(data.get(key), list):
            data[key] = []
    data.setdefault("last_compacted", None)
    return data


def _starts_with_name(sentence: str, name: str) -> bool:
    for prefix in (name, f"the {name}"):
        if sentence == prefix:
            return True
        if sentence.startswith(prefix):
            rest = sentence[len(prefix) :]
            if rest[:1].isspace() or rest[:1] in (",",):
                return True
    return False


def is_self_referential(content: str, self_names: Iterable[str] = ()) -> bool:
    """Whether ``content`` talks about the assistant itself (see the module doc)."""
    text = clean_text(content).replace("’", "'").replace("‘", "'")
    outside = _QUOTED.sub(" ", text)
    if not _WORDS.search(outside.lower()):
        outside = text
    lowered = outside.lower()
    if any(word in _FIRST_PERSON for word in _WORDS.findall(lowered)):
        return True
    if _SELF_PHRASES.search(lowered):
        return True
    names = [clean_text(n).lower() for n in self_names or () if clean_text(n)]
    if names:
        for sentence in _SENTENCES.split(lowered):
            sentence = sentence.strip(" \t\"'“”‘-*•")
            if any(_starts_with_name(sentence, name) for name in names):
                return True
    return False


def persona_error() -> OpResult:
    """The refusal of a text about the NPC itself rather than the world (``to_dict()`` is what
    the model gets back)."""
    return OpResult.fail(PERSONA_ERROR, suggestion=PERSONA_SUGGESTION)


def _text_of(entry: Any) -> str:
    if isinstance(entry, dict):
        return entry.get("description", "") if isinstance(entry.get("description"), str) else ""
    return entry if isinstance(entry, str) else ""


def add_session_memory(
    mem: dict | None,
    kind: Any,
    content: Any,
    *,
    now: datetime | None = None,
    self_names: Iterable[str] = (),
) -> tuple[dict, OpResult]:
    """Remember a fact, a pattern or a completed task.

    Args:
        mem: The current session memory (not modified).
        kind: "fact", "pattern" or "completed_task".
        content: The text (third person, at most :data:`MAX_CONTENT` characters).
        now: Time of a completed task (default: the clock).
        self_names: The NPC's own names (its key and aliases), for persona protection.

    Returns:
        ``(new_mem, result)``. Self-referential content fails with :func:`persona_error`; a
        duplicate succeeds without being added (``data["duplicate"]`` is True).
    """
    section = KINDS.get(kind.strip().lower()) if isinstance(kind, str) else None
    if section is None:
        return mem or empty_session_memory(), OpResult.fail(
            f"Kind must be 'fact', 'pattern' or 'completed_task' (got {kind!r})."
        )
    text = clean_text(content)
    if not text:
        return mem or empty_session_memory(), OpResult.fail("The content must be a non-empty text.")
    if len(text) > MAX_CONTENT:
        return mem or empty_session_memory(), OpResult.fail(
            f"The content is too long ({len(text)} characters, at most {MAX_CONTENT}); keep one fact per entry."
        )
    if is_self_referential(text, self_names):
        return mem or empty_session_memory(), persona_error()
    data = _normalised(mem)
    entries = data[section]
    key = normalise(text)
    if any(normalise(_text_of(e)) == key for e in entries):
        return data, OpResult.ok(
            "Already remembered; nothing added.", kind=section, duplicate=True, dropped=0
        )
    entries.append(
        {"description": text, "timestamp": iso_utc(now)} if section == "completed_tasks" else text
    )
    dropped = max(0, len(entries) - CAPS[section])
    del entries[:dropped]
    message = f"Remembered in {section.replace('_', ' ')}: {text}"
    if dropped:
        message += f" (the oldest entry was dropped; at most {CAPS[section]} are kept)"
    return data, OpResult.ok(message, kind=section, duplicate=False, dropped=dropped)


def compact_session_memory(
    mem: dict | None, *, now: datetime | None = None
) -> tuple[dict, OpResult]:
    """Drop empty and duplicate entries (the first one is kept) and trim lists to their caps.

    Returns:
        ``(new_mem, result)``; ``result.data["removed"]`` counts what was removed per list and
        ``result.data["removed_total"]`` in all. ``last_compacted`` is set to ``now``.
    """
    data = _normalised(mem)
    removed = {}
    for section, cap in CAPS.items():
        kept, seen = [], set()
        for entry in data[section]:
            key = normalise(_text_of(entry))
            if not key or key in seen:
                continue
            seen.add(key)
            kept.append(entry)
        kept = kept[-cap:]
        removed[section] = len(data[section]) - len(kept)
        data[section] = kept
    data["last_compacted"] = iso_utc(now)
    total = sum(removed.values())
    detail = ", ".join(f"{n} from {s.replace('_', ' ')}" for s, n in removed.items() if n)
    message = f"Compacted session memory: removed {total} entr{'y' if total == 1 else 'ies'}"
    return data, OpResult.ok(
        message + (f" ({detail})." if detail else "."), removed=removed, removed_total=total
    )


def render_session_memory(mem: dict | None) -> str:
    """Session memory for the character context ("" when it is empty)."""
    data = _normalised(mem)
    parts = []
    facts = [_text_of(f) for f in data["key_facts"] if _text_of(f)]
    if facts:
        parts.append("Key facts:\n" + "\n".join(f"- {f}" for f in facts))
    patterns = [_text_of(p) for p in data["learned_patterns"] if _text_of(p)]
    if patterns:
        parts.append("Learned patterns:\n" + "\n".join(f"- {p}" for p in patterns))
    tasks = [t for t in data["completed_tasks"] if _text_of(t)][-RENDERED_TASKS:]
    if tasks:
        lines = []
        for task in reversed(tasks):
            stamp = task.get("timestamp") if isinstance(task, dict) else None
            lines.append(
                f"- {_text_of(task)}"
                + (f" ({stamp[:10]})" if isinstance(stamp, str) and stamp else "")
            )
        parts.append("Recently completed tasks:\n" + "\n".join(lines))
    if not parts:
        return ""
    return "## Session memory\n" + "\n".join(parts)
