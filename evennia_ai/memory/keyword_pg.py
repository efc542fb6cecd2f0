"""The keyword index in PostgreSQL: full-text search (``tsvector``, GIN, ``ts_rank``).

The second backend of :mod:`evennia_ai.memory.keyword_index`, with the same methods and the
same results: for a game whose long-term memory lives on a PostgreSQL server (beside mem0's
``pgvector`` store), shared by every process of the game. Chosen by the setting::

    EVENNIA_AI_KEYWORD_INDEX = {"backend": "postgres", "dsn": "postgresql://user:pw@host/db"}

(without ``dsn``: the server of a ``pgvector`` ``EVENNIA_AI_MEM0_CONFIG``; see
:func:`evennia_ai.memory.longterm.keyword_index_settings`). Needs psycopg 3 (the ``postgres`` extra).

One table (``evennia_ai_keyword_docs`` unless told otherwise) holds every NPC's documents, with
a stored ``tsvector`` of the text (English stemming, accents folded as SQLite's
``remove_diacritics`` does) under a GIN index. Queries are the same plain text as with SQLite:
the words :func:`~evennia_ai.memory.keyword_index.query_terms` keeps, OR-ed, each through
``plainto_tsquery`` (never a syntax error). ``ts_rank`` picks the candidates; a hit's ``score``
is its coverage, the share of the query's words it contains, and hits are ordered by coverage,
then rank, as with SQLite (its ``bm25`` field holds the ``ts_rank``).

One connection behind a lock, as the SQLite index; a lost connection is opened again on the
next call, and a server that cannot be reached raises
:class:`~evennia_ai.memory.keyword_index.KeywordIndexUnavailable`.

Example:
    index = PostgresKeywordIndex("postgresql://evennia:secret@127.0.0.1:5432/evennia")
    index.upsert(KeywordDoc(id="m1", npc="#5", text="The roof leaks when it rains"))
    [hit.doc.text for hit in index.search("#5", "does it rain?")]
"""

from __future__ import annotations

import threading
import unicodedata
from typing import Iterable

try:  # the ``postgres`` extra; without it the index says so when it is asked for
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - the test environment has it
    psycopg = sql = None

from evennia_ai.memory.keyword_index import (
    _COLUMNS,
    DEFAULT_KIND,
    KeywordDoc,
    KeywordHit,
    KeywordIndexBase,
    KeywordIndexUnavailable,
    _doc,
    _row,
    _scope_sql,
    query_terms,
)

TABLE = "evennia_ai_keyword_docs"
TEXT_CONFIG = "english"  # stemming as FTS5's porter tokenizer; its stop words are ours too
CONNECT_TIMEOUT = 10

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {table} (
        seq BIGSERIAL,
        id TEXT PRIMARY KEY,
        npc TEXT NOT NULL,
        kind TEXT NOT NULL,
        person TEXT NOT NULL DEFAULT '',
        person_name TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        trust DOUBLE PRECISION,
        time TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        superseded_by TEXT NOT NULL DEFAULT '',
        superseded_at TEXT NOT NULL DEFAULT '',
        folded TEXT NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', folded)) STORED)""",
    "CREATE INDEX IF NOT EXISTS {tsv_index} ON {table} USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS {scope_index} ON {table} (npc, kind, person)",
)


def fold(text: str) -> str:
    """``text`` without accents (``café`` → ``cafe``) and NUL characters (PostgreSQL has none)."""
    decomposed = unicodedata.normalize("NFKD", str(text or "").replace("\x00", " "))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


