"""Admin commands for an AI NPC's place in the world: ``airoutine`` (its day in game time) and
``aigoods`` (what it sells and buys, its purse and its ledger).

Both change the NPC through :mod:`evennia_ai.npc.world_controls`, as the dashboard does, so a
routine or a rule is checked by the same rules and refused in the same words wherever it is
set. Both are ``OPERATE`` (Builders), like ``ainpc/persona``.
"""

from __future__ import annotations

from evennia.objects.models import ObjectDB
from evennia.utils.ansi import raw

from evennia_ai import access
from evennia_ai.commands.base import CommandError, SwitchedCommand
from evennia_ai.engine import routines
from evennia_ai.npc import world_controls as world
from evennia_ai.npc_state import JSONObject
from evennia_ai.utils import today
from evennia_ai.world.goods import coins, goods_lines
from evennia_ai.world.ledger import today_of
from evennia_ai.world.money import MoneyError, money
from evennia_ai.world.stock import stock

#: Trades ``aigoods/ledger`` shows when no count is given.
LEDGER_DEFAULT = 20


class CmdAIRoutine(SwitchedCommand):
    """
    Show or set an AI NPC's routine: where it is in each part of the game day.

    Usage:
      airoutine <npc>
      airoutine <npc> = <slot>; <slot>; ...
      airoutine/clear <npc>
      airoutine/check <npc>

    Switches:
      clear - remove the routine: the NPC stays where it is, and with goods
              its shop is open at any time.
      check - check again that the NPC can walk from each slot's room to the
              next (after locks or exits changed); it plans afresh.

    A slot is START-END ROOM: WHAT IT DOES, with [trade] when it is open for
    trade there and [sleep] when it sleeps there; times are game time
    (HH:MM), a slot may run past midnight, and the room is its name or its
    #number. Between slots is free time: it stays where it is, closed for
    trade. Everything is checked before anything is set (times, overlaps,
    rooms, and that the NPC may pass the exits between them); every problem
    is named. Without '=', the routine, the slot now, what the NPC is doing
    about it (in place, walking, waiting for a conversation, unreachable)
    and its route.

    Examples:
      airoutine Hilda
      airoutine Hilda = 06:00-14:00 Bakery: baking [trade]; 22:00-06:00 Loft [sleep]
      airoutine/check Hilda
      airoutine/clear Hilda
    """

    key = "airoutine"
    locks = access.lock(access.OPERATE)
    switch_options = ("clear", "check")

    def do_default(self):
        if self.rhs is None and "=" not in self.args:
            self.msg(self.report(self.find_npc(self.args)))
            return
        npc = self.find_npc(self.lhs)
        self.msg(raw(world.set_routine(npc, self.rhs or "", by=self.caller.key)))

    def do_clear(self):
        self.msg(raw(world.clear_routine(self.find_npc(self.args), by=self.caller.key)))

    def do_check(self):
        self.msg(raw(world.check_routine(self.find_npc(self.args))))

    def report(self, npc) -> str:
        """The routine of ``npc``, the slot now, its status and its route."""
        routine = world.routine_of(npc)
        name = f"{raw(npc.key)}({npc.dbref})"
        if not routine.slots:
            return (
                f"{name} has no routine: it stays where it is. Set one with "
                f"|wairoutine {raw(npc.key)} = <slot>; <slot>|n."
            )
        stored = npc.ai.routine
        by = (
            f" (set by {raw(str(stored.get('set_by')))} {stored.get('set_at')})"
            if stored.get("set_by")
            else ""
        )
        table = self.table("Slot", "Room", "Doing", "Flags", keep=(0,))
        for slot in routine.slots:
            flags = "trade" if slot.trade else "sleep" if slot.sleep else ""
            table.add_row(slot.key(), raw(slot.where()), raw(slot.doing), flags)
        lines = [f"|w{name}'s routine|n{by}:", str(table), raw(world.now_and_next(npc))]
        lines.append(f"Routine: {raw(world.routine_state(npc) or '')}")
        route = routines.status(npc).route
        if route is not None and route.exits:
            exits = {obj.id: obj.key for obj in ObjectDB.objects.filter(id__in=route.exits)}
            names = ", ".join(raw(exits.get(exit_id, f"#{exit_id}")) for exit_id in route.exits)
            lines.append(f"Route: {names} ({len(route.exits)} exits left)")
        for problem in routine.dropped:
            lines.append(f"|ydropped|n: {raw(problem)}")
        text = "; ".join(world.slot_text(slot) for slot in routine.slots)
        lines.append(f"As text: {raw(text)}")
        return "\n".join(lines)


