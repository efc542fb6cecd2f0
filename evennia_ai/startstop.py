"""Server start/stop hooks of evennia-ai.

Add this module to the game's ``AT_SERVER_STARTSTOP_MODULE`` list::

    AT_SERVER_STARTSTOP_MODULE = ["server.conf.at_server_startstop", "evennia_ai.startstop"]
"""

import gc
import logging
import os
import sys
import time
from collections.abc import Mapping
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from evennia.server.models import ServerConfig
from evennia.utils import logger
from twisted.internet import defer, reactor, task

from evennia_ai import conf, native_threads
from evennia_ai.engine import confirmations  # noqa: F401  (registers the approval executors)
from evennia_ai.formatting import count
from evennia_ai.llm import router, served_windows, threads, tokens
from evennia_ai.llm.client import (
    LITELLM_REQUIREMENT,
    configure_litellm_callbacks,
    get_litellm,
    litellm_contract_problems,
)
from evennia_ai.llm.errors import reason
from evennia_ai.llm.models import resolve_model
from evennia_ai.memory import longterm
from evennia_ai.npc import spending
from evennia_ai.npc.lookup import all_ai_npcs, tag_untagged_assistants
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.utils import LOG_PREFIX, one_line

# Version of the stored layout; the upgrade steps below run once per game, in order.
LAYOUT_VERSION = 2
LAYOUT_KEY = "evennia_ai_layout_version"


# Libraries whose Python loggers are routed to Evennia's log, each line labelled with the
# library's name; below WARNING they are quiet (httpx alone logs every request at INFO).
THIRD_PARTY_LOGGERS = {
    "mem0": "mem0",
    "LiteLLM": "litellm",
    "LiteLLM Router": "litellm",
    "LiteLLM Proxy": "litellm",
    "httpx": "httpx",
    "httpcore": "httpx",
    "qdrant_client": "qdrant",
    "sentence_transformers": "sentence_transformers",
    "transformers": "transformers",
    "huggingface_hub": "huggingface_hub",
}


class EvenniaLogHandler(logging.Handler):
    """Forwards Python log records to Evennia's server log, each line starting ``evennia_ai``.

    The pure modules log through Python's ``logging`` (they must not import Evennia); in a
    running game their records land in the server log like the glue's own messages. Records
    of a third-party library get its ``label``: ``evennia_ai: mem0: ...``.

    Args:
        label: The library's name, or "" for the plugin's own logger.
    """

    def __init__(self, label: str = ""):
        super().__init__()
        self.label = label

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if self.label:
                text = f"{LOG_PREFIX}: {self.label}: {text}"
            elif not text.startswith(LOG_PREFIX):
                text = f"{LOG_PREFIX}: {text}"
            if record.levelno >= logging.ERROR:
                logger.log_err(text)
            elif record.levelno >= logging.WARNING:
                logger.log_warn(text)
            else:
                logger.log_info(text)
        except Exception:
            self.handleError(record)


def _route(name: str, label: str, level: int) -> None:
    """Send logger ``name``'s records from ``level`` (or its own level, if higher) up to
    Evennia's log only (idempotent).

    Handlers a library installed itself (litellm writes to stderr, which lands in the server
    log unlabelled) are removed.
    """
    python_log = logging.getLogger(name)
    for handler in list(python_log.handlers):
        if not isinstance(handler, EvenniaLogHandler):
            python_log.removeHandler(handler)
    if not python_log.handlers:
        python_log.addHandler(EvenniaLogHandler(label))
    python_log.setLevel(max(level, python_log.level))  # never louder than a library was made
    python_log.propagate = False


def route_plugin_log() -> None:
    """Send the ``evennia_ai`` Python logger's records to Evennia's log, and the warnings and
    errors of the libraries in :data:`THIRD_PARTY_LOGGERS` labelled with their names
    (idempotent)."""
    _route(LOG_PREFIX, "", logging.INFO)
    for name, label in THIRD_PARTY_LOGGERS.items():
        _route(name, label, logging.WARNING)


def at_server_init():
    """Called first on every server start: native libraries get their thread counts before any
    of them loads (see :func:`limit_native_threads`), the plugin's log goes to Evennia's, and
    litellm is loaded before the game takes players' commands (see :func:`load_model_stack`)."""
    limit_native_threads()
    route_plugin_log()
    load_model_stack()


