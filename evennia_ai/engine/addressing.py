"""Who a line is spoken to, read from its words alone (no game objects: cheap to test).

A line **addresses** a name that starts it or ends it, or stands set off in it, the way
people call someone in speech:

- at the start: the line's first word(s), optionally after a greeting ("Hey Tom, ...", "Good
  evening Tom") or ``@`` ("@Tom ale"): "Tom, hello", "Tom how are you?" (but not a possessive:
  "Tom's ale is flat" speaks of him);
- at the end: "What's the news, Tom?", "Thanks Tom." (closing punctuation, quotes and spaces
  ignored);
- in the middle, set off by a comma before and punctuation after: "Lovely evening, Innkeeper,
  the stew is fine".

"I saw Tom at the mill" and "Tell Tom he's late" only mention him. The words that mean
everyone (:func:`to_everyone`) need the stricter form, a comma or a greeting before and
punctuation or the end after ("Hello all", "Everyone, listen!"), so "I ate it all" calls
nobody. Names are
matched case-insensitively, as whole words, the longest first ("Old Tom" before "Tom"). A run
of names set off together ("Tom, Marta and Bard, hello") addresses each of them, in order.

:func:`vocative` finds the names a line addresses; :func:`to_everyone` applies the same rule to
the words that mean everyone ("Hello all"); :func:`mentioned` finds a name anywhere (for poses:
"Alice waves at Tom."); :func:`is_question` says whether a line asks something.

Example::

    names = {1: ["Tom"], 2: ["Marta", "innkeeper"]}
    vocative("Evening, innkeeper!", names)       # [2]
    vocative("I saw Tom at the mill", names)     # []
    to_everyone("Hello all", ["all"])           # True
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from functools import lru_cache
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

#: Words a line may start with before the name it calls ("Hey Tom", "Good evening, Marta").
GREETINGS = (
    "hey",
    "hi",
    "hello",
    "oi",
    "evening",
    "morning",
    "good evening",
    "good morning",
    "good day",
    "greetings",
    "excuse me",
    "listen",
)

_GREETING = "|".join(re.escape(g).replace(r"\ ", r"\s+") for g in GREETINGS)
# What may stand before a run of names at the line's start: opening quotes, then a greeting.
_OPENING = re.compile(rf"""^[\s"'“‘(]*(?:(?:{_GREETING})\b[\s,!]*)?$""", re.I)
# What may stand between two names of one run: a comma, "and", "&" or "or".
_JOINER = re.compile(r"^\s*(?:,\s*(?:and\s+|or\s+)?|&\s*|and\s+|or\s+)$", re.I)
# What may follow a run: punctuation, or the end (closing quotes, brackets and spaces).
_CLOSING = re.compile(r"""^\s*(?:[,:;!?.…]|[\s"'”’)\]]*$)""")
# The line's end after a run: closing punctuation, quotes, brackets and spaces only.
_END = re.compile(r"""^[\s"'”’)\]]*(?:[.!?…]+[\s"'”’)\]]*)?$""")
# A possessive after a name: "Tom's ale" speaks of Tom.
_POSSESSIVE = re.compile(r"^['’]s\b", re.I)
_QUOTED = re.compile(r'"([^"]*)"|“([^”]*)”')


def _pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern for all ``names``: whole words, any case, the longest first."""
    return _compiled(tuple(names))


@lru_cache(maxsize=256)
def _compiled(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """:func:`_pattern`, remembered: a room's names are the same line after line."""
    unique = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
    if not unique:
        return None
    parts = (re.escape(n).replace(r"\ ", r"\s+") for n in unique)
    return re.compile(rf"(?<![\w@])@?(?:{'|'.join(parts)})(?!\w)", re.I)


def _fold(name: str) -> str:
    return " ".join(name.lower().lstrip("@").split())


def _runs(text: str, pattern: re.Pattern[str]) -> list[list[re.Match[str]]]:
    """The names found in ``text``, grouped in runs (names only joined by commas/"and")."""
    runs: list[list[re.Match[str]]] = []
    for match in pattern.finditer(text):
        if runs and _JOINER.match(text[runs[-1][-1].end() : match.start()]):
            runs[-1].append(match)
        else:
            runs.append([match])
    return runs


