"""The ReAct loop: its logic against the in-process scripted model, and the real client path
(HTTP, litellm, faults, retries, fallbacks, the JSON protocol) against the loopback model server.

The client's thread hop is made synchronous, so each loop runs to completion inside the test.
"""

import dataclasses
import inspect
import json
import typing

import pytest
from django.test import override_settings
from twisted.internet import defer, task

from evennia_ai.engine import react
from evennia_ai.engine.react import LoopRequest, ReactLoop, TickLimits
from evennia_ai.engine.trace import StopReason, TickTrace
from evennia_ai.llm import client as client_module
from evennia_ai.llm import tokens
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.llm.contracts import DELEGATE_INSTRUCTION, render_task
from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.prompt.assembly import validate_chat_messages
from evennia_ai.prompt.builder import BuiltContext, schema_name
from evennia_ai.prompt.execution_pattern import ExecutionPattern
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.testing.scripted_model import ScriptedModel
from evennia_ai.tools.base import TickServices, Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.rules import ToolRule


class Say(Tool):
    name = "say"
    description = "Say something aloud."
    parameters = {
        "type": "object",
        "properties": {"message": {"type": "string", "minLength": 1}},
        "required": ["message"],
        "additionalProperties": False,
    }
    category = ToolCategory.TERMINAL

    def __init__(self):
        self.said = []

    def run(self, ctx, message):
        self.said.append(message)
        return ToolResult.ok(f"You said: {message}")


class Look(Tool):
    name = "look"
    description = "Look around."
    parameters = {"type": "object", "properties": {"target": {"type": "string"}}}
    cacheable = True

    def __init__(self):
        self.runs = 0

    def run(self, ctx, target="here"):
        self.runs += 1
        return ToolResult.ok({"room": "The Gilded Tankard", "target": target})


class Wipe(Tool):
    name = "wipe_world"
    description = "Delete everything."
    category = ToolCategory.DANGEROUS

    def __init__(self):
        self.runs = 0

    def run(self, ctx):
        self.runs += 1
        return ToolResult.ok("wiped")


class Broken(Tool):
    name = "broken"
    description = "Always raises."

    def run(self, ctx):
        raise RuntimeError("kaboom")


class Slow(Tool):
    name = "slow"
    description = "Never finishes."
    category = ToolCategory.ASYNC_REQUIRED
    timeout = 5

    def run(self, ctx):
        return defer.Deferred()


def sync_thread(fn, *args, **kwargs):
    return defer.maybeDeferred(fn, *args, **kwargs)


@pytest.fixture(autouse=True)
def synchronous_client(monkeypatch):
    monkeypatch.setattr(client_module, "defer_to_thread", sync_thread)


@pytest.fixture
def server():
    """The loopback model server, for tests of the real client path (HTTP, litellm)."""
    with ModelServer() as srv:
        yield srv


@pytest.fixture
def model():
    """The in-process scripted model, for tests of the loop's own logic."""
    return ScriptedModel()


def make_client(server, **kwargs):
    options = dict(
        model="openai/test-model",
        api_base=server.url,
        api_key="x",
        timeout=2,
        max_retries=0,
        base_delay=0.01,
        max_delay=0.05,
    )
    options.update(kwargs)
    return UnifiedLLMClient(**options)


def pattern(mode="react_loop", iterations=5, confirm=True, terminal=True, categories=None):
    return ExecutionPattern(
        mode=mode,
        max_iterations=iterations,
        allowed_categories=categories,
        terminal_ends_loop=terminal,
        dangerous_requires_confirm=confirm,
        multi_tool_enabled=mode != "single_action",
        sub_agents_enabled=False,
    )


MESSAGES = [
    {"role": "system", "content": "You are Innkeeper."},
    {"role": "user", "content": 'Alice says, "Hello!"'},
]


def make_loop(client, tools, pat=None, *, model=None, rules=(), request=None, **kwargs):
    """A loop as a tick builds it: what the tick lends in ``ctx.services``, then the request
    (``request``, by default MESSAGES uncounted) and what is the loop's own (``kwargs``)."""
    services = TickServices(
        client=client, model=model, pattern=pat or pattern(), tools=list(tools), rules=list(rules)
    )
    ctx = ToolContext(services=services)
    return ReactLoop(ctx, request or LoopRequest(MESSAGES), trace=TickTrace(tick_id=1), **kwargs)