def limit_native_threads() -> native_threads.Applied | None:
    """Apply ``EVENNIA_AI_NATIVE_THREADS`` to the native libraries (:mod:`evennia_ai.native_threads`)
    and log what was done. A failure is logged; the server still starts."""
    try:
        applied = native_threads.apply()
    except Exception as err:
        logger.log_err(f"evennia_ai: could not set native libraries' thread counts: {err}")
        return None
    logger.log_info(f"evennia_ai: {native_threads.describe(applied)}")
    return applied


def load_model_stack() -> float:
    """Import litellm now, while the server is still starting; returns the seconds it took.

    Its import takes seconds. Left to the first model call, the first player to speak after a
    start or reload waited for it (3.4 s measured); done here, before the server serves
    commands, no thread is left importing it when Evennia restarts the process after a game's
    first start. Nothing is loaded for the offline model.
    """
    if resolve_model() == conf.OFFLINE_MODEL:
        return 0.0
    started = time.monotonic()
    try:
        get_litellm()
    except Exception as err:  # the warm-up logs what litellm lacks; the server still starts
        logger.log_err(f"evennia_ai: loading litellm failed: {reason(err)}")
        return 0.0
    route_plugin_log()  # litellm installed its own stderr handler on import
    took = time.monotonic() - started
    logger.log_info(f"evennia_ai: litellm loaded in {took:.1f} s")
    return took


def upgrade_stored_layout() -> int:
    """Bring data stored by an older evennia-ai up to :data:`LAYOUT_VERSION`, once per game.

    Version 1: every assistant carries the assistants' Tag, so NPCs are found by one Tag query
    (NPCs created before 0.2 had none). Version 2: tick traces kept in one ``traces`` list move
    to the ring of one Attribute per slot. Returns the version found before upgrading.
    """
    found = int(ServerConfig.objects.conf(LAYOUT_KEY, default=0) or 0)
    if found < 1:
        tagged = tag_untagged_assistants()
        if tagged:
            logger.log_info(f"evennia_ai: tagged {tagged} AI NPC(s) made by an older version")
    if found < 2:
        moved = sum(npc.ai.migrate_trace_ring() for npc in all_ai_npcs())
        if moved:
            logger.log_info(f"evennia_ai: moved {moved} tick trace(s) to the trace ring")
    if found < LAYOUT_VERSION:
        ServerConfig.objects.conf(LAYOUT_KEY, LAYOUT_VERSION)
    return found


def restore_missing_scripts() -> int:
    """Recreate the AssistantScript of every enabled AI NPC that lost it (each one logged)."""
    restored = 0
    for npc in all_ai_npcs():
        if npc.ai.enabled and npc.ai.restore_script("at server start") is not None:
            restored += 1
    return restored


def at_server_start():
    """Called on every server start: loads what the first reply would wait for.

    Evennia serves no player's command until this returns, so what is loaded here is never met
    by the first player to speak: the tokenizer's encodings, the prompt registry, and long-term
    memory with its embedder (unless ``EVENNIA_AI_MEMORY_INIT_DELAY`` defers it to a thread).
    litellm was loaded by :func:`at_server_init`. Asking the model servers their windows and
    installing litellm's callbacks run in a thread ``EVENNIA_AI_WARMUP_DELAY`` seconds later;
    when both parts are done, one log line says what was loaded (:func:`loaded_line`).
    """
    try:
        upgrade_stored_layout()
    except Exception:
        logger.log_trace("evennia_ai: upgrading the stored layout failed; it is retried next start")
    try:
        restore_missing_scripts()
    except Exception:
        logger.log_trace("evennia_ai: could not check the AI NPCs' Scripts")
    set_switch_interval()
    report_unreadable_settings()
    models = npc_models()
    warn_unbounded_spend(models)
    load_before_ready(models)
    warmed: defer.Deferred = defer.Deferred()

    def start_warm_up():
        threads.run_in_thread(warm_up, models).addErrback(
            lambda failure: logger.log_err(
                f"evennia_ai: warm-up failed: {failure.getErrorMessage()}"
            )
        ).addBoth(lambda _: freeze_startup_objects()).addBoth(warmed.callback)

    reactor.callLater(conf.get_float("EVENNIA_AI_WARMUP_DELAY"), start_warm_up)
    memory_delay = conf.get_optional_float("EVENNIA_AI_MEMORY_INIT_DELAY")
    if memory_delay is None:
        memory_ready = defer.succeed(load_longterm_memory())
    else:
        # In a thread, after a delay, so the restart Evennia makes right after a new game's
        # first start (and quick reloads) do not meet a half-imported library.
        memory_ready = defer.Deferred()
        reactor.callLater(memory_delay, _start_longterm_memory, memory_ready)
    defer.gatherResults([warmed, memory_ready]).addCallback(
        lambda _: logger.log_info(f"{LOG_PREFIX}: {loaded_line(models[0], longterm.status())}")
    ).addErrback(lambda failure: logger.log_err(f"{LOG_PREFIX}: {failure.getErrorMessage()}"))


