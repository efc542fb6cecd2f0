"""The first lines after a start: how long a player waits while the server is still warming up.

``python -m bench first_line`` (about 1 minute). A fresh game server from ``world_example/``
(default start-up: litellm loaded while the server starts, the tokenizer 3 s and the embedder
10 s after it), the loopback model at 200 ms. A player logs in as soon as the server reports it
started and says a line every ~1.8 s for 20 s: each line's time to the Innkeeper's answer on
screen, minus the model's latency. Target: the first line answered within 2 s of the model's
reply (issue "Cost and pace").
"""

from __future__ import annotations

import time

from bench.common import table
from bench.game import Player, game
from bench.npc_ab import responder, served_window, settings

LATENCY = 0.2
LINES = 12


def run() -> list[tuple[float, float | None]]:
    """``(seconds after the start returned, ms over the model's latency or None)`` per line."""
    from evennia_ai.testing.model_server import ModelServer

    rows = []
    with ModelServer(latency=LATENCY, responder=responder, window_of=served_window) as model:
        with game(settings(model)) as server:
            started = time.monotonic()
            admin = Player(server.telnet_port)
            try:
                admin.login("admin", server.password)
                for n in range(LINES):
                    marker = f"fl{n}x"
                    at = time.monotonic() - started
                    try:
                        took = admin.round_trip(f"say {marker} hello?", f"You said: {marker}", 60)
                        rows.append((at, (took - LATENCY) * 1000))
                    except TimeoutError:
                        rows.append((at, None))
                    time.sleep(1.5)
            finally:
                admin.close()
    return rows


def render(rows) -> str:
    first = rows[0][1] if rows else None
    ok = first is not None and first <= 2000
    lines = [[f"{at:.1f}", "no answer in 60 s" if ms is None else f"{ms:,.0f}"] for at, ms in rows]
    lines.append(["target: first line <= 2,000 ms", "pass" if ok else "FAIL"])
    return table(
        f"Lines said right after a start: ms from the line to the answer on screen, minus the "
        f"{LATENCY * 1000:.0f} ms model latency",
        ["seconds after the start", "ms over the model's latency"],
        lines,
    )


def main() -> str:
    text = render(run())
    print(text)
    return text


if __name__ == "__main__":
    main()
