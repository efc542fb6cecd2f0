"""An NPC's trade offers: what its model proposed to one player, waiting for a yes or a no.

The model's ``trade`` tool never moves goods: it stores an :class:`Offer` (the NPC sells to or
buys from one player: an item, a count, a unit price) in the NPC's ``offers`` state, after
:func:`evennia_ai.world.trade.check` found nothing against it. The player answers with the
``accept`` / ``decline`` commands, or, to an offer to sell, a plain line
(``EVENNIA_AI_TRADE_YES_WORDS`` / ``_NO_WORDS``; an offer to buy the player's item needs the
commands, :attr:`Offer.answers_to_plain_words`); accepting runs the order through :func:`~evennia_ai.world.trade.execute`, which
checks everything again. So an offer is only a proposal: the rules decide.

- At most one open offer per player (a new one replaces the old), at most :data:`MOST_OFFERS`
  in all (the oldest dropped first); each stands ``EVENNIA_AI_TRADE_OFFER_SECONDS`` real
  seconds.
- The offers are plain data in one Attribute (written once per change), so they survive a
  reload; an unreadable value reads as no offers (nothing can be accepted).

The functions on stored data (:func:`put`, :func:`open_offer`, :func:`without`) are pure; the
others read and write an NPC's state.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evennia_ai import conf
from evennia_ai.npc_state import OFFERS, JSONObject, NPCState
from evennia_ai.world.goods import coins
from evennia_ai.world.trade import DIRECTIONS, TradeOrder

#: The most open offers one NPC keeps (the oldest go first).
MOST_OFFERS = 20
#: The real clock offers are timed by (a seam for tests).
now_seconds = time.time


@dataclass(frozen=True)
class Offer:
    """One open offer of an NPC to one player.

    Attributes:
        partner: The player character's dbref.
        partner_key: Its name when the offer was made.
        direction: ``"sell"`` (the NPC sells to the player) or ``"buy"`` (it buys from them).
        item: What is offered, as the trade names it (a rule key, a name or a ``#dbref``).
        name: The item's name in the words.
        quantity: How many.
        unit_price: The price of one, in whole units of money.
        made: When it was made (epoch seconds).
        expires: When it lapses (epoch seconds).
    """

    partner: str
    partner_key: str
    direction: str
    item: str
    name: str
    quantity: int
    unit_price: int
    made: float
    expires: float

    @property
    def total(self) -> int:
        """What the whole offer costs."""
        return self.quantity * self.unit_price

    @property
    def answers_to_plain_words(self) -> bool:
        """Whether a plain yes or no line answers it: only an offer to sell. An offer to buy
        the player's item is answered by ``accept`` / ``decline`` alone: a "yes" may answer
        another question asked in the same turn, and must not sell the player's goods."""
        return self.direction == "sell"

    def how_to_answer(self, seconds: int) -> str:
        """How the player answers it, as they are told (markup: |w for the commands)."""
        say = " (or say yes or no)" if self.answers_to_plain_words else ""
        return f"Type |waccept|n or |wdecline|n{say} within {seconds} seconds."

    def to_plain(self) -> JSONObject:
        """The offer as stored."""
        return {
            "partner": self.partner,
            "partner_key": self.partner_key,
            "direction": self.direction,
            "item": self.item,
            "name": self.name,
            "quantity": self.quantity,
            "unit_price": self.unit_price,
            "made": self.made,
            "expires": self.expires,
        }

    @classmethod
    def from_plain(cls, data: object) -> Offer | None:
        """The offer stored as ``data``, or None when it cannot be read (never a guess)."""
        if not isinstance(data, dict):
            return None
        text = {k: data.get(k) for k in ("partner", "partner_key", "direction", "item", "name")}
        whole = {k: data.get(k) for k in ("quantity", "unit_price")}
        times = {k: data.get(k) for k in ("made", "expires")}
        if not all(isinstance(v, str) for v in text.values()):
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in whole.values()):
            return None
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in times.values()):
            return None
        if text["direction"] not in DIRECTIONS:
            return None
        return cls(
            partner=str(text["partner"]),
            partner_key=str(text["partner_key"]),
            direction=str(text["direction"]),
            item=str(text["item"]),
            name=str(text["name"]),
            quantity=int(whole["quantity"]),  # type: ignore[arg-type]
            unit_price=int(whole["unit_price"]),  # type: ignore[arg-type]
            made=float(times["made"]),  # type: ignore[arg-type]
            expires=float(times["expires"]),  # type: ignore[arg-type]
        )

    def deal(self) -> str:
        """What is offered, in words: "2 lantern for 24 coins (12 coins each)"."""
        each = f" ({coins(self.unit_price)} each)" if self.quantity > 1 else ""
        return f"{self.quantity} {self.name} for {coins(self.total)}{each}"

    def in_words(self, npc_name: str) -> str:
        """The offer as the player reads it: "Bram offers to sell you 1 lantern for 12
        coins"."""
        verb = "sell you" if self.direction == "sell" else "buy from you"
        return f"{npc_name} offers to {verb} {self.deal()}"

    def order(self, npc: Any, partner: Any, via: str) -> TradeOrder:
        """The trade this offer stands for, coming ``via`` ("command" or "words")."""
        return TradeOrder(
            npc, partner, self.direction, self.item, self.quantity, self.unit_price, via=via
        )


# -- on stored data (pure) ----------------------------------------------------------------------
def open_offer(stored: Mapping[str, Any], partner: str, now: float) -> Offer | None:
    """The offer in ``stored`` (an NPC's ``offers``) to ``partner`` (a dbref) still standing at
    ``now``, or None."""
    offer = Offer.from_plain(stored.get(partner))
    return offer if offer is not None and offer.expires > now else None


