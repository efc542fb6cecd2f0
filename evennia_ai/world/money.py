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

from django.db import transaction
from evennia.utils import create
from evennia.utils.utils import class_from_module

from evennia_ai import conf
from evennia_ai.world.atomic import Touched
from evennia_ai.world.goods import coins
from evennia_ai.world.stock import MONEY_TAG_CATEGORY

#: Payer id -> (amount, ids of the coin piles :meth:`ObjectMoney.prepare` chose to pay it):
#: the trade's ``pay`` moves exactly those (process memory: a prepared payment is paid in the
#: same reactor turn).
_READIED: dict[int, tuple[int, tuple[int, ...]]] = {}


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


def _setting(name: str) -> Any:
    """The value of the money setting ``name``; MoneyError when it cannot be read (no trade
    on a guess about how the game keeps its money)."""
    value, source = conf.lookup(name)
    if source == conf.FROM_DEFAULT_INSTEAD:
        raise MoneyError(f"the setting {name} cannot be read, so no money changes hands")
    return value


def _whole_amount(holder: Any, what: str, value: Any) -> int:
    """``value`` as a whole amount of money >= 0, or MoneyError naming ``holder`` and
    ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MoneyError(
            f"{holder.key}'s purse could not be read: {what} is {value!r}, not a whole number"
        )
    return value


def _checked_amount(amount: Any) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise MoneyError(f"{amount!r} is not an amount of money")
    return amount


class AttributeMoney:
    """Money as an int Attribute on each character (``EVENNIA_AI_MONEY = "attribute"``), as
    evadventure keeps its coins (``coins = AttributeProperty(default=0)``).

    Args:
        key: The Attribute (default: ``EVENNIA_AI_MONEY_ATTRIBUTE``).
        category: Its category (default: ``EVENNIA_AI_MONEY_CATEGORY``).
    """

    def __init__(self, key: str | None = None, category: str | None = None) -> None:
        self.key = key or _setting("EVENNIA_AI_MONEY_ATTRIBUTE")
        self.category = category if key else _setting("EVENNIA_AI_MONEY_CATEGORY")

    def balance(self, holder: Any) -> int:
        """The money ``holder`` has (0 without the Attribute).

        Raises:
            MoneyError: The Attribute holds anything but a whole number >= 0.
        """
        value = holder.attributes.get(self.key, default=0, category=self.category)
        return _whole_amount(holder, self.key, value)

    def prepare(self, payer: Any, payee: Any, amount: int) -> None:
        """Create the Attributes that do not exist yet, at 0, outside the trade's transaction
        (a rollback then never leaves an Attribute created inside it in a handler's cache)."""
        for holder in (payer, payee):
            self.balance(holder)
            if not holder.attributes.has(self.key, category=self.category):
                holder.attributes.add(self.key, 0, category=self.category)

    def pay(self, payer: Any, payee: Any, amount: int, touched: Touched) -> None:
        """Lower ``payer``'s Attribute by ``amount`` and raise ``payee``'s (two UPDATEs).

        Raises:
            MoneyError: The payer has too little, or a purse cannot be read or is not ready.
        """
        amount = _checked_amount(amount)
        have, has = self.balance(payer), self.balance(payee)
        if have < amount:
            raise MoneyError(f"{payer.key} has only {self.describe(have)}")
        for holder, value in ((payer, have - amount), (payee, has + amount)):
            attr = holder.attributes.get(
                self.key, category=self.category, return_obj=True, default=None
            )
            if attr is None:
                raise MoneyError(f"{holder.key}'s purse was not readied for the payment")
            touched.attributes.append(attr)
            attr.value = value  # Evennia's setter: one UPDATE, in the transaction

    def describe(self, amount: int) -> str:
        """``amount`` in the money's words ("12 coins")."""
        return coins(amount)


class ObjectMoney:
    """Money as coin piles (``EVENNIA_AI_MONEY = "objects"``): objects the character carries,
    tagged ``EVENNIA_AI_MONEY_TAG`` (category ``evennia_ai_money``), each worth its Attribute
    ``amount`` (a whole number >= 1). A payment moves whole piles; a pile is split first when
    no set of whole piles adds up to the amount.
    """

    def __init__(self) -> None:
        self.tag = _setting("EVENNIA_AI_MONEY_TAG")

    def piles(self, holder: Any) -> list[tuple[Any, int]]:
        """``holder``'s coin piles with their worth, the largest first.

        Raises:
            MoneyError: A pile's ``amount`` is not a whole number >= 1.
        """
        found = []
        for obj in holder.contents:
            if obj.tags.has(self.tag, category=MONEY_TAG_CATEGORY):
                amount = obj.attributes.get("amount", default=None)
                if _whole_amount(holder, f"the {obj.key}'s amount", amount) < 1:
                    raise MoneyError(f"{holder.key}'s purse could not be read: an empty pile")
                found.append((obj, amount))
        return sorted(found, key=lambda pile: (-pile[1], pile[0].id))

    def balance(self, holder: Any) -> int:
        """The worth of every pile ``holder`` carries."""
        return sum(amount for _, amount in self.piles(holder))

    def _choose(self, piles: list[tuple[Any, int]], amount: int) -> tuple[list[Any], int]:
        """The piles taken largest first while they fit, and what is still missing."""
        chosen, missing = [], amount
        for obj, worth in piles:
            if worth <= missing:
                chosen.append(obj)
                missing -= worth
        return chosen, missing

    def prepare(self, payer: Any, payee: Any, amount: int) -> None:
        """Split one of ``payer``'s piles so that whole piles add up to ``amount`` (a pile of
        20 for a price of 7 becomes piles of 7 and 13), in an atomic block of its own: the
        payer's total does not change."""
        amount = _checked_amount(amount)
        self.balance(payee)
        piles = self.piles(payer)
        if sum(worth for _, worth in piles) < amount:
            raise MoneyError(f"{payer.key} has only {self.describe(self.balance(payer))}")
        chosen, missing = self._choose(piles, amount)
        if missing:
            # Every pile left out is worth more than what is missing: split the smallest of them.
            obj, worth = min(((o, w) for o, w in piles if o not in chosen), key=lambda p: p[1])
            with transaction.atomic():
                split = create.create_object(
                    obj.typeclass_path,
                    key=obj.key,
                    location=payer,
                    tags=[(self.tag, MONEY_TAG_CATEGORY)],
                    attributes=[("amount", missing)],
                )
                obj.attributes.add("amount", worth - missing)
            chosen.append(split)
        _READIED[payer.id] = (amount, tuple(pile.id for pile in chosen))

    def pay(self, payer: Any, payee: Any, amount: int, touched: Touched) -> None:
        """Move whole piles worth exactly ``amount`` from ``payer`` to ``payee``.

        Raises:
            MoneyError: No set of whole piles is worth ``amount`` (not readied), or a pile
                would not move.
        """
        amount = _checked_amount(amount)
        piles = self.piles(payer)
        chosen = self._readied(payer, piles, amount)
        if chosen is None:
            chosen, missing = self._choose(piles, amount)
            if missing:
                raise MoneyError(f"{payer.key}'s coins were not readied for the payment")
        for pile in chosen:
            touched.moved.append(pile)
            touched.holders.update((payer, payee))
            if not pile.move_to(payee, quiet=True, move_type="give"):
                raise MoneyError(f"the {pile.key} would not move to {payee.key}")

    def _readied(self, payer: Any, piles: list[tuple[Any, int]], amount: int) -> list[Any] | None:
        """The piles :meth:`prepare` chose for paying ``amount``, when they are all still the
        payer's and still worth exactly that (a choice made afresh, largest first, may miss
        an exact sum the split made); else None."""
        ready = _READIED.pop(payer.id, None)
        if ready is None or ready[0] != amount:
            return None
        held = {obj.id: (obj, worth) for obj, worth in piles}
        if not all(pile_id in held for pile_id in ready[1]):
            return None
        if sum(held[pile_id][1] for pile_id in ready[1]) != amount:
            return None
        return [held[pile_id][0] for pile_id in ready[1]]

    def describe(self, amount: int) -> str:
        """``amount`` in the money's words ("12 coins")."""
        return coins(amount)


def money() -> Money:
    """The adapter ``EVENNIA_AI_MONEY`` names (read at call time).

    Raises:
        MoneyError: The setting cannot be read, or names no class that can be made.
    """
    kind = _setting("EVENNIA_AI_MONEY")
    if kind == "attribute":
        return AttributeMoney()
    if kind == "objects":
        return ObjectMoney()
    try:
        adapter: Money = class_from_module(kind)()
    except Exception as err:
        raise MoneyError(
            f"the money class {kind!r} (EVENNIA_AI_MONEY) cannot be made: {err}"
        ) from err
    return adapter
