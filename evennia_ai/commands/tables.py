"""Tables of the AI commands: Evennia's own look, fitted to the caller's client width.

Every table an AI command prints is made by :meth:`evennia_ai.commands.base.AICommand.table`,
which wraps the command's ``styled_table`` (the EvTable style of Evennia's own admin commands,
coloured by the account's options) in a :class:`ClientTable`. When the table is printed its
columns are sized so the whole table fits the client's screen width: narrow columns keep
their natural width, the rest share what is left, and cells too long for their column wrap.
Columns named in ``keep`` (ids, keys a player copies into the next command) never wrap while
the other columns can give way.
"""

from __future__ import annotations

from typing import Any, Iterable

from evennia.utils.ansi import strip_ansi

# What a column adds to its text: a space of padding on each side and the border to its right;
# the first column also draws the table's left border.
COLUMN_OVERHEAD = 3
FIRST_COLUMN_OVERHEAD = 4


def display_width(value: Any) -> int:
    """How many columns ``value`` takes on screen: its longest line, colour markup removed."""
    return max((len(line) for line in strip_ansi(str(value)).split("\n")), default=0)


def fit_widths(natural: list[int], available: int, keep: Iterable[int] = ()) -> list[int]:
    """Text widths for columns of ``natural`` widths that together fit ``available`` columns.

    Columns that fit are left alone. Otherwise the columns in ``keep`` keep their width (when
    that leaves the others at least one column each), and the others share the rest, narrowest
    first: each gets its natural width or an equal share of what is left, whichever is less.

    Args:
        natural: Each column's widest text.
        available: Columns of text the table may use in all (borders and padding excluded).
        keep: Indexes of columns that should not wrap.

    Returns:
        Each column's text width (at least 1).
    """
    if sum(natural) <= available:
        return list(natural)
    widths = list(natural)
    kept = [i for i in set(keep) if 0 <= i < len(natural)]
    shared = [i for i in range(len(natural)) if i not in kept]
    room = available - sum(natural[i] for i in kept)
    if room < len(shared):  # the kept columns leave no room: every column gives way
        shared, room = list(range(len(natural))), available
    for done, index in enumerate(sorted(shared, key=lambda i: natural[i])):
        share = room // (len(shared) - done)
        widths[index] = max(1, min(natural[index], share))
        room -= widths[index]
    return widths


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

    def add_row(self, *cells: Any) -> None:
        """Add a row (one value per column)."""
        self.evtable.add_row(*cells)
        for index, cell in enumerate(cells):
            if index < len(self.natural):
                self.natural[index] = max(self.natural[index], display_width(cell))

    def __str__(self) -> str:
        if self.natural:
            overhead = COLUMN_OVERHEAD * len(self.natural) + 1
            widths = fit_widths(self.natural, self.width - overhead, self.keep)
            for index, text_width in enumerate(widths):
                extra = FIRST_COLUMN_OVERHEAD if index == 0 else COLUMN_OVERHEAD
                self.evtable.reformat_column(index, width=text_width + extra)
        return str(self.evtable)
