"""AttributeState.append: one entry added to a list-valued key, only that entry checked."""

from unittest import mock

import pytest
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai import attribute_writes
from evennia_ai.npc import state as state_module
from evennia_ai.npc.state_keys import shape_problem


def line(n: int) -> dict:
    return {"text": f"line {n}", "source": None, "ts": f"2026-11-02T10:00:{n:02d}.000000Z"}


class TestAppend(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.state = self.npc.ai.state
        self.saved: list[str] = []
        save = attribute_writes.save_value

        def counted(attr, *args, **kwargs):
            self.saved.append(attr.db_key)
            return save(attr, *args, **kwargs)

        patcher = mock.patch.object(attribute_writes, "save_value", counted)
        patcher.start()
        self.addCleanup(patcher.stop)

    def checks(self):
        return mock.patch.object(state_module, "shape_problem", wraps=shape_problem)

    def test_append_checks_only_the_new_entry_and_falls_back_when_set_aside(self):
        self.state.set("context_buffer", [line(n) for n in range(20)])
        self.saved.clear()
        with self.checks() as checked:
            dropped = self.state.append("context_buffer", line(20), 20)
        assert checked.call_args_list == []  # any dict is a buffer entry: not even the new one
        assert dropped == [line(0)]  # oldest out
        assert self.state.get("context_buffer") == [line(n) for n in range(1, 21)]
        assert self.saved == ["context_buffer"]  # one write
        # the stored value is what a fresh read of the database gives
        attr = self.npc.attributes.get("context_buffer", category="ai", return_obj=True)
        attr.refresh_from_db()
        assert [e["text"] for e in attr.value] == [f"line {n}" for n in range(1, 21)]

        # a wrong entry is refused, naming the key and the place; nothing is written
        with pytest.raises(ValueError, match=r"context_buffer\[20\] must be object, not string"):
            self.state.append("context_buffer", "a bare line", 20)
        assert len(self.state.get("context_buffer")) == 20 and self.saved == ["context_buffer"]

        # a stored value of the wrong shape (a hand edit): set aside, never appended to
        self.npc.attributes.add("context_buffer", "text", category="ai")
        with mock.patch.object(state_module.logger, "log_warn") as warn:
            assert self.state.append("context_buffer", line(21), 20) == []
        assert warn.call_count == 1  # set aside, and said once
        assert self.state.kept("context_buffer")["value"] == "text"
        assert self.state.get("context_buffer") == [line(21)]  # a new value ends the fallback
        assert not self.state.in_fallback("context_buffer")

        # while set aside (nothing stored since), the checked path writes the first entry
        self.npc.attributes.add("context_buffer", [["not", "a", "dict"]], category="ai")
        self.state.get("context_buffer")  # read: set aside now
        assert self.state.in_fallback("context_buffer")
        with self.checks() as checked:
            self.state.append("context_buffer", line(22), 20)
        assert checked.call_args.args[0] == [line(22)]  # the whole new value was checked
        assert self.state.get("context_buffer") == [line(22)]

    def test_append_unbounded_and_its_refusals(self):
        for n in range(3):
            self.state.append("journal", {"content": f"entry {n}"})
        assert [e["content"] for e in self.state.get("journal")] == [
            "entry 0",
            "entry 1",
            "entry 2",
        ]
        with pytest.raises(ValueError, match="at least 1"):
            self.state.append("journal", {"content": "x"}, 0)
        with pytest.raises(TypeError, match="does not hold a list"):
            self.state.append("metrics", {"ticks": 1})
        with pytest.raises(KeyError, match="not declared"):
            self.state.append("no_such_key", {})

    def test_extend_adds_several_in_one_write_and_checks_each_where_the_shape_says(self):
        self.state.set("context_buffer", [line(n) for n in range(3)])
        self.saved.clear()
        dropped = self.state.extend("context_buffer", [line(3), line(4)], 4)
        assert dropped == [line(0)] and self.saved == ["context_buffer"]
        assert self.state.get("context_buffer") == [line(n) for n in range(1, 5)]
        self.state.append("history", {"role": "user", "content": "hi", "batch": 1})
        before = self.state.get("history")
        with pytest.raises(ValueError, match=r"history\[2\]"):
            self.state.extend(
                "history",
                [{"role": "user", "content": "ok", "batch": 2}, {"role": 5, "content": "x"}],
            )
        assert self.state.get("history") == before  # nothing written

    def test_the_appended_entry_is_a_copy(self):
        entry = line(1)
        self.state.append("context_buffer", line(0), 5)
        self.state.append("context_buffer", entry, 5)  # the fast path
        entry["text"] = "changed afterwards"
        assert [e["text"] for e in self.state.get("context_buffer")] == ["line 0", "line 1"]


class TestAttributeLookup(AssistantTestBase):
    """The state reads an Attribute from the handler's cache when Evennia's look-up would
    return that one, and goes through Evennia's look-up otherwise."""

    def test_changes_made_through_evennia_are_seen(self):
        state = self.npc.ai.state
        state.append("context_buffer", line(0), 5)
        cached = state._attribute("context_buffer")
        assert cached is self.npc.attributes.get("context_buffer", category="ai", return_obj=True)
        # a value written by Evennia's own add is read, and appended to on the checked path
        self.npc.attributes.add("context_buffer", [line(5)], category="ai")
        assert state.get("context_buffer") == [line(5)]
        state.append("context_buffer", line(6), 5)
        assert state.get("context_buffer") == [line(5), line(6)]
        # removed through Evennia: the key reads as its default, and a new value is stored
        self.npc.attributes.remove("context_buffer", category="ai")
        assert state._attribute("context_buffer") is None
        assert state.get("context_buffer") == []
        state.append("context_buffer", line(7), 5)
        assert state.get("context_buffer") == [line(7)]
        assert state._attribute("context_buffer") is not cached

    def test_an_attribute_deleted_from_elsewhere_is_looked_up(self):
        state = self.npc.ai.state
        state.append("context_buffer", line(0), 5)
        attr = state._attribute("context_buffer")
        with mock.patch.object(
            self.npc.attributes, "get", wraps=self.npc.attributes.get
        ) as looked_up:
            assert state._attribute("context_buffer") is attr
            assert looked_up.call_count == 0  # from the cache
            pk, attr.id = attr.id, None  # as a delete leaves the object: Evennia's look-up
            try:
                state._attribute("context_buffer")
            finally:
                attr.id = pk
            assert looked_up.call_count == 1

    def test_without_a_cache_evennia_s_look_up_is_used(self):
        state = self.npc.ai.state
        state.append("context_buffer", line(0), 5)
        backend = self.npc.attributes.backend
        with mock.patch.object(backend, "_cache", {}):  # nothing cached
            with mock.patch.object(
                self.npc.attributes, "get", wraps=self.npc.attributes.get
            ) as looked_up:
                state._attribute("context_buffer")
        assert looked_up.call_count == 1
