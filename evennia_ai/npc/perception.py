"""Perception: what an assistant notices, turned into queued events.

An assistant perceives exactly what a player standing in its room would, because it listens to
the messages Evennia delivers to it (``at_msg_receive``) and to things moved into its inventory
(``at_object_receive``). It cannot perceive other rooms or whispers to others: Evennia never
delivers those to it. What it perceives becomes:

- an :class:`~evennia_ai.memory.events.Event` in its persistent queue, for speech (``say``) and
  poses/emotes that wake it, whispers to it, arrivals and departures, and things given to it
  (another AI NPC's arrival or departure with no player in the room is only seen: a line in
  its context buffer, so NPCs walking their routines past each other call no model);
- for a whisper that passed its speaker's flood check, also an entry in the bounded
  ``private_whispers`` list (:mod:`evennia_ai.tools.safety`, bounded per whisperer), so the
  assistant's speech tools never repeat it to anyone else (the tick that answers it runs in a
  later reactor turn, after it is remembered);
- a line in its context buffer, for speech it only hears and anything else it sees in its
  room;
- for a player's plain "yes" or "no" (``EVENNIA_AI_TRADE_YES_WORDS`` / ``_NO_WORDS``) while an
  offer of the NPC waits for them: the answer, at once and without a model call
  (:func:`evennia_ai.npc.trade_answers.answer_line`); the NPC hears the line and the outcome.

Open speech (``say``, ``pose``) goes through its room's floor (:mod:`evennia_ai.engine.floor`):
one decision per line, shared by every AI NPC that hears it, says which of them it wakes (the
ones named in it; for a line naming nobody, the one its speaker talked with last, else the
room's host, else one chosen by the speaker; a question always wakes one) and why. A woken NPC
queues the line as an event, its reason in ``data["floor"]``, and starts a tick at once; an
AI NPC's line is answered after any player's (a lower priority), and only while the room's NPC
talk has lines left (``EVENNIA_AI_NPC_EXCHANGE_TURNS`` since a player last spoke there). An NPC
not woken only hears the line (``npc.ai.hear``: no queue write, no tick, no embedding) and
notes why for its next trace. Whispers and pages are for their one NPC: they bypass the floor
(a player's whisper starts the room's NPC talk again), and like every queued line they pass the
speaker's flood limit.

A line that starts a tick also starts its query embedding for that tick's recall, off the
reactor (:func:`evennia_ai.memory.longterm.embed_ahead`): keyed by the line as the NPC reads it,
so every NPC reading it alike shares one embedding.
"""

from __future__ import annotations

import re
import time

from evennia.utils.ansi import strip_ansi

from evennia_ai import conf
from evennia_ai.engine import audience, floor
from evennia_ai.memory import longterm
from evennia_ai.memory.events import (
    PRIORITY_ADDRESSED,
    PRIORITY_ADDRESSED_BY_NPC,
    Event,
    render_events,
)
from evennia_ai.npc import answering, trade_answers
from evennia_ai.tools import safety
from evennia_ai.utils import is_assistant

MOVE_TYPES = {"move", "traverse", "teleport", "follow", "flee", "portal"}
SPEECH_TYPES = {
    "say": "say",
    "whisper": "whisper",
    "page": "page",
    "tell": "page",
    "pose": "pose",
    "emote": "pose",
}
# Private kinds reach the NPC wherever the sender is.
PRIVATE_KINDS = ("whisper", "page")
_PAGE_PREFIX = re.compile(r"^\s*[^:]{0,80}?\bpages(?: you)?\s*:\s*", re.I)

_QUOTED = re.compile(r'"(.+)"', re.S)


# The last text made plain, and the last line read as speech: one delivery hands every
# listener of a line the same text, so the other listeners find it here.
_last_plain: list = [None, ""]
_last_speech: list = [None, ("", "")]


def _plain(text: str) -> str:
    """``text`` without its markup, stripped (the last one remembered)."""
    if type(text) is not str:  # a str subclass (ANSIString) may compare by its clean text
        return strip_ansi(text).strip()
    if text == _last_plain[0]:
        return _last_plain[1]
    plain = strip_ansi(text).strip()
    _last_plain[:] = [text, plain]
    return plain


