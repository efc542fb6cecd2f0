"""A routine's game day with no player near: what it costs in model tokens and reactor CPU.

Part ``routine_day`` of ``python -m bench cost`` (issue 36: "routine moves with no player near
cost 0 model tokens"). The demo's town in a test database (the Bakery, its loft, Market Square,
the Gilded Tankard, joined by the demo's exits) and Hilda, an AI NPC with the demo's routine,
whose model is the loopback model server with the reading model. The game clock
(``evennia_ai.world.clock.source``) runs at the demo's ``TIME_FACTOR`` of 60: each 5-second
interval tick is 5 game minutes, 288 ticks a game day. Reported: model requests and tokens,
moves (each through an exit), the share of ticks at which she is in her slot's room, and the
thread CPU of a tick (median, p95, the ticks that moved her, and the most).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from unittest import mock

#: The demo's day for Hilda (world_example/world/tavern.py), by room key.
ROUTINE = (
    "05:00-08:00 Bakery: baking bread [trade]; "
    "08:00-15:00 Market Square: selling bread at the stall [trade]; "
    "15:00-21:00 The Gilded Tankard: a cider by the fire; "
    "21:00-05:00 Bakery Loft: sleeping [sleep]"
)
#: Game seconds per interval tick: 5 real seconds at the demo's TIME_FACTOR of 60.
STEP = 5 * 60
DAY = 24 * 3600


def _town() -> dict:
    """The demo's four rooms and their exits (both ways)."""
    from evennia.objects.objects import DefaultExit, DefaultRoom
    from evennia.utils.create import create_object

    rooms = {
        key: create_object(DefaultRoom, key=key, nohome=True)
        for key in ("The Gilded Tankard", "Market Square", "Bakery", "Bakery Loft")
    }
    for here, way, there, back in (
        ("The Gilded Tankard", "out", "Market Square", "in"),
        ("Market Square", "north", "Bakery", "south"),
        ("Bakery", "up", "Bakery Loft", "down"),
    ):
        for key, start, end in ((way, here, there), (back, there, here)):
            create_object(
                DefaultExit,
                key=key,
                location=rooms[start],
                destination=rooms[end],
                home=rooms[start],  # earlier parts may have removed DEFAULT_HOME
            )
    return rooms


def routine_day() -> dict:
    """One game day of Hilda's routine with nobody near; its figures."""
    from django.test import override_settings
    from evennia.utils.create import create_object

    from bench.cost import World, _settings, _tokens
    from evennia_ai.memory import longterm
    from evennia_ai.npc import world_controls
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer
    from evennia_ai.typeclasses import AIAssistantCharacter
    from evennia_ai.world import clock

    game = {"seconds": float(DAY)}  # day 1, 00:00: she is asleep in the loft
    with (
        ModelServer(responder=read_and_answer) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(**_settings(server, folder)),
        mock.patch.object(clock, "source", lambda: game["seconds"]),
    ):
        longterm.close()
        longterm.get_memory().init_sync()
        rooms = _town()
        hilda = create_object(
            AIAssistantCharacter,
            key="Hilda",
            location=rooms["Bakery Loft"],
            home=rooms["Bakery Loft"],
        )
        hilda.ai.set_persona("Hilda Brenn, the baker, up before dawn and proud of her rye.")
        world_controls.set_routine(hilda, ROUTINE)
        routine = world_controls.routine_of(hilda)
        world = World([hilda])
        cpu, moved_cpu = [], []
        checks = in_place = moves = 0
        where = hilda.location
        while game["seconds"] < 2 * DAY:
            started = time.thread_time()
            world.step()
            spent = (time.thread_time() - started) * 1000
            cpu.append(spent)
            if hilda.location != where:
                moves += 1
                moved_cpu.append(spent)
                where = hilda.location
            slot = routine.now(clock.game_now().minute)
            checks += 1
            in_place += slot is not None and hilda.location.dbref == slot.room
            game["seconds"] += STEP
        prompt, completion = _tokens(server)
        requests = len(server.requests)
        for obj in [hilda, *hilda.contents, *rooms.values()]:
            obj.delete()
        longterm.close()
    cpu.sort()
    return {
        "ticks": checks,
        "requests": requests,
        "tokens": prompt + completion,
        "moves": moves,
        "in_place": in_place / checks,
        "cpu_median_ms": statistics.median(cpu),
        "cpu_p95_ms": cpu[int(len(cpu) * 0.95)],
        "cpu_moving_ms": statistics.median(moved_cpu) if moved_cpu else 0.0,
        "cpu_max_ms": cpu[-1],
    }


def report(now: dict) -> str:
    """The part's lines for the bench's table."""
    from bench.common import table

    rows = [
        ["model requests / tokens", f"{now['requests']} / {now['tokens']:,}", "0 tokens"],
        ["moves (each through an exit)", str(now["moves"]), ""],
        ["ticks in the slot's room", f"{now['in_place']:.1%} of {now['ticks']}", ">= 95%"],
        ["tick CPU median / p95", f"{now['cpu_median_ms']:.2f} / {now['cpu_p95_ms']:.2f} ms", ""],
        [
            "tick CPU when moving / most",
            f"{now['cpu_moving_ms']:.2f} / {now['cpu_max_ms']:.2f} ms",
            "",
        ],
    ]
    return table(
        "A routine's game day, nobody near (Hilda, 288 interval ticks)",
        ["", "measured", "target"],
        rows,
    )
