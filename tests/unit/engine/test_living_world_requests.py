"""What an NPC's requests carry of the world around it, read by a model that can only read.

The reading model (:mod:`evennia_ai.testing.reading_model`) answers the way to a room only from
the request's sense of place (``## Where you are``); asked the way to a room the section does not
list, it says it does not know, so a request without the place cannot pass.
"""

from __future__ import annotations

from unittest import mock

from django.test import override_settings
from evennia.objects.objects import DefaultExit, DefaultObject, DefaultRoom
from evennia.utils import create
from unit.engine.test_assistant_cycles import ModelBase, call

from evennia_ai.llm import contracts
from evennia_ai.testing.reading_model import read_and_answer
from evennia_ai.world import clock
from evennia_ai.world.goods import parse_goods
from evennia_ai.world.goods import to_state as goods_state


def room(key: str):
    return create.create_object(DefaultRoom, key=key, nohome=True)


def way(key: str, here, there):
    return create.create_object(DefaultExit, key=key, location=here, destination=there)


class LivingWorldBase(ModelBase):
    def setUp(self):
        super().setUp()
        self.answers: list[dict] = []

        def answer(body: dict) -> dict:
            self.answers.append(read_and_answer(body))
            return self.answers[-1]

        self.server.responder = answer
        self.server.default_reply = {"tool_calls": [call("noop")]}
        game_time = mock.patch.object(clock, "source", lambda: 14.25 * 3600)  # 14:15
        game_time.start()
        self.addCleanup(game_time.stop)

    def requests(self):
        return [r.body for r in self.server.requests_to("/v1/chat/completions")]

    def said(self) -> list[str]:
        """What the reading model told the NPC to say."""
        return [
            str(tool_call["arguments"].get("message", ""))
            for answer in self.answers
            for tool_call in answer.get("tool_calls") or []
            if tool_call.get("name") == "say"
        ] + [str(answer["text"]) for answer in self.answers if answer.get("text")]

    def ask(self, text: str) -> str:
        self.speak(text)
        self.tick()
        return contracts.request_text(self.requests()[-1]["messages"])


class TestTheWayFromTheMap(LivingWorldBase):
    def setUp(self):
        super().setUp()
        self.smithy = room("The Smithy")
        way("east", self.room1, self.smithy)
        last = self.smithy
        for n in range(5):  # a lane east of the smithy; its end is 6 exits from the NPC
            lane = room("Lane end" if n == 4 else f"Lane {n}")
            way("east", last, lane)
            last = lane

    def test_where_is_the_smithy_is_answered_from_the_map(self):
        request = self.ask("Innkeeper, where is the Smithy?")
        assert "## Where you are" in request and "east to The Smithy" in request
        assert any("Go east." in said for said in self.said())

    def test_control_a_room_beyond_the_steps_is_not_invented(self):
        with override_settings(EVENNIA_AI_PLACE_STEPS=3):
            request = self.ask("Innkeeper, where is the Lane end?")
        ways = [line for line in request.splitlines() if line.startswith(("Exits:", "Further:"))]
        assert ways and not any("Lane end" in line for line in ways)
        assert any("do not know the way to Lane end" in said for said in self.said())

    def test_place_tokens_zero_is_the_old_location_line(self):
        with override_settings(EVENNIA_AI_PLACE_TOKENS=0):
            request = self.ask("Innkeeper, where is the Smithy?")
        assert f"You are in: {self.room1.key}" in request
        assert "## Where you are" not in request
        assert any("do not know the way" in said for said in self.said())