def run(model, tools, pat=None, messages=MESSAGES, **kwargs):
    """Run a loop against ``model``: a ScriptedModel, or the HTTP model server (real client)."""
    client = kwargs.pop("client", None)
    if client is None:
        client = model if isinstance(model, ScriptedModel) else make_client(model)
    kwargs.setdefault("request", LoopRequest(messages))
    d = make_loop(client, tools, pat, **kwargs).run()
    assert d.called, "the loop did not finish synchronously"
    return d.result


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def counted(messages, total_tokens):
    """A first request its maker counted (as the builder counts each): the loop counts the
    requests after it with the model's counter."""
    return LoopRequest(messages, total_tokens=total_tokens)


def test_terminal_tool_ends_loop(model):
    say = Say()
    model.enqueue({"tool_calls": [call("say", message="Welcome!")]})
    out = run(model, [say, Look()])
    assert out.stop_reason == StopReason.TERMINAL_TOOL
    assert say.said == ["Welcome!"]
    assert out.trace.stop_reason == "terminal_tool"
    assert out.trace.iterations[0].tool_calls[0].status == "ran"
    assert out.trace.prompt_tokens > 0


def test_text_reply_is_spoken_through_the_speech_tool(model):
    say = Say()
    model.enqueue({"text": "Evening, Alice."})
    out = run(model, [say])
    assert out.stop_reason == StopReason.TEXT_REPLY
    assert say.said == ["Evening, Alice."]


def test_text_reply_without_speech_tool_is_only_traced(model):
    model.enqueue({"text": "Just thinking."})
    out = run(model, [Look()])
    assert out.stop_reason == StopReason.TEXT_REPLY
    assert out.trace.iterations[0].text == "Just thinking."
    assert out.final_text == "Just thinking."


def test_react_loop_feeds_results_back(model):
    say, look = Say(), Look()
    model.enqueue(
        {"tool_calls": [call("look")]}, {"tool_calls": [call("say", message="Nice room.")]}
    )
    out = run(model, [say, look])
    assert out.stop_reason == StopReason.TERMINAL_TOOL
    assert len(out.trace.iterations) == 2
    second = model.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and "Gilded Tankard" in second[-1]["content"]
    assert not validate_chat_messages([MESSAGES[0]] + out.new_messages[:0] + second[1:])


def test_several_calls_in_one_response_run_in_order(model):
    say, look = Say(), Look()
    model.enqueue({"tool_calls": [call("look"), call("say", message="Hi")]})
    out = run(model, [say, look])
    assert [c.name for c in out.trace.tool_calls] == ["look", "say"]
    assert out.stop_reason == StopReason.TERMINAL_TOOL


def test_max_iterations(model):
    look = Look()
    model.default_reply = {"tool_calls": [call("look", target="bar")]}
    out = run(model, [look, Say()], pattern(iterations=3))
    assert out.stop_reason == StopReason.MAX_ITERATIONS
    assert len(out.trace.iterations) == 3
    assert look.runs == 1  # cacheable: same arguments within the tick ran once


def test_single_action_runs_only_the_first_call(model):
    say, look = Say(), Look()
    model.enqueue({"tool_calls": [call("look"), call("say", message="Hi")]})
    out = run(model, [say, look], pattern(mode="single_action", iterations=1))
    assert [c.status for c in out.trace.tool_calls] == ["ran", "skipped"]
    assert say.said == []
    assert out.stop_reason == StopReason.MAX_ITERATIONS
    # the skipped call still gets an answer, so the history stays a valid transcript
    assert not validate_chat_messages([MESSAGES[0]] + out.new_messages)


def test_unknown_tool_is_fed_back_as_error(server):
    say = Say()
    server.enqueue({"fault": "unknown_tool"}, {"tool_calls": [call("say", message="Sorry")]})
    out = run(server, [say])
    first = out.trace.iterations[0].tool_calls[0]
    assert first.status == "refused" and "Unknown tool" in first.error
    assert "say" in first.error  # lists the available tools
    assert out.stop_reason == StopReason.TERMINAL_TOOL


