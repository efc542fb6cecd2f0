"""world/paths: the bounded route search, one step through an exit, and rooms named by staff."""

from __future__ import annotations

from django.test import override_settings
from evennia.objects.objects import DefaultExit, DefaultRoom
from evennia.server.signals import SIGNAL_EXIT_TRAVERSED
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.world import paths
from evennia_ai.world.paths import shortest_route


def graph(edges: dict[int, list[int]]):
    """Neighbours of a graph of rooms ``{room: [destination, ...]}``; the exit of ``a`` to
    ``b`` has the id ``a * 100 + b``."""
    return lambda room: [(room * 100 + to, to) for to in edges.get(room, [])]


def test_the_route_has_the_fewest_exits():
    ways = graph({1: [2, 5], 2: [3], 3: [4], 5: [4], 4: []})
    found = shortest_route(1, 4, ways, max_rooms=100, max_steps=10)
    assert found.found and found.exits == (105, 504) and found.rooms == (5, 4)
    assert found.reason == ""
    assert shortest_route(1, 1, ways, 100, 10) == paths.Route(True, (), (), 0, "")


def test_search_stops_at_its_bounds_and_says_which():
    chain = graph({n: [n + 1] for n in range(1, 50)})
    assert shortest_route(1, 10, chain, max_rooms=100, max_steps=9).found
    too_far = shortest_route(1, 10, chain, max_rooms=100, max_steps=8)
    assert not too_far.found and too_far.reason == "no way within 8 exits"
    too_many = shortest_route(1, 10, chain, max_rooms=4, max_steps=40)
    assert not too_many.found and too_many.reason == "gave up after 4 rooms"
    assert too_many.searched == 4
    island = shortest_route(1, 99, graph({1: [2], 2: [1]}), max_rooms=100, max_steps=40)
    assert island.reason == "no way through exits it may pass (searched 2 rooms)"


class PathsTestBase(BaseEvenniaTest):
    """Rooms: Hall - Corridor - Vault (a locked door) and Hall - Garden - Shed - Vault."""

    def setUp(self):
        super().setUp()
        self.hall, self.corridor, self.vault, self.garden, self.shed = (
            create_object(DefaultRoom, key=key)
            for key in ("Hall", "Corridor", "Vault", "Garden", "Shed")
        )
        self.door = self.link(self.corridor, self.vault, "vault door")
        self.door.locks.add("traverse:false()")
        self.door.db.err_traverse = "The vault door is locked."
        self.link(self.hall, self.corridor, "corridor")
        self.link(self.hall, self.garden, "garden")
        self.link(self.garden, self.shed, "shed")
        self.link(self.shed, self.vault, "trapdoor")
        self.walker = create_object(
            "evennia.objects.objects.DefaultCharacter", key="Bram", location=self.hall
        )

    def link(self, source, destination, key):
        """An exit each way."""
        create_object(DefaultExit, key=f"back from {key}", location=destination, destination=source)
        return create_object(DefaultExit, key=key, location=source, destination=destination)


class TestRoutes(PathsTestBase):
    def test_route_goes_round_a_locked_door_and_is_shortest(self):
        found = paths.route(self.walker, self.hall, self.vault)
        assert found.found
        assert found.rooms == (self.garden.id, self.shed.id, self.vault.id)
        self.door.locks.add("traverse:all()")
        found = paths.route(self.walker, self.hall, self.vault)
        assert found.rooms == (self.corridor.id, self.vault.id)  # two exits, not three

    def test_a_room_behind_locks_only_is_reported(self):
        trapdoor = self.shed.exits[[e.key for e in self.shed.exits].index("trapdoor")]
        trapdoor.locks.add("traverse:false()")
        found = paths.route(self.walker, self.hall, self.vault)
        assert not found.found and found.reason.startswith("no way through exits it may pass")
        words = paths.unreachable(self.walker, self.hall, self.vault, found)
        assert words == (
            f"Bram cannot walk from Hall ({self.hall.dbref}) to Vault ({self.vault.dbref}): no "
            f"way through exits it may pass (searched {found.searched} rooms, up to 40 exits "
            "away). Unlock a way, or choose another room."
        )

    def test_the_settings_bound_the_search(self):
        with override_settings(EVENNIA_AI_ROUTE_MAX_STEPS=2):
            assert paths.route(self.walker, self.hall, self.vault).reason == "no way within 2 exits"
        with override_settings(EVENNIA_AI_ROUTE_MAX_ROOMS=1):
            assert paths.route(self.walker, self.hall, self.vault).reason == "gave up after 1 rooms"


class TestTraverse(PathsTestBase):
    def test_a_step_passes_the_exit_as_its_command_would(self):
        heard = []

        def note(sender, traverser, **kwargs):
            heard.append((sender, traverser))

        SIGNAL_EXIT_TRAVERSED.connect(note)
        self.addCleanup(SIGNAL_EXIT_TRAVERSED.disconnect, note)
        corridor = self.hall.exits[[e.key for e in self.hall.exits].index("corridor")]
        step = paths.traverse(self.walker, corridor)
        assert step == paths.Traversal(True, False, "") and self.walker.location == self.corridor
        assert heard == [(corridor, self.walker)]

    def test_a_locked_exit_refuses_in_the_games_words(self):
        self.walker.location = self.corridor
        step = paths.traverse(self.walker, self.door)
        assert step == paths.Traversal(False, False, "The vault door is locked.")
        assert self.walker.location == self.corridor

    def test_an_exit_that_moves_later_is_in_transit(self):
        corridor = self.hall.exits[[e.key for e in self.hall.exits].index("corridor")]
        corridor.at_traverse = lambda traverser, destination: None  # a slow exit: later
        step = paths.traverse(self.walker, corridor)
        assert step == paths.Traversal(False, True, "") and self.walker.location == self.hall


class TestFindRoom(PathsTestBase):
    def test_rooms_by_key_alias_or_number(self):
        assert paths.find_room("hall") == (self.hall, "")
        assert paths.find_room(self.vault.dbref) == (self.vault, "")
        self.shed.aliases.add("hut")
        assert paths.find_room("Hut") == (self.shed, "")

    def test_unknown_ambiguous_and_non_rooms_in_words(self):
        room, problem = paths.find_room("Gard")
        assert room is None
        assert problem == (
            f"No room is called 'Gard'. Rooms with a similar name: Garden ({self.garden.dbref})."
        )
        other = create_object(DefaultRoom, key="garden")
        room, problem = paths.find_room("Garden")
        assert room is None and problem == (
            f"'Garden' could be Garden ({self.garden.dbref}) or garden ({other.dbref}): name it "
            "by its #number."
        )
        assert paths.find_room(self.door.dbref) == (
            None,
            f"No room has the number {self.door.dbref}.",
        )
        assert paths.find_room(self.walker.dbref)[0] is None
        assert paths.find_room("Nowhere at all") == (None, "No room is called 'Nowhere at all'.")
        assert paths.find_room("  ")[1].startswith("No room is named")


class TestOddNames(PathsTestBase):
    def test_odd_room_names_get_words_not_tracebacks(self):
        for text in ("#", "#-1", "#abc", "#999999", "x" * 500, "Ħåłł ☕", "%", "_", "'; DROP"):
            room, problem = paths.find_room(text)
            assert room is None and problem.startswith("No room"), (text, problem)
