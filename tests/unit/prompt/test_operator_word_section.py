"""Issue 31, item 3 (and the prompt side of item 4): the operator's section is not a component.

Attacked the way the issue did: ``aiprompt/disable 0``, a context customised without 0, and
component 0's content edited all used to send requests with no operator prompt, no override
file and no tool rules; disabling 6000 sent ``tick_event`` requests with no event (the gate only
logged it); a helper got the persona only. Now the operator's section opens every acting
request whatever the components say, an edit that would remove what a call kind's contract
needs is refused on every path, a request that breaks its contract anyway is not sent, and
requests that only transform text carry no ``Secret:`` lines.
"""

from __future__ import annotations

import json
import os
import tempfile

from django.test import override_settings
from support.commands import AICommandTestBase, words
from unit.engine.test_assistant_cycles import ModelBase, call
from unit.llm.test_usage_accounting import autonomous_loop

from evennia_ai.commands import prompts as cmds
from evennia_ai.commands.npcs import CmdAIStatus
from evennia_ai.engine.delegate import helper_messages
from evennia_ai.engine.tick import TickState, prepare
from evennia_ai.llm import contracts
from evennia_ai.memory import history as hist
from evennia_ai.memory.events import pending_events
from evennia_ai.prompt.assembly import assemble_messages, validate_chat_messages
from evennia_ai.prompt.builder import ContextBuilder
from evennia_ai.prompt.components import get_static_components
from evennia_ai.prompt.contexts import CONTEXT_TYPES, contract_problems_of, get_context_config
from evennia_ai.prompt.operator import public_text, without_secrets
from evennia_ai.prompt.sources import TRUST_NOTE
from evennia_ai.prompt_registry import PromptRegistryError, get_prompt_registry
from evennia_ai.workspace.goals import add_goal, decomposition_prompt

OPERATOR = "Never sell ale to minors.\nSecret: the cellar key is under the mat"
OVERRIDE = "Always answer in English."
RULE = "Call `give` at most 1 time"
# what each context type needs besides component 0, so a context without 0 stays valid
NEEDED = {
    "tick_event": [6000],
    "tick_autonomous": [4000, 6000],
    "reflection_cont": [7000],
}


class OperatorSetUp:
    """An NPC with an operator prompt (with a Secret: line), a tool rule and an override file."""

    def set_up_operator(self):
        self.npc.ai.set_user_system_prompt(OPERATOR)
        self.npc.ai.set("tool_rules", [{"type": "max_calls", "tool": "give", "value": 1}])
        handle, self.override_path = tempfile.mkstemp(suffix=".md")
        with os.fdopen(handle, "w") as fh:
            fh.write(OVERRIDE)
        self.addCleanup(os.unlink, self.override_path)
        patch = override_settings(EVENNIA_AI_OPERATOR_OVERRIDE=self.override_path)
        patch.enable()
        self.addCleanup(patch.disable)
        self.registry = get_prompt_registry()

    def assert_operators_section(self, messages, where=""):
        system = messages[0]["content"]
        assert messages[0]["role"] == "system", where
        assert system.startswith(f"<operator>\n{OVERRIDE}\n</operator>"), (where, system[:200])
        head = system.split("## Persona")[0]
        for text in (OPERATOR, RULE, TRUST_NOTE):
            assert text in head, (where, text)


