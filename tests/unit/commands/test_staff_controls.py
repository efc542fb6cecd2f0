"""Staff controls in game: tool rules (aitools), an NPC's own budget (ainpc/budget) and the
history and compaction view (aihistory), each viewed at Builder and changed at Developer."""

from unittest import mock

import pytest
from django.test import override_settings
from support.commands import AICommandTestBase, words

from evennia_ai.commands.memory import CmdAIHistory
from evennia_ai.commands.npcs import CmdAINpc
from evennia_ai.commands.runtime import CmdAITools
from evennia_ai.engine.upkeep import history_pressure
from evennia_ai.memory.compression import SUMMARY_BATCH
from evennia_ai.prompt.operator import section_for
from evennia_ai.screen import plain_words

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)


def history(ticks: int, per_tick: int = 2, text: str = "Hello there, innkeeper.") -> list[dict]:
    """``ticks`` ticks of ``per_tick`` user/assistant messages each, oldest first."""
    messages = []
    for tick in range(1, ticks + 1):
        for index in range(per_tick):
            role = "user" if index % 2 == 0 else "assistant"
            messages.append(
                {"role": role, "content": text, "batch": tick, "ts": "2026-11-25T10:00:00+00:00"}
            )
    return messages


# -- tool rules -----------------------------------------------------------------------------------
class TestToolRules(AICommandTestBase):
    def test_add_list_remove_every_rule_type(self):
        for typed, described in (
            # in the words the model reads, shown without their Markdown marks
            ("start_constraint look", "Call look first before any other tools"),
            ("exit_loop say", "The conversation will end after calling say"),
            ("continue_loop look", "The conversation will be continued after calling look"),
            ("max_calls look 2", "Call look at most 2 times"),
            ("REQUIRES_PRIOR give look", "Call give only after calling look"),
        ):
            self.call(
                CmdAITools(), f"/addrule Innkeeper = {typed}", "Innkeeper has a new tool rule"
            )
            shown = self.call(CmdAITools(), "/rules Innkeeper", "Tool rules of")
            assert described in words(shown) and "`" not in shown
        assert self.npc.ai.tool_rules[-1] == {
            "type": "requires_prior",
            "tool": "give",
            "value": "look",
        }
        assert self.npc.ai.tool_rules[3]["value"] == 2
        out = self.call(CmdAITools(), "/rules Innkeeper", "Tool rules of Innkeeper")
        # the section as the model reads it is the one in its system prompt (the operator's),
        # shown without its Markdown marks
        section = out.split("(in its system prompt, without its Markdown marks):\n", 1)[1]
        assert section.startswith("Tool Execution Rules") and "`" not in section
        prompt = section_for(self.npc, "", "").text
        assert "# Tool Execution Rules" in prompt and "Call `look` at most 2 times" in prompt
        assert section in plain_words(prompt)
        self.call(
            CmdAITools(),
            "/delrule Innkeeper = 1",
            "Innkeeper's tool rule #1 is removed: start_constraint look",
        )
        assert len(self.npc.ai.tool_rules) == 4
        self.call(
            CmdAITools(), "/delrule Innkeeper = all", "Innkeeper's 4 tool rule(s) are removed"
        )
        assert self.npc.ai.tool_rules == []
        self.call(CmdAITools(), "/rules Innkeeper", "Innkeeper has no tool rules")
        self.call(CmdAITools(), "Innkeeper", "Tools of Innkeeper")

    def test_each_change_is_one_write(self):
        with mock.patch.object(self.npc.ai.state, "set", wraps=self.npc.ai.state.set) as write:
            self.call(CmdAITools(), "/addrule Innkeeper = exit_loop say", "Innkeeper has a new")
            self.call(CmdAITools(), "/delrule Innkeeper = 1", "Innkeeper's tool rule #1")
        assert [c.args[0] for c in write.call_args_list] == ["tool_rules", "tool_rules"]

    def test_bad_rules_are_refused_clearly(self):
        for typed, message in (
            ("", "Missing rule after '='"),
            ("cooldown say 5", "Unknown tool rule type 'cooldown'. Rules are: start_constraint"),
            ("max_calls look", "A max_calls rule reads: max_calls <tool> <count>"),
            ("exit_loop say now", "A exit_loop rule reads: exit_loop <tool>"),
            (
                "max_calls look 0",
                "A max_calls rule needs, in 'value', a whole number of calls >= 1",
            ),
            ("max_calls look two", "A max_calls rule needs, in 'value', a whole number of calls"),
            ("requires_prior look look", "`look` cannot require itself to be called first."),
            ("exit_loop fly_to_moon", "Unknown tool(s): fly_to_moon"),
            ("requires_prior give teleport", "Unknown tool(s): teleport"),
        ):
            self.call(CmdAITools(), f"/addrule Innkeeper = {typed}", message)
        assert self.npc.ai.tool_rules == []
        self.call(CmdAITools(), "/addrule Innkeeper", "Missing rule after '='")
        self.call(CmdAITools(), "/addrule Nobody = exit_loop say", "No AI NPC called 'Nobody'")

    def test_duplicates_second_limits_and_circles_are_refused(self):
        self.call(CmdAITools(), "/addrule Innkeeper = max_calls look 2", "Innkeeper has a new")
        self.call(
            CmdAITools(), "/addrule Innkeeper = max_calls look 2", "That rule is there already"
        )
        self.call(
            CmdAITools(), "/addrule Innkeeper = max_calls look 3", "`look` is already limited"
        )
        self.call(
            CmdAITools(), "/addrule Innkeeper = requires_prior give look", "Innkeeper has a new"
        )
        self.call(
            CmdAITools(),
            "/addrule Innkeeper = requires_prior look give",
            "`give` already has to wait for `look`: with this rule neither could ever run.",
        )
        assert len(self.npc.ai.tool_rules) == 2

    def test_bad_rule_numbers(self):
        self.call(CmdAITools(), "/delrule Innkeeper = 1", "Innkeeper has no tool rules")
        self.call(CmdAITools(), "/addrule Innkeeper = exit_loop say", "Innkeeper has a new")
        self.call(CmdAITools(), "/delrule Innkeeper = 2", "The rule number must be at most 1")
        self.call(
            CmdAITools(), "/delrule Innkeeper = first", "The rule number must be a whole number"
        )
        self.call(CmdAITools(), "/delrule Innkeeper", "Missing rule number")
        assert len(self.npc.ai.tool_rules) == 1

    def test_notes_on_rules_that_cannot_apply_and_stored_junk(self):
        self.call(CmdAITools(), "/deny Innkeeper = look", "Innkeeper may no longer use look")
        self.call_says(
            CmdAITools(),
            "/addrule Innkeeper = requires_prior give look",
            "Innkeeper has a new tool rule (#1): Call give only after calling look. Note: "
            "look is not offered to Innkeeper (its tool lists); so give cannot run.",
        )
        self.npc.ai.set(
            "tool_rules", self.npc.ai.tool_rules + [{"type": "cooldown", "tool": "say"}]
        )
        out = self.call(CmdAITools(), "/rules Innkeeper", "Tool rules of Innkeeper")
        assert "ignored: Unknown tool rule type" in out and "cooldown say" in out
        self.call(
            CmdAITools(),
            "/delrule Innkeeper = 2",
            "Innkeeper's tool rule #2 is removed: cooldown say",
        )

    def test_builder_views_developer_changes(self):
        self.call(CmdAITools(), "/addrule Innkeeper = exit_loop say", "Innkeeper has a new")
        builder = self.builder()
        assert CmdAITools().access(builder, "cmd")
        self.call(CmdAITools(), "/rules Innkeeper", "Tool rules of Innkeeper", caller=builder)
        self.call(
            CmdAITools(),
            "/addrule Innkeeper = max_calls look 1",
            "Only Developers may change an NPC's tool rules.",
            caller=builder,
        )
        self.call(CmdAITools(), "/delrule Innkeeper = 1", "Only Developers may", caller=builder)
        assert self.npc.ai.tool_rules == [{"type": "exit_loop", "tool": "say", "value": None}]
        assert not CmdAITools().access(self.player(), "cmd")


