"""The journal: what the assistant noted, how important it was, how far to trust it (pure).

A plain list of entries, oldest first (kept on the character as ``journal``)::

    {"id": "entry_12", "timestamp": "2025-12-06T14:30:00Z", "content": "Alice owes Bob 5 gold",
     "importance": 7, "source": "told_directly", "source_trust": 0.9, "tags": ["alice", "debt"]}

The model chooses the content, importance (1-10) and tags. The *source*, and so the trust, is
set by the system from how the assistant learned the thing (the tool glue passes it), never
by the model: an NPC cannot promote gossip to fact by saying so.

At most :data:`MAX_ENTRIES` entries are kept; past that the oldest are dropped whatever their
importance (sleep consolidates the journal into long-term memory before that matters, and
dropping by age keeps the journal a faithful recent record). Summed importance since the last
reflection (:func:`importance_since`) triggers an early reflection.

Functions that change the journal take the current list and return ``(new_journal, OpResult)``
without modifying what they were given.
"""

from __future__ import annotations

import copy
import math
import re
from datetime import datetime
from typing import Any

from evennia_ai.utils import iso_utc, parse_iso
from evennia_ai.workspace.results import OpResult, clean_text

# How far to trust an entry, by how the assistant learned it.
TRUST: dict[str, float] = {
    "told_directly": 0.9,  # said or whispered to the assistant by the person concerned
    "observed": 0.8,  # seen happen (matches the event trust of the perception layer)
    "said_in_room": 0.7,  # open speech in the room
    "second_hand": 0.5,  # someone reporting what someone else said or did
    "overheard": 0.3,  # caught in passing, not meant for the assistant
    "inferred": 0.3,  # the assistant's own conclusion or reflection
}
DEFAULT_SOURCE = "inferred"

MAX_ENTRIES = 100
MAX_CONTENT = 2000  # characters of one entry
MAX_TAGS = 10
MAX_TAG = 30  # characters of one tag
MAX_REVIEW = 50  # entries returned by one review

_ID = re.compile(r"^entry_(\d+)$")


def _int_in(value: Any, low: int, high: int, what: str) -> tuple[int | None, str | None]:
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or math.isnan(number):
        return None, f"{what} must be a whole number from {low} to {high} (got {value!r})."
    if number != int(number) or not low <= number <= high:
        return None, f"{what} must be a whole number from {low} to {high} (got {value!r})."
    return int(number), None


def _tags(tags: Any) -> tuple[list[str] | None, str | None]:
    if tags is None:
        return [], None
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        return None, "Tags must be a list of short words (or one comma-separated text)."
    out: list[str] = []
    for tag in tags:
        tag = clean_text(tag).lower().lstrip("#")
        if not tag or tag in out:
            continue
        if len(tag) > MAX_TAG:
            return None, f"Tag {tag[:40]!r} is too long (at most {MAX_TAG} characters)."
        out.append(tag)
    if len(out) > MAX_TAGS:
        return None, f"At most {MAX_TAGS} tags per entry (got {len(out)})."
    return out, None


def _next_id(journal: list[dict]) -> str:
    highest = 0
    for entry in journal:
        match = _ID.match(str(entry.get("id", "")))
        if match:
            highest = max(highest, int(match.group(1)))
    return f"entry_{highest + 1}"


def add_entry(
    journal: list[dict] | None,
    content: Any,
    *,
    importance: Any = 5,
    source: str = DEFAULT_SOURCE,
    tags: Any = None,
    now: datetime | None = None,
) -> tuple[list[dict], OpResult]:
    """Add a journal entry.

    Args:
        journal: The current journal (not modified).
        content: What to note (non-empty, at most :data:`MAX_CONTENT` characters).
        importance: 1 (trivial) to 10 (life-changing).
        source: How the assistant learned it, a key of :data:`TRUST`. Set by the system.
        tags: Short words (a list, or one comma-separated text).
        now: The entry's time (default: the clock).

    Returns:
        ``(new_journal, result)``; ``result.data["entry"]`` is the entry added.

    Raises:
        ValueError: For an unknown ``source`` (a caller error, not the model's).
    """
    if source not in TRUST:
        raise ValueError(f"unknown journal source {source!r}; expected one of {sorted(TRUST)}")
    journal = list(journal or [])
    text = (content if isinstance(content, str) else "").strip()
    if not text:
        return journal, OpResult.fail("The journal entry must be a non-empty text.")
    if len(text) > MAX_CONTENT:
        return journal, OpResult.fail(
            f"The journal entry is too long ({len(text)} characters, at most {MAX_CONTENT})."
        )
    level, error = _int_in(importance, 1, 10, "Importance")
    if error:
        return journal, OpResult.fail(error)
    tag_list, error = _tags(tags)
    if error:
        return journal, OpResult.fail(error)
    new = copy.deepcopy(journal)
    entry = {
        "id": _next_id(new),
        "timestamp": iso_utc(now),
        "content": text,
        "importance": level,
        "source": source,
        "source_trust": TRUST[source],
        "tags": tag_list,
    }
    new.append(entry)
    dropped = max(0, len(new) - MAX_ENTRIES)
    del new[:dropped]
    message = f"Noted {entry['id']} (importance {level})."
    if dropped:
        message += f" The oldest {dropped} entr{'y was' if dropped == 1 else 'ies were'} dropped (at most {MAX_ENTRIES} are kept)."
    return new, OpResult.ok(message, entry=copy.deepcopy(entry), dropped=dropped)


