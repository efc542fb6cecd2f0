"""One state through the request: the context builder and its sources read a PromptSnapshot.

The snapshot is read once from ``npc.ai`` (:meth:`PromptSnapshot.read`); a build given one reads
the NPC's own state from it alone, so a snapshot whose values differ from ``npc.ai`` decides the
request.
"""

from __future__ import annotations

import copy
import json
from dataclasses import fields, replace
from types import SimpleNamespace
from unittest import mock

from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.memory.events import pending_events
from evennia_ai.npc.state import AttributeState
from evennia_ai.prompt import snapshot as snapshot_module
from evennia_ai.prompt.builder import ContextBuilder
from evennia_ai.prompt.contexts import CONTEXT_TYPES, get_context_config
from evennia_ai.prompt.snapshot import PromptSnapshot
from evennia_ai.workspace.goals import add_goal
from evennia_ai.workspace.journal import add_entry

#: State a build may still read from ``npc.ai`` itself: the memory-block sources
#: (prompt/block_sources.py and memory/block_admin.py read the NPC's blocks, the blocks shared
#: with it and its archive), which are not part of this change.
BLOCK_KEYS = {"blocks", "blocks_shared_in", "archival"}


class SnapshotBase(AssistantTestBase):
    def setUp(self):
        super().setUp()
        ai = self.npc.ai
        ai.set_user_system_prompt("Serve ale only.")
        ai.set_assistant_system_prompt("Greet every guest by name.")
        ai.update_goals(lambda goals: add_goal(goals, "Bake bread", tick=1)[0])
        ai.update("journal", lambda journal: add_entry(journal, "The ale is fresh.")[0])
        ai.set("history", [{"role": "user", "content": "Alice says: the ale is fresh"}])

    def batch(self, context: str) -> list:
        return pending_events(self.npc.ai.event_queue) if context == "tick_event" else []

    def build(self, context: str, snapshot: PromptSnapshot | None = None, batch=None):
        batch = self.batch(context) if batch is None else batch
        builder = ContextBuilder(
            self.npc,
            get_context_config(context),
            snapshot=snapshot,
            batch=batch,
            tool_result="Nothing found." if context == "reflection_cont" else None,
            extra={"pending_event": "Plan: bake bread."} if context == "goal_decompose" else None,
        )
        return builder.build().result


class TestRead(SnapshotBase):
    def test_read_takes_every_value_from_npc_ai(self):
        snapshot = PromptSnapshot.read(self.npc)
        ai = self.npc.ai
        for field in fields(PromptSnapshot):
            expected = getattr(ai, field.name)
            assert getattr(snapshot, field.name) == (
                expected or "" if field.name == "model" else expected
            ), field.name
        assert snapshot.persona == "A warm innkeeper."
        assert snapshot.goals[0]["description"] == "Bake bread"

    def test_metrics_read_already_are_kept(self):
        metrics = {"ticks": 41}
        assert PromptSnapshot.read(self.npc, metrics=metrics).metrics is metrics


class TestTheSnapshotDecidesTheRequest(SnapshotBase):
    def other(self) -> PromptSnapshot:
        """The NPC's snapshot with every value the request shows changed."""
        return replace(
            PromptSnapshot.read(self.npc),
            persona="A grumpy blacksmith.",
            user_system_prompt="Never mention ale.",
            assistant_system_prompt="Speak in rhymes.",
            goals=add_goal([], "Forge a sword", tick=1)[0],
            history=[{"role": "user", "content": "Bob says: the forge is hot"}],
            journal=add_entry([], "The anvil cracked.")[0],
        )

    def test_a_tick_request_shows_the_snapshot_not_npc_ai(self):
        self.speak("Hello Innkeeper!")
        text = json.dumps(self.build("tick_event", self.other()).messages)
        for shown in (
            "grumpy blacksmith",
            "Never mention ale.",
            "Speak in rhymes.",
            "Forge a sword",
            "the forge is hot",
        ):
            assert shown in text, shown
        for hidden in (
            "warm innkeeper",
            "Serve ale only.",
            "Greet every guest",
            "Bake bread",
            "the ale is fresh",
        ):
            assert hidden not in text, hidden

    def test_a_task_reads_the_snapshot_not_npc_ai(self):
        text = json.dumps(self.build("reflection", self.other()).messages)
        assert "The anvil cracked." in text and "The ale is fresh." not in text

    def test_the_snapshot_model_is_the_requests(self):
        snapshot = replace(PromptSnapshot.read(self.npc), model="openai/from-snapshot")
        builder = ContextBuilder(self.npc, get_context_config("tick_event"), snapshot=snapshot)
        assert builder.model == "openai/from-snapshot"
        given = ContextBuilder(
            self.npc, get_context_config("tick_event"), snapshot=snapshot, model="openai/given"
        )
        assert given.model == "openai/given"


class TestReadOnce(SnapshotBase):
    def reads(self, context: str, snapshot: PromptSnapshot | None) -> list[str]:
        """The NPC state keys read while ``context``'s request is built."""
        read: list[str] = []
        batch = self.batch(context)  # the tick's batch, taken before the tick reads its state
        original = AttributeState.get

        def recording(state, key, *args, **kwargs):
            read.append(key)
            return original(state, key, *args, **kwargs)

        with mock.patch.object(AttributeState, "get", recording):
            self.build(context, snapshot, batch)
        return read

    def test_with_a_snapshot_no_source_reads_npc_ai(self):
        self.speak("Hello Innkeeper!")
        for context in CONTEXT_TYPES:
            snapshot = PromptSnapshot.read(self.npc)
            read = set(self.reads(context, snapshot)) - BLOCK_KEYS
            assert not read, (context, sorted(read))

    def test_without_a_snapshot_the_builder_reads_one_once(self):
        self.speak("Hello Innkeeper!")
        for context in ("tick_event", "reflection", "sleep_consolidate"):
            with mock.patch.object(
                snapshot_module.PromptSnapshot, "read", wraps=PromptSnapshot.read
            ) as read:
                built = self.build(context)
            assert read.call_count == 1, context
            assert "Serve ale only." in json.dumps(built.messages)

    def test_building_leaves_the_snapshot_as_it_was(self):
        self.speak("Hello Innkeeper!")
        for context in CONTEXT_TYPES:
            snapshot = PromptSnapshot.read(self.npc)
            before = copy.deepcopy(snapshot)
            self.build(context, snapshot)
            assert snapshot == before, context

    def test_the_same_snapshot_builds_the_same_request_as_reading_npc_ai(self):
        self.speak("Hello Innkeeper!")
        for context in CONTEXT_TYPES:
            with_snapshot = self.build(context, PromptSnapshot.read(self.npc))
            without = self.build(context)
            assert with_snapshot.messages == without.messages, context


def test_a_builder_given_values_reads_no_state():
    """The pure build step (the replay's) needs only the NPC's model: no snapshot is read."""
    npc = SimpleNamespace(ai=SimpleNamespace(model=None), ndb=SimpleNamespace(), key="Bob")
    builder = ContextBuilder(npc, get_context_config("tick_event"), metrics={})
    builder._task = None
    built = builder.finish({"system_prompt": "You are Bob.", "pending_event": "Alice waves."})
    assert built.messages[0]["content"].endswith("You are Bob.")
    assert builder._snapshot is None