# -- an NPC's own budget --------------------------------------------------------------------------
@override_settings(
    EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=100_000, EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC=None
)
class TestOwnBudget(AICommandTestBase):
    def test_view_set_and_clear(self):
        out = self.call(CmdAINpc(), "/budget Innkeeper", "Innkeeper(#")
        assert "own daily limits: tokens none, cost none" in out and "100,000" in out
        out = self.call(
            CmdAINpc(),
            "/budget Innkeeper = tokens=20k cost=$0.50",
            "Innkeeper's own daily limits are now tokens 20,000, cost $0.5000.",
        )
        assert (
            "this NPC's own budget (tighter than EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC)"
            in words(out)
        )
        assert self.npc.ai.budget == {"tokens": 20000, "cost": 0.5}
        status = self.npc.ai.spending_status()
        assert status.npc_token_limit == 20000 and status.npc_cost_limit == 0.5
        self.call(
            CmdAINpc(),
            "/budget Innkeeper = cost=none",
            "Innkeeper's own daily limits are now tokens 20,000, cost none",
        )
        assert self.npc.ai.budget == {"tokens": 20000}
        self.call(
            CmdAINpc(),
            "/budget Innkeeper = none",
            "Innkeeper's own daily limits are now tokens none, cost none",
        )
        assert self.npc.ai.budget == {}

    def test_a_looser_own_limit_is_kept_but_the_server_applies(self):
        out = self.call(CmdAINpc(), "/budget Innkeeper = tokens=1,000,000", "Innkeeper's own daily")
        assert "the server's per-NPC tokens limit is tighter and applies" in out
        assert self.npc.ai.spending_status().npc_token_limit == 100_000

    def test_bad_numbers_are_refused(self):
        for typed, message in (
            ("tokens=0", "tokens must be at least 1; 'none' removes the limit."),
            ("tokens=-5", "tokens must be at least 1"),
            ("tokens=1.5", "tokens must be a whole number, like 20000 or 20k, not '1.5'"),
            ("tokens=lots", "tokens must be a whole number"),
            ("tokens=inf", "tokens must be a whole number"),
            ("tokens=5000000000", "tokens must be at most 1,000,000,000 a day"),
            ("cost=0", "cost must be at least 0.0001"),
            ("cost=nan", "cost must be at least 0.0001"),
            ("cost=cheap", "cost must be dollars, like 0.50 or $2, not 'cheap'"),
            ("cost=1e9", "cost must be at most 100,000.0 a day"),
            ("money=5", "Unknown limit 'money'"),
            ("tokens", "'tokens' is not tokens=<count> or cost=<dollars>"),
            ("tokens=", "'tokens=' is not tokens=<count>"),
        ):
            self.call(CmdAINpc(), f"/budget Innkeeper = {typed}", message)
        self.call(CmdAINpc(), "/budget Innkeeper =", "Missing limits")
        assert self.npc.ai.budget == {}

    def test_builder_views_developer_changes(self):
        builder = self.builder()
        self.call(CmdAINpc(), "/budget Innkeeper", "Innkeeper(#", caller=builder)
        self.call(
            CmdAINpc(),
            "/budget Innkeeper = tokens=5",
            "Only Developers may set an NPC's budget.",
            caller=builder,
        )
        assert self.npc.ai.budget == {}
        assert not CmdAINpc().access(self.player(), "cmd")


