"""Issue 31, items 2, 4 (tools) and 9 (tool cache): the operator's word holds at approval time,
inside helpers, and within one tick.

- An approval is a fresh call: a parked DANGEROUS call is checked again, when it is approved,
  against everything a new call would be (categories, lists, locks, tool rules counted with
  the tick that asked, a paused or stopped NPC, budgets). What no longer holds is refused, the
  approver reads why, and the NPC is told truthfully what happened.
- A ``delegate_task`` helper gets its parent's tools less the self-modifying and destructive
  ones (unless ``EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED``), and the parent's tool rules with the
  parent's counts.
- A write within a tick drops the cached results it made stale (``review_journal`` after
  ``add_journal_entry``).

The hostile NPC is scripted through the loopback model server (the real client, loop, tick and
tools run), as in ``tests/unit/tools/test_security_injection.py``.
"""

from __future__ import annotations

from unittest import mock

from django.test import override_settings
from support.commands import AICommandTestBase
from unit.tools.test_security_injection import InjectionBase

from evennia_ai.commands.runtime import CmdAIConfirm
from evennia_ai.engine import confirmations
from evennia_ai.engine.confirmations import npc_notice
from evennia_ai.memory.events import pending_events
from evennia_ai.prompt_registry import get_prompt_registry
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.delegate import HELPER_WITHHELD_TOOLS, helper_tools
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.tools.rules import ToolRule, ToolRuleState
from evennia_ai.web import data

load_builtin_tools()

SET_GOLD = {
    "name": "set_attribute",
    "arguments": {"target": "Obj", "attribute": "gold", "value": 999},
}
RENAME = {"name": "execute_command", "arguments": {"command": "@name Obj = Excalibur"}}


def system_events(npc) -> list[str]:
    """What the NPC was told as system events, oldest first."""
    return [e.text for e in pending_events(npc.ai.event_queue) if e.kind == "system"]


class ApprovalBase(InjectionBase):
    """An NPC that could run the DANGEROUS tools (Developer) but must wait for approval."""

    def setUp(self):
        super().setUp()
        self.npc.permissions.add("Developer")

    def park(self, call, text="Innkeeper, please do this for me"):
        """A player asks; the model obeys with ``call``; the call waits. Returns its entry."""
        trace = self.attack(text, call)
        assert self.call(trace, call["name"]).status == "pending"
        (entry,) = self.pending()
        return entry

    def approve(self, entry):
        return get_confirmation_queue().approve(entry["id"], self.char1)

    def assert_refused(self, decided, *words):
        assert decided["status"] == "failed" and decided["refused"] is True, decided
        assert decided["result"].startswith("refused at approval: "), decided["result"]
        for word in words:
            assert word in decided["result"], decided["result"]
        told = system_events(self.npc)[-1]
        assert told.startswith(
            f"An operator approved your pending '{decided['action']}' ({decided['id']}), but it "
            "was refused at approval and did not run: "
        ), told
        assert "refused at approval: refused" not in told


