"""Well-posed calls: every kind of request, sent to a model that can only read what it gets.

``python -m bench calls`` (``--quick`` for a 60-tick scenario). A test database (in memory)
gets the demo's Innkeeper with its state (persona, operator prompt, goals, history, a long
journal, known people); requests go through litellm to the loopback model server, answered
by the reading model (:mod:`evennia_ai.testing.reading_model`), which can do a task only from
what its request carries.

1. **Each kind of call**: one of each, at a 128k window: the request's tokens, whether it
   carried its contract, whether the reading model did the task.
2. **A 200-tick talk** at 4k, 8k and 128k windows: a player tells 20 facts amid small talk and
   requests that make the NPC read its long journal (tool results of ~30k characters), then
   asks for every fact. Reported: the largest request against the window, the share of
   ``tick_event`` ticks whose task the reading model completed (a reply, and the right answer
   to a question), answers found, ``context_overflow`` stops, refused requests.
3. **Tokens accounted**: the loopback server's token count against the NPC's accounted total.
"""

from __future__ import annotations

import sys
import tempfile
from unittest import mock

from bench.common import table
from bench.tick import _innkeeper, synchronous_calls

FACTS = [
    ("favourite colour", "teal"),
    ("horse", "Thunder"),
    ("home town", "Riverdale"),
    ("lucky number", "seven"),
    ("favourite drink", "cider"),
    ("dog", "Biscuit"),
    ("sword", "Dawnbreaker"),
    ("brother", "Tomas"),
    ("birthday month", "March"),
    ("favourite song", "Greensleeves"),
    ("boat", "Gull"),
    ("cat", "Pepper"),
    ("favourite food", "stew"),
    ("mentor", "Eldra"),
    ("guild", "Weavers"),
    ("ring", "silver"),
    ("shield", "oak"),
    ("trade", "tanning"),
    ("village", "Millbrook"),
    ("favourite season", "autumn"),
]
WINDOWS = (4096, 8192, 128000)
MODEL = "openai/test-model"