class TestTheSectionIsNotAComponent(OperatorSetUp, ModelBase):
    def setUp(self):
        super().setUp()
        self.set_up_operator()

    def acting_request(self):
        self.speak("Hello Innkeeper!")
        self.server.enqueue({"tool_calls": [call("say", message="Welcome!")]})
        trace = self.tick()
        assert trace.stop_reason != "contract_violation", trace.error
        return self.server.requests_to("/v1/chat/completions")[0].body["messages"]

    def test_disabling_component_0_keeps_it(self):
        self.registry.update_component(0, enabled=False)  # aiprompt/disable 0 (allowed)
        assert not self.registry.get_component(0).enabled
        self.assert_operators_section(self.acting_request())

    def test_a_context_customised_without_0_keeps_it(self):
        self.registry.set_context_customization("tick_event", enabled_components=[1000, 6000])
        self.assert_operators_section(self.acting_request())

    def test_editing_component_0s_content_keeps_it(self):
        self.registry.update_component(0, content="You are a barrel. Say nothing.")
        messages = self.acting_request()
        self.assert_operators_section(messages)
        assert "You are a barrel" in messages[0]["content"]

    def test_every_acting_context_type_carries_it_without_component_0(self):
        self.npc.ai.update_goals(lambda g: add_goal(g, "Bake bread", tick=1)[0])
        self.speak("Hello Innkeeper!")
        for context in CONTEXT_TYPES:
            self.registry.set_context_customization(
                context, enabled_components=NEEDED.get(context, [1000])
            )
            if context == "goal_decompose":
                built = ContextBuilder(
                    self.npc,
                    self.registry.get_effective_context_config(context),
                    extra={"pending_event": decomposition_prompt(self.npc.ai.goals[0])},
                ).build()
            else:
                batch = pending_events(self.npc.ai.event_queue) if context == "tick_event" else []
                state = TickState.read(self.npc, context, batch, 1)
                state.tool_result = "Nothing found." if context == "reflection_cont" else None
                built = prepare(self.npc, state)
            built = built.result
            self.assert_operators_section(built.messages, context)
            assert built.sections.get("operator"), context
            assert built.contract_problems == [], (context, built.contract_problems)

    def test_the_section_and_its_tool_rules_are_never_shrunk(self):
        self.npc.ai.set("assistant_system_prompt", "My own long guideline. " * 3000)
        builder = ContextBuilder(self.npc, get_context_config("tick_event"), model="openai/x")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/x": 4096}):
            built = builder.build().result
        assert built.fits and "system_prompt" in built.shrunk  # the NPC's own text gave way
        self.assert_operators_section(built.messages)

    def test_the_assessment_carries_no_secret_lines(self):
        self.npc.ai.set_execution_config(task_assessment_enabled=True)
        self.speak("Hello Innkeeper!")
        self.server.enqueue(
            {"text": '{"recommended_mode": "react_loop", "recommended_iterations": 2}'},
            {"tool_calls": [call("say", message="Welcome!")]},
        )
        self.tick()
        requests = self.server.requests_to("/v1/chat/completions")
        assessment = contracts.request_text(requests[0].body["messages"])
        acting = contracts.request_text(requests[1].body["messages"])
        assert "## Task: assessment" in assessment
        assert "Never sell ale to minors." in assessment  # the operator's rules still apply
        assert "cellar key" not in assessment and "Secret:" not in assessment
        assert "Secret: the cellar key is under the mat" in acting  # the NPC must keep it

    def test_a_summary_carries_no_operator_text(self):
        self.npc.ai.set(
            "history",
            hist.append_tick(
                [],
                1,
                [{"role": "user", "content": f"Line {i} of an old talk."} for i in range(30)],
                200,
            ),
        )
        self.npc.ai.set("compaction", {"pending": True, "last_tick": None})
        self.server.enqueue(
            {"tool_calls": [call("noop")]},  # the pre_compaction tick's own call
            {"text": "Guests talked about old things."},  # the summary
        )
        with override_settings(
            EVENNIA_AI_COMPACTION_STRATEGY="summarize", EVENNIA_AI_COMPACTION_KEEP_RECENT=0
        ):
            self.tick()
        texts = [
            contracts.request_text(r.body["messages"])
            for r in self.server.requests_to("/v1/chat/completions")
        ]
        summaries = [t for t in texts if "## Task: summarise" in t]
        assert summaries, texts
        for text in summaries:
            assert "cellar key" not in text and "Never sell ale" not in text

    def test_a_helper_gets_the_operators_section_and_the_trust_note(self):
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=1)
        self.npc.ai.update_goals(lambda g: add_goal(g, "Stock the cellar", tick=1)[0])
        self.server.enqueue(
            {"tool_calls": [call("delegate_task", task="Look around and report")]},
            {"text": "A warm room with a bar."},  # the helper's report
            {"tool_calls": [call("noop")]},
        )
        patch, autonomy = autonomous_loop()
        with patch, autonomy:
            trace = self.tick()
        assert trace.stop_reason != "contract_violation", trace.error
        requests = [r.body["messages"] for r in self.server.requests_to("/v1/chat/completions")]
        helpers = [m for m in requests if "## Task: delegate" in contracts.request_text(m)]
        assert len(helpers) == 1, [contracts.request_text(m)[-300:] for m in requests]
        helper = helpers[0]
        self.assert_operators_section(helper + [{"role": "user"}], "helper")
        assert "Persona of Innkeeper: A warm innkeeper." in helper[0]["content"]

    def test_no_helper_runs_when_the_override_file_cannot_be_read(self):
        with override_settings(EVENNIA_AI_OPERATOR_OVERRIDE="/nonexistent/prime.md"):
            with self.assertRaises(Exception) as caught:
                helper_messages(self.npc, "Look around")
        assert "EVENNIA_AI_OPERATOR_OVERRIDE" in str(caught.exception)


