"""The NPC's page shows its routine, goods, stock and latest trades, and Builders change the
routine and the goods there with the same functions, refusals and words as ``airoutine`` and
``aigoods`` (issue 36)."""

from unittest import mock

from django.test import Client
from django.utils.html import escape
from evennia import create_object
from evennia.objects.objects import DefaultExit, DefaultObject
from support.game_clock import GameClock
from unit.web.test_web_api import DashboardTestBase

from evennia_ai import access
from evennia_ai.npc import world_controls
from evennia_ai.npc.controls import ControlError
from evennia_ai.web import data
from evennia_ai.world import clock
from evennia_ai.world.goods import Goods

DAY = "00:00-12:00 Room: minding the bar [trade]\n12:00-00:00 Room2: resting in the back"
BAD_DAY = "25:00-26:00 Room: dreaming\n01:00-02:00 Nowhere: lost"


def refusal_of(call, *args) -> str:
    """The words a world control refuses with (what the commands show)."""
    try:
        call(*args)
    except ControlError as err:
        return str(err)
    raise AssertionError("not refused")


class WorldOnTheDashboardBase(DashboardTestBase):
    def setUp(self):
        super().setUp()
        create_object(DefaultExit, key="back", location=self.room2, destination=self.room1)
        self.game = GameClock()
        self.game.at("09:00")
        patcher = mock.patch.object(clock, "source", self.game)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.builder = Client()
        self.account2.permissions.add("Builder")
        self.builder.force_login(self.account2)

    def post(self, client, name, value=""):
        return client.post(f"/ai/npc/{self.npc.id}/control/{name}/", {"value": value}, follow=True)

    def page(self) -> str:
        return self.staff.get(f"/ai/npc/{self.npc.id}/").content.decode()


class TestRoutineOnTheDashboard(WorldOnTheDashboardBase):
    def test_no_routine_reads_as_none(self):
        view = data.routine_view(self.npc)
        assert view["slots"] == [] and view["text"] == "" and view["state"] == ""
        assert view["where"] == "Room"
        assert 'id="ai-no-routine"' in self.page()

    def test_a_builder_sets_the_routine_and_the_page_shows_it(self):
        html = self.post(self.builder, "routine", DAY).content.decode()
        assert "Innkeeper&#x27;s routine is set: 2 slots." in html
        routine = world_controls.routine_of(self.npc)
        assert [slot.key() for slot in routine.slots] == ["00:00-12:00", "12:00-00:00"]
        view = data.routine_view(self.npc)
        assert [slot["now"] for slot in view["slots"]] == [True, False]
        assert view["slots"][0]["flag"] == "trade" and view["slots"][1]["room"].startswith("Room2")
        assert view["set_by"] == self.account2.username
        assert view["now_and_next"].startswith("Game time 09:00 (morning): now 00:00-12:00")
        html = self.page()
        assert 'id="ai-routine-table"' in html and "minding the bar" in html
        assert 'class="ai-slot-now"' in html and view["now_and_next"] in html
        assert escape(world_controls.routine_text(self.npc)) in html  # the form's text to edit

    def test_a_bad_routine_is_refused_in_the_commands_words(self):
        expected = refusal_of(world_controls.set_routine, self.npc, BAD_DAY)
        assert '"25:00" is not a time of day' in expected and "Nowhere" in expected
        html = self.post(self.builder, "routine", BAD_DAY).content.decode()
        for line in expected.splitlines():
            assert escape(line) in html, line
        assert world_controls.routine_of(self.npc).slots == ()
        api = self.staff.post(
            f"/ai/api/npcs/{self.npc.id}/settings/routine/",
            {"value": BAD_DAY},
            content_type="application/json",
        )
        assert api.status_code == 400 and api.json()["detail"] == expected

    def test_check_and_clear(self):
        world_controls.set_routine(self.npc, DAY)
        html = self.post(self.builder, "check_routine").content.decode()
        assert "Innkeeper can reach every room of its routine" in html
        html = self.post(self.builder, "clear_routine").content.decode()
        assert "Innkeeper&#x27;s routine is removed" in html
        assert world_controls.routine_of(self.npc).slots == ()
        html = self.post(self.builder, "clear_routine").content.decode()
        assert escape(refusal_of(world_controls.clear_routine, self.npc)) in html

    def test_a_viewer_without_the_level_is_refused(self):
        self.account2.permissions.remove("Builder")
        for name, value in (("routine", DAY), ("add_goods", "sell lantern 12")):
            page = self.builder.post(f"/ai/npc/{self.npc.id}/control/{name}/", {"value": value})
            assert page.status_code == 403, name
            api = self.builder.post(
                f"/ai/api/npcs/{self.npc.id}/settings/{name}/",
                {"value": value},
                content_type="application/json",
            )
            assert api.status_code == 403, name
        assert world_controls.routine_of(self.npc).slots == ()
        assert world_controls.goods_of(self.npc) == Goods()
        assert Client().post(f"/ai/npc/{self.npc.id}/control/routine/").status_code == 302

    def test_the_controls_are_the_builders(self):
        for name in ("routine", "clear_routine", "check_routine", "add_goods", "remove_goods"):
            assert data.control_level(name) == access.OPERATE, name


