"""The reply path's query vectors: one embedding per heard line, in threads of their own,
waited for only until the recall's deadline (``evennia_ai.memory.query_vectors``)."""

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from django.test import override_settings

from evennia_ai.memory import longterm
from evennia_ai.memory.longterm_records import StoredMemory, keyword_doc
from evennia_ai.memory.longterm_store import READY, LongTermMemory
from evennia_ai.memory.query_vectors import QueryEmbeddings, recall_deadline
from evennia_ai.memory.search import VectorLate
from evennia_ai.memory.vector_index import NpcVectorIndex

LINE = 'Alice says: "Where did Bob hide the cellar key?"'


class CountingEmbedder:
    """Records every call and the thread it ran on; ``gate`` (an Event) holds calls back."""

    def __init__(self, gate: threading.Event | None = None):
        self.calls: list[str] = []
        self.threads: list[threading.Thread] = []
        self.gate = gate
        self.lock = threading.Lock()

    def __call__(self, text, *_):
        with self.lock:
            self.calls.append(text)
            self.threads.append(threading.current_thread())
        if self.gate is not None:
            self.gate.wait(10)
        return [float(len(text)), 1.0, 0.5]

    embed = __call__  # mem0's embedder interface: embed(text, memory_action)


def test_ten_listeners_cost_one_embedding():
    embedder = CountingEmbedder()
    embeddings = QueryEmbeddings(embedder)
    futures = [embeddings.start(LINE) for _listener in range(10)]
    vectors = [embeddings.wait(LINE, None) for _listener in range(10)]
    embeddings.close()
    assert embedder.calls == [LINE] and len({id(f) for f in futures}) == 1
    assert all(np.array_equal(v, vectors[0]) for v in vectors)
    assert vectors[0].dtype == np.float32 and np.isclose(np.linalg.norm(vectors[0]), 1.0)
    assert embeddings.counts()["embeddings"] == 1 and embeddings.counts()["shared"] == 19


def test_the_cache_is_bounded_least_recently_used_first():
    embedder = CountingEmbedder()
    embeddings = QueryEmbeddings(embedder, size=2)
    for text in ("one", "two", "one", "three"):  # "two" is the least recently used
        embeddings.wait(text, None)
    embeddings.wait("one", None)
    embeddings.wait("two", None)  # dropped: embedded again
    embeddings.close()
    assert embedder.calls == ["one", "two", "three", "two"]


def test_a_failed_embedding_is_not_kept():
    calls = []

    def flaky(text):
        calls.append(text)
        if len(calls) == 1:
            raise RuntimeError("embedder restarting")
        return [1.0, 0.0]

    embeddings = QueryEmbeddings(flaky)
    with pytest.raises(RuntimeError, match="restarting"):
        embeddings.wait("hello", None)
    assert embeddings.wait("hello", None) is not None and calls == ["hello", "hello"]
    embeddings.close()


def test_a_slow_embedding_misses_the_deadline_without_being_waited_for():
    gate = threading.Event()
    embedder = CountingEmbedder(gate)
    embeddings = QueryEmbeddings(embedder)
    try:
        with override_settings(EVENNIA_AI_RECALL_DEADLINE_MS=30):
            with pytest.raises(VectorLate, match="EVENNIA_AI_RECALL_DEADLINE_MS, 30 ms"):
                embeddings.by_deadline(LINE, recall_deadline())
            # it returned while the embedder was still held: it did not wait for it
            assert not gate.is_set() and embedder.calls == [LINE]
            counts = embeddings.counts()
        assert (counts["searches"], counts["in_time"], counts["missed"]) == (1, 0, 1)
        gate.set()
        embeddings.start(LINE).result(10)
        # the next listener's recall gets the finished vector at once, even past its deadline
        assert embeddings.by_deadline(LINE, recall_deadline() - 1.0).size == 3
        assert embeddings.counts()["in_time"] == 1 and embedder.calls == [LINE]
    finally:
        gate.set()
        embeddings.close()


def test_nothing_embeds_on_the_calling_thread():
    embedder = CountingEmbedder()
    embeddings = QueryEmbeddings(embedder)
    embeddings.wait("a heard line", None)
    embeddings.by_deadline("another line", None)
    embeddings.close()
    assert embedder.threads and all(t is not threading.current_thread() for t in embedder.threads)
    assert all(t.name.startswith("evennia_ai-query-embed") for t in embedder.threads)


# -- through long-term memory --------------------------------------------------------------
@pytest.fixture
def vector_memory(tmp_path, monkeypatch):
    """The game's long-term memory, ready, with an in-process index and a counting embedder
    (a stand-in for mem0: only its embedder is used); the keyword index in SQLite."""
    embedder = CountingEmbedder()
    with override_settings(
        EVENNIA_AI_DATA_DIR=str(tmp_path),
        EVENNIA_AI_MEM0_CONFIG=None,
        EVENNIA_AI_KEYWORD_INDEX=None,
        EVENNIA_AI_MEMORY_THRESHOLD=0.0,
    ):
        memory = LongTermMemory(str(tmp_path))
        memory.state = READY
        memory.memory = SimpleNamespace(
            embedding_model=embedder, vector_store=SimpleNamespace(in_step=True)
        )
        memory.vector_index = NpcVectorIndex()
        monkeypatch.setattr(longterm, "_MEMORY", memory)
        yield memory, embedder
        memory.close()


def test_a_late_vector_gives_the_keyword_hits_and_counts_the_miss(vector_memory):
    memory, embedder = vector_memory
    memory.keyword_index().upsert(
        keyword_doc(StoredMemory(id="m1", text="Bob hid the cellar key under the mat", npc="#5"))
    )
    memory.vector_index.upsert("m1", [1.0, 1.0, 0.5], {"agent_id": "#5", "data": "Bob hid it"})
    embedder.gate = threading.Event()
    try:
        with override_settings(EVENNIA_AI_RECALL_DEADLINE_MS=20):
            late = memory.search_sync("#5", "cellar key", deadline=recall_deadline())
        assert late.mode == "keyword" and [h.id for h in late.hits] == ["m1"]
        assert "recall deadline" in late.note and not embedder.gate.is_set()
        assert longterm.status()["recall"]["missed"] == 1
    finally:
        embedder.gate.set()
    in_time = memory.search_sync("#5", "cellar key", deadline=recall_deadline())
    assert in_time.mode == "hybrid" and in_time.hits[0].via == ("vector", "keyword")
    recall = longterm.status()["recall"]
    assert (recall["searches"], recall["in_time"], recall["missed"]) == (2, 1, 1)
    assert "1 went with keyword hits" in longterm.status_text(longterm.status())
    assert embedder.calls == ["cellar key"]  # one embedding for both searches


def test_embed_ahead_starts_once_and_never_on_the_calling_thread(vector_memory):
    memory, embedder = vector_memory
    assert all(longterm.embed_ahead(LINE) for _listener in range(10))
    memory.query_embeddings.start(LINE).result(10)
    assert embedder.calls == [LINE] and embedder.threads[0] is not threading.current_thread()
    assert not longterm.embed_ahead(LINE, "keyword") and not longterm.embed_ahead("  ")
    memory.vector_index = None  # searches through mem0: nothing to share
    assert not longterm.embed_ahead("another line")
