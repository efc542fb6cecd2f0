"""The reply path's query vectors: each line embedded once, off the reactor, under a deadline.

A player's line heard by ten NPCs is one text (the event as they read it, e.g.
``Alice says: "Where is the key?"``). :meth:`QueryEmbeddings.start` begins its embedding in a
thread of this module's own when the line is heard (:mod:`evennia_ai.npc.perception`), and
every NPC's recall in its tick waits for that one vector (:meth:`QueryEmbeddings.by_deadline`)
only until the recall's deadline (``EVENNIA_AI_RECALL_DEADLINE_MS``); past it the search goes
with its keyword hits (:class:`~evennia_ai.memory.search.VectorLate`) and the miss is counted.
The counts are in ``longterm.status()["recall"]``.

The embedder never runs on the calling thread: a search thread waiting here holds no other
work up, and the reactor only ever calls :meth:`QueryEmbeddings.start`, which never blocks.
Pure Python (threads from :mod:`concurrent.futures`); no Twisted.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, Callable

import numpy as np

from evennia_ai import conf
from evennia_ai.memory.search import VectorLate
from evennia_ai.memory.vector_index import unit_vector

QUERY_CACHE_SIZE = 256
"""Query embeddings kept (least recently used dropped first): the lines heard lately."""
QUERY_WORKERS = 2
"""Threads that embed queries."""
_NOTHING = np.zeros(0, dtype=np.float32)  # a text the embedder gave no usable vector for


class QueryEmbeddings:
    """Each query text embedded once, in a thread of its own, and shared by every search of it.

    Bounded: the ``size`` most recently used texts are kept (a failed embedding is not kept).
    Thread-safe.

    Args:
        embed: ``embed(text) -> vector`` (blocking; runs in this object's threads only).
        size: Most texts kept.
        workers: Threads embedding at once.

    Attributes:
        embedded: Embeddings computed.
        shared: Requests answered by an embedding already started or done.
        searches: Searches that waited under a deadline (:meth:`by_deadline`).
        in_time: Of those, the ones whose embedding was ready in time.
        missed: The ones it was not ready for (they went with their keyword hits).
    """

    def __init__(
        self,
        embed: Callable[[str], Any],
        size: int = QUERY_CACHE_SIZE,
        workers: int = QUERY_WORKERS,
    ):
        self._embed = embed
        self.size = max(1, int(size))
        self._futures: OrderedDict[str, Future] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, int(workers)), thread_name_prefix="evennia_ai-query-embed"
        )
        self.embedded = self.shared = 0
        self.searches = self.in_time = self.missed = 0

    def start(self, text: str) -> Future:
        """The embedding of ``text``: the one started or done already, else started now.

        Never blocks on the embedder. The future's result is a float32 unit vector (empty for a
        text the embedder gives no usable vector for: it matches nothing).
        """
        text = str(text)
        with self._lock:
            future = self._futures.get(text)
            if future is not None:
                self._futures.move_to_end(text)
                self.shared += 1
                return future
            future = self._futures[text] = self._pool.submit(self._run, text)
            while len(self._futures) > self.size:  # a dropped pending one still completes
                self._futures.popitem(last=False)
        return future

    def wait(self, text: str, timeout: float | None) -> np.ndarray | None:
        """The unit embedding of ``text``, waiting at most ``timeout`` seconds (None: until
        it is done; 0 or less: only if it is done already).

        Returns:
            The vector, or None when it was not ready in time.

        Raises:
            Exception: Whatever the embedder raised.
        """
        future = self.start(text)
        if timeout is not None and timeout <= 0 and not future.done():
            return None
        try:
            return future.result(timeout=timeout)
        except FuturesTimeout:
            return None

    def by_deadline(self, text: str, deadline: float | None) -> np.ndarray:
        """The embedding of ``text`` if it is ready by ``deadline`` (``time.monotonic()``;
        None waits until it is), counted in :attr:`in_time` or :attr:`missed`.

        Raises:
            VectorLate: It was not ready in time (the message names the deadline setting).
            Exception: Whatever the embedder raised.
        """
        if deadline is None:
            vector = self.wait(text, None)
            return _NOTHING if vector is None else vector
        vector = self.wait(text, deadline - time.monotonic())
        with self._lock:
            self.searches += 1
            if vector is None:
                self.missed += 1
            else:
                self.in_time += 1
        if vector is None:
            raise VectorLate(
                "the query's embedding was not ready within the recall deadline "
                f"(EVENNIA_AI_RECALL_DEADLINE_MS, {deadline_ms()} ms); used keyword search."
            )
        return vector

    def counts(self) -> dict:
        """What :attr:`embedded` ... :attr:`missed` say, as plain data (the status's ``recall``)."""
        with self._lock:
            return {
                "deadline_ms": deadline_ms(),
                "searches": self.searches,
                "in_time": self.in_time,
                "missed": self.missed,
                "embeddings": self.embedded,
                "shared": self.shared,
            }

    def _run(self, text: str) -> np.ndarray:
        try:
            vector = unit_vector(self._embed(text))
        except Exception:
            with self._lock:  # not kept: the next request tries again
                self._futures.pop(text, None)
            raise
        with self._lock:
            self.embedded += 1
        return _NOTHING if vector is None else vector

    def close(self) -> None:
        """Stop the threads (pending embeddings are cancelled)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def deadline_ms() -> int:
    """``EVENNIA_AI_RECALL_DEADLINE_MS``: how long the reply path waits for the query's vector."""
    return conf.get_int("EVENNIA_AI_RECALL_DEADLINE_MS")


def recall_deadline() -> float:
    """The ``time.monotonic()`` by which a recall starting now must have its query's vector."""
    return time.monotonic() + deadline_ms() / 1000.0


def no_counts() -> dict:
    """:meth:`QueryEmbeddings.counts` before any query was embedded."""
    return {
        "deadline_ms": deadline_ms(),
        "searches": 0,
        "in_time": 0,
        "missed": 0,
        "embeddings": 0,
        "shared": 0,
    }
