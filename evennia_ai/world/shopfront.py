"""What a trading NPC shows of its trade: its wares section, gathered from the game.

:func:`wares_text` reads the NPC's stock (:func:`evennia_ai.world.stock.stock`), purse, shop
hours and approval value, and hands them to the pure :func:`evennia_ai.world.wares.render`. The
request's wares section (``prompt.sources``) and the model's ``wares`` tool both call it, so
the NPC reads its wares the same way wherever it reads them.

Glue: reads the game's objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evennia_ai.npc_state import JSONObject
from evennia_ai.world import money, stock, trade, wares
from evennia_ai.world.goods import CLOSED, from_state


def wares_text(
    npc: Any,
    goods_state: JSONObject,
    routine_state: JSONObject,
    budget: int,
    count: Callable[[str], int],
) -> str:
    """``npc``'s wares section within ``budget`` tokens counted with ``count`` ("" when it
    does not trade). ``goods_state`` and ``routine_state``: its stored ``goods`` and
    ``routine`` (read once by the caller)."""
    goods = from_state(goods_state)
    if budget <= 0 or not wares.trades(goods):
        return ""
    items = wares.for_sale([] if goods.closed else stock.stock(npc, goods))
    try:
        adapter = money.money()
        purse = adapter.describe(adapter.balance(npc))
    except money.MoneyError as err:
        purse = f"unknown ({err})"
    closed = CLOSED if goods.closed else trade.closed_now(routine_state)
    limit = trade.approval_limit(goods)
    return wares.render(goods, items, purse, closed, limit, budget, count)
