"""The ``semantic_memories`` context source: what the NPC remembers about the pending event.

For each tick with a pending event, the long-term memory is searched for the event's text (top-k
and threshold from settings, ``auto`` mode) in a thread, and the hits are rendered as::

    ## Things you remember
    - Bob owes Alice five gold coins (about Bob; told directly, trust 0.9; 2026-01-01)

The source never holds a tick up: until long-term memory has finished initialising it returns
"" at once (starting the initialisation, in a running server, if nothing has), and a search that
takes longer than :data:`SEARCH_TIMEOUT` seconds, or fails, renders as "".

The vector side waits for the query's embedding (begun when the line was heard, shared by every
NPC hearing it: :func:`evennia_ai.memory.longterm.embed_ahead`) only until
``EVENNIA_AI_RECALL_DEADLINE_MS`` after the source starts; past it the memories found by keyword
are shown, and ``longterm.status()["recall"]`` counts the miss.

The memories shown are noted as recalled (:func:`evennia_ai.memory.gate.note_recalled`), so the
quality gate does not store them again when the NPC restates them.

Import this module to register the source (the tick imports it with the built-in sources).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from evennia.utils import logger
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure

from evennia_ai import conf
from evennia_ai.memory import gate, longterm
from evennia_ai.memory.query_vectors import recall_deadline
from evennia_ai.memory.search import MemoryHit, SearchOutcome
from evennia_ai.prompt.builder import ContextBuilder, register_source
from evennia_ai.utils import fence_section, log_prefix
from evennia_ai.wording import LONGTERM_HEADING as HEADER

SEARCH_TIMEOUT = 5.0  # seconds a tick waits for its memory search


def recall_mode() -> str:
    """``EVENNIA_AI_RECALL_MODE``: one of :data:`~evennia_ai.memory.search.MODES` (another
    value is logged once by :mod:`evennia_ai.conf` and ``auto`` used)."""
    return conf.get_str("EVENNIA_AI_RECALL_MODE")


def render_memories(hits: Iterable[MemoryHit] | None) -> str:
    """Hits as the prompt section ("" when there are none).

    Args:
        hits: :class:`~evennia_ai.memory.search.MemoryHit` objects, best first.
    """
    lines = []
    for hit in hits or []:
        text = " ".join(str(hit.text or "").split())
        if not text:
            continue
        details = []
        if hit.person_name or hit.person:
            details.append(f"about {hit.person_name or hit.person}")
        provenance = str(hit.source or "").replace("_", " ")
        if hit.trust is not None:
            provenance = (
                f"{provenance}, trust {hit.trust:g}" if provenance else f"trust {hit.trust:g}"
            )
        if provenance:
            details.append(provenance)
        if hit.time:
            details.append(str(hit.time)[:10])
        lines.append(f"- {text}" + (f" ({'; '.join(details)})" if details else ""))
    return HEADER + "\n" + "\n".join(lines) if lines else ""


def query_text(builder: ContextBuilder) -> str:
    """The text searched for: the pending events as the NPC reads them."""

    if builder.batch:
        return builder.batch_text
    return str(builder.extra.get("pending_event", "") or "")


@register_source("semantic_memories", threaded=True)
def semantic_memories(builder: ContextBuilder) -> Deferred[str] | str:
    """Long-term memories relevant to the pending event (a Deferred, or "" at once)."""

    if not longterm.is_ready():
        # Initialisation is started by evennia_ai.startstop, EVENNIA_AI_MEMORY_INIT_DELAY
        # seconds after server start, never from a tick (it imports torch for seconds).
        return ""
    query = query_text(builder)
    if not query.strip():
        return ""

    def failed(failure: Failure) -> str:
        logger.log_err(
            f"{log_prefix(builder.npc)}: recalling memories failed or was slow: "
            f"{failure.getErrorMessage()}"
        )
        return ""

    def render(outcome: SearchOutcome) -> str:
        gate.note_recalled(builder.npc, [hit.text for hit in outcome.hits])
        return fence_section(render_memories(outcome.hits), "long-term memory")

    deadline = recall_deadline()  # before the thread hop: a busy pool counts against it
    deferred = longterm.recall(builder.npc.dbref, query, mode=recall_mode(), deadline=deadline)
    deferred.addTimeout(SEARCH_TIMEOUT, cast(IReactorTime, reactor))
    return deferred.addCallback(render).addErrback(failed)
