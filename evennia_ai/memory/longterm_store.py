"""Long-term memory's store: every NPC's memories in a keyword index and, when possible, mem0.

:class:`LongTermMemory` is blocking (call its ``*_sync`` methods from a thread): it opens the
stores :mod:`evennia_ai.memory.longterm_config` names, writes each memory through the quality
gate (:mod:`evennia_ai.memory.gate`) to the keyword index and to mem0
(:mod:`evennia_ai.memory.mem0_adapter`), consolidates journal texts, and searches in the modes
of :mod:`evennia_ai.memory.search`. The game's instance and the Deferred-returning calls are in
:mod:`evennia_ai.memory.longterm`, the module to import (see ``docs/memory.md``).
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import asdict
from typing import Any, Iterable

from evennia_ai import conf
from evennia_ai.llm.errors import reason
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.memory import gate, mem0_adapter
from evennia_ai.memory.keyword_index import KeywordDoc, KeywordIndexBase, KeywordIndexUnavailable
from evennia_ai.memory.longterm_config import (
    LOCAL_EMBEDDER_HINT,
    build_mem0_config,
    logger,
    open_keyword_index,
    prepare_environment,
)
from evennia_ai.memory.longterm_records import (
    DEFAULT_SOURCE,
    TRANSCRIPT,
    ConsolidationResult,
    StoredMemory,
    clean_text,
    consolidation_item,
    hit_from_doc,
    keyword_doc,
    keyword_searcher,
    trust_of,
)
from evennia_ai.memory.query_vectors import QueryEmbeddings, no_counts
from evennia_ai.memory.search import (
    EmbeddingCache,
    MemoryHit,
    SearchOutcome,
    check_mode,
    resolve_mode,
    run_search,
)
from evennia_ai.memory.vector_index import NpcVectorIndex
from evennia_ai.utils import iso_utc

UNINITIALISED = "uninitialised"
INITIALISING = "initialising"
READY = "ready"


class LongTermMemory:
    """Long-term memory of every NPC of one game: a keyword index and, when possible, mem0.

    Methods ending in ``_sync`` block (index writes, embeddings, LLM calls): call them from a
    thread. The functions of :mod:`evennia_ai.memory.longterm` (``store``, ``recall``, ...) do
    that for you.

    Args:
        directory: The data folder (created when missing).
    """

    def __init__(self, directory: str):
        self.directory = directory
        self.state = UNINITIALISED
        self.memory = None  # the mem0 Memory, when ready
        self.config: dict | None = None
        self.reason = ""  # why vector search is off, or what failed
        self.index: KeywordIndexBase | None = None
        self.index_error = ""
        self.store_error = ""  # why mem0 last failed to store a memory ("" once it stores again)
        self._init_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._store_lock = threading.Lock()
        self._embed_cache: EmbeddingCache | None = None
        #: In-process copy of mem0's vectors (:mod:`evennia_ai.memory.vector_index`), following
        #: every write; None when searches go through mem0 (a store it cannot read, the setting
        #: off, or the copy fell out of step).
        self.vector_index: NpcVectorIndex | None = None
        self._query_embeddings: QueryEmbeddings | None = None
        self._embeddings_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def vector_ready(self) -> bool:
        """Whether mem0 is initialised and usable."""
        return self.state == READY and self.memory is not None

    @property
    def mode(self) -> str:
        """The mode ``auto`` searches use now: ``hybrid`` or ``keyword``."""
        return "hybrid" if self.vector_ready else "keyword"

    def keyword_index(self) -> KeywordIndexBase:
        """The keyword index (:func:`open_keyword_index`), opened on first use.

        A failure is logged once (until the error changes), and the index opening again after
        a failure is logged too.

        Raises:
            KeywordIndexUnavailable: If it cannot be opened (the message says why).
        """
        if self.index is None:
            with self._index_lock:
                if self.index is None:
                    try:
                        self.index = open_keyword_index(self.directory)
                    except (OSError, KeywordIndexUnavailable) as err:
                        if str(err) != self.index_error:
                            logger.error("evennia_ai: keyword index unavailable: %s", err)
                        self.index_error = str(err)
                        raise KeywordIndexUnavailable(str(err)) from None
                    if self.index_error:
                        logger.info("evennia_ai: keyword index available again")
                    self.index_error = ""
        return self.index

    def init_sync(self) -> None:
        """Open the keyword index and mem0 (seconds: call it in a thread). Never raises.

        When mem0 cannot start (no embedder, bad configuration), the reason is kept in
        :attr:`reason` and memory works in keyword mode.
        """
        with self._init_lock:
            if self.state == READY:
                return
            self.state = INITIALISING
            try:
                os.makedirs(self.directory, exist_ok=True)
                prepare_environment(self.directory)
                try:
                    self.keyword_index()
                except KeywordIndexUnavailable:
                    pass  # logged by keyword_index; memory still tries mem0
                self.memory = self._open_mem0()
            except Exception as err:  # e.g. the data folder cannot be created
                self.reason = f"long-term memory could not start: {reason(err)}"
                logger.exception("evennia_ai: long-term memory unavailable: %s", self.reason)
            finally:
                self.state = READY
                if getattr(self, "_close_after_init", False):
                    self._close_locked()

    def _open_mem0(self):
        try:
            config = build_mem0_config(self.directory)
        except Exception as err:
            self.reason = f"bad EVENNIA_AI_MEM0_CONFIG: {err}"
            logger.error("evennia_ai: long-term memory in keyword mode: %s", self.reason)
            return None
        self.config = config
        if config is None:
            self.reason = LOCAL_EMBEDDER_HINT
            logger.info("evennia_ai: long-term memory in keyword mode: %s", self.reason)
            return None
        try:
            memory = mem0_adapter.open_mem0(config)
        except Exception as err:
            self.reason = f"mem0 could not start: {reason(err)}"
            logger.exception("evennia_ai: long-term memory in keyword mode: %s", self.reason)
            return None
        mem0_adapter.prepare_mem0(memory, config)
        superseded = lambda ids: self._index_call("superseded_among", ids) or set()  # noqa: E731
        self.vector_index = mem0_adapter.load_vector_index(memory, config, superseded)
        if self.vector_index is not None:
            mem0_adapter.index_writes(memory, self.vector_index)
        self.reason = ""
        logger.info("evennia_ai: long-term memory ready (hybrid search) in %s", self.directory)
        return memory

    def _searchable_index(self) -> NpcVectorIndex | None:
        """The in-process vector index while it follows every write, else None (mem0 searches)."""
        in_step = getattr(getattr(self.memory, "vector_store", None), "in_step", False)
        return self.vector_index if in_step else None

    def ensure_ready(self) -> None:
        """Initialise now unless done (waits while another thread initialises)."""
        if self.state != READY:
            self.init_sync()

    def close(self) -> None:
        """Close mem0 (and its Qdrant client) and the keyword index.

        Never waits for an initialisation in progress (server stop runs on the reactor thread,
        and importing torch can take many seconds): the store is then closed when that
        initialisation ends.
        """
        if not self._init_lock.acquire(blocking=False):
            self._close_after_init = True
            return
        try:
            self._close_locked()
        finally:
            self._init_lock.release()

    def _close_locked(self) -> None:
        self._close_after_init = False
        memory, self.memory = self.memory, None
        self.vector_index = None
        embeddings, self._query_embeddings, self._embed_cache = self._query_embeddings, None, None
        embeddings.close() if embeddings is not None else None
        if memory is not None:
            mem0_adapter.close_mem0(memory)
        index, self.index = self.index, None
        if index is not None:
            index.close()
        self.state = UNINITIALISED

    def status(self) -> dict:
        """Which mode is active and why, for admin commands and the status tool."""
        vector_store = None
        if self.config:
            vector_store = (self.config.get("vector_store") or {}).get("provider", "qdrant")
        return {
            "state": self.state,
            "mode": self.mode,
            "vector": self.vector_ready,
            "vector_store": vector_store if self.vector_ready else None,
            "custom_config": conf.get("EVENNIA_AI_MEM0_CONFIG") not in (None, {}),
            "reason": self.reason if self.state == READY else "",
            "keyword_store": "postgres" if conf.get("EVENNIA_AI_KEYWORD_INDEX") else "sqlite",
            "keyword_index": self.index_error
            or ("ready" if self.index is not None else "not opened"),
            "data_dir": self.directory,
            "vector_index": self._searchable_index() is not None,
            "recall": self._query_embeddings.counts() if self._query_embeddings else no_counts(),
        }

    # -- writing ---------------------------------------------------------------------------
    def store_sync(
        self,
        npc: str,
        text: str,
        *,
        person: str | None = None,
        person_name: str = "",
        source: str = DEFAULT_SOURCE,
        trust: float | None = None,
        time: str | None = None,
        infer: bool = False,
        model: str | None = None,
        context: gate.GateContext | None = None,
    ) -> list[StoredMemory]:
        """Remember ``text`` for ``npc`` (blocking), through the quality gate.

        With ``EVENNIA_AI_MEMORY_GATE`` on (the default), :func:`evennia_ai.memory.gate.decide`
        judges the text against the NPC's current memories about the same person and
        ``context``; otherwise only an exact duplicate is refused.

        Args:
            npc: The NPC's dbref.
            text: What to remember (as given unless ``infer``).
            person: Dbref of the person it is about, or None.
            person_name: That person's name (kept for display).
            source: How the NPC learned it (a journal source).
            trust: 0-1; None takes the source's trust.
            time: When it was learned (ISO-8601 UTC); None is now.
            infer: Let mem0 extract facts with the language model (``model``) instead of storing
                the text as given (mem0 then merges and updates by itself: the gate is not
                asked). Needs mem0 and a model.
            model: The model for ``infer``.
            context: The persona, prompts, tool results and recalled memories the gate compares
                the text with (None: only the stored memories).

        Returns:
            The memories stored: one for ``infer=False`` (its ``decision`` says whether it was
            stored, merged or skipped; ``duplicate`` when the same memory was already there),
            any number for ``infer=True``.

        Raises:
            ValueError: If ``text`` or ``npc`` is empty.
            KeywordIndexUnavailable: If neither store can take the memory.
        """
        npc = str(npc or "").strip()
        if not npc:
            raise ValueError("A memory needs the NPC it belongs to.")
        text = clean_text(text)
        self.ensure_ready()
        base = StoredMemory(
            id="",
            text=text,
            npc=npc,
            person=str(person or ""),
            person_name=str(person_name or ""),
            source=str(source or DEFAULT_SOURCE),
            trust=float(trust) if trust is not None else trust_of(source),
            time=time or iso_utc(),
        )
        if infer and self.vector_ready:
            return self._add_to_mem0(base, [text], infer=True, model=model)
        with self._store_lock:  # the gate's look and the write must not interleave
            decision = self._judge(base, context)
            if not decision.stores:
                existing = decision.existing
                return [
                    StoredMemory(
                        **{
                            **asdict(base),
                            "id": existing.id if existing is not None else "",
                            "text": existing.text if existing is not None else text,
                            "duplicate": decision.action == gate.SKIPPED_DUPLICATE,
                            "note": decision.reason,
                            "decision": decision.action,
                        }
                    )
                ]
            if decision.action == gate.MERGED:
                return [self._merge(decision.existing, base)]
            stored = self._write(base)
            if decision.supersedes:
                replaced = [doc.id for doc in decision.supersedes]
                self._index_call("mark_superseded", replaced, stored.id, stored.time)
                if self.vector_index is not None:  # searches leave superseded memories out
                    for memory_id in replaced:
                        self.vector_index.delete(memory_id)
                stored.superseded = tuple(replaced)
            return [stored]

    def _judge(self, base: StoredMemory, context: gate.GateContext | None) -> gate.GateDecision:
        """The gate's decision for ``base`` (only exact duplicates are refused with the gate off)."""
        try:
            index = self.keyword_index()
        except KeywordIndexUnavailable:
            return gate.GateDecision(gate.STORED)
        if not conf.get("EVENNIA_AI_MEMORY_GATE"):
            existing = index.find_text(base.npc, base.text, person=base.person)
            if existing is None:
                return gate.GateDecision(gate.STORED)
            return gate.GateDecision(
                gate.SKIPPED_DUPLICATE, "you already remember this", existing=existing
            )
        candidates = [
            hit.doc
            for hit in index.search(
                base.npc, base.text, person=base.person, limit=gate.CANDIDATES, superseded=True
            )
        ]
        return gate.decide(base.text, candidates, context or gate.GateContext())

    def _write(self, base: StoredMemory) -> StoredMemory:
        """Store ``base`` as a new memory: in mem0 when ready, always in the keyword index."""
        note = ""
        if self.vector_ready:
            try:
                stored = self._add_to_mem0(base, [base.text], infer=False)
                self._stored_again()
                if stored:
                    return stored[0]
            except Exception as err:  # the vector side broke: keep the memory by keyword
                self._store_failed(err)
                note = f"vector store failed ({reason(err)}); kept for keyword search"
        stored = StoredMemory(
            **{**asdict(base), "id": uuid.uuid4().hex, "stored_in": ("keyword",), "note": note}
        )
        self.keyword_index().upsert(keyword_doc(stored))
        return stored

    def _merge(self, existing: KeywordDoc, base: StoredMemory) -> StoredMemory:
        """Put ``base``'s fuller text into the memory ``existing`` (same id, newer time, the
        higher trust)."""
        trust = max(t for t in (existing.trust, base.trust) if t is not None)
        merged = StoredMemory(
            **{
                **asdict(base),
                "id": existing.id,
                "trust": trust,
                "stored_in": ("keyword",),
                "decision": gate.MERGED,
                "note": "merged into a memory it adds to",
            }
        )
        self.keyword_index().upsert(keyword_doc(merged))
        if self.vector_ready:
            try:
                self.memory.update(existing.id, base.text)
                merged.stored_in = ("keyword", "vector")
            except Exception as err:  # a keyword-only memory, or the vector side broke
                logger.debug("evennia_ai: merged memory %s by keyword only: %s", existing.id, err)
        return merged

    def _store_failed(self, err: Exception) -> None:
        """Log mem0 failing to store a memory: with its traceback the first time, then one line."""
        why = reason(err)
        if self.store_error:
            logger.error("evennia_ai: mem0 could not store a memory: %s", why)
        else:
            logger.exception("evennia_ai: mem0 could not store a memory: %s", why)
        self.store_error = why

    def _stored_again(self) -> None:
        """Log mem0 storing memories again after a failure (once)."""
        if self.store_error:
            logger.info("evennia_ai: mem0 stores memories again (last error: %s)", self.store_error)
            self.store_error = ""

    def _add_to_mem0(
        self, base: StoredMemory, texts: list[str], *, infer: bool, model: str | None = None
    ) -> list[StoredMemory]:
        metadata = {
            "source": base.source,
            "trust": base.trust,
            "time": base.time,
            "person_name": base.person_name,
            "kind": "memory",
        }
        items = mem0_adapter.add_texts(
            self.memory,
            texts,
            npc=base.npc,
            person=base.person,
            metadata=metadata,
            infer=infer,
            model=model,
        )
        stored: list[StoredMemory] = []
        for item in items:
            event = str(item.get("event", "ADD")).upper()
            memory_id = str(item.get("id") or "")
            if not memory_id:
                continue
            if event == "DELETE":
                self._index_call("delete", memory_id)
                continue
            text = str(item.get("memory") or "").strip()
            if not text:
                continue
            memory = StoredMemory(
                **{
                    **asdict(base),
                    "id": memory_id,
                    "text": text,
                    "stored_in": ("keyword", "vector"),
                }
            )
            if self._index_call("upsert", keyword_doc(memory)) is False:
                memory.stored_in = ("vector",)
            stored.append(memory)
        return stored

    def _index_call(self, method: str, *args):
        """Call the keyword index; False (and a log line) if it is unavailable."""
        try:
            return getattr(self.keyword_index(), method)(*args)
        except KeywordIndexUnavailable:  # logged by keyword_index
            return False

    def consolidate_sync(
        self,
        npc: str,
        texts: Iterable[Any],
        person: str | None = None,
        *,
        person_name: str = "",
        model: str | None = None,
        infer: bool | None = None,
        usage: UsageAccountant | None = None,
        context: gate.GateContext | None = None,
    ) -> ConsolidationResult:
        """Keep what matters of ``texts`` in long-term memory (blocking; the sleep tick's call).

        Texts stored as given go through the quality gate (see :meth:`store_sync`). A
        conversation transcript (an item with ``"kind": "transcript"``) is kept only when facts
        are extracted from it: stored as given, with the gate on, it is skipped as a
        restatement (the sleep's own pass stores the conversation's facts one by one, and
        the history keeps the conversation itself).

        Args:
            npc: The NPC's dbref.
            texts: Strings, or dicts such as journal entries (``content``, ``source``,
                ``source_trust``/``trust``, ``timestamp``/``time``, ``kind``); provenance is
                kept per item.
            person: Dbref of the person they are about, or None.
            person_name: That person's name.
            model: The NPC's model for fact extraction (None: ``EVENNIA_AI_MODEL``).
            infer: Force (True) or forbid (False) fact extraction; None extracts when mem0 is
                ready and a real model is configured.
            usage: The tick's UsageAccountant; every extraction call is recorded there
                (kind ``memory_extraction``).
            context: What the gate compares texts stored as given with.

        Returns:
            A :class:`ConsolidationResult`. Items of one source are extracted in one LLM call;
            when that call fails they are stored as given.
        """
        items = [item for item in (consolidation_item(t) for t in texts or []) if item]
        result = ConsolidationResult()
        if not items:
            return result
        self.ensure_ready()
        chosen_model = resolve_model(model)
        if infer is None:
            infer = self._can_infer(chosen_model)
        infer = bool(infer) and self.vector_ready
        groups: dict[tuple[str, float], list[dict]] = {}
        for item in items:
            groups.setdefault((item["source"], item["trust"]), []).append(item)
        calls: list = []
        for (source, trust), group in groups.items():
            base = StoredMemory(
                id="",
                text="",
                npc=str(npc),
                person=str(person or ""),
                person_name=person_name,
                source=source,
                trust=trust,
                time=max(i["time"] for i in group) or iso_utc(),
            )
            if infer:
                try:
                    with mem0_adapter.extraction_accounting(calls, usage):
                        result.stored += self._add_to_mem0(
                            base, [i["text"] for i in group], infer=True, model=chosen_model
                        )
                    result.inferred = True
                    continue
                except Exception as err:
                    result.errors.append(
                        f"fact extraction failed ({err}); stored the texts as given"
                    )
            for item in group:
                if item["kind"] == TRANSCRIPT and conf.get("EVENNIA_AI_MEMORY_GATE"):
                    result.decisions.append(gate.SKIPPED_RESTATED)
                    continue
                try:
                    memories = self.store_sync(
                        npc,
                        item["text"],
                        person=person,
                        person_name=person_name,
                        source=source,
                        trust=trust,
                        time=item["time"] or None,
                        context=context,
                    )
                except Exception as err:
                    result.errors.append(f"could not store {item['text'][:40]!r}: {err}")
                    result.unstored += 1
                    continue
                for memory in memories:
                    result.decisions += memory.decisions
                    if memory.written or memory.duplicate:
                        result.stored.append(memory)
        result.usage = mem0_adapter.usage_of(calls)
        return result

    def _can_infer(self, model: str | None) -> bool:
        return self.vector_ready and mem0_adapter.can_extract(model)

    # -- reading ---------------------------------------------------------------------------
    def search_sync(
        self,
        npc: str,
        query: str,
        *,
        person: str | None = None,
        mode: str | None = "auto",
        limit: int | None = None,
        threshold: float | None = None,
        deadline: float | None = None,
    ) -> SearchOutcome:
        """Search one NPC's memories (blocking).

        Args:
            npc: The NPC's dbref.
            query: Plain text.
            person: Only memories about this dbref (None: all of the NPC's memories).
            mode: ``auto``, ``keyword``, ``vector`` or ``hybrid``.
            limit: Most hits (None: ``EVENNIA_AI_MEMORY_TOP_K``).
            threshold: Least vector similarity (None: ``EVENNIA_AI_MEMORY_THRESHOLD``).
            deadline: ``time.monotonic()`` by which the query's embedding must be ready (the
                reply path's recall); past it the search goes with its keyword hits, says so
                in ``note`` and counts the miss (``status()["recall"]``). None: wait for it.

        Returns:
            A :class:`~evennia_ai.memory.search.SearchOutcome`.

        Raises:
            ValueError: For an unknown mode.
        """
        requested = check_mode(mode)
        if self.state == UNINITIALISED:
            self.ensure_ready()
        limit = max(1, int(limit if limit is not None else conf.get("EVENNIA_AI_MEMORY_TOP_K")))
        threshold = float(
            threshold if threshold is not None else conf.get("EVENNIA_AI_MEMORY_THRESHOLD")
        )
        threshold = min(1.0, max(0.0, threshold))
        if not str(query or "").strip():
            return SearchOutcome(resolve_mode(requested, self.vector_ready)[0], [], requested, "")
        memory = self.memory if self.vector_ready else None
        npc, query = str(npc), str(query)
        keyword = keyword_searcher(self.keyword_index, npc, query, person, memory is not None)
        index = self._searchable_index() if memory is not None else None
        vectors = self.query_embeddings if index is not None else None
        vector = mem0_adapter.vector_searcher(
            memory, index, vectors, npc, query, person, threshold, deadline
        )
        outcome = run_search(requested, keyword=keyword, vector=vector, limit=limit)
        return self._current_only(outcome)

    @property
    def query_embeddings(self) -> QueryEmbeddings:
        """Query texts embedded once each, in threads of their own (raises RuntimeError: no
        embedder, as :attr:`embedding_cache`)."""
        cache = self.embedding_cache
        with self._embeddings_lock:  # not the keyword index's: the reactor may come here
            if self._query_embeddings is None:
                self._query_embeddings = QueryEmbeddings(cache)
            return self._query_embeddings

    def _current_only(self, outcome: SearchOutcome) -> SearchOutcome:
        """``outcome`` without superseded memories (the vector side does not know the marks)."""
        if not outcome.hits:
            return outcome
        old = self._index_call("superseded_among", [hit.id for hit in outcome.hits])
        if old:
            outcome.hits = [hit for hit in outcome.hits if hit.id not in old]
        return outcome

    def recent_sync(self, npc: str, limit: int = 10) -> list[MemoryHit]:
        """``npc``'s ``limit`` newest memories, newest first (blocking; from the keyword index,
        which holds every memory).

        Raises:
            KeywordIndexUnavailable: If the keyword index cannot be opened.
        """
        self.ensure_ready()
        return [hit_from_doc(doc, 0.0) for doc in self.keyword_index().recent(str(npc), limit)]

    def get_sync(self, npc: str, memory_id: str) -> MemoryHit | None:
        """One of ``npc``'s memories by id, in full, or None (blocking; from the keyword index).

        Raises:
            KeywordIndexUnavailable: If the keyword index cannot be opened.
        """
        memory_id = str(memory_id or "").strip()
        if not memory_id:
            return None
        self.ensure_ready()
        doc = self.keyword_index().get(memory_id)
        return hit_from_doc(doc, 0.0) if doc is not None and doc.npc == str(npc) else None

    def delete_sync(self, npc: str, memory_id: str) -> bool:
        """Forget one of ``npc``'s memories everywhere it is stored (blocking).

        Returns:
            False if ``npc`` has no memory with that id.
        """
        npc, memory_id = str(npc), str(memory_id or "").strip()
        if not memory_id:
            return False
        self.ensure_ready()
        found = False
        try:
            doc = self.keyword_index().get(memory_id)
        except KeywordIndexUnavailable:
            doc = None
        if doc is not None and doc.npc == npc:
            found = bool(self._index_call("delete", memory_id))
        if self.vector_ready:
            item = None
            try:
                item = self.memory.get(memory_id)
            except Exception:  # not a mem0 id (keyword-only memory) or already gone
                item = None
            if item and str(item.get("agent_id") or "") == npc:
                self.memory.delete(memory_id)
                found = True
        return found

    @property
    def embedding_cache(self) -> EmbeddingCache:
        """mem0's embedder behind a cache; new texts go in batches where the embedder has them.

        Raises:
            RuntimeError: No embedder is available (mem0 is not ready).
        """
        if not self.vector_ready:
            raise RuntimeError("no embedder is available")
        if self._embed_cache is None:
            self._embed_cache = mem0_adapter.embedding_cache_of(self.memory)
        return self._embed_cache
