"""mem0's vectors in process: the index loaded from any supported store (a Qdrant server's
client here, pgvector in test_longterm_memory.py) and following every write through
:class:`~evennia_ai.memory.mem0_adapter.IndexedStore`."""

import uuid
from types import SimpleNamespace

import pytest
from django.test import override_settings
from qdrant_client import QdrantClient
from qdrant_client.models import Distance, PointStruct, VectorParams

from evennia_ai.memory import mem0_adapter
from evennia_ai.memory.vector_index import NpcVectorIndex

SERVER = {  # a Qdrant server's configuration (docs/scaling.md): no local path
    "vector_store": {
        "provider": "qdrant",
        "config": {"host": "qdrant.internal", "port": 6333, "collection_name": "npcs"},
    }
}


def payload(npc, text, **more):
    return {"agent_id": npc, "data": text, "hash": "x", "text_lemmatized": text, **more}


class FakeStore:
    """mem0's vector-store interface over a dict; ``fail`` makes the next write raise."""

    def __init__(self):
        self.points: dict[str, tuple[list, dict]] = {}
        self.fail = False

    def _check(self):
        if self.fail:
            raise RuntimeError("store down")

    def insert(self, vectors, payloads=None, ids=None):
        self._check()
        for point_id, vector, data in zip(ids, vectors, payloads):
            self.points[point_id] = (vector, data)

    def update(self, vector_id, vector=None, payload=None):
        self._check()
        old_vector, old_payload = self.points[vector_id]
        self.points[vector_id] = (vector or old_vector, payload or old_payload)

    def delete(self, vector_id):
        self._check()
        self.points.pop(vector_id, None)

    def delete_col(self):
        self.points.clear()

    def get(self, vector_id):
        return self.points.get(vector_id)


def indexed():
    index = NpcVectorIndex()
    memory = SimpleNamespace(vector_store=FakeStore())
    store = mem0_adapter.index_writes(memory, index)
    return memory, store, index


def ids(index, npc, vector=(1, 0, 0)):
    return [hit.id for hit in index.search(npc, list(vector), 10, threshold=-1.0)]


def test_every_write_reaches_the_index():
    memory, store, index = indexed()
    assert memory.vector_store is store and store.in_step
    store.insert(
        vectors=[[1, 0, 0], [0, 1, 0]],
        payloads=[payload("#5", "east"), payload("#5", "north", user_id="#7")],
        ids=["a", "b"],
    )
    assert ids(index, "#5") == ["a", "b"] and index.count("#5") == 2
    hit = index.search("#5", [1, 0, 0], 1)[0]
    assert hit.payload == {"agent_id": "#5", "data": "east"}  # only what a hit shows
    store.update(vector_id="a", vector=[0, 0, 1], payload=payload("#5", "up"))  # mem0's update
    assert ids(index, "#5", (0, 0, 1))[0] == "a"
    assert index.search("#5", [0, 0, 1], 1)[0].payload["data"] == "up"
    store.update(vector_id="b", payload=payload("#5", "still north", user_id="#7"))  # partial
    top = index.search("#5", [0, 1, 0], 1)[0]
    assert top.id == "b" and top.payload["data"] == "still north" and top.score > 0.99
    store.delete(vector_id="a")  # mem0's delete, an operator's delete
    assert ids(index, "#5") == ["b"] and store.get("a") is None
    store.delete_col()
    assert index.count("#5") == 0 and store.in_step


def test_a_failed_write_leaves_the_index_as_the_store():
    memory, store, index = indexed()
    store.insert(vectors=[[1, 0, 0]], payloads=[payload("#5", "east")], ids=["a"])
    store._target.fail = True
    with pytest.raises(RuntimeError, match="store down"):
        store.delete("a")
    with pytest.raises(RuntimeError, match="store down"):
        store.insert(vectors=[[0, 1, 0]], payloads=[payload("#5", "north")], ids=["b"])
    assert ids(index, "#5") == ["a"] and store.in_step


def test_a_write_it_cannot_follow_puts_it_out_of_step():
    memory, store, index = indexed()
    store._target.points["x"] = ([1, 0, 0], payload("#5", "written elsewhere"))
    store.update(vector_id="x", payload=payload("#5", "changed"))  # not held: cannot follow
    assert not store.in_step


def test_the_index_loads_a_qdrant_server_in_pages_leaving_superseded_memories_out(monkeypatch):
    client = QdrantClient(location=":memory:")  # the client API a Qdrant server answers
    client.create_collection("npcs", vectors_config=VectorParams(size=3, distance=Distance.COSINE))
    points = [str(uuid.uuid4()) for _ in range(5)]
    client.upsert(
        "npcs",
        [
            PointStruct(id=point, vector=[1.0, i, 0.0], payload=payload("#5", f"memory {i}"))
            for i, point in enumerate(points)
        ],
    )
    pages = []
    monkeypatch.setattr(mem0_adapter, "INDEX_PAGE", 2)

    def superseded(page):
        pages.append(len(page))
        return {points[3]} & set(page)

    memory = SimpleNamespace(vector_store=SimpleNamespace(client=client, collection_name="npcs"))
    with override_settings(EVENNIA_AI_MEMORY_VECTOR_INDEX=True):
        index = mem0_adapter.load_vector_index(memory, SERVER, superseded)
    assert pages == [2, 2, 1] and index.count("#5") == 4
    assert set(ids(index, "#5")) == set(points) - {points[3]}
    with override_settings(EVENNIA_AI_MEMORY_VECTOR_INDEX=False):
        assert mem0_adapter.load_vector_index(memory, SERVER) is None
    other = {"vector_store": {"provider": "chroma", "config": {}}}
    assert mem0_adapter.load_vector_index(memory, other) is None  # searched through mem0
    client.close()
