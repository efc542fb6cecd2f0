"""Why an NPC is not answering, said in words to staff and to the speakers it leaves waiting.

- :func:`not_answering`: the one "why this NPC is not answering" status, shared by
  ``aistatus``, ``ainpc/list`` and the dashboard (``npc.ai.status()["not_answering"]``): the
  endpoint of its model is unreachable (:mod:`evennia_ai.engine.outages`), its operator's word
  cannot be read (``npc.ai.held()``), or it is past a daily budget in ``silence`` or
  ``message`` mode (in ``offline`` mode it answers, with the offline model).
- :func:`flooded`: whether an event passes its speaker's rate
  (``EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE``); :func:`tell_flooded`: a speaker whose lines the
  per-speaker rate limit
  (``EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE``) drops is told so
  (``EVENNIA_AI_FLOOD_MESSAGE``), and the log says it, at most once a minute per speaker and
  NPC (``npc.ndb.ai_flood_told``: about the last minute, so a reload may forget it).

- :func:`tell_dropped`: a line addressed to the NPC that its full queue
  (``EVENNIA_AI_EVENT_QUEUE_SIZE``) dropped is logged, and its speaker, if never told yet,
  gets ``EVENNIA_AI_UNAVAILABLE_MESSAGE``: no line said to an NPC is dropped silently.

Example::

    for reason in npc.ai.not_answering():
        print(reason.label)   # 'model unreachable since 10:42 UTC'
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine import audience, outages
from evennia_ai.engine.accounting import SpendingStatus
from evennia_ai.memory.events import Event
from evennia_ai.utils import log_prefix

#: Seconds between two notices to one speaker that an NPC drops their lines (its flood limit).
FLOOD_NOTICE_SECONDS = 60.0


@dataclass(frozen=True)
class NotAnswering:
    """One reason an NPC does not answer with its model now.

    Attributes:
        label: A few words for a badge or a table cell (``model unreachable since 10:42 UTC``).
        detail: The whole reason, for ``aistatus`` and the NPC's page.
    """

    label: str
    detail: str


def not_answering(handler, over: SpendingStatus) -> list[NotAnswering]:
    """Why the NPC of ``handler`` (its ``npc.ai``) does not answer with its model now.

    Args:
        handler: The NPC's ``.ai`` handler (its model is read).
        over: Its spending status (held reasons included).

    Returns:
        The reasons, the outage first; empty when it answers.
    """
    reasons = []
    offline = over.exceeded and over.action == "offline"  # no endpoint is called then
    outage = None if offline else outages.BOARD.unreachable(handler.model or None)
    if outage is not None:
        reasons.append(
            NotAnswering(
                outage.describe(),
                f"{outage.describe()}: {outage.endpoint} failed {outage.failures} calls in a "
                f"row (last: {outage.last_error}); it answers lines said meanwhile when the "
                "model is back",
            )
        )
    for why in over.held:
        reasons.append(NotAnswering("held", f"held: {why}: no model is called until it is fixed"))
    if over.exceeded and not over.held and over.action in ("silence", "message"):
        reasons.append(NotAnswering("over budget", over.describe()))
    return reasons


def flooded(npc, event) -> bool:
    """Whether ``event`` is over its speaker's rate (``EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE``)
    for ``npc``.

    A flood is dropped without a write; the NPC's next tick's trace notes how many were
    dropped from whom (``npc.ndb.ai_floods``), so one player cannot bury the others. The
    speaker is told so (``EVENNIA_AI_FLOOD_MESSAGE``) and the log says it, at most once a
    minute per speaker (:func:`tell_flooded`).
    """
    limit = conf.get_int("EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE")
    source = getattr(event, "source", None)
    if limit <= 0 or not source or getattr(event, "event_class", "") == "system":
        return False
    now = time.monotonic()
    recent = dict(npc.ndb.ai_speaker_times or {})
    times = [t for t in recent.get(source, ()) if now - t < 60.0]
    if len(times) >= limit:
        floods = dict(npc.ndb.ai_floods or {})
        who = getattr(event, "source_name", "") or source
        floods[who] = floods.get(who, 0) + 1
        npc.ndb.ai_floods = floods
        tell_flooded(npc, source, who, limit, now)
        return True
    recent[source] = times + [now]
    npc.ndb.ai_speaker_times = recent
    return False


def tell_flooded(npc, source: str, who: str, limit: int, now: float) -> None:
    """Tell the speaker ``source`` (a dbref; ``who`` names it) that ``npc`` drops their lines,
    and log it, unless they were told less than :data:`FLOOD_NOTICE_SECONDS` ago (``now``:
    ``time.monotonic()``). Another AI NPC is not told; the log line is written anyway."""
    told = dict(npc.ndb.ai_flood_told or {})
    if now - told.get(source, now - FLOOD_NOTICE_SECONDS) < FLOOD_NOTICE_SECONDS:
        return
    told[source] = now
    npc.ndb.ai_flood_told = {k: t for k, t in told.items() if now - t < FLOOD_NOTICE_SECONDS}
    logger.log_info(
        f"{log_prefix(npc)}: dropping lines from {who}: more than {limit} in a minute "
        "(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE); they are told"
    )
    speaker = audience.find_by_dbref(audience.objects_here(npc), source)
    if audience.is_player(speaker):
        audience.tell_speakers(npc, [speaker], "EVENNIA_AI_FLOOD_MESSAGE")


def tell_dropped(npc, event: Event) -> None:
    """``npc``'s full queue dropped ``event``: if it was a line said to the NPC, log it and
    tell its speaker (unless a failed answer told them already) that it cannot answer."""
    if event.event_class != "communication" or not event.addressed or not event.source:
        return  # room chatter, arrivals: the queue drops those first, by design
    logger.log_warn(
        f"{log_prefix(npc)}: its event queue is full (EVENNIA_AI_EVENT_QUEUE_SIZE): dropped a "
        f"line from {event.source_name or event.source}"
    )
    if event.first_try:
        speakers = audience.waiting_speakers(npc, [event])
        audience.tell_speakers(npc, speakers, "EVENNIA_AI_UNAVAILABLE_MESSAGE")