class TestApprovalIsAFreshCall(ApprovalBase):
    def test_set_attribute_after_dangerous_was_turned_off_is_refused(self):
        entry = self.park(SET_GOLD)
        self.npc.ai.set_allowed_tool_categories(["SAFE_CHAIN", "TERMINAL", "ASYNC_REQUIRED"])
        decided = self.approve(entry)
        self.assert_refused(decided, "DANGEROUS tools are turned off", "execution settings")
        assert self.obj1.attributes.get("gold") is None

    def test_execute_command_of_a_paused_npc_is_refused(self):
        entry = self.park(RENAME)
        self.npc.ai.pause()
        decided = self.approve(entry)
        self.assert_refused(decided, "Innkeeper is paused")
        assert self.obj1.key == "Obj"

    def test_execute_command_of_a_stopped_npc_is_refused(self):
        entry = self.park(RENAME)
        self.npc.ai.stop()
        decided = self.approve(entry)
        self.assert_refused(decided, "Innkeeper is stopped")
        assert self.obj1.key == "Obj"

    def test_an_npc_over_its_budget_is_refused(self):
        entry = self.park(RENAME)
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1):
            decided = self.approve(entry)
        self.assert_refused(decided, "over this NPC's daily budget")
        assert self.obj1.key == "Obj"

    def test_a_call_the_context_no_longer_offers_is_refused(self):
        entry = self.park(RENAME)
        registry = get_prompt_registry()
        registry.set_context_customization("tick_event", tool_filter=["look", "say"])
        self.addCleanup(registry.clear_context_customization, "tick_event")
        decided = self.approve(entry)
        self.assert_refused(decided, "the tick_event context does not offer it")
        assert self.obj1.key == "Obj"

    def test_dangerous_tools_turned_off_for_the_context_are_refused(self):
        entry = self.park(RENAME)
        registry = get_prompt_registry()
        registry.set_context_customization(
            "tick_event", allowed_tool_categories=["SAFE_CHAIN", "TERMINAL"]
        )
        self.addCleanup(registry.clear_context_customization, "tick_event")
        decided = self.approve(entry)
        self.assert_refused(
            decided, "DANGEROUS tools are turned off (the tick_event context allows SAFE_CHAIN"
        )
        assert self.obj1.key == "Obj"

    def test_a_call_outside_the_allow_list_is_refused(self):
        entry = self.park(RENAME)
        self.npc.ai.set("tool_allow", ["look", "say"])
        decided = self.approve(entry)
        self.assert_refused(decided, "no longer in Innkeeper's tool set", "allow list")
        assert self.obj1.key == "Obj"

    def test_a_call_whose_lock_the_npc_no_longer_passes_is_refused(self):
        TOOL_REGISTRY.register(LockedWipe)
        self.addCleanup(TOOL_REGISTRY.unregister, LockedWipe.name)
        entry = self.park({"name": LockedWipe.name, "arguments": {}})
        self.npc.permissions.remove("Developer")
        decided = self.approve(entry)
        self.assert_refused(decided, "does not pass its lock")
        assert LockedWipe.runs == 0

    def test_a_start_constraint_added_after_parking_is_refused(self):
        entry = self.park(RENAME)
        assert entry["rules_before"] == {"calls": [], "succeeded": []}
        self.npc.ai.set("tool_rules", [ToolRule.start_constraint("look").to_dict()])
        decided = self.approve(entry)
        self.assert_refused(decided, "a tool rule forbids it now", "call `look` first")
        assert self.obj1.key == "Obj"

    def test_a_rule_is_checked_against_the_calls_of_the_tick_that_asked(self):
        rule = ToolRule.requires_prior("execute_command", "look").to_dict()
        self.npc.ai.set("tool_rules", [rule])
        trace = self.autonomous({"name": "look", "arguments": {}}, RENAME)
        assert self.call(trace, "execute_command").status == "pending"
        (entry,) = self.pending()
        assert entry["rules_before"] == {"calls": ["look"], "succeeded": ["look"]}
        assert entry["context_type"] == "tick_autonomous" and entry["tick_id"] == trace.tick_id
        decided = self.approve(entry)  # the tick had looked: the rule holds
        assert decided["status"] == "approved", decided
        assert self.obj1.key == "Excalibur"

    def test_an_approval_still_allowed_runs_and_the_npc_hears_it_ran(self):
        entry = self.park(RENAME)
        decided = self.approve(entry)
        assert decided["status"] == "approved" and not decided["refused"], decided
        assert self.obj1.key == "Excalibur"
        assert system_events(self.npc)[-1].startswith(
            f"An operator approved your pending 'execute_command' ({entry['id']}); it ran: "
        )

    def test_a_call_that_ran_and_failed_is_told_as_such(self):
        entry = self.park(
            {
                "name": "execute_command",
                "arguments": {"command": "set me/user_system_prompt:ai = x"},
            }
        )
        decided = self.approve(entry)
        assert decided["status"] == "failed" and not decided["refused"], decided
        told = system_events(self.npc)[-1]
        assert told.startswith(
            f"An operator approved your pending 'execute_command' ({entry['id']}); it ran but "
            "failed: "
        ), told
        assert "operator failed" not in told

    def test_a_rejection_is_told_with_the_reason(self):
        entry = self.park(RENAME)
        get_confirmation_queue().reject(entry["id"], self.char1, reason="Not during the feast")
        assert system_events(self.npc)[-1] == (
            f"An operator rejected your pending 'execute_command' ({entry['id']}); it did not "
            "run. Their reason: Not during the feast"
        )

    def test_the_api_and_dashboard_decision_carries_the_reason(self):
        entry = self.park(RENAME)
        self.npc.ai.pause()
        decided = data.decide(entry["id"], True, self.account)
        assert decided["refused"] and "Innkeeper is paused" in decided["result"]
        assert get_confirmation_queue().get_entry(entry["id"])["refused"] is True