class TestGoodsOnTheDashboard(WorldOnTheDashboardBase):
    def test_no_goods_reads_as_no_shop(self):
        view = data.goods_view(self.npc)
        assert view["rules"] == [] and not view["closed"] and view["stock"] == []
        assert 'id="ai-no-goods"' in self.page()

    def test_a_builder_adds_and_removes_a_rule(self):
        create_object(DefaultObject, key="lantern", location=self.npc)
        self.npc.db.coins = 30
        html = self.post(self.builder, "add_goods", "sell lantern 12 floor 10 ceiling 16")
        assert "Innkeeper has 1 trade rule." in html.content.decode()
        view = data.goods_view(self.npc)
        assert view["rules"] == ["sell lantern 12 floor 10 ceiling 16"]
        assert view["stock"] == [
            {"name": "lantern", "count": 1, "price": "12 coins", "floor": 10, "ceiling": 16}
        ]
        assert view["open"] and view["purse"] == "30 coins"
        assert view["today"] == "sold 0 item(s) for 0 coins, bought 0 for 0 coins"
        html = self.page()
        assert 'data-ware="lantern"' in html and 'id="ai-purse">30 coins<' in html
        html = self.post(self.builder, "remove_goods", "lantern").content.decode()
        assert "Innkeeper has no trade rules now: it is no shop." in html
        assert data.goods_view(self.npc)["rules"] == []

    def test_a_bad_rule_is_refused_in_the_commands_words(self):
        expected = refusal_of(world_controls.add_goods_rule, self.npc, "sell lantern twelve")
        html = self.post(self.builder, "add_goods", "sell lantern twelve").content.decode()
        for line in expected.splitlines():
            assert escape(line) in html, line
        html = self.post(self.builder, "remove_goods", "lantern").content.decode()
        assert escape(refusal_of(world_controls.remove_goods, self.npc, "lantern")) in html

    def test_rules_that_cannot_be_read_show_a_closed_shop(self):
        self.npc.ai.set("goods", {"prices": {"lantern": {"price": "lots"}}})
        view = data.goods_view(self.npc)
        assert view["closed"] and view["stock"] == [] and view["rules"] == []
        assert 'id="ai-goods-closed"' in self.page()

    def test_a_routine_closes_the_shop_outside_its_trade_slots(self):
        world_controls.set_goods(self.npc, "sell lantern 12")
        world_controls.set_routine(self.npc, DAY)
        self.game.at("13:00")
        view = data.goods_view(self.npc)
        assert not view["open"] and "trading again from 00:00" in view["why_closed"]


class TestLedgerOnTheDashboard(WorldOnTheDashboardBase):
    def entry(self, number: int) -> dict:
        return {
            "id": f"t_{number:08d}",
            "kind": "sale",
            "item": "lantern",
            "name": "lantern",
            "quantity": 1,
            "unit": 12,
            "total": 12,
            "partner": "Char",
            "via": "command",
            "at": f"2026-11-27T10:{number:02d}:00+00:00",
        }

    def test_the_latest_trades_newest_first(self):
        self.npc.ai.set("ledger", {"entries": [self.entry(n) for n in range(15)], "today": {}})
        rows = data.ledger_view(self.npc)
        assert len(rows) == data.LEDGER_SHOWN
        assert rows[0]["id"] == "t_00000014" and rows[-1]["id"] == "t_00000005"
        assert (rows[0]["kind"], rows[0]["item"], rows[0]["total"]) == (
            "sold",
            "lantern",
            "12 coins",
        )
        html = self.page()
        assert 'data-trade="t_00000014"' in html and 'data-trade="t_00000004"' not in html
        api = self.staff.get(f"/ai/api/npcs/{self.npc.id}/world/").json()
        assert api["ledger"] == rows and api["routine"]["slots"] == []
        assert api["goods"]["rules"] == []

    def test_no_trades(self):
        assert data.ledger_view(self.npc) == []
        assert 'id="ai-no-trades"' in self.page()


class TestWorldViewsOnTheReactor(WorldOnTheDashboardBase):
    """The routine's status and the state reads change what the game thread shares: the page and
    the API build the world views on the reactor thread (review of issue 36)."""

    def on_a_pool_thread(self) -> list:
        """Pretend the view runs in the web thread pool of a running Server; the calls handed
        to the reactor thread are recorded (and run)."""
        handed: list = []

        def blocking_call(_reactor, fn, *args, **kwargs):
            handed.append(fn)
            with mock.patch.object(data.threadable, "isInIOThread", return_value=True):
                return fn(*args, **kwargs)

        for patcher in (
            mock.patch.object(data.reactor, "running", True),
            mock.patch.object(data.threadable, "isInIOThread", return_value=False),
            mock.patch.object(data.threads, "blockingCallFromThread", blocking_call),
        ):
            patcher.start()
            self.addCleanup(patcher.stop)
        return handed

    def test_the_api_builds_the_world_on_the_reactor(self):
        world_controls.set_routine(self.npc, DAY)
        handed = self.on_a_pool_thread()
        inside: list[bool] = []
        real = data.routines.status

        def status(npc):
            inside.append(data.threadable.isInIOThread())
            return real(npc)

        with mock.patch.object(data.routines, "status", status):
            api = self.staff.get(f"/ai/api/npcs/{self.npc.id}/world/").json()
        assert api["routine"]["slots"][0]["now"] is True
        assert handed and inside and all(inside)

    def test_the_page_builds_the_world_on_the_reactor(self):
        world_controls.set_routine(self.npc, DAY)
        handed = self.on_a_pool_thread()
        inside: list[bool] = []
        real = data.routines.status

        def status(npc):
            inside.append(data.threadable.isInIOThread())
            return real(npc)

        with mock.patch.object(data.routines, "status", status):
            html = self.page()
        assert "minding the bar" in html
        assert handed and inside and all(inside)
