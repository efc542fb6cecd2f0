"""Long-term memory's side of mem0: opening it, its language model, its vectors and results.

mem0 is an optional heavy dependency, imported only when :func:`open_mem0` runs. Its language
model is replaced by :class:`NpcModelLLM` (the project's client with the calling NPC's model),
its embedded Qdrant is called one thread at a time, and its vectors are mirrored in process
(:mod:`evennia_ai.memory.vector_index`, kept in step by :class:`IndexedStore`). Results come back as
:class:`~evennia_ai.memory.search.MemoryHit`. :mod:`evennia_ai.memory.longterm_store` holds the
state (the open mem0, the in-process index) and decides what to write; this module only talks
to mem0.
"""

from __future__ import annotations

import copy
import logging
import threading
from contextlib import contextmanager
from time import sleep
from typing import Any, Callable, Iterator

from evennia_ai import conf, native_threads
from evennia_ai.llm import tokens
from evennia_ai.llm.client import get_client, get_litellm
from evennia_ai.llm.errors import reason
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.memory import embedder as onnx_embedder
from evennia_ai.memory.longterm_config import (
    custom_llm,
    is_local_embedder,
    logger,
    torch_embedder_installed,
)
from evennia_ai.memory.onnx_model import ModelUnavailable
from evennia_ai.memory.query_vectors import QueryEmbeddings
from evennia_ai.memory.search import EmbeddingCache, MemoryHit, Searcher
from evennia_ai.memory.vector_index import NpcVectorIndex, VectorHit

ONNX_PROVIDER = "evennia_ai_onnx"
"""The name :class:`OnnxEmbedding` is registered under in mem0's embedder factory."""
LOCK_RETRIES = 5  # one-second waits for another process to release the embedded Qdrant
EXTRACTION_MIN_WINDOW = 12000
"""Smallest context window that takes mem0's fact extraction: its own prompt (about 7,700
tokens with mem0 2.x), the texts consolidated and the reply. Smaller models store the texts as
given."""


# -- mem0's language model -------------------------------------------------------------------------
_LLM_CONTEXT = threading.local()


class NpcModelLLM:
    """mem0's LLM, answered by the project's LLM client with the calling NPC's model.

    mem0's own litellm provider ignores ``api_base`` and refuses tools for models litellm does not
    list as function-calling; the project's client has neither problem and applies the model's
    settings (``EVENNIA_AI_API_BASE``/``API_KEY``, ``EVENNIA_AI_MODEL_SETTINGS``, retries). The
    model is the one the current thread's consolidation asked for (see
    :meth:`~evennia_ai.memory.longterm_store.LongTermMemory.consolidate_sync`), else
    ``EVENNIA_AI_MODEL``.
    """

    def __init__(self, config=None):
        self.config = config  # mem0 reads only generate_response (and config for vision)

    def generate_response(self, messages, response_format=None, tools=None, tool_choice="auto"):
        model = resolve_model(getattr(_LLM_CONTEXT, "model", None))
        if model == conf.OFFLINE_MODEL:
            raise RuntimeError("no language model is configured for fact extraction")
        # mem0 asks for JSON (``response_format={"type": "json_object"}``) when it extracts
        # facts; the request keeps it, as mem0's own providers would send it.
        result = get_client().complete_sync(
            messages,
            tools or None,
            model=model,
            response_format=response_format,
            kind="memory_extraction",
        )
        record = UsageRecord.of(result, "memory_extraction")
        results = getattr(_LLM_CONTEXT, "results", None)
        if results is not None:
            results.append(record)
        usage = getattr(_LLM_CONTEXT, "usage", None)
        if usage is not None:
            usage.record(record)
        if result.error:
            raise RuntimeError(result.error)
        if tools:
            return {
                "content": result.text,
                "tool_calls": [
                    {"name": c.name, "arguments": c.arguments} for c in result.tool_calls
                ],
            }
        return result.text or ""


