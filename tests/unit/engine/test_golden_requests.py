"""Golden requests: what the demo Innkeeper sends for the calls replay does not rebuild.

``python -m evennia_ai.engine.replay`` rebuilds the request of every recorded tick, but not the
calls made inside a tick: the history summary (``summarise``), the task assessment
(``assessment``) and the goal decomposition (``goal_decompose``). These tests pin those
requests exactly, so a refactor that must leave every request byte-identical shows any change
as a diff against ``tests/unit/engine/golden/<kind>.json``.

Each test sets up the Innkeeper of the benchmarks (``bench/tick.py``: persona, operator
prompt, three goals, a 50-message history, 20 journal entries, 10 known people) on the test
database, with the clock frozen and model calls going through the real client (litellm) to the
loopback model server, answered by the reading model. What is compared, per call kind:

- ``call``: what the tick handed the client (messages, tool schemas, model, kind and the
  other options), taken at :meth:`UnifiedLLMClient.acomplete`;
- ``sent``: the JSON body the model server received (what litellm made of it: the model name
  as routed, the parameters; messages and tools that arrived exactly as the client got them
  are written ``"(as in call)"``).

Each message's text is stored as the list of its lines, so a changed word shows as one changed
line in ``git diff`` and in the failure. Database ids (``#12``) are written as the name of
their object (``#<Innkeeper>``), so the files do not depend on how many objects other tests
created first; the clock stands at :data:`FROZEN`.

To regenerate the files after a deliberate change of a request::

    EVENNIA_AI_UPDATE_GOLDEN=1 python -m pytest tests/unit/engine/test_golden_requests.py

then read ``git diff tests/unit/engine/golden/`` and explain every change in the pull request.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from unittest import mock

from django.test import override_settings
from evennia.utils.test_resources import BaseEvenniaTestCase
from twisted.internet import defer
from twisted.internet import threads as twisted_threads

from evennia_ai import scripts  # noqa: F401  (the tick and what it uses, imported first)
from evennia_ai import utils
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.memory.compression import SUMMARY_BATCH, SUMMARY_PREFIX
from evennia_ai.memory.history import append_tick
from evennia_ai.prompt_registry import get_prompt_registry
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.testing.reading_model import read_and_answer
from evennia_ai.world import clock

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bench.tick import _innkeeper  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("EVENNIA_AI_UPDATE_GOLDEN", "") not in ("", "0")
REGENERATE = (
    "regenerate with EVENNIA_AI_UPDATE_GOLDEN=1 pytest tests/unit/engine/test_golden_requests.py"
)
MODEL = "openai/test-model"
#: The moment the clock stands still at (a Friday evening).
FROZEN = datetime(2026, 3, 6, 19, 30, 0, tzinfo=timezone.utc)
_DBREF = re.compile(r"#(\d+)\b")
#: What ``sent`` holds for messages or tools that reached the server exactly as the client got
#: them.
SAME_AS_CALL = "(as in call)"


# -- the capture point (a refactor that renames it changes this helper only) ---------------------
#: Options of a client call that never reach the model: who asks (for log lines) and the
#: caller's own token count of the request.
NOT_SENT = ("caller", "prompt_tokens")


def capture_client_calls(calls: list) -> Any:
    """A patch that notes every call the LLM client is given, then makes it as usual.

    Noted: the messages, the tool schemas, the model that answers (resolved as the client
    resolves it, so passing the default model by name or as None is the same call) and every
    other option (``kind``, ``max_tokens``, ...) but those in :data:`NOT_SENT`.
    """
    real = UnifiedLLMClient.acomplete

    async def noted(self, messages, tools=None, **options):
        noted_options = {k: v for k, v in options.items() if k not in NOT_SENT}
        noted_options["model"] = self.resolve_model(options.get("model"))
        calls.append(copy.deepcopy({"messages": messages, "tools": tools, **noted_options}))
        return await real(self, messages, tools, **options)

    return mock.patch.object(UnifiedLLMClient, "acomplete", noted)


def in_this_thread(_reactor, _pool, fn, *args, **kwargs):
    """Twisted's ``deferToThreadPool``, run in the calling thread."""
    return defer.maybeDeferred(fn, *args, **kwargs)


def calls_in_this_thread() -> Any:
    """A patch that runs the plugin's model and memory calls in the calling thread, so a tick
    ends inside the call that started it.

    Patched at Twisted, which every thread hop of the plugin goes through, rather than at each
    module's ``defer_to_thread``: a module imported while the patch is on keeps no copy of it.
    """
    return mock.patch.object(twisted_threads, "deferToThreadPool", in_this_thread)


