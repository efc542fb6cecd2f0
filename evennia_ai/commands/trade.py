"""The players' trade commands: ``wares``, ``buy``, ``sell``, ``accept`` and ``decline``, in
:class:`AITradeCmdSet`.

A player trades with an AI NPC that has goods (``aigoods``) by command, at the NPC's list price
(``buy``) or its buying price (``sell``). No model is asked: each command builds a
:class:`~evennia_ai.world.trade.TradeOrder` and runs it through
:func:`~evennia_ai.world.trade.execute`, the one path by which goods and money change hands,
which checks every rule again and moves item, money and ledger entry together or not at all. A
trade worth more than the approval value is queued for a Builder
(:func:`~evennia_ai.engine.confirmations.queue_trade`) and the player is told it waits
(:func:`evennia_ai.npc.trade_answers.settle`, shared with the plain "yes"). ``accept`` and
``decline`` answer an offer the NPC's model made with its ``trade`` tool
(:mod:`evennia_ai.world.offers`); a name that fits several traders with an offer names none.

Add the cmdset to your game's ``CharacterCmdSet`` (``commands/default_cmdsets.py``)::

    from evennia_ai.commands import AITradeCmdSet

    class CharacterCmdSet(default_cmds.CharacterCmdSet):
        def at_cmdset_creation(self):
            super().at_cmdset_creation()
            self.add(AITradeCmdSet)
"""

from __future__ import annotations

import re
from typing import Any

from evennia.commands.cmdset import CmdSet
from evennia.utils.ansi import raw

from evennia_ai import conf
from evennia_ai.commands.base import AICommand, CommandError
from evennia_ai.npc import trade_answers
from evennia_ai.npc import world_controls as world
from evennia_ai.utils import is_assistant
from evennia_ai.world import trade, wares
from evennia_ai.world.goods import Goods, coins, rule_key
from evennia_ai.world.money import MoneyError, money
from evennia_ai.world.stock import StockLine, stock

#: The help category of the players' trade commands.
TRADE_CATEGORY = "Trade"
#: Everyone may trade.
TRADE_LOCK = "cmd:all()"


def _listing(lines: list[StockLine]) -> str:
    return (
        ", ".join(f"{raw(ware.name)} ({coins(ware.rule.price)})" for ware in wares.for_sale(lines))
        or "nothing"
    )


def _bought(goods: Goods) -> str:
    return ", ".join(f"{raw(name)} ({coins(rule.price)})" for name, rule in wares.bought(goods))


