"""Fair reactor turns: a slice of assistant work per turn, in arrival order."""

from unittest import mock

from django.test import override_settings

from evennia_ai import conf
from evennia_ai.engine import scheduler


class FakeReactor:
    """Like Twisted's reactor: calls made during a pass wait for the next pass."""

    def __init__(self, running=True):
        self.running = running
        self.calls = []

    def callLater(self, delay, function, *args):
        self.calls.append((function, args))

    def advance(self, _seconds=0):
        due, self.calls = self.calls, []
        for function, args in due:
            function(*args)


def test_without_a_reactor_a_turn_is_immediate():
    assert scheduler.turn().called


@override_settings(EVENNIA_AI_TURN_SLICE_MS=0)
def test_without_a_slice_one_waiter_per_reactor_turn_in_order():
    clock = FakeReactor()
    ran = []
    with mock.patch("evennia_ai.engine.scheduler.reactor", clock):
        for name in "abc":
            scheduler.turn().addCallback(lambda _, n=name: ran.append(n))
        assert ran == [] and scheduler.pending() == 3
        clock.advance(0)
        assert ran == ["a"]  # the others wait for later turns
        clock.advance(0)
        clock.advance(0)
        assert ran == ["a", "b", "c"] and scheduler.pending() == 0


@override_settings(EVENNIA_AI_TURN_SLICE_MS=4)
def test_a_turn_runs_pieces_until_its_slice_is_used_then_the_rest_wait():
    clock = FakeReactor()
    now = [0.0]
    ran = []

    def piece(_, name):  # each piece takes 3 ms of the fake clock
        ran.append(name)
        now[0] += 0.003

    with (
        mock.patch("evennia_ai.engine.scheduler.reactor", clock),
        mock.patch.object(scheduler.time, "perf_counter", lambda: now[0]),
    ):
        for name in "abcd":
            scheduler.turn().addCallback(piece, name)
        clock.advance(0)
        assert ran == ["a", "b"]  # 3 ms left 1 ms of the slice: b ran, then the turn ended
        clock.advance(0)
        assert ran == ["a", "b", "c", "d"] and scheduler.pending() == 0


def test_an_unusable_slice_is_logged_once_and_the_default_used():
    for bad in ("fast", -1, None):
        conf.forget_unreadable()
        with (
            override_settings(EVENNIA_AI_TURN_SLICE_MS=bad),
            mock.patch.object(conf._log, "warning") as logged,
        ):
            assert scheduler._slice_seconds() == 0.004
            assert scheduler._slice_seconds() == 0.004
        assert logged.call_count == 1 and "EVENNIA_AI_TURN_SLICE_MS" in logged.call_args[0][0]
    with override_settings(EVENNIA_AI_TURN_SLICE_MS=2):
        assert scheduler._slice_seconds() == 0.002


def test_a_failing_waiter_does_not_stall_the_others():
    clock = FakeReactor()
    ran = []

    def boom(_):
        raise RuntimeError("broken tick")

    with mock.patch("evennia_ai.engine.scheduler.reactor", clock):
        scheduler.turn().addCallback(boom).addErrback(lambda f: ran.append("caught"))
        scheduler.call_soon(ran.append, "next")
        clock.advance(0)
        clock.advance(0)
    assert ran == ["caught", "next"]


def test_call_soon_without_a_reactor_waits_for_one():
    clock = FakeReactor(running=False)
    ran = []
    with mock.patch("evennia_ai.engine.scheduler.reactor", clock):
        scheduler.call_soon(ran.append, 1)
        assert ran == []
        clock.advance(0)
    assert ran == [1]
