"""Keyword search over memories, archival entries and history: SQLite FTS5 ranked by BM25 (pure).

One SQLite file (``<data dir>/keyword.db``) holds every NPC's documents. A document is one
remembered text with its scope and provenance::

    KeywordDoc(id="3f2a...", npc="#5", text="Bob owes Alice five gold coins", kind="memory",
               person="#7", person_name="Bob", source="told_directly", trust=0.9,
               time="2026-01-01T12:00:00Z")

``kind`` separates long-term memories from archival entries and history lines that other parts
of the assistant may index; ``person`` is the dbref of the character the text is about ("" for
none). Searches are always scoped to one NPC and optionally to one person and some kinds.

Queries are plain text, never FTS5 syntax: :func:`fts_query` keeps the words, drops English
function words and joins them with ``OR``, so a player's sentence (quotes, dashes, ``NEAR``,
``*`` and all) can never be a syntax error. The porter stemmer matches word forms ("raining"
finds "rains").

Ranking: BM25 selects the candidates; each hit's ``score`` is its *coverage*, the share of the
query's words it contains (0-1, easy to read for the model and stable on tiny corpora where
BM25's idf is near zero); hits are ordered by coverage, then BM25. No threshold is applied to
keyword hits (a shared word is itself the evidence; see :mod:`evennia_ai.memory.search`).

The index is safe to use from several threads (one connection behind a lock; WAL journal).

Example:
    index = KeywordIndex("/game/server/ai_data/keyword.db")
    index.upsert(KeywordDoc(id="m1", npc="#5", text="The roof leaks when it rains"))
    [hit.doc.text for hit in index.search("#5", "does it rain?")]
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import asdict, dataclass
from typing import Iterable

MAX_QUERY_TERMS = 32  # a pasted novel must not become a 5 000-term OR query
DEFAULT_KIND = "memory"
KINDS = ("memory", "archival", "history")

# English function words: they match nearly everything and carry no topic.
STOPWORDS = frozenset("""
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves says said say tell tells told ask asks asked hey hi hello please
    """.split())

_WORD = re.compile(r"\w+", re.UNICODE)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS docs (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        npc TEXT NOT NULL,
        kind TEXT NOT NULL,
        person TEXT NOT NULL DEFAULT '',
        person_name TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        trust REAL,
        time TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        superseded_by TEXT NOT NULL DEFAULT '',
        superseded_at TEXT NOT NULL DEFAULT '')""",
    "CREATE INDEX IF NOT EXISTS docs_scope ON docs(npc, kind, person)",
    # External-content FTS5 table: the text lives once, in `docs`; triggers keep them in step.
    """CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
        text, content='docs', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER IF NOT EXISTS docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts(rowid, text) VALUES (new.rowid, new.text); END""",
    """CREATE TRIGGER IF NOT EXISTS docs_ad AFTER DELETE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, text) VALUES ('delete', old.rowid, old.text); END""",
    """CREATE TRIGGER IF NOT EXISTS docs_au AFTER UPDATE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO docs_fts(rowid, text) VALUES (new.rowid, new.text); END""",
)

_COLUMNS = (
    "id",
    "npc",
    "kind",
    "person",
    "person_name",
    "source",
    "trust",
    "time",
    "text",
    "superseded_by",
    "superseded_at",
)
# Columns added after the first release: an older index file gains them when opened.
_ADDED_COLUMNS = ("superseded_by", "superseded_at")


class KeywordIndexUnavailable(RuntimeError):
    """SQLite here was built without FTS5, or the index file cannot be opened."""


@dataclass
class KeywordDoc:
    """One indexed text.

    Attributes:
        id: Unique id (the mem0 id when the vector store holds the same memory).
        npc: Dbref of the NPC whose memory it is.
        text: The remembered text.
        kind: ``memory``, ``archival`` or ``history`` (any short word is accepted).
        person: Dbref of the character it is about, or "".
        person_name: That character's name when it was stored (for display).
        source: How the NPC learned it (a journal source such as ``told_directly``).
        trust: How far to trust it, 0-1, or None.
        time: When it was stored, ISO-8601 UTC.
        superseded_by: Id of the memory that replaced this one ("" while it is current).
        superseded_at: When it was replaced, ISO-8601 UTC.
    """

    id: str
    npc: str
    text: str
    kind: str = DEFAULT_KIND
    person: str = ""
    person_name: str = ""
    source: str = ""
    trust: float | None = None
    time: str = ""
    superseded_by: str = ""
    superseded_at: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class KeywordHit:
    """A search result: the document, its BM25 score (positive, higher is better) and its
    coverage score (share of the query's words it matched, 0-1)."""

    doc: KeywordDoc
    bm25: float
    score: float


