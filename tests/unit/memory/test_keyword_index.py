"""The keyword index: scoping, ranking, safe queries, persistence (plain and fast).

The behaviour tests run on both backends: SQLite FTS5 and PostgreSQL full-text search (the
``postgres`` parameter starts a throwaway server, or uses ``make test``'s; see the
``pgvector_dsn`` fixture in conftest.py).
"""

import sqlite3
import threading
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.memory.keyword_index import (
    MAX_QUERY_TERMS,
    KeywordDoc,
    KeywordIndex,
    coverage,
    fts_query,
    query_terms,
    rank_texts,
)
from evennia_ai.memory.keyword_pg import PostgresKeywordIndex, fold

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def new_index(request):
    """Makes empty indexes of the backend under test (each PostgreSQL one in its own table)."""
    made = []

    def make(path=":memory:"):
        if request.param == "sqlite":
            ix = KeywordIndex(path)
        else:
            dsn = request.getfixturevalue("pgvector_dsn")
            ix = PostgresKeywordIndex(dsn, table=f"kw_test_{uuid.uuid4().hex[:12]}")
        made.append(ix)
        return ix

    yield make
    for ix in made:
        if isinstance(ix, PostgresKeywordIndex):
            ix._run("DROP TABLE IF EXISTS {table}")
        ix.close()


@pytest.fixture
def index(new_index):
    ix = new_index()
    ix.upsert_many(
        [
            KeywordDoc(
                id="debt",
                npc="#5",
                text="Bob owes Alice five gold coins",
                person="#7",
                person_name="Bob",
                source="told_directly",
                trust=0.9,
                time="2026-01-01T00:00:00Z",
            ),
            KeywordDoc(id="roof", npc="#5", text="The tavern roof leaks when it rains"),
            KeywordDoc(
                id="note", npc="#5", text="Gold prices rose after the mine closed", kind="archival"
            ),
            KeywordDoc(id="other", npc="#6", text="The blacksmith sells gold swords"),
        ]
    )
    return ix


def ids(hits):
    return [hit.doc.id for hit in hits]


def test_query_terms_drop_function_words_and_repeats():
    assert query_terms('Bob says to you: "Do you remember what I owe Alice? Alice!"') == [
        "bob",
        "remember",
        "owe",
        "alice",
    ]
    assert query_terms("the and of, to") == []
    assert query_terms("5 gold") == ["5", "gold"]
    assert len(query_terms(" ".join(f"word{i}" for i in range(100)))) == MAX_QUERY_TERMS


def test_fts_query_quotes_every_term():
    assert fts_query('NEAR("ox" AND yak) * -zebu') == '"near" OR "ox" OR "yak" OR "zebu"'
    assert fts_query("   ") is None


def test_search_is_scoped_to_npc_kind_and_person(index):
    assert ids(index.search("#5", "gold")) == ["debt"]  # not the archival note, not NPC #6
    assert set(ids(index.search("#5", "gold", kinds=None))) == {"debt", "note"}
    assert ids(index.search("#5", "gold", kinds=["archival"])) == ["note"]
    assert ids(index.search("#5", "gold", person="#7")) == ["debt"]
    assert ids(index.search("#5", "gold", person="#8")) == []
    assert ids(index.search("#6", "gold")) == ["other"]
    assert index.search("#5", "gold", kinds=[]) == []


def test_stemming_and_coverage_score(index):
    hits = index.search("#5", "raining roofs")
    assert ids(hits) == ["roof"] and hits[0].score == 1.0 and hits[0].bm25 > 0
    hits = index.search("#5", 'Bob says to you: "Do you remember what I owe Alice?"')
    assert ids(hits) == ["debt"] and hits[0].score == 0.75  # bob, owe(s), alice of 4 words


def test_more_matched_words_rank_first(index):
    index.upsert(KeywordDoc(id="both", npc="#5", text="Gold fell through the leaking roof"))
    hits = index.search("#5", "gold roof")
    assert hits[0].doc.id == "both" and hits[0].score == 1.0
    assert [h.score for h in hits[1:]] == [0.5, 0.5]


def test_hostile_and_empty_queries_never_raise(index):
    for query in ['"', "AND OR NOT", "NEAR(", "col:value", "*", "", None, "^gold", "gold\x00roof"]:
        index.search("#5", query)
    assert index.search("#5", "the of and") == []
    assert index.search("#5", "gold", limit=0) == []


