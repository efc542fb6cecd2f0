"""The plugin's log: every line reaches Evennia's log starting ``evennia_ai``, third-party
libraries' lines are labelled (or quiet below warnings), and long-term memory reports its state,
its failures and its recoveries in the words the docs give."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from unittest import mock

import pytest
from django.test import override_settings

from evennia_ai import startstop
from evennia_ai.memory import longterm, longterm_config, longterm_store
from evennia_ai.memory.keyword_index import KeywordIndexUnavailable


@pytest.fixture
def evennia_log():
    """Route the Python loggers as a server start does; yields the lines Evennia's log got,
    as ``(level, text)``. The loggers are put back as they were afterwards."""
    names = [startstop.LOG_PREFIX, *startstop.THIRD_PARTY_LOGGERS]
    saved = {}
    for name in names:
        python_log = logging.getLogger(name)
        saved[name] = (list(python_log.handlers), python_log.level, python_log.propagate)
        python_log.setLevel(logging.NOTSET)  # as a fresh server finds them (not quieted yet)
    lines: list[tuple[str, str]] = []
    with (
        mock.patch.object(startstop.logger, "log_info", lambda text: lines.append(("info", text))),
        mock.patch.object(startstop.logger, "log_warn", lambda text: lines.append(("warn", text))),
        mock.patch.object(startstop.logger, "log_err", lambda text: lines.append(("err", text))),
    ):
        startstop.route_plugin_log()
        yield lines
    for name, (handlers, level, propagate) in saved.items():
        python_log = logging.getLogger(name)
        python_log.handlers[:] = handlers
        python_log.setLevel(level)
        python_log.propagate = propagate


# -- routing -------------------------------------------------------------------------------------
def test_plugin_lines_reach_evennias_log_with_the_prefix(evennia_log):
    logging.getLogger("evennia_ai.llm.tokens").warning("evennia_ai: tiktoken cannot load x")
    logging.getLogger("evennia_ai.tools.base").error("a line without the prefix")
    logging.getLogger("evennia_ai.llm.client").info("evennia_ai [Marta#12]: model back")
    assert evennia_log == [
        ("warn", "evennia_ai: tiktoken cannot load x"),
        ("err", "evennia_ai: a line without the prefix"),
        ("info", "evennia_ai [Marta#12]: model back"),
    ]


def test_third_party_lines_are_labelled_and_quiet_below_warnings(evennia_log):
    logging.getLogger("mem0.memory.main").error("Error in new_memories_with_actions")
    logging.getLogger("mem0.memory.main").info("Total existing memories: 0")
    logging.getLogger("httpx").info("HTTP Request: POST http://x/v1/chat/completions")
    logging.getLogger("qdrant_client").warning("collection exists")
    logging.getLogger("sentence_transformers.SentenceTransformer").warning("no GPU")
    assert evennia_log == [
        ("err", "evennia_ai: mem0: Error in new_memories_with_actions"),
        ("warn", "evennia_ai: qdrant: collection exists"),
        ("warn", "evennia_ai: sentence_transformers: no GPU"),
    ]


def test_routing_again_keeps_a_library_quieted_further(evennia_log):
    logging.getLogger("transformers").setLevel(logging.ERROR)  # what long-term memory does
    startstop.route_plugin_log()  # after memory starts
    logging.getLogger("transformers").warning("a progress bar")
    assert evennia_log == []


def test_a_librarys_own_stderr_handler_is_replaced(evennia_log):
    litellm_log = logging.getLogger("LiteLLM")
    litellm_log.addHandler(logging.StreamHandler())  # what importing litellm does
    startstop.route_plugin_log()
    assert [type(h) for h in litellm_log.handlers] == [startstop.EvenniaLogHandler]
    litellm_log.warning("Provider List: https://docs.litellm.ai/docs/providers")
    assert evennia_log == [
        ("warn", "evennia_ai: litellm: Provider List: https://docs.litellm.ai/docs/providers")
    ]


def test_a_traceback_stays_in_the_same_line(evennia_log):
    try:
        raise RuntimeError("disk full")
    except RuntimeError:
        logging.getLogger("evennia_ai.memory.longterm").exception("evennia_ai: store failed")
    (level, text), *_ = evennia_log
    assert level == "err" and text.startswith("evennia_ai: store failed\nTraceback")
    assert text.endswith("RuntimeError: disk full")


# -- long-term memory ----------------------------------------------------------------------------
@pytest.fixture
def memory(tmp_path):
    with override_settings(
        EVENNIA_AI_DATA_DIR=str(tmp_path),
        EVENNIA_AI_MEM0_CONFIG=None,
        EVENNIA_AI_MEMORY_VECTOR_INDEX=False,
    ):
        memory = longterm.LongTermMemory(str(tmp_path))
        yield memory
        memory.close()


def test_keyword_mode_without_the_embedder(evennia_log, memory, monkeypatch):
    monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: False)
    memory.init_sync()
    assert evennia_log == [
        ("info", f"evennia_ai: long-term memory in keyword mode: {longterm.LOCAL_EMBEDDER_HINT}")
    ]


def test_keyword_mode_with_a_bad_configuration(evennia_log, memory, monkeypatch):
    monkeypatch.setattr(
        longterm_store, "build_mem0_config", mock.Mock(side_effect=ValueError("no vector_store"))
    )
    memory.init_sync()
    assert evennia_log == [
        (
            "err",
            "evennia_ai: long-term memory in keyword mode: bad EVENNIA_AI_MEM0_CONFIG: "
            "no vector_store",
        )
    ]


def test_keyword_mode_when_mem0_cannot_start_says_why(evennia_log, memory, monkeypatch):
    from mem0 import Memory

    monkeypatch.setattr(longterm_store, "build_mem0_config", lambda directory: {"vector_store": {}})
    monkeypatch.setattr(Memory, "from_config", mock.Mock(side_effect=RuntimeError("no qdrant")))
    memory.init_sync()
    [(level, text)] = [line for line in evennia_log if "long-term memory" in line[1]]
    assert level == "err" and text.startswith(
        "evennia_ai: long-term memory in keyword mode: mem0 could not start: no qdrant\nTraceback"
    )


def test_ready_for_hybrid_search_as_documented(evennia_log, memory, monkeypatch):
    from mem0 import Memory

    fake_mem0 = SimpleNamespace(llm=SimpleNamespace(config=None), vector_store=object())
    monkeypatch.setattr(longterm_store, "build_mem0_config", lambda directory: {"vector_store": {}})
    monkeypatch.setattr(Memory, "from_config", mock.Mock(return_value=fake_mem0))
    memory.init_sync()
    assert memory.mode == "hybrid"
    assert (
        "info",
        f"evennia_ai: long-term memory ready (hybrid search) in {memory.directory}",
    ) in evennia_log


def test_keyword_index_failure_logged_once_then_its_recovery(evennia_log, memory, monkeypatch):
    opened = mock.Mock(
        side_effect=[KeywordIndexUnavailable("database is locked")] * 3 + [mock.Mock()]
    )
    monkeypatch.setattr(longterm_config, "KeywordIndex", opened)
    for _attempt in range(3):
        with pytest.raises(KeywordIndexUnavailable):
            memory.keyword_index()
    memory.keyword_index()
    assert evennia_log == [
        ("err", "evennia_ai: keyword index unavailable: database is locked"),
        ("info", "evennia_ai: keyword index available again"),
    ]
    memory.index = None  # the mock has nothing to close


def test_mem0_store_failure_then_recovery(evennia_log, memory):
    for _attempt in range(2):
        try:
            raise OSError("qdrant folder is read-only")
        except OSError as err:
            memory._store_failed(err)
    memory._stored_again()
    memory._stored_again()  # already back: said once
    texts = [text for _level, text in evennia_log]
    assert texts[0].startswith(
        "evennia_ai: mem0 could not store a memory: qdrant folder is read-only\n" "Traceback"
    )
    assert texts[1:] == [
        "evennia_ai: mem0 could not store a memory: qdrant folder is read-only",
        "evennia_ai: mem0 stores memories again (last error: qdrant folder is read-only)",
    ]
