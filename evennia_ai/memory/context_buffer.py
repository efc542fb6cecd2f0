"""The ambient context buffer: recent lines an assistant saw in its room.

Pure: no Django, Evennia or Twisted. Not every message in a room is an event the assistant must
answer, but what it saw lately (someone lighting the fire, a shout from the bar) helps it
answer the next one sensibly. The buffer is a plain list of entries, oldest first, bounded
like a ring::

    [{"text": "Bob lights the fire.", "source": "#15", "ts": "2026-11-02T10:00:00+00:00"}, ...]

**Heard speech.** A line spoken in the room that did not wake the NPC (the room's floor gave it
to another: :mod:`evennia_ai.engine.floor`) is an entry with ``"heard": True``. The NPC keeps
it in its conversation history too, once: its next conversation tick writes the heard lines
it saw before the tick's own event (:func:`heard_text`), and a heard line about to be pushed
out of the buffer before then is written there first, with every other one not written yet.
Either way the entries are marked ``"folded": True``, and a request that carries the history
leaves them out of the room's lines (:func:`outside_history`): they are not shown twice.

Example:
    buffer = add([], "Bob lights the fire.", source="#15", max_size=20)
    render(buffer, limit=10)   # '- (just now) Bob lights the fire.'
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache

from evennia_ai.utils import clean_text, iso_utc
from evennia_ai.wording import HEARD_IN_ROOM_HEADING

MAX_LINE = 500  # characters kept of one line
HEARD = "heard"  # an entry's flag: speech the NPC heard without being woken
LINE_JOINER = "\n- "  # between the heard lines of a history message (and after its heading)
FOLDED = "folded"  # an entry's flag: a heard line already written to the conversation history


def entry(
    text: str, *, source: str | None = None, ts: str | None = None, heard: bool = False
) -> dict | None:
    """One buffer entry for ``text`` as the room showed it: on one line, clipped to
    :data:`MAX_LINE` characters; None for blank text.

    Args:
        text: The line.
        source: Dbref of who caused it, if known.
        ts: When it was seen (ISO-8601); now when omitted.
        heard: Speech the NPC heard without being woken (it goes to the history too).
    """
    text = " ".join(str(text or "").split())  # one line: room messages may span several
    if not text:
        return None
    if len(text) > MAX_LINE:
        text = text[: MAX_LINE - 1] + "\u2026"
    item: dict[str, str | bool | None] = {
        "text": text,
        "source": source,
        "ts": ts or iso_utc(precise=True),
    }
    if heard:
        item[HEARD] = True
    return item


def add(
    buffer: list[dict] | None,
    text: str,
    *,
    source: str | None = None,
    ts: str | None = None,
    max_size: int = 20,
    heard: bool = False,
) -> list[dict]:
    """Return a new buffer with ``text`` appended and only the newest ``max_size`` entries.

    Blank text is ignored (the buffer is returned unchanged, as a copy).

    Args:
        buffer: The stored buffer (not changed).
        text: The line as the room showed it.
        source: Dbref of who caused it, if known.
        ts: When it was seen (ISO-8601); now when omitted.
        max_size: Most entries kept (at least 1).
        heard: Speech the NPC heard without being woken (see :func:`entry`).

    Raises:
        ValueError: If ``max_size`` is below 1.
    """
    max_size = int(max_size)
    if max_size < 1:
        raise ValueError(f"The context buffer must keep at least 1 line, not {max_size}.")
    entries = [dict(e) for e in buffer or [] if isinstance(e, dict)]
    item = entry(text, source=source, ts=ts, heard=heard)
    if item is not None:
        entries.append(item)
    return entries[-max_size:]


def unfolded(buffer: list[dict] | None, within: list[dict] | None = None) -> list[dict]:
    """The heard lines of ``buffer`` not yet in the conversation history, oldest first.

    Args:
        buffer: A buffer, or entries that fell out of one.
        within: Only those also in this buffer (what a tick read when it started: the lines
            heard while it ran wait for the next one).
    """
    found = [e for e in buffer or [] if isinstance(e, dict) and e.get(HEARD) and not e.get(FOLDED)]
    if within is None:
        return found
    seen = {_identity(e) for e in within if isinstance(e, dict)}
    return [e for e in found if _identity(e) in seen]


def folded(buffer: list[dict] | None, entries: list[dict]) -> list[dict]:
    """A copy of ``buffer`` with ``entries`` (heard lines) marked as written to the history."""
    done = {_identity(e) for e in entries}
    return [
        {**e, FOLDED: True} if isinstance(e, dict) and _identity(e) in done else e
        for e in buffer or []
    ]


def all_folded(buffer: list[dict]) -> list[dict]:
    """A copy of ``buffer`` with every heard line marked as written to the history (when all
    its lines not written yet just were: :func:`folded` without matching them)."""
    return [
        {**e, FOLDED: True} if type(e) is dict and e.get(HEARD) and not e.get(FOLDED) else e
        for e in buffer
    ]


def outside_history(buffer: list[dict] | None) -> list[dict]:
    """The entries a request carrying the conversation history still needs: all but the heard
    lines already written there."""
    return [e for e in buffer or [] if not (isinstance(e, dict) and e.get(FOLDED))]


def heard_text(entries: list[dict]) -> str:
    """Heard lines as the conversation history keeps them: a heading, then one line each.

    A player wrote them: each is cleaned (:func:`~evennia_ai.utils.clean_text`: no escape or
    control characters, the prompt's elements defused) and kept on one line after ``- ``, so
    none can open a section or an element of a request. "" when there are none.
    """
    lines = [clean_line(e.get("text")) for e in entries if isinstance(e, dict)]
    lines = [line for line in lines if line]
    return LINE_JOINER.join([HEARD_IN_ROOM_HEADING, *lines]) if lines else ""


def clean_line(text) -> str:
    """A heard line cleaned, on one line, as :func:`heard_text` writes it ("" when nothing is
    left; remembered: every NPC of a room hears it alike)."""
    if not isinstance(text, str):
        return " ".join(clean_text(text).split())
    return _clean_text_line(text)


@lru_cache(maxsize=1024)
def _clean_text_line(text: str) -> str:
    """:func:`clean_line` of a text (the cache)."""
    return " ".join(clean_text(text).split())


def _identity(item: dict) -> tuple:
    return (item.get("ts"), item.get("source"), item.get("text"))


def _parse(ts: str | None) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(ts))
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def relative_time(ts: str | None, now: datetime | None = None) -> str:
    """``ts`` relative to ``now``: "just now", "40s ago", "5m ago", "2h ago", "3d ago"."""
    moment = _parse(ts)
    if moment is None:
        return "earlier"
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    seconds = int((now - moment).total_seconds())
    if seconds < 10:
        return "just now"
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    if seconds < 86400:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"


def render(buffer: list[dict] | None, limit: int = 20, now: datetime | None = None) -> str:
    """The newest ``limit`` lines, oldest first, each with how long ago it was seen.

    Returns "" for an empty buffer (the component is then left out).
    """
    entries = [e for e in buffer or [] if isinstance(e, dict) and e.get("text")]
    if limit <= 0 or not entries:
        return ""
    now = now or datetime.now(timezone.utc)
    return "\n".join(
        f"- ({relative_time(e.get('ts'), now)}) {e['text']}" for e in entries[-int(limit) :]
    )