def test_invalid_arguments_are_fed_back(server):
    say = Say()
    server.enqueue(
        {"fault": "invalid_args"},
        {"tool_calls": [call("say")]},
        {"tool_calls": [call("say", message="ok")]},
    )
    out = run(server, [say])
    errors = [c.error for c in out.trace.tool_calls if c.error]
    assert "not valid JSON" in errors[0]
    assert "missing required argument 'message'" in errors[1]
    assert say.said == ["ok"]


def test_repeated_failures_end_the_tick(model):
    model.default_reply = {"tool_calls": [call("nonexistent")]}
    out = run(model, [Say()], pattern(iterations=10))
    assert out.stop_reason == StopReason.ERROR
    assert len(out.trace.iterations) == 3
    assert "failed in a row" in out.trace.error


def test_tool_exception_becomes_error_result(model):
    model.enqueue({"tool_calls": [call("broken")]}, {"tool_calls": [call("say", message="oops")]})
    out = run(model, [Broken(), Say()])
    assert "kaboom" in out.trace.tool_calls[0].error
    assert out.stop_reason == StopReason.TERMINAL_TOOL


@pytest.mark.parametrize("fault", ["500", "malformed", "empty_choices"])
def test_provider_faults_end_the_tick_cleanly(server, fault):
    server.enqueue({"fault": fault})
    out = run(server, [Say()])
    assert out.stop_reason == StopReason.ERROR
    assert out.trace.iterations[0].error
    # the model as the operator configured it, then the provider's reason
    assert out.trace.error.startswith("model call failed: openai/test-model: ")


def test_timeout_ends_the_tick(server):
    server.enqueue({"fault": "hang", "seconds": 3})
    out = run(server, [Say()], client=make_client(server, timeout=0.3))
    assert out.stop_reason == StopReason.ERROR
    assert out.trace.iterations[0].error == "timed out after 0.3 s"


def test_retry_then_success(server):
    server.enqueue(
        {"fault": "500"},
        {"fault": "429", "retry_after": 0},
        {"tool_calls": [call("say", message="hi")]},
    )
    out = run(server, [Say()], client=make_client(server, max_retries=2))
    assert out.stop_reason == StopReason.TERMINAL_TOOL
    assert len(server.requests_to("/v1/chat/completions")) == 3


def test_dangerous_tool_needs_confirmation(model):
    wipe = Wipe()
    queued = []
    model.enqueue(
        {"tool_calls": [call("wipe_world"), call("wipe_world")]},
        {"tool_calls": [call("say", message="Waiting for approval.")]},
    )
    out = run(
        model,
        [wipe, Say()],
        on_dangerous=lambda tool, args, ctx: queued.append(tool.name) or "c_1",
    )
    assert wipe.runs == 0
    assert queued == ["wipe_world"]
    assert out.confirmations == ["c_1"]
    statuses = [c.status for c in out.trace.tool_calls]
    assert statuses == ["pending", "skipped"]  # the tick ends at the parked call
    assert "pending_confirmation" in out.trace.tool_calls[0].result
    assert out.stop_reason == StopReason.AWAITING_APPROVAL
    assert len(model.requests) == 1  # the model is not asked again to tell the asker


@pytest.mark.parametrize("mode", ["single_action", "react_loop", "plan_execute"])
def test_a_parked_call_tells_the_askers_once_without_a_model_call(model, mode, monkeypatch):
    told = []
    monkeypatch.setattr(
        react.audience, "tell_speakers", lambda npc, who, setting: told.append((who, setting))
    )
    model.enqueue(
        *([{"text": "1. ask"}] if mode == "plan_execute" else []),
        {"tool_calls": [call("wipe_world")]},
        {"tool_calls": [call("say", message="It needs approval.")]},
    )
    before = 1 if mode == "plan_execute" else 0
    out = run(
        model,
        [Wipe(), Say()],
        pattern(mode=mode, iterations=1 if mode == "single_action" else 5),
        on_dangerous=lambda tool, args, ctx: "c_1",
        askers=lambda: ["Alice"],
    )
    assert out.stop_reason == StopReason.AWAITING_APPROVAL
    assert out.trace.stop_reason == "awaiting_approval"
    assert told == [(["Alice"], "EVENNIA_AI_APPROVAL_MESSAGE")]
    assert len(model.requests) == before + 1  # no call after the parked one
    assert "has been told it needs approval" in out.trace.tool_calls[-1].result