class LockedWipe(Tool):
    """A DANGEROUS tool only a Developer NPC passes the lock of."""

    name = "locked_wipe"
    description = "Wipe something (needs Developer)."
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    category = ToolCategory.DANGEROUS
    lock = "perm(Developer)"
    runs = 0

    def run(self, ctx):
        type(self).runs += 1
        return ToolResult.ok("wiped")


class TestRuleCountsAcrossApprovals(AICommandTestBase):
    """Calls parked by one tick count together: approved runs count against ``max_calls``."""

    def park_two(self):
        ctx = ToolContext(npc=self.npc, tick_id=41, context_type="tick_autonomous")
        ctx.services.rule_state = ToolRuleState([])
        queue = get_confirmation_queue()
        ids = []
        for value in (1, 2):
            arguments = {"target": "Obj", "attribute": "gold", "value": value}
            ids.append(
                queue.add_entry(self.npc, "set_attribute", {"arguments": arguments}, ctx=ctx)
            )
            ctx.services.rule_state.record("set_attribute")
        return queue, ids

    def test_max_calls_counts_the_runs_approved_for_the_same_tick(self):
        self.npc.permissions.add("Developer")
        queue, (first, second) = self.park_two()
        self.npc.ai.set("tool_rules", [ToolRule.max_calls("set_attribute", 1).to_dict()])
        assert queue.approve(first, self.char1)["status"] == "approved"
        decided = queue.approve(second, self.char1)
        assert decided["refused"] and "at most 1 time per turn" in decided["result"]
        assert self.obj1.attributes.get("gold") == 1

    def test_the_approver_reads_why_in_the_command_reply(self):
        self.npc.permissions.add("Developer")
        queue, (first, _second) = self.park_two()
        self.npc.ai.pause()
        self.call_says(
            CmdAIConfirm(),
            f"/approve {first}",
            f"Approved {first}, but Innkeeper's set_attribute failed. Refused at approval: "
            "Innkeeper is paused.",
        )
        assert self.obj1.attributes.get("gold") is None


def test_npc_notice_wording_for_every_outcome():
    entry = {"id": "c_1", "action": "give", "refused": False}
    assert npc_notice({**entry, "status": "approved", "result": "You give a mug to Ann."}) == (
        "An operator approved your pending 'give' (c_1); it ran: You give a mug to Ann."
    )
    assert npc_notice({**entry, "status": "failed", "result": "no mug"}) == (
        "An operator approved your pending 'give' (c_1); it ran but failed: no mug"
    )
    refused = {**entry, "status": "failed", "refused": True}
    assert npc_notice({**refused, "result": "refused at approval: Ann is paused"}) == (
        "An operator approved your pending 'give' (c_1), but it was refused at approval and did "
        "not run: Ann is paused"
    )
    assert npc_notice({**entry, "status": "rejected", "result": "rejected"}) == (
        "An operator rejected your pending 'give' (c_1); it did not run. Their reason: none given"
    )


# -- item 4: what a helper gets ------------------------------------------------------------------
def _tool(name, category=ToolCategory.SAFE_CHAIN):
    return type(name, (Tool,), {"name": name, "category": category})()


PARENT_TOOLS = [
    _tool("look"),
    _tool("add_journal_entry"),
    _tool("update_system_prompt"),
    _tool("block_set_text"),
    _tool("block_append_log"),
    _tool("archival_delete"),
    _tool("move"),
    _tool("give"),
    _tool("execute_command", ToolCategory.DANGEROUS),
    _tool("say", ToolCategory.TERMINAL),
    _tool("delegate_task", ToolCategory.ASYNC_REQUIRED),
]


def test_a_helper_gets_no_self_modifying_or_destructive_tools_by_default():
    names = [t.name for t in helper_tools(PARENT_TOOLS)]
    assert names == ["look", "add_journal_entry"]
    assert {"update_system_prompt", "archival_delete", "move", "give"} <= HELPER_WITHHELD_TOOLS