def query_terms(text: str) -> list[str]:
    """The searchable words of ``text``: lower-case, no function words, no repeats, capped."""
    terms: list[str] = []
    for word in _WORD.findall(str(text or "").lower()):
        word = word.strip("_")
        if not word or word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        if word not in terms:
            terms.append(word)
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return terms


def normalise_text(text: str) -> str:
    """``text`` with runs of whitespace collapsed and case folded (for duplicate checks)."""
    return " ".join(str(text or "").split()).casefold()


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of ``text`` (each quoted: never a syntax error).

    Returns:
        The query, or None when ``text`` has no searchable word.
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


_MARKED = re.compile("\x01(.*?)\x02", re.DOTALL)


def coverage(highlighted: str, term_count: int) -> float:
    """Share of the query's words a document matched, from its ``highlight()`` text.

    Matched words are counted once each, in the forms the document uses (``rains`` for the
    query's ``raining``: the porter stemmer matched them).
    """
    if term_count <= 0:
        return 0.0
    matched = set()
    for fragment in _MARKED.findall(highlighted or ""):
        matched.update(word.casefold() for word in _WORD.findall(fragment))
    return round(min(1.0, len(matched) / term_count), 4)


def _check_fts5(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp._fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE IF EXISTS temp._fts5_probe")
    except sqlite3.OperationalError as err:
        raise KeywordIndexUnavailable(
            f"This Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search: {err}"
        ) from None


class KeywordIndexBase:
    """What every keyword index backend shares (this SQLite one, :mod:`.keyword_pg`).

    Subclasses set ``PLACEHOLDER`` (their driver's parameter mark) and ``ALL_ROWS`` (a
    condition every row meets).
    """

    PLACEHOLDER = "?"
    ALL_ROWS = "1"

    def scope_condition(self, npc: str | None, kind: str | None) -> tuple[str, list]:
        """The WHERE condition and its parameters of one NPC and/or one kind (None: any)."""
        clauses, args = [], []
        for column, value in (("npc", npc), ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = {self.PLACEHOLDER}")
                args.append(str(value))
        return " AND ".join(clauses) or self.ALL_ROWS, args

    def find_text(
        self, npc: str, text: str, kind: str = DEFAULT_KIND, person: str | None = None
    ) -> KeywordDoc | None:
        """A document of this scope whose text equals ``text``, ignoring case and spacing.

        Args:
            npc: The NPC.
            text: The text looked for.
            kind: The document kind.
            person: The person dbref ("" for documents about no one; None for any).
        """
        wanted = normalise_text(text)
        for hit in self.search(npc, text, person=person, kinds=[kind], limit=20):
            if normalise_text(hit.doc.text) == wanted:
                return hit.doc
        return None


class KeywordIndex(KeywordIndexBase):
    """An FTS5 keyword index in one SQLite file (or in memory).

    Args:
        path: Database file; ``":memory:"`` for a throwaway index.

    Raises:
        KeywordIndexUnavailable: If SQLite lacks FTS5 or the file cannot be opened.
    """

    def __init__(self, path: str = ":memory:"):
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            # One connection shared by the thread pool: the lock serialises its use.
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
        except sqlite3.Error as err:
            raise KeywordIndexUnavailable(
                f"Cannot open the keyword index {self.path}: {err}"
            ) from None
        try:
            _check_fts5(self._conn)
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._conn:
                for statement in _SCHEMA:
                    self._conn.execute(statement)
                _add_missing_columns(self._conn)
        except sqlite3.Error as err:
            self._conn.close()
            raise KeywordIndexUnavailable(
                f"Cannot prepare the keyword index {self.path}: {err}"
            ) from None

    # -- writing ---------------------------------------------------------------------------
    def upsert(self, doc: KeywordDoc) -> None:
        """Add ``doc``, or replace the document with the same id."""
        self.upsert_many([doc])

    def upsert_many(self, docs: Iterable[KeywordDoc]) -> int:
        """Add or replace several documents in one transaction; returns how many."""
        rows = [_row(doc) for doc in docs]
        if not rows:
            return 0
        placeholders = ", ".join("?" for _ in _COLUMNS)
        updates = ", ".join(f"{col}=excluded.{col}" for col in _COLUMNS if col != "id")
        sql = (
            f"INSERT INTO docs ({', '.join(_COLUMNS)}) VALUES ({placeholders}) "
            f"ON CONFLICT(id) DO UPDATE SET {updates}"
        )
        with self._lock, self._conn:
            self._conn.executemany(sql, rows)
        return len(rows)

    def mark_superseded(self, doc_ids: Iterable[str], by: str, at: str) -> int:
        """Mark documents as replaced by document ``by`` at time ``at``; returns how many."""
        ids = [str(doc_id) for doc_id in doc_ids]
        if not ids:
            return 0
        with self._lock, self._conn:
            cursor = self._conn.execute(
                "UPDATE docs SET superseded_by = ?, superseded_at = ? "
                f"WHERE id IN ({', '.join('?' for _ in ids)})",
                [str(by), str(at), *ids],
            )
        return cursor.rowcount

    def superseded_among(self, doc_ids: Iterable[str]) -> set[str]:
        """The ids among ``doc_ids`` of documents marked superseded."""
        ids = [str(doc_id) for doc_id in doc_ids]
        if not ids:
            return set()
        with self._lock:
            rows = self._conn.execute(
                f"SELECT id FROM docs WHERE superseded_by != '' AND id IN "
                f"({', '.join('?' for _ in ids)})",
                ids,
            ).fetchall()
        return {row[0] for row in rows}

    def delete(self, doc_id: str) -> bool:
        """Remove one document; returns whether it existed."""
        with self._lock, self._conn:
            cursor = self._conn.execute("DELETE FROM docs WHERE id = ?", (str(doc_id),))
        return cursor.rowcount > 0

    def delete_scope(self, npc: str, kind: str | None = None, person: str | None = None) -> int:
        """Remove every document of an NPC (optionally of one kind / about one person)."""
        where, args = _scope_sql(npc, [kind] if kind else None, person)
        with self._lock, self._conn:
            cursor = self._conn.execute(f"DELETE FROM docs WHERE {where}", args)
        return cursor.rowcount

    # -- reading ---------------------------------------------------------------------------
    def get(self, doc_id: str) -> KeywordDoc | None:
        """The document with ``doc_id``, or None."""
        with self._lock:
            row = self._conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM docs WHERE id = ?", (str(doc_id),)
            ).fetchone()
        return _doc(row) if row else None

    def recent(self, npc: str, limit: int = 10, kind: str = DEFAULT_KIND) -> list[KeywordDoc]:
        """One NPC's ``limit`` newest documents of one kind, newest first."""
        where, args = _scope_sql(npc, [kind], None)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM docs WHERE {where} "
                "ORDER BY time DESC, rowid DESC LIMIT ?",
                [*args, max(0, int(limit))],
            ).fetchall()
        return [_doc(row) for row in rows]

    def batches(self, size: int = 500) -> Iterable[list[KeywordDoc]]:
        """Every document, ``size`` at a time, in the order they were first added."""
        last = 0
        while True:
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT rowid, {', '.join(_COLUMNS)} FROM docs WHERE rowid > ? "
                    "ORDER BY rowid LIMIT ?",
                    [last, max(1, int(size))],
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [_doc(row[1:]) for row in rows]

    def count(self, npc: str | None = None, kind: str | None = None) -> int:
        """How many documents (of one NPC / one kind)."""
        where, args = self.scope_condition(npc, kind)
        with self._lock:
            return int(
                self._conn.execute(f"SELECT count(*) FROM docs WHERE {where}", args).fetchone()[0]
            )

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
        """The ``limit`` best BM25 matches of ``query`` among one NPC's documents.

        Args:
            npc: The NPC whose documents are searched.
            query: Plain text (see :func:`fts_query`).
            person: Only documents about this dbref (None: any).
            kinds: Only these kinds (None: all).
            limit: Most hits returned.
            superseded: Include documents another one replaced (left out by default).

        Returns:
            Hits, best first; empty when the query has no searchable word.
        """
        terms = query_terms(query)
        match = fts_query(query)
        limit = max(0, int(limit))
        if match is None or limit == 0:
            return []
        where, args = _scope_sql(
            npc, list(kinds) if kinds is not None else None, person, prefix="d."
        )
        if not superseded:
            where += " AND d.superseded_by = ''"
        # BM25 picks the candidates; highlight() shows which words matched, for the coverage.
        sql = (
            f"SELECT {', '.join('d.' + c for c in _COLUMNS)}, bm25(docs_fts) AS rank, "
            f"highlight(docs_fts, 0, char(1), char(2)) "
            "FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid "
            f"WHERE docs_fts MATCH ? AND {where} ORDER BY rank LIMIT ?"
        )
        with self._lock:
            rows = self._conn.execute(sql, [match] + args + [max(limit * 4, 20)]).fetchall()
        hits = []
        for row in rows:
            value = -float(row[-2])  # FTS5's bm25() is negative: more negative is better
            hits.append(
                KeywordHit(doc=_doc(row[:-2]), bm25=value, score=coverage(row[-1], len(terms)))
            )
        hits.sort(key=lambda hit: (-hit.score, -hit.bm25))  # stable: BM25 order on ties
        return hits[:limit]

    def close(self) -> None:
        """Close the database (further calls fail)."""
        with self._lock:
            self._conn.close()


