"""Fair turns on the reactor: one piece of assistant work per reactor turn.

Each tick runs on the reactor thread in a few pieces: choosing what to do and building the
context, continuing after each model call, and the bookkeeping at the end. With many assistants,
Twisted would run every piece that is due in one pass (all ``callLater(0)`` calls and all
results coming back from threads) before it reads input again, so a player's ``look`` would wait
behind dozens of ticks. Work that goes through :func:`turn` instead runs one piece per reactor
turn, first come first served, with the reactor polling its sockets in between: a player's
command waits at most for the one piece that is running.

Without a running reactor (tests, scripts) :func:`turn` fires at once, so code using it stays
synchronous there.

Example::

    @defer.inlineCallbacks
    def run(self):
        yield scheduler.turn()     # wait for this assistant's turn
        ...                        # one piece of reactor work
"""

from __future__ import annotations

from collections import deque

from twisted.internet import defer, reactor

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


def _schedule(reactor) -> None:
    global _scheduled
    if not _scheduled:
        _scheduled = True
        reactor.callLater(0, _run_one)


def _run_one() -> None:
    global _scheduled

    _scheduled = False
    if _waiting:
        waiter = _waiting.popleft()
        try:
            waiter.callback(None)  # runs that caller until it next waits
        finally:
            if _waiting:
                _schedule(reactor)
