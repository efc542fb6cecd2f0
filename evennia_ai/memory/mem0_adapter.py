"""Long-term memory's side of mem0: opening it, its language model, its vectors and results.

mem0 is an optional heavy dependency, imported only when :func:`open_mem0` runs. Its language
model is replaced by :class:`NpcModelLLM` (the project's client with the calling NPC's model),
its embedded Qdrant is called one thread at a time, and its vectors can be mirrored in process
(:mod:`evennia_ai.memory.vector_index`). Results come back as
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
from typing import Any, Iterator

from evennia_ai import conf, native_threads
from evennia_ai.llm import tokens
from evennia_ai.llm.client import get_client, get_litellm
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
from evennia_ai.memory.search import EmbeddingCache, MemoryHit
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
def load_vector_index(memory, config: dict) -> NpcVectorIndex | None:
    """Every vector of the embedded Qdrant read into an :class:`NpcVectorIndex`, or None (mem0
    on a server or pgvector, ``EVENNIA_AI_MEMORY_VECTOR_INDEX`` off, or the read failed)."""
    store_config = config.get("vector_store") or {}
    options = store_config.get("config") or {}
    embedded = (
        store_config.get("provider", "qdrant") == "qdrant"
        and options.get("path")
        and not (options.get("url") or options.get("host"))
    )
    if not embedded or not conf.get("EVENNIA_AI_MEMORY_VECTOR_INDEX"):
        return None
    try:
        index = NpcVectorIndex()
        offset = None
        while True:
            with memory.vector_store._lock:
                points, offset = memory.vector_store.client.scroll(
                    collection_name=memory.vector_store.collection_name,
                    limit=1000,
                    offset=offset,
                    with_payload=True,
                    with_vectors=True,
                )
            index.load((point.id, dense(point.vector), point.payload) for point in points)
            if offset is None:
                break
        logger.info("evennia_ai: %d long-term memory vectors indexed in process", len(index))
        return index
    except Exception:
        logger.exception("evennia_ai: in-process vector index unavailable; searching through mem0")
        return None


def refresh_vector_index(index: NpcVectorIndex, memory, point_ids: list[str]) -> bool:
    """Copy the points ``point_ids`` mem0 just wrote into ``index``.

    Returns:
        False when that failed: the index is out of step (logged), searches should go through
        mem0 from now on.
    """
    try:
        store = memory.vector_store
        with store._lock:
            points = store.client.retrieve(
                collection_name=store.collection_name,
                ids=point_ids,
                with_payload=True,
                with_vectors=True,
            )
        for point in points:
            index.upsert(point.id, dense(point.vector), point.payload)
    except Exception:  # a stale index would miss memories: search through mem0 from now on
        logger.exception("evennia_ai: in-process vector index out of step; searching through mem0")
        return False
    return True


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