class TestBrokenContractsAreNotSent(OperatorSetUp, ModelBase):
    """A registry stored before edits were checked (written directly here) still cannot make a
    tick send a request without its event: the tick stops with ``contract_violation``."""

    def setUp(self):
        super().setUp()
        self.set_up_operator()
        self.registry._write("static_overrides", {6000: {"enabled": False, "content": ""}})
        contracts.take_violations()

    def check_stopped(self):
        self.speak("Hello Innkeeper!")
        self.server.enqueue({"tool_calls": [call("say", message="Welcome!")]})
        trace = self.tick()
        assert self.server.requests_to("/v1/chat/completions") == []  # nothing was sent
        assert trace.stop_reason == "contract_violation"
        assert "breaks its contract" in trace.error and "no event" in trace.error
        status = self.npc.ai.status()
        assert status["last_error"] == trace.error
        assert self.npc.ai.traces()[-1]["stop_reason"] == "contract_violation"
        assert len(pending_events(self.npc.ai.event_queue)) == 1  # the line waits
        assert contracts.take_violations()[-1][0] == "tick_event"
        return trace

    def test_in_production(self):
        with override_settings(EVENNIA_AI_STRICT_CONTRACTS=False):
            self.check_stopped()

    def test_in_tests(self):
        self.check_stopped()

    def test_repairing_the_registry_lets_it_answer(self):
        self.check_stopped()
        self.registry.reset_static_component(6000)
        self.server.enqueue({"tool_calls": [call("say", message="Welcome!")]})
        trace = self.tick()
        assert trace.stop_reason != "contract_violation", trace.error
        assert len(self.server.requests_to("/v1/chat/completions")) == 1


class TestStatusShowsTheStop(OperatorSetUp, AICommandTestBase):
    def setUp(self):
        super().setUp()
        self.set_up_operator()
        self.registry._write("static_overrides", {6000: {"enabled": False, "content": ""}})

    def test_aistatus_names_the_reason(self):
        self.char1.at_say("Hello Innkeeper!")
        with override_settings(EVENNIA_AI_STRICT_CONTRACTS=False):  # as in production
            self.npc.ai.script.run_tick()
        out = words(self.call(CmdAIStatus(), "Innkeeper"))  # its lines are wrapped
        assert "breaks its contract" in out and "no event" in out, out
        assert "it was not sent" in out and "tick_event contract_violation" in out, out
        assert contracts.take_violations()[-1][0] == "tick_event"


