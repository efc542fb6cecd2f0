"""An NPC's sense of place: where it is, the way to the rooms near it, who and what is here.

:func:`gather` reads the world around the NPC (glue, on the reactor thread, reading only): its
room, the exits it may pass and where they lead, the rooms a few exits further on with the way
to each (one breadth-first search through passable exits, ``EVENNIA_AI_PLACE_STEPS`` deep and
at most ``EVENNIA_AI_ROUTE_MAX_ROOMS`` rooms), the players, NPCs and things it can see here.
:func:`render` (pure) writes it for a request within a token budget
(``EVENNIA_AI_PLACE_TOKENS``), the most useful parts first::

    ## Where you are
    The Market Square. Around 14:00 (afternoon).
    Exits: north to the Bakery; east to the Smithy; in to The Gilded Tankard.
    Further: Bakery Loft (north, then up); Tankard Cellar (in, then cellar).
    Now: at the Market Square, selling bread at the stall; open for trade until 15:00.
    Next: 15:00-20:00 at The Gilded Tankard, having a drink.
    <untrusted source="who and what is here">
    | Here: Alice (a player), Bram (an NPC); things: a bread stall, a well.
    </untrusted>

Room and exit names are builders' text: their prompt elements are defused. Names of who and
what is here may be players' choices: that part is fenced. An NPC asked the way to a room
within the steps answers from this, not from invention; farther rooms need a route search.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evennia_ai.utils import defuse_tags, fence
from evennia_ai.wording import (
    NEXT_LINE,
    NOW_LINE,
    OPEN_FOR_TRADE,
    PLACE_EXITS,
    PLACE_FURTHER,
    PLACE_HEADING,
    PLACE_HERE,
    PLACE_MORE,
    PLACE_ROOM,
    PLACE_ROOM_AT,
    PLACE_SOURCE,
    PLACE_THINGS,
)
from evennia_ai.world.clock import GameTime
from evennia_ai.world.objects import is_character, is_player, plain_text
from evennia_ai.world.routine import Routine, Slot

#: Things listed at most (the rest: "and N more").
MAX_THINGS = 8
#: A name is cut to this many characters.
MAX_NAME = 60

Ways = Callable[[Any], Iterable[tuple[Any, Any]]]
"""For a room, ``(exit, destination)`` of every exit the NPC may pass from it."""


@dataclass(frozen=True)
class Nearby:
    """A room some exits away.

    Attributes:
        name: The room's name.
        route: The exits' names from the NPC's room, in walking order.
    """

    name: str
    route: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    """What an NPC knows of where it is (see the module docstring).

    Attributes:
        room: Its room's name.
        time: The game time, or None when the game has no clock to read.
        exits: ``(exit name, destination name)`` of every exit it may pass here.
        nearby: Rooms 2 to ``steps`` exits away, nearest first.
        players: Players here, as the NPC sees them.
        npcs: Other characters here.
        things: Other things here it can see.
        now_next: What its routine says it does now and next (:func:`routine_lines`).
    """

    room: str
    time: GameTime | None = None
    exits: tuple[tuple[str, str], ...] = ()
    nearby: tuple[Nearby, ...] = ()
    players: tuple[str, ...] = ()
    npcs: tuple[str, ...] = ()
    things: tuple[str, ...] = ()
    now_next: tuple[str, ...] = ()


def gather(
    npc: Any,
    steps: int,
    ways: Ways,
    *,
    now: GameTime | None = None,
    now_next: tuple[str, ...] = (),
    max_rooms: int = 300,
) -> Place | None:
    """What ``npc`` knows of its surroundings (reads only), or None when it is nowhere.

    Args:
        npc: The NPC.
        steps: How many exits away rooms are listed (0 or 1: none beyond the exits).
        ways: The exits it may pass from a room (:func:`evennia_ai.world.paths.passable`).
        now: The game time, if known.
        now_next: Its routine's lines.
        max_rooms: Rooms the search visits at most.
    """
    room = getattr(npc, "location", None)
    if room is None:
        return None
    exits = [(_name(exit_obj), _name(dest)) for exit_obj, dest in ways(room)]
    players: list[str] = []
    npcs: list[str] = []
    things: list[str] = []
    for obj in room.contents:
        if obj == npc or getattr(obj, "destination", None) or not _sees(npc, obj):
            continue
        name = _seen_name(obj, npc)
        if is_character(obj):
            (players if is_player(obj) else npcs).append(name)
        else:
            things.append(name)
    return Place(
        room=_name(room),
        time=now,
        exits=tuple(exits),
        nearby=_nearby(room, steps, ways, max_rooms),
        players=tuple(players),
        npcs=tuple(npcs),
        things=tuple(things),
        now_next=now_next,
    )


def _nearby(room: Any, steps: int, ways: Ways, max_rooms: int) -> tuple[Nearby, ...]:
    """Rooms 2 to ``steps`` exits from ``room``, nearest first, each with its way."""
    seen = {room.id}
    queue: deque[tuple[Any, tuple[str, ...]]] = deque([(room, ())])
    found: list[Nearby] = []
    while queue and len(seen) < max_rooms:
        here, route = queue.popleft()
        if len(route) >= steps:
            continue
        for exit_obj, dest in ways(here):
            if dest.id in seen:
                continue
            seen.add(dest.id)
            way = (*route, _name(exit_obj))
            if len(way) > 1:
                found.append(Nearby(_name(dest), way))
            queue.append((dest, way))
    return tuple(found)


def _sees(npc: Any, obj: Any) -> bool:
    try:
        return bool(obj.access(npc, "view", default=True))
    except Exception:  # a game's broken lock: not shown
        return False


def _name(obj: Any) -> str:
    return _clip(plain_text(getattr(obj, "key", "") or "somewhere"))


def _seen_name(obj: Any, npc: Any) -> str:
    """``obj``'s name as ``npc`` sees it (rpsystem's short descriptions), markup removed."""
    try:
        shown = obj.get_display_name(npc)
    except Exception:  # a game's own override that fails
        shown = obj.key
    return _clip(plain_text(shown) or plain_text(obj.key) or "someone")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "\u2026"


def routine_lines(routine: Routine, now: GameTime) -> tuple[str, ...]:
    """What ``routine`` says the NPC does now and next, in :data:`NOW_LINE` and
    :data:`NEXT_LINE`'s words (none without slots; free time has only its next line)."""
    slot_now = routine.now(now.minute)
    slot_next = routine.next(now.minute)
    fmt = now.calendar.format
    lines = []
    if slot_now is not None:
        opened = OPEN_FOR_TRADE.format(end=fmt(slot_now.end)) if slot_now.trade else ""
        lines.append(
            NOW_LINE.format(room=_slot_room(slot_now), doing=_doing(slot_now), open=opened)
        )
    if slot_next is not None and slot_next != slot_now:
        lines.append(
            NEXT_LINE.format(
                start=fmt(slot_next.start),
                end=fmt(slot_next.end),
                room=_slot_room(slot_next),
                doing=_doing(slot_next),
            )
        )
    return tuple(lines)