def test_no_approval_line_when_the_npc_already_spoke_this_tick(model, monkeypatch):
    told = []
    monkeypatch.setattr(
        react.audience, "tell_speakers", lambda npc, who, setting: told.append(setting)
    )
    say = Say()
    model.enqueue(
        {"tool_calls": [call("say", message="Let me ask the owner."), call("wipe_world")]}
    )
    out = run(
        model,
        [Wipe(), say],
        pattern(terminal=False),
        on_dangerous=lambda tool, args, ctx: "c_1",
        askers=lambda: ["Alice"],
    )
    assert say.said == ["Let me ask the owner."]
    assert out.stop_reason == StopReason.AWAITING_APPROVAL and told == []
    assert len(model.requests) == 1


def test_dangerous_tool_without_confirmation_runs_once(model):
    wipe = Wipe()
    model.enqueue(
        {"tool_calls": [call("wipe_world")]}, {"tool_calls": [call("say", message="done")]}
    )
    out = run(model, [wipe, Say()], pattern(confirm=False))
    assert wipe.runs == 1 and out.stop_reason == StopReason.TERMINAL_TOOL


def test_dangerous_tool_with_no_confirmation_channel_is_refused(model):
    wipe = Wipe()
    model.enqueue({"tool_calls": [call("wipe_world")]}, {"tool_calls": [call("say", message="no")]})
    out = run(model, [wipe, Say()])
    assert wipe.runs == 0 and out.trace.tool_calls[0].status == "refused"


def test_budget_stops_before_the_call(model):
    out = run(model, [Say()], limits=TickLimits(max_tokens=5), request=counted(MESSAGES, 100))
    assert out.stop_reason == StopReason.BUDGET
    assert not model.requests


def test_cancelled(model):
    out = run(model, [Say()], is_cancelled=lambda: "the NPC was paused")
    assert out.stop_reason == StopReason.CANCELLED
    assert out.trace.error == "the NPC was paused"


def test_cancelled_after_the_model_answered(model):
    state = {"calls": 0}

    def cancelled():
        state["calls"] += 1
        return "the NPC moved away" if state["calls"] > 1 else None

    say = Say()
    model.enqueue({"tool_calls": [call("say", message="hi")]})
    out = run(model, [say], is_cancelled=cancelled)
    assert out.stop_reason == StopReason.CANCELLED and say.said == []


def test_rule_max_calls_and_exit_loop(model):
    look, say = Look(), Say()
    model.enqueue(
        {"tool_calls": [call("look", target="a"), call("look", target="b")]},
        {"tool_calls": [call("say", message="x")]},
    )
    out = run(model, [look, say], rules=[ToolRule.max_calls("look", 1)])
    assert [c.status for c in out.trace.tool_calls][:2] == ["ran", "refused"]
    assert "at most 1" in out.trace.tool_calls[1].error

    model.enqueue({"tool_calls": [call("look")]})
    out = run(model, [Look(), say], rules=[ToolRule.exit_loop("look")])
    assert out.stop_reason == StopReason.TERMINAL_TOOL and len(out.trace.iterations) == 1


def test_rule_start_constraint_and_requires_prior(model):
    say = Say()
    model.enqueue(
        {"tool_calls": [call("say", message="too early")]},
        {"tool_calls": [call("look"), call("say", message="now")]},
    )
    out = run(
        model,
        [Look(), say],
        rules=[ToolRule.start_constraint("look"), ToolRule.requires_prior("say", "look")],
    )
    assert out.trace.tool_calls[0].status == "refused"
    assert say.said == ["now"]


def test_rule_continue_loop_keeps_going_after_terminal(model):
    say = Say()
    model.enqueue({"tool_calls": [call("say", message="one")]}, {"text": "done thinking"})
    out = run(model, [say], rules=[ToolRule.continue_loop("say")])
    assert len(out.trace.iterations) == 2 and say.said[0] == "one"


def test_plan_execute_plans_first(model):
    say = Say()
    model.enqueue({"text": "1. greet"}, {"tool_calls": [call("say", message="Hello")]})
    out = run(model, [say], pattern(mode="plan_execute"))
    reqs = model.requests
    assert not reqs[0]["tools"]
    assert out.trace.iterations[0].kind == "plan"
    assert any("Plan:" in (m.get("content") or "") for m in reqs[1]["messages"])
    assert say.said == ["Hello"]