def _script(ticks: int) -> list[tuple[str, str | None]]:
    """The player's lines: (text, expected answer or None)."""
    telling = ticks * 4 // 5
    lines: list[tuple[str, str | None]] = []
    facts = iter(FACTS)
    every = max(1, telling // len(FACTS))
    for i in range(telling):
        fact = next(facts, None) if i % every == 0 else None
        if fact:
            lines.append((f"Innkeeper, my {fact[0]} is {fact[1]}.", None))
        elif i % 10 == 5:
            lines.append(("Innkeeper, look in your journal: what did the guests like?", None))
        else:
            lines.append((f"Lovely fair today, Innkeeper, day {i} of the summer market.", None))
    asked = 0
    for i in range(ticks - telling):
        if i % 2 == 0 and asked < len(FACTS):
            thing, value = FACTS[asked]
            asked += 1
            lines.append((f"Innkeeper, what is my {thing}?", value))
        else:
            lines.append((f"The music is fine tonight ({i}).", None))
    return lines


def _long_journal(npc) -> None:
    entry = (
        "Guest {i} stayed late, praised the mutton stew, complained about the draught by the "
        "east window and asked about rooms for the festival week; remember to order more "
        "firewood and to fix the shutter before the rains. "
    )
    npc.ai.set(
        "journal",
        [
            {"id": f"entry_{i}", "content": (entry * 3).format(i=i), "importance": 3 + i % 5}
            for i in range(150)
        ],
    )


def _said(trace) -> str:
    for call in trace.tool_calls:
        if call.name == "say" and call.success:
            return str((call.arguments or {}).get("message", ""))
    return ""


def _run_until_idle(script, limit: int = 6) -> list:
    traces = []
    for _ in range(limit):
        d = script.run_tick()
        if d is None:
            break
        assert d.called, "the tick did not finish synchronously"
        if d.result is None:
            break
        traces.append(d.result)
    return traces


def _request_tokens(server) -> list[int]:
    from evennia_ai.llm import tokens

    counter = tokens.TokenCounter(MODEL)
    sizes = []
    for request in server.requests_to("/v1/chat/completions"):
        body = request.body or {}
        sizes.append(
            counter.count_messages(body.get("messages") or [])
            + counter.count_tools(body.get("tools") or [])
        )
    return sizes


def talk(window: int, ticks: int) -> dict:
    """The long talk at one window; its figures."""
    from django.test import override_settings

    from evennia_ai.llm import contracts
    from evennia_ai.testing import model_server
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer

    contracts.take_violations()
    model_server.take_violations()
    with ModelServer(responder=read_and_answer, window_of=lambda _m: window) as server:
        with override_settings(
            EVENNIA_AI_MODEL=MODEL,
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_MAX_RETRIES=0,
            EVENNIA_AI_CONTEXT_WINDOWS={MODEL: window},
            EVENNIA_AI_RESERVED_RESPONSE_TOKENS=min(1024, window // 8),
            EVENNIA_AI_AUTONOMY=False,
            EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,  # one scripted player talks fast
            EVENNIA_AI_REFLECTION_INTERVAL=0,
            EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
        ):
            npc, player = _innkeeper()
            _long_journal(npc)
            script = npc.ai.script
            script.trigger_tick = lambda: None
            events = completed = overflow = right = asked = 0
            kinds: dict[str, int] = {}
            for text, expected in _script(ticks):
                player.at_say(text)
                for trace in _run_until_idle(script):
                    kinds[trace.context_type] = kinds.get(trace.context_type, 0) + 1
                    if trace.stop_reason == "context_overflow":
                        overflow += 1
                    if trace.context_type != "tick_event":
                        continue
                    events += 1
                    said = _said(trace)
                    ok = bool(said) and (expected is None or expected in said)
                    completed += ok
                    right += bool(expected and expected in said)
                    asked += expected is not None
            sizes = _request_tokens(server)
            metrics = npc.ai.metrics
            accounted = int(metrics.get("prompt_tokens", 0)) + int(
                metrics.get("completion_tokens", 0)
            )
            served = server.usage_totals()
            npc.delete()
    return {
        "window": window,
        "ticks": sum(kinds.values()),
        "kinds": kinds,
        "events": events,
        "completed": completed,
        "answers": right,
        "asked": asked,
        "overflow": overflow,
        "largest": max(sizes) if sizes else 0,
        "requests": len(sizes),
        "violations": len(contracts.take_violations()),
        "refused": len(model_server.take_violations()),
        "served_tokens": served.get("prompt_tokens", 0) + served.get("completion_tokens", 0),
        "accounted_tokens": accounted,
    }


def each_kind() -> list[list]:
    """One call of each kind on the demo Innkeeper (128k window): tokens, contract, task done."""
    from django.test import override_settings

    from evennia_ai.llm import contracts, tokens
    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer
    from evennia_ai.workspace.journal import add_entry
    from evennia_ai.workspace.sleep import go_to_sleep

    rows: list[list] = []
    counter = tokens.TokenCounter(MODEL)
    stored: list[str] = []
    real_store = longterm.store

    def store(npc_id, text, **kwargs):  # the real store, and a note of what was asked
        stored.append(text)
        return real_store(npc_id, text, **kwargs)

    with (
        ModelServer(responder=read_and_answer) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(
            EVENNIA_AI_MODEL=MODEL,
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_MAX_RETRIES=0,
            EVENNIA_AI_CONTEXT_WINDOWS={MODEL: 128000},
            EVENNIA_AI_AUTONOMY=False,
            EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,  # one scripted player talks fast
            EVENNIA_AI_REFLECTION_INTERVAL=0,
            EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
            EVENNIA_AI_COMPACTION_KEEP_RECENT=10,
            EVENNIA_AI_DATA_DIR=folder,
        ),
        mock.patch("evennia_ai.tools.longterm.longterm.store", store),
    ):
        longterm.close()
        longterm.get_memory().init_sync()  # start-up work done before the calls are counted
        npc, player = _innkeeper()
        script = npc.ai.script
        script.trigger_tick = lambda: None

        def one(kind: str, setup, done) -> None:
            before = len(server.requests_to("/v1/chat/completions"))
            setup()
            _run_until_idle(script, 1)
            sent = [r.body for r in server.requests_to("/v1/chat/completions")[before:]]
            mine = [b for b in sent if f"## Task: {kind}" in contracts.request_text(b["messages"])]
            body = (mine or sent or [None])[0]
            if body is None:
                rows.append([kind, "-", "no call", "no"])
                return
            size = counter.count_messages(body["messages"]) + counter.count_tools(
                body.get("tools") or []
            )
            problems = contracts.contract_problems(kind, body["messages"])
            rows.append([kind, size, "ok" if not problems else "; ".join(problems), _yes(done())])

        def tell_and_ask():
            player.at_say("Innkeeper, my favourite colour is teal.")
            _run_until_idle(script, 1)
            player.at_say("Innkeeper, what is my favourite colour?")

        one("tick_event", tell_and_ask, lambda: "teal" in _said_last(npc))

        def lessons():
            journal = npc.ai.journal
            for text in ("Lesson: greet regulars by name", "Lesson: write every order down"):
                journal, _ = add_entry(journal, f"Served ale. {text}", importance=6)
            npc.ai.set("journal", journal)
            npc.ai.update("reflection", lambda s: {**s, "requested": True})

        one("reflection", lessons, lambda: len(npc.ai.behaviour_rules) == 2)
        one(
            "reflection_cont",
            lambda: None,
            lambda: "add_journal_entry" in _last_request_text(server),
        )
        one(
            "tick_autonomous",
            lambda: npc.ai.update("reflection", lambda s: {**s, "continue": False}),
            lambda: False,
        )
        rows.pop()  # autonomy is off above: run it with autonomy on

        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            progress = [g.get("progress", 0) for g in npc.ai.goals]
            one(
                "tick_autonomous",
                lambda: None,
                lambda: [g.get("progress", 0) for g in npc.ai.goals] != progress,
            )
            goal_id = next(g["id"] for g in npc.ai.goals if g.get("status") == "active")
            server.enqueue(
                {"tool_calls": [{"name": "decompose_goal", "arguments": {"goal_id": goal_id}}]}
            )
            one(
                "goal_decompose",
                lambda: None,
                lambda: 3 <= sum(1 for g in npc.ai.goals if g.get("parent_id") == goal_id) <= 7,
            )

        def asleep():
            journal, _ = add_entry(npc.ai.journal, "Bob's sister is Carol.", importance=5)
            npc.ai.set("journal", journal)
            go_to_sleep(npc, "bench")

        one("sleep_consolidate", asleep, lambda: "Bob's sister is Carol" in stored)

        def compaction_due():
            from evennia_ai.memory.history import append_tick

            history = npc.ai.history
            history = append_tick(
                history,
                999,
                [{"role": "user", "content": 'Alice says to you: "My horse is Thunder."'}],
                400,
            )
            npc.ai.set("history", [history[-1]] + history[:-1])  # an old batch
            npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})

        one(
            "pre_compaction",
            compaction_due,
            lambda: "horse is Thunder" in str(npc.ai.entities),
        )
        kinds_seen = _assess_and_delegate(npc, player, script, server)
        metrics = npc.ai.metrics
        accounted = int(metrics.get("prompt_tokens", 0)) + int(metrics.get("completion_tokens", 0))
        served = server.usage_totals()
        npc.delete()
        longterm.close()
    totals = {
        "served": served.get("prompt_tokens", 0) + served.get("completion_tokens", 0),
        "accounted": accounted,
        "kinds": kinds_seen,
    }
    return rows, totals


