"""Long-term memory search at 10k and 100k memories: the embedded stores against PostgreSQL.

``python -m bench ltm_store``. Two stores behind the same ``LongTermMemory.search_sync``:

- **embedded** (the default): a local Qdrant on disk, searched through the in-process per-NPC
  vector index, and the SQLite FTS5 keyword index;
- **postgres**: mem0's ``pgvector`` store (HNSW index, cosine) and the keyword index in
  PostgreSQL's full-text search (``EVENNIA_AI_KEYWORD_INDEX``), on a throwaway PostgreSQL 16
  with pgvector started by ``tests/support/postgres.py`` (the ``pgserver`` wheel's server), on
  this machine, over TCP on 127.0.0.1.

**Bulk loading** (so that 100k memories take a minute, not an hour of embedding): the memories
are synthetic sentences of 100 NPCs (100 or 1,000 each) with precomputed synthetic vectors (384
dimensions, as all-MiniLM-L6-v2: 200 topic centres plus noise, unit length), written straight
into the stores with the payloads mem0 gives a memory (:func:`~evennia_ai.memory.migrate_store.
mem0_payload`): Qdrant's ``upsert`` in batches, SQLite's ``upsert_many``; PostgreSQL's ``COPY``
into mem0's table, then the HNSW index built once (as ``CREATE INDEX`` after a bulk load does),
and the keyword index's ``upsert_many``. mem0 is then opened on the stores it finds.

**Searches**: 200 queries per mode (vector, keyword, hybrid), each for a random NPC, its text
some words of one of that NPC's memories, its vector that memory's vector plus noise. The query
embedder is a lookup of those vectors, so the figures leave out embedding the query (the same
few milliseconds for both stores with the local embedder). The threshold is 0 and the limit 5.
**Recall@5** compares the vector hits with the exact top 5 of the NPC's memories (numpy).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
import uuid

import numpy as np

from bench.common import summary_ms, table
from bench.context import _django

SIZES = (10_000, 100_000)
NPCS = 100
DIMS = 384
TOPICS = 200
QUERIES = 200
LIMIT = 5
BATCH = 2_000
COLLECTION = "bench_memories"
STORES = ("embedded", "postgres", "postgres-hnsw")

NAMES = "Bob Alice Tom Mira Hugo Sela Dara Finn Ivo Nell Oren Pia Quin Rhea Sam Tova".split()
THINGS = "ale bread sword lantern horse boat rope wool salt iron cloak map key ring".split()
PLACES = "mill docks gate market chapel forge well tavern bridge square".split()
VERBS = "sold bought lost found borrowed mended hid stole painted carried".split()


class LookupEmbedder:
    """mem0's embedder for the bench: the precomputed vector of each query text."""

    config = None

    def __init__(self):
        self.vectors: dict[str, list[float]] = {}

    def embed(self, text, memory_action=None):
        return self.vectors[text]


