"""World tools acting as an NPC (a character with no account) in a test database."""

from unittest import mock

import pytest
from evennia import create_object
from evennia.objects.objects import DefaultCharacter, DefaultObject
from evennia.utils.test_resources import BaseEvenniaTest

import evennia_ai.tools.world as world
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.world.goods import parse_goods
from evennia_ai.world.goods import to_state as goods_state

WORLD_TOOLS = {
    "say": "TERMINAL",
    "emote": "TERMINAL",
    "whisper": "TERMINAL",
    "page": "TERMINAL",
    "move": "SAFE_CHAIN",
    "look": "SAFE_CHAIN",
    "inspect_location": "SAFE_CHAIN",
    "get": "SAFE_CHAIN",
    "give": "SAFE_CHAIN",
    "drop": "SAFE_CHAIN",
    "execute_command": "DANGEROUS",
    "set_attribute": "DANGEROUS",
}


def texts(msg_mock) -> list[str]:
    """Plain texts a patched ``msg`` received (positional or ``text=``, str or tuple)."""
    out = []
    for call in msg_mock.call_args_list:
        text = call.kwargs.get("text", call.args[0] if call.args else None)
        out.append(world._text_of(text))
    return out


def msg_types(msg_mock) -> list:
    out = []
    for call in msg_mock.call_args_list:
        text = call.kwargs.get("text", call.args[0] if call.args else None)
        out.append(text[1].get("type") if isinstance(text, tuple) else None)
    return out


def test_compose_pose():
    assert world.compose_pose("Innkeeper", "smiles warmly") == "Innkeeper smiles warmly."
    assert world.compose_pose("Innkeeper", "Innkeeper bows!") == "Innkeeper bows!"
    assert world.compose_pose("Innkeeper", "'s eyes narrow") == "Innkeeper's eyes narrow."


def test_every_world_tool_is_registered_with_its_category():
    for name, category in WORLD_TOOLS.items():
        tool = TOOL_REGISTRY.get(name)
        assert tool is not None, name
        assert tool.category == category, name
        assert tool.to_schema()["function"]["parameters"]["type"] == "object"
    assert TOOL_REGISTRY.get("inspect_location").cacheable
    assert TOOL_REGISTRY.get("execute_command").lock == ""


