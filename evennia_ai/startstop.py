"""Server start/stop hooks of evennia-ai.

Add this module to the game's ``AT_SERVER_STARTSTOP_MODULE`` list::

    AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]
"""

from evennia.utils import logger


def at_server_init():
    """Called first on every server start."""
    import faulthandler, signal, os  # DEBUG-CRASH (temporary)
    from django.conf import settings
    faulthandler.register(signal.SIGUSR2, file=open(os.path.join(settings.GAME_DIR, "server", "logs", f"fault-{os.getpid()}.log"), "w"), all_threads=True)


def at_server_start():
    """Called on every server start: warms up the model stack off the reactor.

    Importing litellm takes seconds and tiktoken loads its encodings on first use; doing both
    in a thread now means the first player to speak gets an answer as fast as the tenth.
    """
    from evennia_ai.memory import block_admin  # noqa: F401  (registers the block-write executor)
    from evennia_ai import conf
    from evennia_ai.threadpool import run_in_thread

    def warm_up():
        from evennia_ai import conf, tokens

        tokens.count_text("warm up", conf.get("EVENNIA_AI_MODEL") or None)
        from evennia_ai.llm.client import configure_litellm_callbacks, get_litellm

        model = conf.get("EVENNIA_AI_MODEL")
        if model and model != conf.OFFLINE_MODEL:
            get_litellm()
        configure_litellm_callbacks()

    def start_warm_up():
        run_in_thread(warm_up).addErrback(
            lambda failure: logger.log_err(f"evennia_ai: warm-up failed: {failure.getErrorMessage()}")
        )

    # Not at once: a brand-new game restarts its server right after the first start, and a
    # thread busy importing litellm would keep the old process alive into the new one's start.
    from twisted.internet import reactor

    reactor.callLater(float(conf.get("EVENNIA_AI_WARMUP_DELAY")), start_warm_up)
    # Long-term memory loads its embedder (seconds of torch import) in a thread; ticks never
    # wait for it. It starts after a delay so the restart Evennia makes right after its very
    # first start (and quick reloads) do not meet a half-imported torch.
    reactor.callLater(float(conf.get("EVENNIA_AI_MEMORY_INIT_DELAY")), _start_longterm_memory)


def _start_longterm_memory():
    try:
        from evennia_ai.memory import longterm

        longterm.init_in_thread()
    except Exception:
        logger.log_trace("evennia_ai: starting long-term memory failed")


def at_server_stop():
    """Called on every server stop: closes the embedded long-term memory store.

    If a model call or the store's initialisation (importing torch) is still running in a thread,
    the process would linger at exit while the portal already starts the new server, which then
    finds the old one's pidfile and ports. So the process leaves at once after the reactor has
    stopped; the tick whose call is dropped is replayed after the reload (its events never left
    the queue).
    """
    import time as _t  # DEBUG-CRASH
    from twisted.internet import reactor as _r
    logger.log_info(f"DEBUG at_server_stop {_t.time():.3f}")
    for _phase in ("before", "during", "after"):
        _r.addSystemEventTrigger(_phase, "shutdown", lambda p=_phase: logger.log_info(f"DEBUG {p} shutdown {_t.time():.3f}"))
    try:
        from evennia_ai import threadpool
        from evennia_ai.memory import longterm

        if threadpool.in_flight() or longterm.get_memory().state == longterm.INITIALISING:
            # A model call or the embedder import is still running in one of our daemon
            # threads: leave as soon as the reactor has shut down (state is saved by then),
            # so the portal's immediate restart never meets this process still alive.
            import os

            from twisted.internet import reactor

            reactor.addSystemEventTrigger("after", "shutdown", os._exit, 0)

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
