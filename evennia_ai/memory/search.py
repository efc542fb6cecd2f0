"""Search modes over long-term memories, archival entries and history (pure).

Four modes (docs/memory.md, "How it searches"):

- ``keyword``: SQLite FTS5 ranked by BM25 (:mod:`evennia_ai.memory.keyword_index`). Always
  available; finds exact names and rare words; no relevance threshold (a shared word is the
  evidence).
- ``vector``: semantic similarity through mem0's embedder and vector store; hits below the
  relevance threshold (``EVENNIA_AI_MEMORY_THRESHOLD``) are dropped.
- ``hybrid``: both, merged by reciprocal rank fusion (:func:`reciprocal_rank_fusion`), so a
  memory found by both ranks first and one found by either still appears.
- ``auto``: ``hybrid`` when an embedder is available, else ``keyword``.

Asking for ``vector`` or ``hybrid`` without an embedder falls back to ``keyword`` with a note
saying so, rather than failing: a game without the local embedder still remembers.

This module holds the mode logic and the fusion, and works on any callables that return
ranked :class:`MemoryHit` lists; :mod:`evennia_ai.memory.longterm` plugs in the real stores.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from evennia_ai import conf
from evennia_ai.llm.errors import reason
from evennia_ai.memory.keyword_index import rank_texts
from evennia_ai.memory.vector_index import unit_vector

MODES = ("auto", "keyword", "vector", "hybrid")
RRF_K = 60  # the usual constant of reciprocal rank fusion: damps the weight of the top ranks


@dataclass
class MemoryHit:
    """One ranked search result.

    Attributes:
        id: The memory's id (shared by the keyword index and the vector store).
        text: What is remembered.
        score: Relevance in [0, 1]: similarity (vector), share of the query's words matched (keyword) or the
            normalised fused score (hybrid). Orders hits of one search; not comparable across
            modes.
        source: How the NPC learned it (``told_directly``, ``observed``, ...).
        trust: How far to trust it, 0-1, or None.
        time: When it was stored, ISO-8601 UTC.
        person: Dbref of the character it is about, or "".
        person_name: That character's name.
        kind: ``memory``, ``archival`` or ``history``.
        via: Which searches found it (``keyword``, ``vector``).
        scores: Each search's own score, by search.
        data: The original item, for searches over entries held elsewhere (archival).
        superseded_by: Id of the memory that replaced this one ("" while it is current).
        superseded_at: When it was replaced, ISO-8601 UTC.
    """

    id: str
    text: str
    score: float = 0.0
    source: str = ""
    trust: float | None = None
    time: str = ""
    person: str = ""
    person_name: str = ""
    kind: str = "memory"
    via: tuple[str, ...] = ()
    scores: dict[str, float] = field(default_factory=dict)
    data: dict | None = None
    superseded_by: str = ""
    superseded_at: str = ""

    def to_dict(self) -> dict:
        """Plain data for tool results and the web (the original item left out)."""
        out = asdict(self)
        out.pop("data", None)
        out["via"] = list(self.via)
        return out


@dataclass
class SearchOutcome:
    """What a search did and found.

    Attributes:
        mode: The mode actually used (never ``auto``).
        hits: Results, best first.
        requested: The mode asked for.
        note: Why the mode differs from the one asked for, or what failed; "" when nothing.
    """

    mode: str
    hits: list[MemoryHit]
    requested: str = "auto"
    note: str = ""


def check_mode(mode: str | None) -> str:
    """Normalise a mode name; raises ValueError naming the valid ones."""
    value = str(mode or "auto").strip().lower()
    if value not in MODES:
        raise ValueError(f"Unknown search mode {mode!r}; use one of: {', '.join(MODES)}.")
    return value


def resolve_mode(requested: str | None, vector_available: bool) -> tuple[str, str]:
    """The mode to run and a note when it is not the one asked for.

    Args:
        requested: ``auto``, ``keyword``, ``vector`` or ``hybrid`` (None means ``auto``).
        vector_available: Whether an embedder and vector store are ready.

    Returns:
        ``(mode, note)``; ``mode`` is never ``auto``.

    Raises:
        ValueError: For an unknown mode.
    """
    mode = check_mode(requested)
    if mode == "auto":
        return ("hybrid" if vector_available else "keyword"), ""
    if mode in ("vector", "hybrid") and not vector_available:
        return (
            "keyword",
            f"{mode} search needs an embedder, which is not available; used keyword search.",
        )
    return mode, ""


def reciprocal_rank_fusion(
    ranked: Sequence[Sequence[MemoryHit]],
    *,
    labels: Sequence[str] | None = None,
    k: int = RRF_K,
    limit: int | None = None,
) -> list[MemoryHit]:
    """Merge ranked lists: each hit scores ``sum(1 / (k + rank))`` over the lists it is in.

    Hits are matched by id. A merged hit keeps the fields of its first appearance, the union
    of ``via`` and every list's own score in ``scores``. Its ``score`` is the fused score
    divided by the best possible (first in every list), so it lies in (0, 1].

    Args:
        ranked: Lists of hits, each best first.
        labels: Name of each list (recorded in ``via``/``scores``); default ``list0``, ...
        k: The fusion constant (larger flattens the ranks' weights).
        limit: Most hits returned (None: all).

    Returns:
        The merged hits, best first; ties keep first-seen order.
    """
    labels = list(labels) if labels is not None else [f"list{i}" for i in range(len(ranked))]
    if len(labels) != len(ranked):
        raise ValueError("reciprocal_rank_fusion needs one label per list.")
    best_possible = sum(1.0 / (k + 1) for _ in ranked) or 1.0
    merged: dict[str, MemoryHit] = {}
    fused: dict[str, float] = {}
    for label, hits in zip(labels, ranked):
        seen: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            if hit.id in seen:  # a list naming the same hit twice counts it once, at its best
                continue
            seen.add(hit.id)
            if hit.id not in merged:
                merged[hit.id] = MemoryHit(
                    **{**asdict(hit), "via": (), "scores": {}, "data": hit.data}
                )
            entry = merged[hit.id]
            entry.via = tuple(dict.fromkeys(entry.via + (label,)))
            entry.scores[label] = hit.score
            fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (k + rank)
    order = sorted(merged, key=lambda hit_id: -fused[hit_id])  # sorted() is stable on ties
    out = []
    for hit_id in order[: limit if limit is not None else None]:
        hit = merged[hit_id]
        hit.score = round(fused[hit_id] / best_possible, 6)
        out.append(hit)
    return out


Searcher = Callable[[int], list[MemoryHit]]


class VectorLate(Exception):
    """The query's embedding was not ready by the search's deadline (the message says so):
    the search answers with its keyword hits."""


def run_search(
    mode: str | None, *, keyword: Searcher, vector: Searcher | None, limit: int
) -> SearchOutcome:
    """Run one search in the given mode.

    In hybrid mode the keyword hits are fetched first, so a query embedding still on its way
    (a deadline-bound vector searcher) gets that time too.

    Args:
        mode: The requested mode.
        keyword: ``fetch(n) -> hits`` over the keyword index (always available).
        vector: ``fetch(n) -> hits`` over the vector store (already thresholded), or None when
            there is no embedder. It raises :class:`VectorLate` when its query's embedding
            missed a deadline.
        limit: Most hits returned.

    Returns:
        A :class:`SearchOutcome`. A failing or late vector search falls back to keyword search,
        with the error or the miss in ``note``; a failing keyword search raises (nothing else
        would answer).
    """
    requested = check_mode(mode)
    effective, note = resolve_mode(requested, vector is not None)
    limit = max(1, int(limit))
    if effective in ("vector", "hybrid"):
        # Hybrid fetches deeper so a hit ranked low by one search can still be fused in.
        keyword_hits = _labelled(keyword(2 * limit), "keyword") if effective == "hybrid" else None
        try:
            vector_hits = _labelled(vector(limit if effective == "vector" else 2 * limit), "vector")
        except VectorLate as late:
            note, effective = str(late), "keyword"
        except Exception as err:  # the embedder or the store broke: still answer by keyword
            note = f"vector search failed ({reason(err)}); used keyword search."
            effective = "keyword"
        else:
            if effective == "vector" or keyword_hits is None:
                return SearchOutcome("vector", vector_hits[:limit], requested, note)
            hits = reciprocal_rank_fusion(
                [vector_hits, keyword_hits], labels=["vector", "keyword"], limit=limit
            )
            return SearchOutcome("hybrid", hits, requested, note)
        if keyword_hits is not None:
            return SearchOutcome("keyword", keyword_hits[:limit], requested, note)
    return SearchOutcome("keyword", _labelled(keyword(limit), "keyword")[:limit], requested, note)


def _labelled(hits: Iterable[MemoryHit], label: str) -> list[MemoryHit]:
    out = []
    for hit in hits:
        if label not in hit.via:
            hit.via = hit.via + (label,)
        hit.scores.setdefault(label, hit.score)
        out.append(hit)
    return out


# -- entries held elsewhere (archival, history) ---------------------------------------------
def entry_text(entry: Any) -> str:
    """The searchable text of an archival/history entry (a dict or a plain string)."""
    if isinstance(entry, dict):
        for key in ("content", "text", "memory", "summary"):
            value = entry.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""
    return str(entry or "")


def entry_id(entry: Any, position: int) -> str:
    """A stable id for an entry: its own ``id`` when it has one, else its position."""
    if isinstance(entry, dict) and entry.get("id") not in (None, ""):
        return str(entry["id"])
    return f"#{position}"


EMBED_BATCH = 256
"""Most texts handed to the embedder in one batch call."""


class EmbeddingCache:
    """A bounded, thread-safe map text -> unit embedding: each entry is embedded once.

    Vectors are kept as float32 unit vectors (a zero or broken embedding as zeros, which
    matches nothing), so a search is one matrix product over them.

    Args:
        embed: ``embed(text) -> vector``.
        size: Most embeddings kept (least recently used dropped first); None reads
            ``EVENNIA_AI_EMBEDDING_CACHE_SIZE``.
        embed_many: ``embed_many(texts) -> vectors``, one call for many texts (an embedder's
            batch mode: a sentence model encodes a batch far faster than one text at a time).
            None embeds the texts one by one.
    """

    def __init__(
        self,
        embed: Callable[[str], Sequence[float]],
        size: int | None = None,
        embed_many: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
    ):
        self.embed = embed
        self.embed_many = embed_many
        self.size = (
            int(size) if size is not None else conf.get_int("EVENNIA_AI_EMBEDDING_CACHE_SIZE")
        )
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # searches run in several threads at once
        self._dims: int | None = None

    def __call__(self, text: str) -> np.ndarray:
        """The unit embedding of ``text``."""
        return self.many([text])[0]

    def many(self, texts: Sequence[str]) -> np.ndarray:
        """Unit embeddings of ``texts``, one row each; the ones not cached embedded in batches."""
        keys = [hashlib.sha1(t.encode("utf-8", "replace")).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for key in keys:
                vector = self._cache.get(key)
                if vector is not None:
                    self._cache.move_to_end(key)
                    found[key] = vector
        missing = list({k: t for k, t in zip(keys, texts) if k not in found}.items())
        for start in range(0, len(missing), EMBED_BATCH):  # outside the lock: the slow part
            chunk = missing[start : start + EMBED_BATCH]
            vectors = self._embed_texts([text for _key, text in chunk])
            with self._lock:
                for (key, _text), vector in zip(chunk, vectors):
                    found[key] = self._cache[key] = vector
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        dims = self._dims or 1
        if not keys:
            return np.zeros((0, dims), dtype=np.float32)
        zeros = np.zeros(dims, dtype=np.float32)  # an embedding of another width matches nothing
        return np.stack([found[k] if found[k].shape[0] == dims else zeros for k in keys])

    def _embed_texts(self, texts: list[str]) -> list[np.ndarray]:
        if self.embed_many is not None and len(texts) > 1:
            raw = list(self.embed_many(texts))
            if len(raw) != len(texts):
                raise ValueError(f"the embedder returned {len(raw)} vectors for {len(texts)} texts")
        else:
            raw = [self.embed(text) for text in texts]
        out = []
        for vector in raw:
            unit = unit_vector(vector)
            if unit is not None:
                self._dims = self._dims or unit.shape[0]
            out.append(unit if unit is not None else np.zeros(self._dims or 1, dtype=np.float32))
        return out


def similarities(query_vector: Any, matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``query_vector`` to each row of ``matrix`` (unit rows).

    Rows of another width than the query (an embedder changed mid-run) score 0.
    """
    unit = unit_vector(query_vector)
    if unit is None or not matrix.size or matrix.shape[1] != unit.shape[0]:
        return np.zeros(matrix.shape[0], dtype=np.float32)
    return matrix @ unit


def top_rows(scores: np.ndarray, limit: int, threshold: float) -> list[int]:
    """Indexes of the ``limit`` best scores at or above ``threshold``, best first."""
    keep = np.flatnonzero(scores >= threshold)
    if limit < 1 or not keep.size:
        return []
    if keep.size > limit:
        keep = keep[np.argpartition(-scores[keep], limit - 1)[:limit]]
    return keep[np.argsort(-scores[keep], kind="stable")].tolist()


def search_entries(
    entries: Sequence[Any],
    query: str,
    limit: int = 5,
    *,
    mode: str | None = "auto",
    embed: Callable[[str], Sequence[float]] | None = None,
    threshold: float = 0.0,
    kind: str = "archival",
) -> SearchOutcome:
    """Search a list of entries held elsewhere (archival entries, history lines).

    Keyword search uses a throwaway FTS5 index; vector search embeds the query and the entries
    with ``embed`` and scores them all in one matrix product. Give an :class:`EmbeddingCache`
    so each entry is embedded once, the new ones in batches.

    Args:
        entries: Dicts (``content``/``text`` and optional ``id``, ``source``, ``trust``,
            ``time``/``timestamp``) or strings.
        query: Plain text.
        limit: Most hits.
        mode: A search mode (``auto`` uses hybrid when ``embed`` is given).
        embed: An :class:`EmbeddingCache`, or any ``embed(text) -> vector``; None for keyword
            search only.
        threshold: Least cosine similarity of a vector hit.
        kind: The ``kind`` given to the hits.

    Returns:
        A :class:`SearchOutcome` whose hits carry the original entry in ``data``.
    """

    by_id: dict[str, MemoryHit] = {}
    for position, entry in enumerate(entries or []):
        text = entry_text(entry)
        if text.strip():
            hit_id = entry_id(entry, position)
            by_id.setdefault(hit_id, _entry_hit(hit_id, text, entry, kind))

    def fresh(hit_id: str, score: float) -> MemoryHit:
        base = by_id[hit_id]
        return MemoryHit(
            **{**asdict(base), "score": round(score, 6), "via": (), "scores": {}, "data": base.data}
        )

    def keyword(n: int) -> list[MemoryHit]:
        ranked = rank_texts(((h.id, h.text) for h in by_id.values()), query, n)
        return [fresh(hit_id, score) for hit_id, score in ranked]

    vector = None
    if embed is not None:

        def vector(n: int) -> list[MemoryHit]:
            ids = list(by_id)
            texts = [by_id[hit_id].text for hit_id in ids]
            if isinstance(embed, EmbeddingCache):
                matrix = embed.many(texts)
            else:
                matrix = EmbeddingCache(embed, size=len(texts) + 1).many(texts)
            scores = similarities(embed(query), matrix)
            return [fresh(ids[row], float(scores[row])) for row in top_rows(scores, n, threshold)]

    if not str(query or "").strip():
        return SearchOutcome(resolve_mode(mode, embed is not None)[0], [], check_mode(mode), "")
    return run_search(mode, keyword=keyword, vector=vector, limit=limit)


def _entry_hit(hit_id: str, text: str, entry: Any, kind: str) -> MemoryHit:
    data = entry if isinstance(entry, dict) else {"content": text}
    trust = data.get("trust", data.get("source_trust"))
    try:
        trust = None if trust is None else float(trust)
    except (TypeError, ValueError):
        trust = None
    return MemoryHit(
        id=hit_id,
        text=text,
        source=str(data.get("source") or ""),
        trust=trust,
        time=str(data.get("time") or data.get("timestamp") or ""),
        person=str(data.get("person") or ""),
        person_name=str(data.get("person_name") or ""),
        kind=kind,
        data=data,
    )
