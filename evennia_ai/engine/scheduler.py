"""Fair turns on the reactor: a few milliseconds of assistant work per reactor turn.

Each tick runs on the reactor thread in a few pieces: choosing what to do and building the
context, continuing after each model call, and the bookkeeping at the end. With many assistants,
Twisted would run every piece that is due in one pass (all ``callLater(0)`` calls and all
results coming back from threads) before it reads input again, so a player's ``look`` would wait
behind dozens of ticks. Work that goes through :func:`turn` instead runs first come first
served, a slice of ``EVENNIA_AI_TURN_SLICE_MS`` per reactor turn (pieces are never cut: the
slice ends after the piece that used it up), with the reactor polling its sockets in between: a
player's command waits at most for one slice and one piece. Running several short pieces per
turn rather than one saves a pass through the reactor per piece, which under load costs more
than the piece itself (each pass hands the interpreter to other threads and waits to get it
back).

Without a running reactor (tests, scripts) :func:`turn` fires at once, so code using it stays
synchronous there.

Example::

    @defer.inlineCallbacks
    def run(self):
        yield scheduler.turn()     # wait for this assistant's turn
        ...                        # one piece of reactor work
"""

from __future__ import annotations

import time
from collections import deque

from twisted.internet import defer, reactor

from evennia_ai import conf

_waiting: deque[defer.Deferred] = deque()
_scheduled = False


def turn() -> defer.Deferred:
    """A Deferred fired when it is this caller's turn on the reactor (at once without one)."""

    if not reactor.running:
        return defer.succeed(None)
    waiter = defer.Deferred()
    _waiting.append(waiter)
    _schedule(reactor)
    return waiter


def call_soon(function, *args) -> None:
    """Call ``function(*args)`` in a turn of its own (with no reactor running: whenever one runs,
    as ``reactor.callLater(0, ...)`` would)."""

    if reactor.running:
        turn().addCallback(lambda _: function(*args))
    else:
        reactor.callLater(0, function, *args)


def pending() -> int:
    """How many callers wait for their turn."""
    return len(_waiting)


def _slice_seconds() -> float:
    """``EVENNIA_AI_TURN_SLICE_MS`` in seconds (an unusable value is logged once by
    :mod:`evennia_ai.conf` and the default used: a broken setting must not stop every NPC)."""
    return conf.get_float("EVENNIA_AI_TURN_SLICE_MS") / 1000.0


def _schedule(reactor) -> None:
    global _scheduled
    if not _scheduled:
        _scheduled = True
        reactor.callLater(0, _run_one)


def _run_one() -> None:
    global _scheduled

    _scheduled = False
    deadline = time.perf_counter() + _slice_seconds()
    try:
        while _waiting:
            waiter = _waiting.popleft()
            waiter.callback(None)  # runs that caller until it next waits
            if time.perf_counter() >= deadline:
                break
    finally:
        if _waiting:
            _schedule(reactor)