class WorldToolTest(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = create_object(
            DefaultCharacter, key="Innkeeper", location=self.room1, home=self.room1
        )
        self.ctx = ToolContext(npc=self.npc, tick_id=1)

    def tearDown(self):
        if self.npc.pk:
            self.npc.delete()
        super().tearDown()

    def run_tool(self, name, ctx=None, **arguments) -> ToolResult:
        result = TOOL_REGISTRY.get(name).safe_run(ctx or self.ctx, arguments)
        assert isinstance(result, ToolResult)
        return result


class TestSpeech(WorldToolTest):
    def test_say_is_heard_in_the_room(self):
        with (
            mock.patch.object(self.char2, "msg") as heard,
            mock.patch.object(self.npc, "at_msg_receive", return_value=True) as own,
        ):
            result = self.run_tool("say", message="Welcome, travellers!")
        assert result.success
        assert 'You said: "Welcome, travellers!"' in result.content
        assert "Char2" in result.content  # who heard it
        assert 'Innkeeper says, "Welcome, travellers!"' in texts(heard)
        assert "say" in msg_types(heard)
        # the NPC only ever gets its own echo, marked as coming from itself
        assert all(call.kwargs.get("from_obj") == self.npc for call in own.call_args_list)

    def test_say_refuses_blank_and_oversized_speech(self):
        assert not self.run_tool("say", message="   ").success
        assert not self.run_tool("say", message="").success
        assert not self.run_tool("say", message="x" * 2001).success
        assert not self.run_tool("say").success

    def test_say_respects_at_pre_say(self):
        with mock.patch.object(self.npc, "at_pre_say", return_value=None):
            result = self.run_tool("say", message="Hello")
        assert not result.success

    def test_say_without_a_location_fails(self):
        self.npc.location = None
        result = self.run_tool("say", message="Hello")
        assert not result.success and "nowhere" in result.error

    def test_emote_shows_a_pose_to_the_room(self):
        with mock.patch.object(self.char2, "msg") as seen:
            result = self.run_tool("emote", action="smiles warmly {at} you")
        assert result.success
        assert texts(seen) == ["Innkeeper smiles warmly {at} you."]
        assert msg_types(seen) == ["pose"]

    def test_whisper_reaches_only_its_target(self):
        with (
            mock.patch.object(self.char1, "msg") as char1_msg,
            mock.patch.object(self.char2, "msg") as char2_msg,
        ):
            result = self.run_tool("whisper", target="char2", message="The cellar key is mine.")
        assert result.success and "Char2" in result.content
        assert texts(char2_msg) == ['Innkeeper whispers: "The cellar key is mine."']
        assert msg_types(char2_msg) == ["whisper"]
        assert not char1_msg.called

    def test_whisper_reads_as_evennias_own_whisper(self):
        from evennia.commands.default.general import CmdWhisper

        player_whisper = CmdWhisper()
        player_whisper.caller, player_whisper.session, player_whisper.account = (
            self.char1,
            None,
            None,
        )
        player_whisper.cmdname = player_whisper.cmdstring = "whisper"
        player_whisper.raw_string = player_whisper.args = " Char2 = The cellar key is mine."
        player_whisper.parse()
        with mock.patch.object(self.char2, "msg") as from_player:
            player_whisper.func()
        with mock.patch.object(self.char2, "msg") as from_npc:
            self.run_tool("whisper", target="char2", message="The cellar key is mine.")
        assert texts(from_player) == ['Char whispers: "The cellar key is mine."']
        assert texts(from_npc) == [texts(from_player)[0].replace("Char", "Innkeeper", 1)]
        assert msg_types(from_npc) == msg_types(from_player) == ["whisper"]

    def test_whisper_to_someone_absent_lists_who_is_here(self):
        result = self.run_tool("whisper", target="Bob", message="psst")
        assert not result.success
        assert "Char" in result.error and "Char2" in result.error
        assert "Char2" in result.to_text()  # the model sees the list
        # objects are not whisper targets
        assert not self.run_tool("whisper", target="Obj", message="psst").success

    def test_page_reaches_a_character_in_another_room(self):
        self.char2.location = self.room2
        with mock.patch.object(self.char2, "msg") as paged:
            result = self.run_tool("page", target="Char2", message="Your room is ready.")
        assert result.success
        assert paged.call_args.kwargs["text"] == (
            "Innkeeper pages: Your room is ready.",
            {"type": "page"},
        )
        assert paged.call_args.kwargs["from_obj"] == self.npc

    def test_page_failures(self):
        assert "No character called" in self.run_tool("page", target="Nobody", message="hi").error
        assert not self.run_tool("page", target="Obj", message="hi").success  # not a character
        assert not self.run_tool("page", target="Innkeeper", message="hi").success  # itself
        self.char2.locks.add("msg:false()")
        assert "does not accept" in self.run_tool("page", target="Char2", message="hi").error


class TestMovingAndLooking(WorldToolTest):
    def test_move_through_an_exit(self):
        result = self.run_tool("move", direction="out")
        assert result.success, result.error
        assert self.npc.location == self.room2
        assert "Room2" in result.content

    def test_move_by_alias_and_unknown_direction(self):
        self.exit.aliases.add("o")
        assert self.run_tool("move", direction="O").success
        self.npc.location = self.room1
        result = self.run_tool("move", direction="north")
        assert not result.success
        assert "out (to Room2)" in result.error and "out" in result.to_text()

    def test_locked_exit_is_respected(self):
        self.exit.locks.add("traverse:false()")
        result = self.run_tool("move", direction="out")
        assert not result.success and "cannot go there" in result.error
        assert self.npc.location == self.room1
        self.exit.db.err_traverse = "The door is barred."
        assert "The door is barred." in self.run_tool("move", direction="out").error

    def test_look_at_the_room_and_at_things(self):
        self.room1.db.desc = "A |rsmoky|n taproom."
        result = self.run_tool("look")
        assert result.success
        assert self.room1.key in result.content and "A smoky taproom." in result.content
        assert "|r" not in result.content and "\x1b" not in result.content
        self.obj1.db.desc = "A battered tankard."
        assert "A battered tankard." in self.run_tool("look", target="Obj").content
        assert not self.run_tool("look", target="dragon").success

    def test_look_is_truncated(self):
        self.room1.db.desc = "x" * 5000
        result = self.run_tool("look")
        assert len(result.content) < world.LOOK_LIMIT + 100

    def test_inspect_location(self):
        other = create_object(DefaultCharacter, key="Guard", location=self.room1)
        try:
            result = self.run_tool("inspect_location")
        finally:
            other.delete()
        data = result.content
        assert data["room"]["name"] == self.room1.key
        assert data["exits"] == [{"name": "out", "aliases": [], "destination": "Room2"}]
        assert {p["name"] for p in data["characters"]["players"]} == {"Char", "Char2"}
        assert [n["name"] for n in data["characters"]["npcs"]] == ["Guard"]
        assert {o["name"] for o in data["objects"]} == {"Obj", "Obj2"}
        assert data["carrying"] == []

    def test_inspect_location_is_cached_until_the_npc_moves(self):
        first = self.run_tool("inspect_location")
        assert self.run_tool("inspect_location") is first
        assert self.run_tool("move", direction="out").success
        assert self.run_tool("inspect_location").content["room"]["name"] == "Room2"


class TestObjects(WorldToolTest):
    def test_get_and_drop(self):
        with mock.patch.object(self.char2, "msg") as seen:
            result = self.run_tool("get", item="Obj")
        assert result.success and self.obj1.location == self.npc
        assert "Innkeeper picks up an Obj." in texts(seen)
        assert "You already carry Obj" in self.run_tool("get", item="Obj").error
        result = self.run_tool("drop", item="Obj")
        assert result.success and self.obj1.location == self.room1

    def test_get_respects_locks(self):
        self.obj1.locks.add("get:false()")
        assert "can't get Obj" in self.run_tool("get", item="Obj").error
        self.obj1.db.get_err_msg = "It is nailed to the bar."
        assert self.run_tool("get", item="Obj").error == "It is nailed to the bar."
        assert self.obj1.location == self.room1
        assert not self.run_tool("get", item="Char2").success  # characters: get:false()
        assert "no 'anvil'" in self.run_tool("get", item="anvil").error

    def test_give(self):
        self.obj1.location = self.npc
        with mock.patch.object(self.char2, "msg") as received:
            result = self.run_tool("give", item="Obj", target="Char2")
        assert result.success and self.obj1.location == self.char2
        assert "Innkeeper gives you an Obj." in texts(received)
        assert (
            "There is nothing in your inventory"
            in self.run_tool("give", item="Obj", target="Char2").error
        )

    def test_stock_is_neither_given_nor_dropped_and_free_items_are_given(self):
        """The rules refuse, not the model's restraint: a model told to hand over the wares
        gets the rule's refusal (and a shop whose rules cannot be read gives nothing)."""
        bram = create_object(AIAssistantCharacter, key="Bram", location=self.room1)
        ctx = ToolContext(npc=bram, tick_id=1)
        lantern = create_object(DefaultObject, key="lantern", location=bram)
        letter = create_object(DefaultObject, key="sealed letter", location=bram)
        goods, problems = parse_goods("sell lantern 12\nfree sealed letter")
        assert problems == []
        bram.ai.set("goods", goods_state(goods))
        refused = self.run_tool("give", ctx, item="lantern", target="Char2")
        assert not refused.success and "for sale (12 coins)" in refused.error
        assert "cannot give stock away" in self.run_tool("drop", ctx, item="lantern").error
        assert lantern.location == bram
        assert self.run_tool("give", ctx, item="sealed letter", target="Char2").success
        assert letter.location == self.char2
        bram.attributes.add("goods", {"prices": "broken"}, category="ai")  # unreadable
        refused = self.run_tool("give", ctx, item="lantern", target="Char2")
        assert "could not be read" in refused.error and lantern.location == bram

    def test_what_the_npc_bought_is_neither_given_nor_dropped(self):
        """A compromised model cannot hand back what a ``buy`` rule brought in (sell scrap,
        ask for it back, sell it again): bought goods are stock unless ``free`` or gifts on."""
        bram = create_object(AIAssistantCharacter, key="Bram", location=self.room1)
        ctx = ToolContext(npc=bram, tick_id=1)
        scrap = create_object(DefaultObject, key="scrap iron", location=bram)
        bram.ai.set("goods", goods_state(parse_goods("buy scrap iron 2")[0]))
        refused = self.run_tool("give", ctx, item="scrap iron", target="Char2")
        assert not refused.success and "cannot give stock away" in refused.error
        assert "cannot give stock away" in self.run_tool("drop", ctx, item="scrap iron").error
        assert scrap.location == bram
        bram.ai.set("goods", goods_state(parse_goods("buy scrap iron 2\nfree scrap iron")[0]))
        assert self.run_tool("give", ctx, item="scrap iron", target="Char2").success
        scrap.location = bram
        bram.ai.set("goods", goods_state(parse_goods("buy scrap iron 2\ngifts on")[0]))
        assert self.run_tool("give", ctx, item="scrap iron", target="Char2").success
        assert scrap.location == self.char2
        assert [e["kind"] for e in bram.ai.ledger["entries"]] == ["gift", "gift"]

    def test_free_gifts_are_written_to_the_ledger(self):
        """A free item, or stock with gifts on, goes through stock.give_free: the move and a
        ``gift`` entry of the ledger together; a non-shop's give records nothing."""
        bram = create_object(AIAssistantCharacter, key="Bram", location=self.room1)
        ctx = ToolContext(npc=bram, tick_id=1)
        lantern = create_object(DefaultObject, key="lantern", location=bram)
        letter = create_object(DefaultObject, key="sealed letter", location=bram)
        rope = create_object(DefaultObject, key="rope", location=bram)
        goods, problems = parse_goods("sell lantern 12\nfree sealed letter\ngifts on")
        assert problems == []
        bram.ai.set("goods", goods_state(goods))
        for item in ("sealed letter", "lantern", "rope"):
            assert self.run_tool("give", ctx, item=item, target="Char2").success
        assert {letter.location, lantern.location, rope.location} == {self.char2}
        gifts = [(e["kind"], e["item"], e["partner"]) for e in bram.ai.ledger["entries"]]
        assert gifts == [("gift", "sealed letter", "Char2"), ("gift", "lantern", "Char2")]

    def test_give_to_someone_absent(self):
        self.obj1.location = self.npc
        assert "no 'Bob'" in self.run_tool("give", item="Obj", target="Bob").error
        assert self.obj1.location == self.npc

    def test_drop_what_is_not_carried(self):
        assert "nothing in your inventory" in self.run_tool("drop", item="lute").error
        self.obj2.location = self.npc
        error = self.run_tool("drop", item="lute").error
        assert "no 'lute' in your inventory" in error and "You carry: Obj2" in error

    def test_drop_respects_the_drop_lock(self):
        self.obj1.location = self.npc
        self.obj1.locks.add("drop:false()")
        assert "cannot drop" in self.run_tool("drop", item="Obj").error
        assert self.obj1.location == self.npc


class TestDangerous(WorldToolTest):
    def test_execute_command_runs_as_the_npc(self):
        self.room1.db.desc = "The common room."
        result = self.run_tool("execute_command", command="look")
        assert result.success, result.error
        assert result.content.startswith("> look")
        assert "The common room." in result.content

    def test_builder_command_fails_for_an_unprivileged_npc(self):
        result = self.run_tool("execute_command", command="dig Cellar")
        assert not result.success and "not available" in result.error
        self.npc.permissions.add("Builder")
        result = self.run_tool("execute_command", command="examine here")
        assert result.success and self.room1.key in result.content

    def test_a_failing_command_reports_no_traceback(self):
        from evennia.commands.default.general import CmdLook

        with (
            mock.patch.object(CmdLook, "func", side_effect=RuntimeError("boom")),
            mock.patch("evennia.commands.cmdhandler.logger"),
        ):
            result = self.run_tool("execute_command", command="look")
        assert not result.success and "server log" in result.error
        assert "Traceback" not in result.to_text()

    def test_execute_command_refusals(self):
        assert not self.run_tool("execute_command", command="   ").success
        assert "Developer" in self.run_tool("execute_command", command="py 1+1").error
        assert "Developer" in self.run_tool("execute_command", command="@py/edit").error
        assert "Developer" in self.run_tool("execute_command", command="@!1+1").error
        assert "Developer" in self.run_tool("execute_command", command="!1+1").error
        puppeted = ToolContext(npc=self.char1)  # linked to an account
        assert "puppeted" in self.run_tool("execute_command", ctx=puppeted, command="look").error

    def test_an_approval_for_an_object_that_is_no_ai_npc_does_not_run(self):
        # An approval is checked as a fresh call of the NPC (its settings, state and budgets):
        # an object without them is refused. test_operator_word_approvals.py runs approved
        # calls as an AI NPC.
        from evennia_ai.engine.confirmations import ApprovalRefused, _run_tool_as_npc

        entry = {"action": "execute_command", "payload": {"arguments": {"command": "look"}}}
        with mock.patch.object(world.ExecuteCommand, "run") as run:
            with pytest.raises(ApprovalRefused, match="no longer an AI NPC"):
                _run_tool_as_npc(self.npc, entry)
        run.assert_not_called()

    def test_set_attribute_on_an_editable_object(self):
        self.obj1.locks.add(f"edit:id({self.npc.id})")
        result = self.run_tool("set_attribute", target="Obj", attribute="colour", value="red")
        assert result.success, result.error
        assert self.obj1.db.colour == "red"
        result = self.run_tool(
            "set_attribute", target="Obj", attribute="stock", value={"ale": 3}, category="inventory"
        )
        assert result.success
        assert self.obj1.attributes.get("stock", category="inventory") == {"ale": 3}

    def test_set_attribute_refusals(self):
        result = self.run_tool("set_attribute", target="Obj", attribute="colour", value="red")
        assert "permission to edit Obj" in result.error
        self.npc.permissions.add("Admin")  # may edit everything, still never category ai
        for args in (
            {"attribute": "user_system_prompt", "category": "ai"},
            {"attribute": "user_system_prompt:AI"},
        ):
            result = self.run_tool("set_attribute", target="me", value="obey players", **args)
            assert not result.success and "category" in result.error
        assert self.npc.attributes.get("user_system_prompt", category="ai") is None
        assert (
            "not a valid"
            in self.run_tool("set_attribute", target="me", attribute="1bad name", value=1).error
        )
        assert (
            "nothing called"
            in self.run_tool("set_attribute", target="ghost", attribute="x", value=1).error
        )
        self.obj1.locks.add("attrcreate:false()")
        assert (
            "may not change"
            in self.run_tool("set_attribute", target="Obj", attribute="x", value=1).error
        )
        assert not self.obj1.attributes.has("x")


class TestAssistantNpc(BaseEvenniaTest):
    """An AI assistant acting through the tools never perceives its own actions as events."""

    def setUp(self):
        super().setUp()
        from evennia_ai.typeclasses import AIAssistantCharacter

        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        self.npc.ai.script.trigger_tick = lambda: None

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        super().tearDown()

    def test_own_actions_are_not_perceived(self):
        ctx = ToolContext(npc=self.npc)
        with (
            mock.patch.object(self.npc.ai, "perceive") as perceive,
            mock.patch.object(self.npc.ai, "remember_ambient") as ambient,
        ):
            for name, arguments in (
                ("say", {"message": "Hello"}),
                ("emote", {"action": "waves"}),
                ("get", {"item": "Obj"}),
                ("drop", {"item": "Obj"}),
                ("execute_command", {"command": "look"}),
                ("move", {"direction": "out"}),
            ):
                result = TOOL_REGISTRY.get(name).safe_run(ctx, arguments)
                assert result.success, (name, result.error)
        assert not perceive.called and not ambient.called
