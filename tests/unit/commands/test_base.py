"""AICommand's words for people: a fault of the plugin, and a value kept aside, in words.

Issue 35 ("Messages for people"): the generic error reply named the exception's class and
quoted its message ("aistatus failed: ValueError: <object at 0x...>"), and ``aistatus`` showed a
value kept aside as a Python repr (``value {'tokens': -1}``).
"""

from __future__ import annotations

import re
from unittest import mock

from evennia.utils.test_resources import BaseEvenniaCommandTest
from support.commands import words

from evennia_ai.commands import base
from evennia_ai.commands.base import AICommand, internal_error_text, plain_value
from evennia_ai.commands.npcs import CmdAIStatus

#: What a Python repr or an exception's name looks like in a reply.
PYTHON_TEXT = re.compile(r"object at 0x|<[A-Za-z_.]+[ >]|\b[A-Z]\w*(?:Error|Exception)\b|Traceback")


class CmdAIBroken(AICommand):
    """
    Fails on purpose.

    Usage:
      aibroken
    """

    key = "aibroken"
    needs_args = False

    def run(self):
        raise ValueError("bad value <evennia_ai.Thing object at 0x7f60dda1d0a0>")


class TestInternalError(BaseEvenniaCommandTest):
    def test_the_caller_reads_a_sentence_and_the_log_has_the_traceback(self):
        with mock.patch.object(base.logger, "log_trace") as log_trace:
            out = self.call(CmdAIBroken(), "", caller=self.char1)
        assert words(out) == internal_error_text("aibroken")
        assert words(out) == (
            "aibroken stopped on an internal error: a fault in the plugin, not in what you "
            "typed. The server log has the details (search it for 'command aibroken failed')."
        )
        assert not PYTHON_TEXT.search(out), out
        log_trace.assert_called_once_with("evennia_ai: command aibroken failed")


class TestKeptAsideValue(BaseEvenniaCommandTest):
    def setUp(self):
        super().setUp()
        from evennia.utils.create import create_object

        from evennia_ai.typeclasses import AIAssistantCharacter

        self.npc = create_object(AIAssistantCharacter, key="Marta", location=self.room1)
        self.addCleanup(self.npc.delete)

    def test_aistatus_shows_a_kept_aside_value_plainly(self):
        self.npc.attributes.add("metrics", "lots", category="ai")
        self.npc.attributes.add("budget", {"tokens": -1, "note": "x"}, category="ai")
        out = words(self.call(CmdAIStatus(), "Marta", caller=self.char1))
        assert "value lots (aistatus/restore" in out, out
        assert 'value {"note": "x", "tokens": -1} (aistatus/restore' in out, out
        assert "'lots'" not in out and "{'tokens'" not in out


def test_plain_value():
    assert plain_value("lots") == "lots"
    assert plain_value(None) == "(none)"
    assert plain_value(True) == "yes" and plain_value(3) == "3" and plain_value(0.5) == "0.5"
    assert plain_value({"b": [1, 2], "a": "x"}) == '{"a": "x", "b": [1, 2]}'
    assert plain_value(("x",)) == '["x"]'
    assert plain_value("line one\nline two") == "line one line two"
    cut = plain_value("y" * 300, 120)
    assert len(cut) == 120 and cut.endswith("...")

    class Thing:
        def __str__(self):
            return "a thing"

    assert plain_value({"k": Thing()}) == '{"k": "a thing"}'
