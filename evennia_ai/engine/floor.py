"""Who answers a line spoken in a room with several AI NPCs (the room's "floor").

INTERFACE STUB (session 12): the signatures below are the contract between the work packages
of issue 34; package A replaces the bodies. Until then nothing calls :func:`decide`, and the
tick-side functions keep today's behaviour (nobody waits, nothing was heard).

One decision per line, shared by every AI NPC that hears it (kept in ``room.ndb.ai_floor``):
the NPCs named in it wake; a line that names nobody wakes at most
``EVENNIA_AI_ROOM_ANSWERERS`` (the one the speaker talked with last, else the room's host, else
a deterministic choice); every question wakes one. The others only hear it (one context-buffer
append, no queue write, no tick, no embedding). AI NPCs say at most
``EVENNIA_AI_NPC_EXCHANGE_TURNS`` lines to each other per room after a player last spoke.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Reasons for waking an NPC that mean the line was addressed to it.
ADDRESSING_REASONS = ("named", "to everyone", "alone with you")


@dataclass
class Decision:
    """Who one line wakes, and why the others only hear it.

    Attributes:
        speaker: The speaker's id.
        kind: The line's kind (``say``, ``pose``).
        at: When it was decided (``time.monotonic()``).
        woken: NPC id -> why it was woken ("named", "to everyone", "alone with you",
            "talked with <speaker> last", "room host", "chosen", "named by <npc>",
            "question nobody named could answer").
        heard: NPC id -> why it was not woken ("not addressed", "named; asleep", ...).
        question: Whether the line asks something.
        flooded: Whether the speaker woke too many NPCs in this room in the last minute.
        delivered: NPC ids that already took this decision.
    """

    speaker: int
    kind: str
    at: float
    woken: dict[int, str] = field(default_factory=dict)
    heard: dict[int, str] = field(default_factory=dict)
    question: bool = False
    flooded: bool = False
    delivered: set[int] = field(default_factory=set)


@dataclass
class RoomFloor:
    """A room's recent talk (``room.ndb.ai_floor``: process memory; a reload forgets it).

    Attributes:
        last: The last line's decision.
        npc_lines: NPC-to-NPC lines woken since a player last spoke in the room.
        talked: Speaker id -> (NPC id, ``time.monotonic()``) of the NPC it last talked with.
        waiting: NPC id -> when it was woken for a player's line (until its tick ends).
        speaker_wakes: Speaker id -> when its lines woke an NPC here, over the last minute.
    """

    last: Decision | None = None
    npc_lines: int = 0
    talked: dict[int, tuple[int, float]] = field(default_factory=dict)
    waiting: dict[int, float] = field(default_factory=dict)
    speaker_wakes: dict[int, list[float]] = field(default_factory=dict)


def decide(npc, speaker, kind: str, content: str) -> Decision:
    """The decision for the line ``speaker`` just said in ``npc``'s room (made once per line)."""
    raise NotImplementedError("issue 34, package A")


def reason(npc, decision: Decision) -> str | None:
    """Why ``decision`` wakes ``npc``, or None when it only hears the line."""
    return decision.woken.get(npc.id)


def tick_ended(npc, batch) -> None:
    """``npc``'s tick ended (answered, silent, held back or failed): it no longer keeps a
    player waiting."""


def player_waiting(npc) -> bool:
    """Whether another AI NPC in ``npc``'s room was woken for a player's line and has not
    answered yet (an NPC-only batch of ``npc`` waits for it)."""
    return False


def note_heard(npc, who: str, why: str) -> None:
    """Count a line ``npc`` heard from ``who`` and was not woken by (``why``), for its next
    trace."""


def heard_notes(npc) -> list[str]:
    """The lines ``npc`` heard without being woken since its last trace, in words ("heard 3
    lines of Alice; not addressed"); reading them clears them."""
    return []


def woken_notes(batch) -> list[str]:
    """Why each event of a tick's ``batch`` woke its NPC, in words, for the trace."""
    return []


def is_host(npc) -> bool:
    """Whether ``npc`` is its room's host."""
    return False