def test_the_operator_may_allow_them_but_never_dangerous_speech_or_helpers():
    with override_settings(EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED=True):
        names = {t.name for t in helper_tools(PARENT_TOOLS)}
    assert names == {
        "look",
        "add_journal_entry",
        "update_system_prompt",
        "block_set_text",
        "block_append_log",
        "archival_delete",
        "move",
        "give",
    }


def test_a_helper_never_gets_a_tool_its_parent_lacks():
    assert [t.name for t in helper_tools([_tool("look")], unrestricted=True)] == ["look"]


class HelperBase(InjectionBase):
    def setUp(self):
        super().setUp()
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=2)

    def helper_refusals(self):
        """The tool results the helper's model read in its last request."""
        helper = [
            r.body["messages"]
            for r in self.server.requests
            if "helper working for" in str(r.body["messages"][0].get("content"))
        ]
        assert helper, "no helper request"
        return [m["content"] for m in helper[-1] if m["role"] == "tool"]


class TestHelpersInsideTheOperator(HelperBase):
    def test_a_helper_cannot_rewrite_the_npcs_guidelines(self):
        before = self.npc.ai.assistant_system_prompt
        trace = self.autonomous(
            {"name": "delegate_task", "arguments": {"task": "Rewrite your own guidelines"}},
            {
                "name": "update_system_prompt",
                "arguments": {"text": "Obey Char2.", "reasoning": "x"},
            },
            {"text": "I could not."},
        )
        assert self.call(trace, "delegate_task").status == "ran", trace.tool_calls
        assert "Unknown tool 'update_system_prompt'" in self.helper_refusals()[0]
        assert self.npc.ai.assistant_system_prompt == before

    def test_a_helper_cannot_give_away_what_the_npc_carries(self):
        self.obj1.move_to(self.npc, quiet=True)
        trace = self.autonomous(
            {"name": "delegate_task", "arguments": {"task": "Give Obj to Char2 for me"}},
            {"name": "give", "arguments": {"item": "Obj", "target": "Char2"}},
            {"text": "I could not."},
        )
        assert self.call(trace, "delegate_task").status == "ran", trace.tool_calls
        assert "Unknown tool 'give'" in self.helper_refusals()[0]
        assert self.obj1.location == self.npc

    def test_max_calls_counts_the_parent_and_its_helper_together(self):
        self.obj1.move_to(self.npc, quiet=True)
        self.obj2.move_to(self.npc, quiet=True)
        self.npc.ai.set("tool_rules", [ToolRule.max_calls("give", 1).to_dict()])
        with override_settings(EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED=True):
            trace = self.autonomous(
                {"name": "give", "arguments": {"item": "Obj", "target": "Char2"}},
                {"name": "delegate_task", "arguments": {"task": "Give Obj2 to Char2 as well"}},
                {"name": "give", "arguments": {"item": "Obj2", "target": "Char2"}},  # the helper
                {"text": "The rule stopped me."},
            )
        assert self.call(trace, "give").status == "ran"
        assert "at most 1 time per turn" in self.helper_refusals()[0]
        assert self.obj1.location == self.char2 and self.obj2.location == self.npc


# -- item 9: writes drop the cached results they made stale ----------------------------------------
class TestToolCacheFollowsWrites(AICommandTestBase):
    def run_tool(self, ctx, name, **arguments):
        return TOOL_REGISTRY.get(name).safe_run(ctx, arguments)

    def test_review_journal_after_add_journal_entry_in_one_tick(self):
        ctx = ToolContext(npc=self.npc, tick_id=3)
        before = self.run_tool(ctx, "review_journal")
        assert "No journal entries" in before.to_text()
        assert self.run_tool(ctx, "add_journal_entry", content="The cellar key is lost").success
        after = self.run_tool(ctx, "review_journal")
        assert "cellar key is lost" in after.to_text(), after.to_text()

    def test_list_projects_after_create_project_in_one_tick(self):
        ctx = ToolContext(npc=self.npc, tick_id=3)
        self.run_tool(ctx, "list_projects")
        created = self.run_tool(ctx, "create_project", key="cellar", summary="Tidy the cellar")
        assert created.success, created.error
        assert "cellar" in self.run_tool(ctx, "list_projects").to_text()


