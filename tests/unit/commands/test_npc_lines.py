"""``ailines``: staff show, set and reset what an NPC's listeners hear when no model answers."""

from __future__ import annotations

from django.test import override_settings
from evennia.utils.ansi import strip_ansi
from support.commands import AICommandTestBase, words

from evennia_ai.commands.npc_lines import CmdAILines
from evennia_ai.engine import audience


class TestAILines(AICommandTestBase):
    def lines(self, args: str, **kwargs) -> str:
        return words(strip_ansi(self.call(CmdAILines(), args, **kwargs)))

    def test_it_is_for_builders(self):
        assert CmdAILines.locks == "cmd:perm(Builder)"
        self.char1.account.permissions.remove("Developer")
        self.char1.account.permissions.remove("Admin")
        self.char1.permissions.clear()
        self.char1.account.permissions.clear()
        self.char1.account.is_superuser = False
        assert not CmdAILines().access(self.char1, "cmd")

    def test_show_lists_every_kind_with_its_source_and_how_it_is_heard(self):
        out = self.lines("Innkeeper")
        for kind in audience.LINE_KINDS:
            assert f"{kind} - when" in out
        assert "setting EVENNIA_AI_UNAVAILABLE_MESSAGE: {name} seems lost in thought" in out
        assert "heard: Innkeeper seems lost in thought and does not answer." in out

    def test_set_then_show_then_reset(self):
        out = self.lines("/set Innkeeper = unavail {name} is busy at the hearth.")
        assert "Innkeeper's unavailable line is set: {name} is busy at the hearth." in out
        assert "Heard as: Innkeeper is busy at the hearth." in out
        assert self.npc.ai.lines == {"unavailable": "{name} is busy at the hearth."}
        assert "its own: {name} is busy at the hearth." in self.lines("Innkeeper")
        out = self.lines("/reset Innkeeper = unavailable")
        assert "is the setting's again (EVENNIA_AI_UNAVAILABLE_MESSAGE)" in out
        assert self.npc.ai.lines == {}
        assert "has no lines of its own" in self.lines("/reset Innkeeper")

    @override_settings(FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED=True)
    def test_markup_in_a_line_is_shown_as_typed(self):
        out = self.call(CmdAILines(), "/set Innkeeper = approval |rNo|n $you() says {name}")
        # escaped: rendered, the caller reads the codes as typed (no colour ran)
        assert "line is set: |rNo|n \\$you() says {name}" in out
        assert "Heard as: |rNo|n \\$you() says Innkeeper" in out
        assert self.npc.ai.lines["approval"] == "|rNo|n $you() says {name}"

    def test_mistakes_get_clear_messages(self):
        assert "Missing '= <kind> <text>'" in self.lines("/set Innkeeper")
        assert "Missing the text after 'thinking'" in self.lines("/set Innkeeper = thinking")
        assert "'mood' is not a kind of line; the kinds: unavailable, thinking, approval" in (
            self.lines("/set Innkeeper = mood {name} frowns.")
        )
        assert "Only {name} is filled in" in self.lines("/set Innkeeper = thinking {nam} hums.")
        assert "at most 300 characters" in self.lines("/set Innkeeper = thinking " + "a" * 301)
        assert "Use ailines/set to change a line" in self.lines("Innkeeper = thinking hi")
        assert "Unknown switch /wipe" in self.lines("/wipe Innkeeper")
        assert self.npc.ai.lines == {}
