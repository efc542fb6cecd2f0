"""Small pure helpers every layer uses: the clock, plain copies, text clipping, untrusted text,
text folding, identity checks.

Pure module: no Django, Evennia or Twisted import, so anything may import it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Set
from datetime import datetime, timezone
from typing import Any

from confusable_homoglyphs import utils as homoglyph_data

from evennia_ai.wording import CUT_MARKER

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
    """``text`` as a string cut to about ``limit`` characters, ending with a marker saying how much
    was left out (``... [1,234 characters cut]``).

    The cut falls after the last whole word when one ends in the last fifth of ``limit``
    characters (a word cut in the middle reads as a typo), and a text is never cut when the marker
    would be as long as what it replaces: a question two characters over the limit is kept whole.
    Such a text is at most ``limit`` plus the marker's length; the marker is in
    :data:`evennia_ai.wording.CUT_MARKER` since cut tool results reach the model.
    """
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    kept = text[:limit]
    space = kept.rfind(" ", limit - limit // 5)
    if space > 0 and not text[limit].isspace():
        kept = kept[:space]
    kept = kept.rstrip()
    marker = CUT_MARKER.format(count=f"{len(text) - len(kept):,}")
    if len(marker) >= len(text) - len(kept):
        return text
    return kept + marker


def one_line(text: Any, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...``.

    An exception with no message reads as its class name (error messages for the model).
    """
    line = " ".join(str(text).split())
    if not line and isinstance(text, BaseException):
        line = type(text).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- folding -------------------------------------------------------------------------------------
# What a reader cannot see or tell apart is folded away before text is matched: compatibility
# forms (fullwidth, ligatures, mathematical letters) by NFKC, combining marks and format
# characters (underline, strike-through, zero-width joiners: categories Mn, Me, Cf) by NFD and
# removal, and letters of other scripts that look like Latin ones by the confusables of Unicode's
# TR39 as the ``confusable-homoglyphs`` package ships them (docs/security.md says why that one).
_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
_SMALL_CAPITAL = re.compile(r"LATIN (?:LETTER|SMALL LETTER|CAPITAL LETTER) SMALL CAPITAL ([A-Z])$")
_NAMED_SMALL_CAPITALS_END = 0x20000  # the small capitals are all in the first two planes


def _look_alike_groups() -> dict[str, set[str]]:
    """Single characters -> the set of characters they are confusable with (transitively)."""
    data = homoglyph_data.load("confusables.json")
    links: dict[str, set[str]] = {}
    for char, homoglyphs in data.items():
        for entry in homoglyphs:
            other = str(entry.get("c", "")).replace("\u200e", "")
            if len(char) == 1 and len(other) == 1:
                links.setdefault(char, set()).add(other)
                links.setdefault(other, set()).add(char)
    groups: dict[str, set[str]] = {}
    for start in links:
        if start in groups:
            continue
        group, todo = {start}, [start]
        while todo:
            for other in links[todo.pop()]:
                if other not in group:
                    group.add(other)
                    todo.append(other)
        for char in group:
            groups[char] = group
    return groups


def _ascii_twin(group: set[str]) -> str | None:
    """The ASCII character a group of look-alikes folds to: a lowercase letter, else a capital
    (lowercased), else a digit, else a sign."""
    ascii_chars = [c for c in group if c.isascii() and c.isprintable() and c != " "]
    for kind in (str.islower, str.isupper, str.isdigit, lambda c: True):
        found = sorted(c.lower() for c in ascii_chars if kind(c))
        if found:
            return found[0]
    return None