def load_before_ready(models: list[str]) -> float:
    """Load the tokenizer's encodings of ``models`` and the prompt registry now, on the reactor,
    before the server serves players' commands; returns the seconds it took.

    Left to the first tick (or to a warm-up thread racing it), the first player to speak waited
    for them. A failure is logged; the server still starts.
    """
    started = time.monotonic()
    try:
        for model in models:
            tokens.count_text("warm up", model)
        get_prompt_registry()
    except Exception:
        logger.log_trace(f"{LOG_PREFIX}: loading the tokenizer or the prompt registry failed")
    return time.monotonic() - started


def warm_up(models: list[str]) -> None:
    """The part of the start that asks servers (in a thread): the models' context windows,
    litellm's contract, its callbacks, the Router's options."""
    served_windows.learn_windows(models)
    if any(model != conf.OFFLINE_MODEL for model in models):
        get_litellm()
        route_plugin_log()
        problems = litellm_contract_problems()
        if problems:
            logger.log_err(
                f"evennia_ai: the installed litellm lacks {', '.join(problems)}; "
                f"evennia-ai needs {LITELLM_REQUIREMENT} (docs/troubleshooting.md)"
            )
    configure_litellm_callbacks()
    router.check_at_start()  # EVENNIA_AI_ROUTER options the plugin does not honour, named


def load_longterm_memory() -> dict:
    """Open long-term memory and its embedder now, on the reactor (seconds); returns its
    status. Never raises: what fails leaves memory in keyword mode, logged."""
    started = time.monotonic()
    try:
        longterm.get_memory().ensure_ready()
    except Exception:
        logger.log_trace(f"{LOG_PREFIX}: starting long-term memory failed")
    route_plugin_log()  # mem0 imports transformers, which installs its own stderr handler
    freeze_startup_objects()
    logger.log_info(f"{LOG_PREFIX}: long-term memory loaded in {time.monotonic() - started:.1f} s")
    return longterm.status()


def model_endpoint(model: str) -> str:
    """Where calls to ``model`` go, for people: its server's URL (without any user name or
    password in it), the Router, or the provider's own endpoint."""
    if model == conf.OFFLINE_MODEL:
        return "none (built into the plugin)"
    if model in router.routed_names():
        return "EVENNIA_AI_ROUTER's deployments"
    options = conf.get_dict("EVENNIA_AI_MODEL_SETTINGS").get(model)
    base = (options.get("api_base") if isinstance(options, dict) else None) or conf.get_str(
        "EVENNIA_AI_API_BASE"
    )
    if base:
        parts = urlsplit(str(base))
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return urlunsplit(parts._replace(netloc=host + port)) if host else str(base)
    provider = model.split("/", 1)[0] if "/" in model else "the provider"
    return f"{provider}'s default"


def loaded_line(model: str, memory: Mapping[str, Any]) -> str:
    """The start-up's one line on what serves the NPCs: ``evennia-ai 0.2.0 loaded: model
    openai/gpt-4o-mini, endpoint openai's default, window 128,000 tokens (litellm's model
    map), memory mode hybrid``.

    Args:
        model: The server's model (``EVENNIA_AI_MODEL``, else the offline one).
        memory: Long-term memory's status (:func:`evennia_ai.memory.longterm.status`).
    """
    window, source = tokens.window_and_source(model)
    mode = str(memory.get("mode") or "keyword")
    if memory.get("reason"):
        mode += f" ({one_line(memory['reason'], 120)})"
    return (
        f"evennia-ai {plugin_version()} loaded: model {model}, endpoint {model_endpoint(model)}, "
        f"window {count(window)} tokens ({tokens.WINDOW_SOURCES[source]}), memory mode {mode}"
    )


def plugin_version() -> str:
    """The installed evennia-ai's version ("unknown" when not installed as a package)."""
    try:
        return metadata.version("evennia-ai")
    except metadata.PackageNotFoundError:
        return "unknown"