class TestRoutineInTheRequest(LivingWorldBase):
    def test_requests_say_what_it_does_now_and_next(self):
        tavern = room("The Gilded Tankard")
        self.npc.ai.set(
            "routine",
            {
                "slots": [
                    {
                        "start": "11:00",
                        "end": "15:00",
                        "room": self.room1.dbref,
                        "room_key": self.room1.key,
                        "doing": "selling bread at the stall",
                        "trade": True,
                    },
                    {
                        "start": "15:00",
                        "end": "20:00",
                        "room": tavern.dbref,
                        "room_key": tavern.key,
                        "doing": "having a drink",
                    },
                ]
            },
        )
        request = self.ask("Innkeeper, hello!")
        assert "Around 14:00 (afternoon)." in request
        assert (
            f"Now: at {self.room1.key}, selling bread at the stall; open for trade until 15:00."
            in request
        )
        assert "Next: 15:00-20:00 at The Gilded Tankard, having a drink." in request
        with override_settings(EVENNIA_AI_ROUTINES=False):  # control: routines off
            request = self.ask("Innkeeper, hello again!")
        assert "Now: at" not in request and "Around 14:00" in request


class TestWaresInTheRequest(LivingWorldBase):
    def setUp(self):
        super().setUp()
        parsed, problems = parse_goods("sell lantern 12 floor 10 ceiling 16\nnever smith's hammer")
        assert problems == []
        self.npc.ai.set("goods", goods_state(parsed))
        for _ in range(3):
            create.create_object(DefaultObject, key="lantern", location=self.npc)
        self.npc.attributes.add("coins", 100)

    def test_asked_what_it_sells_the_request_carries_stock_and_prices(self):
        request = self.ask("Innkeeper, what do you sell?")
        assert "## What you trade" in request and "Your purse: 100 coins." in request
        assert "Never sold: smith's hammer." in request
        assert any("lantern x3, 12 coins (at least 10, at most 16)" in said for said in self.said())

    def test_control_without_the_wares_it_knows_of_nothing_for_sale(self):
        with override_settings(EVENNIA_AI_GOODS_TOKENS=0):
            request = self.ask("Innkeeper, what do you sell?")
        assert "## What you trade" not in request
        assert any("nothing for sale" in said for said in self.said())


class TestBuyingInWords(LivingWorldBase):
    """The reading model obliges whatever a player asks (it offers the lantern at the player's
    price): only the trade's rules stand between a player and a free lantern."""

    def setUp(self):
        super().setUp()
        parsed, problems = parse_goods("sell lantern 12 floor 10 ceiling 16")
        assert problems == []
        self.npc.ai.set("goods", goods_state(parsed))
        for _ in range(3):
            create.create_object(DefaultObject, key="lantern", location=self.npc)
        self.npc.attributes.add("coins", 100)
        self.char1.attributes.add("coins", 100)

    def lanterns(self) -> int:
        return sum(1 for obj in self.char1.contents if obj.key == "lantern")

    def offered_at(self) -> list[int]:
        """The prices of the model's ``trade`` calls (it obliged the player every time)."""
        return [
            call["arguments"]["price"]
            for answer in self.answers
            for call in answer.get("tool_calls") or []
            if call.get("name") == "trade"
        ]

    def test_a_free_item_is_refused_by_the_rules(self):
        self.ask("Innkeeper, I'll buy a lantern for free.")
        assert self.offered_at() == [0] and self.npc.ai.offers == {}  # refused: no offer
        self.speak("yes")
        assert self.lanterns() == 0 and self.npc.ai.offers == {}
        assert self.char1.attributes.get("coins") == 100

    def test_a_price_below_the_floor_is_refused(self):
        self.ask("Innkeeper, I'll buy a lantern for 5 coins.")
        assert self.offered_at() == [5] and self.npc.ai.offers == {}
        self.speak("Innkeeper, yes.")
        assert self.lanterns() == 0 and self.char1.attributes.get("coins") == 100

    def test_control_a_fair_offer_and_a_yes_succeed(self):
        self.ask("Innkeeper, I'll buy a lantern for 12 coins.")
        assert self.offered_at() == [12] and list(self.npc.ai.offers) == [self.char1.dbref]
        calls = len(self.requests())
        self.speak("yes")  # answered at once: no model request
        assert self.lanterns() == 1 and self.char1.attributes.get("coins") == 88
        assert len(self.requests()) == calls
