"""The world the NPCs live in: the game clock, routines, paths, goods, stock, money and trade.

The "domain" layer of the package (docs/architecture.md), beside ``memory``, ``workspace`` and ``tools``. These
modules never import ``tools``, ``engine``, ``commands`` or ``web``: the tools import them
(``tests/system/test_layers.py`` refuses an upward import or a circle). Pure modules work on
plain data and can be tested without a database; glue modules read the game's objects.

Modules:
    objects: what a player's search would find, who is a character or a player, and what the
        game's hooks say to an object while it acts (glue).
    clock: the game clock and its calendar, with a seam for tests and benches (glue).
    routine: an NPC's day in slots of game time, and the checks of its text form (pure).
    paths: a bounded search for a route through the exits an NPC may pass, and one step
        through an exit (glue).
    goods: what an NPC sells and buys, at what prices, and its trade rules (pure).
    stock: what an NPC has in stock, which containers count, and what it may give away (glue).
    ledger: an NPC's latest trades, bounded, and the day's counts for its limits (pure).
    money: the game's money, read and paid through an adapter (glue).
    atomic: what one all-or-nothing write touched, for the repair after a rollback (glue).
    trade: the one path by which goods and money change hands (glue).
    place: the NPC's sense of place for its requests (glue and pure).
    wares: a trading NPC's wares for its requests (pure).
"""