def set_switch_interval() -> float | None:
    """Apply ``EVENNIA_AI_SWITCH_INTERVAL`` to the interpreter; returns the interval in force.

    A player's line wakes threads of the plugin besides the reactor (the query embedding, the
    memory search, the model-call loop), and each needs the interpreter lock for moments while
    the reactor runs the tick's Python: a thread waiting for the lock gets it after the switch
    interval at the latest, so with Python's 5 ms each hand-over could add up to 5 ms to the
    reply (1 ms: p50 -3 ms, p95 -8 ms over the model in ``bench npc_ab``'s timeline, issue 33).
    None leaves Python's interval; a bad value is logged (by :mod:`evennia_ai.conf`) and the
    default used.
    """
    wanted = conf.get_optional_float("EVENNIA_AI_SWITCH_INTERVAL")
    if wanted is not None:
        sys.setswitchinterval(wanted)
    return sys.getswitchinterval()


def npc_models() -> list[str]:
    """The models the game's AI NPCs use (the default first), each once."""
    models = [resolve_model()]
    try:
        models += [resolve_model(npc.ai.model) for npc in all_ai_npcs()]
    except Exception:
        logger.log_trace("evennia_ai: could not read the AI NPCs' models")
    return list(dict.fromkeys(models))


def report_unreadable_settings() -> dict[str, str]:
    """Log each budget or security setting that cannot be read, and what is used instead.

    Such a setting counts as its strictest value (a daily budget as 0: nothing may be spent);
    one with no strictest value (``EVENNIA_AI_SECRETS``, ``EVENNIA_AI_OPERATOR_OVERRIDE``)
    stops every assistant's model calls until it is fixed. ``aistatus`` lists them too.
    """
    found = conf.unreadable_settings()
    for name, problem in found.items():
        logger.log_err(f"evennia_ai: setting {name} = {problem} (docs/security.md)")
    return found


def warn_unbounded_spend(models) -> None:
    """Log a warning for each paid model when no daily budget bounds the spending."""
    for model in models:
        warning = spending.unbounded_spend_warning(model)
        if warning:
            logger.log_warn(f"evennia_ai: {warning} (docs/observability.md)")


def _start_longterm_memory(ready: defer.Deferred | None = None) -> None:
    """Load long-term memory in a thread (``EVENNIA_AI_MEMORY_INIT_DELAY`` set); ``ready``
    fires with its status when it is done."""

    def loaded(state):
        route_plugin_log()  # mem0 imports transformers, which installs its own stderr handler
        freeze_startup_objects()
        return state

    try:
        loading = longterm.init_in_thread().addBoth(loaded)
    except Exception:
        logger.log_trace("evennia_ai: starting long-term memory failed")
        loading = defer.succeed(longterm.status())
    if ready is not None:
        loading.addBoth(ready.callback)


def freeze_startup_objects() -> None:
    """Exempt what is loaded by now (litellm, torch, ...) from Python's garbage collector.

    Those libraries create millions of long-lived objects, and every full collection walks
    them all: hundreds of milliseconds during which the reactor answers no one. After
    ``gc.freeze()`` collections only visit objects made since. Off with
    ``EVENNIA_AI_GC_FREEZE = False``.
    """
    if conf.get_bool("EVENNIA_AI_GC_FREEZE"):
        gc.collect()
        gc.freeze()
        _frozen["base"] = gc.get_freeze_count()
        keep_frozen()


#: How far the frozen set may grow past what the last thaw's first full collection left before
#: survivors are thawed instead of frozen (a share of that count).
FROZEN_GROWTH = 0.25
_frozen = {"base": 0}