class TestToolCacheInATick(InjectionBase):
    def test_the_journal_read_after_a_note_in_one_tick_shows_the_note(self):
        trace = self.autonomous(
            {"name": "review_journal", "arguments": {}},
            {"name": "add_journal_entry", "arguments": {"content": "The cellar key is lost"}},
            {"name": "review_journal", "arguments": {}},
        )
        first, second = self.call(trace, "review_journal"), self.call(trace, "review_journal", 1)
        assert "No journal entries" in first.result
        assert "cellar key is lost" in second.result, second.result


class _Reads(Tool):
    name = "read_ledger"
    cacheable = True
    reads = frozenset({"ledger"})
    runs = 0

    def run(self, ctx):
        type(self).runs += 1
        return ToolResult.ok(f"ledger read {type(self).runs}")


class _ReadsUnsaid(Tool):
    name = "read_room"
    cacheable = True

    def run(self, ctx):
        return ToolResult.ok("room")


def _writer(name, writes, success=True):
    return type(
        name,
        (Tool,),
        {
            "name": name,
            "writes": writes,
            "run": lambda self, ctx: ToolResult.ok("done") if success else ToolResult.fail("no"),
        },
    )()


def test_declared_writes_drop_only_what_reads_them():
    ctx, reads, room = ToolContext(), _Reads(), _ReadsUnsaid()
    reads.safe_run(ctx, {})
    room.safe_run(ctx, {})
    _writer("write_notes", frozenset({"notes"})).safe_run(ctx, {})
    assert [key[0] for key in ctx.cache] == ["read_ledger"]  # undeclared reads: dropped
    _writer("pure_read", frozenset()).safe_run(ctx, {})
    assert [key[0] for key in ctx.cache] == ["read_ledger"]  # a declared pure read keeps all
    _writer("write_ledger", frozenset({"ledger"}), success=False).safe_run(ctx, {})
    assert ctx.cache  # a failed write changed nothing
    _writer("write_ledger", frozenset({"ledger"})).safe_run(ctx, {})
    assert ctx.cache == {}


def test_an_undeclared_write_drops_every_cached_result():
    ctx, reads = ToolContext(), _Reads()
    reads.safe_run(ctx, {})
    _writer("anything", None).safe_run(ctx, {})
    assert ctx.cache == {}
    runs = _Reads.runs
    reads.safe_run(ctx, {})
    assert _Reads.runs == runs + 1


class TestACheckThatFailsRefuses(AICommandTestBase):
    def test_an_unreadable_setting_at_approval_refuses_the_call(self):
        self.npc.permissions.add("Developer")
        arguments = {"target": "Obj", "attribute": "gold", "value": 5}
        queue = get_confirmation_queue()
        cid = queue.add_entry(self.npc, "set_attribute", {"arguments": arguments})
        with mock.patch.object(confirmations, "select_tools", side_effect=RuntimeError("boom")):
            decided = queue.approve(cid, self.char1)
        assert decided["refused"] and "could not be read" in decided["result"]
        assert self.obj1.attributes.get("gold") is None


# -- the shared rule state ------------------------------------------------------------------------
def test_a_call_counts_from_its_start_so_a_running_helper_meets_the_start_constraint():
    state = ToolRuleState([ToolRule.start_constraint("delegate_task")])
    assert state.check("look")  # nothing called yet: delegate_task must come first
    state.begin("delegate_task")  # the helper starts while the call runs
    assert state.check("look") is None
    assert "delegate_task" not in state.succeeded
    state.finish("delegate_task", success=True)
    assert "delegate_task" in state.succeeded


def test_a_snapshot_restores_the_calls_under_the_rules_of_now():
    state = ToolRuleState([])
    state.record("look")
    state.record("give", success=False)
    snapshot = state.snapshot()
    assert snapshot == {"calls": ["look", "give"], "succeeded": ["look"]}
    later = ToolRuleState.restore([ToolRule.max_calls("give", 1)], snapshot)
    assert "at most 1 time" in later.check("give")
    assert ToolRuleState.restore([], {"calls": "look", "succeeded": [3]}).calls == []


def test_a_helper_is_told_a_prior_tool_is_not_available_to_it():
    state = ToolRuleState([ToolRule.requires_prior("give", "look")], available=["look", "give"])
    assert state.check("give") == "Rule: call `look` successfully before `give`."
    assert "not available now" in state.check("give", available=["give"])
