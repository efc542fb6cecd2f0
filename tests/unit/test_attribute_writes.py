"""Attribute writes of one reactor turn go to the database together when the turn ends.

The reactor is a stand-in (a Clock for ``callLater``, the shutdown triggers recorded): what is
tested is when rows reach the database, how many statements carry them, and that nothing
waiting is lost at shutdown or when the batch fails.
"""

import json
import sys
from unittest import mock

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext, override_settings
from evennia.typeclasses.attributes import Attribute
from evennia.utils.create import create_object
from twisted.internet import task
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai import attribute_writes
from evennia_ai.memory.events import Event
from evennia_ai.typeclasses import AIAssistantCharacter

pytestmark = pytest.mark.postgres  # the statement is raw SQL: also run on PostgreSQL


class TurnReactor(task.Clock):
    """A running reactor whose turns end when the test says (``end_turn``)."""

    running = True

    def __init__(self):
        super().__init__()
        self.triggers = []

    def addSystemEventTrigger(self, phase, event, function, *args):
        self.triggers.append((phase, event, function))

    def end_turn(self):
        self.advance(0)

    def shut_down(self):
        for phase, event, function in self.triggers:
            if (phase, event) == ("before", "shutdown"):
                function()


def stored(attr):
    """The value in the database row (not the shared in-memory Attribute)."""
    return Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0]