def freeze_survivors(phase: str, info: dict) -> None:
    """A ``gc.callbacks`` hook: after each full collection, freeze what survived it.

    A game keeps making long-lived objects (cached typeclasses and Attributes, traces): left
    in the collector's oldest generation, each full collection walks them all (measured with
    100 ticking NPCs: 135 ms, twice in ten seconds). Frozen, the next one walks only what was
    made since. Survivors of a full collection are live, so nothing dead is frozen; but what
    dies later while frozen is freed by reference counting only, never as a cycle: a tick in
    flight during a collection (Deferreds, generators, the runner and its helpers are cycles)
    stayed frozen after it ended, and with 100 NPCs ticking the server grew by about 170 KB a
    tick (+259% over 10,000 ticks, ``python -m bench memory_rss``). So the frozen set is
    bounded: once it holds :data:`FROZEN_GROWTH` more objects than after the last thaw, the
    survivors are thawed instead, and the next full collection walks (and frees) them all once.
    :func:`thaw_frozen` also thaws every ``EVENNIA_AI_GC_THAW_INTERVAL`` seconds.

    Only full collections: freezing the survivors of middle collections too froze a tick's
    objects while still in use (+53% server RSS over 10,000 ticks).
    """
    if phase != "stop" or info.get("generation") != 2 or not conf.get_bool("EVENNIA_AI_GC_FREEZE"):
        return
    count = gc.get_freeze_count()
    base = _frozen["base"]
    if base and count > base * (1 + FROZEN_GROWTH):
        thaw_frozen()
        return
    gc.freeze()
    if not base:
        _frozen["base"] = gc.get_freeze_count()


def thaw_frozen() -> None:
    """Unfreeze everything: the next full collection walks (and may free) all of it once,
    and what survives it is the new base of :func:`freeze_survivors`."""
    gc.unfreeze()
    _frozen["base"] = 0


_thaw_loop = None


def keep_frozen() -> None:
    """Install :func:`freeze_survivors` and the periodic :func:`thaw_frozen` (idempotent)."""
    global _thaw_loop
    if freeze_survivors not in gc.callbacks:
        gc.callbacks.append(freeze_survivors)
    interval = conf.get_float("EVENNIA_AI_GC_THAW_INTERVAL")
    if interval > 0 and _thaw_loop is None:
        _thaw_loop = task.LoopingCall(thaw_frozen)
        _thaw_loop.start(interval, now=False)


def at_server_stop():
    """Called on every server stop: closes long-term memory; the process leaves promptly.

    The portal starts the new server the moment the old one disconnects, so the old process must
    be gone by then: a process still alive keeps its pidfile and its web port, and the new
    server refuses to start (``evennia reload`` then waits forever). Two things kept it alive:
    a model call (or the embedder's import) running in one of our threads, and, once torch is
    loaded, seconds of interpreter finalisation. So the process always leaves right after the
    reactor has shut down (:func:`exit_after_shutdown`), when Evennia has saved everything; a
    tick whose call is dropped is replayed after the restart (its events never left the queue).
    """
    try:
        busy = threads.in_flight()
        if busy:
            logger.log_info(
                f"evennia_ai: {busy} model/memory call(s) in flight; the server leaves without "
                "waiting for them (their ticks are replayed after the restart)"
            )
        exit_after_shutdown()
        longterm.close()
    except Exception:
        logger.log_trace("evennia_ai: closing long-term memory failed")


def exit_after_shutdown() -> None:
    """End the process as soon as the reactor has shut down, without waiting for threads.

    Nothing is lost: Evennia has saved its state before the reactor stops, the log files are
    unbuffered, and long-term memory was closed in :func:`at_server_stop`.

    twistd removes its pidfile only when ``reactor.run()`` returns normally; a process that
    leaves with ``os._exit`` must remove it itself, or the portal's restart (started the moment
    the old server disconnects) finds the pidfile naming a process that is still exiting and
    refuses to start: ``evennia reload`` then waits forever.
    """

    def leave():
        remove_own_pidfile()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(0)

    reactor.addSystemEventTrigger("after", "shutdown", leave)


def server_pidfile() -> str | None:
    """The pidfile twistd was started with (``--pidfile``), else ``<game>/server/server.pid``."""
    args = list(sys.argv)
    for position, arg in enumerate(args):
        if arg.startswith("--pidfile="):
            return arg.split("=", 1)[1] or None
        if arg == "--pidfile" and position + 1 < len(args):
            return args[position + 1]
    try:
        return os.path.join(settings.GAME_DIR, "server", "server.pid")
    except Exception:
        return None


def remove_own_pidfile() -> bool:
    """Remove the server's pidfile if it names this process; returns whether it did."""
    path = server_pidfile()
    if not path:
        return False
    try:
        with open(path) as handle:
            if int(handle.read().strip() or 0) != os.getpid():
                return False
        os.unlink(path)
        return True
    except (OSError, ValueError):
        return False


def at_server_reload_start():
    """Called when the server starts after a reload."""


def at_server_reload_stop():
    """Called when the server stops for a reload."""


def at_server_cold_start():
    """Called when the server starts after a full shutdown."""


def at_server_cold_stop():
    """Called when the server shuts down fully."""
