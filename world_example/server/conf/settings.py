r"""
Settings of the evennia-ai demo game (copied in by `make demo`).

Only what differs from Evennia's defaults is set here. Model settings come from the
environment of `make demo` (EVENNIA_AI_MODEL, EVENNIA_AI_API_BASE, EVENNIA_AI_API_KEY); with
none set, assistants use the built-in offline model.
"""

from evennia.settings_default import *  # noqa: F401,F403

SERVERNAME = "evennia-ai demo"

# Serve on 127.0.0.1 only: the demo is for the machine it runs on.
LOCKDOWN_MODE = True

INSTALLED_APPS += ["evennia_ai", "evennia_ai.web"]  # noqa: F405

# The tavern's common room is the first room the demo builds after Limbo (#2).
START_LOCATION = "#3"

# Game time runs at 60 times real time (a game hour is a real minute), from 06:00 of the game's
# first day (the epoch, in game seconds: Evennia adds the server's running time times
# TIME_FACTOR), so Hilda the baker's day is seen in a few real minutes: she walks to the market
# at 08:00, about two real minutes after the first start (docs/world.md).
TIME_FACTOR = 60
TIME_GAME_EPOCH = 6 * 3600

# Money is the `coins` Attribute of each character, as evadventure keeps it; the demo's
# characters start with 50 (typeclasses/characters.py).
EVENNIA_AI_MONEY = "attribute"

# evennia-ai: start-up work (long-term memory warm-up, callbacks) runs beside the game's own.
AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]

try:
    from server.conf.secret_settings import *  # noqa: F401,F403
except ImportError:
    print("secret_settings.py file not found or failed to import.")
