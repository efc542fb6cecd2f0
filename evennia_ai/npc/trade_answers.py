"""A player's answer to an NPC's trade offer, and the one way a player's order is settled.

Shared by the players' commands (``buy``, ``sell``, ``accept``, ``decline`` in
:mod:`evennia_ai.commands.trade`) and by perception (a plain "yes" or "no" line,
:mod:`evennia_ai.npc.perception`), so a trade asked for in any of these ways runs the same:

- :func:`settle`: check the order (:func:`evennia_ai.world.trade.check`), queue it for a
  Builder when it is worth more than the approval value
  (:func:`evennia_ai.engine.confirmations.queue_trade`), else run it
  (:func:`evennia_ai.world.trade.execute`, which checks everything again);
- :func:`answer`: take the NPC's open offer to the player (once: it is removed in the same
  write) and settle it, or decline it; a lapsed or missing offer is said in words;
- :func:`answer_line`: a player's whole line that is a plain yes or no, while an offer of this
  NPC waits for them, answers it at once, without a model call. The NPC hears the line and
  the outcome (``state.hear``), so its next turn knows.

Names shown to players are players' choices: shown with
:func:`~evennia_ai.world.objects.as_shown`, never run as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evennia_ai.engine import audience, confirmations
from evennia_ai.npc_state import NPCState, find_npc_state
from evennia_ai.tools.approvals import ConfirmationError
from evennia_ai.utils import is_assistant
from evennia_ai.world import offers, trade
from evennia_ai.world.goods import coins
from evennia_ai.world.objects import as_shown, is_character, is_player

#: The longest line read as a plain answer ("Bram, I'll take it!" and the like).
MOST_ANSWER_CHARS = 80


@dataclass(frozen=True)
class Settled:
    """What became of a player's order.

    Attributes:
        result: The trade's result (``pending`` set when it waits for approval).
        message: What to tell the player, shown as written (empty when the trade is done:
            the trade told the player itself).
    """

    result: trade.TradeResult
    message: str


def settle(order: trade.TradeOrder, name: str) -> Settled:
    """Run ``order`` (a player's: by command or words), or queue it for a Builder's approval
    when it is worth more than the approval value. ``name``: the item as the player reads it.
    """
    npc, partner = order.npc, order.partner
    refused = trade.check(order)
    if refused is not None:
        return Settled(refused, as_shown(refused.to_player(partner)))
    if trade.approval_needed(order):
        try:
            pending = confirmations.queue_trade(order)
        except ConfirmationError:
            busy = "cannot take on more deals that need the owner's approval just now"
            return Settled(
                trade.TradeResult(done=False, refused=busy), f"{as_shown(npc.key)} {busy}."
            )
        total = coins(order.quantity * order.unit_price)
        deal = (
            f"Buying {order.quantity} {as_shown(name)} from {as_shown(npc.key)}"
            if order.direction == "sell"
            else f"Selling {order.quantity} {as_shown(name)} to {as_shown(npc.key)}"
        )
        said = audience.render_line(npc, audience.line_of(npc, "approval"), partner)
        return Settled(
            trade.TradeResult(done=False, refused="", pending=pending),
            (f"{said}\n" if said else "")
            + f"{deal} for {total} needs an operator's approval: it waits, and you will be "
            "told when it is decided.",
        )
    result = trade.execute(order)
    return Settled(result, "" if result.done else as_shown(result.to_player(partner)))


def offers_here(partner: Any) -> list[tuple[Any, offers.Offer]]:
    """The AI NPCs in ``partner``'s room with an offer to ``partner`` standing now, each with
    its offer."""
    location = getattr(partner, "location", None)
    found = []
    for obj in location.contents if location is not None else []:
        state = find_npc_state(obj) if obj is not partner and is_assistant(obj) else None
        offer = offers.pending(state, partner) if state is not None else None
        if offer is not None:
            found.append((obj, offer))
    return found


def nothing_to_answer(npc: Any, partner: Any) -> str:
    """Why ``partner`` has no offer of ``npc`` to answer: it lapsed, or there is none."""
    state = find_npc_state(npc)
    lapsed = offers.lapsed(state, partner) if state is not None else None
    name = as_shown(npc.key)
    if lapsed is not None:
        return f"{name}'s offer ({as_shown(lapsed.deal())}) has lapsed. Ask {name} again."
    return f"{name} has made you no offer to answer."


def answer(npc: Any, partner: Any, accept: bool, via: str) -> str:
    """Accept or decline ``npc``'s open offer to ``partner`` (``via``: "command" or "words").

    The offer is removed first, in one write, so it is answered once; accepting settles its
    order (:func:`settle`). Returns what to tell the partner ("" when the trade is done: it
    told the partner itself). The NPC hears the outcome unless the trade told it.
    """
    state = find_npc_state(npc)
    if state is None:
        return f"{as_shown(npc.key)} does not trade."
    refusal = nothing_to_answer(npc, partner)
    offer = offers.take(state, partner)
    if offer is None:
        return refusal
    deal = offer.deal()
    if not accept:
        _hear(state, partner, f"{partner.key} declined your offer of {deal}.")
        return f"You decline {as_shown(npc.key)}'s offer."
    settled = settle(offer.order(npc, partner, via), offer.name)
    result = settled.result
    if result.pending:
        _hear(
            state, partner, f"{partner.key} accepted your offer of {deal}; it waits for approval."
        )
    elif not result.done:
        _hear(
            state,
            partner,
            f"{partner.key} accepted your offer of {deal}, but the trade did not happen: "
            f"{result.refused}.",
        )
    return settled.message


def _hear(state: NPCState, partner: Any, text: str) -> None:
    state.hear(text, source=partner.dbref)


def answer_line(npc: Any, speaker: Any, content: str, line: str) -> bool:
    """Answer ``npc``'s open offer to ``speaker`` when ``content`` (what they said, whole) is a
    plain yes or no; ``line`` is the whole line as the room showed it. Returns whether it was
    such an answer (then the NPC has heard the line and the speaker has been told); False
    leaves it an ordinary line.

    A line that names no NPC is left ordinary while another NPC here also waits for the
    speaker's answer (whose would it be?).
    """
    if len(content) > MOST_ANSWER_CHARS:  # most lines: no name or state read at all
        return False
    if not (is_character(speaker) and is_player(speaker)) or is_assistant(speaker):
        return False
    said = offers.plain_answer(content, (npc.key, *npc.aliases.all()))
    if said is None:  # the common case: an ordinary line, no state read
        return False
    state = find_npc_state(npc)
    if state is None or offers.pending(state, speaker) is None:
        return False
    if offers.plain_answer(content, ()) is not None:  # names no NPC: whose offer is it?
        if any(other is not npc for other, _ in offers_here(speaker)):
            return False
    state.hear(line, source=speaker.dbref)
    told = answer(npc, speaker, said, via="words")
    if told:
        speaker.msg(told)
    return True


__all__ = ["Settled", "answer", "answer_line", "nothing_to_answer", "offers_here", "settle"]
