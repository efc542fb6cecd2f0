"""Trade tools: a trading NPC offers deals, reads its wares, and tells the way.

- ``trade`` (group ``trade``): offer a player in the room to sell them something from stock or
  to buy something they carry, at a price per item. It never moves goods: it runs
  :func:`evennia_ai.world.trade.check` first, and a refusal by the NPC's rules (a price of 0
  or below the floor, an item not in stock or never sold, a quantity out of bounds, a day's
  limit, a purse too small) comes back as the tool's failure with no offer made. Otherwise the
  offer is stored (:mod:`evennia_ai.world.offers`) and the player is told how to answer
  (``accept`` / ``decline``, or a plain yes / no to an offer to sell; an offer to buy from
  them needs ``accept``). Accepting runs the whole trade again, checks included: what the
  model says never decides a trade.
- ``wares`` (group ``trade``): what the NPC sells and buys, at what prices, with its stock
  counts (the same section its requests carry: :mod:`evennia_ai.world.shopfront`).
- ``directions`` (group ``movement``): the way from here to a named room, along the exits the
  NPC may pass (:func:`evennia_ai.world.paths.route`, bounded by
  ``EVENNIA_AI_ROUTE_MAX_ROOMS`` / ``_STEPS``); an unknown or unreachable room is said so.

Like every tool they are offered only as the context's filter, the execution pattern's
categories, the NPC's own allow and deny lists and the tool's lock allow: a game forbids them
by name (``tool_deny``, a context's ``tool_filter``).
"""

from __future__ import annotations

from typing import Any

from evennia.objects.models import ObjectDB

from evennia_ai import conf
from evennia_ai.npc_state import find_npc_state
from evennia_ai.tools.base import TEXT, Tool, ToolCategory, ToolResult, object_schema
from evennia_ai.tools.registry import register_tool
from evennia_ai.utils import clean_text, one_line
from evennia_ai.world import offers, paths, shopfront, trade
from evennia_ai.world.goods import Goods, from_state, rule_key
from evennia_ai.world.objects import as_shown, find_among, is_character, is_player
from evennia_ai.world.stock import stock

#: Tokens at most of the ``wares`` tool's answer.
WARES_TOOL_TOKENS = 600
#: Exits at most that ``directions`` names one by one.
DIRECTIONS_SHOWN = 12


def _approx_tokens(text: str) -> int:
    return len(text) // 4 + 1


def _players_here(npc: Any) -> list[Any]:
    return [
        obj
        for obj in npc.location.contents
        if obj is not npc and is_character(obj) and is_player(obj)
    ]


def _item_name(order: trade.TradeOrder) -> str:
    """The name of what ``order`` (checked) names, as the trade found it."""
    asked = rule_key(order.item)
    state = find_npc_state(order.npc)
    goods = from_state(state.goods if state is not None else {})
    if order.direction == "sell":
        line = trade.for_sale(stock(order.npc, goods), asked)
        if line is not None:
            return line.name
    else:
        found = trade.offered(order.partner, goods, asked)
        if found is not None:
            return found[1]
    return one_line(clean_text(order.item), 80)


def keeps_shop(npc: Any) -> bool:
    """Whether ``npc`` has readable goods set by staff (the shop's tools are of use to it);
    an NPC without goods, or whose goods cannot be read, is not offered them."""
    state = find_npc_state(npc) if npc is not None else None
    if state is None:
        return False
    goods = from_state(state.goods)
    return not goods.closed and goods != Goods()