def test_upsert_replaces_and_delete_removes(index):
    index.upsert(KeywordDoc(id="roof", npc="#5", text="The roof was mended by Tom"))
    assert index.search("#5", "rains") == []
    assert ids(index.search("#5", "mended")) == ["roof"]
    assert index.get("roof").text == "The roof was mended by Tom"
    assert index.delete("roof") and not index.delete("roof")
    assert index.search("#5", "mended") == [] and index.get("roof") is None
    assert index.count("#5") == 2
    assert index.delete_scope("#5") == 2 and index.count() == 1


def test_find_text_ignores_case_and_spacing(index):
    assert index.find_text("#5", "bob  OWES alice five gold coins", person="#7").id == "debt"
    assert index.find_text("#5", "bob owes alice five gold coins", person="") is None
    assert index.find_text("#5", "Bob owes Alice", person="#7") is None


def test_documents_need_text_id_and_npc(index):
    with pytest.raises(ValueError):
        index.upsert(KeywordDoc(id="x", npc="#5", text="   "))
    with pytest.raises(ValueError):
        index.upsert(KeywordDoc(id="", npc="#5", text="words"))


def test_file_index_persists(tmp_path):
    path = tmp_path / "keyword.db"
    ix = KeywordIndex(str(path))
    ix.upsert(
        KeywordDoc(
            id="a",
            npc="#5",
            text="The innkeeper's daughter sings at dusk",
            trust=0.8,
            source="observed",
        )
    )
    ix.close()
    again = KeywordIndex(str(path))
    hit = again.search("#5", "singing")[0]
    assert hit.doc.trust == 0.8 and hit.doc.source == "observed"
    again.close()
    assert sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_concurrent_writers_and_readers(tmp_path, new_index):
    ix = new_index(str(tmp_path / "keyword.db"))
    errors = []

    def work(n):
        try:
            for i in range(20):
                ix.upsert(KeywordDoc(id=f"{n}-{i}", npc="#5", text=f"lantern number {n} {i}"))
                ix.search("#5", "lantern")
        except Exception as err:  # pragma: no cover - the failure is the assertion
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and ix.count("#5") == 80


def test_rank_texts_in_memory():
    ranked = rank_texts(
        [("1", "the king is dead"), ("2", "long live the queen"), ("3", "")], "king"
    )
    assert [item_id for item_id, _ in ranked] == ["1"]
    assert rank_texts([], "king") == []


def test_coverage_counts_distinct_matched_words():
    assert coverage("\x01rains\x02 and \x01roof\x02 \x01roof\x02", 4) == 0.5
    assert coverage("nothing", 3) == 0.0 and coverage("x", 0) == 0.0


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_any_query_text_is_safe(text):
    ix = KeywordIndex(":memory:")
    try:
        ix.upsert(KeywordDoc(id="a", npc="#5", text="a quiet evening in the tavern"))
        hits = ix.search("#5", text)
        assert all(0.0 <= h.score <= 1.0 for h in hits)
    finally:
        ix.close()


@pytest.mark.postgres
def test_postgres_index_any_query_text_is_safe(pgvector_dsn):
    ix = PostgresKeywordIndex(pgvector_dsn, table=f"kw_test_{uuid.uuid4().hex[:12]}")
    try:
        ix.upsert(KeywordDoc(id="a", npc="#5", text="a quiet evening in the café\x00"))

        @settings(max_examples=100, deadline=None)
        @given(st.text(max_size=80))
        def search(text):
            assert all(0.0 <= h.score <= 1.0 for h in ix.search("#5", text))

        search()
        assert ids(ix.search("#5", "Cafe evenings")) == ["a"]  # accents folded, stemmed
    finally:
        ix._run("DROP TABLE IF EXISTS {table}")
        ix.close()


@pytest.mark.postgres
def test_postgres_index_reconnects_after_losing_its_connection(pgvector_dsn):
    ix = PostgresKeywordIndex(pgvector_dsn, table=f"kw_test_{uuid.uuid4().hex[:12]}")
    try:
        ix.upsert(KeywordDoc(id="a", npc="#5", text="the lantern is lit"))
        ix._conn.close()  # as a server restart would
        assert ids(ix.search("#5", "lantern")) == ["a"]
    finally:
        ix._run("DROP TABLE IF EXISTS {table}")
        ix.close()


def test_fold_removes_accents_and_nul():
    assert fold("Café naïve\x00Zoë") == "Cafe naive Zoe"
