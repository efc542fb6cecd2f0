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

:func:`shortest_route` is pure; the rest is glue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


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
    raise NotImplementedError("issue 36: A")


def passable(npc: Any) -> Callable[[Any], list[tuple[Any, Any]]]:
    """For a room, ``(exit, destination)`` of every exit ``npc`` may pass from it (its
    ``traverse`` lock), leading elsewhere."""
    raise NotImplementedError("issue 36: A")


def route(npc: Any, start_room: Any, goal_room: Any) -> Route:
    """The route ``npc`` can walk from ``start_room`` to ``goal_room``, through the exits it
    may pass, within ``EVENNIA_AI_ROUTE_MAX_ROOMS`` and ``EVENNIA_AI_ROUTE_MAX_STEPS``."""
    raise NotImplementedError("issue 36: A")


def traverse(npc: Any, exit_obj: Any) -> Traversal:
    """Pass ``exit_obj`` as the exit's own command would: check its ``traverse`` lock, then
    ``at_traverse`` and ``SIGNAL_EXIT_TRAVERSED``, else ``err_traverse`` or
    ``at_failed_traverse``; what the hooks say to ``npc`` is the reason (the ``move`` tool and
    routines both step with it)."""
    raise NotImplementedError("issue 36: A")