def corpus(size: int, rng: np.random.Generator):
    """``size`` synthetic memories: (ids, npcs, texts, vectors)."""
    centres = rng.standard_normal((TOPICS, DIMS)).astype(np.float32)
    topics = rng.integers(0, TOPICS, size)
    vectors = 0.7 * centres[topics] + 0.5 * rng.standard_normal((size, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pick = random.Random(size)
    texts = [
        f"{pick.choice(NAMES)} {pick.choice(VERBS)} the {pick.choice(THINGS)} at the "
        f"{pick.choice(PLACES)} on day {i % 365} for {i % 50} coins"
        for i in range(size)
    ]
    ids = [str(uuid.UUID(int=(0xBE4C << 96) | i)) for i in range(size)]
    npcs = [f"#{1000 + i % NPCS}" for i in range(size)]
    return ids, npcs, texts, vectors


def docs_of(ids, npcs, texts):
    from evennia_ai.memory.keyword_index import KeywordDoc

    return [
        KeywordDoc(id=i, npc=n, text=t, source="observed", trust=0.8, time="2026-01-01T00:00:00Z")
        for i, n, t in zip(ids, npcs, texts)
    ]


def load_embedded(folder: str, docs, vectors) -> None:
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    from evennia_ai.memory import longterm
    from evennia_ai.memory.keyword_index import KeywordIndex
    from evennia_ai.memory.migrate_store import mem0_payload

    index = KeywordIndex(f"{folder}/keyword.db")
    client = QdrantClient(path=f"{folder}/qdrant")
    client.create_collection(
        longterm.COLLECTION,
        vectors_config=VectorParams(size=DIMS, distance=Distance.COSINE, on_disk=True),
    )
    for start in range(0, len(docs), BATCH):
        chunk = docs[start : start + BATCH]
        index.upsert_many(chunk)
        client.upsert(
            longterm.COLLECTION,
            [
                PointStruct(
                    id=doc.id, vector=vectors[start + k].tolist(), payload=mem0_payload(doc)
                )
                for k, doc in enumerate(chunk)
            ],
            wait=True,
        )
    client.close()
    index.close()


def load_postgres(server, docs, vectors, hnsw: bool) -> None:
    from psycopg import sql

    from evennia_ai.memory.keyword_pg import PostgresKeywordIndex
    from evennia_ai.memory.migrate_store import mem0_payload

    table = sql.Identifier(COLLECTION)
    with server.connect(server.database, superuser=False) as conn:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id UUID PRIMARY KEY, vector vector({}), payload JSONB)"
            ).format(table, sql.Literal(DIMS))
        )
        with conn.cursor() as cursor:
            with cursor.copy(
                sql.SQL("COPY {} (id, vector, payload) FROM STDIN").format(table)
            ) as copy:
                for k, doc in enumerate(docs):
                    vector = "[" + ",".join(f"{v:.6f}" for v in vectors[k]) + "]"
                    copy.write_row((doc.id, vector, json.dumps(mem0_payload(doc))))
        if hnsw:
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(
                sql.SQL("CREATE INDEX {} ON {} USING hnsw (vector vector_cosine_ops)").format(
                    sql.Identifier(f"{COLLECTION}_hnsw_idx"), table
                )
            )
        conn.execute(sql.SQL("ANALYZE {}").format(table))
    index = PostgresKeywordIndex(server.dsn())
    for start in range(0, len(docs), BATCH):
        index.upsert_many(docs[start : start + BATCH])
    index.close()


