"""The event loop that model calls run on: one asyncio loop in one daemon thread.

A model call spends nearly all its time waiting for the model. Waiting in a thread per call
capped the whole game at ``EVENNIA_AI_THREAD_POOL_SIZE`` calls in flight (10: five calls a
second at a 2-second latency), and more threads meant more contention for the interpreter lock
with the reactor. Here every call is a coroutine on one loop (litellm's ``acompletion``), so
the number in flight is bounded per model endpoint (:class:`EndpointLimits`), not by threads.

- :func:`call_async` starts a coroutine function on the loop from the reactor and returns a
  Deferred that fires *on the reactor thread* with its result (or failure).
- :func:`run_sync` runs one to completion from any other thread and returns its result (the
  blocking client API, e.g. for mem0's threads).
- litellm prepares each request synchronously in the loop's default executor (a few ms in
  one of :data:`SETUP_THREADS` threads) and then waits for the answer on the loop: no thread
  is held while the model thinks.
- The loop's thread is a daemon: a reload or shutdown never waits for a call in flight (the
  tick it served is replayed after the reload, its events never left the queue).

Nothing here touches the database: results reach game code on the reactor thread only.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar, cast

from twisted.internet import defer, reactor

P = ParamSpec("P")
T = TypeVar("T")

SETUP_THREADS = 8  # threads that prepare requests (litellm's synchronous part), not wait
_LOOP: asyncio.AbstractEventLoop | None = None
_THREAD: threading.Thread | None = None
_LOCK = threading.Lock()


class _Reactor(Protocol):
    """What this module uses of Twisted's global reactor (a module to the type checker)."""

    running: bool

    def callFromThread(  # noqa: N802 - Twisted's name
        self, callable: Callable[..., object], *args: object, **kwargs: object
    ) -> None: ...


def _reactor() -> _Reactor:
    return cast(_Reactor, reactor)


def get_loop() -> asyncio.AbstractEventLoop:
    """The model-call loop, started in its daemon thread on first use."""
    global _LOOP, _THREAD
    with _LOCK:
        if _LOOP is None or _LOOP.is_closed() or not (_THREAD and _THREAD.is_alive()):
            loop = asyncio.new_event_loop()
            # litellm's acompletion prepares each request in the loop's default executor (a
            # short hop; the wait for the model is on the loop): a pool of its own, named.
            loop.set_default_executor(
                ThreadPoolExecutor(max_workers=SETUP_THREADS, thread_name_prefix="evennia_ai-llm")
            )
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=run, name="evennia_ai-llm", daemon=True)
            thread.start()
            ready.wait(10)
            _LOOP, _THREAD = loop, thread
        return _LOOP


def on_loop_thread() -> bool:
    """Whether the caller runs on the model-call loop's thread."""
    return _THREAD is not None and threading.current_thread() is _THREAD


def call_async(
    fn: Callable[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs
) -> defer.Deferred[T]:
    """Run ``fn(*args, **kwargs)`` on the loop; a Deferred firing on the reactor thread.

    Outside a running reactor (unit tests, scripts) nothing would deliver the result, so the
    call is waited for and the Deferred returned has already fired (:func:`call_blocking`).
    """
    if not _reactor().running:
        return call_blocking(fn, *args, **kwargs)
    d: defer.Deferred[T] = defer.Deferred()
    future = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), get_loop())

    def done(fut: Future[T]) -> None:
        try:
            value = fut.result()
        except BaseException as err:  # noqa: BLE001 - handed to the Deferred as a Failure
            _reactor().callFromThread(d.errback, err)
        else:
            _reactor().callFromThread(d.callback, value)

    future.add_done_callback(done)
    return d


def run_sync(fn: Callable[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` on the loop and wait for its result (not on the loop's own
    thread, where it would wait for itself; not on the reactor, which must never wait).

    Raises:
        RuntimeError: called on the loop's thread.
    """
    if on_loop_thread():
        raise RuntimeError("run_sync() called on the model-call loop's own thread")
    future = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), get_loop())
    return future.result()


def call_blocking(
    fn: Callable[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs
) -> defer.Deferred[T]:
    """:func:`call_async` for tests and scripts without a running reactor: waits for the
    coroutine and returns a Deferred that has already fired."""
    try:
        value = run_sync(fn, *args, **kwargs)
    except BaseException:  # noqa: BLE001 - handed to the Deferred as a Failure
        return defer.fail()
    return defer.succeed(value)


class EndpointLimits:
    """How many model calls may be in flight per endpoint, and how many are.

    An endpoint is a server (``api_base``) or, without one, a provider (``openai``,
    ``anthropic``...). Each gets an :class:`asyncio.Semaphore` of its limit the first time it
    is used (the limit is read then: ``EVENNIA_AI_MODEL_SETTINGS[model]["max_concurrent"]``,
    else ``EVENNIA_AI_MAX_CONCURRENT_CALLS``). Used only on the loop's thread.
    """

    def __init__(self) -> None:
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.limits: dict[str, int] = {}
        self.in_flight: dict[str, int] = {}
        self.waiting: dict[str, int] = {}

    def semaphore(self, endpoint: str, limit: int) -> asyncio.Semaphore:
        if endpoint not in self._semaphores or self.limits.get(endpoint) != limit:
            if self.in_flight.get(endpoint) or self.waiting.get(endpoint):
                return self._semaphores[endpoint]  # a changed limit applies once it is idle
            self._semaphores[endpoint] = asyncio.Semaphore(max(1, int(limit)))
            self.limits[endpoint] = max(1, int(limit))
        return self._semaphores[endpoint]

    def slot(self, endpoint: str, limit: int) -> "_Slot":
        """``async with limits.slot(endpoint, limit):`` around one HTTP attempt."""
        return _Slot(self, endpoint, self.semaphore(endpoint, limit))

    def snapshot(self) -> dict[str, dict[str, int]]:
        """``{endpoint: {"limit", "in_flight", "waiting"}}`` (for status displays)."""
        return {
            endpoint: {
                "limit": self.limits.get(endpoint, 0),
                "in_flight": self.in_flight.get(endpoint, 0),
                "waiting": self.waiting.get(endpoint, 0),
            }
            for endpoint in self.limits
        }


class _Slot:
    def __init__(self, limits: EndpointLimits, endpoint: str, semaphore: asyncio.Semaphore):
        self.limits, self.endpoint, self.semaphore = limits, endpoint, semaphore

    async def __aenter__(self) -> _Slot:
        counts = self.limits
        counts.waiting[self.endpoint] = counts.waiting.get(self.endpoint, 0) + 1
        try:
            await self.semaphore.acquire()
        finally:
            counts.waiting[self.endpoint] -= 1
        counts.in_flight[self.endpoint] = counts.in_flight.get(self.endpoint, 0) + 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self.limits.in_flight[self.endpoint] -= 1
        self.semaphore.release()
        return False