def test_async_tool_times_out():
    clock = task.Clock()
    ctx_tools = [Slow()]

    class Client:
        def __init__(self):
            self.n = 0

        def complete(self, messages, tools=None, model=None, **options):
            from evennia_ai.llm.types import LLMResult, ToolCall

            self.n += 1
            if self.n == 1:
                return defer.succeed(
                    LLMResult(
                        tool_calls=[
                            ToolCall(id="c1", name="slow", arguments={}, raw_arguments="{}")
                        ],
                        model="fake",
                    )
                )
            return defer.succeed(LLMResult(text="gave up", model="fake"))

    d = make_loop(Client(), ctx_tools, clock=clock).run()
    assert not d.called
    clock.advance(5.1)
    assert d.called
    out = d.result
    assert "timed out after 5 s" in out.trace.tool_calls[0].error
    assert out.stop_reason == StopReason.TEXT_REPLY


def test_fallback_model_used(server):
    server.enqueue({"fault": "500"}, {"tool_calls": [call("say", message="from fallback")]})
    client = make_client(server, fallbacks=["openai/backup-model"])
    out = run(server, [Say()], client=client)
    assert out.stop_reason == StopReason.TERMINAL_TOOL
    assert out.trace.iterations[0].model == "openai/backup-model"
    bodies = [r.body["model"] for r in server.requests_to("/v1/chat/completions")]
    assert bodies == ["test-model", "backup-model"]


def test_json_protocol_for_models_without_native_tools(server):
    say = Say()
    server.enqueue(
        {"text": 'Sure.\n```json\n{"tool": "say", "arguments": {"message": "Hi there"}}\n```'}
    )
    with override_settings(
        EVENNIA_AI_MODEL_SETTINGS={"openai/test-model": {"native_tools": False}}
    ):
        out = run(server, [say])
    body = server.requests_to("/v1/chat/completions")[0].body
    assert "tools" not in body
    assert "say(message: string)" in body["messages"][0]["content"]
    assert say.said == ["Hi there"]
    assert out.stop_reason == StopReason.TERMINAL_TOOL


def test_native_tools_for_unknown_openai_compatible_model(server):
    server.enqueue({"tool_calls": [call("say", message="hi")]})
    run(server, [Say()], client=make_client(server, model="openai/never-heard-of-it"))
    body = server.requests_to("/v1/chat/completions")[0].body
    assert body["tools"][0]["function"]["name"] == "say"
    json.dumps(body)


class Note(Tool):
    name = "note"
    description = "Note a fact."
    bookkeeping = True
    parameters = {"type": "object", "properties": {"fact": {"type": "string"}}}

    def __init__(self):
        self.notes = []

    def run(self, ctx, fact=""):
        self.notes.append(fact)
        return ToolResult.ok("noted")


def test_single_action_runs_bookkeeping_before_its_action(model):
    note, say = Note(), Say()
    model.enqueue(
        {
            "tool_calls": [
                call("note", fact="Alice likes stew"),
                call("say", message="Stew it is"),
                call("note", fact="late note"),
            ]
        }
    )
    out = run(model, [note, say], pattern(mode="single_action", iterations=1))
    assert note.notes == ["Alice likes stew"] and say.said == ["Stew it is"]
    assert [c.status for c in out.trace.tool_calls] == ["ran", "ran", "skipped"]
    assert out.stop_reason == StopReason.TERMINAL_TOOL


def test_scripted_model_stands_for_faults_and_bad_arguments(model):
    say = Say()
    model.enqueue(
        {"fault": "invalid_args"},
        {"fault": "unknown_tool"},
        {"tool_calls": [call("say", message="ok")]},
    )
    out = run(model, [say])
    calls = out.trace.tool_calls
    assert "not valid JSON" in calls[0].error and calls[1].name.startswith("no_such_tool")
    assert say.said == ["ok"]
    model.enqueue({"fault": "500"})
    out = run(model, [Say()])
    assert out.stop_reason == StopReason.ERROR and "500" in out.trace.error
    assert model.requests[-1]["tools"][0]["function"]["name"] == "say"