def review_journal(
    journal: list[dict] | None,
    *,
    limit: Any = 10,
    min_importance: Any = None,
    query: Any = None,
    tag: Any = None,
    offset: Any = 0,
) -> OpResult:
    """Find journal entries, newest first.

    Args:
        journal: The journal.
        limit: How many entries to return (1 to :data:`MAX_REVIEW`).
        min_importance: Only entries at least this important (1-10).
        query: Only entries whose content or tags contain every word of it (any case).
        tag: Only entries with this tag.
        offset: How many matching entries to skip first (to read on after a cut result).

    Returns:
        ``data["entries"]`` (copies), ``data["matched"]`` (how many matched before the limit)
        and ``data["text"]`` (the entries rendered by :func:`render_journal`).
    """
    count, error = _int_in(limit, 1, MAX_REVIEW, "Limit")
    if error:
        return OpResult.fail(error)
    floor = None
    if min_importance is not None:
        floor, error = _int_in(min_importance, 1, 10, "Minimum importance")
        if error:
            return OpResult.fail(error)
    skip, error = _int_in(offset or 0, 0, 100000, "Offset")
    if error:
        return OpResult.fail(error)
    if query is not None and not isinstance(query, str):
        return OpResult.fail("The query must be text.")
    if tag is not None and not isinstance(tag, str):
        return OpResult.fail("The tag must be text.")
    words = clean_text(query).lower().split() if query else []
    wanted_tag = clean_text(tag).lower().lstrip("#") if tag else None
    found = []
    for entry in reversed(list(journal or [])):
        value = entry.get("importance")
        level = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
        if floor is not None and level < floor:
            continue
        tags = [str(t).lower() for t in entry.get("tags") or []]
        if wanted_tag and wanted_tag not in tags:
            continue
        haystack = (str(entry.get("content", "")) + " " + " ".join(tags)).lower()
        if any(word not in haystack for word in words):
            continue
        found.append(copy.deepcopy(entry))
    shown = found[skip : skip + count]
    if not shown:
        return OpResult.ok("No journal entries match.", entries=[], matched=len(found), text="")
    plural = "y" if len(found) == 1 else "ies"
    message = f"{len(shown)} of {len(found)} matching journal entr{plural}, newest first"
    message += f", from number {skip + 1}." if skip else "."
    if skip + len(shown) < len(found):
        message += f" Use offset={skip + len(shown)} for the next ones."
    return OpResult.ok(message, entries=shown, matched=len(found), text=render_journal(shown))


def entries_since(journal: list[dict] | None, since_iso: Any) -> list[dict]:
    """Entries written after ``since_iso`` (all of them when it is empty or unreadable).

    Entries whose own timestamp cannot be read are left out when a time is given.
    """
    since = parse_iso(since_iso)
    entries = list(journal or [])
    if since is None:
        return entries
    out = []
    for entry in entries:
        stamp = parse_iso(entry.get("timestamp"))
        if stamp is not None and stamp > since:
            out.append(entry)
    return out


def importance_since(journal: list[dict] | None, since_iso: Any) -> int:
    """Summed importance of the entries written after ``since_iso`` (reflection trigger)."""
    total = 0
    for entry in entries_since(journal, since_iso):
        value = entry.get("importance")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def _trust_label(entry: dict) -> str:
    source = str(entry.get("source") or DEFAULT_SOURCE).replace("_", " ")
    trust = entry.get("source_trust")
    return f"{source}, trust {trust}" if trust is not None else source


def render_journal(entries: list[dict] | None, *, limit: int | None = None) -> str:
    """Entries as text, one per line, in the order given ("" when there are none).

    ``[entry_12 2025-12-06 14:30] (importance 7; told directly, trust 0.9) text #tag``
    """
    lines = []
    for entry in list(entries or [])[: limit if limit else None]:
        stamp = str(entry.get("timestamp") or "")[:16].replace("T", " ")
        tags = " ".join(f"#{t}" for t in entry.get("tags") or [])
        head = " ".join(part for part in (str(entry.get("id") or "?"), stamp) if part)
        line = (
            f"[{head}] (importance {entry.get('importance', '?')}; "
            f"{_trust_label(entry)}) {entry.get('content', '')}"
        )
        lines.append(f"{line} {tags}".rstrip())
    return "\n".join(lines)