class TestWritesOfOneTurn(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.others = [
            create_object(AIAssistantCharacter, key=f"Listener{n}", location=self.room1)
            for n in range(3)
        ]
        for npc in [self.npc, *self.others]:
            npc.ai.script.trigger_tick = lambda: None
            npc.ai.set("context_buffer", [])  # the Attributes exist
        self.reactor = TurnReactor()
        for patcher in (
            mock.patch.object(attribute_writes, "reactor", self.reactor),
            mock.patch.object(attribute_writes.threadable, "isInIOThread", return_value=True),
        ):
            patcher.start()
            self.addCleanup(patcher.stop)
        self.addCleanup(attribute_writes.flush)

    def tearDown(self):
        for npc in self.others:
            if npc.ai.script:
                npc.ai.script.delete()
            npc.delete()
        super().tearDown()

    def buffer_attr(self, npc):
        return npc.attributes.get("context_buffer", category="ai", return_obj=True)

    def hear(self, text):
        for npc in [self.npc, *self.others]:
            npc.ai.remember_ambient(text)

    def test_rows_wait_for_the_end_of_the_turn_and_go_in_one_statement(self):
        self.hear("Alice waves.")
        attrs = [self.buffer_attr(npc) for npc in [self.npc, *self.others]]
        assert all(stored(attr) == [] for attr in attrs)  # not yet in the database
        assert [e["text"] for e in self.npc.ai.get("context_buffer")] == ["Alice waves."]
        assert attribute_writes.pending() == 4
        with CaptureQueriesContext(connection) as queries:
            self.reactor.end_turn()
        updates = [q["sql"] for q in queries.captured_queries if "UPDATE" in q["sql"]]
        assert updates == [updates[0]] and updates[0].startswith("4 times: UPDATE"), updates
        assert all([e["text"] for e in stored(attr)] == ["Alice waves."] for attr in attrs)
        assert attribute_writes.pending() == 0

    def test_an_attribute_written_twice_in_a_turn_is_written_once_with_its_last_value(self):
        self.npc.ai.remember_ambient("one")
        self.npc.ai.remember_ambient("two")
        assert attribute_writes.pending() == 1
        self.reactor.end_turn()
        assert [e["text"] for e in stored(self.buffer_attr(self.npc))] == ["one", "two"]

    def test_what_a_tick_reads_before_the_flush_is_the_new_value(self):
        self.npc.ai.perceive(Event.create(kind="say", text="An ale?", source=None))
        assert [e["text"] for e in self.npc.ai.get("event_queue")["events"]] == ["An ale?"]
        self.reactor.end_turn()
        attr = self.npc.attributes.get("event_queue", category="ai", return_obj=True)
        assert [e["text"] for e in stored(attr)["events"]] == ["An ale?"]

    def test_a_lazy_row_goes_with_the_next_batch_and_waits_at_most_a_second(self):
        """A tick's in-flight marks and counter take no transaction of their own: they go
        with the next batch (a later turn's writes), else within LAZY_WRITE_SECONDS."""
        attr = self.buffer_attr(self.npc)
        self.npc.ai.set("context_buffer", [{"text": "marked", "source": None}], lazy=True)
        assert self.npc.ai.get("context_buffer") == [{"text": "marked", "source": None}]
        self.reactor.end_turn()
        assert stored(attr) == []  # no batch of its own at the end of the turn
        self.others[0].ai.remember_ambient("Later, a line heard.")  # a later turn's write
        self.reactor.end_turn()
        assert stored(attr) == [{"text": "marked", "source": None}]
        assert stored(self.buffer_attr(self.others[0]))[0]["text"] == "Later, a line heard."
        self.npc.ai.set("context_buffer", [], lazy=True)  # nothing else is written after it
        self.reactor.advance(attribute_writes.LAZY_WRITE_SECONDS - 0.01)
        assert stored(attr) == [{"text": "marked", "source": None}]
        self.reactor.advance(0.02)
        assert stored(attr) == [] and attribute_writes.pending() == 0
        self.npc.ai.set("context_buffer", [{"text": "x", "source": None}], lazy=True)
        self.reactor.shut_down()  # a reload writes it too
        assert stored(attr) == [{"text": "x", "source": None}]

    def test_a_tick_takes_its_batch_without_a_transaction_of_its_own(self):
        """Taking a batch marks its events in flight (lazy: the server's start clears them)."""
        from evennia_ai.engine.agenda import Agenda

        self.npc.ai.perceive(Event.create(kind="say", text="An ale?", source=None))
        self.reactor.end_turn()
        with mock.patch.object(
            attribute_writes, "save_value", wraps=attribute_writes.save_value
        ) as saved:
            decision = Agenda(self.npc, tick_count=1).choose()
        assert decision.context_type == "tick_event"
        assert saved.call_args.kwargs.get("lazy") is True

    def test_shutdown_writes_what_waits(self):
        self.hear("The bell rings.")
        assert len(self.reactor.triggers) == 1
        self.reactor.shut_down()
        assert attribute_writes.pending() == 0
        assert [e["text"] for e in stored(self.buffer_attr(self.others[0]))] == ["The bell rings."]

    def test_a_failed_batch_is_saved_one_by_one(self):
        self.hear("Thunder.")
        real_cursor = connection.cursor

        def failing():
            cursor = real_cursor()
            cursor.executemany = mock.Mock(side_effect=DatabaseError("boom"))
            return cursor

        with (
            mock.patch.object(connection, "cursor", failing),
            mock.patch.object(attribute_writes.logger, "log_trace") as logged,
        ):
            self.reactor.end_turn()
        assert "one by one" in logged.call_args[0][0]
        assert all(
            [e["text"] for e in stored(self.buffer_attr(npc))] == ["Thunder."]
            for npc in [self.npc, *self.others]
        )

    def test_a_row_that_cannot_be_encoded_is_saved_by_evennia_and_the_rest_in_the_batch(self):
        self.hear("Rain.")
        real = attribute_writes._encoded
        bad = self.buffer_attr(self.others[1])

        def encoded(attr, value, data):
            if attr is bad:
                raise TypeError("cannot pickle")
            return real(attr, value, data)

        with (
            mock.patch.object(attribute_writes, "_encoded", encoded),
            mock.patch.object(bad, "save", wraps=bad.save) as saved,
        ):
            self.reactor.end_turn()
        saved.assert_called_once_with(update_fields=["db_value"])
        assert all(
            [e["text"] for e in stored(self.buffer_attr(npc))] == ["Rain."]
            for npc in [self.npc, *self.others]
        )

    def test_a_value_changed_after_it_was_queued_is_written_as_it_is_at_the_flush(self):
        self.npc.ai.remember_ambient("first")
        attr = self.buffer_attr(self.npc)
        attr.db_value = [{"text": "changed", "source": None}]  # Evennia's own write, same turn
        self.reactor.end_turn()
        assert stored(attr) == [{"text": "changed", "source": None}]

    def test_a_deleted_npc_s_row_is_skipped(self):
        self.others[0].ai.remember_ambient("gone")
        attr = self.buffer_attr(self.others[0])
        attr.delete()
        assert self.reactor.end_turn() is None  # no error
        assert not Attribute.objects.filter(pk=attr.pk or -1).exists()

    def test_monitors_run_when_the_row_is_written(self):
        import evennia

        seen = []
        attr = self.buffer_attr(self.npc)
        with mock.patch.object(evennia, "MONITOR_HANDLER") as monitors:
            monitors.at_update.side_effect = lambda obj, field: seen.append((obj, field))
            self.npc.ai.remember_ambient("watched")
            assert seen == []
            self.reactor.end_turn()
        assert seen == [(attr, "db_value")]

    def test_inside_immediate_every_write_is_saved_at_once(self):
        attr = self.buffer_attr(self.npc)
        with attribute_writes.immediate():
            self.npc.ai.set("context_buffer", [{"text": "a trade"}])
            assert attribute_writes.pending() == 0
            assert stored(attr) == [{"text": "a trade"}]
        self.npc.ai.set("context_buffer", [])
        assert attribute_writes.pending() == 1  # batched again after the block

    @override_settings(EVENNIA_AI_BATCH_WRITES=False)
    def test_switched_off_every_write_is_saved_at_once(self):
        self.npc.ai.remember_ambient("now")
        assert attribute_writes.pending() == 0
        assert [e["text"] for e in stored(self.buffer_attr(self.npc))] == ["now"]

    def test_without_a_running_reactor_every_write_is_saved_at_once(self):
        self.reactor.running = False
        self.npc.ai.remember_ambient("now")
        assert attribute_writes.pending() == 0
        assert [e["text"] for e in stored(self.buffer_attr(self.npc))] == ["now"]


class TestTraceRingSlots(AssistantTestBase):
    def test_the_first_trace_creates_the_ring_in_two_statements_and_later_ones_none(self):
        from evennia_ai.npc.handler import TRACE_CATEGORY

        with CaptureQueriesContext(connection) as queries:
            self.npc.ai.record_trace({"tick_id": 3, "context_type": "tick_event"}, ring=8)
        inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
        assert len(inserts) == 2, inserts  # the Attributes, then their links to the NPC
        slots = self.npc.attributes.get(category=TRACE_CATEGORY, return_list=True, return_obj=True)
        assert sorted(a.db_key for a in slots) == sorted(f"trace_{n}" for n in range(8))
        assert [t["tick_id"] for t in self.npc.ai.traces()] == [3]
        with CaptureQueriesContext(connection) as queries:
            self.npc.ai.record_trace({"tick_id": 4, "context_type": "tick_event"}, ring=8)
        sent = [q["sql"].split()[0] for q in queries.captured_queries]
        assert [verb for verb in sent if verb in ("SELECT", "UPDATE")] == [
            "UPDATE"
        ], sent  # the slot and the ring come from the handler's cache
        assert [t["tick_id"] for t in self.npc.ai.traces()] == [3, 4]
        # what Evennia reads back from the database is the same
        self.npc.attributes.reset_cache()
        assert json.loads(self.npc.attributes.get("trace_4", category=TRACE_CATEGORY)) == {
            "tick_id": 4,
            "context_type": "tick_event",
        }
        assert self.npc.attributes.get("trace_5", category=TRACE_CATEGORY) is None

    def test_slots_that_exist_are_kept(self):
        from evennia_ai.npc.handler import TRACE_CATEGORY

        self.npc.attributes.add("trace_1", {"tick_id": 1}, category=TRACE_CATEGORY)
        self.npc.ai.record_trace({"tick_id": 2, "context_type": "tick_event"}, ring=4)
        assert [t["tick_id"] for t in self.npc.ai.traces()] == [1, 2]
        slots = self.npc.attributes.get(category=TRACE_CATEGORY, return_list=True, return_obj=True)
        assert len(slots) == 4


class TestTraceSlotsHoldText(AssistantTestBase):
    """A slot holds its trace as one JSON string: 100 NPCs' full rings held as dicts took
    53 MB of the server's memory (bench memory_rss)."""

    trace = {
        "tick_id": 7,
        "context_type": "tick_event",
        "iterations": [{"text": "Caf\u00e9 at noon.", "tool_calls": [{"name": "say"}]}],
    }

    def test_a_slot_holds_the_trace_as_json_text_and_reads_back_equal(self):
        from evennia_ai.npc.handler import TRACE_CATEGORY

        self.npc.ai.record_trace(self.trace, ring=4)
        attr = self.npc.attributes.get("trace_3", category=TRACE_CATEGORY, return_obj=True)
        assert isinstance(attr.db_value, str) and json.loads(attr.db_value) == self.trace
        assert "Caf\u00e9" in attr.db_value  # written as the character, not an escape
        with override_settings(EVENNIA_AI_TRACE_RING_SIZE=4):
            assert self.npc.ai.trace(7) == self.trace
            assert self.npc.ai.traces() == [self.trace]
            self.npc.attributes.reset_cache()  # what the database holds reads the same
            assert self.npc.ai.trace(7) == self.trace

    def test_a_slot_holds_less_memory_than_the_dicts(self):
        from evennia_ai.npc.handler import TRACE_CATEGORY

        def size(value) -> int:
            held = sys.getsizeof(value)
            if isinstance(value, dict):
                return held + sum(size(k) + size(v) for k, v in value.items())
            if isinstance(value, list):
                return held + sum(size(item) for item in value)
            return held

        trace = {
            **self.trace,
            "iterations": [
                {"text": f"line {n}", "tool_calls": [{"name": "say", "arguments": {"n": n}}]}
                for n in range(20)
            ],
        }
        self.npc.ai.record_trace(trace, ring=4)
        attr = self.npc.attributes.get("trace_3", category=TRACE_CATEGORY, return_obj=True)
        assert size(attr.db_value) * 3 < size(trace)

    def test_slots_written_as_dicts_by_older_versions_are_read(self):
        from evennia_ai.npc.handler import TRACE_CATEGORY, stored_trace

        self.npc.attributes.add(
            "trace_2", {"tick_id": 6, "context_type": "x"}, category=TRACE_CATEGORY
        )
        with override_settings(EVENNIA_AI_TRACE_RING_SIZE=4):
            assert self.npc.ai.trace(6) == {"tick_id": 6, "context_type": "x"}
            assert [t["tick_id"] for t in self.npc.ai.traces()] == [6]
        assert stored_trace("not json") is None and stored_trace(None) is None
