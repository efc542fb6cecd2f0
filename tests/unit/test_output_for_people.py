"""Output for people: one format for numbers, money and times, and tables that fit the client.

The formatters are pure (:mod:`evennia_ai.formatting`); the command tests render every table
an AI command prints at 80 and 60 columns; the dashboard tests are in
``tests/unit/web/test_web_api.py``.
"""

from datetime import datetime, timedelta, timezone

import pytest
from evennia.utils.ansi import strip_ansi
from support.commands import AICommandTestBase, words

from evennia_ai import formatting as fmt
from evennia_ai.commands import memory, npcs, prompts, runtime
from evennia_ai.commands.tables import display_width, fit_widths, longest_word
from evennia_ai.engine.trace import IterationTrace, TickTrace
from evennia_ai.tools.approvals import get_confirmation_queue

NOW = datetime(2026, 11, 25, 14, 3, 7, tzinfo=timezone.utc)


# -- formatters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, shown",
    [(149483, "149,483"), (0, "0"), (None, "0"), ("12", "12"), ("many", "-"), (7.9, "7")],
)
def test_count(value, shown):
    assert fmt.count(value) == shown


@pytest.mark.parametrize(
    "value, shown",
    [
        (0, "$0.00"),
        (None, "$0.00"),
        (0.0123456, "$0.0123"),
        (0.00042, "$0.0004"),
        (0.00001, "<$0.0001"),
        (0.5, "$0.5000"),
        (1.234, "$1.23"),
        (1204.5, "$1,204.50"),
        (-0.25, "-$0.2500"),
        ("x", "-"),
    ],
)
def test_money_has_one_rule(value, shown):
    assert fmt.money(value) == shown


@pytest.mark.parametrize(
    "part, whole, shown",
    [
        (12, 100, "12%"),
        (0, 100, "0%"),
        (1, 1000, "<1%"),
        (3, 2, "150%"),
        (5, 0, "-"),
        (1, "x", "-"),
    ],
)
def test_percent(part, whole, shown):
    assert fmt.percent(part, whole) == shown


def test_timestamps_without_microseconds_in_one_form():
    for value in (
        "2026-11-25T14:03:07.123456Z",
        "2026-11-25T14:03:07Z",
        "2026-11-25T15:03:07.5+01:00",
        NOW,
        NOW.replace(tzinfo=None),
    ):
        assert fmt.timestamp(value) == "2026-11-25 14:03:07 UTC", value
    assert fmt.timestamp(None) == fmt.timestamp("") == "-"
    assert fmt.timestamp("never") == "never"
    assert fmt.date("2026-11-25T23:59:59.9Z") == "2026-11-25" and fmt.date(None) == "-"


@pytest.mark.parametrize(
    "seconds_before, shown",
    [(2, "just now"), (45, "45 s ago"), (190, "3 min ago"), (7300, "2 h ago")]
    + [(86400, "1 day ago"), (3 * 86400 + 5, "3 days ago"), (-120, "in 2 min")],
)
def test_ago(seconds_before, shown):
    assert fmt.ago(NOW - timedelta(seconds=seconds_before), now=NOW) == shown


def test_ago_of_nothing():
    assert fmt.ago("", now=NOW) == fmt.ago("soon", now=NOW) == "-"


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (0.021, "21 ms"),
        (0.0004, "0 ms"),
        (0.9, "900 ms"),
        (0.9996, "1.0 s"),
        (4.24, "4.2 s"),
        (59.96, "1 min 00 s"),
        (125, "2 min 05 s"),
        (None, "-"),
        (-1, "-"),
    ],
)
def test_duration(seconds, shown):
    assert fmt.duration(seconds) == shown


def test_steps_are_numbered_from_one():
    assert fmt.step_label(0, "act") == "step 1"
    assert fmt.step_label(4) == "step 5"
    assert fmt.step_label(-1, "assessment") == "assessment"
    assert fmt.step_label(None) == "other call"


