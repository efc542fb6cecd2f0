"""The game's money, through one adapter: how much a character holds, and paying.

``EVENNIA_AI_MONEY`` chooses the adapter:

- ``attribute`` (the default): an int Attribute on each character, ``EVENNIA_AI_MONEY_ATTRIBUTE``
  (``coins``) of category ``EVENNIA_AI_MONEY_CATEGORY`` (none), as evadventure keeps its coins;
- ``objects``: coin piles, objects tagged ``EVENNIA_AI_MONEY_TAG`` (category
  ``evennia_ai_money``), each worth its Attribute ``amount``;
- the python path of a game's own class with the methods of :class:`Money`.

An adapter writes only through the ORM, inside the trade's transaction, adds everything it
changes to the :class:`~evennia_ai.world.atomic.Touched` it is given, and refuses with
:class:`MoneyError`. A purse that cannot be read is an error, never an empty or a full purse.

Glue: Evennia's Attributes, Tags and objects.
"""

from __future__ import annotations

from typing import Any, Protocol

from evennia_ai.world.atomic import Touched


class MoneyError(Exception):
    """A purse cannot be read or cannot pay; the message says why, in words ("Alice's purse
    could not be read: coins is 'lots', not a whole number")."""


class Money(Protocol):
    """How the game keeps money (the adapter ``EVENNIA_AI_MONEY`` names)."""

    def balance(self, holder: Any) -> int:
        """The money ``holder`` has, in whole units.

        Raises:
            MoneyError: The purse cannot be read.
        """

    def prepare(self, payer: Any, payee: Any, amount: int) -> None:
        """Ready a payment of ``amount``, outside the trade's transaction (create missing
        purses, split a coin pile so that whole piles add up to ``amount``); changes no one's
        total.

        Raises:
            MoneyError: It cannot be readied.
        """

    def pay(self, payer: Any, payee: Any, amount: int, touched: Touched) -> None:
        """Move ``amount`` from ``payer`` to ``payee``, inside the trade's transaction: ORM
        writes only, each object and Attribute it changes added to ``touched``.

        Raises:
            MoneyError: The payer cannot pay; the transaction rolls back.
        """

    def describe(self, amount: int) -> str:
        """``amount`` in words, as the game names its money ("12 coins", "1 coin")."""


def money() -> Money:
    """The adapter ``EVENNIA_AI_MONEY`` names (read at call time)."""
    raise NotImplementedError("issue 36: B1")