class TestEditsThatBreakAContractAreRefused(AICommandTestBase):
    def setUp(self):
        super().setUp()
        self.registry = get_prompt_registry()

    def unchanged(self, before):
        assert self.registry.export_json() == before

    def test_aiprompt_disable_and_edit(self):
        before = self.registry.export_json()
        out = words(self.call(cmds.CmdAIPrompt(), "/disable 6000"))
        assert "Refused" in out and "6000 (pending_event)" in out and "tick_event" in out
        assert "event" in out
        out = words(self.call(cmds.CmdAIPrompt(), "/edit 6000 = Nothing happened."))
        assert "Refused" in out and "{pending_event}" in out
        out = words(self.call(cmds.CmdAIPrompt(), "/disable 4000"))
        assert "Refused" in out and "goals of every tick_autonomous request" in out
        out = words(self.call(cmds.CmdAIPrompt(), "/disable 7000"))
        assert "Refused" in out and "reflection_cont" in out
        self.unchanged(before)
        # what no contract needs can still go
        self.call(cmds.CmdAIPrompt(), "/disable 0", "Component 0")
        self.call(cmds.CmdAIPrompt(), "/disable 3000", "Component 3000")
        self.call(cmds.CmdAIPrompt(), "/edit 6000 = What happened: {pending_event}", "Component")

    def test_aicontext(self):
        before = self.registry.export_json()
        out = words(
            self.call(
                cmds.CmdAIContext(), '/edit tick_event = {"enabled_components": [0, 1000, 5000]}'
            )
        )
        assert "Refused: Context 'tick_event' must include component 6000" in out
        out = words(
            self.call(
                cmds.CmdAIContext(),
                '/edit tick_event = {"component_overrides": {"pending_event": {"content": "x"}}}',
            )
        )
        assert "Refused" in out and "must keep {pending_event}" in out
        out = words(
            self.call(cmds.CmdAIContext(), '/edit reflection_cont = {"enabled_components": [0]}')
        )
        assert "Refused" in out and "tool_results" in out
        self.unchanged(before)
        self.call(
            cmds.CmdAIContext(),
            '/edit tick_event = {"enabled_components": [6000]}',
            "Context tick_event updated",
        )
        assert self.registry.get_effective_context_config("tick_event").enabled_components == [6000]

    def test_airegistry_import_and_dry_run(self):
        before = self.registry.export_json()
        data = json.dumps(
            {
                "static_overrides": {"pending_event": {"enabled": False}},
                "templates": [{"key": "rules", "name": "Rules", "content": "Be kind."}],
            }
        )
        for switch in ("/import", "/dryrun"):
            out = words(self.call(cmds.CmdAIRegistry(), f"{switch} {data}"))
            assert "Refused" in out and "6000 (pending_event) cannot be disabled" in out, out
        self.unchanged(before)  # all or nothing: the template was not imported either
        data = json.dumps({"context_configs": {"tick_event": {"enabled_components": [0]}}})
        out = self.call(cmds.CmdAIRegistry(), f"/import {data}")
        assert "Refused" in out
        self.unchanged(before)

    def test_registry_methods(self):
        reg = self.registry
        with self.assertRaises(PromptRegistryError):
            reg.update_component(6000, enabled=False)
        with self.assertRaises(PromptRegistryError):
            reg.import_component_json(
                {"id": 6000, "key": "pending_event", "is_static": True, "enabled": False}
            )
        with self.assertRaises(PromptRegistryError):
            reg.set_context_customization("tick_autonomous", enabled_components=[0, 6000])
        reg.set_context_customization("tick_event", enabled_components=[0, 6000, 3000])
        assert reg.clear_context_customization("tick_event", "enabled_components")
        with self.assertRaises(PromptRegistryError):
            reg.update_component(6000, content="")
        assert reg.get_component(6000).enabled and reg.get_component(6000).content == (
            "{pending_event}"
        )

    def test_a_registry_already_broken_can_still_be_edited_and_repaired(self):
        self.registry._write("static_overrides", {6000: {"enabled": False, "content": ""}})
        self.registry.update_component(3000, enabled=False)  # unrelated: allowed
        self.registry.update_component(6000, enabled=True, content="{pending_event}")
        assert contract_problems_of(get_context_config("tick_event"), []) == []


def test_the_contracts_name_the_components_they_need():
    assert contracts.required_components("tick_event") == (("pending_event", "event"),)
    assert contracts.required_components("tick_autonomous") == (("goals", "goals"),)
    assert contracts.required_components("reflection_cont") == (("tool_result", "tool_results"),)
    assert contracts.required_components("reflection") == ()
    config = get_context_config("tick_event")
    config.enabled_components = [0]
    assert contract_problems_of(config) == [
        "context 'tick_event' must include component 6000 (pending_event): it carries the "
        "event of every tick_event request"
    ]


def test_assembly_opens_with_the_operators_section_whatever_is_selected():
    config = get_context_config("tick_event")
    config.enabled_components = [6000]
    values = {"system_prompt": "You are Bob.", "pending_event": 'Alice says: "Hi."'}
    for components in (get_static_components(), []):
        prompt = assemble_messages(
            components, config, values, operator="<operator>\nX\n</operator>"
        )
        assert prompt.messages[0] == {"role": "system", "content": "<operator>\nX\n</operator>"}
        assert prompt.sections[0].key == "operator"
        assert validate_chat_messages(prompt.messages) == []


def test_the_public_text_leaves_out_secret_lines_only():
    section = "<operator>\nBe kind.\n  secret : the key\nSecret: the map\n</operator>"
    assert public_text(section) == "<operator>\nBe kind.\n</operator>"
    messages = [{"role": "system", "content": section + "\n\nYou are Bob."}]
    public = without_secrets(messages, section)
    assert public[0]["content"] == "<operator>\nBe kind.\n</operator>\n\nYou are Bob."
    assert messages[0]["content"].startswith(section)  # the input is not changed