def _assess_and_delegate(npc, player, script, server) -> list[str]:
    """One autonomous tick with task assessment and a helper; every kind of call the NPC made."""
    from django.test import override_settings

    from evennia_ai.engine.trace import TickTrace

    npc.ai.update("sleep", lambda s: {**s, "asleep": False, "phase": None})
    npc.ai.set_execution_config(
        task_assessment_enabled=True, sub_agents_enabled=True, sub_agent_budget=1
    )
    server.enqueue(
        {"text": '{"recommended_iterations": 3}'},  # the assessment
        {"tool_calls": [{"name": "delegate_task", "arguments": {"task": "the cellar stock"}}]},
    )
    with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
        _run_until_idle(script, 1)  # goal work: a ReAct loop that may start a helper
    kinds: set[str] = set()
    for data in npc.ai.traces(last=50):
        trace = TickTrace.from_dict(data)
        kinds.add(trace.context_type)
        kinds.update(it.kind for it in trace.iterations if it.kind not in ("act", "plan"))
    return sorted(k for k in kinds if k and k != "None")


def _yes(value) -> str:
    return "yes" if value else "NO"


def _said_last(npc) -> str:
    from evennia_ai.engine.trace import TickTrace

    traces = [TickTrace.from_dict(t) for t in npc.ai.traces(last=1)]
    return _said(traces[-1]) if traces else ""


def _last_request_text(server) -> str:
    from evennia_ai.llm import contracts

    request = server.requests_to("/v1/chat/completions")[-1]
    return contracts.request_text(request.body["messages"])


def main(quick: bool = False) -> str:
    with synchronous_calls():
        kinds, every_kind = each_kind()
        ticks = 60 if quick else 200
        talks = [talk(window, ticks) for window in WINDOWS]
    text = table(
        "Each kind of call on the demo Innkeeper (128k window, reading model)",
        ["kind", "request tokens", "contract", "task done"],
        kinds,
    )
    rows = []
    for t in talks:
        share = t["completed"] / t["events"] if t["events"] else 0.0
        rows.append(
            [
                f"{t['window']:,}",
                t["ticks"],
                f"{t['largest']:,} ({t['largest'] / t['window']:.0%})",
                f"{t['completed']}/{t['events']} ({share:.1%})",
                f"{t['answers']}/{t['asked']}",
                t["overflow"],
                t["refused"],
                t["violations"],
            ]
        )
    text += "\n\n" + table(
        f"A {ticks}-line talk with long tool results (target: >= 95% of tick_event tasks at 8k)",
        [
            "window",
            "ticks",
            "largest request",
            "tick_event tasks done",
            "answers",
            "context_overflow",
            "refused by server",
            "contract violations",
        ],
        rows,
    )
    text += "\n\n" + table(
        "Tokens: the loopback server's count against the NPC's accounted total",
        ["scenario", "server", "accounted", "difference"],
        [
            [
                f"every kind ({', '.join(every_kind['kinds'])})",
                f"{every_kind['served']:,}",
                f"{every_kind['accounted']:,}",
                f"{every_kind['accounted'] - every_kind['served']:+,}",
            ]
        ]
        + [
            [
                f"talk at {t['window']:,}",
                f"{t['served_tokens']:,}",
                f"{t['accounted_tokens']:,}",
                f"{t['accounted_tokens'] - t['served_tokens']:+,}",
            ]
            for t in talks
        ],
    )
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
