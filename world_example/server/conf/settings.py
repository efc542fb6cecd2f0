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

# evennia-ai: start-up work (long-term memory warm-up, callbacks) runs beside the game's own.
AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]

try:
    from server.conf.secret_settings import *  # noqa: F401,F403
except ImportError:
    print("secret_settings.py file not found or failed to import.")