def test_arguments_read_as_names_and_values():
    args = {"message": "Hello\n  there", "count": 1200, "loud": True, "to": ["Bob", "Ann"]}
    assert fmt.argument_items(args) == [
        ("message", "Hello there"),
        ("count", "1,200"),
        ("loud", "yes"),
        ("to", "Bob, Ann"),
    ]
    assert fmt.arguments_text({"where": {"room": "#2"}}) == 'where: {"room": "#2"}'
    assert fmt.arguments_text({}) == "(none)"
    assert fmt.argument_items('{"a": null}') == [("a", "(none)")]
    assert fmt.argument_items("plain") == [("value", "plain")]


@pytest.mark.parametrize(
    "result, shown",
    [
        ('{"success": false, "error": "no such exit"}', "no such exit"),
        ('{"success": true}', "done"),
        ('{"success": true, "message": "Moved north."}', "Moved north."),
        ('{"success": true, "room": "Hall", "exits": 3}', "room: Hall; exits: 3"),
        ("You said hello.", "You said hello."),
        ("{not json", "{not json"),
        (None, ""),
    ],
)
def test_results_read_in_words(result, shown):
    assert fmt.result_text(result) == shown


def test_decisions_in_a_sentence():
    entry = {"id": "c_1", "npc_key": "Marta", "action": "dig", "status": "approved"}
    assert fmt.decision_text({**entry, "result": '{"success": true}'}) == (
        "Approved c_1: Marta's dig ran. Done."
    )
    failed = {**entry, "status": "failed", "result": '{"success": false, "error": "too hard"}'}
    assert fmt.decision_text(failed) == "Approved c_1, but Marta's dig failed. Too hard."
    rejected = {**entry, "status": "rejected", "result": "not now"}
    assert fmt.decision_text(rejected) == (
        "Rejected c_1: Marta's dig did not run. Reason given: not now."
    )
    assert fmt.decision_text({**entry, "status": "rejected", "result": ""}) == (
        "Rejected c_1: Marta's dig did not run."
    )
    tool = {"payload": {"arguments": {"message": "hi"}}}
    block = {"payload": {"label": "notes", "op": "append"}}
    assert fmt.action_arguments(tool) == {"message": "hi"}
    assert fmt.action_arguments(block) == {"label": "notes", "op": "append"}


# -- column fitting ---------------------------------------------------------------------------------
def test_columns_that_fit_are_left_alone():
    assert fit_widths([5, 10, 3], 40) == [5, 10, 3]


def test_narrow_and_kept_columns_keep_their_width():
    widths = fit_widths([10, 40, 4, 30], 50, keep=(0,))
    assert widths[0] == 10 and widths[2] == 4 and sum(widths) <= 50
    assert widths[1] == widths[3] == 18  # the wide ones share what is left


def test_words_are_kept_whole_when_they_fit():
    # "Iterations" (10) and "DANGEROUS" (9) stay whole; the wide column gives way
    widths = fit_widths([17, 13, 10, 17], 50, keep=(0,), words=[17, 13, 10, 9])
    assert widths[0] == 17 and widths[2] == 10 and widths[3] >= 9 and sum(widths) <= 50
    assert fit_widths([20, 20], 10, words=[15, 15]) == [5, 5]  # words cannot fit: cut


def test_kept_columns_give_way_when_nothing_else_fits():
    widths = fit_widths([30, 30, 30], 20, keep=(0, 1))
    assert sum(widths) <= 20 and min(widths) >= 1


def test_display_width_ignores_colour_markup():
    assert display_width("|gallowed|n") == 7
    assert display_width("ab\nabcd") == 4
    assert longest_word("Sub-agents |wconfirm|n") == 7


