"""Tables of the AI commands: Evennia's own look, fitted to the caller's client width.

Every table an AI command prints is made by :meth:`evennia_ai.commands.base.AICommand.table`,
which wraps the command's ``styled_table`` (the EvTable style of Evennia's own admin commands,
coloured by the account's options) in a :class:`ClientTable`. When the table is printed its
columns are sized so the whole table fits the client's screen width: narrow columns keep
their natural width, the others wrap between words where the width allows it.
Columns named in ``keep`` (ids, keys a player copies into the next command) never wrap while
the other columns can give way.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from evennia.utils.ansi import strip_ansi

# What a column adds to its text: a space of padding on each side and the border to its right;
# the first column also draws the table's left border.
COLUMN_OVERHEAD = 3
FIRST_COLUMN_OVERHEAD = 4
# A word a cell keeps whole where it can: a run of text up to a space or after a hyphen.
_WORDS = re.compile(r"[^\s-]*-|[^\s-]+")
MAX_WORD = 20  # a longer word may be cut rather than widen its column further
MIN_SHARED = 5  # the other columns must keep this much for kept columns to keep their width


def literal_cell(text: Any) -> str:
    """``text`` (model or player text) for a table cell, where it cannot act as markup.

    A cell's markup is parsed once by EvTable and again when the printed table is sent, and
    Evennia versions differ in how (5 and 6 do not agree on what an escaped ``||`` becomes), so
    no escape survives both. Every ``|`` becomes the look-alike ``¦`` instead: the text reads
    as written and no colour, link or layout code in it runs.
    """
    return str(text).replace("|", "\u00a6")


def display_width(value: Any) -> int:
    """How many columns ``value`` takes on screen: its longest line, colour markup removed."""
    return max((len(line) for line in strip_ansi(str(value)).split("\n")), default=0)


def longest_word(value: Any) -> int:
    """The widest piece of ``value`` a cell can wrap without cutting a word (a word ending
    in a hyphen counts as a piece, as EvTable's wrapping breaks after hyphens)."""
    return max((len(word) for word in _WORDS.findall(strip_ansi(str(value)))), default=0)


def fit_widths(
    natural: list[int],
    available: int,
    keep: Iterable[int] = (),
    words: list[int] | None = None,
) -> list[int]:
    """Text widths for columns of ``natural`` widths that together fit ``available`` columns.

    Columns that fit are left alone. Otherwise, the first of these that fits:

    1. the columns in ``keep`` keep their width, every other column gets at least its longest
       word (``words``), so text wraps between words;
    2. every column gets at least its longest word (kept columns wrap too);
    3. the columns in ``keep`` keep their width if the others still get a few characters
       each, and the others (or all columns) share the rest, cutting words.

    What is left after the minimums goes to the columns that still want more, least wanting
    first, in equal shares.

    Args:
        natural: Each column's widest text.
        available: Columns of text the table may use in all (borders and padding excluded).
        keep: Indexes of columns that should not wrap.
        words: Each column's longest word (default: no words to keep whole).

    Returns:
        Each column's text width (at least 1).
    """
    if sum(natural) <= available:
        return list(natural)
    every = list(range(len(natural)))
    kept = [i for i in set(keep) if 0 <= i < len(natural)]
    floors = [min(n, w) for n, w in zip(natural, words or [1] * len(natural))]
    narrow = [min(n, MIN_SHARED) for n in natural]
    for fixed, minimum in ((kept, floors), ([], floors), (kept, narrow), ([], [1] * len(natural))):
        widths = [natural[i] if i in fixed else minimum[i] for i in every]
        if sum(widths) <= available:
            break
    growing = [i for i in every if i not in fixed]
    _share(widths, natural, growing, max(0, available - sum(widths)))
    return widths


def _share(widths: list[int], natural: list[int], columns: list[int], room: int) -> None:
    """Give ``room`` more columns to ``columns``: each gets an equal share of what is left, up
    to what it still wants (its natural width), the least wanting first."""
    for done, index in enumerate(sorted(columns, key=lambda i: natural[i] - widths[i])):
        extra = min(natural[index] - widths[index], room // (len(columns) - done))
        widths[index] += extra
        room -= extra


class ClientTable:
    """An EvTable whose columns are fitted to a screen width when it is printed.

    Use it as the EvTable it wraps: ``add_row(...)``, then ``str(table)``.

    Args:
        evtable: The EvTable (from ``styled_table``), with its headers.
        headers: The header texts, to measure them.
        width: The screen width the table must fit.
        keep: Indexes of columns that should not wrap (ids, keys).
    """

    def __init__(self, evtable, headers: Iterable[Any], width: int, keep: Iterable[int] = ()):
        self.evtable = evtable
        self.width = width
        self.keep = tuple(keep)
        self.natural = [display_width(header) for header in headers]
        self.words = [min(MAX_WORD, longest_word(header)) for header in headers]

    def add_row(self, *cells: Any) -> None:
        """Add a row (one value per column)."""
        self.evtable.add_row(*cells)
        for index, cell in enumerate(cells):
            if index < len(self.natural):
                self.natural[index] = max(self.natural[index], display_width(cell))
                self.words[index] = max(self.words[index], min(MAX_WORD, longest_word(cell)))

    def __str__(self) -> str:
        if self.natural:
            overhead = COLUMN_OVERHEAD * len(self.natural) + 1
            widths = fit_widths(self.natural, self.width - overhead, self.keep, self.words)
            for index, text_width in enumerate(widths):
                extra = FIRST_COLUMN_OVERHEAD if index == 0 else COLUMN_OVERHEAD
                self.evtable.reformat_column(index, width=text_width + extra)
        return str(self.evtable)
