"""A trade killed between its writes loses and duplicates nothing.

A real game from world_example/ (SQLite; the journal of a killed transaction is rolled back
when the database is next opened). A probe module installed in the game folder makes the
Innkeeper a shop (a lantern at 12 coins), gives the superuser 50 coins, and runs the trade
through :func:`evennia_ai.world.trade.execute`. Armed at a point, it replaces the function
there, *inside the server process*, by one that SIGKILLs the server:

- ``pay``: ``AttributeMoney.pay``, after the lantern's move and before the money's writes;
- ``ledger``: ``ledger.record``, after the money and before the ledger row (not run by the
  suite: the same transaction as ``pay``, and a fourth restart costs the suite 14 s);
- ``announce``: ``trade.announce``, after the commit.

After the kill the portal is killed too and the game started again; the probe then reports the
lantern's holder, how many lanterns exist, both purses and the ledger's length, read from the
database. A control run takes the transaction away (``nullcontext``) and shows the same kill
losing the lantern's price: the kill point sits between the writes, and the harness sees a loss.
"""

import inspect
import time

import pytest
from support.game_server import ROOT, GameServer, TelnetClient, tagged, wait_gone

PROBE = r'''
"""Test probe of test_trade_crash: a shop, a trade, and a kill at a chosen point."""

import contextlib
import os
import signal
import types

from evennia.objects.models import ObjectDB
from evennia.objects.objects import DefaultObject
from evennia.typeclasses.attributes import Attribute
from evennia.utils.create import create_object
from evennia.utils.search import search_tag

from evennia_ai import attribute_writes
from evennia_ai.world import atomic, goods, ledger, money, trade

TAG = ("trade_probe", "evennia_ai_test")


def innkeeper():
    return search_tag("demo_innkeeper", category="evennia_ai")[0]


def setup(me):
    """A fresh shop: one lantern at 12 coins, 50 coins for me, 100 for the Innkeeper."""
    npc = innkeeper()
    for old in search_tag(TAG[0], category=TAG[1]):
        old.delete()
    rules, problems = goods.parse_goods("sell lantern 12")
    npc.ai.set("goods", goods.to_state(rules))
    npc.ai.set("ledger", {"entries": [], "today": {}, "restocked": {}})
    create_object(DefaultObject, key="lantern", location=npc, tags=[TAG])
    me.move_to(npc.location, quiet=True)
    me.db.coins = 50
    npc.db.coins = 100
    attribute_writes.flush()  # the state's rows are batched to the turn's end otherwise
    return state(me)


def _stored_coins(holder):
    attr = holder.attributes.get("coins", return_obj=True)
    if attr is None:
        return None
    return Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0]


def state(me):
    """What the database holds now (read from the rows, not the caches)."""
    npc = innkeeper()
    lanterns = list(
        ObjectDB.objects.filter(db_tags__db_key=TAG[0], db_tags__db_category=TAG[1])
        .values_list("db_location__db_key", flat=True)
    )
    attr = npc.attributes.get("ledger", category="ai", return_obj=True)
    stored = Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0]
    return {
        "holders": lanterns,
        "me": _stored_coins(me),
        "npc": _stored_coins(npc),
        "ledger": len(stored.get("entries", [])),
    }


def _die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point):
    """Replace the function at ``point`` by a SIGKILL of this process."""
    if point in ("pay", "control"):
        money.AttributeMoney.pay = _die
    if point == "control":
        atomic.transaction = types.SimpleNamespace(atomic=contextlib.nullcontext)
    if point == "ledger":
        ledger.record = _die
    if point == "announce":
        trade.announce = _die
    return point


def buy(me):
    """Me buying the lantern from the Innkeeper: the result in words."""
    order = trade.TradeOrder(innkeeper(), me, "sell", "lantern", 1, 12, via="command")
    result = trade.execute(order)
    return result.to_player(me)
'''

SETTINGS = (
    "EVENNIA_AI_AUTONOMY = False\n"
    'EVENNIA_AI_MODEL = "openai/test-model"\n'
    'EVENNIA_AI_API_BASE = "http://127.0.0.1:9"\n'
    'EVENNIA_AI_API_KEY = "x"\n'
    "EVENNIA_AI_MAX_RETRIES = 0\n"
    "EVENNIA_AI_MEMORY_INIT_DELAY = 3600\n"
)
BOUGHT = {"holders": ["admin"], "me": 38, "npc": 112, "ledger": 1}
UNTOUCHED = {"holders": ["Innkeeper"], "me": 50, "npc": 100, "ledger": 0}


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    # The checkout under test first: the plugin of this tree, also when the one installed in
    # the virtualenv is another (a worktree); Evennia's launcher does not pass PYTHONPATH on.
    settings = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n{SETTINGS}"
    server = GameServer(tmp_path_factory.mktemp("trade_crash"), extra_settings=settings)
    try:
        server.create()
        server.install_module("support_tagged", inspect.getsource(tagged))
        server.install_module("trade_probe", PROBE)
        server.start()
        yield server
    except Exception:
        print(server.log_tail(120))
        raise
    finally:
        server.stop()


def login(game: GameServer) -> TelnetClient:
    client = TelnetClient(game.telnet_port)
    assert "You become" in client.login("admin", game.password)
    client.read(0.5)
    return client


def probe(player: TelnetClient, call: str):
    return player.py_json(f"__import__('trade_probe').{call}")


def killed_at(game: GameServer, point: str) -> dict:
    """Arm ``point``, buy, wait for the server to die, restart; the state after the restart."""
    player = login(game)
    try:
        assert probe(player, "setup(me)") == UNTOUCHED
        pid = game.pid("server")
        player.send(
            f"py __import__('trade_probe').arm({point!r}); __import__('trade_probe').buy(me)"
        )
        assert wait_gone(pid, 30), f"the server did not die at {point!r}"
    finally:
        player.close()
    game.kill("portal")
    started = time.monotonic()
    game.start()
    print(f"  {point}: killed and started again in {time.monotonic() - started:.1f} s")
    player = login(game)
    try:
        return probe(player, "state(me)")
    finally:
        player.close()


def buy_again(game: GameServer) -> dict:
    """After the restart the shop still trades, exactly once."""
    player = login(game)
    try:
        assert probe(player, "setup(me)") == UNTOUCHED
        assert probe(player, "buy(me)").startswith("The trade is done")
        assert "The trade did not happen" in probe(player, "buy(me)")  # the lantern is gone
        return probe(player, "state(me)")
    finally:
        player.close()


@pytest.mark.server
@pytest.mark.timeout(180)
def test_kill_between_item_and_money_loses_nothing(game):
    assert killed_at(game, "pay") == UNTOUCHED
    assert buy_again(game) == BOUGHT


@pytest.mark.server
@pytest.mark.timeout(180)
def test_kill_after_commit_keeps_the_whole_trade_once(game):
    assert killed_at(game, "announce") == BOUGHT


@pytest.mark.server
@pytest.mark.timeout(180)
def test_without_the_transaction_the_same_kill_loses_the_lantern(game):
    """The control: the lantern has moved, its price has not been paid."""
    assert killed_at(game, "control") == {**UNTOUCHED, "holders": ["admin"]}