# -- every table an AI command prints ------------------------------------------------------------------
class TestTablesFitTheClient(AICommandTestBase):
    def setUp(self):
        super().setUp()
        self.npc.ai.set_model("openai/a-model-with-a-rather-long-provider-name-v2")
        self.call(memory.CmdAIBlock(), "/create Innkeeper = notes_about_the_regulars_of_the_inn")
        self.queue = get_confirmation_queue()
        self.queue.add_entry(
            self.npc,
            "execute_command",
            {"arguments": {"command": "dig north = The cellar of the inn " * 4}},
            reason="The guest asked for a new room under the tavern, with stairs and a door",
        )
        self.call(runtime.CmdAITools(), "/addrule Innkeeper = requires_prior give look")

    def tearDown(self):
        self.queue.delete()
        super().tearDown()

    def tables(self) -> list:
        return [
            (npcs.CmdAINpc(), "/list"),
            (runtime.CmdAITools(), "Innkeeper"),
            (runtime.CmdAITools(), "/rules Innkeeper"),
            (runtime.CmdAIConfirm(), ""),
            (memory.CmdAIHistory(), "Innkeeper"),
            (memory.CmdAIBlock(), "Innkeeper"),
            (prompts.CmdAIPrompt(), "/list"),
            (prompts.CmdAIPrompt(), "/list tick_event"),
            (prompts.CmdAITemplate(), "/list"),
            (prompts.CmdAIContext(), "/list"),
            (prompts.CmdAIExec(), "Innkeeper"),
        ]

    def check(self, width: int) -> None:
        self.session.protocol_flags["SCREENWIDTH"] = {0: width}
        for cmd, args in self.tables():
            out = strip_ansi(self.call(cmd, args, None, caller=self.char1))
            rows = [line for line in out.split("\n") if line.startswith(("+", "|"))]
            assert rows, (cmd.key, args, out)
            too_long = [line for line in rows if len(line) > width]
            assert not too_long, (cmd.key, args, width, too_long)

    def test_at_80_columns(self):
        self.check(80)

    def test_at_60_columns(self):
        self.check(60)

    def test_ids_do_not_wrap(self):
        self.session.protocol_flags["SCREENWIDTH"] = {0: 60}
        entry = self.queue.list_entries()[0]
        out = self.call(runtime.CmdAIConfirm(), "", None)
        assert f"| {entry['id']} " in out and "command:" in out and "reason:" in out
        assert "just now" in out or " s ago" in out  # the Since column is relative


class TestFormatsInGame(AICommandTestBase):
    def test_trace_shows_durations_steps_and_money_by_the_rules(self):
        trace = TickTrace(
            tick_id=4,
            context_type="tick_event",
            started="2026-11-25T14:03:07.123456Z",
            stop_reason="terminal_tool",
        )
        trace.add_iteration(
            IterationTrace(
                index=0,
                kind="act",
                usage={"prompt_tokens": 149000, "completion_tokens": 483},
                cost=0.0123456,
                latency=0.021,
                model="openai/test",
            )
        )
        trace.ended = "2026-11-25T14:03:07.144456Z"
        trace.duration = 0.021
        self.npc.ai.record_trace(trace.to_dict())
        out = words(self.call(runtime.CmdAITrace(), "Innkeeper", None))  # lines wrapped
        assert "#4 2026-11-25 14:03:07 UTC tick_event" in out
        assert "149,483 tokens, $0.0123, 21 ms" in out
        out = words(self.call(runtime.CmdAITrace(), "/show Innkeeper = 4", None))
        assert "started 2026-11-25 14:03:07 UTC, ended 2026-11-25 14:03:07 UTC, 21 ms" in out
        assert "step 1 (act, openai/test, 149,000+483 tokens, 21 ms)" in out
        assert ".123456" not in out and "0.0s" not in out

    def test_aistatus_money_and_counts(self):
        metrics = self.npc.ai.metrics
        metrics.update(prompt_tokens=149000, completion_tokens=1483, cost=1234.5)
        self.npc.ai.set("metrics", metrics)
        out = words(self.call(npcs.CmdAIStatus(), "Innkeeper", None))
        assert "total prompt 149,000, completion 1,483, cost $1,234.50" in out
        assert "(cost $0.00)" in out  # nothing spent today
