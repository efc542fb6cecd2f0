"""What players hear when no model answers: the NPC's own lines, else the settings'.

Issue 35 ("Fallbacks that read well"): past the budget, while held or during an outage no model
is called, so the line is a per-NPC text staff set, with defaults in the NPC's name as written;
a staff text is shown as written (its markup does not run).
"""

from unittest import mock

import pytest
from django.test import override_settings
from support.demo_world import build_demo_world
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine import audience
from evennia_ai.memory import events as ev
from evennia_ai.npc import spending
from evennia_ai.npc.state_keys import CHARACTER_STATE

UNAVAILABLE = "EVENNIA_AI_UNAVAILABLE_MESSAGE"
THINKING = "EVENNIA_AI_THINKING_MESSAGE"
APPROVAL = "EVENNIA_AI_APPROVAL_MESSAGE"


def heard(msg: mock.Mock) -> list[str]:
    return [str(c.args[0] if c.args else c.kwargs.get("text")) for c in msg.call_args_list]


class TestLines(AssistantTestBase):
    def tell(self, setting, speakers=None):
        speakers = [self.char1] if speakers is None else speakers
        with mock.patch.object(self.char1, "msg") as msg:
            told = audience.tell_speakers(self.npc, speakers, setting)
        return told, heard(msg)

    def test_the_defaults_name_the_npc_as_written(self):
        self.npc.key = "Marta McAllister"
        assert self.tell(UNAVAILABLE) == (
            1,
            ["Marta McAllister seems lost in thought and does not answer."],
        )
        assert self.tell(THINKING)[1] == ["Marta McAllister pauses, thinking."]
        assert self.tell(APPROVAL)[1] == [
            'Marta McAllister says, "Let me check with someone first."'
        ]

    def test_the_npcs_own_line_comes_before_the_setting(self):
        self.npc.ai.set("lines", {"unavailable": "{name} is busy at the hearth."})
        with override_settings(EVENNIA_AI_UNAVAILABLE_MESSAGE="{name} is away."):
            assert self.tell(UNAVAILABLE)[1] == ["Innkeeper is busy at the hearth."]
            assert self.tell(THINKING)[1] == ["Innkeeper pauses, thinking."]  # not set: setting

    def test_an_empty_setting_says_nothing_and_an_empty_own_line_is_unset(self):
        self.npc.ai.set("lines", {"thinking": "  "})
        with override_settings(EVENNIA_AI_THINKING_MESSAGE=""):
            assert self.tell(THINKING) == (0, [])
        assert self.tell(THINKING, speakers=[]) == (0, [])

    @override_settings(FUNCPARSER_PARSE_OUTGOING_MESSAGES_ENABLED=True)
    def test_a_staff_line_is_shown_as_written(self):
        self.npc.ai.set("lines", {"approval": "|rRed|n $you() {name} {{name}} {0}"})
        (line,) = self.tell(APPROVAL)[1]
        assert line == "||rRed||n \\$you() Innkeeper {Innkeeper} {0}"

    def test_an_unreadable_stored_value_is_set_aside_for_the_settings(self):
        self.npc.attributes.add("lines", {"unavailable": ["not", "text"]}, category="ai")
        told, lines = self.tell(UNAVAILABLE)
        assert told == 1 and lines[-1] == "Innkeeper seems lost in thought and does not answer."
        assert "its stored lines cannot be read" in lines[0]  # staff online are told once
        assert self.npc.ai.lines == {}
        assert self.npc.ai.state.in_fallback("lines")

    def test_each_speaker_hears_the_name_as_shown_to_them(self):
        self.npc.get_display_name = lambda looker=None, **kw: f"Innkeeper (to {looker.key})"
        with (
            mock.patch.object(self.char1, "msg") as one,
            mock.patch.object(self.char2, "msg") as two,
        ):
            audience.tell_speakers(self.npc, [self.char1, self.char2], THINKING)
        assert heard(one) == ["Innkeeper (to Char) pauses, thinking."]
        assert heard(two) == ["Innkeeper (to Char2) pauses, thinking."]


def test_the_lines_state_is_declared_with_its_shape():
    declared = CHARACTER_STATE["lines"]
    assert declared.default() == {}
    assert declared.schema == {"type": "object", "additionalProperties": {"type": "string"}}


@pytest.mark.parametrize(
    "typed, problem",
    [
        ("", "needs some text"),
        ("x" * 301, "at most 300 characters"),
        ("{nmae} says no.", "not {nmae}"),
    ],
)
def test_a_bad_line_is_refused_in_words(typed, problem):
    with pytest.raises(ValueError, match=problem):
        audience.check_line(typed)


def test_a_line_is_kept_on_one_line():
    assert audience.check_line("  {name} sighs.\n  Not now. ") == "{name} sighs. Not now."


class TestTheDemoOverBudget(AssistantTestBase):
    """The demo's innkeeper past her budget: what the player sees reads well."""

    def setUp(self):
        super().setUp()
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)
        self.demo = build_demo_world()
        self.keeper = self.demo["innkeeper"]
        self.keeper.ai.script.trigger_tick = lambda: None
        self.char1.move_to(self.demo["common"], quiet=True)
        self.addCleanup(self._delete_demo)

    def _delete_demo(self):
        script = self.keeper.ai.script
        if script:
            script.delete()
        for obj in (self.keeper, *self.demo["common"].exits, *self.demo["cellar"].exits):
            obj.delete()

    def ask(self, text="Marta, what is on the menu tonight?"):
        self.char1.at_say(text)
        with mock.patch.object(self.char1, "msg") as msg:
            d = self.keeper.ai.script.run_tick()
            assert d is not None and d.called
        return d.result, " ".join(heard(msg))

    def push_over_budget(self):
        day = spending.today()
        self.keeper.ai.update(
            "metrics", lambda m: {**m, "daily": {day: {"tokens": 5000, "cost": 0.0}}}
        )

    @override_settings(EVENNIA_AI_MODEL="", EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000)
    def test_past_the_budget_the_player_hears_her_own_line_and_no_model_runs(self):
        self.push_over_budget()
        trace, said = self.ask()
        assert trace.stop_reason == "budget" and not trace.iterations
        assert said == 'Innkeeper is run off her feet and waves you off: "Later, love."'
        assert not ev.pending_events(self.keeper.ai.event_queue)

    @override_settings(
        EVENNIA_AI_MODEL="",
        EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000,
        EVENNIA_AI_BUDGET_EXCEEDED_ACTION="offline",
    )
    def test_in_offline_mode_she_neither_echoes_nor_lower_cases_names(self):
        self.push_over_budget()
        for question in (
            "Marta, what is on the menu tonight?",
            "Marta, is the kitchen still open?",
            "Where is Bob the Smith?",
            "Marta, tell me about the festival",
        ):
            trace, said = self.ask(question)
            assert "Innkeeper says" in said, said
            spoken = said.lower()
            assert "marta" not in spoken and "menu" not in spoken and "kitchen" not in spoken
            assert "bob" not in spoken and "festival" not in spoken, said