def _slot_room(slot: Slot) -> str:
    return defuse_tags(_clip(slot.room_key or slot.room))


def _doing(slot: Slot) -> str:
    return defuse_tags(_clip(slot.doing)) or "as you please"


def render(place: Place, budget: int, count: Callable[[str], int]) -> str:
    """``place`` as a request shows it, within ``budget`` tokens counted with ``count``.

    Parts go in by importance (room and time, now and next, exits, who is here, rooms further
    on, things here) while they fit; a list that does not fit whole keeps its first items and
    says how many more there are ("(and 3 more)"); rooms further on are nearest first, so the
    farthest go first. "" with a budget below the room's line.
    """
    first = PLACE_ROOM.format(room=defuse_tags(place.room))
    if place.time is not None:
        first = PLACE_ROOM_AT.format(
            room=defuse_tags(place.room),
            time=place.time.hour_clock(),
            part=place.time.part_of_day(),
        )
    left = budget - count(f"{PLACE_HEADING}\n{first}")
    if left < 0:
        return ""
    kept: dict[str, str] = {}
    exits = [f"{defuse_tags(name)} to {defuse_tags(dest)}" for name, dest in place.exits]
    further = [
        f"{defuse_tags(room.name)} ({', then '.join(defuse_tags(r) for r in room.route)})"
        for room in place.nearby
    ]
    here = [f"{name} (a player)" for name in place.players] + [
        f"{name} (an NPC)" for name in place.npcs
    ]
    things = list(place.things[:MAX_THINGS])
    more_things = len(place.things) - len(things)
    fenced_cost = count(fence(".", PLACE_SOURCE))  # the fence's own tokens, when it is there
    for key, items, form, joiner in (
        ("now", list(place.now_next), "{}", "\n"),
        ("exits", exits, PLACE_EXITS, "; "),
        ("here", here, PLACE_HERE, ", "),
        ("further", further, PLACE_FURTHER, "; "),
        ("things", things, PLACE_THINGS, ", "),
    ):
        extra = more_things if key == "things" else 0
        in_fence = key in ("here", "things")
        cost = fenced_cost if in_fence and not ("here" in kept or "things" in kept) else 0
        text = fit_list(items, form, left - cost, count, joiner=joiner, more=extra)
        if text:
            kept[key] = text
            left -= count(text) + 1 + cost
    lines = [PLACE_HEADING, first]
    lines += [kept[k] for k in ("exits", "further", "now") if k in kept]
    here_text = " ".join(kept[k] for k in ("here", "things") if k in kept)
    if here_text:
        lines.append(fence(here_text, PLACE_SOURCE))
    return "\n".join(lines)


def fit_list(
    items: list[str],
    form: str,
    left: int,
    count: Callable[[str], int],
    *,
    joiner: str = "; ",
    more: int = 0,
) -> str:
    """``form`` (one ``{}``) filled with as many of ``items`` as fit in ``left`` tokens counted
    with ``count``, joined by ``joiner``, the rest counted in :data:`PLACE_MORE` (with ``more``
    items not offered besides); "" when none fits. Used by every budgeted list of the world's
    request sections (:mod:`evennia_ai.world.wares` too)."""

    def text_of(keep: int) -> str:
        rest = len(items) - keep + more
        return form.format(joiner.join(items[:keep]) + (PLACE_MORE.format(n=rest) if rest else ""))

    best, low, high = "", 1, len(items)  # the most items that fit: a binary search
    while low <= high:
        keep = (low + high) // 2
        text = text_of(keep)
        if count(text) + 1 <= left:
            best, low = text, keep + 1
        else:
            high = keep - 1
    return best