class _FrozenClockType(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, datetime)


class FrozenDatetime(datetime, metaclass=_FrozenClockType):
    """:class:`datetime.datetime` whose ``now()`` is :data:`FROZEN` (instances of either class
    count as instances of both)."""

    @classmethod
    def now(cls, tz=None) -> datetime:
        return FROZEN.astimezone(tz) if tz is not None else FROZEN.replace(tzinfo=None)


def frozen_clock() -> Any:
    """A patch that stops the plugin's clock (:func:`evennia_ai.utils.utcnow`) at :data:`FROZEN`.

    Patched where that clock reads the time, so every module holding ``utcnow`` sees it.
    """
    return mock.patch.object(utils, "datetime", FrozenDatetime)


# -- comparing -----------------------------------------------------------------------------------
def with_names(data, names: dict[int, str]):
    """``data`` with every ``#<id>`` of a known object written ``#<its name>``."""

    def named(match: re.Match) -> str:
        number = int(match.group(1))
        return f"#<{names[number]}>" if number in names else match.group(0)

    return json.loads(_DBREF.sub(named, json.dumps(data, ensure_ascii=False)))


def with_lines(messages):
    """``messages`` with each text content as a list of its lines (a one-word change then
    shows as one changed line; joined with newlines, the lines are the content again)."""
    if not isinstance(messages, list):
        return messages
    return [
        {**m, "content": m["content"].split("\n")} if isinstance(m.get("content"), str) else m
        for m in messages
    ]


