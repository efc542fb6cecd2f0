"""The thread pool that model and memory calls run in, off the reactor.

A pool of its own, of daemon threads, sized by ``EVENNIA_AI_THREAD_POOL_SIZE`` (default 10):

- game code using Twisted's shared pool (Evennia's own ``run_async``, database work) is never
  starved by slow model calls;
- a reload or shutdown never waits for a model call in flight: Twisted joins its own pool's
  threads on shutdown, so a 30-second model call would keep the old server process alive while
  the portal starts the new one. Daemon threads are dropped at exit instead; the tick they
  served is replayed after the reload because its events never left the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from twisted.internet import reactor, threads
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorFromThreads
from twisted.python.threadpool import ThreadPool

from evennia_ai import conf

_POOL: ThreadPool | None = None
_LOCK = threading.Lock()
P = ParamSpec("P")
T = TypeVar("T")


class _DaemonThread(threading.Thread):
    """A thread that does not keep the process alive at exit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.daemon = True


class DaemonThreadPool(ThreadPool):
    """A Twisted ThreadPool whose workers are daemon threads."""

    threadFactory = _DaemonThread


def get_pool() -> ThreadPool:
    """The shared pool, started on first use."""
    global _POOL
    with _LOCK:
        if _POOL is None:
            size = conf.get_int("EVENNIA_AI_THREAD_POOL_SIZE")
            _POOL = DaemonThreadPool(minthreads=0, maxthreads=size, name="evennia_ai")
            _POOL.start()
        return _POOL


def run_in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Deferred[T]:
    """Run ``fn`` in the pool; returns a Deferred firing (on the reactor) with its result."""

    return threads.deferToThreadPool(
        cast(IReactorFromThreads, reactor), get_pool(), fn, *args, **kwargs
    )


def in_flight() -> int:
    """Jobs running or waiting in the pool."""
    pool = _POOL
    if pool is None:
        return 0
    return len(pool.working) + pool._queue.qsize() if hasattr(pool, "_queue") else len(pool.working)
