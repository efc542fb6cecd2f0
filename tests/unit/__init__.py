"""Unit tests, laid out as the package is: ``unit/<subpackage>/`` tests ``evennia_ai.<subpackage>``;
the package's root modules (``conf``, ``startstop``, ``formatting``, ``access``...) are tested here.

They run in-process (a test database at most, the loopback model server); nothing starts a game
server or a browser. Every folder is a package, so test modules of the same name cannot collide
and a test module imports another by its dotted name (``from unit.engine.test_assistant_tick
import AssistantTestBase``).
"""