@contextmanager
def extraction_accounting(
    calls: list[UsageRecord], usage: UsageAccountant | None
) -> Iterator[None]:
    """Within it, every :class:`NpcModelLLM` call of this thread is appended to ``calls`` and
    recorded in ``usage`` (the tick's accountant, when given)."""
    _LLM_CONTEXT.results = calls
    _LLM_CONTEXT.usage = usage
    try:
        yield
    finally:
        _LLM_CONTEXT.results = None
        _LLM_CONTEXT.usage = None


def usage_of(records: list[UsageRecord]) -> dict:
    """The extraction calls ``records`` summed: ``calls``, tokens and ``cost``."""
    return {
        "calls": len(records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost": sum(r.cost for r in records),
    }


def can_extract(model: str | None) -> bool:
    """Whether mem0 can extract facts with ``model``: its own LLM is configured, or ``model`` is
    a real model whose context window takes mem0's extraction prompt."""
    if custom_llm():
        return True  # the operator configured mem0's own LLM
    if not model or model == conf.OFFLINE_MODEL:
        return False
    # mem0's extraction prompt alone is about 7,700 tokens: a smaller window cannot take
    # it (the client would refuse the request); the texts are then stored as given.
    return tokens.get_context_window(model) >= EXTRACTION_MIN_WINDOW


# -- opening and closing ---------------------------------------------------------------------------
class _Serialised:
    """A proxy calling its target's methods one at a time (embedded Qdrant is not thread-safe)."""

    def __init__(self, target, lock: threading.Lock):
        self._target = target
        self._lock = lock

    def __getattr__(self, name):
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            with self._lock:
                return value(*args, **kwargs)

        return call


def _quiet_libraries(transformers: bool = True) -> None:
    """Silence optional-feature warnings and progress bars that would flood the server log
    (transformers' progress bars only if ``transformers``: importing it is slow)."""
    for name in (
        "mem0.utils.spacy_models",
        "mem0.vector_stores.qdrant",
        "sentence_transformers",
        "transformers",
        "huggingface_hub",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    if not transformers:
        return
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except Exception:  # transformers absent or changed: only cosmetic
        pass


# -- the local embedder ----------------------------------------------------------------------------
class OnnxEmbedding:
    """mem0's embedder for the local all-MiniLM-L6-v2, answered by the ONNX embedder
    (:mod:`evennia_ai.memory.embedder`): the vectors sentence-transformers gives, without torch.

    mem0 (2.2.1) has no hook for an embedder of one's own: :func:`open_mem0` registers this
    class in its ``EmbedderFactory`` under :data:`ONNX_PROVIDER` and names it in the validated
    configuration, whose ``embedder`` section stays mem0's ``huggingface`` one.

    Args:
        config: mem0's ``BaseEmbedderConfig`` (kept: mem0 reads ``embedding_dims`` from it).
    """

    def __init__(self, config=None):
        self.config = config
        self.model = onnx_embedder.shared_embedder()

    def embed(self, text, memory_action=None) -> list[float]:
        """The vector of one text (mem0's signature; ``memory_action`` makes no difference)."""
        return onnx_embedder.as_lists(self.model.embed(str(text)))

    def embed_batch(self, texts, memory_action="add") -> list[list[float]]:
        """The vectors of many texts, in order, run in batches."""
        return onnx_embedder.as_lists(self.model.embed_many([str(text) for text in texts]))


def onnx_embedder_ready(config: dict) -> bool:
    """Whether ``config``'s embedder is the local model and its ONNX embedder loads (it is built
    first when needed: seconds). When it cannot be had, one line says why and that
    sentence-transformers on torch embeds instead (or, without torch, mem0 does not start).

    Raises:
        ModelUnavailable: The ONNX embedder cannot be had and torch is not installed.
    """
    if not is_local_embedder(config.get("embedder")):
        return False
    try:
        onnx_embedder.shared_embedder()
        return True
    except Exception as err:  # ModelUnavailable, or ONNX Runtime refusing the built file
        if not torch_embedder_installed():
            raise ModelUnavailable(f"the ONNX embedder is unavailable: {err}") from err
        logger.warning(
            "evennia_ai: the ONNX embedder is unavailable (%s); long-term memory embeds with "
            "sentence-transformers on torch instead",
            err,
        )
        return False


def memory_config(config: dict, onnx: bool):
    """mem0's validated ``MemoryConfig`` for ``config``, its embedder the ONNX one if ``onnx``.

    Raises:
        pydantic.ValidationError: ``config`` is not a valid mem0 configuration.
    """
    from mem0.configs.base import MemoryConfig
    from mem0.utils.factory import EmbedderFactory

    validated = MemoryConfig(**copy.deepcopy(config))
    if onnx:
        EmbedderFactory.provider_to_class[ONNX_PROVIDER] = f"{__name__}.OnnxEmbedding"
        validated.embedder.provider = ONNX_PROVIDER  # after validation: mem0 lists its own only
    return validated


def open_mem0(config: dict):
    """mem0's ``Memory`` for ``config`` (seconds: imports mem0 and loads the embedder, building
    its ONNX model on first use).

    The local all-MiniLM-L6-v2 embedder runs on ONNX Runtime (:class:`OnnxEmbedding`); only when
    that cannot be had does mem0's own ``huggingface`` provider (sentence-transformers on
    torch) load it. Waits up to :data:`LOCK_RETRIES` seconds for another process to release the
    embedded Qdrant's folder. Call :func:`prepare_mem0` on the result before use.

    Raises:
        Exception: Whatever mem0 raises when it cannot start.
    """
    native_threads.apply()
    get_litellm()  # imported our way (no cost-map download) before mem0 imports it
    onnx = onnx_embedder_ready(config)
    _quiet_libraries(transformers=not onnx)
    from mem0 import Memory

    memory = None
    for attempt in range(LOCK_RETRIES + 1):
        try:
            if onnx:
                memory = Memory(memory_config(config, onnx=True))
            else:
                memory = Memory.from_config(copy.deepcopy(config))
            break
        except RuntimeError as err:
            # After a reload the old server process may hold the embedded Qdrant's folder
            # lock for a moment longer.
            if "already accessed" not in str(err) or attempt == LOCK_RETRIES:
                raise
            sleep(1.0)
    native_threads.apply()  # torch, when the fallback loaded it just now
    return memory


def prepare_mem0(memory, config: dict) -> None:
    """Fit an opened mem0 for the game: the NPC's model answers its LLM calls (unless
    ``EVENNIA_AI_MEM0_CONFIG`` names its own), pgvector indexes the NPC scope, and the vector
    store is called one thread at a time."""
    if not custom_llm():
        memory.llm = NpcModelLLM(getattr(memory.llm, "config", None))
    index_pgvector_scope(memory.vector_store, config)
    memory.vector_store = _Serialised(memory.vector_store, threading.Lock())


def index_pgvector_scope(store, config: dict) -> None:
    """On pgvector, index the NPC every search filters on (mem0 indexes only the vectors).

    Without it a search reads the whole table (no HNSW index) or, with mem0's HNSW index, takes
    the nearest vectors of all NPCs and filters them afterwards, missing most of the NPC's own
    (``bench/RESULTS.md``, ``bench.ltm_store``). Creating it is idempotent; a failure is logged
    and searches still work.
    """
    if ((config.get("vector_store") or {}).get("provider")) != "pgvector":
        return
    try:
        from psycopg import sql  # installed with mem0's pgvector store (the postgres extra)

        store.create_col()  # CREATE TABLE / INDEX IF NOT EXISTS, as mem0's first write would
        name = store.collection_name
        with store.connection_pool.connection() as conn:
            conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ((payload->>'agent_id'))").format(
                    sql.Identifier(f"{name}_agent_idx"), sql.Identifier(name)
                )
            )
    except Exception as err:
        logger.warning("evennia_ai: could not index pgvector's NPC scope: %s", err)