def _addresses(text: str, run: list[re.Match[str]], loose: bool) -> bool:
    """Whether a run of names stands as a call of its own (see the module docstring)."""
    if run[0].group(0).startswith("@"):
        return True
    before, after = text[: run[0].start()], text[run[-1].end() :]
    at_start = bool(_OPENING.match(before))
    if (at_start or before.rstrip().endswith(",")) and _CLOSING.match(after):
        return True
    if not loose:
        return False
    if at_start and not _POSSESSIVE.match(after):  # "Tom how are you?", not "Tom's ale"
        return True
    return bool(_END.match(after))  # "Thanks Tom", "Is the forge hot today Smith?"


def called_names(text: str, names: Iterable[str], loose: bool = False) -> list[str]:
    """The names of ``names`` that ``text`` addresses, lower-cased, in the order called (a name
    called twice once).

    Args:
        text: The line.
        names: The names looked for.
        loose: Also a name that starts the line with no punctuation after it, or ends it with
            no comma before it (names of NPCs; not the words for everyone: "I ate it all").
    """
    pattern = _pattern(names)
    if pattern is None or not text:
        return []
    found: list[str] = []
    for run in _runs(text, pattern):
        if _addresses(text, run, loose):
            for match in run:
                name = _fold(match.group(0))
                if name not in found:
                    found.append(name)
    return found


def _index(names_of: Mapping[K, Iterable[str]]) -> dict[str, list[K]]:
    """Each name (folded) -> the candidates it fits, in ``names_of``'s order."""
    index: dict[str, list[K]] = {}
    for key, names in names_of.items():
        for name in names:
            folded = _fold(name or "")
            if folded and key not in index.setdefault(folded, []):
                index[folded].append(key)
    return index


def _groups(found: Iterable[str], index: dict[str, list[K]]) -> list[list[K]]:
    groups: list[list[K]] = []
    seen: set[K] = set()
    for name in found:
        fits = [key for key in index.get(name, ()) if key not in seen]
        if fits:
            seen.update(fits)
            groups.append(fits)
    return groups


def vocative_groups(text: str, names_of: Mapping[K, Iterable[str]]) -> list[list[K]]:
    """The calls in ``text``: for each name it addresses, in order, the candidates that name
    fits (several when it is ambiguous: "Guard," with two guards). A candidate comes once."""
    index = _index(names_of)
    return _groups(called_names(text, index, loose=True), index)


def mentioned_groups(
    text: str, names_of: Mapping[K, Iterable[str]], actor: str = ""
) -> list[list[K]]:
    """As :func:`vocative_groups`, for the names anywhere in ``text`` (see :func:`mentioned`)."""
    if actor and text.lower().startswith(actor.lower()):
        text = text[len(actor) :]
    index = _index(names_of)
    pattern = _pattern(index)
    found = [_fold(m.group(0)) for m in pattern.finditer(text)] if pattern and text else []
    return _groups(found, index)


def vocative(text: str, names_of: Mapping[K, Iterable[str]]) -> list[K]:
    """The candidates ``text`` addresses by name, in the order named (see the module docstring).

    Args:
        text: The line (speech only: no "Alice says").
        names_of: Candidate -> the names it answers to.

    Returns:
        Each candidate addressed, once; an ambiguous name gives every candidate it fits.
    """
    return [key for group in vocative_groups(text, names_of) for key in group]


def to_everyone(text: str, words: Iterable[str]) -> bool:
    """Whether ``text`` calls everyone: one of ``words`` ("all", "everyone") stands where a
    name would ("Hello all", "Everyone, listen!"; not "I ate it all")."""
    return bool(called_names(text, words))


def mentioned(text: str, names_of: Mapping[K, Iterable[str]], actor: str = "") -> list[K]:
    """The candidates named anywhere in ``text`` (a pose: "Alice waves at Tom."), in order.

    Args:
        text: The pose as heard.
        names_of: Candidate -> the names it answers to.
        actor: The name the pose starts with (its actor's), taken off first.
    """
    return [key for group in mentioned_groups(text, names_of, actor) for key in group]


def is_question(text: str, kind: str = "say") -> bool:
    """Whether a line asks something: it has a ``?`` (in a pose, only in its quoted speech)."""
    if kind == "pose":
        return any("?" in (a or b) for a, b in _QUOTED.findall(text or ""))
    return "?" in (text or "")
