"""Routes through the game's exits, and one step through an exit.

A route is searched breadth-first (exits have no lengths, so it has the fewest exits), through
the exits the NPC itself may pass: every exit of a room with a destination other than the room
whose ``traverse`` lock the NPC passes (``exit.access(npc, "traverse")``, checked once per exit
per search, moving nothing, as the ingame_map_display contrib does). The ``view`` lock is not
needed: an NPC may use a hidden door it can pass. The search stops after
``EVENNIA_AI_ROUTE_MAX_ROOMS`` rooms or ``EVENNIA_AI_ROUTE_MAX_STEPS`` exits deep, and says
which bound stopped it.

A planned route is walked one exit at a time with :func:`traverse`, which checks the lock again
(the game's hooks can still refuse at move time). An NPC is never teleported: it only passes an
exit of the room it stands in.

:func:`find_room` finds a room by its key or ``#dbref`` the way staff name one in a routine, and
:func:`unreachable` says in words why an NPC cannot walk between two rooms.

:func:`shortest_route` is pure; the rest is glue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evennia.objects.models import ObjectDB
from evennia.server.signals import SIGNAL_EXIT_TRAVERSED
from evennia.utils.search import search_object

from evennia_ai import conf
from evennia_ai.world.objects import capture_messages, is_character

#: What a refused step says when the game's hooks said nothing.
CANNOT_GO = "You cannot go that way."
#: Rooms with a similar name named when none matches, at most.
SIMILAR_ROOMS = 5


@dataclass(frozen=True)
class Route:
    """What a route search found.

    Attributes:
        found: Whether a route reaches the goal.
        exits: The exits' ids, in walking order (empty when the start is the goal).
        rooms: The id of the room after each exit.
        searched: Rooms the search visited.
        reason: Empty when found; else why not, in words ("no way through exits he may pass",
            "gave up after 300 rooms").
    """

    found: bool
    exits: tuple[int, ...]
    rooms: tuple[int, ...]
    searched: int
    reason: str


@dataclass(frozen=True)
class Traversal:
    """What one step through an exit did.

    Attributes:
        moved: Whether the NPC is now in the exit's destination.
        in_transit: It did not move and nothing said why: an exit that moves later (the
            slow_exit contrib). The walker waits.
        reason: Why it did not move, as the game's hooks said it ("" when it moved or is in
            transit).
    """

    moved: bool
    in_transit: bool
    reason: str


def shortest_route(
    start: int,
    goal: int,
    neighbours: Callable[[int], Iterable[tuple[int, int]]],
    max_rooms: int,
    max_steps: int,
) -> Route:
    """The route from ``start`` to ``goal`` with the fewest exits: a bounded breadth-first
    search on ids.

    Args:
        start: The id of the room it starts from.
        goal: The id of the room to reach.
        neighbours: For a room's id, ``(exit id, destination id)`` of every exit that may be
            passed.
        max_rooms: Rooms taken off the queue at most.
        max_steps: Exits in the route at most.
    """
    if start == goal:
        return Route(True, (), (), 0, "")
    came_from: dict[int, tuple[int, int] | None] = {start: None}
    queue: deque[tuple[int, int]] = deque([(start, 0)])
    searched, too_deep = 0, False
    while queue:
        if searched >= max_rooms:
            return Route(False, (), (), searched, f"gave up after {searched} rooms")
        room, depth = queue.popleft()
        searched += 1
        for exit_id, destination in neighbours(room):
            if destination in came_from:
                continue
            if depth >= max_steps:  # a way on, but past the deepest route allowed
                too_deep = True
                break
            came_from[destination] = (room, exit_id)
            if destination == goal:
                return _walked_back(came_from, goal, searched)
            queue.append((destination, depth + 1))
    if too_deep:
        return Route(False, (), (), searched, f"no way within {max_steps} exits")
    return Route(
        False, (), (), searched, f"no way through exits it may pass (searched {searched} rooms)"
    )


def _walked_back(came_from: dict[int, tuple[int, int] | None], goal: int, searched: int) -> Route:
    """The route to ``goal`` read back through ``came_from``."""
    exits: list[int] = []
    rooms: list[int] = []
    step = came_from[goal]
    room = goal
    while step is not None:
        previous, exit_id = step
        exits.append(exit_id)
        rooms.append(room)
        room, step = previous, came_from[previous]
    return Route(True, tuple(reversed(exits)), tuple(reversed(rooms)), searched, "")


def passable(npc: Any) -> Callable[[Any], list[tuple[Any, Any]]]:
    """For a room, ``(exit, destination)`` of every exit ``npc`` may pass from it (its
    ``traverse`` lock), leading elsewhere."""

    def ways(room: Any) -> list[tuple[Any, Any]]:
        found = []
        for exit_obj in room.exits:
            destination = exit_obj.destination
            if destination is None or destination == room:
                continue
            try:
                allowed = exit_obj.access(npc, "traverse")
            except Exception:  # a broken lock lets nobody through, as Evennia's own check
                allowed = False
            if allowed:
                found.append((exit_obj, destination))
        return found

    return ways


def route(npc: Any, start_room: Any, goal_room: Any) -> Route:
    """The route ``npc`` can walk from ``start_room`` to ``goal_room``, through the exits it
    may pass, within ``EVENNIA_AI_ROUTE_MAX_ROOMS`` and ``EVENNIA_AI_ROUTE_MAX_STEPS``."""
    rooms = {start_room.id: start_room}
    ways = passable(npc)

    def neighbours(room_id: int) -> list[tuple[int, int]]:
        found = []
        for exit_obj, destination in ways(rooms[room_id]):
            rooms.setdefault(destination.id, destination)
            found.append((exit_obj.id, destination.id))
        return found

    return shortest_route(
        start_room.id,
        goal_room.id,
        neighbours,
        conf.get_int("EVENNIA_AI_ROUTE_MAX_ROOMS"),
        conf.get_int("EVENNIA_AI_ROUTE_MAX_STEPS"),
    )


def traverse(npc: Any, exit_obj: Any) -> Traversal:
    """Pass ``exit_obj`` as the exit's own command would: check its ``traverse`` lock, then
    ``at_traverse`` and ``SIGNAL_EXIT_TRAVERSED``, else ``err_traverse`` or
    ``at_failed_traverse``; what the hooks say to ``npc`` is the reason (the ``move`` tool and
    routines both step with it)."""
    source = npc.location
    with capture_messages(npc) as said:
        allowed = exit_obj.access(npc, "traverse")
        if allowed:
            exit_obj.at_traverse(npc, exit_obj.destination)
            SIGNAL_EXIT_TRAVERSED.send(sender=exit_obj, traverser=npc)
        elif exit_obj.db.err_traverse:
            npc.msg(exit_obj.db.err_traverse)
        else:
            exit_obj.at_failed_traverse(npc)
    if npc.location != source:
        return Traversal(True, False, "")
    if allowed and not said:  # the exit takes its time (a slow exit): no refusal was heard
        return Traversal(False, True, "")
    return Traversal(False, False, " ".join(said) or CANNOT_GO)


def is_room(obj: Any) -> bool:
    """Whether ``obj`` is a room: it is nowhere and leads nowhere (neither in a location nor an
    exit), and is no character (a character may stand nowhere)."""
    return (
        obj is not None
        and obj.location is None
        and obj.destination is None
        and not is_character(obj)
    )


def room_name(room: Any) -> str:
    """A room as a refusal names it: ``"Market Square (#5)"``."""
    return f"{room.key} ({room.dbref})"


def find_room(text: str) -> tuple[Any | None, str]:
    """The room ``text`` names (its ``#dbref``, or its key or an alias, case-insensitive), or
    None and why not in words.

    Example:
        room, problem = find_room("Smithy")
        # None, "No room is called 'Smithy'. Rooms with a similar name: The Smithy (#9)."
    """
    name = " ".join(str(text or "").split())
    if not name:
        return None, "No room is named: write a room's name or its #number."
    if name.startswith("#"):
        found = [obj for obj in search_object(name) if is_room(obj)]
        if found:
            return found[0], ""
        return None, f"No room has the number {name}."
    rooms = ObjectDB.objects.filter(db_location__isnull=True, db_destination__isnull=True)
    matches = [obj for obj in rooms.filter(db_key__iexact=name) if is_room(obj)]
    if not matches:
        matches = [
            obj
            for obj in rooms.filter(db_tags__db_key__iexact=name, db_tags__db_tagtype="alias")
            if is_room(obj)
        ]
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        listed = " or ".join(room_name(room) for room in matches[:SIMILAR_ROOMS])
        return None, f"'{name}' could be {listed}: name it by its #number."
    similar = [obj for obj in rooms.filter(db_key__icontains=name) if is_room(obj)]
    if not similar:
        return None, f"No room is called '{name}'."
    listed = ", ".join(room_name(room) for room in similar[:SIMILAR_ROOMS])
    return None, f"No room is called '{name}'. Rooms with a similar name: {listed}."


def unreachable(npc: Any, start_room: Any, goal_room: Any, found: Route) -> str:
    """Why ``npc`` cannot walk from ``start_room`` to ``goal_room``, in words for staff.

    Example:
        "Bram cannot walk from Market Square (#5) to Smithy (#9): no way through exits it may
        pass (searched 37 rooms, up to 40 exits away). Unlock a way, or choose another room."
    """
    depth = conf.get_int("EVENNIA_AI_ROUTE_MAX_STEPS")
    reason = found.reason
    if reason.endswith("rooms)"):
        reason = f"{reason[:-1]}, up to {depth} exits away)"
    return (
        f"{npc.key} cannot walk from {room_name(start_room)} to {room_name(goal_room)}: "
        f"{reason}. Unlock a way, or choose another room."
    )