def close_mem0(memory) -> None:
    """Close mem0 and its vector store's client (Qdrant's client, or pgvector's connection
    pool). Failures are logged at debug level only: the store is being closed anyway."""
    try:
        # Qdrant's client, or pgvector's connection pool
        for name in ("client", "connection_pool"):
            resource = getattr(memory.vector_store, name, None)
            if resource is not None and hasattr(resource, "close"):
                resource.close()
    except Exception:
        logger.debug("evennia_ai: closing the vector store failed", exc_info=True)
    try:
        memory.close()
    except Exception:
        logger.debug("evennia_ai: closing mem0 failed", exc_info=True)


# -- the in-process vector index -------------------------------------------------------------------
INDEX_PAGE = 1000
"""Points read from the vector store per page when the in-process index is loaded."""

# Payload keys the index does not keep: the hits never show them (bytes saved per memory).
_UNINDEXED_KEYS = ("hash", "text_lemmatized", "updated_at", "id")


def index_payload(payload: dict | None) -> dict:
    """The part of a mem0 payload the in-process index keeps (what a hit shows, the scope)."""
    return {key: value for key, value in (payload or {}).items() if key not in _UNINDEXED_KEYS}


def vector_store_kind(config: dict) -> str:
    """``qdrant`` (embedded or server), ``pgvector``, or the other provider's name."""
    return str(((config or {}).get("vector_store") or {}).get("provider") or "qdrant")