def store_settings(store: str, folder: str, server) -> dict:
    unused = {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": DIMS}}
    if store == "embedded":
        vector_store = {
            "provider": "qdrant",
            "config": {
                "collection_name": "evennia_ai_memories",
                "path": f"{folder}/qdrant",
                "on_disk": True,
                "embedding_model_dims": DIMS,
            },
        }
        return {
            "EVENNIA_AI_MEM0_CONFIG": {"vector_store": vector_store, "embedder": unused},
            "EVENNIA_AI_KEYWORD_INDEX": None,
        }
    vector_store = {
        "provider": "pgvector",
        "config": {
            "connection_string": server.dsn(),
            "collection_name": COLLECTION,
            "embedding_model_dims": DIMS,
            "hnsw": store == "postgres-hnsw",
        },
    }
    return {
        "EVENNIA_AI_MEM0_CONFIG": {"vector_store": vector_store, "embedder": unused},
        "EVENNIA_AI_KEYWORD_INDEX": {"backend": "postgres"},
    }


def queries(ids, npcs, texts, vectors, rng: np.random.Generator):
    """``QUERIES`` (npc, text, vector, exact top-5 ids) drawn from the corpus."""
    by_npc: dict[str, list[int]] = {}
    for k, npc in enumerate(npcs):
        by_npc.setdefault(npc, []).append(k)
    out = []
    for q in range(QUERIES):
        npc = f"#{1000 + int(rng.integers(0, NPCS))}"
        rows = by_npc[npc]
        target = rows[int(rng.integers(0, len(rows)))]
        words = texts[target].split()
        text = f"{words[0]} {words[2]} {words[3]} {words[6]} (query {q})"
        vector = vectors[target] + 0.3 * rng.standard_normal(DIMS).astype(np.float32) / DIMS**0.5
        vector /= np.linalg.norm(vector)
        sims = vectors[rows] @ vector
        exact = {ids[rows[i]] for i in np.argsort(-sims)[:LIMIT]}
        out.append((npc, text, vector.tolist(), exact))
    return out


def measure(memory, asked, embedder: LookupEmbedder) -> dict:
    results = {}
    for text_npc in asked:
        embedder.vectors[text_npc[1]] = text_npc[2]
    for mode in ("vector", "keyword", "hybrid"):
        durations, recall = [], []
        for npc, text, _vector, exact in asked:
            started = time.perf_counter()
            outcome = memory.search_sync(npc, text, mode=mode, limit=LIMIT, threshold=0.0)
            durations.append(time.perf_counter() - started)
            if mode == "vector":
                recall.append(len({hit.id for hit in outcome.hits} & exact) / LIMIT)
        results[mode] = summary_ms(durations)
        if recall:
            results["recall"] = sum(recall) / len(recall)
    return results


def bench_store(store: str, size: int, server, data) -> dict:
    from django.test import override_settings

    from evennia_ai.memory import longterm

    ids, npcs, texts, vectors = data
    docs = docs_of(ids, npcs, texts)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        if store == "embedded":
            load_embedded(folder, docs, vectors)
        else:
            load_postgres(server, docs, vectors, hnsw=store == "postgres-hnsw")
        loaded = time.perf_counter() - started
        with override_settings(**store_settings(store, folder, server)):
            memory = longterm.LongTermMemory(folder)
            started = time.perf_counter()
            memory.init_sync()
            opened = time.perf_counter() - started
            if not memory.vector_ready:
                raise RuntimeError(f"{store}: mem0 did not start: {memory.reason}")
            embedder = LookupEmbedder()
            memory.memory.embedding_model = embedder
            asked = queries(ids, npcs, texts, vectors, np.random.default_rng(size + 1))
            measure(memory, asked[:20], embedder)  # warm caches and connections
            result = measure(memory, asked, embedder)
            memory.close()
    result.update(load_s=loaded, open_s=opened)
    return result


def run(sizes=SIZES) -> dict:
    _django()
    from support.postgres import PostgresServer

    results: dict = {}
    with PostgresServer(database="bench", extensions=("vector",)) as server:
        for size in sizes:
            data = corpus(size, np.random.default_rng(size))
            for store in STORES:
                print(f"  {store}, {size} memories...", flush=True)
                results[f"{store} {size}"] = bench_store(store, size, server, data)
                with server.connect(server.database) as conn:  # the next run starts empty
                    conn.execute(f"DROP TABLE IF EXISTS {COLLECTION}, evennia_ai_keyword_docs")
    return results


def main() -> str:
    results = run()
    rows = []
    for key, r in results.items():
        store, size = key.split()
        rows.append(
            [
                store,
                int(size),
                r["vector"]["p50"],
                r["vector"]["p95"],
                f"{r['recall']:.2f}",
                r["keyword"]["p50"],
                r["keyword"]["p95"],
                r["hybrid"]["p50"],
                r["hybrid"]["p95"],
                r["load_s"],
                r["open_s"],
            ]
        )
    return table(
        f"Long-term memory search, {NPCS} NPCs, {QUERIES} queries per mode, limit {LIMIT} "
        "(query embedding excluded)",
        [
            "store",
            "memories",
            "vector p50 ms",
            "vector p95 ms",
            "recall@5",
            "keyword p50 ms",
            "keyword p95 ms",
            "hybrid p50 ms",
            "hybrid p95 ms",
            "bulk load s",
            "open s",
        ],
        rows,
    )


if __name__ == "__main__":
    print(main())
