"""Crash survival: an assistant's state outlives ``evennia reload`` and ``kill -9`` mid-tick.

A real game from world_example/ talks to the loopback model server, which answers slowly
while we act, so a tick is always in the middle of its ReAct loop. Through the server (the
superuser's ``py`` command and a probe module installed in the game folder) we give the
Innkeeper a goal, a project, a memory-block edit, a long-term memory and a prompt-registry
component, and queue speech. Then:

1. ``evennia reload`` while a model call is in flight: the reload is quick (its time is
   printed), the old server process is gone, everything is still there and the event that was
   in flight is answered by the new process;
2. ``kill -9`` of server and portal while a model call is in flight, then ``evennia start``:
   the same checks again (the embedded Qdrant store opens again despite the killed process).

The test process never opens the game's database or Qdrant folder itself: the local Qdrant
store admits one process at a time. Everything is read through the running server.
"""

import inspect
import re
import time

import pytest

from evennia_ai.testing.model_server import ModelServer
from support.game_server import GameServer, TelnetClient, pid_alive, tagged

pytestmark = [pytest.mark.server, pytest.mark.timeout(300)]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
FAST = 0.1
SLOW = 4.0  # model latency while we reload or kill: the tick is surely mid-call

GOAL = "CRASHTEST keep the hearth lit through the storm"
PROJECT = "crashtest_cellar"
BLOCK = "crashtest_notes"
BLOCK_VALUE = "the blue door key is under the third barrel"
COMPONENT = "crashtest_component"
COMPONENT_TEXT = "CRASHTEST: the tavern closes at midnight during storms."
MEMORY = "CRASHTEST memory: Bram the smith owes the tavern three silver coins"

# Installed in the game folder; runs inside the server (ORM on the reactor, memory in threads).
PROBE = r'''
"""Test probe of test_crash_survival: writes and reads an assistant's state inside the server."""

import os

from evennia.utils.search import search_tag

from support_tagged import tagged

GOAL = {goal!r}
PROJECT = {project!r}
BLOCK = {block!r}
BLOCK_VALUE = {block_value!r}
COMPONENT = {component!r}
COMPONENT_TEXT = {component_text!r}
MEMORY = {memory!r}


def innkeeper():
    return search_tag("demo_innkeeper", category="evennia_ai")[0]


def setup(caller):
    """Goal, project, block edit, registry component (sync); long-term memory (in a thread)."""
    from evennia_ai.memory import block_admin, longterm
    from evennia_ai.prompt_registry import get_prompt_registry
    from evennia_ai.workspace import goals, projects

    npc = innkeeper()
    new_goals, op = goals.add_goal(npc.ai.goals, GOAL, tick=0, priority="high")
    assert op.success, op.message
    npc.ai.update_goals(lambda _old: new_goals)
    new_projects, op = projects.create_project(npc.ai.get("projects"), PROJECT,
                                               "Restock the cellar before the storm")
    assert op.success, op.message
    npc.ai.set("projects", new_projects)
    block_admin.create_block(npc, BLOCK, type="Core", schema="map", content={{}})
    result = block_admin.system_write(npc, BLOCK, "set_field", {{"field": "key", "value": BLOCK_VALUE}})
    assert result.success, result.message
    get_prompt_registry().create_component(COMPONENT, "Crash test", COMPONENT_TEXT, after_static=0)

    def stored(memory):
        caller.msg(tagged("LTMSTORED", {{"id": memory.id, "text": memory.text}}))

    def failed(failure):
        caller.msg(tagged("LTMSTORED", {{"error": failure.getErrorMessage()}}))

    longterm.store(npc.dbref, MEMORY, source="observed").addCallbacks(stored, failed)
    return "setup done"


def ltm_status():
    from evennia_ai.memory import longterm

    return longterm.status()


def snapshot(caller):
    """Send everything the test checks, as one tagged message (memory is read in threads)."""
    from twisted.internet import defer

    from evennia_ai.memory import block_admin, longterm
    from evennia_ai.prompt_registry import get_prompt_registry

    npc = innkeeper()
    component = get_prompt_registry().get_component_by_key(COMPONENT)
    try:
        block = block_admin.get_block(npc, BLOCK).get("content")
    except Exception as err:
        block = f"missing: {{err}}"
    queue = npc.ai.get("event_queue") or {{}}
    state = {{
        "pid": os.getpid(),
        "goals": [g.get("description") for g in npc.ai.goals],
        "projects": sorted((npc.ai.get("projects") or {{}}).get("slots") or {{}}),
        "block": block,
        "component": component.content if component else None,
        "queue": [e.get("text") for e in queue.get("events") or []],
        "in_flight": list(queue.get("in_flight") or []),
        "ltm_status": longterm.status(),
    }}

    def send(results):
        recent, vector = results
        state["ltm_recent"] = [hit.text for hit in recent]
        state["ltm_vector"] = [hit.text for hit in vector.hits]
        state["ltm_vector_mode"] = vector.mode
        state["ltm_vector_note"] = vector.note
        caller.msg(tagged("SNAPSHOT", state))

    def failed(failure):
        state["ltm_error"] = failure.getErrorMessage()
        caller.msg(tagged("SNAPSHOT", state))

    reads = [longterm.recent(npc.dbref, 20),
             longterm.recall(npc.dbref, "who owes money to the tavern", mode="vector")]
    defer.gatherResults(reads, consumeErrors=True).addCallbacks(send, failed)
    return "snapshot requested"
'''