def load_vector_index(
    memory, config: dict, superseded: Callable[[list[str]], set[str]] | None = None
) -> NpcVectorIndex | None:
    """Every current vector of mem0's store read, page by page, into an :class:`NpcVectorIndex`.

    Blocking (seconds for 100k memories): call it in a thread (long-term memory's
    initialisation does). Works for Qdrant (embedded or a server) and pgvector.

    Args:
        memory: The opened mem0.
        config: Its configuration.
        superseded: ``superseded(ids) -> the ones marked superseded`` (the keyword index's
            marks): those are left out, as searches leave them out.

    Returns:
        The index, or None (another vector store, ``EVENNIA_AI_MEMORY_VECTOR_INDEX`` off, or
        the read failed: logged, and searches go through mem0).
    """
    if not conf.get_bool("EVENNIA_AI_MEMORY_VECTOR_INDEX"):
        return None
    kind = vector_store_kind(config)
    pages = {"qdrant": _qdrant_pages, "pgvector": _pgvector_pages}.get(kind)
    if pages is None:
        logger.info(
            "evennia_ai: no in-process vector index for mem0's %s store; searching through mem0",
            kind,
        )
        return None
    try:
        index = NpcVectorIndex()
        for page in pages(memory.vector_store, INDEX_PAGE):
            old = superseded([str(point[0]) for point in page]) if superseded and page else set()
            index.load(
                (point_id, vector, index_payload(payload))
                for point_id, vector, payload in page
                if str(point_id) not in old
            )
        logger.info("evennia_ai: %d long-term memory vectors indexed in process", len(index))
        return index
    except Exception:
        logger.exception("evennia_ai: in-process vector index unavailable; searching through mem0")
        return None