class PostgresKeywordIndex(KeywordIndexBase):
    """A keyword index in one PostgreSQL table (created when missing).

    Args:
        dsn: A libpq connection string or URL.
        table: The table's name.

    Raises:
        KeywordIndexUnavailable: The server cannot be reached or the table not prepared.
    """

    PLACEHOLDER = "%s"
    ALL_ROWS = "TRUE"

    def __init__(self, dsn: str, table: str = TABLE):
        if psycopg is None:
            raise KeywordIndexUnavailable(
                "EVENNIA_AI_KEYWORD_INDEX names PostgreSQL but psycopg is not installed "
                "(pip install 'evennia-ai[postgres]')"
            )
        self.dsn = dsn
        self.table = table
        self.path = f"PostgreSQL table {table}"  # what messages call it (the SQLite one's file)
        self._lock = threading.Lock()
        self._conn = None
        self._names = {
            "table": sql.Identifier(table),
            "tsv_index": sql.Identifier(f"{table}_tsv"),
            "scope_index": sql.Identifier(f"{table}_scope"),
        }
        with self._lock:
            self._connection()

    # -- the connection --------------------------------------------------------------------
    def _connection(self):
        """The open connection (opened, and the table prepared, when needed); hold the lock."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.Error as err:
            raise KeywordIndexUnavailable(
                f"Cannot reach the keyword index's server: {err}"
            ) from None
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [self.table])
                for statement in _SCHEMA:
                    conn.execute(sql.SQL(statement).format(**self._names))
        except psycopg.Error as err:
            conn.close()
            raise KeywordIndexUnavailable(
                f"Cannot prepare the keyword index table {self.table}: {err}"
            ) from None
        self._conn = conn
        return conn

    def _run(self, query: str, args=(), *, many: bool = False, fetch: str = ""):
        """Run one statement under the lock: ``fetch`` is "", "one" or "all"; returns rows or
        the row count."""
        statement = sql.SQL(query).format(**self._names)
        with self._lock:
            conn = self._connection()
            try:
                with conn.cursor() as cursor:
                    if many:
                        cursor.executemany(statement, args)
                    else:
                        cursor.execute(statement, args)
                    if fetch == "one":
                        return cursor.fetchone()
                    if fetch == "all":
                        return cursor.fetchall()
                    return cursor.rowcount
            except psycopg.OperationalError as err:
                conn.close()  # opened again on the next call
                raise KeywordIndexUnavailable(f"The keyword index's server failed: {err}") from None

    # -- writing ---------------------------------------------------------------------------
    def upsert(self, doc: KeywordDoc) -> None:
        """Add ``doc``, or replace the document with the same id."""
        self.upsert_many([doc])

    def upsert_many(self, docs: Iterable[KeywordDoc]) -> int:
        """Add or replace several documents in one transaction; returns how many."""
        rows = [_pg_row(doc) for doc in docs]
        if not rows:
            return 0
        columns = (*_COLUMNS, "folded")
        updates = ", ".join(f"{col} = excluded.{col}" for col in columns if col != "id")
        self._run(
            f"INSERT INTO {{table}} ({', '.join(columns)}) "
            f"VALUES ({', '.join('%s' for _ in columns)}) "
            f"ON CONFLICT (id) DO UPDATE SET {updates}",
            rows,
            many=True,
        )
        return len(rows)

    def mark_superseded(self, doc_ids: Iterable[str], by: str, at: str) -> int:
        """Mark documents as replaced by document ``by`` at time ``at``; returns how many."""
        ids = [str(doc_id) for doc_id in doc_ids]
        if not ids:
            return 0
        return self._run(
            "UPDATE {table} SET superseded_by = %s, superseded_at = %s WHERE id = ANY(%s)",
            [str(by), str(at), ids],
        )

    def superseded_among(self, doc_ids: Iterable[str]) -> set[str]:
        """The ids among ``doc_ids`` of documents marked superseded."""
        ids = [str(doc_id) for doc_id in doc_ids]
        if not ids:
            return set()
        rows = self._run(
            "SELECT id FROM {table} WHERE superseded_by != '' AND id = ANY(%s)", [ids], fetch="all"
        )
        return {row[0] for row in rows}

    def delete(self, doc_id: str) -> bool:
        """Remove one document; returns whether it existed."""
        return self._run("DELETE FROM {table} WHERE id = %s", [str(doc_id)]) > 0

    def delete_scope(self, npc: str, kind: str | None = None, person: str | None = None) -> int:
        """Remove every document of an NPC (optionally of one kind / about one person)."""
        where, args = _scope_sql(npc, [kind] if kind else None, person, mark="%s")
        return self._run(f"DELETE FROM {{table}} WHERE {where}", args)

    # -- reading ---------------------------------------------------------------------------
    def get(self, doc_id: str) -> KeywordDoc | None:
        """The document with ``doc_id``, or None."""
        row = self._run(
            f"SELECT {', '.join(_COLUMNS)} FROM {{table}} WHERE id = %s", [str(doc_id)], fetch="one"
        )
        return _doc(row) if row else None

    def recent(self, npc: str, limit: int = 10, kind: str = DEFAULT_KIND) -> list[KeywordDoc]:
        """One NPC's ``limit`` newest documents of one kind, newest first."""
        where, args = _scope_sql(npc, [kind], None, mark="%s")
        rows = self._run(
            f"SELECT {', '.join(_COLUMNS)} FROM {{table}} WHERE {where} "
            "ORDER BY time DESC, seq DESC LIMIT %s",
            [*args, max(0, int(limit))],
            fetch="all",
        )
        return [_doc(row) for row in rows]

    def count(self, npc: str | None = None, kind: str | None = None) -> int:
        """How many documents (of one NPC / one kind)."""
        where, args = self.scope_condition(npc, kind)
        return int(self._run(f"SELECT count(*) FROM {{table}} WHERE {where}", args, fetch="one")[0])

    def search(
        self,
        npc: str,
        query: str,
        *,
        person: str | None = None,
        kinds: Iterable[str] | None = (DEFAULT_KIND,),
        limit: int = 5,
        superseded: bool = False,
    ) -> list[KeywordHit]:
        """The ``limit`` best matches of ``query`` among one NPC's documents.

        Same arguments and results as :meth:`KeywordIndex.search
        <evennia_ai.memory.keyword_index.KeywordIndex.search>`; ``bm25`` holds ``ts_rank``.
        """
        terms = [fold(term) for term in query_terms(query)]
        limit = max(0, int(limit))
        if not terms or limit == 0:
            return []
        where, args = _scope_sql(
            npc, list(kinds) if kinds is not None else None, person, prefix="d.", mark="%s"
        )
        if not superseded:
            where += " AND d.superseded_by = ''"
        # Every word through plainto_tsquery (no syntax), OR-ed; the coverage counts the words
        # each candidate matches.
        any_word = " || ".join(f"plainto_tsquery('{TEXT_CONFIG}', %s)" for _ in terms)
        rows = self._run(
            f"WITH q AS (SELECT {any_word} AS query) "
            f"SELECT {', '.join('d.' + c for c in _COLUMNS)}, ts_rank(d.tsv, q.query) AS rank, "
            f"(SELECT count(*) FROM unnest(%s::text[]) AS w(word) "
            f"WHERE d.tsv @@ plainto_tsquery('{TEXT_CONFIG}', w.word)) AS matched "
            f"FROM {{table}} d, q WHERE d.tsv @@ q.query AND {where} "
            "ORDER BY rank DESC, d.seq LIMIT %s",
            [*terms, terms, *args, max(limit * 4, 20)],
            fetch="all",
        )
        hits = [
            KeywordHit(
                doc=_doc(row[:-2]),
                bm25=float(row[-2]),
                score=round(min(1.0, int(row[-1]) / len(terms)), 4),
            )
            for row in rows
        ]
        hits.sort(key=lambda hit: (-hit.score, -hit.bm25))  # stable: rank order on ties
        return hits[:limit]

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _pg_row(doc: KeywordDoc) -> tuple:
    row = tuple(
        value.replace("\x00", " ") if isinstance(value, str) else value for value in _row(doc)
    )
    return (*row, fold(row[_COLUMNS.index("text")]))
