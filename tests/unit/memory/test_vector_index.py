"""The in-process per-NPC vector index used over the embedded Qdrant."""

import numpy as np
import pytest

from evennia_ai.memory.vector_index import NpcVectorIndex


def payload(npc, text, person=None):
    return {"agent_id": npc, "data": text, "user_id": person}


def test_search_is_scoped_ranked_and_thresholded():
    index = NpcVectorIndex()
    index.upsert("a", [1, 0, 0], payload("#1", "east"))
    index.upsert("b", [0.9, 0.1, 0], payload("#1", "mostly east", person="#7"))
    index.upsert("c", [0, 1, 0], payload("#1", "north"))
    index.upsert("d", [1, 0, 0], payload("#2", "another npc's east"))
    hits = index.search("#1", [2, 0, 0], 5, threshold=0.5)
    assert [h.id for h in hits] == ["a", "b"] and hits[0].score == pytest.approx(1.0)
    assert [h.id for h in index.search("#1", [1, 0, 0], 5, person="#7")] == ["b"]
    assert [h.id for h in index.search("#1", [1, 0, 0], 1)] == ["a"]
    assert index.search("#3", [1, 0, 0], 5) == [] and index.search("#1", [0, 0, 0], 5) == []


def test_replace_move_and_delete_keep_rows_consistent():
    index = NpcVectorIndex()
    for i in range(200):  # grows past the initial capacity
        index.upsert(f"p{i}", np.eye(4)[i % 4], payload("#1", f"text {i}"))
    assert index.count("#1") == 200 and len(index) == 200
    assert index.delete("p0") and not index.delete("p0") and not index.delete("missing")
    index.upsert("p1", [0, 0, 0, 1], payload("#1", "changed"))  # replace in place
    index.upsert("p2", [1, 0, 0, 0], payload("#2", "moved"))  # moves to another NPC
    assert index.count("#1") == 198 and index.count("#2") == 1
    top = index.search("#1", [0, 0, 0, 1], 200, threshold=0.99)
    assert "p1" in {h.id for h in top} and all(h.payload["data"] != "text 0" for h in top)
    assert all(int(h.id[1:]) % 4 == 3 or h.id == "p1" for h in top)


def test_unusable_points_are_ignored():
    index = NpcVectorIndex()
    assert not index.upsert("x", [1, 0], {"data": "no npc"})
    assert not index.upsert("y", [0, 0], payload("#1", "zero vector"))
    assert not index.upsert("z", [1, 0], payload("#1", ""))
    assert index.upsert("ok", [1, 0], payload("#1", "fine"))
    assert not index.upsert("w", [1, 0, 0], payload("#1", "wrong dims"))
    assert index.search("#1", [1, 0, 0], 3) == [] and len(index.search("#1", [1, 0], 3)) == 1
