"""A game made with an older evennia-ai: its NPCs are found, tagged once, and still answer."""

from unittest import mock

from django.conf import settings
from evennia.server.models import ServerConfig
from evennia.utils.create import create_object
from evennia.utils.utils import class_from_module
from unit.engine.test_assistant_cycles import ModelBase, call

from evennia_ai import startstop
from evennia_ai.commands.base import AICommand
from evennia_ai.npc import lookup
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.utils import is_assistant


class TestOldLayoutNpc(ModelBase):
    """An NPC saved by 0.1 (no assistants' Tag; same stored typeclass and Script paths)."""

    def setUp(self):
        super().setUp()
        # What 0.1 left in the database: no Tag, and no record of a layout upgrade.
        self.npc.tags.remove(lookup.ASSISTANT_TAG, category=lookup.ASSISTANT_TAG_CATEGORY)
        ServerConfig.objects.conf(startstop.LAYOUT_KEY, delete=True)

    def test_stored_paths_are_the_old_ones(self):
        assert self.npc.typeclass_path == "evennia_ai.typeclasses.AIAssistantCharacter"
        assert self.script.typeclass_path == "evennia_ai.scripts.AssistantScript"
        assert is_assistant(self.npc)

    def test_server_start_tags_it_once_and_it_answers(self):
        assert self.npc not in lookup.all_ai_npcs()
        assert startstop.upgrade_stored_layout() == 0
        assert self.npc in lookup.all_ai_npcs()
        assert ServerConfig.objects.conf(startstop.LAYOUT_KEY) == startstop.LAYOUT_VERSION
        # recorded: later starts do not scan the objects again
        with mock.patch.object(startstop, "tag_untagged_assistants") as scan:
            assert startstop.upgrade_stored_layout() == startstop.LAYOUT_VERSION
        scan.assert_not_called()

        self.server.enqueue({"tool_calls": [call("say", message="Welcome back, traveller!")]})
        self.speak("Hello Innkeeper, do you remember me?")
        with mock.patch.object(self.char1, "msg") as heard:
            trace = self.tick()
        assert trace is not None and trace.context_type == "tick_event"
        texts = " ".join(str(c.kwargs.get("text") or c.args) for c in heard.call_args_list)
        assert "Welcome back, traveller!" in texts

    def test_trace_list_of_0_1_moves_to_the_ring_once(self):
        self.npc.attributes.add("traces", [{"tick_id": 1}, {"tick_id": 2}], category="ai")
        lookup.tag_assistant(self.npc)
        ServerConfig.objects.conf(startstop.LAYOUT_KEY, 1)  # tagged, traces not yet moved
        assert startstop.upgrade_stored_layout() == 1
        assert [t["tick_id"] for t in self.npc.ai.traces()] == [1, 2]
        assert not self.npc.attributes.has("traces", category="ai")
        assert self.npc.ai.trace(2) == {"tick_id": 2}
        # reading traces never migrates: a list written now stays where it is
        self.npc.attributes.add("traces", [{"tick_id": 9}], category="ai")
        assert startstop.upgrade_stored_layout() == startstop.LAYOUT_VERSION
        assert [t["tick_id"] for t in self.npc.ai.traces()] == [1, 2]
        assert self.npc.attributes.has("traces", category="ai")

    def test_new_npcs_are_tagged_at_creation(self):
        assert lookup.all_ai_npcs() == []  # lookups query the Tag, not every object
        newer = create_object(AIAssistantCharacter, key="Barmaid", location=self.room1)
        self.addCleanup(newer.delete)
        assert lookup.all_ai_npcs() == [newer]


def test_admin_commands_build_on_the_games_default_command_class():
    assert issubclass(AICommand, class_from_module(settings.COMMAND_DEFAULT_CLASS))
