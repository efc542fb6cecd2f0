"""The scale bench's pieces that run without a game server (``bench/scale.py`` runs them all).

The Router settings it gives the game are accepted by litellm's Router; the probe's ``spawn``
puts NPCs ``per_room`` to a room and ``make_talkers`` gives each room a player's character;
the counted model server's count file follows the answers; the report names each target's
verdict.
"""

import json
import sys
from pathlib import Path

import litellm
from evennia.accounts.models import AccountDB
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.llm import router
from evennia_ai.testing.model_server import ModelServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import scale, server_probe  # noqa: E402
from bench.counted_model_server import write_count  # noqa: E402


def result(**changes) -> dict:
    """A run's figures as :func:`bench.scale.run` returns them: every target met."""
    figures = {
        "npcs": 500,
        "rooms": 50,
        "idle": [0.005] * 50,
        "loaded": [0.02] * 100,
        "lags": [0.001] * 199 + [0.03],
        "calls": 5400,
        "per_server": [1800, 1800, 1800],
        "seconds": 60.0,
        "calls_per_s": 90.0,
        "ticks": 5400,
        "ticks_per_s": 90.0,
        "reactor_cpu": 30.0,
        "process_cpu": 50.0,
        "probe_seconds": 60.0,
        "writes_per_tick": 5.0,
        "statements_per_tick": 11.0,
        "failed_calls": 3,
        "failed_in_window": 1,
        "full_deployments": 2,
        "report_seconds": 0.1,
        "limits": [{"limit": 192, "in_flight": 180, "waiting": 300}, {}],
        "in_flight": [170, 190],
        "lines_said": 600,
        "rss_idle": 300 * 2**20,
        "rss_spawned": 350 * 2**20,
        "rss_end": 400 * 2**20,
        "spawn_seconds": 20.0,
        "pieces": {"_call_model:364": [0.004, 0.006]},
        "tick_times": {
            "duration": [2.1, 2.2, 2.3],
            "model": [2.0, 2.05, 2.1],
            "gap": [0.4, 0.5, 0.6],
        },
        "load_start": (1.0, 1.0, 1.0),
        "load_end": (2.0, 1.5, 1.0),
    }
    figures.update(changes)
    return figures


def test_router_config_is_accepted_by_litellm():
    urls = [f"http://127.0.0.1:{port}/v1" for port in (9001, 9002, 9003)]
    deployments, options = router.check_config(scale.router_config(urls), litellm.Router)
    assert [d["litellm_params"]["api_base"] for d in deployments] == urls
    assert {d["litellm_params"]["max_parallel_requests"] for d in deployments} == {64}
    assert options["routing_strategy"] == "least-busy"
    assert all(d["model_info"]["input_cost_per_token"] == 0.0 for d in deployments)  # free
    assert scale.BOUND == 96


def test_settings_put_the_game_on_the_router_and_the_database():
    text = scale.settings(["http://127.0.0.1:9001/v1"], "DATABASES = {}\n")
    assert "EVENNIA_AI_MODEL = 'tavern-llm'" in text
    assert "EVENNIA_AI_MAX_CONCURRENT_CALLS = 256" in text.split("EVENNIA_AI_ROUTER")[0]
    # the default retries and the large-game switch interval, after the load bench's lines
    lines = text.splitlines()
    retries = [n for n, line in enumerate(lines) if line.startswith("EVENNIA_AI_MAX_RETRIES")]
    assert lines[retries[-1]] == "EVENNIA_AI_MAX_RETRIES = 2"
    assert "EVENNIA_AI_SWITCH_INTERVAL = 0.001" in lines
    assert text.endswith("DATABASES = {}\n")


def test_report_gives_each_target_its_verdict():
    text = scale.render(result())
    assert "90.0 of 96 (94%)" in text and ">= 85%: pass" in text
    assert "p99 <= 20: pass" in text and "p99 <= 50: pass" in text
    assert "RSS growth per NPC, KB | 102 spawned, 205 after ticking" in text
    assert (
        "180 / 300 and ? / ? (its bound ?); sampled with the lag probe: mean 180, max 190" in text
    )
    assert "3 ticks got no answer (1 in the window); 2 log lines of a Router 429" in text
    assert (
        "duration p50 2.20, p99 2.30; model p50 2.05, p99 2.10; gap p50 0.50, p99 0.60 (3 ticks)"
        in text
    )
    assert "every piece of assistant work (sum) | 2 | 0.00 | 0%" in text
    assert "_call_model:364 | 2 | 0.00 | 0% | 6.00 | 6.00 | 6.00" in text

    slow = scale.render(result(calls_per_s=21.0, npcs=100, lags=[0.06] * 100))
    assert ">= 85% (of what the NPCs can ask): FAIL" in slow
    assert "100 NPCs can ask at most 50/s (42% of that)" in slow
    assert "p99 <= 20: FAIL" in slow


def test_count_file_follows_the_answers(tmp_path):
    path = str(tmp_path / "counts.json")
    with ModelServer() as server:
        write_count(server, path)
        assert json.loads(Path(path).read_text())["answered"] == 0
        litellm.completion(
            model="openai/test-model",
            api_base=server.url,
            api_key="x",
            messages=[{"role": "user", "content": "hi"}],
        )
        write_count(server, path)
    assert json.loads(Path(path).read_text())["answered"] == 1


class TestSpawnAndTalkers(BaseEvenniaTest):
    def tearDown(self):
        for npc in server_probe.bench_npcs():
            if npc.ai.script:
                npc.ai.script.delete()
        super().tearDown()

    def test_npcs_share_rooms_and_each_room_gets_a_talker(self):
        npcs = server_probe.spawn(4, per_room=2)
        rooms = server_probe.bench_rooms()
        assert len(rooms) == 2
        assert [npc.location for npc in npcs] == [rooms[0], rooms[0], rooms[1], rooms[1]]

        names = server_probe.make_talkers(
            2, "bench-talker-pass-1", character_typeclass="evennia.DefaultCharacter"
        )
        assert names == ["Talker0", "Talker1"]
        for name, room in zip(names, rooms):
            account = AccountDB.objects.get(username=name)
            assert account.check_password("bench-talker-pass-1")
            assert [c.location for c in account.characters] == [room]


def test_long_term_memory_loads_as_users_run_it_unless_asked_not_to():
    loaded = scale.settings(["http://127.0.0.1:9001/v1"], "DATABASES = {}\n")
    assert "EVENNIA_AI_MEMORY_INIT_DELAY" not in loaded  # the default delay: it loads
    delayed = scale.settings(["http://127.0.0.1:9001/v1"], "DATABASES = {}\n", memory=False)
    assert "EVENNIA_AI_MEMORY_INIT_DELAY = 3600" in delayed.splitlines()


def test_report_says_whether_memory_ran_and_the_recall_deadline():
    text = scale.render(
        result(
            memory="long-term memory ready, mode hybrid", recall_deadline={"waited": 9, "missed": 1}
        )
    )
    assert "long-term memory ready, mode hybrid." in text
    assert "1 missed of 9 searches that waited" in text
    assert "not exposed by this code" in scale.render(result())


def test_quick_run_is_judged_against_what_its_npcs_can_ask():
    text = scale.render(result(calls_per_s=45.0, npcs=100))  # 100 NPCs at 2 s: at most 50/s
    assert "100 NPCs can ask at most 50/s (90% of that)" in text
    assert ">= 85% (of what the NPCs can ask): pass" in text
