"""Perception: a line heard by many NPCs wakes the ones the room's floor gives it to, each
with one queue write, one tick start and one shared query embedding (off the reactor); the
others only hear it. Whispers and pages are for their one NPC."""

import threading
from collections import Counter
from types import SimpleNamespace
from unittest import mock

from django.test import override_settings
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.engine import floor
from evennia_ai.memory import longterm
from evennia_ai.memory.events import pending_events, render_events
from evennia_ai.memory.longterm_store import READY, LongTermMemory
from evennia_ai.memory.vector_index import NpcVectorIndex
from evennia_ai.npc import state as state_module
from evennia_ai.npc_state import EVENT_QUEUE
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
        woken = [npc for npc in self.npcs if pending_events(npc.ai.event_queue)]
        assert len(woken) == 1  # a question to the room: one answers it
        assert render_events(pending_events(woken[0].ai.event_queue)) == line
        assert all(t is not threading.current_thread() for t in self.embedder.threads)
        self.char1.at_say("Has anyone seen the cellar key?")  # said again: nothing new
        assert len(self.heard()) == 1

    def test_keyword_recall_embeds_nothing(self):
        with override_settings(EVENNIA_AI_RECALL_MODE="keyword"):
            self.char1.at_say("Has anyone seen the cellar key?")
        assert self.heard() == []


class TestHeardNotWoken(BaseEvenniaTest):
    """Ten AI NPCs and the connected player char1 in room1."""

    def setUp(self):
        super().setUp()
        self.ticks = Counter()
        self.npcs = []
        for number in range(10):
            npc = create_object(AIAssistantCharacter, key=f"Patron{number}", location=self.room1)
            npc.ai.script.trigger_tick = lambda key=npc.key: self.ticks.update([key])
            self.addCleanup(lambda npc=npc: (npc.ai.script.delete(), npc.delete()))
            self.npcs.append(npc)
        self.writes = Counter()
        real_write = state_module.write_attribute

        def counted(obj, key, value, category, **kwargs):
            self.writes[key] += 1
            return real_write(obj, key, value, category, **kwargs)

        for target, name, replacement in (
            (state_module, "write_attribute", counted),
            (longterm, "embed_ahead", mock.Mock(return_value=True)),
        ):
            patcher = mock.patch.object(target, name, replacement)
            patcher.start()
            self.addCleanup(patcher.stop)
        self.embeds = longterm.embed_ahead

    def test_a_listener_not_woken_keeps_the_line_without_queue_tick_or_embedding(self):
        self.char1.at_say("Patron3, the cellar key is under the mat.")
        assert dict(self.ticks) == {"Patron3": 1}
        assert self.embeds.call_count == 1
        for npc in self.npcs:
            queued = pending_events(npc.ai.event_queue)
            if npc.key == "Patron3":
                assert [e.data["floor"] for e in queued] == ["named"]
            else:
                assert queued == []
                assert "under the mat" in str(npc.ai.context_buffer)
                assert floor.heard_notes(npc) == ["heard 1 line(s); not addressed (Char 1)"]

    def test_ten_listeners_cost_one_queue_write_and_one_tick_start(self):
        for line in ("Patron3, the cellar key is under the mat.", "What a lovely evening."):
            self.ticks.clear()
            self.writes.clear()
            self.embeds.reset_mock()
            self.char1.at_say(line)
            assert sum(self.ticks.values()) == 1, line
            assert self.writes[EVENT_QUEUE] == 1, line
            assert self.embeds.call_count == 1, line

    def test_whispers_and_pages_bypass_the_floor_and_are_still_flood_limited(self):
        patron = self.npcs[4]
        with override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=2):
            for i in range(3):
                self.char1.at_say(f"psst {i}", whisper=True, receivers=[patron])
            patron.msg(text=("Char pages: one more", {"type": "page"}), from_obj=self.char1)
        queued = pending_events(patron.ai.event_queue)
        assert [e.text for e in queued] == ["psst 0", "psst 1"]  # the rest was a flood
        assert all(e.addressed and "floor" not in e.data for e in queued)
        assert dict(self.ticks) == {"Patron4": 2}
        assert sum(bool(pending_events(npc.ai.event_queue)) for npc in self.npcs) == 1


class TestReadingOnce:
    """Every listener of one delivery gets the same text: it is read once, never stale."""

    def test_the_same_text_is_read_once_and_a_new_one_anew(self):
        from evennia_ai.npc import perception

        with mock.patch.object(perception, "strip_ansi", wraps=perception.strip_ansi) as strip:
            first = perception._text_and_type(('|rAlice|n says, "Hi."', {"type": "say"}))
            again = perception._text_and_type(('|rAlice|n says, "Hi."', {"type": "say"}))
            other = perception._text_and_type(('|gAlice|n says, "Bye."', {"type": "say"}))
        assert first == again == ('Alice says, "Hi."', "say")
        assert other == ('Alice says, "Bye."', "say")
        assert strip.call_count == 2
        assert perception._speech("say", 'Alice says, "Hi  there."') == (
            "Hi there.",
            'Alice says, "Hi there."',
        )
        assert perception._speech("pose", 'Alice says, "Hi  there."') == (
            'Alice says, "Hi there."',
            'Alice says, "Hi there."',
        )