def responder(body):
    last = ""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            last = message.get("content") or ""
    quoted = re.findall(r'"([^"]+)"', last)
    heard = quoted[-1] if quoted else last
    return {"tool_calls": [{"name": "say", "arguments": {"message": f"You said: {heard[:60]}"}}]}


def wait_for_request(model: ModelServer, needle: str, after: float = 0.0, timeout: float = 30.0):
    """Wait until the model server has received a request mentioning ``needle``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for request in model.requests:
            if request.received_at >= after and needle in str(request.body):
                return request
        time.sleep(0.1)
    raise TimeoutError(f"no model request mentioning {needle!r} within {timeout}s")


def login(game: GameServer) -> TelnetClient:
    client = TelnetClient(game.telnet_port)
    assert "You become" in client.login("admin", game.password)
    client.read(0.5)
    return client


def wait_memory_ready(player: TelnetClient, timeout: float = 90.0) -> dict:
    """Poll long-term memory's status until its initialisation has ended."""
    deadline = time.monotonic() + timeout
    status = {}
    while time.monotonic() < deadline:
        status = player.py_json("__import__('crash_probe').ltm_status()")
        if status.get("state") == "ready":
            return status
        time.sleep(1.0)
    raise TimeoutError(f"long-term memory not ready within {timeout}s: {status}")


def snapshot(player: TelnetClient) -> dict:
    player.send("py __import__('crash_probe').snapshot(me)")
    return player.read_tagged("SNAPSHOT", timeout=30)


def check_state(state: dict, vector_expected: bool) -> None:
    """Everything written before the crash is there."""
    assert GOAL in state["goals"], state["goals"]
    assert PROJECT in state["projects"], state["projects"]
    assert state["block"] == {"key": BLOCK_VALUE}, state["block"]
    assert state["component"] == COMPONENT_TEXT
    assert "ltm_error" not in state, state.get("ltm_error")
    assert MEMORY in state["ltm_recent"], state["ltm_recent"]
    if vector_expected:
        assert MEMORY in state["ltm_vector"], (state["ltm_vector"], state["ltm_status"])


def answered(player: TelnetClient, text: str, timeout: float = 60.0) -> str:
    return ANSI.sub("", player.read_until(f"You said: {text}", timeout=timeout))