def test_system_status_reports_the_current_request_size(model):
    from evennia_ai.tools.status import GetSystemStatus

    model.enqueue(
        {"tool_calls": [call("get_system_status")]},
        {"tool_calls": [call("get_system_status")]},
        {"text": "done"},
    )
    status = GetSystemStatus()
    first = tokens.request_counter(None)(MESSAGES, [status.to_schema()])
    out = run(model, [status], request=counted(MESSAGES, first))
    used = [json.loads(c.result)["token_usage"]["estimated_used"] for c in out.trace.tool_calls]
    assert used[0] > 0 and used[1] > used[0]  # the second request carries the first result


def test_tool_calls_from_one_answer_are_capped(model):
    look = Look()
    model.enqueue({"tool_calls": [call("look", target=f"t{i}") for i in range(12)]}, {"text": "ok"})
    with override_settings(EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY=3):
        out = run(model, [look])
    calls = out.trace.tool_calls
    assert look.runs == 3 and len(calls) == 12
    assert all(c.status == "skipped" and "at most 3 tool calls" in c.error for c in calls[3:])
    # the model is told about every call it made (each call gets its result message)
    assert sum(1 for m in model.requests[1]["messages"] if m["role"] == "tool") == 12


def test_the_cap_of_calls_per_answer_is_a_setting(model):
    with override_settings(EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY=2):
        look = Look()
        model.enqueue({"tool_calls": [call("look", target=f"t{i}") for i in range(5)]})
        run(model, [look])
    assert look.runs == 2


def test_single_action_notes_then_still_answers(model):
    say, noted = Say(), []

    class Remember(Tool):
        name = "store_memory"
        description = "Remember a fact."
        parameters = {"type": "object", "properties": {"content": {"type": "string"}}}
        bookkeeping = True

        def run(self, ctx, content=""):
            noted.append(content)
            return ToolResult.ok("remembered")

    model.enqueue(
        {"tool_calls": [call("store_memory", content="Alice likes stew")]},  # notes only
        {"tool_calls": [call("say", message="Stew it is, Alice!")]},  # the answer
    )
    out = run(model, [say, Remember()], pattern(mode="single_action", iterations=1))
    assert noted == ["Alice likes stew"] and say.said == ["Stew it is, Alice!"]
    assert out.stop_reason == StopReason.TERMINAL_TOOL
    model.enqueue(*[{"tool_calls": [call("store_memory", content="x")]}] * 3)
    out = run(model, [say, Remember()], pattern(mode="single_action", iterations=1))
    assert out.stop_reason == StopReason.MAX_ITERATIONS  # one extra call at most
    assert len([it for it in out.trace.iterations if it.kind == "act"]) == 2


def test_tool_rules_hold_for_spoken_text(model):
    say = Say()
    model.enqueue({"text": "Hello there."})
    out = run(model, [say, Look()], rules=[ToolRule.requires_prior("say", "look")])
    assert say.said == []
    spoken = out.trace.tool_calls[0]
    assert spoken.status == "refused" and "Rule" in spoken.error


def test_tool_rules_only_restrict():
    """continue_loop asks for another call only within the iteration limit, and no rule
    offers a tool the loop was not given or skips a DANGEROUS tool's confirmation."""
    model = ScriptedModel()
    model.enqueue({"tool_calls": [call("say", message="one")]}, {"text": "more"})
    out = run(
        model,
        [Say()],
        pattern(mode="single_action", iterations=1),
        rules=[ToolRule.continue_loop("say")],
    )
    assert len(out.trace.iterations) == 1 and out.stop_reason == StopReason.MAX_ITERATIONS
    model = ScriptedModel()
    model.enqueue(*[{"tool_calls": [call("look")]}] * 5)
    out = run(model, [Look()], pattern(iterations=2), rules=[ToolRule.continue_loop("look")])
    assert len(out.trace.iterations) == 2
    wipe, model = Wipe(), ScriptedModel()
    model.enqueue({"tool_calls": [call("wipe_world")]}, {"text": "done"})
    rules = [ToolRule.start_constraint("wipe_world"), ToolRule.continue_loop("wipe_world")]
    run(model, [wipe, Look()], pattern(iterations=3), rules=rules)
    assert wipe.runs == 0  # it still waits for an operator
    model = ScriptedModel()
    model.enqueue({"tool_calls": [call("say", message="hi")]}, {"text": "done"})
    out = run(model, [Look()], rules=[ToolRule.start_constraint("say"), ToolRule.exit_loop("say")])
    assert out.trace.tool_calls[0].status == "refused"  # a rule is no way to get a tool


