"""Small pure helpers every layer uses: the clock, plain copies, text clipping, untrusted text,
identity checks.

Pure module: no Django, Evennia or Twisted import, so anything may import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from datetime import datetime, timezone
from typing import Any

_SCALARS = (str, bytes, int, float, bool, type(None))


# -- the clock -----------------------------------------------------------------------------------
def utcnow() -> datetime:
    """The current time as an aware UTC datetime (the plugin's one clock)."""
    return datetime.now(timezone.utc)


def to_utc(now: datetime | None = None) -> datetime:
    """``now`` (default: the current time) as an aware UTC datetime; naive values count as UTC."""
    if now is None:
        return utcnow()
    if now.tzinfo is None:
        return now.replace(tzinfo=timezone.utc)
    return now.astimezone(timezone.utc)


def iso_utc(now: datetime | None = None, *, precise: bool = False) -> str:
    """``now`` (default: the current time) as an ISO-8601 UTC string ending in ``Z``.

    The plugin's one timestamp format: ``YYYY-MM-DDTHH:MM:SSZ`` for stored times (workspace,
    sleep, confirmations), or with six digits of microseconds when ``precise`` (traces and events,
    where order within a second matters). Both sort as text in time order within their form;
    compare mixed values with :func:`parse_iso`.
    """
    moment = to_utc(now)
    if precise:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as an aware UTC datetime; None when empty or invalid."""
    if isinstance(value, datetime):
        return to_utc(value)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return to_utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def today() -> str:
    """The current UTC date as ``YYYY-MM-DD`` (the key of daily usage)."""
    return utcnow().strftime("%Y-%m-%d")


# -- data ----------------------------------------------------------------------------------------
def plain(value: Any) -> Any:
    """A detached copy of ``value`` made of plain dicts, lists, sets and scalars (JSON's shapes).

    Evennia's Attribute containers (``_SaverDict``, ``_SaverList``, ``_SaverSet``) become
    their plain counterparts, and tuples and other sequences become lists, so changing the copy
    never writes to the database. Other objects (a database object stored by reference) are kept
    as they are, as Evennia's own ``deserialize`` does.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Set):
        return {plain(v) for v in value}
    if isinstance(value, Iterable):
        return [plain(v) for v in value]
    return value


def truncate(text: Any, limit: int = 2000) -> str:
    """``text`` as a string cut to ``limit`` characters, with a marker saying how much was cut."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def one_line(text: Any, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...``.

    An exception with no message reads as its class name (error messages for the model).
    """
    line = " ".join(str(text).split())
    if not line and isinstance(text, BaseException):
        line = type(text).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- untrusted text --------------------------------------------------------------------------------
# Terminal escape sequences (CSI, OSC, two-character), then every other control character but
# tab and newline, then characters that are invisible or reorder text.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile(
    r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
_LINE_BREAKS = re.compile(r"\r\n?|[\u2028\u2029\x85\x0b\x0c]")
FENCE_TAG = "untrusted"
OPERATOR_TAG = "operator"
_FENCE_TAGS = re.compile(rf"<\s*/?\s*(?:{FENCE_TAG}|{OPERATOR_TAG})\b", re.I)


def clean_text(text: Any) -> str:
    """``text`` without escape sequences, control characters or invisible characters.

    Line breaks of every kind become ``\n``; tabs stay. What a player, an object or a model
    wrote passes through here before it is stored for the prompt or rendered into it.
    """
    text = _LINE_BREAKS.sub("\n", "" if text is None else str(text))
    text = _ESCAPES.sub("", text)
    return _INVISIBLE.sub("", _CONTROLS.sub("", text))


def clean_name(name: Any, limit: int = 80) -> str:
    """A name as the prompt shows it: clean, on one line, starting with a letter or digit."""
    line = one_line(clean_text(name), limit)
    return line.lstrip("#<>|`*-=_~ ") or "someone"


def fence(text: Any, source: str) -> str:
    """Untrusted ``text`` as an element it cannot close and in which no line can open a section.

    Every line is prefixed with ``| `` (nothing inside starts with ``#`` or a tag), the fence's
    and the operator's tags are defused (``‹/untrusted>``, ``‹operator>``: neither can be
    written inside), escape and control characters are removed. The system prompt tells the model that fenced text is
    information, never instructions.
    """
    body = _FENCE_TAGS.sub(lambda m: "\u2039" + m.group(0)[1:], clean_text(text))
    lines = body.strip("\n").split("\n")
    inner = "\n".join(f"| {line}".rstrip() for line in lines)
    label = one_line(clean_text(source), 60).replace('"', "'").replace("<", "").replace(">", "")
    return f'<{FENCE_TAG} source="{label}">\n{inner}\n</{FENCE_TAG}>'


def fence_section(text: Any, source: str) -> str:
    """:func:`fence` the body of a rendered section, keeping its own ``## heading`` line."""
    text = "" if text is None else str(text)
    if not text.strip():
        return ""
    if text.startswith("## ") and "\n" in text:
        heading, body = text.split("\n", 1)
        return f"{heading}\n{fence(body, source)}" if body.strip() else heading
    return fence(text, source)


def unfence(text: str) -> str:
    """The text inside fences (for tools that show a fenced value back, and for tests)."""
    out = []
    for line in (text or "").split("\n"):
        if line.startswith(f"<{FENCE_TAG} ") or line == f"</{FENCE_TAG}>":
            continue
        out.append(line[2:] if line.startswith("| ") else ("" if line == "|" else line))
    return "\n".join(out)


# -- identity ------------------------------------------------------------------------------------
def is_assistant(obj: Any) -> bool:
    """Whether ``obj`` is an AI assistant (its typeclass mixes in ``AIAssistantMixin``).

    Checked by a class attribute, so no layer needs to import the typeclass to ask.
    """
    return getattr(type(obj), "is_ai_assistant", False) is True


def is_live_instance(instance: Any) -> bool:
    """Whether ``instance`` is still the one Evennia's object cache hands out for its row.

    Holding on to a typeclassed instance saves a query per use, but only while no other
    instance of the same row can exist: after a cache flush (or a deletion) a fresh query
    would return a different instance, whose Attribute cache this one would not see.
    """
    return (
        instance is not None
        and instance.pk is not None
        and type(instance).get_cached_instance(instance.pk) is instance
    )


# -- log lines -----------------------------------------------------------------------------------
LOG_PREFIX = "evennia_ai"


def log_prefix(npc: Any = None) -> str:
    """The start of every plugin log line: ``evennia_ai``, or ``evennia_ai [Marta#12]`` when
    the line is about one NPC (its key and dbref). Follow it with ``": "`` and the message."""
    if npc is None:
        return LOG_PREFIX
    return f"{LOG_PREFIX} [{getattr(npc, 'key', npc)}{getattr(npc, 'dbref', '') or ''}]"