class CmdAIGoods(SwitchedCommand):
    """
    Show or set what an AI NPC sells and buys, and read its ledger of trades.

    Usage:
      aigoods <npc>
      aigoods <npc> = <rule>
      aigoods/remove <npc> = <item>
      aigoods/set <npc> = <rule>; <rule>; ...
      aigoods/ledger <npc> [= <count>]
      aigoods/restock <npc> [= <item>]

    Switches:
      remove - drop every rule of an item (its name, #number or proto:KEY; or
               a container's #number, limit sold, limit paid, approve, gifts).
      set    - replace all the rules (';' between rules; nothing after '='
               removes them all: the NPC is no shop).
      ledger - its latest trades, newest first (20 unless a count is given).
      restock - top up its stock now, by each restock rule (or the rule
                of one proto:KEY), and say what was made; the rules also
                run by themselves, every <hours> game hours.

    Without '=': its rules, its stock with prices, its purse, today's trade
    and whether it is open now. With '= <rule>': add one rule, replacing the
    rule of the same kind for the same item. Rules:
      sell <item> <price> [floor <n>] [ceiling <n>]
      buy <item> <price> [ceiling <n>] [per day <n>]
      never <item>            never sold, given or dropped
      free <item>             given freely (a quest item)
      restock proto:<KEY> keep <n> every <hours>h
      container <#number>     its contents are stock too (lock it to the NPC)
      limit sold <n> per day, limit paid <n> per day
      approve above <n>       a trade worth more waits for a Builder
      gifts on                any stock may be given away
    An item is a name, a #number or proto:KEY (what a prototype spawned).
    Prices are whole coins. One bad rule and nothing changes; rules that
    cannot be read close the shop. Players trade with wares, buy and sell.

    Examples:
      aigoods Bram
      aigoods Bram = sell lantern 12 floor 10 ceiling 16
      aigoods Bram = buy scrap iron 2 ceiling 3 per day 10
      aigoods/remove Bram = lantern
      aigoods/set Bram = sell lantern 12; never smith's hammer; approve above 30
      aigoods/ledger Bram = 5
      aigoods/restock Bram = proto:IRON_NAILS
    """

    key = "aigoods"
    locks = access.lock(access.OPERATE)
    switch_options = ("remove", "set", "ledger", "restock")

    def do_default(self):
        if self.rhs is None and "=" not in self.args:
            self.msg(self.report(self.find_npc(self.args)))
            return
        npc = self.find_npc(self.lhs)
        self.msg(raw(world.add_goods_rule(npc, self.rhs or "")))

    def do_remove(self):
        npc, key = self.npc_and_rhs("item")
        self.msg(raw(world.remove_goods(npc, key)))

    def do_set(self):
        if self.rhs is None and "=" not in self.args:
            raise CommandError("Missing '= <rule>; <rule>'.\n" + self.usage())
        npc = self.find_npc(self.lhs)
        self.msg(raw(world.set_goods(npc, self.rhs or "")))

    def do_ledger(self):
        npc = self.find_npc(self.lhs)
        last = LEDGER_DEFAULT
        if (self.rhs or "").strip():
            last = self.parse_int(self.rhs, "The count", minimum=1)
        rows = world.ledger_rows(npc, last)
        if not rows:
            self.msg(f"{raw(npc.key)} has made no trades yet.")
            return
        self.msg(
            f"|w{raw(npc.key)}'s last {len(rows)} trades|n, newest first:\n{self.ledger_table(rows)}"
        )

    def do_restock(self):
        npc = self.find_npc(self.lhs)
        self.msg(raw(world.restock_now(npc, self.rhs or "")))

    def ledger_table(self, rows: list[JSONObject]):
        table = self.table("When", "What", "Total", "With", "Via")
        for row in rows:
            kind = {"sale": "sold", "purchase": "bought", "gift": "gave", "restock": "made"}.get(
                str(row.get("kind")), row.get("kind")
            )
            total = row.get("total")
            table.add_row(
                f"{str(row.get('at') or '')[:16].replace('T', ' ')} {row.get('game') or ''}".strip(),
                raw(f"{kind} {row.get('quantity')} {row.get('name') or row.get('item')}"),
                coins(total) if isinstance(total, int) else "",
                raw(str(row.get("partner") or "")),
                str(row.get("via") or ""),
            )
        return table

    def report(self, npc) -> str:
        """``npc``'s rules, stock, purse, today's trade and whether it is open now."""
        name = f"{raw(npc.key)}({npc.dbref})"
        goods = world.goods_of(npc)
        if goods.closed:
            return (
                f"|w{name}|n: |rits trade rules could not be read|n, so it trades nothing and "
                f"gives no stock away. Replace them whole: |waigoods/set {raw(npc.key)} = "
                "<rule>; <rule>|n."
            )
        rules = goods_lines(goods)
        if not rules:
            return (
                f"{name} sells and buys nothing. Add a rule: |waigoods {raw(npc.key)} = sell "
                "<item> <price>|n."
            )
        is_open, why = world.shop_hours(npc)
        lines = [f"|w{name}'s goods|n: " + ("open now" if is_open else f"closed now ({raw(why)})")]
        lines += ["Rules:"] + [f"  {raw(rule)}" for rule in rules]
        found = stock(npc, goods)
        if found:
            table = self.table("For sale", "In stock", "Price", "Floor-ceiling")
            for line in found:
                rule = line.rule
                table.add_row(
                    raw(line.name), line.count, coins(rule.price), f"{rule.floor}-{rule.ceiling}"
                )
            lines.append(str(table))
        else:
            lines.append("In stock: nothing priced.")
        try:
            lines.append(f"Purse: {money().describe(money().balance(npc))}")
        except MoneyError as err:
            lines.append(f"Purse: |rcannot be read|n: {raw(str(err))}")
        counts = today_of(npc.ai.ledger, today())
        lines.append(
            f"Today: sold {counts.sold_units} item(s) for {coins(counts.taken)}, bought "
            f"{sum(counts.bought.values())} for {coins(counts.paid)}."
        )
        lines += [f"|ywarning|n: {raw(note)}" for note in world.container_notes(npc, goods)]
        return "\n".join(lines)


COMMANDS = [CmdAIRoutine, CmdAIGoods]