@functools.cache
def _skeleton_table() -> dict[int, str]:
    """``str.translate`` table: every character with an ASCII look-alike -> that look-alike.

    Built once (about 60 ms with :func:`_tag_patterns`) from the package's data and Unicode's
    character names. A letter whose group has no ASCII member is folded through its other case (small capital ``ᴘ`` ~ Cherokee ``ꮲ``, whose capital ``Ꮲ``
    looks like ``P``). ASCII signs stay as they are (``|`` is not folded into ``l``), ASCII
    letters and digits fold to the group's letter (``0`` -> ``o``, ``1`` -> ``l``), so both
    sides of a comparison read the same.
    """
    groups = _look_alike_groups()
    table: dict[int, str] = {}
    for char, group in groups.items():
        if char.isascii() and not char.isalnum():
            continue
        twin = _ascii_twin(group)
        if twin is None:
            for member in sorted(group):  # sorted: the same table in every process
                for variant in (member.upper(), member.lower()):
                    if len(variant) == 1 and variant in groups and variant != member:
                        twin = twin or _ascii_twin(groups[variant])
        if twin is not None and twin != char:
            table[ord(char)] = twin
    # Small capitals TR39 leaves out (``ɴ``, ``ꜰ``, ``ꞯ``), by their Unicode names.
    for code in range(0x80, _NAMED_SMALL_CAPITALS_END):
        if code not in table:
            named = _SMALL_CAPITAL.match(unicodedata.name(chr(code), ""))
            if named:
                table[code] = named.group(1).lower()
    return table


def _strip_marks(text: str) -> str:
    return "".join(
        c
        for c in unicodedata.normalize("NFD", text)
        if unicodedata.category(c) not in _DROPPED_CATEGORIES
    )


def fold(text: Any) -> str:
    """``text`` as a reader would match it: lowercase, no marks, look-alikes folded to ASCII.

    NFKC (``＜`` -> ``<``, ``ｏ`` -> ``o``), lowercase, NFD with combining and format characters
    removed (``o̲`` -> ``o``, ``p̶`` -> ``p``, zero-width joiners gone), then the confusables
    table (Cyrillic ``о`` and small capital ``ᴏ`` -> ``o``, ``‹`` -> ``<``). For matching only:
    never shown to anyone. A 200-character line takes about 1 microsecond in ASCII, about 30
    in other scripts.
    """
    text = unicodedata.normalize("NFKC", "" if text is None else str(text)).lower()
    if not text.isascii():
        text = _strip_marks(text)
    return text.translate(_skeleton_table())


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
GUIDANCE_TAG = "own_guidance"
PROMPT_TAGS = (FENCE_TAG, OPERATOR_TAG, GUIDANCE_TAG)
"""The elements the plugin's prompts are made of: no one else's text may open or close one."""
_FENCES = (FENCE_TAG, GUIDANCE_TAG)
DEFUSED_BRACKET = "\u00ab"
"""What takes the place of a ``<`` that would open or close a prompt element (``«operator>``):
a guillemet, which is not a look-alike of ``<``, so the result folds to no element either."""
_TAG_LOOKAHEAD = 32  # characters after a "<" folded first (more while they fold to nothing)
_LEADING_SPACE = re.compile(r"[\s/]+")


@functools.cache
def _tag_patterns() -> tuple[re.Pattern, re.Pattern]:
    """(characters that fold to ``<``, what follows one that opens an element once folded).

    The first is every character whose folding is ``<``: the look-alikes of the confusables
    table (``‹``, ``ᐸ``), and the compatibility and composed forms (``＜``, ``﹤``, ``≮``).
    """
    table = _skeleton_table()
    brackets = {"<"} | {chr(code) for code, twin in table.items() if twin == "<"}
    for code in range(0x80, _NAMED_SMALL_CAPITALS_END):
        char = chr(code)
        if unicodedata.decomposition(char) and fold(char) == "<":
            brackets.add(char)
    bracket = re.compile("[" + "".join(re.escape(c) for c in sorted(brackets)) + "]")
    names = "|".join(re.escape(fold(tag)) for tag in PROMPT_TAGS)
    return bracket, re.compile(rf"[\s/]*(?:{names})")


def _opens_element(text: str, start: int, name: re.Pattern) -> bool:
    """Whether ``text`` from ``start`` on, folded, names a prompt element (after a ``<``).

    Folds a few characters, and more while what they fold to could still begin a name: a run
    of combining marks, zero-width characters or spaces of any length cannot hide one.
    """
    size = _TAG_LOOKAHEAD
    while True:
        tail = fold(text[start : start + size])
        if name.match(tail):
            return True
        rest = _LEADING_SPACE.sub("", tail, count=1)
        if start + size >= len(text) or not any(fold(tag).startswith(rest) for tag in PROMPT_TAGS):
            return False
        size *= 4