def run_for(model_name, client, request):
    """Run a loop whose requests go to ``model_name`` (``run`` names no model)."""
    d = make_loop(client, [Say()], model=model_name, request=request).run()
    assert d.called, "the loop did not finish synchronously"
    return d.result


def test_an_overflow_reads_the_same_whether_the_loop_or_the_gate_stops_it(model):
    """The loop checks a request before it sends it, the client's gate again for each model:
    both against the one request limit, both with the one message."""
    big = [MESSAGES[0], {"role": "user", "content": "word " * 3000}]
    with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"m/small": 2048}):
        limit = tokens.request_limit("m/small")
        needed = tokens.request_counter("m/small")(big, [Say().to_schema()])
        stopped = run_for("m/small", model, counted(big, needed))
        # a limit handed to the loop that the window cannot hold: the gate stops the request
        gated = run_for("m/small", ScriptedModel(), LoopRequest(big, limit=10**6))
    expected = tokens.overflow_message(needed, limit, "m/small")
    assert stopped.stop_reason == gated.stop_reason == StopReason.CONTEXT_OVERFLOW
    assert stopped.trace.error == gated.trace.error == expected
    assert model.requests == []  # the loop's check: nothing reached the model


# -- the loop is built from the tick's context and its first request ------------------------------
def test_the_loop_reads_what_the_tick_lends_from_ctx_services(model):
    """Client, model, tools, pattern and tool rules come from the services, not arguments."""
    say, look = Say(), Look()
    model.enqueue(
        {"tool_calls": [call("say", message="too early")]},
        {"tool_calls": [call("look"), call("say", message="now")]},
    )
    loop = make_loop(
        model, [say, look], model="openai/npc-own", rules=[ToolRule.requires_prior("say", "look")]
    )
    out = loop.run().result
    assert [r["model"] for r in model.requests] == ["openai/npc-own"] * 2
    assert [schema_name(s) for s in model.requests[0]["tools"]] == ["say", "look"]
    assert out.trace.tool_calls[0].status == "refused"  # the services' rules hold
    assert say.said == ["now"]
    # what the tools find in the services: the loop's count of calls and its request_tools
    services = loop.ctx.services
    assert services.rule_state is loop.rule_state and services.rule_state.calls == ["look", "say"]
    assert services.offer_tools == loop.offer_tools


def test_a_loop_built_the_old_way_no_longer_exists(model):
    with pytest.raises(TypeError):
        ReactLoop(
            client=model,
            tools=[Say()],
            pattern=pattern(),
            ctx=ToolContext(),
            trace=TickTrace(tick_id=1),
        )
    lent_by_the_tick = {"client", "model", "usage", "pattern", "tools", "rules", "rule_state"}
    from_the_request = {"request_limit", "count_tokens", "sections", "first_request_tokens"}
    parameters = set(inspect.signature(ReactLoop).parameters)
    assert not parameters & (lent_by_the_tick | {"budget_reached"} | from_the_request)
    assert {"ctx", "request", "trace"} <= parameters


def test_a_loop_needs_a_model_client_in_the_services():
    with pytest.raises(ValueError, match="no model client"):
        ReactLoop(ToolContext(), LoopRequest(MESSAGES), trace=TickTrace(tick_id=1))


def test_todays_budget_is_asked_of_the_services(model):
    services = TickServices(
        client=model, pattern=pattern(), tools=[Say()], budget_reached=lambda: True
    )
    loop = ReactLoop(
        ToolContext(services=services), LoopRequest(MESSAGES), trace=TickTrace(tick_id=1)
    )
    out = loop.run().result
    assert out.stop_reason == StopReason.BUDGET and not model.requests


def built_request(tools, total_tokens=123, limit=100_000):
    return BuiltContext(
        messages=MESSAGES,
        tool_schemas=[tool.to_schema() for tool in tools],
        sections={"persona": 7, "tools": 40},
        total_tokens=total_tokens,
        limit=limit,
    )