# -- history and compaction -----------------------------------------------------------------------
class TestHistoryView(AICommandTestBase):
    def test_empty_history(self):
        out = self.call(CmdAIHistory(), "Innkeeper", "History of Innkeeper(#")
        assert "0 message(s) from 0 tick(s)" in out
        assert "Last compaction: never" in out and "Now: not due" in out

    def test_sizes_shares_and_the_last_compaction(self):
        self.npc.ai.set("history", history(5))
        self.npc.ai.set(
            "compaction",
            {
                "pending": False,
                "last_tick": 3,
                "removed": 12,
                "strategy": "summarize",
                "time": "2026-11-25T09:00:00+00:00",
            },
        )
        out = self.call(CmdAIHistory(), "Innkeeper", "History of Innkeeper(#")
        pressure = history_pressure(self.npc.ai, None, 99)
        tokens = pressure.measures[0][1]
        out = words(out)
        assert f"10 message(s) from 5 tick(s), {tokens:,} tokens for {pressure.model}" in out
        assert f"of its {pressure.window:,}-token window" in out
        assert "messages" in out and "characters" in out and "Compacts at" in out
        assert "tick 3, 2026-11-25 09:00:00 UTC" in out
        assert "12 older message(s) summarised into one message" in out
        assert "Now: not due" in out

    @override_settings(EVENNIA_AI_HISTORY_MAX_MESSAGES=20, EVENNIA_AI_COMPACTION_KEEP_RECENT=4)
    def test_due_and_pending(self):
        self.npc.ai.set("history", history(9))  # 18 of 20 messages: 90%, past the emergency 80%
        out = self.call(CmdAIHistory(), "Innkeeper", "History of")
        assert "Now: due (emergency)" in out and "it would fold 14 message(s)" in out
        self.npc.ai.set("compaction", {"pending": True, "reason": "emergency", "last_tick": None})
        out = self.call(CmdAIHistory(), "Innkeeper", "History of")
        assert "Now: pending (emergency): runs at once, before any queued events" in out

    def test_a_summary_and_a_failed_compaction(self):
        summary = {
            "role": "user",
            "content": "[Summary of earlier conversation]\nThey met.",
            "batch": SUMMARY_BATCH,
        }
        self.npc.ai.set("history", [summary] + history(2))
        self.npc.ai.set(
            "compaction",
            {
                "pending": False,
                "last_tick": 7,
                "error": "summarising history failed (timeout)",
                "time": "2026-11-25T09:00:00+00:00",
            },
        )
        out = words(self.call(CmdAIHistory(), "Innkeeper", "History of"))
        assert "5 message(s) from 2 tick(s)" in out and "starts with a summary" in out
        assert "failed: summarising history failed (timeout)" in out

    def test_builder_may_view_player_may_not(self):
        self.call(CmdAIHistory(), "Innkeeper", "History of Innkeeper", caller=self.builder())
        assert CmdAIHistory.locks == "cmd:perm(Builder)"
        assert not CmdAIHistory().access(self.player(), "cmd")

    def test_usage_and_unknown_npc(self):
        self.call(CmdAIHistory(), "", "Usage:")
        self.call(CmdAIHistory(), "Nobody", "No AI NPC called 'Nobody'")

    def test_last_messages(self):
        self.call(CmdAIHistory(), "/last Innkeeper", "Innkeeper has no conversation history.")
        self.npc.ai.set("history", history(3, text="A |rred|n ale, please."))
        out = self.call(CmdAIHistory(), "/last Innkeeper = 3", "The last 3 message(s) of Innkeeper")
        assert " tick 2 " in out and "Innkeeper: A |rred|n ale, please." in out
        self.call(CmdAIHistory(), "/last Innkeeper = 0", "The count must be at least 1.")
        self.call(CmdAIHistory(), "/last Innkeeper = many", "The count must be a whole number")