class TradeCommand(AICommand):
    """Base of the players' trade commands: the shop NPC here, the count, the trade."""

    help_category = TRADE_CATEGORY
    locks = TRADE_LOCK
    #: The word before the NPC's name in ``buy <item> from <npc>``.
    npc_word = ""

    # -- who trades here ----------------------------------------------------------------------
    def shops_here(self) -> list:
        """The AI NPCs in the caller's room that have goods."""
        location = self.caller.location
        if location is None:
            raise CommandError("You are nowhere: there is no one to trade with.")
        here = [obj for obj in location.contents if obj is not self.caller and is_assistant(obj)]
        return [npc for npc in here if world.is_shop(npc)]

    def shop(self, name: str):
        """The shop NPC here called ``name``, or the only one here when ``name`` is empty.

        Raises:
            CommandError: no one, or no one by that name, trades here; several do and none
                was named; the one named does not trade.
        """
        shops = self.shops_here()
        listed = ", ".join(raw(npc.key) for npc in shops)
        name = name.strip()
        if not name:
            if len(shops) == 1:
                return shops[0]
            if not shops:
                raise CommandError("No one here trades.")
            raise CommandError(f"Several here trade: {listed}. Say with whom: {self.hint()}.")
        found = self.caller.search(name, candidates=self.caller.location.contents, quiet=True)
        matches = [obj for obj in found if obj in shops]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise CommandError(f"'{raw(name)}' could be {listed}: name one.")
        if len(found) == 1 and found[0] is not self.caller:
            raise CommandError(f"{raw(found[0].key)} does not trade.")
        others = f" Trading here: {listed}." if shops else " No one here trades."
        raise CommandError(f"No one called '{raw(name)}' trades here.{others}")

    def hint(self) -> str:
        return f"{self.key} <item> {self.npc_word} <npc>"

    # -- what is asked ------------------------------------------------------------------------
    def item_and_npc(self) -> tuple[str, str]:
        """``<item> [from|to <npc>]`` left of ``=``, as (item, npc name or "")."""
        text = self.require(self.lhs, "the item")
        head, sep, tail = text.rpartition(f" {self.npc_word} ")
        if sep and head.strip() and tail.strip():
            return head.strip(), tail.strip()
        return text, ""

    def order_parts(self) -> tuple[str, int, Any, str, Goods]:
        """What the player typed, read and checked: (item as typed, count, the shop NPC, the
        item's rule key, the NPC's goods, its shop open now); CommandError in words else."""
        item, name = self.item_and_npc()
        quantity = self.count()
        npc = self.shop(name)
        return item, quantity, npc, self.asked(item), self.open_shop(npc)

    def count(self) -> int:
        """The count right of ``=`` (1 without one): 1 to ``EVENNIA_AI_TRADE_MAX_QUANTITY``."""
        most = conf.get_int("EVENNIA_AI_TRADE_MAX_QUANTITY")
        typed = (self.rhs or "").strip()
        if self.rhs is None and "=" not in self.args:
            return 1
        if re.fullmatch(r"[0-9]{1,9}", typed) and 1 <= int(typed) <= most:  # ASCII digits
            return int(typed)
        raise CommandError(f"How many? A number from 1 to {most}.")

    @staticmethod
    def asked(item: str) -> str:
        """The rule key of what the player named; CommandError in words when it names nothing."""
        try:
            return rule_key(item)
        except ValueError as err:
            raise CommandError(f"Name an item: {err}.") from None

    def open_shop(self, npc) -> Goods:
        """``npc``'s goods, when its shop is open now; CommandError saying why not."""
        goods = world.goods_of(npc)
        if goods.closed:
            raise CommandError(
                f"{raw(npc.key)}'s trade rules could not be read, so {raw(npc.key)} trades "
                "nothing until staff fix them."
            )
        is_open, why = world.shop_hours(npc)
        if not is_open:
            raise CommandError(f"{raw(npc.key)} is not trading now: {raw(why)}.")
        return goods

    # -- the trade ----------------------------------------------------------------------------
    def run_trade(self, order: trade.TradeOrder, name: str) -> None:
        """Run ``order`` (by command), or queue it for approval; tell the player either way
        (``name``: the item as the player reads it)."""
        settled = trade_answers.settle(order, name)
        if settled.result.pending:
            self.msg(settled.message)
        elif not settled.result.done:  # a trade that is done told the player itself
            raise CommandError(settled.message)


class CmdWares(TradeCommand):
    """
    See what a trader here sells and buys, and at what prices.

    Usage:
      wares [<npc>]

    Lists what the trader has in stock with its price, what it buys and for
    how much, and whether it is trading now. With one trader in the room the
    name may be left out.

    Examples:
      wares
      wares Bram
    """

    key = "wares"
    aliases = ["list"]
    needs_args = False

    def run(self):
        npc = self.shop(self.args)
        goods = world.goods_of(npc)
        name = raw(npc.key)
        if goods.closed:
            self.msg(f"{name}'s trade rules could not be read: {name} trades nothing just now.")
            return
        is_open, why = world.shop_hours(npc)
        lines = [
            f"|w{name}|n is " + ("trading now." if is_open else f"not trading now: {raw(why)}.")
        ]
        found = wares.for_sale(stock(npc, goods))
        if found:
            lines.append(f"{name} sells:")
            lines += [
                f"  {raw(ware.name)}: {coins(ware.rule.price)} ({ware.count} in stock)"
                for ware in found
            ]
        else:
            lines.append(f"{name} has nothing for sale just now.")
        if goods.buys:
            lines.append(f"{name} buys: {_bought(goods)}.")
        try:
            lines.append(f"You have {money().describe(money().balance(self.caller))}.")
        except MoneyError:
            lines.append("Your purse could not be read.")
        there = "" if len(self.shops_here()) == 1 else f" from {name}"
        lines.append(f"Type |wbuy <item>{there} [= <count>]|n or |wsell <item>|n.")
        self.msg("\n".join(lines))


class CmdBuy(TradeCommand):
    """
    Buy something from a trader here, at its price.

    Usage:
      buy <item> [from <npc>] [= <count>]

    Buys at the price wares shows; the money leaves your purse and the
    item comes to you together, or nothing happens. A trade worth more than
    the trader may make alone waits for an operator's approval. With one
    trader in the room the name may be left out.

    Examples:
      buy lantern
      buy lantern from Bram
      buy iron nail from Bram = 5
    """

    key = "buy"
    npc_word = "from"

    def run(self):
        item, quantity, npc, asked, goods = self.order_parts()
        lines = stock(npc, goods)
        line = trade.for_sale(lines, asked)
        if line is None:
            if asked in goods.prices:
                raise CommandError(f"{raw(npc.key)} has no {raw(item)} left.")
            raise CommandError(
                f"{raw(npc.key)} has no '{raw(item)}' for sale. For sale: {_listing(lines)}."
            )
        if not asked.startswith("proto:") and any(trade.matches(obj, asked) for obj in line.items):
            item = asked  # one object by its name or #number
        else:
            item = line.key
        self.run_trade(
            trade.TradeOrder(
                npc, self.caller, "sell", item, quantity, line.rule.price, via="command"
            ),
            line.name,
        )