def defuse_tags(text: Any) -> str:
    """``text`` in which nothing opens or closes one of the plugin's prompt elements.

    A ``<`` (or any character folding to one: ``＜``, ``‹``, ``ᐸ``) followed, once folded
    (:func:`fold`), by an element name of :data:`PROMPT_TAGS` (in any case, width, look-alike
    letters, with marks or format characters in between: ``＜ＯＰＥＲＡＴＯＲ>``, ``<ᴏᴘᴇʀᴀᴛᴏʀ>``,
    ``</u̲ntrusted>``) has that character replaced by :data:`DEFUSED_BRACKET`. Everything else
    is kept as it is. A microsecond for a line without a ``<``-like character.
    """
    text = "" if text is None else str(text)
    bracket, name = _tag_patterns()
    marks = [
        found.start() for found in bracket.finditer(text) if _opens_element(text, found.end(), name)
    ]
    if not marks:
        return text
    chars = list(text)
    for at in marks:
        chars[at] = DEFUSED_BRACKET
    return "".join(chars)


def clean_text(text: Any) -> str:
    """``text`` without escape sequences, control characters or invisible characters, and
    with the plugin's prompt elements defused (:func:`defuse_tags`).

    Line breaks of every kind become ``\n``; tabs stay. What a player, an object or a model
    wrote passes through here before it is stored for the prompt or rendered into it.
    """
    text = _LINE_BREAKS.sub("\n", "" if text is None else str(text))
    text = _ESCAPES.sub("", text)
    return defuse_tags(_INVISIBLE.sub("", _CONTROLS.sub("", text)))


def clean_name(name: Any, limit: int = 80) -> str:
    """A name as the prompt shows it: clean, on one line, starting with a letter or digit."""
    line = one_line(clean_text(name), limit)
    return defuse_tags(line.lstrip("#<>|`*-=_~ ")) or "someone"


def fence(text: Any, source: str, tag: str = FENCE_TAG) -> str:
    """Untrusted ``text`` as an element it cannot close and in which no line can open a section.

    Every line is prefixed with ``| `` (nothing inside starts with ``#`` or a tag), the
    plugin's elements are defused in any case, width or look-alike letters (``«/untrusted>``,
    ``«operator>``: :func:`defuse_tags`), escape and control characters are removed. The
    system prompt tells the model that fenced text is information, never instructions.

    Args:
        text: What to fence.
        source: Who or what it comes from (the element's ``source``).
        tag: The element: :data:`FENCE_TAG`, or :data:`GUIDANCE_TAG` for the NPC's own standing
            guidance (:func:`guidance`).
    """
    body = clean_text(text)
    lines = body.strip("\n").split("\n")
    inner = "\n".join(f"| {line}".rstrip() for line in lines)
    label = one_line(clean_text(source), 60).replace('"', "'").replace("<", "").replace(">", "")
    return f'<{tag} source="{label}">\n{inner}\n</{tag}>'


def fence_section(text: Any, source: str, tag: str = FENCE_TAG) -> str:
    """:func:`fence` the body of a rendered section, keeping its own ``## heading`` line."""
    text = "" if text is None else str(text)
    if not text.strip():
        return ""
    if text.startswith("## ") and "\n" in text:
        heading, body = text.split("\n", 1)
        return f"{heading}\n{fence(body, source, tag)}" if body.strip() else heading
    return fence(text, source, tag)


def guidance(text: Any, source: str) -> str:
    """The NPC's own standing guidance (its guidelines, the rules it learned), fenced as its own.

    Fenced exactly as :func:`fence` does (nothing inside can close it or open a section), in a
    :data:`GUIDANCE_TAG` element, which no player's, object's or model's text can open: every
    such text is defused (:func:`clean_text`). The system prompt tells the model to follow it
    below the operator's word.
    """
    return fence_section(text, source, GUIDANCE_TAG)


def unfence(text: str) -> str:
    """The text inside fences (for tools that show a fenced value back, and for tests)."""
    out = []
    for line in (text or "").split("\n"):
        if any(line.startswith(f"<{tag} ") or line == f"</{tag}>" for tag in _FENCES):
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
