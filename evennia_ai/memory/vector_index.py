"""An in-process cosine index over long-term memory's vectors, partitioned by NPC.

A search of one NPC's memories is a matrix-vector product over that NPC's rows of one
normalised float32 matrix (well under a millisecond at 10,000 memories), whatever mem0's
vector store is: the embedded Qdrant (whose local mode filters payloads in Python, point by
point: about 60 ms at 3,000 memories), a Qdrant server or pgvector (a network round trip and
mem0's own scoring per search).

The store stays the store of record: the index is loaded from it once when long-term memory
starts (:func:`evennia_ai.memory.mem0_adapter.load_vector_index`, in pages, off the reactor)
and then follows every write made in this process through mem0's vector store (adds, mem0's
updates and deletes, operator deletes, the migrate tool: see
:class:`evennia_ai.memory.mem0_adapter.IndexedStore`) and every memory marked superseded
(:class:`~evennia_ai.memory.longterm_store.LongTermMemory` drops it). Cost: the vectors (1.5 KB
a memory at 384 dimensions) plus the payload kept for the hits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

_INITIAL_ROWS = 64


@dataclass
class VectorHit:
    """One match: the point's id, its cosine similarity to the query, and its payload."""

    id: str
    score: float
    payload: dict = field(default_factory=dict)


class _Partition:
    """The rows of one NPC: a growable float32 matrix plus ids, persons and payloads."""

    def __init__(self, dims: int):
        self.vectors = np.zeros((_INITIAL_ROWS, dims), dtype=np.float32)
        self.ids: list[str] = []
        self.persons: list[str] = []
        self.payloads: list[dict] = []
        self.rows: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def put(self, point_id: str, vector: np.ndarray, payload: dict) -> None:
        row = self.rows.get(point_id)
        if row is None:
            row = len(self.ids)
            if row == self.vectors.shape[0]:
                grown = np.zeros((row * 2, self.vectors.shape[1]), dtype=np.float32)
                grown[:row] = self.vectors
                self.vectors = grown
            self.ids.append(point_id)
            self.persons.append("")
            self.payloads.append({})
            self.rows[point_id] = row
        self.vectors[row] = vector
        self.persons[row] = str(payload.get("user_id") or "")
        self.payloads[row] = payload

    def remove(self, point_id: str) -> bool:
        row = self.rows.pop(point_id, None)
        if row is None:
            return False
        last = len(self.ids) - 1
        if row != last:  # move the last row into the hole
            self.vectors[row] = self.vectors[last]
            for values in (self.ids, self.persons, self.payloads):
                values[row] = values[last]
            self.rows[self.ids[row]] = row
        for values in (self.ids, self.persons, self.payloads):
            values.pop()
        return True

    def search(
        self, query: np.ndarray, top_k: int, person: str | None, threshold: float
    ) -> list[VectorHit]:
        count = len(self.ids)
        if not count:
            return []
        scores = self.vectors[:count] @ query
        candidates = np.flatnonzero(scores >= threshold)
        if person:
            candidates = [row for row in candidates if self.persons[row] == person]
            candidates = np.asarray(candidates, dtype=np.int64)
        if not len(candidates):
            return []
        if len(candidates) > top_k:
            best = np.argpartition(-scores[candidates], top_k - 1)[:top_k]
            candidates = candidates[best]
        ordered = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [VectorHit(self.ids[row], float(scores[row]), self.payloads[row]) for row in ordered]


def unit_vector(vector: Any) -> np.ndarray | None:
    """``vector`` as a float32 unit vector; None when it is empty, zero or not finite."""
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(array))
    if not array.size or not np.isfinite(norm) or norm == 0.0:
        return None
    return array / norm


class NpcVectorIndex:
    """Cosine search over dense vectors, one partition per NPC (``payload["agent_id"]``).

    Thread-safe: searches and writes come from the thread pool.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._partitions: dict[str, _Partition] = {}
        self._npc_of: dict[str, str] = {}
        self.dims: int | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._npc_of)

    def count(self, npc: str) -> int:
        """How many vectors ``npc`` has."""
        with self._lock:
            partition = self._partitions.get(str(npc))
            return len(partition) if partition else 0

    def upsert(self, point_id: Any, vector: Any, payload: dict | None) -> bool:
        """Add or replace one point; False (ignored) without an NPC, a text or a usable vector."""
        payload = dict(payload or {})
        npc = str(payload.get("agent_id") or "")
        unit = unit_vector(vector) if vector is not None else None
        if not npc or unit is None or not payload.get("data"):
            return False
        point_id = str(point_id)
        with self._lock:
            if self.dims is None:
                self.dims = int(unit.shape[0])
            if unit.shape[0] != self.dims:
                return False
            previous = self._npc_of.get(point_id)
            if previous is not None and previous != npc:
                self._partitions[previous].remove(point_id)
            partition = self._partitions.get(npc)
            if partition is None:
                partition = self._partitions[npc] = _Partition(self.dims)
            partition.put(point_id, unit, payload)
            self._npc_of[point_id] = npc
        return True

    def update(self, point_id: Any, vector: Any = None, payload: dict | None = None) -> bool:
        """Change one point's vector and/or payload (mem0's partial update).

        Returns:
            False when the point is not indexed and the change is partial (the index cannot
            know the rest of it), or the result is unusable.
        """
        if vector is not None and payload is not None:
            return self.upsert(point_id, vector, payload)
        point_id = str(point_id)
        with self._lock:
            npc = self._npc_of.get(point_id)
            if npc is None:
                return False
            partition = self._partitions[npc]
            row = partition.rows[point_id]
            old_vector = partition.vectors[row].copy()
            old_payload = partition.payloads[row]
        return self.upsert(
            point_id,
            old_vector if vector is None else vector,
            old_payload if payload is None else payload,
        )

    def clear(self) -> None:
        """Forget every point (the store's collection was dropped or reset)."""
        with self._lock:
            self._partitions.clear()
            self._npc_of.clear()

    def vector_bytes(self) -> int:
        """Bytes held by the vector matrices (rows allocated, used or not)."""
        with self._lock:
            return sum(p.vectors.nbytes for p in self._partitions.values())

    def load(self, points: Iterable[tuple[Any, Any, dict]]) -> int:
        """Add many ``(id, vector, payload)`` points; returns how many were usable."""
        return sum(
            1 for point_id, vector, payload in points if self.upsert(point_id, vector, payload)
        )

    def delete(self, point_id: Any) -> bool:
        """Forget one point; False if it was not indexed."""
        point_id = str(point_id)
        with self._lock:
            npc = self._npc_of.pop(point_id, None)
            return bool(npc) and self._partitions[npc].remove(point_id)

    def search(
        self,
        npc: str,
        vector: Any,
        top_k: int,
        *,
        person: str | None = None,
        threshold: float = 0.0,
    ) -> list[VectorHit]:
        """The ``top_k`` points of ``npc`` most similar to ``vector`` (best first).

        Args:
            npc: The NPC whose points are searched.
            vector: The query embedding.
            top_k: Most hits.
            person: Only points whose ``user_id`` is this dbref.
            threshold: Least cosine similarity.
        """
        unit = unit_vector(vector)
        if unit is None or top_k < 1:
            return []
        with self._lock:
            partition = self._partitions.get(str(npc))
            if partition is None or (self.dims is not None and unit.shape[0] != self.dims):
                return []
            return partition.search(
                unit, int(top_k), str(person) if person else None, float(threshold)
            )
