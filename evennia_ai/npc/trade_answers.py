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
  NPC to sell them something waits for them, answers it at once, without a model call (an
  offer to buy from them needs ``accept``). The NPC hears the line and the outcome
  (``state.hear``), so its next turn knows.
- :func:`settle` queues at most one order per NPC and partner
  (:class:`~evennia_ai.engine.confirmations.TradeAlreadyWaiting`): a second is refused in
  words while the first waits.

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
            pending = confirmations.queue_trade(order, name)
        except confirmations.TradeAlreadyWaiting as waiting:
            return _still_waiting(npc, waiting.entry)
        except ConfirmationError:
            busy = "cannot take on more deals that need the owner's approval just now"
            return Settled(
                trade.TradeResult(done=False, refused=busy), f"{as_shown(npc.key)} {busy}."
            )
        deal = _deal(order.direction, order.quantity, name, npc.key, order.unit_price)
        said = audience.render_line(npc, audience.line_of(npc, "approval"), partner)
        return Settled(
            trade.TradeResult(done=False, refused="", pending=pending),
            (f"{said}\n" if said else "")
            + f"{deal[0].upper()}{deal[1:]} needs an operator's approval: it waits, and you "
            "will be told when it is decided.",
        )
    result = trade.execute(order)
    return Settled(result, "" if result.done else as_shown(result.to_player(partner)))


def _deal(direction: str, quantity: int, name: str, npc_key: str, unit_price: int) -> str:
    """An order as its partner reads it: "buying 3 lantern from Bram for 36 coins"."""
    item, npc_name, total = as_shown(name), as_shown(npc_key), coins(quantity * unit_price)
    if direction == "sell":  # the NPC sells
        return f"buying {quantity} {item} from {npc_name} for {total}"
    return f"selling {quantity} {item} to {npc_name} for {total}"


def _still_waiting(npc: Any, entry: dict[str, Any]) -> Settled:
    """The refusal of a second order while the partner's earlier one (``entry``) waits."""
    payload = entry.get("payload") or {}
    order = payload.get("order") or {}
    quantity, price = order.get("quantity"), order.get("unit_price")
    name = payload.get("name") or order.get("item")
    who = as_shown(npc.key)
    if isinstance(quantity, int) and isinstance(price, int) and isinstance(name, str):
        deal = _deal(str(order.get("direction")), quantity, name, npc.key, price)
        earlier = f"Your earlier order ({deal})"
    else:  # an entry that cannot be read is still an earlier order
        earlier = f"Your earlier order with {who}"
    refused = "an earlier order still waits for an operator's approval"
    return Settled(
        trade.TradeResult(done=False, refused=refused),
        f"{earlier} still waits for an operator; {who} takes no other order from you that "
        "needs approval until it is decided.",
    )


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

    Only an offer to sell (the player pays a price within the staff's floor and ceiling) takes
    a plain answer: an offer to buy the player's item needs ``accept`` or ``decline``, since
    "yes" may answer another question the NPC asked in the same turn ("Want an ale?"); to it
    the line is ordinary speech. A line that names no NPC is left ordinary while another NPC
    here also waits for the speaker's answer (whose would it be?).
    """
    if len(content) > MOST_ANSWER_CHARS or not offers.may_answer(content):
        return False  # most lines: no name or state read at all
    if not (is_character(speaker) and is_player(speaker)) or is_assistant(speaker):
        return False
    said = offers.plain_answer(content, (npc.key, *npc.aliases.all()))
    if said is None:  # the common case: an ordinary line, no state read
        return False
    state = find_npc_state(npc)
    if state is None:
        return False
    offer = offers.pending(state, speaker)
    if offer is None or not offer.answers_to_plain_words:  # an offer to buy needs ``accept``
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
