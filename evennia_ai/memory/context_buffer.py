"""The ambient context buffer: recent lines an assistant saw in its room.

Pure: no Django, Evennia or Twisted. Not every message in a room is an event the assistant must
answer, but what it saw lately (someone lighting the fire, a shout from the bar) helps it
answer the next one sensibly. The buffer is a plain list of entries, oldest first, bounded
like a ring::

    [{"text": "Bob lights the fire.", "source": "#15", "ts": "2026-11-02T10:00:00+00:00"}, ...]

Example:
    buffer = add([], "Bob lights the fire.", source="#15", max_size=20)
    render(buffer, limit=10)   # '- (just now) Bob lights the fire.'
"""

from __future__ import annotations

from datetime import datetime, timezone

from evennia_ai.utils import iso_utc

MAX_LINE = 500  # characters kept of one line


def add(
    buffer: list[dict] | None,
    text: str,
    *,
    source: str | None = None,
    ts: str | None = None,
    max_size: int = 20,
) -> list[dict]:
    """Return a new buffer with ``text`` appended and only the newest ``max_size`` entries.

    Blank text is ignored (the buffer is returned unchanged, as a copy).

    Args:
        buffer: The stored buffer (not changed).
        text: The line as the room showed it.
        source: Dbref of who caused it, if known.
        ts: When it was seen (ISO-8601); now when omitted.
        max_size: Most entries kept (at least 1).

    Raises:
        ValueError: If ``max_size`` is below 1.
    """
    max_size = int(max_size)
    if max_size < 1:
        raise ValueError(f"The context buffer must keep at least 1 line, not {max_size}.")
    entries = [dict(e) for e in buffer or [] if isinstance(e, dict)]
    text = " ".join(str(text or "").split())  # one line: room messages may span several
    if text:
        if len(text) > MAX_LINE:
            text = text[: MAX_LINE - 1] + "\u2026"
        entries.append({"text": text, "source": source, "ts": ts or iso_utc(precise=True)})
    return entries[-max_size:]


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
