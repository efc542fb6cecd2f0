"""Streamed replies (issue 33, target 3): the first sentence on the player's screen.

One real game server holds the demo's Innkeeper (ours, in the tavern, player ``admin``) and
Evennia's ``LLMNPC`` "Sage" (in the cellar, player ``bob``), set up as in :mod:`bench.npc_ab`
(state and long-term memory loaded as users run it). Each answers with the same three-sentence
reply (:func:`reply`), and each is given the same generation time:

- ours talks to a loopback model server that **streams** its answer at :data:`TOKEN_RATE`
  tokens a second (the server's ``token_rate``; one chunk per word-sized token); a request that
  does not ask for a stream is answered whole after the reply's generation time (its words /
  :data:`TOKEN_RATE`), as a model that does not stream would;
- LLMNPC (which never streams) talks to a loopback server whose latency is that generation time.

The loopback server paces a stream by its pieces (a word of text; a ``say`` call's arguments
in pieces of a few characters), so our whole streamed reply may end a little before or after
that generation time: the table gives our last sentence's time too.

Measured, per round: the time from the player's line leaving the client to the FIRST sentence
of our reply on the player's screen (not the thinking notice: the sentence's own words with the
round's marker), and to LLMNPC's whole reply on its player's screen. Target: ours at most half
of LLMNPC's, at p50 and p95. Checked: the text assembled on the screen (the three sentences, in
order) and the line the Innkeeper's history keeps both equal the non-streamed reply.

Streaming is on (``EVENNIA_AI_STREAM_REPLIES = True``; older code ignores the setting). Code
without streaming, or a loopback server without ``token_rate``, runs the bench all the same:
the reply then arrives whole, and the table says FAIL and why.

Run: ``.venv/bin/python -m bench.streaming`` (about 2 minutes).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field

from bench.common import percentile, table
from bench.cpu import load_average
from bench.game import Player, game
from bench.npc_ab import _setup, ready_as_users_run, served_window

TOKEN_RATE = 40.0  # tokens per second
ROUNDS = 10
WARMUP = 2
TARGET = 0.5  # ours (first sentence) / LLMNPC (whole reply)
SECOND = "The stew tonight is mutton with rye bread and a little thyme."


def sentences(marker: str) -> tuple[str, str, str]:
    """The reply's three sentences; the round's marker is in the first and the last."""
    return (
        f"Welcome in, traveller {marker}, the fire is lit.",
        SECOND,
        f"Rooms upstairs cost two silver a night, breakfast included {marker}.",
    )


def reply(marker: str) -> str:
    return " ".join(sentences(marker))


def tokens(text: str) -> int:
    """Word-sized tokens, as the loopback server sends them (one chunk each)."""
    return len(re.findall(r"\S+", text))


def generation_time(text: str, rate: float = TOKEN_RATE) -> float:
    """Seconds a model writing ``rate`` tokens a second takes to write ``text``."""
    return tokens(text) / rate


def marker_of(text: str) -> str:
    """The round's marker (``st<n>x``) in a request's text, or ""."""
    found = re.findall(r"\bst\d+x\b", text)
    return found[-1] if found else ""


def _last_user_text(body: dict) -> str:
    if isinstance(body.get("prompt"), str):
        return body["prompt"]
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def ours_responder(body: dict) -> dict:
    """The Innkeeper's model: the reply as a ``say`` call (streamed by the server when asked);
    a request that does not stream waits the reply's generation time first."""
    if not body.get("tools"):  # a history summary (compaction): text, no tool
        return {"text": "Guests asked about the stew and the rooms; all were answered."}
    text = reply(marker_of(_last_user_text(body)))
    if not body.get("stream"):
        time.sleep(generation_time(text))
    return {"tool_calls": [{"name": "say", "arguments": {"message": text}}]}


def theirs_responder(body: dict) -> dict:
    """LLMNPC's model (``/api/v1/generate``): the same reply as text (latency: the server's)."""
    return {"text": reply(marker_of(_last_user_text(body)))}


