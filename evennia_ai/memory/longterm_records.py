"""Long-term memory's records: a memory as stored, a consolidation's outcome, and the
conversions between them, the keyword index's documents and search hits.

Pure data and pure functions (no store is opened); :mod:`evennia_ai.memory.longterm_store` writes
and reads them, and :mod:`evennia_ai.memory.longterm` re-exports the public ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from evennia_ai.memory import gate
from evennia_ai.memory.keyword_index import KeywordDoc, KeywordIndexUnavailable
from evennia_ai.memory.search import MemoryHit, Searcher
from evennia_ai.workspace.journal import TRUST

MAX_TEXT = 2000  # characters of one memory
DEFAULT_SOURCE = "inferred"
TRANSCRIPT = "transcript"  # the kind of a consolidation item holding a conversation


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


def trust_of(source: str) -> float:
    """The trust of a journal source (``told_directly`` 0.9 ... ``inferred`` 0.3)."""

    return TRUST.get(source, TRUST[DEFAULT_SOURCE])


def clean_text(text: Any) -> str:
    """``text`` on one line, at most :data:`MAX_TEXT` characters.

    Raises:
        ValueError: If it is empty.
    """
    value = " ".join(str(text or "").split())
    if not value:
        raise ValueError("There is nothing to remember: the text is empty.")
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "\u2026"


def keyword_doc(memory: StoredMemory) -> KeywordDoc:
    """``memory`` as the keyword index stores it."""
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


def hit_from_doc(doc: KeywordDoc, score: float) -> MemoryHit:
    """A keyword index document as a search hit with ``score``."""
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


def keyword_searcher(
    open_index: Callable[[], Any],
    npc: str,
    query: str,
    person: str | None,
    vector_side: bool,
) -> Searcher:
    """The keyword side of a search of ``npc``'s memories: ``fetch(n) -> hits``.

    Args:
        open_index: Returns the keyword index, a :class:`KeywordIndexBase` (raises
            KeywordIndexUnavailable).
        npc: The NPC's dbref.
        query: Plain text.
        person: Only memories about this dbref, or None.
        vector_side: Whether the search has a vector side: an unavailable keyword index then
            finds nothing instead of raising.
    """

    def keyword(n: int) -> list[MemoryHit]:
        try:
            index = open_index()
        except KeywordIndexUnavailable:
            if vector_side:
                return []  # hybrid still has the vector side
            raise
        return [
            hit_from_doc(hit.doc, hit.score)
            for hit in index.search(npc, query, person=person, limit=n)
        ]

    return keyword


def consolidation_item(value: Any) -> dict | None:
    """One text to consolidate (a string or a journal-entry dict) as ``text``, ``source``,
    ``trust``, ``time`` and ``kind``; None when it has no text."""
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
