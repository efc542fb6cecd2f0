"""Search modes, reciprocal rank fusion and searches over entries held elsewhere (pure)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.memory.search import (
    MODES,
    RRF_K,
    EmbeddingCache,
    MemoryHit,
    VectorLate,
    check_mode,
    reciprocal_rank_fusion,
    resolve_mode,
    run_search,
    search_entries,
    similarities,
    top_rows,
)


def hits(*names, score=0.5):
    return [MemoryHit(id=name, text=f"text {name}", score=score) for name in names]


def test_check_mode_names_the_valid_modes():
    assert [check_mode(m) for m in MODES] == list(MODES)
    assert check_mode(None) == "auto" and check_mode(" Hybrid ") == "hybrid"
    with pytest.raises(ValueError, match="auto, keyword, vector, hybrid"):
        check_mode("fuzzy")


def test_resolve_mode_falls_back_to_keyword_with_a_note():
    assert resolve_mode("auto", True) == ("hybrid", "")
    assert resolve_mode("auto", False) == ("keyword", "")
    assert resolve_mode("vector", True) == ("vector", "")
    mode, note = resolve_mode("hybrid", False)
    assert mode == "keyword" and "embedder" in note
    assert resolve_mode("keyword", True) == ("keyword", "")


def test_rrf_rewards_agreement():
    fused = reciprocal_rank_fusion(
        [hits("a", "b", "c"), hits("c", "d")], labels=["vector", "keyword"]
    )
    assert [h.id for h in fused] == ["c", "a", "b", "d"]  # b and d tie: first seen first
    top = fused[0]
    assert top.via == ("vector", "keyword") and set(top.scores) == {"vector", "keyword"}
    assert top.score == pytest.approx(
        (1 / (RRF_K + 3) + 1 / (RRF_K + 1)) / (2 / (RRF_K + 1)), abs=1e-6
    )
    assert fused[1].via == ("vector",)


def test_rrf_limit_labels_and_duplicates():
    assert [h.id for h in reciprocal_rank_fusion([hits("a", "b", "c")], limit=2)] == ["a", "b"]
    fused = reciprocal_rank_fusion([hits("a", "a", "b")], labels=["x"])
    assert [h.id for h in fused] == ["a", "b"] and fused[0].score == 1.0
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([hits("a")], labels=["x", "y"])
    assert reciprocal_rank_fusion([]) == []


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), max_size=4))
def test_rrf_properties(lists):
    ranked = [hits(*names) for names in lists]
    fused = reciprocal_rank_fusion(ranked)
    assert sorted(h.id for h in fused) == sorted({n for names in lists for n in names})
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)
    for hit in fused:  # a hit first in every list scores exactly 1
        if all(names and names[0] == hit.id for names in lists):
            assert hit.score == 1.0


def test_run_search_modes():
    asked = []

    def keyword(n):
        asked.append(("keyword", n))
        return hits("k1", "shared")

    def vector(n):
        asked.append(("vector", n))
        return hits("shared", "v1", score=0.9)

    outcome = run_search("auto", keyword=keyword, vector=vector, limit=2)
    assert outcome.mode == "hybrid" and [h.id for h in outcome.hits] == ["shared", "k1"]
    assert outcome.hits[0].via == ("vector", "keyword")
    # hybrid fetches deeper, the keyword hits first (a query embedding on its way gets the time)
    assert asked == [("keyword", 4), ("vector", 4)]
    assert [h.id for h in run_search("vector", keyword=keyword, vector=vector, limit=5).hits] == [
        "shared",
        "v1",
    ]
    assert run_search("keyword", keyword=keyword, vector=vector, limit=1).hits[0].via == (
        "keyword",
    )
    outcome = run_search("hybrid", keyword=keyword, vector=None, limit=5)
    assert outcome.mode == "keyword" and outcome.requested == "hybrid" and outcome.note


def test_run_search_survives_a_broken_vector_store():
    def vector(n):
        raise RuntimeError("qdrant is gone")

    outcome = run_search("auto", keyword=lambda n: hits("k"), vector=vector, limit=3)
    assert outcome.mode == "keyword" and "qdrant is gone" in outcome.note
    assert [h.id for h in outcome.hits] == ["k"]


def test_run_search_goes_with_keyword_hits_when_the_vector_is_late():
    asked = []

    def keyword(n):
        asked.append(n)
        return hits("k1", "k2", "k3")

    def late(n):
        raise VectorLate("the query's embedding was not ready within the recall deadline")

    outcome = run_search("auto", keyword=keyword, vector=late, limit=2)
    assert outcome.mode == "keyword" and outcome.requested == "auto"
    assert [h.id for h in outcome.hits] == ["k1", "k2"] and all(
        h.via == ("keyword",) for h in outcome.hits
    )
    assert outcome.note.startswith("the query's embedding was not ready")
    assert asked == [4]  # one keyword search, not a second one after the miss


ENTRIES = [
    {
        "id": "e1",
        "content": "The king of the north is dead",
        "source": "observed",
        "source_trust": 0.8,
    },
    {"id": "e2", "text": "The harvest festival starts at dawn", "time": "2026-01-02T00:00:00Z"},
    "Long live the king",
    {"content": ""},
]


def test_search_entries_keyword():
    outcome = search_entries(ENTRIES, "who is king?", 5)
    assert outcome.mode == "keyword"
    assert {h.id for h in outcome.hits} == {"e1", "#2"}
    e1 = next(h for h in outcome.hits if h.id == "e1")
    assert e1.trust == 0.8 and e1.source == "observed" and e1.kind == "archival"
    assert e1.data is ENTRIES[0]
    assert search_entries(ENTRIES, "  ", 5).hits == []
    assert search_entries([], "king", 5).hits == []


def fake_embed(text):
    """Three topics as axes: royalty, farming, anything else."""
    lowered = text.lower()
    return [
        float("king" in lowered or "monarch" in lowered or "throne" in lowered),
        float("harvest" in lowered or "crop" in lowered),
        0.1,
    ]


def test_search_entries_hybrid_finds_meaning_without_shared_words():
    outcome = search_entries(ENTRIES, "crops", 5, embed=fake_embed, threshold=0.5)
    assert outcome.mode == "hybrid" and [h.id for h in outcome.hits] == ["e2"]
    assert outcome.hits[0].via == ("vector",)
    outcome = search_entries(
        ENTRIES, "throne king", 5, mode="vector", embed=fake_embed, threshold=0.5
    )
    assert {h.id for h in outcome.hits} == {"e1", "#2"}


def test_embedding_cache_embeds_each_text_once():
    calls = []
    cache = EmbeddingCache(lambda text: calls.append(text) or [1.0], size=2)
    for text in ("a", "b", "a", "c", "a", "b"):
        cache(text)
    assert calls == ["a", "b", "c", "b"]


def test_embedding_cache_batches_the_texts_it_has_not_seen():
    singles, batches = [], []

    def one(text):
        singles.append(text)
        return [len(text), 1.0]

    def many(texts):
        batches.append(list(texts))
        return [[len(t), 1.0] for t in texts]

    cache = EmbeddingCache(one, size=10, embed_many=many)
    first = cache.many(["a", "bb", "a", "ccc"])
    assert batches == [["a", "bb", "ccc"]] and singles == []  # one call, each text once
    assert first.shape == (4, 2) and np.allclose(np.linalg.norm(first, axis=1), 1.0)
    cache.many(["bb", "dddd", "eeeee"])
    assert batches[-1] == ["dddd", "eeeee"]  # only the new ones
    cache("ffffff")
    assert singles == ["ffffff"]  # one text: the single call


def test_similarities_and_top_rows():
    matrix = np.array([[1, 0], [0, 1], [0.6, 0.8], [0, 0]], dtype=np.float32)
    scores = similarities([2, 0], matrix)
    assert np.allclose(scores, [1.0, 0.0, 0.6, 0.0])
    assert top_rows(scores, 2, 0.0) == [0, 2]
    assert top_rows(scores, 5, 0.5) == [0, 2]
    assert top_rows(scores, 0, 0.0) == []
    assert not similarities([0, 0], matrix).any()  # a zero query matches nothing
    assert not similarities([1, 0, 0], matrix).any()  # another embedder's width: nothing


def test_zero_and_broken_embeddings_match_nothing():
    def embed(text):
        return [0.0, 0.0] if "mill" in text else [1.0, float("nan")] if "nan" in text else [1.0, 0]

    entries = ["the mill burned", "a nan value", "the gate"]
    outcome = search_entries(entries, "gate", 5, mode="vector", embed=embed, threshold=0.1)
    assert [h.text for h in outcome.hits] == ["the gate"]


def test_hit_to_dict_leaves_the_original_out():
    hit = MemoryHit(id="a", text="t", via=("keyword",), data={"big": "entry"})
    out = hit.to_dict()
    assert "data" not in out and out["via"] == ["keyword"]
