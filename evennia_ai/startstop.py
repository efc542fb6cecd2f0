"""Server start/stop hooks of evennia-ai.

Add this module to the game's ``AT_SERVER_STARTSTOP_MODULE`` list::

    AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]
"""

from evennia.utils import logger


def at_server_init():
    """Called first on every server start."""


def at_server_start():
    """Called on every server start: warms up the model stack off the reactor.

    Importing litellm takes seconds and tiktoken loads its encodings on first use; doing both
    in a thread now means the first player to speak gets an answer as fast as the tenth.
    """
    from evennia_ai.memory import block_admin  # noqa: F401  (registers the block-write executor)
    from evennia_ai.threadpool import run_in_thread

    def warm_up():
        from evennia_ai import conf, tokens

        tokens.count_text("warm up", conf.get("EVENNIA_AI_MODEL") or None)
        from evennia_ai.llm.client import configure_litellm_callbacks, get_litellm

        model = conf.get("EVENNIA_AI_MODEL")
        if model and model != conf.OFFLINE_MODEL:
            get_litellm()
        configure_litellm_callbacks()

    run_in_thread(warm_up).addErrback(
        lambda failure: logger.log_err(f"evennia_ai: warm-up failed: {failure.getErrorMessage()}")
    )
    try:  # long-term memory loads its embedder (seconds) in a thread; ticks never wait for it
        from evennia_ai.memory import longterm

        longterm.init_in_thread()
    except Exception:
        logger.log_trace("evennia_ai: starting long-term memory failed")


def at_server_stop():
    """Called on every server stop: closes the embedded long-term memory store."""
    try:
        from evennia_ai.memory import longterm

        longterm.close()
    except Exception:
        logger.log_trace("evennia_ai: closing long-term memory failed")


def at_server_reload_start():
    """Called when the server starts after a reload."""


def at_server_reload_stop():
    """Called when the server stops for a reload."""


def at_server_cold_start():
    """Called when the server starts after a full shutdown."""


def at_server_cold_stop():
    """Called when the server shuts down fully."""
