"""Copy a game's embedded long-term memories into the configured stores (PostgreSQL).

A game that started on the embedded default (a local Qdrant in ``<data dir>/qdrant`` and the
SQLite keyword index ``<data dir>/keyword.db``) and now sets ``EVENNIA_AI_MEM0_CONFIG`` (pgvector)
and ``EVENNIA_AI_KEYWORD_INDEX`` (PostgreSQL) brings its NPCs' memories across with
``ailtm/copy`` (:class:`evennia_ai.commands.memory.CmdAILongTerm`), which runs
:func:`copy_embedded_memories` in a thread:

- every keyword document (every NPC, every kind, superseded marks included) is written to the
  configured keyword index;
- every vector of the embedded Qdrant is written to mem0's configured vector store with its
  payload, under the same id. The vector itself is reused when the configured embedder is the
  embedded one (same model, same dimensions); otherwise the text is embedded again;
- a memory the keyword index holds but Qdrant does not (stored while the game had no embedder)
  is embedded and written to the vector store too, with the payload mem0 would have given it.

Running it again copies nothing twice: documents are written by id, and a vector the store
already holds is left alone. The embedded files are only read (delete them yourself once the
copy is checked).

Example:
    report = copy_embedded_memories(longterm.get_memory(), progress=print)
    print(report.summary())
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from evennia_ai import conf
from evennia_ai.llm.errors import reason
from evennia_ai.memory import longterm, longterm_config, mem0_adapter
from evennia_ai.memory.keyword_index import DEFAULT_KIND, KeywordDoc, KeywordIndex

BATCH = 500
EMBED_BATCH = 32  # texts embedded in one run (sentence-transformers' default batch)
MAX_FAILURES_SHOWN = 5


class CopyRefused(RuntimeError):
    """Nothing can be copied (the message says why and what to set)."""


@dataclass
class CopyReport:
    """What :func:`copy_embedded_memories` did."""

    keyword_docs: int = 0
    vectors_copied: int = 0
    vectors_embedded: int = 0
    vectors_present: int = 0
    keyword_only: int = 0
    npcs: set = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    vector_note: str = ""
    seconds: float = 0.0

    def summary(self) -> str:
        """The report in a few lines, for the operator."""
        lines = [
            f"Copied the long-term memories of {len(self.npcs)} NPC(s) in {self.seconds:.1f} s:",
            f"  keyword index: {self.keyword_docs} document(s) written",
        ]
        if self.vector_note:
            lines.append(f"  vectors: not copied ({self.vector_note})")
        else:
            lines.append(
                f"  vectors: {self.vectors_copied} copied, {self.vectors_embedded} embedded "
                f"again, {self.vectors_present} already there"
            )
        if self.keyword_only:
            lines.append(
                f"  {self.keyword_only} document(s) with ids the vector store cannot take "
                "stay keyword-only"
            )
        if self.failures:
            shown = "; ".join(self.failures[:MAX_FAILURES_SHOWN])
            more = len(self.failures) - MAX_FAILURES_SHOWN
            lines.append(
                f"  {len(self.failures)} failed: {shown}"
                + (f" (and {more} more)" if more > 0 else "")
            )
        return "\n".join(lines)


def vector_id(doc_id: str) -> str | None:
    """``doc_id`` as the UUID a vector store keys on (mem0's form), or None if it is not one."""
    try:
        return str(uuid.UUID(str(doc_id)))
    except ValueError:
        return None


def copy_embedded_memories(
    memory: longterm.LongTermMemory,
    directory: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> CopyReport:
    """Copy the embedded stores of ``directory`` into ``memory``'s configured stores. Blocks
    (minutes for 100k memories): call it in a thread.

    Args:
        memory: The game's long-term memory, configured with the target stores.
        directory: The data folder holding ``keyword.db`` and ``qdrant`` (default: the game's).
        progress: Called with a line of progress now and then.

    Raises:
        CopyRefused: The configured stores are the embedded ones, or there is nothing to copy.
    """
    started = time.monotonic()
    directory = directory or longterm_config.data_dir()
    progress = progress or (lambda line: None)
    keyword_path = os.path.join(directory, "keyword.db")
    qdrant_path = os.path.join(directory, "qdrant")
    if not longterm_config.keyword_index_settings() and not conf.get("EVENNIA_AI_MEM0_CONFIG"):
        raise CopyRefused(
            "the configured stores are the embedded ones: set EVENNIA_AI_MEM0_CONFIG (pgvector) "
            "and EVENNIA_AI_KEYWORD_INDEX (postgres) first (docs/memory.md)"
        )
    if not os.path.isfile(keyword_path) and not os.path.isdir(qdrant_path):
        raise CopyRefused(f"there are no embedded memories in {directory}")
    memory.ensure_ready()
    report = CopyReport()
    if not memory.vector_ready:
        report.vector_note = memory.reason or "the vector store is not ready"
    elif _store_path(memory.config) == os.path.abspath(qdrant_path):
        report.vector_note = "the configured vector store is the embedded one"
    pending = _copy_keyword_docs(memory, keyword_path, report, progress)
    if not report.vector_note:
        copier = _VectorCopier(memory, report)
        if os.path.isdir(qdrant_path):
            copier.copy_qdrant(qdrant_path, pending, progress)
        copier.embed_docs(list(pending.values()), progress)
    report.seconds = time.monotonic() - started
    return report


def _copy_keyword_docs(memory, path: str, report: CopyReport, progress) -> dict[str, KeywordDoc]:
    """Write every document of the SQLite index to the configured one; returns the memories
    (by vector id) whose vectors are still to be found."""
    pending: dict[str, KeywordDoc] = {}
    if not os.path.isfile(path):
        return pending
    target = memory.keyword_index()
    if os.path.abspath(getattr(target, "path", "")) == os.path.abspath(path):
        progress("The keyword index is the embedded one already: its documents stay.")
        target = None
    source = KeywordIndex(path)
    try:
        total = source.count()
        for batch in source.batches(BATCH):
            docs = [_keyed(doc) for doc in batch]
            if target is not None:
                report.keyword_docs += target.upsert_many(docs)
            for doc in docs:
                report.npcs.add(doc.npc)
                if doc.kind != DEFAULT_KIND:
                    continue
                if vector_id(doc.id) is None:
                    report.keyword_only += 1
                else:
                    pending[doc.id] = doc
            progress(f"Keyword index: {min(report.keyword_docs, total)} of {total} documents.")
    finally:
        source.close()
    return pending


def _keyed(doc: KeywordDoc) -> KeywordDoc:
    """``doc`` under its id in mem0's form (a keyword-only memory's id is a bare hex UUID)."""
    key = vector_id(doc.id) if doc.kind == DEFAULT_KIND else None
    if key is None or key == doc.id:
        return doc
    return KeywordDoc(**{**doc.to_dict(), "id": key})


class _VectorCopier:
    """Writes vectors to mem0's configured store, reusing the embedded ones when they fit."""

    def __init__(self, memory, report: CopyReport):
        self.mem0 = memory.memory
        self.store = memory.memory.vector_store
        self.report = report
        self.reuse = _same_embedder(memory.config or {})

    def copy_qdrant(self, path: str, pending: dict[str, KeywordDoc], progress) -> None:
        """Write every point of the embedded Qdrant in ``path``; found ones leave ``pending``."""
        from qdrant_client import QdrantClient  # imported with mem0, only when it is used

        client = QdrantClient(path=path)
        try:
            if not client.collection_exists(longterm_config.COLLECTION):
                return
            total = client.count(longterm_config.COLLECTION).count
            done, offset = 0, None
            while True:
                points, offset = client.scroll(
                    collection_name=longterm_config.COLLECTION,
                    limit=BATCH,
                    offset=offset,
                    with_payload=True,
                    with_vectors=True,
                )
                for point in points:
                    point_id = str(point.id)
                    pending.pop(point_id, None)
                    payload = dict(point.payload or {})
                    self.report.npcs.add(str(payload.get("agent_id") or "?"))
                    vector = mem0_adapter.dense(point.vector) if self.reuse else None
                    self.write(point_id, payload, vector)
                done += len(points)
                progress(f"Vectors: {done} of {total}.")
                if offset is None:
                    return
        finally:
            client.close()

    def embed_docs(self, docs: list[KeywordDoc], progress) -> None:
        """Embed and write the memories only the keyword index held, :data:`EMBED_BATCH` texts
        to one run of the embedder."""
        for start in range(0, len(docs), EMBED_BATCH):
            chunk = [
                (doc.id, mem0_payload(doc))
                for doc in docs[start : start + EMBED_BATCH]
                if not self.present(doc.id)
            ]
            vectors = self.embed_many([str(payload.get("data") or "") for _, payload in chunk])
            for (point_id, payload), vector in zip(chunk, vectors):
                self.write(point_id, payload, vector, embedded=True, checked=True)
            done = min(start + EMBED_BATCH, len(docs))
            if done // BATCH > start // BATCH or done == len(docs):
                progress(f"Keyword-only memories embedded: {done} of {len(docs)}.")

    def present(self, point_id: str) -> bool:
        """Whether the configured store holds ``point_id`` already (counted in the report); a
        failed look-up counts as absent (the write then reports the failure)."""
        try:
            found = self.store.get(point_id) is not None
        except Exception:
            return False
        self.report.vectors_present += found
        return found

    def embed_many(self, texts: list[str]) -> list:
        """The texts' vectors through mem0's embedder, in one batch where it has them; a batch
        that fails gives Nones (each text is then embedded alone, its failure reported)."""
        batch = getattr(self.mem0.embedding_model, "embed_batch", None)
        if callable(batch):
            try:
                return list(batch(texts, "add"))
            except Exception:  # one bad text must not stop the copy: embed one at a time
                pass
        return [None] * len(texts)

    def write(
        self, point_id: str, payload: dict, vector, embedded: bool = False, checked: bool = False
    ) -> None:
        """Write one point unless the store holds it (``checked``: the caller looked already);
        ``vector`` None embeds its text; ``embedded`` counts a given vector as embedded here."""
        try:
            if not checked and self.present(point_id):
                return
            if vector is None:
                vector = self.mem0.embedding_model.embed(str(payload.get("data") or ""), "add")
                embedded = True
            if embedded:
                self.report.vectors_embedded += 1
            else:
                self.report.vectors_copied += 1
            self.store.insert(vectors=[list(vector)], payloads=[payload], ids=[point_id])
        except Exception as err:  # one bad memory must not stop the copy
            self.report.failures.append(f"{point_id}: {reason(err)}")


def _store_path(config: dict | None) -> str:
    """The folder of an embedded Qdrant vector store ("" for any other store)."""
    store = (config or {}).get("vector_store") or {}
    options = store.get("config") or {}
    if store.get("provider", "qdrant") != "qdrant" or not options.get("path"):
        return ""
    return os.path.abspath(options["path"])


def _same_embedder(config: dict) -> bool:
    """Whether the configured embedder is the embedded default's (its vectors can be reused)."""
    if not longterm_config.local_embedder_installed():
        return False
    # the same model, whichever of its runtimes embeds (ONNX Runtime or sentence-transformers)
    return longterm_config.is_local_embedder(config.get("embedder"))


def mem0_payload(doc: KeywordDoc) -> dict:
    """The payload mem0 gives a memory stored as given (``infer=False``) for ``doc``."""
    from mem0.utils.lemmatization import lemmatize_for_bm25  # mem0 is imported when used

    created = doc.time or datetime.now(timezone.utc).isoformat()
    payload = {
        "data": doc.text,
        "hash": hashlib.md5(doc.text.encode()).hexdigest(),
        "created_at": created,
        "updated_at": created,
        "agent_id": doc.npc,
        "source": doc.source,
        "trust": doc.trust,
        "time": doc.time,
        "person_name": doc.person_name,
        "kind": doc.kind,
        "text_lemmatized": lemmatize_for_bm25(doc.text),
    }
    if doc.person:
        payload["user_id"] = doc.person
    return payload
