"""The game clock in tests: a hand-moved stand-in for ``evennia_ai.world.clock.source``.

Evennia reads ``settings.TIME_FACTOR`` once, when ``evennia.utils.gametime`` is imported, so
``override_settings(TIME_FACTOR=...)`` cannot change the game's clock in a test. Routines, the
sense of place and the shops read game time only through ``clock.source``: set it instead.

Example:
    game = GameClock()
    with mock.patch.object(clock, "source", game):
        game.at("11:00")              # day 1, 11:00 game time
        game.seconds += 120           # two game minutes later
"""

from __future__ import annotations

#: Game seconds in the standard game hour and day.
HOUR = 3600
DAY = 24 * HOUR


class GameClock:
    """Absolute game seconds, moved by hand (``clock.source = GameClock()``).

    Args:
        seconds: Where it starts (the start of game day 1 by default).
    """

    def __init__(self, seconds: float = DAY) -> None:
        self.seconds = float(seconds)

    def __call__(self) -> float:
        return self.seconds

    def at(self, hhmm: str, day: int = 1) -> None:
        """Set the clock to ``hhmm`` (``"11:00"``) of game day ``day`` (standard calendar)."""
        hours, minutes = (int(part) for part in hhmm.split(":"))
        self.seconds = day * DAY + hours * HOUR + minutes * 60