class CmdSell(TradeCommand):
    """
    Sell something you carry to a trader here, at the price it pays.

    Usage:
      sell <item> [to <npc>] [= <count>]

    Sells at the price wares shows for what the trader buys; the item and
    the money change hands together, or nothing happens. With one trader in
    the room the name may be left out.

    Examples:
      sell scrap iron
      sell scrap iron to Bram = 3
    """

    key = "sell"
    npc_word = "to"

    def run(self):
        item, quantity, npc, asked, goods = self.order_parts()
        found = trade.offered(self.caller, goods, asked)  # as the trade will take it
        if found is None:
            raise CommandError(f"You carry no '{raw(item)}'.")
        key, name, same = found
        rule = goods.buys.get(key)
        if rule is None or key in goods.never:
            buys = _bought(goods)
            raise CommandError(
                f"{raw(npc.key)} does not buy {raw(same[0].key)}."
                + (f" {raw(npc.key)} buys: {buys}." if buys else "")
            )
        self.run_trade(
            trade.TradeOrder(npc, self.caller, "buy", item, quantity, rule.price, via="command"),
            name,
        )


class OfferAnswer(TradeCommand):
    """Base of ``accept`` and ``decline``: answer the offer of a trader here."""

    needs_args = False
    #: Whether this command accepts.
    accepts = True

    def run(self):
        waiting = trade_answers.offers_here(self.caller)
        name = self.args.strip()
        if name:
            npc = self.named(name, waiting)
        elif len(waiting) == 1:
            npc = waiting[0][0]
        elif waiting:
            listed = ", ".join(raw(npc.key) for npc, _ in waiting)
            raise CommandError(
                f"Several have made you an offer: {listed}. Say whose: {self.key} <npc>."
            )
        else:
            shops = self.shops_here()
            if len(shops) != 1:
                raise CommandError("No one here has made you an offer.")
            npc = shops[0]
        told = trade_answers.answer(npc, self.caller, self.accepts, via="command")
        if told:
            self.msg(told)

    def named(self, name: str, waiting: list) -> Any:
        """The NPC here called ``name``: the one with an offer for the caller among those the
        name fits. A name that fits several with an offer names none of them (CommandError):
        an answer never goes to a trader the player did not mean."""
        found = self.caller.search(name, candidates=self.caller.location.contents, quiet=True)
        offering = [obj for obj in found if any(obj is npc for npc, _ in waiting)]
        if len(offering) == 1:
            return offering[0]
        if offering:
            listed = ", ".join(raw(npc.key) for npc in offering)
            raise CommandError(f"'{raw(name)}' could be {listed}: name one.")
        if len(found) == 1 and found[0] is not self.caller:
            return found[0]  # no offer standing: answer() says it lapsed or there is none
        raise CommandError(f"No one called '{raw(name)}' has made you an offer here.")


class CmdAccept(OfferAnswer):
    """
    Accept the offer a trader here made you.

    Usage:
      accept [<npc>]

    When a trader offers to sell you something (or to buy something you
    carry) at a price, this takes the deal: the item and the money change
    hands together, or nothing happens, and every rule of the trader is
    checked again. To an offer to sell you something, saying a plain |wyes|n
    to the trader does the same; an offer to buy from you is taken only with
    |waccept|n. An offer stands for a short while; a deal worth more than the
    trader may make alone waits for an operator's approval, one at a time.
    With one offer waiting the name may be left out.

    Examples:
      accept
      accept Bram
    """

    key = "accept"
    accepts = True


class CmdDecline(OfferAnswer):
    """
    Decline the offer a trader here made you.

    Usage:
      decline [<npc>]

    Turns down the trader's offer; nothing changes hands. To an offer to
    sell you something, saying a plain |wno|n to the trader does the same.
    With one offer waiting the name may be left out.

    Examples:
      decline
      decline Bram
    """

    key = "decline"
    accepts = False


TRADE_COMMANDS = [CmdWares, CmdBuy, CmdSell, CmdAccept, CmdDecline]


class AITradeCmdSet(CmdSet):
    """The players' trade commands: ``wares`` (``list``), ``buy``, ``sell``, ``accept`` and
    ``decline``."""

    key = "evennia_ai_trade"

    def at_cmdset_creation(self):
        for command in TRADE_COMMANDS:
            self.add(command())