def _qdrant_pages(store, size: int) -> Iterator[list[tuple[Any, Any, dict]]]:
    """Qdrant's points, ``size`` at a time (the embedded one is called under its lock)."""
    lock = getattr(store, "_lock", None) or threading.Lock()
    offset = None
    while True:
        with lock:
            points, offset = store.client.scroll(
                collection_name=store.collection_name,
                limit=size,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
        yield [(point.id, dense(point.vector), point.payload or {}) for point in points]
        if offset is None:
            return


def _pgvector_pages(store, size: int) -> Iterator[list[tuple[Any, Any, dict]]]:
    """pgvector's rows, ``size`` at a time, in id order (keyset paging: no OFFSET scans)."""
    from psycopg import sql  # installed with mem0's pgvector store (the postgres extra)

    table = sql.Identifier(store.collection_name)
    first = sql.SQL("SELECT id, vector::real[], payload FROM {} ORDER BY id LIMIT %s")
    after = sql.SQL("SELECT id, vector::real[], payload FROM {} WHERE id > %s ORDER BY id LIMIT %s")
    last = None
    while True:
        with store.connection_pool.connection() as conn:
            if last is None:
                rows = conn.execute(first.format(table), [size]).fetchall()
            else:
                rows = conn.execute(after.format(table), [last, size]).fetchall()
        yield [(str(row[0]), row[1], row[2] or {}) for row in rows]
        if len(rows) < size:
            return
        last = rows[-1][0]


class IndexedStore:
    """mem0's vector store with every write copied into an in-process index.

    Every write mem0 makes (its adds, updates and deletes), and every write of code holding
    mem0's ``vector_store`` (the migrate tool), goes through this proxy: the store is written
    first, then the index, under one lock, so the two never disagree on the order of writes
    to a memory. Reads pass straight through.

    Attributes:
        in_step: False once a write could not be followed (a partial update of a point the
            index does not hold, or the index failed): searches then go through mem0.
    """

    def __init__(self, target, index: NpcVectorIndex):
        self._target = target
        self._index = index
        self._write_lock = threading.Lock()
        self.in_step = True

    def __getattr__(self, name):
        return getattr(self._target, name)

    def insert(self, vectors, payloads=None, ids=None):
        with self._write_lock:
            result = self._target.insert(vectors=vectors, payloads=payloads, ids=ids)
            if ids is None:
                self._lost("points written without ids")
                return result
            for position, (point_id, vector) in enumerate(zip(ids, vectors)):
                payload = payloads[position] if payloads else {}
                self._follow(self._index.upsert, point_id, vector, index_payload(payload))
            return result

    def update(self, vector_id, vector=None, payload=None):
        with self._write_lock:
            result = self._target.update(vector_id=vector_id, vector=vector, payload=payload)
            kept = None if payload is None else index_payload(payload)
            if not self._follow(self._index.update, vector_id, vector, kept) and self.in_step:
                if vector is not None and payload is not None:
                    self._index.delete(vector_id)  # no text or NPC left: nothing to find
                else:
                    self._lost(f"a partial update of memory {vector_id} it does not hold")
            return result

    def delete(self, vector_id):
        with self._write_lock:
            result = self._target.delete(vector_id=vector_id)
            self._index.delete(vector_id)
            return result

    def delete_col(self):
        with self._write_lock:
            result = self._target.delete_col()
            self._index.clear()
            return result

    def reset(self):
        with self._write_lock:
            result = self._target.reset()
            self._index.clear()
            return result

    def _follow(self, write: Callable[..., bool], *args) -> bool:
        try:
            return bool(write(*args))
        except Exception as err:  # never fail mem0's write for the copy's sake
            self._lost(reason(err))
            return False

    def _lost(self, why: str) -> None:
        if self.in_step:
            logger.error(
                "evennia_ai: in-process vector index out of step (%s); searching through mem0", why
            )
        self.in_step = False


def index_writes(memory, index: NpcVectorIndex) -> IndexedStore:
    """Route mem0's vector-store writes through :class:`IndexedStore` into ``index``."""
    store = memory.vector_store
    if isinstance(store, IndexedStore):
        store = store._target
    memory.vector_store = IndexedStore(store, index)
    return memory.vector_store


def embedding_cache_of(memory) -> EmbeddingCache:
    """mem0's embedder behind a cache; new texts go in batches where the embedder has them.
    The ONNX embedder is called directly (its numpy vectors, no lists of floats between)."""
    model = memory.embedding_model
    if isinstance(model, OnnxEmbedding):
        return EmbeddingCache(model.model.embed, embed_many=model.model.embed_many)
    batch = getattr(model, "embed_batch", None)
    return EmbeddingCache(
        lambda value: model.embed(value, "search"),
        embed_many=(lambda values: batch(values, "search")) if callable(batch) else None,
    )


# -- writing ---------------------------------------------------------------------------------------
def add_texts(
    memory,
    texts: list[str],
    *,
    npc: str,
    person: str,
    metadata: dict,
    infer: bool,
    model: str | None = None,
) -> list[dict]:
    """Give mem0 ``texts`` for ``npc`` (about ``person``, "" for none), as given or (``infer``)
    for fact extraction with ``model``.

    Returns:
        mem0's result items (``id``, ``memory``, ``event``: ``ADD``, ``UPDATE``, ``DELETE``...).
    """
    messages = [{"role": "user", "content": text} for text in texts]
    _LLM_CONTEXT.model = model
    try:
        result = memory.add(
            messages,
            agent_id=npc,
            user_id=person or None,
            metadata=metadata,
            infer=infer,
        )
    finally:
        _LLM_CONTEXT.model = None
    return (result or {}).get("results", [])


# -- reading ---------------------------------------------------------------------------------------
def search(
    memory, npc: str, query: str, limit: int, person: str | None, threshold: float
) -> list[MemoryHit]:
    """Search ``npc``'s memories (about ``person``, when given) through mem0 itself."""
    filters = {"agent_id": npc}
    if person:
        filters["user_id"] = str(person)
    found = memory.search(query, top_k=limit, filters=filters, threshold=threshold)
    return [hit_from_mem0(item) for item in (found or {}).get("results", [])]


def vector_searcher(
    memory,
    index: NpcVectorIndex | None,
    vectors: QueryEmbeddings | None,
    npc: str,
    query: str,
    person: str | None,
    threshold: float,
    deadline: float | None,
) -> Searcher | None:
    """The vector side of a search of ``npc``'s memories: ``fetch(n) -> hits``, or None
    without mem0.

    With the in-process ``index`` (and ``vectors``, the shared query embeddings) a search is
    one matrix-vector product once the query's embedding is ready; by ``deadline``
    (``time.monotonic()``; None waits), else it raises
    :class:`~evennia_ai.memory.search.VectorLate`. Without it, mem0 searches (and embeds).
    """
    if memory is None:
        return None
    if index is None or vectors is None:
        return lambda n: search(memory, npc, query, n, person, threshold)

    def vector(n: int) -> list[MemoryHit]:
        query_vector = vectors.by_deadline(query, deadline)
        found = index.search(npc, query_vector, n, person=person, threshold=threshold)
        return [hit_from_vector(hit) for hit in found]

    return vector


# -- results ---------------------------------------------------------------------------------------
def dense(vector) -> Any:
    """The dense vector of a Qdrant point (mem0 stores it unnamed beside a sparse ``bm25``)."""
    return vector.get("") if isinstance(vector, dict) else vector


# The payload keys mem0 keeps outside a memory's ``metadata`` in its search results.
_CORE_PAYLOAD_KEYS = {
    "data",
    "hash",
    "created_at",
    "updated_at",
    "id",
    "text_lemmatized",
    "user_id",
    "agent_id",
    "run_id",
    "actor_id",
    "role",
    "attributed_to",
    "expiration_date",
}


def hit_from_vector(hit: VectorHit) -> MemoryHit:
    """A hit of the in-process vector index as a :class:`MemoryHit` (its payload is mem0's)."""
    payload = hit.payload
    return hit_from_mem0(
        {
            "id": hit.id,
            "memory": payload.get("data"),
            "score": hit.score,
            "user_id": payload.get("user_id"),
            "created_at": payload.get("created_at"),
            "metadata": {
                key: value for key, value in payload.items() if key not in _CORE_PAYLOAD_KEYS
            },
        }
    )


def hit_from_mem0(item: dict) -> MemoryHit:
    """One of mem0's result items as a :class:`MemoryHit`."""
    metadata = item.get("metadata") or {}
    trust = metadata.get("trust")
    try:
        trust = None if trust is None else float(trust)
    except (TypeError, ValueError):
        trust = None
    return MemoryHit(
        id=str(item.get("id")),
        text=str(item.get("memory") or ""),
        score=round(float(item.get("score") or 0.0), 6),
        source=str(metadata.get("source") or ""),
        trust=trust,
        time=str(metadata.get("time") or item.get("created_at") or ""),
        person=str(item.get("user_id") or ""),
        person_name=str(metadata.get("person_name") or ""),
        kind=str(metadata.get("kind") or "memory"),
    )