def without(stored: Mapping[str, Any], partner: str, now: float) -> dict[str, Any]:
    """``stored`` without ``partner``'s offer and without every offer lapsed at ``now`` or
    unreadable."""
    return {
        key: value
        for key, value in stored.items()
        if key != partner and open_offer(stored, key, now) is not None
    }


def put(
    stored: Mapping[str, Any], offer: Offer, now: float, most: int = MOST_OFFERS
) -> dict[str, Any]:
    """``stored`` with ``offer`` in place of its partner's earlier one, lapsed offers dropped and
    at most ``most`` kept (the oldest dropped first)."""
    kept = without(stored, offer.partner, now)
    kept[offer.partner] = offer.to_plain()
    if len(kept) > most:
        oldest = sorted(kept, key=lambda key: _made(kept[key]))[: len(kept) - most]
        kept = {key: value for key, value in kept.items() if key not in oldest}
    return kept


def _made(value: object) -> float:
    made = value.get("made") if isinstance(value, dict) else None
    return float(made) if isinstance(made, (int, float)) else 0.0


# -- an NPC's offers (state) --------------------------------------------------------------------
def make(
    state: NPCState,
    partner: Any,
    direction: str,
    item: str,
    name: str,
    quantity: int,
    unit_price: int,
) -> Offer:
    """Store the offer of the NPC (``state``) to ``partner`` (a player character), replacing
    its earlier one (one write), and return it."""
    now = now_seconds()
    offer = Offer(
        partner=partner.dbref,
        partner_key=partner.key,
        direction=direction,
        item=item,
        name=name,
        quantity=quantity,
        unit_price=unit_price,
        made=now,
        expires=now + conf.get_float("EVENNIA_AI_TRADE_OFFER_SECONDS"),
    )
    state.update(OFFERS, lambda stored: put(stored, offer, now))
    return offer


def pending(state: NPCState, partner: Any) -> Offer | None:
    """The NPC's (``state``) offer to ``partner`` still standing now, or None."""
    return open_offer(state.offers, partner.dbref, now_seconds())


def lapsed(state: NPCState, partner: Any) -> Offer | None:
    """The NPC's last offer to ``partner`` when it has lapsed (to say so), else None."""
    offer = Offer.from_plain(state.offers.get(partner.dbref))
    return offer if offer is not None and offer.expires <= now_seconds() else None


def take(state: NPCState, partner: Any) -> Offer | None:
    """Remove the NPC's (``state``) offer to ``partner`` and return it when it still stood
    (one write, so an offer is answered once); lapsed offers go with it."""
    now = now_seconds()

    def change(stored: dict[str, Any]) -> tuple[dict[str, Any], Offer | None]:
        return without(stored, partner.dbref, now), open_offer(stored, partner.dbref, now)

    if partner.dbref not in state.offers:
        return None
    taken: Offer | None = state.update(OFFERS, change)
    return taken


# -- a plain answer ----------------------------------------------------------------------------
_EDGE_PUNCTUATION = ".,!?;:@\"' \t"


def _words(text: str) -> str:
    return " ".join(text.strip(_EDGE_PUNCTUATION).lower().split())


_TOKENS = re.compile(r"[\w']+")


def _tokens(text: str) -> str:
    """``text``'s words, lower case, one space apart, with a space at each end."""
    return f" {' '.join(_TOKENS.findall(text.lower()))} "


#: The last line :func:`may_answer` was asked about and its answer: every AI NPC in a room hears
#: the same line, so the room asks once per line (the settings are read for each new line).
_LAST_ASKED: list[object] = [None, False]


def may_answer(line: str) -> bool:
    """Whether ``line`` holds one of the yes or no words at all, as whole words: the quick
    test every AI NPC hearing a line makes before it reads a name or its state (almost every
    line fails it)."""
    if _LAST_ASKED[0] == line:
        return bool(_LAST_ASKED[1])
    said = _tokens(line)
    found = any(
        _tokens(word) in said
        for key in ("EVENNIA_AI_TRADE_YES_WORDS", "EVENNIA_AI_TRADE_NO_WORDS")
        for word in conf.get_texts(key)
        if word.strip()
    )
    _LAST_ASKED[:] = [line, found]
    return found


def plain_answer(line: str, npc_names: tuple[str, ...]) -> bool | None:
    """Whether ``line`` (what a player said, whole) is a plain yes (True), a plain no (False),
    or neither (None): one of ``EVENNIA_AI_TRADE_YES_WORDS`` / ``_NO_WORDS`` as the whole line,
    optionally after or before one of ``npc_names`` ("Bram, yes." / "Deal, Bram!")."""
    said = _words(line)
    for name in (_words(name) for name in npc_names if name.strip()):
        for pattern in (rf"^{re.escape(name)}[\s,:]+(.+)$", rf"^(.+?)[\s,]+{re.escape(name)}$"):
            named = re.match(pattern, said)
            if named:
                said = _words(named.group(1))
                break
        else:
            continue
        break
    if said in (_words(word) for word in conf.get_texts("EVENNIA_AI_TRADE_YES_WORDS")):
        return True
    if said in (_words(word) for word in conf.get_texts("EVENNIA_AI_TRADE_NO_WORDS")):
        return False
    return None


__all__ = [
    "MOST_OFFERS",
    "Offer",
    "lapsed",
    "make",
    "may_answer",
    "open_offer",
    "pending",
    "plain_answer",
    "put",
    "take",
    "without",
]
