"""The one atomic trade: the only path by which an NPC's goods and money change hands.

:func:`execute` takes a :class:`TradeOrder` (an NPC sells to or buys from a player character)
and, in order:

1. checks everything that needs no write (:func:`check`): readable, open rules; the slot open
   for trade; the partner a player in the NPC's room; the items found; never-sold items,
   floor and ceiling, the day's limits; both purses;
2. readies the payment and the ledger outside the transaction, and flushes the turn's batched
   writes;
3. in one transaction, with batching off: checks again, moves each item, pays, and records the
   ledger entry;
4. after the commit, tells the partner, the room and the NPC.

Any error inside the transaction rolls it back, the cached objects are repaired
(:mod:`evennia_ai.world.atomic`), and the result is a refusal in words: item, money and ledger
move together or not at all. The model's ``trade`` tool only makes an offer; a trade runs when
the player accepts (by command or a plain "yes"), or when a Builder approves one above the
approval value.

Glue: Evennia's objects and Django's transactions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evennia_ai.npc_state import JSONObject


class TradeAborted(Exception):
    """A trade cannot go on; the message says why, in words ("Alice no longer exists")."""


@dataclass(frozen=True)
class TradeOrder:
    """One trade, as asked for.

    Attributes:
        npc: The NPC (the shop).
        partner: The player character it trades with.
        direction: ``"sell"`` (the NPC sells to the partner) or ``"buy"`` (it buys from them).
        item: What was asked for: a name, a ``#dbref`` or ``proto:KEY``.
        quantity: How many.
        unit_price: The price of one, in whole units of money.
        via: How it came: ``"tool"``, ``"command"``, ``"words"`` (a plain yes) or
            ``"approval"`` (a Builder approved it).
        approval: The confirmation's id, when ``via`` is ``"approval"``.
    """

    npc: Any
    partner: Any
    direction: str
    item: str
    quantity: int
    unit_price: int
    via: str
    approval: str | None = None

    def to_plain(self) -> JSONObject:
        """The order as plain data (dbrefs and values), for a confirmation entry's payload."""
        raise NotImplementedError("issue 36: B1")

    @classmethod
    def from_plain(cls, data: JSONObject, via: str) -> TradeOrder:
        """The order that :meth:`to_plain` gave, now coming ``via``.

        Raises:
            TradeAborted: The NPC or the partner no longer exists ("Alice no longer exists").
        """
        raise NotImplementedError("issue 36: B1")


@dataclass(frozen=True)
class TradeResult:
    """What became of a trade.

    Attributes:
        done: Whether the goods and the money changed hands.
        refused: Empty when done; else why not, as a clause for people ("Bram has only 2
            lanterns").
        pending: The confirmation's id when it waits for a Builder's approval.
        entry: The ledger entry written, when done.
    """

    done: bool
    refused: str
    pending: str | None = None
    entry: JSONObject | None = None

    def to_player(self, viewer: Any) -> str:
        """The result in one line for ``viewer``, a player ("Bram has only 2 lanterns.")."""
        raise NotImplementedError("issue 36: B1")

    def to_model(self) -> str:
        """The result as the NPC's model reads it (a tool's result)."""
        raise NotImplementedError("issue 36: B1")


def check(order: TradeOrder) -> TradeResult | None:
    """The refusal of ``order`` found without writing anything (fast, in words), or None when
    every such check passes."""
    raise NotImplementedError("issue 36: B1")


def execute(order: TradeOrder) -> TradeResult:
    """Run ``order``: check it, ready it, and move the items, the money and the ledger entry in
    one transaction (all or nothing), then tell those concerned. The one path by which goods
    and money change hands; never raises for a refusal."""
    raise NotImplementedError("issue 36: B1")
