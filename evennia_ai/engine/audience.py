"""Who is listening: players within earshot, and exchanges between AI NPCs.

An assistant's work that nobody asked for (autonomous ticks, reflection) is only worth its
tokens when a player may see its effects, and two assistants answering each other must not talk
forever. This module keeps the two facts the tick and perception need, in ``ndb`` (they are
about the last minutes, so a reload may forget them):

- **audience**: when a player was last within earshot of the NPC (in its room, connected).
  :func:`has_audience` is true while a player is there, and for
  ``EVENNIA_AI_AUDIENCE_WINDOW`` seconds after one was last seen or heard.
- **NPC turns**: how many lines another AI NPC addressed to this NPC were answered since a
  player last spoke in its room. At ``EVENNIA_AI_NPC_EXCHANGE_TURNS`` the NPC stops answering
  them (they still reach its context buffer) until a player speaks again.

It also tells the players waiting for an answer what is happening
(:func:`waiting_speakers`, :func:`tell_speakers`): the NPC is thinking, or cannot answer.

Example::

    if not is_assistant(speaker):
        player_spoke(npc, speaker)       # a player's line: the exchange count starts again
    elif take_npc_turn(npc):             # another NPC's addressed line: answer it, or not
        ...
"""

from __future__ import annotations

import time

from evennia.utils.search import search_object

from evennia_ai import conf
from evennia_ai.utils import is_assistant


def is_player(obj) -> bool:
    """Whether ``obj`` is a character a connected player is puppeting (not an AI NPC)."""
    if obj is None or is_assistant(obj):
        return False
    try:
        return bool(obj.has_account)
    except Exception:  # a half-deleted object
        return False


def players_in_earshot(npc) -> list:
    """The players in ``npc``'s room now."""
    location = getattr(npc, "location", None)
    if location is None:
        return []
    return [obj for obj in location.contents if obj is not npc and is_player(obj)]


def note_audience(npc) -> None:
    """A player is within earshot of ``npc`` now."""
    npc.ndb.ai_audience_at = time.time()


def player_spoke(npc, speaker) -> None:
    """Someone who is not an AI NPC spoke in ``npc``'s room: NPC exchanges may start again.

    A connected player is also an audience.
    """
    if is_player(speaker):
        note_audience(npc)
    npc.ndb.ai_npc_turns = 0


def last_audience(npc) -> float | None:
    """When a player was last within earshot (epoch seconds; now when one is there)."""
    if players_in_earshot(npc):
        note_audience(npc)
    return npc.ndb.ai_audience_at


def has_audience(npc, window: float | None = None) -> bool:
    """Whether a player is within earshot of ``npc``, or was in the last ``window`` seconds.

    Args:
        npc: The assistant.
        window: Seconds an audience counts after it left; None reads
            ``EVENNIA_AI_AUDIENCE_WINDOW``.
    """
    seen = last_audience(npc)
    if seen is None:
        return False
    if window is None:
        window = conf.get_float("EVENNIA_AI_AUDIENCE_WINDOW")
    return time.time() - seen <= window


def take_npc_turn(npc) -> bool:
    """Count one answer to another AI NPC's addressed line; False when the exchange must end.

    ``EVENNIA_AI_NPC_EXCHANGE_TURNS`` answers are allowed since a player last spoke in the
    room (0: AI NPCs never answer each other).
    """
    limit = conf.get_int("EVENNIA_AI_NPC_EXCHANGE_TURNS")
    turns = int(npc.ndb.ai_npc_turns or 0)
    if turns >= limit:
        return False
    npc.ndb.ai_npc_turns = turns + 1
    return True


def waiting_speakers(npc, events) -> list:
    """The characters waiting for ``npc``'s answer to ``events``: those who spoke to it.

    Speech, whispers and pages addressed to it by anyone but another AI NPC; each speaker
    once, in the order they spoke, found in the NPC's room or (a page) anywhere.
    """
    location = getattr(npc, "location", None)
    here = {obj.dbref: obj for obj in (location.contents if location else [])}
    found, seen = [], set()
    for event in events:
        if (
            event.event_class != "communication"
            or not event.addressed
            or (event.data or {}).get("from_assistant")
            or not event.source
            or event.source in seen
        ):
            continue
        seen.add(event.source)
        speaker = here.get(event.source)
        if speaker is None:
            matches = search_object(event.source)
            speaker = matches[0] if matches else None
        if speaker is not None and not is_assistant(speaker):
            found.append(speaker)
    return found


def tell_speakers(npc, speakers, setting: str) -> int:
    """Send the line of ``setting`` (a template with ``{name}``) to each of ``speakers``.

    The line is the operator's text with the NPC's name; returns how many were told (0 when the
    setting is empty).
    """
    template = conf.get_str(setting)
    if not template or not speakers:
        return 0
    try:
        line = template.format(name=npc.get_display_name(speakers[0]))
    except (KeyError, IndexError, ValueError):
        line = template
    for speaker in speakers:
        speaker.msg(line)
    return len(speakers)
