"""Who answers a line spoken in a room with several AI NPCs (the room's "floor").

Every AI NPC in a room hears every open line said there, but only the ones the line is for call
the model. One decision is made per line, by the first NPC that hears it, and shared by the
others (it is kept per room in process memory, a :class:`RoomFloor`; a delivery reaches every
receiver in one synchronous loop, so it is keyed on the speaker and the kind of line, not on
the text, which rpsystem renders differently for each listener):

**A. A connected player's line** (say or pose; whispers and pages bypass the floor):

1. It starts the room's NPC talk again (see B), as the player's whispers do.
2. With one AI NPC in the room and no other player, every line is for it ("alone with you").
3. The NPCs it addresses by name (:func:`~evennia_ai.engine.addressing.vocative`: "Tom,
   hello", "What's new, Tom?"; a pose: named anywhere) wake, up to
   ``EVENNIA_AI_ROOM_ANSWERERS`` + 1 when it names several (the first named). A name that
   fits several NPCs ("Guard,") is one call, taken in the order of 5. A named NPC asleep wakes
   when ``EVENNIA_AI_WAKE_WHEN_ADDRESSED`` is on; paused, it only hears the line.
4. A line to everyone ("Hello all", ``EVENNIA_AI_EVERYONE_WORDS``) wakes up to that many too.
5. A line that names nobody wakes ``EVENNIA_AI_ROOM_ANSWERERS`` NPCs (:func:`_pick`), among
   those awake and not paused: the one the speaker talked with last, within
   ``EVENNIA_AI_CONVERSATION_SECONDS``; else the room's hosts (``ainpc/host``); else one
   chosen by the speaker's id (the same NPC for the same speaker).
6. A question (a ``?``) that woke nobody still wakes one, picked the same way.
7. But when the speaker's lines woke ``EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE`` NPCs of this
   room in the last minute, it wakes nobody (a flood, however the NPCs are named): the NPCs it
   would have woken note it as dropped, and every NPC still hears it.

**B. An AI NPC's line** wakes only the first NPC it calls by name, and only while the room's
NPC talk has lines left: ``EVENNIA_AI_NPC_EXCHANGE_TURNS`` since a player last spoke there,
counted per room whatever names they use. Then NPCs only hear each other until a player speaks.

**C. Anything else** (a scripted mob, an object nobody plays) wakes only the NPCs it calls by
name (or the room's one NPC when no player is there), and does not start NPC talk again.

An NPC that is not woken only hears the line (:meth:`npc.ai.hear`: a context-buffer append, no
queue write, no tick, no embedding) and notes it for its next trace (:func:`note_heard`,
:func:`heard_notes`); a woken NPC's event carries why in ``data["floor"]``
(:func:`woken_notes`). While an NPC woken for a player's line has not answered, the other NPCs
of the room keep their NPC-only batches waiting (:func:`player_waiting`, :func:`tick_ended`),
so players are answered first.

All of it is process memory: a reload forgets who talked with whom and the NPC-talk count.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from evennia_ai import conf
from evennia_ai.engine import audience
from evennia_ai.engine.addressing import (
    is_question,
    mentioned_groups,
    to_everyone,
    vocative_groups,
)
from evennia_ai.npc_state import find_npc_state
from evennia_ai.utils import is_assistant

#: Reasons for waking an NPC that mean the line was addressed to it.
ADDRESSING_REASONS = ("named", "to everyone", "alone with you")
#: How the reason of an NPC woken by another NPC's line starts ("named by Bard").
NAMED_BY = "named by "
#: Seconds one decision is shared by the listeners of one line (one synchronous delivery).
SHARED_SECONDS = 1.0
#: Seconds over which a speaker's wakes in a room are counted against its flood limit.
FLOOD_SECONDS = 60.0
#: Seconds, beyond ``EVENNIA_AI_TIMEOUT``, an NPC woken for a player's line keeps others waiting.
WAITING_GRACE_SECONDS = 10.0
#: The heard reason of an NPC a line would have woken but for its speaker's flood.
FLOODED = "its speaker spoke too often"
_ARTICLES = ("a ", "an ", "the ")


@dataclass
class Decision:
    """Who one line wakes, and why the others only hear it.

    Attributes:
        speaker: The speaker's id.
        kind: The line's kind (``say``, ``pose``).
        at: When it was decided (``time.monotonic()``).
        woken: NPC id -> why it was woken ("named", "to everyone", "alone with you",
            "talked with <speaker> last", "room host", "chosen", "named by <npc>",
            "question nobody named could answer", "question to the room").
        heard: NPC id -> why it was not woken ("not addressed", "named; asleep", ...).
        question: Whether the line asks something.
        flooded: Whether the speaker woke too many NPCs in this room in the last minute.
        delivered: NPC ids that already took this decision.
        tell_flood: Whether the speaker is to be told that this flooded line was dropped (once
            a minute per room).
        from_player: Whether the speaker is a player's character (read once for every
            listener).
    """

    speaker: int
    kind: str
    at: float
    woken: dict[int, str] = field(default_factory=dict)
    heard: dict[int, str] = field(default_factory=dict)
    question: bool = False
    flooded: bool = False
    delivered: set[int] = field(default_factory=set)
    tell_flood: bool = False
    from_player: bool = False


@dataclass
class RoomFloor:
    """A room's recent talk (:func:`room_floor`: process memory; a reload forgets it).

    Attributes:
        last: The last line's decision.
        npc_lines: NPC-to-NPC lines woken since a player last spoke in the room.
        talked: Speaker id -> (NPC id, ``time.monotonic()``) of the NPC it last talked with.
        waiting: NPC id -> when it was woken for a player's line (until its tick ends).
        speaker_wakes: Speaker id -> when its lines woke an NPC here, over the last minute.
        flood_told: Speaker id -> when it was last told its lines here were dropped.
        room_created: When its room was created: a new room that takes the id of a deleted
            one starts with a floor of its own.
    """

    last: Decision | None = None
    npc_lines: int = 0
    talked: dict[int, tuple[int, float]] = field(default_factory=dict)
    waiting: dict[int, float] = field(default_factory=dict)
    speaker_wakes: dict[int, list[float]] = field(default_factory=dict)
    flood_told: dict[int, float] = field(default_factory=dict)
    room_created: Any = None


@dataclass
class _Line:
    """What one new decision works from (internal)."""

    floor: RoomFloor
    speaker: Any
    kind: str
    content: str
    candidates: list  # the room's enabled AI NPCs but the speaker, by id
    names_of: dict[int, list[str]]
    now: float


#: Each room's floor, by the room's id: process memory, which a reload forgets. Not in the
#: room's ``ndb``: Evennia's object cache never lets go of an object holding ``ndb`` data, so
#: every room an AI NPC ever heard a line in would stay cached, stale if it is deleted.
_FLOORS: dict[int, RoomFloor] = {}


def room_floor(room) -> RoomFloor:
    """The floor of ``room`` (made on first use)."""
    floor = _FLOORS.get(room.id)
    created = getattr(room, "db_date_created", None)
    if floor is None or floor.room_created != created:
        floor = _FLOORS[room.id] = RoomFloor(room_created=created)
    return floor


def floor_of(room) -> RoomFloor | None:
    """The floor of ``room`` if a line was decided there since the server started, else
    None."""
    room_id = getattr(room, "id", None)
    floor = _FLOORS.get(room_id) if isinstance(room_id, int) else None
    if floor is None or floor.room_created != getattr(room, "db_date_created", None):
        return None
    return floor


def forget(room=None) -> None:
    """Forget ``room``'s floor (every room's when None), as a reload does."""
    if room is None:
        _FLOORS.clear()
    else:
        _FLOORS.pop(int(getattr(room, "id", 0) or 0), None)


def decide(npc, speaker, kind: str, content: str) -> Decision:
    """The decision for the line ``speaker`` just said in ``npc``'s room (made once per line).

    The first listener of a line makes it; the others of the same delivery take it: the same
    speaker and kind within :data:`SHARED_SECONDS`, and not taken by this NPC yet (the next
    line reaches an NPC that took the last one, so it is decided anew).

    Args:
        npc: The AI NPC hearing the line.
        speaker: Who said it (in the NPC's room).
        kind: ``say`` or ``pose``.
        content: The line as ``npc`` heard it: a say's speech, a pose's whole text.
    """
    floor = room_floor(npc.location)
    now = time.monotonic()
    last = floor.last
    if (
        last is not None
        and last.speaker == speaker.id
        and last.kind == kind
        and now - last.at < SHARED_SECONDS
        and npc.id not in last.delivered
    ):
        last.delivered.add(npc.id)
        return last
    decision = _decide_new(npc, speaker, kind, content, floor, now)
    decision.delivered.add(npc.id)
    floor.last = decision
    return decision


def _decide_new(npc, speaker, kind: str, content: str, floor: RoomFloor, now: float) -> Decision:
    """A new decision (see the module docstring), made from what ``npc`` heard."""
    candidates = sorted(
        (
            obj
            for obj in npc.location.contents
            if obj is not speaker and is_assistant(obj) and _enabled(obj)
        ),
        key=lambda obj: obj.id,
    )
    line = _Line(
        floor,
        speaker,
        kind,
        content,
        candidates,
        {obj.id: names_as_seen(obj, npc, speaker) for obj in candidates},
        now,
    )
    decision = Decision(speaker=speaker.id, kind=kind, at=now, question=is_question(content, kind))
    if is_assistant(speaker):
        _npc_line(line, decision)
    elif audience.is_player(speaker):
        decision.from_player = True
        _player_line(line, decision)
    else:
        _other_line(line, decision)
    for obj in candidates:
        if obj.id not in decision.woken:
            decision.heard.setdefault(obj.id, "not addressed")
    return decision


def names_as_seen(npc, viewer, speaker) -> list[str]:
    """The names ``npc`` answers to in a line ``viewer`` heard from ``speaker``.

    Its key and aliases; in an rpsystem game (where the contrib's methods exist) also the name
    ``viewer`` sees it by (its recog or short description), its own short description (without
    "a"/"an"/"the", and its last word when that has four letters or more: "a stout barkeep"
    gives "stout barkeep" and "barkeep") and the name ``speaker`` knows it by (their recog).
    """
    names = [npc.key]
    try:
        names += [str(alias) for alias in npc.aliases.all()]
    except Exception:  # an object without aliases
        pass
    get_sdesc = getattr(viewer, "get_sdesc", None)
    if callable(get_sdesc):
        try:
            names.append(str(get_sdesc(npc) or ""))
        except Exception:  # a game's own override that fails: the other names still count
            pass
    sdesc = getattr(npc, "sdesc", None)
    if sdesc is not None and callable(getattr(sdesc, "get", None)):
        text = " ".join(str(sdesc.get() or "").split())
        for article in _ARTICLES:
            if text.lower().startswith(article):
                text = text[len(article) :]
        names.append(text)
        last = text.rsplit(" ", 1)[-1]
        if len(last) >= 4 and last.isalpha():
            names.append(last)
    recog = getattr(speaker, "recog", None)
    if recog is not None and callable(getattr(recog, "get", None)):
        try:
            names.append(str(recog.get(npc) or ""))
        except Exception:
            pass
    return [name for name in dict.fromkeys(names) if name and name.strip()]


def _enabled(obj) -> bool:
    state = find_npc_state(obj)
    return state is not None and bool(state.enabled)


def _unable(obj) -> str | None:
    """Why ``obj`` cannot answer now ("asleep", "paused"), or None."""
    state = find_npc_state(obj)
    if state is None:
        return "gone"
    if state.paused:
        return "paused"
    if (state.sleep or {}).get("asleep"):
        return "asleep"
    return None


def _named(line: _Line, decision: Decision, groups: list[list[int]]) -> list:
    """The NPCs a line named that can take it, in the order named (one per name: an ambiguous
    name goes to the first of :func:`_order`); the others' heard reasons are noted."""
    if not groups:
        return []
    wake_sleepers = conf.get_bool("EVENNIA_AI_WAKE_WHEN_ADDRESSED")
    named = []
    for group in groups:
        fits = [obj for obj in line.candidates if obj.id in group]
        if len(fits) > 1:
            fits = [obj for obj, _why in _order(line, fits)]
        unable = [_unable(obj) for obj in fits]
        able = [obj for obj, why in zip(fits, unable) if why is None]
        sleepers = [obj for obj, why in zip(fits, unable) if why == "asleep"]
        if able or (wake_sleepers and sleepers):
            named.append((able or sleepers)[0])
        elif fits:
            decision.heard[fits[0].id] = f"named; {unable[0]}"
    return named


def _order(line: _Line, objs: list) -> Iterator[tuple]:
    """``objs`` in the order :func:`_pick` takes them, each with its reason (lazily: the
    hosts are looked up only when nobody the speaker talked with last is there)."""
    talked = line.floor.talked.get(line.speaker.id)
    window = conf.get_float("EVENNIA_AI_CONVERSATION_SECONDS")
    who = getattr(line.speaker, "key", "them")
    first = [o for o in objs if talked and o.id == talked[0] and line.now - talked[1] <= window]
    yield from ((o, f"talked with {who} last") for o in first)
    hosts = [o for o in objs if o not in first and is_host(o)]
    yield from ((o, "room host") for o in hosts)
    rest = [o for o in objs if o not in first and o not in hosts]
    if rest:
        turn = line.speaker.id % len(rest)
        yield from ((o, "chosen") for o in rest[turn:] + rest[:turn])


def _pick(line: _Line, decision: Decision, count: int, why: str | None = None) -> None:
    """Wake up to ``count`` more answerable NPCs (talked with last, hosts, then by the
    speaker's id), with their own reasons or ``why``."""
    if count <= 0:
        return
    taken = 0
    for obj, reason in _order(line, line.candidates):
        if obj.id not in decision.woken and _unable(obj) is None:
            decision.woken[obj.id] = why or reason
            taken += 1
            if taken >= count:
                return


def _groups(line: _Line) -> list[list[int]]:
    """The names the line calls, as groups of the candidates each fits."""
    if line.kind == "pose":
        actor = getattr(line.speaker, "key", "") or ""
        return mentioned_groups(line.content, line.names_of, actor)
    return vocative_groups(line.content, line.names_of)


def _alone(line: _Line) -> bool:
    """Whether the room holds one AI NPC and no player but the speaker."""
    if len(line.candidates) != 1:
        return False
    return not any(
        obj is not line.speaker and audience.is_player(obj)
        for obj in line.candidates[0].location.contents
    )


def _wake_named(line: _Line, decision: Decision, named: list, cap: int) -> None:
    for index, obj in enumerate(named):
        if index < cap:
            decision.woken[obj.id] = "named"
        else:
            decision.heard[obj.id] = "named with too many others"


def _player_line(line: _Line, decision: Decision) -> None:
    """Rule A: a connected player's say or pose."""
    floor, now, speaker_id = line.floor, line.now, line.speaker.id
    floor.npc_lines = 0
    groups = _groups(line)
    if _alone(line):
        decision.woken[line.candidates[0].id] = "named" if groups else "alone with you"
    else:
        answerers = conf.get_int("EVENNIA_AI_ROOM_ANSWERERS")
        cap = answerers + 1
        _wake_named(line, decision, _named(line, decision, groups), cap)
        if to_everyone(line.content, conf.get_texts("EVENNIA_AI_EVERYONE_WORDS")):
            _pick(line, decision, cap - len(decision.woken), "to everyone")
        elif not groups:
            _pick(line, decision, answerers)
        if decision.question and not decision.woken:
            why = "question nobody named could answer" if groups else "question to the room"
            _pick(line, decision, 1, why)
    limit = conf.get_int("EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE")
    if limit <= 0:  # no limit: nothing to count
        floor.speaker_wakes.pop(speaker_id, None)
        wakes: list[float] = []
    else:  # the newest ``limit`` wakes decide a flood: older ones are not kept
        wakes = [t for t in floor.speaker_wakes.get(speaker_id, ()) if now - t < FLOOD_SECONDS]
        floor.speaker_wakes[speaker_id] = wakes
    if decision.woken and limit > 0 and len(wakes) >= limit:  # a flood: nobody wakes
        decision.flooded = True
        decision.heard.update(dict.fromkeys(decision.woken, FLOODED))
        decision.woken = {}
        if now - floor.flood_told.get(speaker_id, now - FLOOD_SECONDS) >= FLOOD_SECONDS:
            decision.tell_flood = True
            floor.flood_told[speaker_id] = now
        return
    if decision.woken:
        floor.talked[speaker_id] = (next(iter(decision.woken)), now)
    for npc_id in decision.woken:
        floor.waiting[npc_id] = now
        wakes.append(now)
    if limit > 0:
        del wakes[:-limit]


def _npc_line(line: _Line, decision: Decision) -> None:
    """Rule B: an AI NPC's line wakes the first NPC it calls, while the room's NPC talk lasts."""
    named = _named(line, decision, vocative_groups(line.content, line.names_of)[:1])
    if not named:
        return
    target = named[0]
    limit = conf.get_int("EVENNIA_AI_NPC_EXCHANGE_TURNS")
    if line.floor.npc_lines >= limit:
        decision.heard[target.id] = f"the room's NPC talk has had its {limit} lines"
        return
    line.floor.npc_lines += 1
    decision.woken[target.id] = NAMED_BY + str(getattr(line.speaker, "key", "an NPC"))


def _other_line(line: _Line, decision: Decision) -> None:
    """Rule C: a speaker nobody plays wakes only the NPCs it names (the room's one NPC when no
    player is there); it does not start NPC talk again."""
    groups = _groups(line)
    if _alone(line):
        decision.woken[line.candidates[0].id] = "named" if groups else "alone with you"
        return
    cap = conf.get_int("EVENNIA_AI_ROOM_ANSWERERS") + 1
    _wake_named(line, decision, _named(line, decision, groups), cap)


def player_whispered(npc, speaker) -> None:
    """``speaker`` whispered to ``npc``: a connected player's whisper in the NPC's room starts
    the room's NPC talk again, as their open lines do."""
    location = getattr(npc, "location", None)
    if location is not None and getattr(speaker, "location", None) == location:
        if audience.is_player(speaker):
            room_floor(location).npc_lines = 0


def reason(npc, decision: Decision) -> str | None:
    """Why ``decision`` wakes ``npc``, or None when it only hears the line."""
    return decision.woken.get(npc.id)


def is_addressing(why: str) -> bool:
    """Whether an NPC woken for ``why`` was spoken to (named, or the line was to everyone or to
    it alone), rather than picked to answer a line that named nobody."""
    return why in ADDRESSING_REASONS or why.startswith(NAMED_BY)


def tick_ended(npc, batch) -> None:
    """``npc``'s tick ended (answered, silent, held back or failed): when its batch held a
    player's line the floor woke it for, it no longer keeps the player waiting. A tick that
    took no such line (a compaction, a reflection, an autonomous tick, one already running
    when the player spoke) leaves the wait as it is; it ends with the tick that takes the
    line, or at its expiry (:func:`player_waiting`)."""
    if any(_for_a_player(event) for event in batch or ()):
        for floor in _floors_of(npc, batch):
            floor.waiting.pop(npc.id, None)


def not_taken(npc) -> None:
    """The line the floor just woke ``npc`` for was not queued (its own flood limit, or a full
    queue): nobody waits for its answer."""
    floor = _floor_here(npc)
    if floor is not None:
        floor.waiting.pop(npc.id, None)


def _for_a_player(event) -> bool:
    """Whether ``event`` is a line the floor woke its NPC for, not another AI NPC's."""
    data = getattr(event, "data", None) or {}
    why = data.get("floor") if isinstance(data, dict) else None
    return bool(why) and not data.get("from_assistant") and not str(why).startswith(NAMED_BY)


def _floor_here(npc) -> RoomFloor | None:
    return floor_of(getattr(npc, "location", None))


def _floors_of(npc, batch) -> list[RoomFloor]:
    """The floors of ``npc``'s room now and of the rooms ``batch``'s lines were heard in (it
    may have moved during its tick)."""
    location = getattr(npc, "location", None)
    rooms = [location] if location is not None else []
    here = getattr(location, "dbref", None)
    heard_in = {str(getattr(event, "location", None) or "") for event in batch or ()}
    for dbref in heard_in - {"", str(here)}:
        room = audience.find_by_dbref({}, dbref)
        if room is not None:
            rooms.append(room)
    floors = (floor_of(room) for room in rooms)
    return [floor for floor in floors if floor is not None]


def player_waiting(npc) -> bool:
    """Whether another AI NPC in ``npc``'s room was woken for a player's line and has not
    answered yet (an NPC-only batch of ``npc`` waits for it).

    An entry older than ``EVENNIA_AI_TIMEOUT`` + :data:`WAITING_GRACE_SECONDS` no longer
    counts (its tick failed to end, or the NPC left).
    """
    floor = _floor_here(npc)
    if floor is None or not floor.waiting:
        return False
    now = time.monotonic()
    horizon = conf.get_float("EVENNIA_AI_TIMEOUT") + WAITING_GRACE_SECONDS
    floor.waiting = {k: t for k, t in floor.waiting.items() if now - t <= horizon}
    return any(npc_id != npc.id for npc_id in floor.waiting)


#: Where :func:`note_heard` counts, on the NPC's object, without ``ndb``'s look-up for each NPC
#: that hears a line (it lives as the NPC's ``ndb`` does: :data:`audience.AUDIENCE_AT`).
_HEARD = "_evennia_ai_heard"


def note_heard(npc, who: str, why: str) -> None:
    """Count a line ``npc`` heard from ``who`` and was not woken by (``why``), for its next
    trace."""
    heard = getattr(npc, _HEARD, None)
    if heard is None:
        heard = {}
        setattr(npc, _HEARD, heard)
    heard[(who, why)] = heard.get((who, why), 0) + 1


def heard_notes(npc) -> list[str]:
    """The lines ``npc`` heard without being woken since its last trace, in words ("heard 3
    line(s); not addressed (Alice 2, Tom 1)"); reading them clears them."""
    heard = getattr(npc, _HEARD, None) or {}
    setattr(npc, _HEARD, None)
    by_why: dict[str, Counter] = {}
    for (who, why), count in heard.items():
        by_why.setdefault(why, Counter())[who] += count
    return [
        f"heard {sum(counts.values())} line(s); {why} ("
        + ", ".join(f"{who} {n}" for who, n in counts.items())
        + ")"
        for why, counts in by_why.items()
    ]


def woken_notes(batch) -> list[str]:
    """Why each event of a tick's ``batch`` woke its NPC, in words, for the trace ("woken:
    named (Alice)", "woken: room host (Alice; nobody named)", "woken: named by Bard")."""
    notes: list[str] = []
    for event in batch or ():
        data = getattr(event, "data", None) or {}
        why = data.get("floor") if isinstance(data, dict) else None
        if not why:
            continue
        who = getattr(event, "source_name", "") or "someone"
        if why.startswith(NAMED_BY):
            note = f"woken: {why}"
        elif why.startswith("talked with"):
            note = f"woken: {why} (nobody named)"
        elif why in ("room host", "chosen"):
            note = f"woken: {why} ({who}; nobody named)"
        else:
            note = f"woken: {why} ({who})"
        if note not in notes:
            notes.append(note)
    return notes


def is_host(npc) -> bool:
    """Whether ``npc`` is its room's host (answers first the lines there that name nobody)."""
    state = find_npc_state(npc)
    return bool(state is not None and state.host)