def settings(ours_url: str, theirs_root: str) -> str:
    return (
        'EVENNIA_AI_MODEL = "openai/test-model"\n'
        f'EVENNIA_AI_API_BASE = "{ours_url}"\n'
        'EVENNIA_AI_API_KEY = "x"\n'
        "EVENNIA_AI_TICK_INTERVAL = 60\n"
        "EVENNIA_AI_AUTONOMY = False\n"
        "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE = 0\n"
        "EVENNIA_AI_MAX_RETRIES = 0\n"
        "EVENNIA_AI_STREAM_REPLIES = True\n"
        f'LLM_HOST = "{theirs_root}"\n'
    )


def streaming_server(responder, window_of):
    """The loopback server streaming at :data:`TOKEN_RATE`, and whether it can (a server
    without the ``token_rate`` keyword answers whole; the responder then waits instead)."""
    from evennia_ai.testing.model_server import ModelServer

    try:
        return ModelServer(responder=responder, window_of=window_of, token_rate=TOKEN_RATE), True
    except TypeError:
        return ModelServer(responder=responder, window_of=window_of), False


def normalised(text: str) -> str:
    return " ".join(text.split())


def in_order(screen: str, parts: tuple[str, ...]) -> bool:
    """Whether every part appears in ``screen`` (whitespace normalised), in order."""
    screen, at = normalised(screen), 0
    for part in parts:
        found = screen.find(normalised(part), at)
        if found < 0:
            return False
        at = found + len(normalised(part))
    return True


@dataclass
class Results:
    first: list[float] = field(default_factory=list)  # ours: line to first sentence, s
    whole: list[float] = field(default_factory=list)  # ours: line to last sentence, s
    theirs: list[float] = field(default_factory=list)  # LLMNPC: line to its whole reply, s
    assembled_ok: int = 0  # rounds whose screen showed the three sentences in order
    history_ok: int = 0  # rounds whose history kept the whole reply
    history_seen: list[str] = field(default_factory=list)  # lines kept that were not the reply
    streamed_requests: int = 0
    requests: int = 0
    server_streams: bool = False
    generation: float = 0.0
    load: tuple[str, str] = ("?", "?")


def _our_round(admin: Player, marker: str, timeout: float = 30.0) -> tuple[float, float, str]:
    """Say the round's line; seconds to the first and the last sentence, and the screen."""
    first_needle = f"traveller {marker}, the fire is lit"
    last_needle = f"breakfast included {marker}"
    admin.drain(0.05)
    started = time.perf_counter()
    admin.send(f"say {marker} what is there to eat?")
    screen = admin.until(first_needle, timeout)
    first = time.perf_counter() - started
    if last_needle not in screen:
        screen += admin.until(last_needle, timeout)
    whole = time.perf_counter() - started
    screen += admin.drain(0.3)
    return first, whole, screen


def _history_line(admin: Player) -> str | None:
    path = os.path.join(tempfile.gettempdir(), f"evennia_ai_said_{os.getpid()}.json")
    admin.py(f"import bench.server_probe as p; p.last_say('Innkeeper', {path!r})", wait=0.05)
    deadline = time.monotonic() + 15
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        said = json.load(handle).get("text")
    os.unlink(path)
    admin.drain(0.1)
    return said


