"""Copying a game's embedded long-term memories into PostgreSQL (``ailtm/copy``).

The source is built as the embedded default leaves it: ``keyword.db`` and a local Qdrant in
the data folder, holding mem0's payloads and ids. The target is ``pgvector_memory`` (pgvector
and the PostgreSQL keyword index, with the stand-in :class:`WordEmbedder`).
"""

import os
import uuid

import pytest
from django.test import override_settings
from qdrant_client import QdrantClient
from qdrant_client.models import Distance, PointStruct, VectorParams
from support.commands import AICommandTestBase, sync_thread
from support.memory import DIMS, WordEmbedder

from evennia_ai.commands import memory as cmds
from evennia_ai.memory import longterm, migrate_store
from evennia_ai.memory.keyword_index import KeywordDoc, KeywordIndex

DEBT = str(uuid.uuid4())
ROOF = str(uuid.uuid4())
KEYWORD_ONLY = uuid.uuid4().hex  # stored while the game had no embedder: a bare hex id


def build_embedded_source(directory: str) -> dict[str, list[float]]:
    """The embedded stores of a game with two NPCs; returns the Qdrant vectors by id."""
    os.makedirs(directory, exist_ok=True)
    index = KeywordIndex(os.path.join(directory, "keyword.db"))
    index.upsert_many(
        [
            KeywordDoc(
                id=DEBT,
                npc="#5",
                text="Bob owes Alice five gold coins",
                person="#7",
                person_name="Bob",
                source="told_directly",
                trust=0.9,
                time="2026-01-01T00:00:00Z",
            ),
            KeywordDoc(id=ROOF, npc="#6", text="The forge roof leaks when it rains"),
            KeywordDoc(id=KEYWORD_ONLY, npc="#5", text="The cellar door sticks in winter"),
            KeywordDoc(id="note-1", npc="#5", text="Grain prices doubled", kind="archival"),
        ]
    )
    index.mark_superseded([ROOF], by=DEBT, at="2026-01-02T00:00:00Z")
    index.close()
    embedder = WordEmbedder()
    vectors = {
        DEBT: embedder.embed("Bob owes Alice five gold coins"),
        ROOF: embedder.embed("The forge roof leaks when it rains"),
    }
    payloads = {
        DEBT: {
            "data": "Bob owes Alice five gold coins",
            "agent_id": "#5",
            "user_id": "#7",
            "source": "told_directly",
            "trust": 0.9,
            "person_name": "Bob",
            "kind": "memory",
        },
        ROOF: {"data": "The forge roof leaks when it rains", "agent_id": "#6", "kind": "memory"},
    }
    client = QdrantClient(path=os.path.join(directory, "qdrant"))
    client.create_collection(
        longterm.COLLECTION, vectors_config=VectorParams(size=DIMS, distance=Distance.COSINE)
    )
    client.upsert(
        longterm.COLLECTION,
        [PointStruct(id=key, vector=vectors[key], payload=payloads[key]) for key in vectors],
    )
    client.close()
    return vectors


@pytest.mark.postgres
def test_copy_brings_every_memory_across_once(pgvector_memory, monkeypatch):
    memory = pgvector_memory
    vectors = build_embedded_source(memory.directory)
    monkeypatch.setattr(migrate_store, "_same_embedder", lambda config: True)  # reuse vectors
    lines = []
    report = migrate_store.copy_embedded_memories(memory, progress=lines.append)

    assert report.keyword_docs == 4 and report.npcs == {"#5", "#6"} and not report.failures
    assert (report.vectors_copied, report.vectors_embedded, report.vectors_present) == (2, 1, 0)
    assert report.keyword_only == 0  # "note-1" is archival: no vector wanted
    assert "Keyword index: 4 of 4 documents." in lines and "Vectors: 2 of 2." in lines
    summary = report.summary()
    assert "2 NPC(s)" in summary and "2 copied, 1 embedded again, 0 already there" in summary

    index = memory.keyword_index()
    assert index.count() == 4 and index.superseded_among([ROOF, DEBT]) == {ROOF}
    cellar = str(uuid.UUID(KEYWORD_ONLY))  # re-keyed as mem0 keys it
    assert index.get(cellar).text == "The cellar door sticks in winter"
    assert memory.memory.vector_store.get(cellar).payload["agent_id"] == "#5"
    store = memory.memory.vector_store
    with store.connection_pool.connection() as conn:  # the vector as stored, not re-embedded
        stored = conn.execute(
            f"SELECT vector::text FROM {store.collection_name} WHERE id = %s", [DEBT]
        ).fetchone()[0]
    assert [round(float(v), 5) for v in stored.strip("[]").split(",")] == [
        round(v, 5) for v in vectors[DEBT]
    ]

    # the copy went through mem0's vector store: the in-process index follows it
    assert memory.vector_index.count("#5") == 2 and memory.vector_index.count("#6") == 1
    hybrid = memory.search_sync("#5", "who owes gold coins")
    assert hybrid.hits[0].id == DEBT and hybrid.hits[0].via == ("vector", "keyword")
    assert hybrid.hits[0].trust == 0.9 and hybrid.hits[0].person == "#7"
    assert [h.id for h in memory.search_sync("#5", "cellar door", mode="vector").hits][0] == cellar

    again = migrate_store.copy_embedded_memories(memory)
    assert (again.vectors_copied, again.vectors_embedded, again.vectors_present) == (0, 0, 3)
    assert index.count() == 4 and not again.failures


@pytest.mark.postgres
def test_other_embedder_embeds_again(pgvector_memory):
    build_embedded_source(pgvector_memory.directory)
    report = migrate_store.copy_embedded_memories(pgvector_memory)
    assert (report.vectors_copied, report.vectors_embedded) == (0, 3)


def test_refused_without_postgres_settings_or_embedded_memories(tmp_path):
    memory = longterm.LongTermMemory(str(tmp_path))
    with override_settings(EVENNIA_AI_MEM0_CONFIG=None, EVENNIA_AI_KEYWORD_INDEX=None):
        with pytest.raises(migrate_store.CopyRefused, match="are the embedded ones"):
            migrate_store.copy_embedded_memories(memory, str(tmp_path))
    with override_settings(
        EVENNIA_AI_KEYWORD_INDEX={"backend": "postgres", "dsn": "host=127.0.0.1 port=1"}
    ):
        with pytest.raises(migrate_store.CopyRefused, match="no embedded memories"):
            migrate_store.copy_embedded_memories(memory, str(tmp_path))


class TestCopyCommand(AICommandTestBase):
    def test_copy_says_what_to_set_first(self):
        with (
            override_settings(EVENNIA_AI_MEM0_CONFIG=None, EVENNIA_AI_KEYWORD_INDEX=None),
            pytest.MonkeyPatch.context() as patch,
        ):
            patch.setattr(longterm, "defer_to_thread", sync_thread)
            self.call_says(  # two replies, the second wrapped to the client's width
                cmds.CmdAILongTerm(),
                "/copy",
                "Copying the embedded long-term memories in a thread; progress follows. "
                "Nothing copied: the configured stores are the embedded ones: set "
                "EVENNIA_AI_MEM0_CONFIG (pgvector)",
            )

    def test_copy_is_for_developers(self):
        self.call(
            cmds.CmdAILongTerm(),
            "/copy",
            "Only Developers may copy long-term memories",
            caller=self.builder(),
        )