def test_state_survives_reload_and_kill_mid_tick(tmp_path):
    started = time.monotonic()
    with ModelServer(latency=FAST, responder=responder) as model:
        settings = (
            'EVENNIA_AI_MODEL = "openai/test-model"\n'
            f'EVENNIA_AI_API_BASE = "{model.url}"\n'
            'EVENNIA_AI_API_KEY = "x"\n'
            "EVENNIA_AI_TICK_INTERVAL = 5\n"
            "EVENNIA_AI_AUTONOMY = False\n"
            "EVENNIA_AI_MAX_RETRIES = 0\n"
            "EVENNIA_AI_REFLECTION_INTERVAL = 0\n"
            "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD = 0\n"
            "EVENNIA_AI_WARMUP_DELAY = 0.5\n"
            "EVENNIA_AI_MEMORY_INIT_DELAY = 0.5\n"
        )
        game = GameServer(tmp_path, extra_settings=settings)
        try:
            game.create()
            game.install_module("support_tagged", inspect.getsource(tagged))
            game.install_module("crash_probe", PROBE.format(
                goal=GOAL, project=PROJECT, block=BLOCK, block_value=BLOCK_VALUE,
                component=COMPONENT, component_text=COMPONENT_TEXT, memory=MEMORY))
            game.start()
            player = login(game)

            status = wait_memory_ready(player)
            vector = status.get("mode") == "hybrid"
            if not vector:
                print(f"\nvector checks skipped: long-term memory in keyword mode ({status.get('reason')})")
            assert player.py_json("__import__('crash_probe').setup(me)") == "setup done"
            stored = player.read_tagged("LTMSTORED", timeout=60)
            assert "error" not in stored, stored
            before = snapshot(player)
            check_state(before, vector)

            # -- 1. evennia reload while a model call is in flight -------------------------
            model.latency = SLOW
            player.send("say CRASH-ONE, Innkeeper, is the stew ready?")
            request_sent = wait_for_request(model, "CRASH-ONE").received_at
            player.send("say CRASH-TWO, and a room for the night?")
            player.read(0.5)
            old_pid = game.pid("server")
            reload_started = time.monotonic()
            reload_seconds = game.reload()
            assert time.monotonic() - request_sent < SLOW + reload_seconds  # reloaded mid-call
            model.latency = FAST
            print(f"\nevennia reload with a model call in flight: {reload_seconds:.1f} s")
            assert not pid_alive(old_pid), "the old server process lingers after the reload"
            # The in-flight event is replayed by the new process, with the one queued behind it.
            replay = wait_for_request(model, "CRASH-ONE", after=reload_started, timeout=60)
            assert "CRASH-TWO" in str(replay.body)
            answered(player, "CRASH-TWO")
            wait_memory_ready(player)
            after_reload = snapshot(player)
            assert after_reload["pid"] != before["pid"]
            check_state(after_reload, vector)
            player.read(1.0)  # the tick's bookkeeping (ack) ends after the reply is sent
            after_reload = snapshot(player)
            assert after_reload["queue"] == [] and after_reload["in_flight"] == [], after_reload["queue"]

            # -- 2. kill -9 while a model call is in flight, then start again --------------
            model.latency = SLOW
            player.send("say CRASH-THREE, Innkeeper, one more ale please!")
            wait_for_request(model, "CRASH-THREE")
            time.sleep(0.5)
            killed_at = time.monotonic()
            assert game.kill("server", "portal")
            player.close()
            model.latency = FAST
            game.start()
            player = login(game)
            replay = wait_for_request(model, "CRASH-THREE", after=killed_at, timeout=60)
            answered(player, "CRASH-THREE")
            wait_memory_ready(player)
            after_kill = snapshot(player)
            assert after_kill["pid"] not in (before["pid"], after_reload["pid"])
            check_state(after_kill, vector)
            player.read(1.0)
            after_kill = snapshot(player)
            assert after_kill["queue"] == [] and after_kill["in_flight"] == [], after_kill["queue"]
            player.close()
        except Exception:
            print(game.log_tail(120))
            raise
        finally:
            game.stop()
    print(f"crash survival test: {time.monotonic() - started:.0f} s")

