"""Pure parts of the engine: tick traces round-trip, assessment replies parse restrict-only."""

import json
import logging

from evennia_ai.engine.assessment import assess_task, parse_assessment
from evennia_ai.engine.trace import IterationTrace, StopReason, TickTrace, ToolCallTrace
from evennia_ai.llm.types import LLMResult
from evennia_ai.utils import truncate
from evennia_ai.workspace.sleep import in_sleep_window


def test_trace_round_trip_through_json():
    trace = TickTrace(tick_id=3, context_type="tick_event", event_ids=["e1"])
    it = IterationTrace(
        index=0,
        sections={"system_prompt": 120},
        usage={"prompt_tokens": 200, "completion_tokens": 12},
        cost=0.001,
    )
    it.tool_calls.append(
        ToolCallTrace(id="c1", name="say", arguments={"message": "hi"}, success=True)
    )
    trace.add_iteration(it)
    trace.stop_reason = StopReason.TERMINAL_TOOL.value
    data = json.loads(json.dumps(trace.to_dict()))
    back = TickTrace.from_dict(data)
    assert back.prompt_tokens == 200 and back.completion_tokens == 12
    assert back.iterations[0].tool_calls[0].name == "say"
    assert back.tool_calls[0].arguments == {"message": "hi"}
    assert back.stop_reason == "terminal_tool"


def test_trace_from_older_dict_ignores_unknown_keys():
    back = TickTrace.from_dict(
        {"tick_id": 1, "nonsense": 5, "iterations": [{"index": 0, "junk": 1}]}
    )
    assert back.tick_id == 1 and back.iterations[0].index == 0


def test_truncate():
    assert truncate("abc", 5) == "abc"
    assert truncate("x" * 100, 4) == "xxxx... [96 characters cut]"
    assert truncate(None) == ""


def test_parse_assessment_accepts_documented_format():
    text = 'Sure: ```json\n{"recommended_iterations": 12, "recommended_mode": "single_action", "recommend_confirm_dangerous": true}\n```'
    assert parse_assessment(text) == {
        "recommended_iterations": 10,
        "recommended_mode": "single_action",
        "recommend_confirm_dangerous": True,
    }


def test_parse_assessment_ignores_garbage():
    assert parse_assessment(None) == {}
    assert parse_assessment("no json here") == {}
    assert parse_assessment("{not json}") == {}
    assert parse_assessment('{"recommended_mode": "godmode", "recommended_iterations": "5"}') == {}
    assert parse_assessment("[1, 2]") == {}


def test_a_failed_assessment_is_logged_with_the_npc_model_and_reason(caplog):
    from twisted.internet import defer

    class FailingClient:
        def complete(self, messages, tools=None, **options):
            assert options["caller"] == "evennia_ai [Marta#12]"
            return defer.succeed(LLMResult(error="timed out after 30 s", model="openai/x"))

    with caplog.at_level(logging.WARNING, logger="evennia_ai"):
        done = assess_task(FailingClient(), [], model="openai/x", caller="evennia_ai [Marta#12]")
    assert done.result[0] == {}
    assert [r.getMessage() for r in caplog.records] == [
        "evennia_ai [Marta#12]: the assessment call to model openai/x failed (timed out after "
        "30 s); the tick goes on without its advice"
    ]


def test_sleep_window():
    from datetime import datetime

    assert in_sleep_window(("22:00", "06:00"), datetime(2026, 1, 1, 23, 30))
    assert in_sleep_window(("22:00", "06:00"), datetime(2026, 1, 1, 5, 59))
    assert not in_sleep_window(("22:00", "06:00"), datetime(2026, 1, 1, 6, 0))
    assert in_sleep_window(("01:00", "02:00"), datetime(2026, 1, 1, 1, 30))
    assert not in_sleep_window(None)
    assert not in_sleep_window(("bad", "x"))
