"""Perception starts the recall's query embedding once per heard line, off the reactor."""

import threading
from types import SimpleNamespace
from unittest import mock

from django.test import override_settings
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.memory import longterm
from evennia_ai.memory.events import pending_events, render_events
from evennia_ai.memory.longterm_store import READY, LongTermMemory
from evennia_ai.memory.vector_index import NpcVectorIndex
from evennia_ai.typeclasses import AIAssistantCharacter


class Embedder:
    def __init__(self):
        self.calls, self.threads = [], []

    def embed(self, text, memory_action=None):
        self.calls.append(text)
        self.threads.append(threading.current_thread())
        return [1.0, 0.5, 0.25]


class TestHeardLinesAreEmbeddedOnce(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.embedder = Embedder()
        memory = LongTermMemory(self.id())
        memory.state = READY
        memory.memory = SimpleNamespace(embedding_model=self.embedder)
        memory.vector_index = NpcVectorIndex()
        self.memory = memory
        patcher = mock.patch.object(longterm, "_MEMORY", memory)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(memory.close)
        self.npcs = []
        for number in range(10):
            npc = create_object(AIAssistantCharacter, key=f"Patron{number}", location=self.room1)
            npc.ai.script.trigger_tick = lambda: None  # no tick runs by itself in a test
            self.npcs.append(npc)

    def tearDown(self):
        for npc in self.npcs:
            npc.ai.script.delete()
            npc.delete()
        super().tearDown()

    def heard(self):
        self.memory.query_embeddings.start("(flush)").result(10)  # the embedder threads are done
        return [text for text in self.embedder.calls if text != "(flush)"]

    def test_ten_listeners_cost_one_embedding_of_what_their_ticks_search(self):
        self.char1.at_say("Has anyone seen the cellar key?")
        assert len(self.heard()) == 1
        (line,) = self.heard()
        for npc in self.npcs:  # the text each NPC's tick recalls memories for
            assert render_events(pending_events(npc.ai.event_queue)) == line
        assert all(t is not threading.current_thread() for t in self.embedder.threads)
        self.char1.at_say("Has anyone seen the cellar key?")  # said again: nothing new
        assert len(self.heard()) == 1

    def test_keyword_recall_embeds_nothing(self):
        with override_settings(EVENNIA_AI_RECALL_MODE="keyword"):
            self.char1.at_say("Has anyone seen the cellar key?")
        assert self.heard() == []