def run(rounds: int = ROUNDS) -> Results:
    from evennia_ai.testing.model_server import ModelServer

    out = Results(load=(load_average(), "?"))
    out.generation = generation_time(reply("st0x"))
    ours, out.server_streams = streaming_server(ours_responder, served_window)
    with (
        ours,
        ModelServer(
            latency=out.generation, responder=theirs_responder, window_of=served_window
        ) as theirs,
    ):
        with game(settings(ours.url, theirs.root_url)) as server:
            admin = Player(server.telnet_port)
            players = [admin]
            try:
                admin.login("admin", server.password)
                bob, carol = _setup(admin, server)
                players += [bob, carol]
                ready_as_users_run(admin)
                for player in players:
                    player.drain(0.3)
                for n in range(rounds + WARMUP):
                    marker = f"st{n}x"
                    a = bob.round_trip(
                        f"talk Sage {marker} what is there to eat?",
                        f"breakfast included {marker}",
                    )
                    first, whole, screen = _our_round(admin, marker)
                    said = _history_line(admin)
                    if n < WARMUP:
                        continue
                    out.theirs.append(a)
                    out.first.append(first)
                    out.whole.append(whole)
                    out.assembled_ok += in_order(screen, sentences(marker))
                    if said is not None and normalised(said) == normalised(reply(marker)):
                        out.history_ok += 1
                    else:
                        out.history_seen.append(str(said)[:120])
                    time.sleep(0.2)
            except TimeoutError:
                print(f"the server's log:\n{server.log_tail(80)}", file=sys.stderr)
                raise
            finally:
                for player in players:
                    player.close()
        chats = ours.requests_to("/v1/chat/completions")
        out.requests = len(chats)
        out.streamed_requests = sum(1 for r in chats if (r.body or {}).get("stream"))
    out.load = (out.load[0], load_average())
    return out


def render(r: Results) -> str:
    ms = lambda values, pct: percentile(values, pct) * 1000  # noqa: E731
    f50, f95 = ms(r.first, 50), ms(r.first, 95)
    t50, t95 = ms(r.theirs, 50), ms(r.theirs, 95)
    r50, r95 = f50 / t50, f95 / t95
    rounds = len(r.first)
    ok = r50 <= TARGET and r95 <= TARGET
    rows = [
        ["Evennia LLMNPC: its whole reply (not streamed)", len(r.theirs), t50, t95],
        ["evennia-ai Innkeeper: the first sentence", rounds, f50, f95],
        ["evennia-ai Innkeeper: the last sentence", rounds, ms(r.whole, 50), ms(r.whole, 95)],
        [f"ratio first sentence / LLMNPC (target <= {TARGET:g})", "", r50, r95],
        ["result", "", "pass" if r50 <= TARGET else "FAIL", "pass" if r95 <= TARGET else "FAIL"],
    ]
    text = table(
        f"Player's line to the reply on screen (ms): three sentences, "
        f"{tokens(reply('st0x'))} word tokens at {TOKEN_RATE:g} tokens/s: LLMNPC's model "
        f"answers after {r.generation * 1000:.0f} ms, ours streams {TOKEN_RATE:g} pieces/s "
        f"(the loopback server's token_rate)",
        ["NPC", "rounds", "p50", "p95"],
        rows,
    )
    checks = [
        [
            "the screen shows the three sentences, in order",
            f"{r.assembled_ok} of {rounds}",
            "pass" if r.assembled_ok == rounds else "FAIL",
        ],
        [
            "the history keeps the whole reply as one line",
            f"{r.history_ok} of {rounds}"
            + (f" (kept instead: {r.history_seen[0]!r})" if r.history_seen else ""),
            "pass" if r.history_ok == rounds else "FAIL",
        ],
        [
            "requests of ours that asked for a stream",
            f"{r.streamed_requests} of {r.requests}",
            "reported",
        ],
    ]
    text += "\n" + table(
        "The assembled text equals the non-streamed reply",
        ["check", "rounds", "result"],
        checks,
    )
    why = []
    if not r.server_streams:
        why.append(
            "the loopback model server has no `token_rate` (no streaming server in this code): "
            "ours was answered whole after the same generation time"
        )
    if not r.streamed_requests:
        why.append("the plugin sent no streamed request (no streaming in this code)")
    if not ok and why:
        text += "\nFAIL because " + "; ".join(why) + ".\n"
    text += f"\nLoad average {r.load[0]} at the start, {r.load[1]} at the end.\n"
    return text


def main() -> str:
    text = render(run())
    print(text)
    return text


if __name__ == "__main__":
    main()
