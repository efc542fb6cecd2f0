"""The shared base of the admin command tests: one AI NPC, synchronous threads, no ticks."""

from __future__ import annotations

from unittest import mock

from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaCommandTest
from twisted.internet import defer

from evennia_ai.llm import client as client_module
from evennia_ai.npc import spending
from evennia_ai.npc.lookup import all_ai_npcs
from evennia_ai.typeclasses import AIAssistantCharacter


def words(text) -> str:
    """``text`` with its whitespace collapsed: what a reply says, whatever its line breaks.

    Replies are wrapped to the client's width (:func:`evennia_ai.screen.fit_lines`); tests that
    check what a reply says compare its words, and ``tests/unit/commands/test_columns.py``
    checks the layout.
    """
    return " ".join(str(text).split())


def sync_thread(fn, *args, **kwargs):
    """A stand-in for ``defer_to_thread`` that calls at once (the Deferred has fired)."""
    return defer.maybeDeferred(fn, *args, **kwargs)


class AICommandTestBase(BaseEvenniaCommandTest):
    """``self.npc`` is the Innkeeper (an AI NPC in room1) whose ticks never start on their own.

    Model calls and long-term memory calls run synchronously; every AI NPC a test created is
    deleted afterwards, and the budget cache starts empty.
    """

    npc_aliases: tuple[str, ...] = ()

    def setUp(self):
        super().setUp()
        from evennia_ai.memory import longterm

        spending.reset_cache()
        for module in (client_module, longterm):
            patcher = mock.patch.object(module, "defer_to_thread", sync_thread)
            patcher.start()
            self.addCleanup(patcher.stop)
        self.npc = self.make_npc("Innkeeper", aliases=list(self.npc_aliases))
        self.npc.ai.set_persona("A warm innkeeper.")

    def make_npc(self, key: str, **kwargs):
        """Another AI NPC in room1, quiet like the Innkeeper."""
        npc = create_object(AIAssistantCharacter, key=key, location=self.room1, **kwargs)
        npc.ai.script.trigger_tick = lambda: None
        return npc

    def tearDown(self):
        for npc in all_ai_npcs():
            script = npc.ai.script
            if script:
                script.delete()
            npc.delete()
        spending.reset_cache()
        super().tearDown()

    def call_says(self, cmdobj, input_args: str, expected: str, **kwargs) -> str:
        """Run ``cmdobj`` and check that its reply starts with ``expected`` word for word, the
        line breaks of the wrapping aside (:func:`words`). Returns the reply as sent."""
        out = self.call(cmdobj, input_args, **kwargs)
        assert words(out).startswith(words(expected)), f"wanted {expected!r}, got {out!r}"
        return out

    def player(self):
        """``char2`` with only the Player permission (on its account and itself)."""
        return self.with_permission("Player")

    def builder(self):
        """``char2`` with only the Builder permission (``char1`` is a Developer)."""
        return self.with_permission("Builder")

    def with_permission(self, permission: str):
        """``char2`` with only ``permission`` (on its account and itself)."""
        self.char2.account.permissions.clear()
        self.char2.account.permissions.add(permission)
        self.char2.permissions.clear()
        return self.char2