def test_the_built_request_gives_the_first_count_and_its_sections(model):
    say, look = Say(), Look()
    model.enqueue({"tool_calls": [call("look")]}, {"tool_calls": [call("say", message="hi")]})
    out = make_loop(model, [say, look], request=built_request([say, look])).run().result
    first, second = out.trace.iterations
    assert first.prompt_tokens == 123  # the builder's count: not counted again
    assert first.sections == {"persona": 7, "tools": 40}
    asked = model.requests[1]
    # the calls after it are counted as the builder counts, with the model's counter
    assert second.prompt_tokens == tokens.request_counter(None)(asked["messages"], asked["tools"])
    assert second.sections == {"request": second.prompt_tokens}
    assert model.requests[0]["options"]["prompt_tokens"] == 123


def test_the_built_schemas_are_narrowed_to_the_tools_of_the_services(model):
    say, look, wipe = Say(), Look(), Wipe()
    model.enqueue({"text": "hm"})
    out = make_loop(model, [say, look], request=built_request([wipe, say, look])).run().result
    sent = model.requests[0]["tools"]
    assert [schema_name(s) for s in sent] == ["say", "look"]
    # the builder counted a request with wipe_world's schema too: this one is counted afresh
    assert out.trace.iterations[0].prompt_tokens == tokens.request_counter(None)(MESSAGES, sent)


def test_the_built_limit_is_the_request_limit(model):
    out = make_loop(model, [Say()], request=built_request([Say()], limit=50)).run().result
    assert out.stop_reason == StopReason.CONTEXT_OVERFLOW and not model.requests
    assert out.trace.error == tokens.overflow_message(123, 50, None)


def test_calls_are_recorded_on_the_ticks_accountant_and_limits_count_the_loops_own(model):
    """A helper's cap counts the helper's calls, not the tick's; each call reaches the tick's
    accountant once, under the loop's kind."""
    task = render_task("delegate", DELEGATE_INSTRUCTION, {"task": "Look around"})
    request = LoopRequest([MESSAGES[0], {"role": "user", "content": task}])
    usage = UsageAccountant()
    usage.record(UsageRecord(kind="assessment", prompt_tokens=10_000))
    model.enqueue({"tool_calls": [call("look")]}, {"text": "done"})
    services = TickServices(client=model, pattern=pattern(), tools=[Look()], usage=usage)
    loop = ReactLoop(
        ToolContext(services=services),
        request,
        trace=TickTrace(tick_id=1),
        limits=TickLimits(max_tokens=5_000),
        record_as="delegate",
    )
    out = loop.run().result
    assert out.stop_reason == StopReason.TEXT_REPLY
    assert [r.kind for r in usage.records] == ["assessment", "delegate", "delegate"]
    assert not any(r.in_trace for r in usage.records)
    assert loop.spent.tokens == usage.tokens - 10_000 > 0
    assert {r["options"]["kind"] for r in model.requests} == {"delegate"}


def test_a_ticks_own_calls_are_recorded_in_its_trace(model):
    usage = UsageAccountant()
    model.enqueue({"text": "1. look"}, {"tool_calls": [call("say", message="hi")]})
    services = TickServices(
        client=model, pattern=pattern(mode="plan_execute"), tools=[Say()], usage=usage
    )
    ctx = ToolContext(context_type="tick_event", services=services)
    ReactLoop(ctx, LoopRequest(MESSAGES), trace=TickTrace(tick_id=1)).run()
    assert [(r.kind, r.in_trace) for r in usage.records] == [("plan", True), ("act", True)]
    assert {r["options"]["kind"] for r in model.requests} == {"tick_event"}


def test_tick_limits_are_typed_caps_without_state():
    limits = TickLimits(max_tokens=100, max_cost=0.5)
    assert limits.allows(used_tokens=60, used_cost=0.1, request_tokens=40)
    assert not limits.allows(used_tokens=61, used_cost=0.1, request_tokens=40)
    assert not limits.allows(used_tokens=0, used_cost=0.5, request_tokens=1)
    assert TickLimits().allows(10**9, 10**6, 10**9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_tokens = 1  # type: ignore[misc]
    hints = typing.get_type_hints(TickLimits)
    assert hints == {"max_tokens": int | None, "max_cost": float | None}
