"""Server start/stop hooks of evennia-ai.

Add this module to the game's ``AT_SERVER_STARTSTOP_MODULE`` list::

    AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]
"""

from evennia.utils import logger


def at_server_init():
    """Called first on every server start."""


def at_server_start():
    """Called on every server start: wires litellm callbacks from settings."""
    try:
        from evennia_ai.llm.client import configure_litellm_callbacks
    except ImportError:  # pragma: no cover - the client ships with the package
        return
    try:
        configure_litellm_callbacks()
    except Exception:
        logger.log_trace("evennia_ai: configuring litellm callbacks failed")


def at_server_stop():
    """Called on every server stop."""


def at_server_reload_start():
    """Called when the server starts after a reload."""


def at_server_reload_stop():
    """Called when the server stops for a reload."""


def at_server_cold_start():
    """Called when the server starts after a full shutdown."""


def at_server_cold_stop():
    """Called when the server shuts down fully."""