def _speech(kind: str, plain: str) -> tuple[str, str]:
    """A say's or pose's content (a say's speech, a pose's whole text) and the whole line,
    each on one line (the last one remembered)."""
    key = (kind, plain)
    if key == _last_speech[0]:
        return _last_speech[1]
    read = (one_line(_speech_content(plain) if kind == "say" else plain), one_line(plain))
    _last_speech[:] = [key, read]
    return read


def _text_and_type(text) -> tuple[str, str | None]:
    """Split Evennia's ``text`` argument into plain text and its message type."""
    msg_type = None
    if isinstance(text, (tuple, list)):
        if len(text) > 1 and isinstance(text[1], dict):
            msg_type = text[1].get("type")
        text = text[0] if text else ""
    if text is None:
        return "", msg_type
    return _plain(str(text)), msg_type


def _speech_content(text: str) -> str:
    match = _QUOTED.search(text)
    return match.group(1).strip() if match else text


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) made one space.

    What a character says is one line: a player typing line breaks (``|/``) into speech must
    not be able to start lines in the assistant's prompt that look like its own sections
    ("## Operator instructions").
    """
    return " ".join(str(text or "").split())


def _present_ids(npc, exclude=None) -> set:
    present = npc.ndb.ai_present
    if present is None:
        location = npc.location
        present = {
            obj.id for obj in (location.contents if location else []) if obj not in (npc, exclude)
        }
        npc.ndb.ai_present = present
    return present


def reset_presence(npc) -> None:
    """Note who is present now (after the NPC moved, was created or loaded after a reload)."""
    location = npc.location
    npc.ndb.ai_present = {obj.id for obj in (location.contents if location else []) if obj != npc}


def _remember_whisper(npc, source, name: str, content: str) -> None:
    """Keep a whisper's text so the speech tools never repeat it to others (one write).

    Only for a whisper that passed its speaker's flood check (``npc.ai.perceive`` queued it).
    """

    if safety.is_guarded(content):
        npc.ai.update(
            safety.STATE_KEY,
            lambda whispers: safety.remember_whisper(whispers, source, name, content),
        )


def embed_for_recall(event: Event) -> bool:
    """Start embedding what the tick answering ``event`` will recall memories for: the event as
    the NPC reads it (the tick's batch text when the line is answered alone). Every NPC that
    reads the line alike shares the one embedding; it runs in a thread, never here.

    Returns:
        Whether an embedding was started or shared.
    """
    return longterm.embed_ahead(render_events([event]), conf.get_str("EVENNIA_AI_RECALL_MODE"))


def perceive_message(npc, text, from_obj, kwargs: dict) -> None:
    """Handle one message delivered to the NPC (see module docstring)."""

    location = npc.location
    if from_obj is None or location is None or from_obj == npc:
        return
    if not npc.ai.enabled:
        return
    plain, msg_type = _text_and_type(text)
    if not plain:
        return
    same_room = getattr(from_obj, "location", None) == location
    kind = SPEECH_TYPES.get(msg_type or "")
    if kind and same_room and kind not in PRIVATE_KINDS:  # open speech, the most common
        perceive_speech(npc, from_obj, kind, plain)
        return
    source = getattr(from_obj, "dbref", None)
    name = getattr(from_obj, "key", None) or str(from_obj)

    if msg_type in MOVE_TYPES and same_room:
        if audience.is_player(from_obj):
            audience.note_audience(npc)
        present = _present_ids(npc, exclude=from_obj)
        lowered = plain.lower()
        leaving_words = any(word in lowered for word in ("leav", "depart", "heading for"))
        if (from_obj.id in present and "arriv" not in lowered) or (
            from_obj.id not in present and leaving_words
        ):
            present.discard(from_obj.id)
            kind = "depart"
        else:
            present.add(from_obj.id)
            kind = "arrive"
        if is_assistant(from_obj) and not audience.players_in_earshot(npc):
            # another AI NPC coming or going with no player here (a routine's walk): seen, not
            # answered, as NPCs' talk is only heard (no tick, no model call)
            npc.ai.remember_ambient(one_line(plain), source=source)
            return
        npc.ai.perceive(
            Event.create(
                kind=kind, text=plain, source=source, source_name=name, location=location.dbref
            )
        )
        return

    if kind in PRIVATE_KINDS:
        if kind == "whisper":
            content = one_line(_speech_content(plain))
        else:  # "Mira pages: the cellar key is under the mat"
            content = one_line(_PAGE_PREFIX.sub("", plain, count=1))
        event = Event.create(
            kind=kind,
            text=content,
            source=source,
            source_name=name,
            location=npc.location.dbref,
            addressed=True,
            data={"raw": plain, "private": True},
        )
        if kind == "whisper":
            floor.player_whispered(npc, from_obj)
        queued = npc.ai.perceive(event)
        if queued is not False:  # a flood is not remembered: it cannot push a secret out
            _remember_whisper(npc, source, name, content)
            embed_for_recall(event)
        return
    if same_room or msg_type is None:
        npc.ai.remember_ambient(one_line(plain), source=source)


def _dropped_as_flood(npc, decision, source, name: str) -> None:
    """The line would have woken ``npc`` but its speaker flooded the room: noted for the NPC's
    next trace as its own floods are ("dropped 3 event(s) from Alice"); the first such NPC
    tells the speaker, at most once a minute per room (``decision.tell_flood``) and per NPC
    (:func:`answering.tell_flooded`)."""
    floods = dict(npc.ndb.ai_floods or {})
    floods[name] = floods.get(name, 0) + 1
    npc.ndb.ai_floods = floods
    if not (decision.tell_flood and source):
        return
    first = next(key for key, why in decision.heard.items() if why == floor.FLOODED)
    if first == npc.id:
        limit = conf.get_int("EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE")
        answering.tell_flooded(npc, source, name, limit, time.monotonic())


def perceive_speech(npc, speaker, kind: str, plain: str) -> None:
    """Open speech (a say or pose) by ``speaker`` in ``npc``'s room: queued and answered when
    the room's floor wakes the NPC for it (:func:`evennia_ai.engine.floor.decide`), else only
    heard (``npc.ai.hear``: no queue write, tick or embedding)."""
    content, line = _speech(kind, plain)
    if kind == "say" and trade_answers.answer_line(npc, speaker, content, line):
        return  # a plain yes or no to its offer: answered now, heard, no model call
    decision = floor.decide(npc, speaker, kind, content)
    source = getattr(speaker, "dbref", None)
    name = getattr(speaker, "key", None) or str(speaker)
    if decision.from_player:
        audience.note_audience(npc)
    why = floor.reason(npc, decision)
    if why is None:
        heard = decision.heard.get(npc.id, "not addressed")
        if decision.flooded:  # seen, not kept: a flood never fills the NPCs' histories
            npc.ai.remember_ambient(line, source=source)
        else:
            npc.ai.hear(line, source=source, line=decision)
        if heard == floor.FLOODED:
            _dropped_as_flood(npc, decision, source, name)
        else:
            floor.note_heard(npc, name, heard)
        return
    from_assistant = is_assistant(speaker)
    event = Event.create(
        kind=kind,
        text=content,
        source=source,
        source_name=name,
        location=npc.location.dbref,
        addressed=floor.is_addressing(why),
        priority=PRIORITY_ADDRESSED_BY_NPC if from_assistant else PRIORITY_ADDRESSED,
        data={"raw": plain, "from_assistant": from_assistant, "floor": why},
    )
    if npc.ai.perceive(event, immediate=True) is not False:
        embed_for_recall(event)
    else:  # its own flood limit or a full queue dropped it: nobody waits for its answer
        floor.not_taken(npc)


def perceive_received(npc, moved_obj, source_location, move_type) -> None:
    """Something was moved into the NPC's inventory: a gift when a character gave it."""

    if move_type != "give" or not npc.ai.enabled:
        return
    giver = source_location
    name = getattr(giver, "key", "someone")
    npc.ai.perceive(
        Event.create(
            kind="give",
            text=f"{name} gives you {moved_obj.get_display_name(npc)}.",
            source=getattr(giver, "dbref", None),
            source_name=name,
            location=npc.location.dbref if npc.location else None,
            addressed=True,
            data={"object": moved_obj.dbref},
        )
    )
