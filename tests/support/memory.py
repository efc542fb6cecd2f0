"""Long-term memory test helpers: keyword-only memory in a temporary folder (the context manager
:func:`keyword_only_memory`, :func:`use_keyword_memory` for a TestCase, the ``keyword_ltm``
fixture), the PostgreSQL settings block, a stand-in embedder, cleanup, and the
``pgvector_memory`` fixture (conftest.py loads this module as a plugin, so its fixtures serve
every test module; import the helpers as ``from support.memory import ...``)."""

import hashlib
import random
import tempfile
import uuid
from contextlib import ExitStack, contextmanager
from typing import Iterator
from unittest import mock

import psycopg
import psycopg.sql
import pytest
from django.test import override_settings
from twisted.internet import defer

from evennia_ai.memory import longterm, longterm_config
from evennia_ai.memory.longterm_store import LongTermMemory

DIMS = 384


@contextmanager
def keyword_only_memory(
    data_dir: str, *, sync: bool = True, **settings
) -> Iterator[LongTermMemory]:
    """The game's long-term memory in ``data_dir``, without an embedder (keyword mode).

    The patches sit where the names are looked up: the game's instance and the thread hop in
    :mod:`evennia_ai.memory.longterm`, the local-embedder check in
    :mod:`evennia_ai.memory.longterm_config` (so mem0 is never loaded, even where the embedder
    is installed). The memory is closed, and the game's instance restored, on the way out.

    Args:
        data_dir: The data folder (``EVENNIA_AI_DATA_DIR``).
        sync: Make ``longterm.defer_to_thread`` synchronous (every Deferred has fired when
            the call returns).
        **settings: More settings to override (they win over the three set here).

    Yields:
        The game's memory (created, not initialised).
    """
    with ExitStack() as stack:
        if sync:
            stack.enter_context(mock.patch.object(longterm, "defer_to_thread", defer.maybeDeferred))
        stack.enter_context(mock.patch.object(longterm, "_MEMORY", None))
        stack.enter_context(
            mock.patch.object(longterm_config, "local_embedder_installed", lambda: False)
        )
        stack.enter_context(
            override_settings(
                **{
                    "EVENNIA_AI_DATA_DIR": data_dir,
                    "EVENNIA_AI_MEM0_CONFIG": None,
                    "EVENNIA_AI_KEYWORD_INDEX": None,  # SQLite, whatever a wider fixture set
                    **settings,
                }
            )
        )
        try:
            yield longterm.get_memory()
        finally:
            longterm.close()


def use_keyword_memory(testcase, *, sync: bool = True, **settings) -> LongTermMemory:
    """:func:`keyword_only_memory` in a temporary folder for a ``unittest`` TestCase, from its
    ``setUp`` to its cleanup."""
    folder = tempfile.TemporaryDirectory()
    testcase.addCleanup(folder.cleanup)
    stack = ExitStack()
    testcase.addCleanup(stack.close)
    return stack.enter_context(keyword_only_memory(folder.name, sync=sync, **settings))


@pytest.fixture
def keyword_ltm(tmp_path) -> Iterator[LongTermMemory]:
    """The game's long-term memory in ``tmp_path``, keyword mode, synchronous calls."""
    with keyword_only_memory(str(tmp_path)) as memory:
        yield memory


def pgvector_config(dsn: str, collection: str, embedder: dict) -> dict:
    """The settings block of docs/memory.md ("PostgreSQL"), on the test server: mem0's vectors
    in pgvector (``EVENNIA_AI_MEM0_CONFIG``), the keyword index in the same database
    (``EVENNIA_AI_KEYWORD_INDEX`` without a ``dsn`` takes mem0's)."""
    return {
        "EVENNIA_AI_MEM0_CONFIG": {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": dsn,
                    "collection_name": collection,
                    "embedding_model_dims": 384,
                    "hnsw": True,
                },
            },
            "embedder": embedder,
        },
        "EVENNIA_AI_KEYWORD_INDEX": {"backend": "postgres", "table": f"{collection}_keywords"},
    }


def drop_tables(dsn: str, *tables: str) -> None:
    """Remove what a test made on the PostgreSQL server."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in tables:
            conn.execute(
                psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(table))
            )


class WordEmbedder:
    """A stand-in for mem0's embedder: each word a fixed random direction, a text their sum.
    Texts sharing words are near; enough to test the store, not meaning."""

    config = None

    def embed(self, text, memory_action=None):
        vector = [0.0] * DIMS
        for word in str(text).lower().split():
            seed = int.from_bytes(hashlib.sha256(word.strip(".,?!").encode()).digest()[:8], "big")
            rng = random.Random(seed)
            vector = [v + rng.gauss(0, 1) for v in vector]
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        return [v / norm for v in vector]


@pytest.fixture
def pgvector_memory(pgvector_dsn, tmp_path, monkeypatch):
    """Long-term memory with its vectors in pgvector and its keyword index in PostgreSQL,
    embedding with :class:`WordEmbedder` (mem0 is configured with an embedder it never calls)."""
    monkeypatch.setattr(longterm, "defer_to_thread", defer.maybeDeferred)  # no thread hop
    monkeypatch.setattr(longterm, "_MEMORY", None)
    collection = f"ltm_{uuid.uuid4().hex[:12]}"
    unused = {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 384}}
    with override_settings(
        EVENNIA_AI_DATA_DIR=str(tmp_path),
        EVENNIA_AI_MEMORY_THRESHOLD=0.2,
        **pgvector_config(pgvector_dsn, collection, unused),
    ):
        memory = longterm.get_memory()
        memory.init_sync()
        assert memory.vector_ready, memory.reason
        memory.memory.embedding_model = WordEmbedder()
        yield memory
        longterm.close()
    drop_tables(pgvector_dsn, collection, f"{collection}_keywords")