def _dumped(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def check_golden(kind: str, case: str, found: dict) -> None:
    """Assert ``found`` equals case ``case`` of ``tests/unit/engine/golden/<kind>.json`` (or write
    it there when updating)."""
    path = GOLDEN / f"{kind}.json"
    stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    found = json.loads(_dumped(found))  # as it reads back
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(_dumped({**stored, case: found}), encoding="utf-8")
        return
    assert case in stored, f"{path} has no case {case!r}: {REGENERATE}"
    if stored[case] != found:
        diff = difflib.unified_diff(
            _dumped(stored[case]).splitlines(),
            _dumped(found).splitlines(),
            f"golden/{kind}.json: {case}",
            "now",
            lineterm="",
            n=2,
        )
        shown = "\n".join(list(diff)[:120])
        raise AssertionError(
            f"the {kind} request ({case}) changed; if that is meant, {REGENERATE} and explain "
            f"the change:\n{shown}"
        )


class GoldenBase(BaseEvenniaTestCase):
    """The benchmarks' Innkeeper, a frozen clock, the real client and the loopback server."""

    def setUp(self):
        super().setUp()
        self.patch(calls_in_this_thread())
        self.patch(frozen_clock())
        assert utils.iso_utc() == "2026-03-06T19:30:00Z", "the clock is not frozen"
        self.patch(mock.patch.object(clock, "source", lambda: 19.5 * 3600))  # the game's: 19:30
        self.server = ModelServer(responder=read_and_answer).start()
        self.addCleanup(self.server.stop)
        self.patch(
            override_settings(
                EVENNIA_AI_MODEL=MODEL,
                EVENNIA_AI_API_BASE=self.server.url,
                EVENNIA_AI_API_KEY="x",
                EVENNIA_AI_MAX_RETRIES=0,
                EVENNIA_AI_TIMEOUT=5,
                EVENNIA_AI_CONTEXT_WINDOWS={MODEL: 128000},
                EVENNIA_AI_AUTONOMY=False,
                EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,
                EVENNIA_AI_REFLECTION_INTERVAL=0,
                EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
                EVENNIA_AI_COMPACTION_KEEP_RECENT=10,
                # The requests pinned here are the non-streamed ones (streaming adds
                # stream options; tests/unit/engine/test_streaming.py covers it), and a tick
                # run in one thread cannot stream: the say checks would run inside the loop.
                EVENNIA_AI_STREAM_REPLIES=False,
            )
        )
        self.calls: list = []
        self.patch(capture_client_calls(self.calls))
        self.npc, self.player = _innkeeper()
        self.script = self.npc.ai.script
        self.script.trigger_tick = lambda: None

    def patch(self, patcher) -> None:
        """Start ``patcher`` (a mock patch or an ``override_settings``) until the test ends."""
        if hasattr(patcher, "enable"):  # override_settings
            patcher.enable()
            self.addCleanup(patcher.disable)
        else:
            patcher.start()
            self.addCleanup(patcher.stop)

    def tearDown(self):
        if self.script.pk:
            self.script.stop()  # its timer; the rows go with the test's transaction
        super().tearDown()

    def tick(self):
        d = self.script.run_tick()
        assert d is not None and d.called, "the tick did not finish synchronously"
        return d.result

    def golden(self, kind: str) -> dict:
        """The first ``kind`` call of the test: what the client got and what was sent."""
        calls = [c for c in self.calls if c.get("kind") == kind]
        assert calls, f"no {kind} call was made (kinds: {[c.get('kind') for c in self.calls]})"
        call = dict(calls[0])
        bodies = [r.body for r in self.server.requests_to("/v1/chat/completions")]
        sent = [b for b in bodies if b.get("messages") == call["messages"]]
        assert sent, f"the {kind} call did not reach the model server as it was given"
        body = dict(sent[0])
        for key in ("messages", "tools"):  # the same as the call's: not written twice
            if key in body and body[key] == call[key]:
                body[key] = SAME_AS_CALL
        call["messages"] = with_lines(call["messages"])
        body["messages"] = with_lines(body.get("messages"))
        names = {obj.id: obj.key for obj in (self.npc, self.player, self.npc.location)}
        return with_names({"call": call, "sent": body}, names)


def tool_tick(number: int) -> list[dict]:
    """One tick's messages where the Innkeeper answered through a tool."""
    call_id = f"call_{number}"
    return [
        {"role": "user", "content": f'Alice says to you: "Is room {number} free tonight?"'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": "say",
                        "arguments": json.dumps({"message": f"Room {number} is yours."}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f'You say, "Room {number} is yours."'},
    ]


class TestGoldenRequests(GoldenBase):
    def summarise(self) -> dict:
        self.npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})
        with override_settings(EVENNIA_AI_COMPACTION_STRATEGY="summarize"):
            trace = self.tick()
        assert trace.context_type == "pre_compaction"
        return self.golden("summarise")

    def test_summarise(self):
        check_golden("summarise", "innkeeper", self.summarise())

    def test_summarise_with_an_earlier_summary_and_tool_calls(self):
        history = [
            {
                "role": "user",
                "content": f"{SUMMARY_PREFIX}\nAlice asked about the ale; it was fresh.",
                "batch": SUMMARY_BATCH,
            }
        ]
        for number in range(1, 13):
            history = append_tick(history, 100 + number, tool_tick(number), 200)
        self.npc.ai.set("history", history)
        found = self.summarise()
        text = "\n".join(found["call"]["messages"][-1]["content"])
        assert (
            "Earlier summary: Alice asked about the ale" in text and "You (actions): say(" in text
        )
        check_golden("summarise", "earlier_summary_and_tool_calls", found)

    def assess(self) -> dict:
        self.npc.ai.set_execution_config(task_assessment_enabled=True)
        self.player.at_say("Innkeeper, what is good to eat tonight?")
        trace = self.tick()
        assert trace.context_type == "tick_event"
        return self.golden("assessment")

    def test_assessment(self):
        check_golden("assessment", "innkeeper", self.assess())

    def test_assessment_leaves_out_the_operators_secrets(self):
        self.npc.ai.set_user_system_prompt(
            "Keep the tavern friendly.\nSecret: the cellar key is under the third barrel."
        )
        found = self.assess()
        assert "third barrel" not in json.dumps(found)
        check_golden("assessment", "operator_secret", found)

    def decompose(self) -> dict:
        goal_id = next(g["id"] for g in self.npc.ai.goals if g.get("status") == "active")
        self.server.enqueue(
            {"tool_calls": [{"name": "decompose_goal", "arguments": {"goal_id": goal_id}}]}
        )
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            trace = self.tick()
        assert trace.context_type == "tick_autonomous"
        return self.golden("goal_decompose")

    def test_goal_decompose(self):
        check_golden("goal_decompose", "innkeeper", self.decompose())

    def test_goal_decompose_as_the_operator_customised_it(self):
        registry = get_prompt_registry()
        registry.set_context_customization(
            "goal_decompose",
            component_overrides={
                "system_prompt": {"content": "You plan the Gilded Tankard's work in 4 subtasks."}
            },
        )
        self.addCleanup(registry.clear_context_customization, "goal_decompose")
        found = self.decompose()
        assert "in 4 subtasks" in json.dumps(found)
        check_golden("goal_decompose", "customised", found)