def _row(doc: KeywordDoc) -> tuple:
    text = str(doc.text or "").strip()
    if not text:
        raise ValueError("A keyword document needs some text.")
    if not str(doc.id or "").strip() or not str(doc.npc or "").strip():
        raise ValueError("A keyword document needs an id and an NPC.")
    trust = None if doc.trust is None else float(doc.trust)
    return (
        str(doc.id),
        str(doc.npc),
        str(doc.kind or DEFAULT_KIND),
        str(doc.person or ""),
        str(doc.person_name or ""),
        str(doc.source or ""),
        trust,
        str(doc.time or ""),
        text,
        str(doc.superseded_by or ""),
        str(doc.superseded_at or ""),
    )


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Add the columns an index file written by an older version lacks."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(docs)")}
    for column in _ADDED_COLUMNS:
        if column not in present:
            conn.execute(f"ALTER TABLE docs ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")


def _doc(row) -> KeywordDoc:
    return KeywordDoc(**dict(zip(_COLUMNS, row)))


def _scope_sql(
    npc: str, kinds: list[str] | None, person: str | None, prefix: str = "", mark: str = "?"
) -> tuple[str, list]:
    """The WHERE clause (``mark`` is the driver's placeholder) and arguments of one scope."""
    clauses = [f"{prefix}npc = {mark}"]
    args: list = [str(npc)]
    if kinds is not None:
        kinds = [str(k) for k in kinds]
        if not kinds:
            return "1 = 0", []
        clauses.append(f"{prefix}kind IN ({', '.join(mark for _ in kinds)})")
        args += kinds
    if person is not None:
        clauses.append(f"{prefix}person = {mark}")
        args.append(str(person))
    return " AND ".join(clauses), args


def rank_texts(
    items: Iterable[tuple[str, str]], query: str, limit: int = 5
) -> list[tuple[str, float]]:
    """Rank ``(id, text)`` pairs against ``query`` with a throwaway in-memory FTS5 index.

    For small lists held elsewhere (archival entries in an Attribute, a conversation's
    history): no file, no state. Items with empty text are skipped; ids should be unique.

    Returns:
        ``(id, score)`` pairs, best first, at most ``limit``.
    """
    index = KeywordIndex(":memory:")
    try:
        docs = [
            KeywordDoc(id=str(item_id), npc="_", text=str(text), kind="_")
            for item_id, text in items
            if str(text or "").strip()
        ]
        index.upsert_many(docs)
        return [
            (hit.doc.id, hit.score) for hit in index.search("_", query, kinds=None, limit=limit)
        ]
    finally:
        index.close()
