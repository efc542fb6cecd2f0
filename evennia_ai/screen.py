"""How text fits a player's screen: long lines wrapped to the client's width, no Markdown.

A telnet client at 80 columns wraps a longer line wherever the width runs out, which garbles
indented lists and ``label: value`` lines. Every reply of the AI commands and every staff
notice goes through :func:`fit_lines` with the width of the session it goes to
(:func:`session_width`): a line that fits is left as it is; a longer one is wrapped between
words, and its continuation lines are indented under the text of the first (a hanging
indent), so they read as part of it::

    budget: within budget; daily limits per NPC: tokens 50,000, cost none;
            server today 0 tokens (limit none), $0.00 (limit none)

Evennia's markup (``|w``, ``||``, links) is kept as written and does not count towards the
width. Tables are fitted by :class:`evennia_ai.commands.tables.ClientTable` before they are
sent, so their lines fit already and are never re-wrapped.

Texts written for the model (:mod:`evennia_ai.wording`, a tool rule's line) may use Markdown,
which a telnet client shows as backticks and asterisks; :func:`plain_words` takes it out where
such a text is shown to a person.
"""

from __future__ import annotations

import re

from django.conf import settings
from evennia.utils.ansi import strip_ansi

# Narrowest width wrapped to: a client reporting less (or nothing sensible) gets the default.
MIN_WIDTH = 20
# A hanging indent is at most this share of the width; past it, continuations indent by 2.
MAX_HANG_SHARE = 0.5
CONTINUATION = 2  # indent of continuation lines under a line without a label

# What a continuation line hangs under: a tag (``[AI] ``), a bullet or number (``- ``,
# ``#3 ``, ``2. ``), or a short label (``model: ``, ``Marta(#9): ``).
_LEAD = re.compile(
    r"(?P<indent> *)(?P<label>\[[^\]\s]{1,12}\] |[-*] |#?\d+[.):]? (?=\S)"
    r"|[^\s:][^:\n]{0,30}?: (?=\S))?"
)
_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_STRONG = re.compile(r"\*\*([^*\n]+)\*\*")
_HEADING = re.compile(r"^#{1,6} +", re.M)


def visible_length(text: str) -> int:
    """How many columns ``text`` (one line) takes on screen, its Evennia markup removed."""
    return len(strip_ansi(text))


def session_width(session) -> int:
    """The screen width ``session``'s client reported, or the game's ``CLIENT_DEFAULT_WIDTH``.

    Evennia's own ``Command.client_width`` reads the same flag.
    """
    default = int(settings.CLIENT_DEFAULT_WIDTH)
    flags = getattr(session, "protocol_flags", None) or {}
    try:
        width = int(flags.get("SCREENWIDTH", {0: default})[0])
    except (TypeError, ValueError, KeyError, IndexError):
        width = default
    return width if width >= MIN_WIDTH else default


def hanging_indent(line: str, width: int, top_level: int = CONTINUATION) -> int:
    """The indent of the continuation lines of ``line`` (plain text) wrapped to ``width``.

    Under the text after a tag, bullet or label when the line is indented or starts with one
    of those (``  model: ...``, ``[AI] ...``, ``- ...``); ``top_level`` (2 by default) for a
    sentence at the start of a line, whose first words are no label. Never more than half
    the width.
    """
    match = _LEAD.match(line)  # always matches: every part of the pattern is optional
    indent = len(match.group("indent")) if match else 0
    label = (match.group("label") if match else "") or ""
    if label.count("(") != label.count(")"):  # ``tool look(target: ...``: inside a call
        label = ""
    if label and (indent or not label[0].isalpha()):
        hang = indent + len(label)
    else:
        hang = indent + (top_level if not indent else CONTINUATION)
    return hang if hang <= width * MAX_HANG_SHARE else indent + CONTINUATION


def wrap_line(line: str, width: int, hang: int | None = None) -> list[str]:
    """``line`` (with markup) as lines of at most ``width`` columns, wrapped between words.

    Args:
        line: One line of text; Evennia markup is kept and not counted.
        width: The columns each resulting line may take.
        hang: Indent of the continuation lines (default: :func:`hanging_indent`).

    Returns:
        ``[line]`` when it fits; else the wrapped lines. A word longer than a line is cut
        when it holds no markup (a long URL, JSON); one with markup is left whole.
    """
    if visible_length(line) <= width:
        return [line]
    plain = strip_ansi(line)
    if hang is None:
        hang = hanging_indent(plain, width)
    hang = min(hang, width // 2)
    indent = len(line) - len(line.lstrip(" "))
    lines: list[str] = []
    current, used, empty = line[:indent], indent, True
    for word in line[indent:].split(" "):
        size = visible_length(word)
        if not empty and used + 1 + size > width:
            lines.append(current.rstrip(" "))
            current, used, empty = " " * hang, hang, True
        elif not empty:
            current, used = current + " ", used + 1
        while size > width - used and word and "|" not in word:  # cut a word without markup
            room = width - used
            lines.append(current + word[:room])
            word, size = word[room:], size - room
            current, used = " " * hang, hang
        current, used, empty = current + word, used + size, False
    lines.append(current.rstrip(" "))
    return [text for text in lines if text.strip()] or [line]


def fit_lines(text: str, width: int) -> str:
    """``text`` with every line wider than ``width`` columns wrapped (:func:`wrap_line`)."""
    if not text:
        return text
    return "\n".join(
        wrapped for line in text.split("\n") for wrapped in wrap_line(line, max(MIN_WIDTH, width))
    )


def plain_words(text: str) -> str:
    """``text`` without Markdown's code, bold and heading marks (``Call `look` twice`` ->
    ``Call look twice``, ``# Rules`` -> ``Rules``), for a text written for the model that a
    person reads."""
    return _HEADING.sub("", _STRONG.sub(r"\1", _CODE.sub(r"\1", str(text))))