@register_tool
class Trade(Tool):
    name = "trade"
    group = "trade"
    description = (
        "Offer a player here a deal: to sell them something of the goods you hold, or to buy "
        "something they carry, at a price per item. Nothing changes hands until they accept; "
        "your trade rules decide whether it may happen at all."
    )
    parameters = object_schema(
        {
            "player": {**TEXT, "description": "the player here you offer it to"},
            "direction": {
                "type": "string",
                "enum": list(trade.DIRECTIONS),
                "description": "sell: you sell to them; buy: you buy from them",
            },
            "item": {**TEXT, "description": "the item's name"},
            "price": {"type": "integer", "description": "the price of one, in whole coins"},
            "quantity": {"type": "integer", "description": "how many (default 1)"},
        },
        required=["player", "direction", "item", "price"],
    )
    category = ToolCategory.SAFE_CHAIN
    writes = frozenset({"offers"})

    def of_use_to(self, npc: Any) -> bool:
        return keeps_shop(npc)

    def run(self, ctx, player, direction, item, price, quantity=1):
        npc = ctx.npc
        if npc is None or npc.location is None:
            return ToolResult.fail("You are nowhere: there is no one to trade with.")
        partner, problem = find_among(npc, player, _players_here(npc), what="here (players)")
        if problem:
            return ToolResult.fail(problem)
        order = trade.TradeOrder(npc, partner, direction, item, quantity, price, via="tool")
        refused = trade.check(order)
        if refused is not None:
            return ToolResult.fail(f"No offer made: {refused.refused}.")
        state = find_npc_state(npc)
        if state is None:
            return ToolResult.fail("You do not trade.")
        name = _item_name(order)
        offer = offers.make(state, partner, direction, item, name, quantity, price)
        seconds = round(offer.expires - offer.made)
        partner.msg(f"{as_shown(offer.in_words(npc.key))}. {offer.how_to_answer(seconds)}")
        waits = trade.approval_needed(order)
        typed = (
            "" if offer.answers_to_plain_words else " (only by typing accept: a yes will not do)"
        )
        return ToolResult.ok(
            f"You offered to {'sell' if direction == 'sell' else 'buy'} {offer.deal()} "
            f"{'to' if direction == 'sell' else 'from'} {partner.key}. "
            f"Nothing has changed hands: it is done only if {partner.key} accepts{typed} "
            f"within {seconds} seconds"
            + (" and an operator approves it" if waits else "")
            + "; do not say it is done.",
            data={"partner": partner.dbref, "total": offer.total},
        )


@register_tool
class Wares(Tool):
    name = "wares"
    group = "trade"
    description = "What you sell and buy, at what prices, with how many of each you have."
    parameters = object_schema({})
    category = ToolCategory.SAFE_CHAIN
    cacheable = True
    reads = frozenset({"goods", "stock"})

    def of_use_to(self, npc: Any) -> bool:
        return keeps_shop(npc)

    def run(self, ctx):
        npc = ctx.npc
        state = find_npc_state(npc) if npc is not None else None
        if state is None:
            return ToolResult.fail("You do not trade.")
        text = shopfront.wares_text(
            npc, state.goods, state.routine, WARES_TOOL_TOKENS, _approx_tokens
        )
        return ToolResult.ok(text or "You trade nothing: staff have set you no prices.")


@register_tool
class Directions(Tool):
    name = "directions"
    group = "movement"
    description = "The way from here to a room, by its name, through the exits you may pass."
    parameters = object_schema(
        {"room": {**TEXT, "description": "the room's name"}}, required=["room"]
    )
    category = ToolCategory.SAFE_CHAIN
    cacheable = True

    def run(self, ctx, room):
        npc = ctx.npc
        if npc is None or npc.location is None:
            return ToolResult.fail("You are nowhere (you have no location).")
        goal, problem = paths.find_room(room)
        if goal is None:
            return ToolResult.fail(problem)
        here = npc.location
        if goal == here:
            return ToolResult.ok(f"You are in {goal.key}.")
        found = paths.route(npc, here, goal)
        if not found.found:
            return ToolResult.fail(f"You know no way to {goal.key} that you could walk.")
        exits = {obj.id: obj for obj in ObjectDB.objects.filter(id__in=found.exits)}
        names = [exits[i].key if i in exits else "?" for i in found.exits]
        shown = ", then ".join(names[:DIRECTIONS_SHOWN])
        more = len(names) - DIRECTIONS_SHOWN
        rest = f", then {more} more exits" if more > 0 else ""
        steps = conf.get_int("EVENNIA_AI_ROUTE_MAX_STEPS")
        return ToolResult.ok(
            f"To {goal.key}: {shown}{rest} ({len(names)} of at most {steps} exits).",
            data={"room": goal.dbref, "exits": len(names)},
        )
