"""Settings of evennia-ai: one home for every ``EVENNIA_AI_*`` name, its type and its default.

Values are read at call time, so a game's ``settings.py`` and Django's
``override_settings`` take effect without a restart. The names marked ``env=True`` may also be
set in the process environment, which wins over ``settings.py`` (handy for API keys and for
``make demo``).

Every setting declares its type (:class:`Kind`): :func:`get` returns a value of that type,
read from what the game configured, and the typed readers (:func:`get_int`,
:func:`get_float`, :func:`get_bool`, :func:`get_str`, :func:`get_texts`, :func:`get_list`,
:func:`get_dict` and their ``get_optional_*`` forms) say it to a type checker. A value that
cannot be read (a word where a number belongs, a number below the least allowed, "maybe" for
a yes/no setting) is handled here, once for every caller: it is logged once per setting and
value, and the default is used - except for the budget and security settings
(``Setting.fail_closed``), which count as their strictest value (see docs/security.md, "When
stored state cannot be read").

Example:
    from evennia_ai import conf
    model = conf.get_str("EVENNIA_AI_MODEL")
    interval = conf.get_int("EVENNIA_AI_TICK_INTERVAL")

The table in ``docs/configuration.md`` is generated from :data:`SETTINGS` (and a test checks it).
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from evennia_ai.utils import log_prefix

OFFLINE_MODEL = "evennia_ai/offline"
# Routed to Evennia's log (evennia.utils.logger) by evennia_ai.startstop: this module must
# import without Evennia (it is read by the pure modules, see tests/system/test_layers.py).
_log = logging.getLogger("evennia_ai")


# -- kinds: what values a setting takes ------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """The type of a setting's value, and how a configured value is read as one.

    Attributes:
        type: The Python type of the value used (``int``, ``float``, ``bool``, ``str``,
            ``list``, ``dict`` or ``tuple``).
        label: The type as the configuration reference shows it (``int ≥ 1``).
        expected: What a value must be, in words, for the log line of a value that cannot be
            read ("a whole number of at least 1").
        read: Turns a configured value into the value used; raises ValueError saying what is
            wrong with it in words ("it is not a number").
        optional: None is a value of its own ("no limit", "not set").
        comma_list: The environment (or a single text in ``settings.py``) gives the list as
            comma-separated texts.
        choices: The words a :func:`choice` takes.
    """

    type: type
    label: str
    expected: str
    read: Callable[[Any], Any]
    optional: bool = False
    comma_list: bool = False
    choices: tuple[str, ...] = ()


def _what(value: Any) -> str:
    """What ``value`` is, in words, for a problem message."""
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "None"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "a dict"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "a list"
    return f"a {type(value).__name__}"


def _number(value: Any) -> float:
    """``value`` as a finite number (a text that reads as one counts)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"it is {_what(value)}, not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError("it is a text that does not read as a number") from None
    if not math.isfinite(number):
        raise ValueError("it is not a finite number")
    return number


def _least(number: float, minimum: float | None, above: bool) -> None:
    if minimum is None:
        return
    if above and number <= minimum:
        raise ValueError(f"it is not above {minimum}")
    if not above and number < minimum:
        raise ValueError(f"it is below {minimum}, the least allowed")


def whole(minimum: int | None = 0, maximum: int | None = None) -> Kind:
    """A whole number of at least ``minimum`` (and at most ``maximum``)."""

    def read(value: Any) -> int:
        number = _number(value)
        if number != int(number):
            raise ValueError("it is not a whole number")
        _least(number, minimum, False)
        if maximum is not None and number > maximum:
            raise ValueError(f"it is above {maximum}, the most allowed")
        return int(number)

    bounds = [f"≥ {minimum}"] if minimum is not None else []
    bounds += [f"≤ {maximum}"] if maximum is not None else []
    words = f"a whole number of at least {minimum}" if minimum is not None else "a whole number"
    words += f" and at most {maximum}" if maximum is not None else ""
    return Kind(int, " ".join(["int", ", ".join(bounds)]).strip(), words, read)


def number(
    minimum: float | None = 0.0, maximum: float | None = None, *, above: bool = False
) -> Kind:
    """A number (a float) of at least ``minimum`` (above it, with ``above``) and at most
    ``maximum``."""

    def read(value: Any) -> float:
        found = _number(value)
        _least(found, minimum, above)
        if maximum is not None and found > maximum:
            raise ValueError(f"it is above {maximum}, the most allowed")
        return float(found)

    bounds = [f"{'>' if above else '≥'} {minimum}"] if minimum is not None else []
    bounds += [f"≤ {maximum}"] if maximum is not None else []
    words = "a number"
    if minimum is not None:
        words += f" {'above' if above else 'of at least'} {minimum}"
    words += f" and at most {maximum}" if maximum is not None else ""
    return Kind(float, " ".join(["float", ", ".join(bounds)]).strip(), words, read)


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, str):
        raise ValueError("it is a text that is none of true, false, yes, no, on, off, 1, 0")
    raise ValueError(f"it is {_what(value)}, not true or false")


def flag() -> Kind:
    """True or false (the texts ``true``/``false``, ``yes``/``no``, ``on``/``off``, ``1``/``0``
    count as such: ``"false"`` is False)."""
    return Kind(bool, "bool", "True or False", _flag)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"it is {_what(value)}, not a text")
    return value


def text() -> Kind:
    """A text (None counts as empty)."""
    return Kind(str, "str", "a text", _text)


def choice(*words: str) -> Kind:
    """One of ``words`` (case and surrounding spaces do not matter)."""

    def read(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"it is {_what(value)}, not a text")
        word = value.strip().lower()
        if word not in words:
            raise ValueError(f"{value.strip()[:40]!r} is not one of them")
        return word

    return Kind(str, f"str: {', '.join(words)}", "one of " + ", ".join(words), read, choices=words)


def texts(*, comma_list: bool = False) -> Kind:
    """A list of texts; one text alone counts as a list of one (or, with ``comma_list``, as
    comma-separated texts)."""

    def read(value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            if comma_list:
                return [part.strip() for part in value.split(",") if part.strip()]
            return [value]
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise ValueError(f"it is {_what(value)}, not a list of texts")
        if not all(isinstance(item, str) for item in value):
            raise ValueError("an item of the list is not a text")
        return value if isinstance(value, list) else list(value)

    return Kind(list, "list[str]", "a list of texts", read, comma_list=comma_list)


def items(*, comma_list: bool = False) -> Kind:
    """A list of anything (a single text counts as comma-separated names with
    ``comma_list``)."""

    def read(value: Any) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, str) and comma_list:
            return [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"it is {_what(value)}, not a list")
        return value if isinstance(value, list) else list(value)

    return Kind(list, "list", "a list", read, comma_list=comma_list)


def mapping() -> Kind:
    """A dict (None counts as empty)."""

    def read(value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError(f"it is {_what(value)}, not a dict")
        return value if isinstance(value, dict) else dict(value)

    return Kind(dict, "dict", "a dict", read)


def optional(kind: Kind) -> Kind:
    """``kind``, or None."""

    def read(value: Any) -> Any:
        return None if value is None else kind.read(value)

    return Kind(
        kind.type,
        f"{kind.label} or None",
        f"{kind.expected}, or None",
        read,
        optional=True,
        comma_list=kind.comma_list,
    )


def store_config() -> Kind:
    """A store's configuration (a dict, or None for the embedded store), passed on unread: the
    long-term memory checks it when it starts, and a bad one leaves it in keyword mode with the
    reason in its status - it never falls back to another store silently."""
    return Kind(object, "dict or None", "a dict, or None", lambda value: value, optional=True)


_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def _window(value: Any) -> tuple[str, str]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"it is {_what(value)}, not a pair of times")
    for time in value:
        if not isinstance(time, str) or not _CLOCK.fullmatch(time.strip()):
            raise ValueError(f"{str(time)[:20]!r} is not a time of day as HH:MM")
    return (value[0].strip(), value[1].strip())


def daily_window() -> Kind:
    """A daily window ``("HH:MM", "HH:MM")``, or None."""
    return optional(Kind(tuple, "(HH:MM, HH:MM)", "a pair of times of day as HH:MM", _window))


def _file_path(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"it is {_what(value)}, not the path of a file")
    return os.fspath(value)


def path() -> Kind:
    """The path of a file or folder (a text or a path object; None or empty: not set)."""
    return Kind(str, "path", "the path of a file, or empty", _file_path)


def daily_budget(kind: type) -> Kind:
    """A daily budget: None, "" or 0 mean no limit; else a positive number (of tokens, a whole
    one, with ``kind`` int)."""

    def read(value: Any) -> Any:
        if value in (None, "") or (type(value) in (int, float) and value == 0):
            return None
        found = _number(value)
        if found < 0:
            raise ValueError("it is below 0")
        if kind is int:
            if found != int(found):
                raise ValueError("it is not a whole number of tokens")
            return int(found) or None
        return found or None

    unit = "a whole number of tokens" if kind is int else "an amount of USD"
    return Kind(kind, f"{kind.__name__} ≥ 0 or None", f"{unit}, or None for no limit", read, True)


# -- settings --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """One documented setting.

    Attributes:
        name: The ``EVENNIA_AI_*`` name used in ``settings.py``.
        default: Value used when the game sets nothing (of the type ``kind`` declares), and
            instead of a value that cannot be read (but see ``fail_closed``).
        doc: One line for the configuration reference.
        kind: The type of the value and how a configured one is read (:class:`Kind`).
        env: Whether an environment variable of the same name overrides ``settings.py``.
        fail_closed: A budget or security setting: a value that cannot be read counts as
            ``strict``, not as the default.
        strict: The value used instead of one that cannot be read, for ``fail_closed``
            settings: the strictest safe value (see docs/security.md, "When stored state
            cannot be read").
        holds: An unreadable value has no strictest value that could stand for it (the
            secrets to keep, the operator's file): every assistant's model calls stop until
            it is fixed (:func:`holding_problems`).
    """

    name: str
    default: Any
    doc: str
    kind: Kind
    env: bool = False
    fail_closed: bool = False
    strict: Any = None
    holds: bool = False

    def read(self, value: Any) -> Any:
        """``value`` as the value used; ValueError (saying what is wrong) if it cannot be."""
        return self.kind.read(value)

    @property
    def instead(self) -> Any:
        """The value used instead of one that cannot be read (a fresh copy of a list)."""
        value = self.strict if self.fail_closed else self.default
        return list(value) if isinstance(value, list) else value


def _closed(strict: Any, holds: bool = False) -> dict[str, Any]:
    """The keyword arguments of a budget or security setting (see :class:`Setting`)."""
    return {"fail_closed": True, "strict": strict, "holds": holds}


_BUDGET_ACTIONS = choice("offline", "silence", "message")


def _budget_action(value: Any) -> str:
    return "message" if value in (None, "") else _BUDGET_ACTIONS.read(value)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        # --- model ---------------------------------------------------------------------------
        Setting(
            "EVENNIA_AI_MODEL",
            "",
            "litellm model name (e.g. `openai/gpt-4o-mini`, `ollama/llama3`). Empty: the built-in offline model.",
            text(),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_API_BASE",
            "",
            "Base URL of an OpenAI-compatible endpoint (Ollama, vLLM, a litellm proxy).",
            text(),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_API_KEY",
            "",
            "API key passed to litellm. Empty: litellm reads the provider's own variable.",
            text(),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_FALLBACK_MODELS",
            [],
            "Ordered list of models tried when the main model fails after its retries. The environment form is comma-separated.",
            texts(comma_list=True),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_TIMEOUT",
            30.0,
            "Seconds one model call may take before it counts as timed out.",
            number(0, above=True),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_MAX_RETRIES",
            2,
            "Retries per model on rate limits, 5xx and timeouts (exponential backoff with jitter).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_RETRY_BASE_DELAY",
            0.5,
            "First backoff delay in seconds; doubles each retry, capped by EVENNIA_AI_RETRY_MAX_DELAY.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_RETRY_MAX_DELAY",
            8.0,
            "Longest single backoff delay in seconds (a server's retry-after is honoured up to this).",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_OUTAGE_AFTER_FAILURES",
            3,
            "Model calls to one endpoint (model and `api_base`) that fail in a row for want of "
            "an answer (connection refused or reset, timeout, 5xx, rate limit after retries) "
            "before it counts as unreachable: staff are told, every NPC using it shows `model "
            "unreachable since HH:MM`, and its NPCs wait instead of calling it. The first call "
            "that answers ends it. A refused request (400, a request over the window) never "
            "counts.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_OUTAGE_PROBE_SECONDS",
            20.0,
            "While an endpoint is unreachable, one tick of one of its NPCs calls it at most this "
            "often (seconds) to see whether it is back; the other ticks wait, counting no "
            "failed attempt on the lines they hold.",
            number(1),
        ),
        Setting(
            "EVENNIA_AI_OUTAGE_REPLAY_SECONDS",
            300.0,
            "A line said to an NPC while its model could not be reached is answered once the "
            "model is back if it is at most this old (seconds) and its speaker is still there; "
            "otherwise it is given up (logged and noted in the trace). Its speaker was told "
            "`EVENNIA_AI_UNAVAILABLE_MESSAGE` when its first answer failed.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_MODEL_SETTINGS",
            {},
            "Per-model options: `native_tools`, `context_window`, `api_base`, `api_key`, `timeout`, e.g. `{'ollama/llama2': {'native_tools': False, 'context_window': 4096}}`.",
            mapping(),
        ),
        Setting(
            "EVENNIA_AI_BUILDER_MODELS",
            [],
            "Models a Builder may give an NPC (`ainpc/model`, the dashboard, the API); `default` "
            "lets Builders return an NPC to the server's model. Any other choice needs Developer, "
            "since the model sets what an NPC spends. Empty: only Developers change models.",
            texts(),
        ),
        Setting(
            "EVENNIA_AI_THREAD_POOL_SIZE",
            10,
            "Threads for long-term memory calls and other blocking work (a pool of daemon "
            "threads of its own, so a reload never waits for a call in flight). Model calls do "
            "not use it: they run on one event loop (see EVENNIA_AI_MAX_CONCURRENT_CALLS).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_ROUTER",
            None,
            'A litellm Router in the server: {"model_list": [deployments], <Router options: '
            "routing_strategy, num_retries, allowed_fails, cooldown_time, fallbacks...>}. Model "
            "names of the list (an NPC's model, EVENNIA_AI_MODEL, a fallback) are served through "
            "it, across its deployments; EVENNIA_AI_FALLBACK_MODELS come after the Router gave "
            "up. Names whose deployments are all OpenAI-compatible servers are routed by the plugin "
            "itself (least busy, cooldowns, retries, fallbacks; see docs/providers.md). None: no "
            "Router (see docs/scaling.md).",
            optional(mapping()),
        ),
        Setting(
            "EVENNIA_AI_MAX_CONCURRENT_CALLS",
            32,
            "Model calls in flight at once per endpoint (an api_base, or a provider such as "
            "openai); more wait their turn without holding a thread. A model's own "
            "`max_concurrent` in EVENNIA_AI_MODEL_SETTINGS overrides it for its endpoint. Set "
            "it to what the model server serves in parallel (vLLM's max_num_seqs, Ollama's "
            "OLLAMA_NUM_PARALLEL) or a provider's rate limit allows.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_LITELLM_CALLBACKS",
            [],
            "litellm callbacks (names such as `langfuse`, or dotted paths to CustomLogger "
            "instances/classes). While any is set, every model is called through litellm (the "
            "callbacks see only litellm's calls), OpenAI-compatible servers included.",
            items(comma_list=True),
        ),
        Setting(
            "EVENNIA_AI_BATCH_WRITES",
            True,
            "Send the assistants' Attribute writes of one reactor turn to the database together "
            "when the turn ends (one transaction), rather than one transaction per write; the "
            "values change in memory at once and a shutdown or reload writes them first. "
            "False: every write is saved at once.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_TURN_SLICE_MS",
            4.0,
            "Milliseconds of assistant work the reactor runs in one turn before it reads its "
            "sockets again (pieces of ticks, first come first served; a piece is never cut). "
            "0: one piece per turn.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_SWITCH_INTERVAL",
            0.001,
            "Seconds set as the interpreter's thread switch interval at server start "
            "(sys.setswitchinterval; Python's is 0.005): how long the plugin's embedding, "
            "memory-search and model-call threads wait for the interpreter while the reactor "
            "runs Python. 0.001 took 3 ms off a reply's p50 and 8 ms off its p95 in "
            "`bench npc_ab` and halved the reactor's lag p99 in `bench scale` "
            "(docs/scaling.md). None: leave Python's.",
            optional(number(0, 1, above=True)),
        ),
        # --- ticking -------------------------------------------------------------------------
        Setting(
            "EVENNIA_AI_TICK_INTERVAL",
            5,
            "Seconds between an assistant's ticks.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_AUTONOMY",
            True,
            "Whether idle assistants with active goals take autonomous ticks.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL",
            60.0,
            "Least seconds between two autonomous ticks of one assistant.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_IDLE_NEEDS_AUDIENCE",
            True,
            "Whether autonomous ticks and reflection wait for a player within earshot (now or in "
            "the last `EVENNIA_AI_AUDIENCE_WINDOW` seconds); a goal marked as needing no "
            "audience is worked on anyway. False: they run whoever is there.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_AUDIENCE_WINDOW",
            600.0,
            "Seconds a player counts as within earshot of an assistant after leaving its room.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_NPC_EXCHANGE_TURNS",
            4,
            "Lines of AI NPCs that other AI NPCs of the same room answer (a line that calls "
            "an NPC by name wakes it) after a player last spoke, posed or whispered there, "
            "counted per room whatever names they use; answers to players are not counted. "
            "Later ones only reach the listeners' context buffers. 0: AI NPCs never answer "
            "each other. (Up to 0.2.0 it counted per NPC.)",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_ROOM_ANSWERERS",
            1,
            "AI NPCs a player's line wakes in a room when it names none of them: the one the "
            "speaker talked with last, else the room's host, else one chosen by the speaker "
            "(with one AI NPC and no other player there, every line is for it). A line to "
            'everyone ("Hello all") or naming several wakes at most one more. 0: only named '
            "NPCs answer (a question still goes to one).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_CONVERSATION_SECONDS",
            300.0,
            "Seconds after a player last talked with an AI NPC in a room during which their "
            "lines that name nobody go to that NPC.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_EVERYONE_WORDS",
            [
                "everyone",
                "everybody",
                "all",
                "all of you",
                "you all",
                "y'all",
                "folks",
                "anyone",
                "anybody",
            ],
            "Words that address everyone in a room when they stand set off at the start or end "
            'of a line (after a comma or a greeting, before punctuation or the end: "Hello all", '
            '"Everyone, listen!"; not "I ate it all").',
            texts(comma_list=True),
        ),
        Setting(
            "EVENNIA_AI_EVENT_QUEUE_SIZE",
            50,
            "Most events an assistant keeps queued; the oldest low-priority ones go first.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MAX_MESSAGES",
            200,
            "Most conversation-history messages kept per assistant before token budgeting.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_TRACE_RING_SIZE",
            50,
            "Tick traces kept per assistant.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_CONTEXT_BUFFER_SIZE",
            20,
            "Recent room messages kept as ambient context.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_TOOL_TIMEOUT",
            30.0,
            "Seconds an ASYNC_REQUIRED tool may run.",
            number(0, above=True),
        ),
        Setting(
            "EVENNIA_AI_HELPERS_PER_TICK",
            2,
            "Most `delegate_task` helpers started in one tick (`sub_agent_budget` caps how many "
            "run at once).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_HELPER_TOKEN_BUDGET",
            20000,
            "Most prompt plus completion tokens one `delegate_task` helper may use.",
            whole(1),
            **_closed(20000),
        ),
        Setting(
            "EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED",
            False,
            "Let `delegate_task` helpers use the tools that change the NPC itself or undo things "
            "(`update_system_prompt`, memory block writes, `archival_delete`, `move`, `give`, "
            "...), when the NPC may use them. Off: a helper gets its parent's tools without "
            "those; DANGEROUS and speech tools are never a helper's.",
            flag(),
            **_closed(False),
        ),
        Setting(
            "EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY",
            8,
            "Most tool calls run from one model answer; the rest are refused in the trace.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_CONFIRMATION_CHANNEL",
            None,
            "Evennia channel (key or alias) that is told, as online Builders are, when an action "
            "starts waiting for `aiconfirm` and when it is decided; None: no channel. Give it a "
            "`listen:perm(Builder)` lock: the notices show what NPCs want to run.",
            optional(text()),
        ),
        Setting(
            "EVENNIA_AI_WEB_MENU_LINK",
            True,
            'Add an "AI NPCs" link to the website\'s menu for accounts with the Builder '
            "permission (read when the web app starts). A game with its own "
            "`web/templates/website/_menu.html` keeps it and adds the link itself (see "
            "docs/installing.md).",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_STRICT_CONTRACTS",
            False,
            "Raise ContractViolation when a request lacks its task or inputs (tests); off, it "
            "is logged and counted (see docs/prompts.md).",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_TASK_JOURNAL_ENTRIES",
            30,
            "Most journal entries a reflection or sleep-consolidation request carries (latest).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_TOOL_RESULT_SHARE",
            0.25,
            "Largest share of the model's prompt budget one tool result may take; longer "
            "results are cut with a marker saying how to read the rest.",
            number(0, 1, above=True),
        ),
        Setting(
            "EVENNIA_AI_CORE_TOOLS",
            [
                "say",
                "emote",
                "whisper",
                "page",
                "noop",
                "look",
                "move",
                "add_journal_entry",
                "review_journal",
                "add_session_memory",
                "store_memory",
                "recall_memories",
                "update_entity_observation",
                "update_goal",
                "go_to_sleep",
                "request_tools",
            ],
            "Tools whose schemas stay in a request that does not fit the window; the others "
            "are left out before the NPC's own system prompt is cut.",
            texts(),
        ),
        Setting(
            "EVENNIA_AI_MAX_OUTPUT_CHARS",
            1000,
            "Most characters of one thing an NPC says, emotes, whispers or pages.",
            whole(1),
            **_closed(1000),
        ),
        Setting(
            "EVENNIA_AI_OUTPUT_STRIP_COLOUR",
            False,
            "Strip colour codes from what NPCs say and emote (other markup is always removed).",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_SPEAKABLE_LINES",
            [],
            "Lines an NPC may always say, whatever players whispered to it (a required "
            "greeting); lines of an operator prompt starting with `Speakable:` count too.",
            texts(),
            **_closed([]),
        ),
        Setting(
            "EVENNIA_AI_WHISPER_GUARD_WINDOW_WORDS",
            80,
            "Words of an NPC's recent output to each listener that the whisper guard reads "
            "together with what it is about to say, so a whisper split over several lines is "
            "caught (at least 5 count; kept in memory until a reload).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_SECRETS",
            [],
            "Texts no NPC ever says, emotes, whispers or pages (5 words in a row of one, or all "
            "of a shorter one); lines of an operator prompt starting with `Secret:` count too.",
            texts(),
            **_closed([], holds=True),
        ),
        Setting(
            "EVENNIA_AI_OPERATOR_QUOTE_WORDS",
            12,
            "Most consecutive words of its operator prompt an NPC may repeat to anyone "
            "(speakable lines exempt); 0 turns the check off.",
            whole(0),
            **_closed(12),
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MAX_CHARS",
            120000,
            "Most characters of content an NPC's history holds; older ticks go first.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MESSAGE_CHARS",
            6000,
            "Most characters of one message kept in history (a long tool result is cut).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_TRACE_MAX_CHARS",
            60000,
            "Most characters of JSON one stored tick trace takes (texts are cut to fit).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_RECORD_TICKS",
            False,
            "Record every tick (the state its request is built from, each model request and reply, secrets redacted) to `<data dir>/recordings/<npc>-<id>.jsonl`, for `python -m evennia_ai.engine.replay`.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_RECORD_MAX_BYTES",
            20_000_000,
            "Largest size of one NPC's tick recording file; past it recording that NPC stops (one log line).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE",
            20,
            "Most events one speaker can queue for an NPC in a minute, and most AI NPCs one "
            "speaker's lines wake in a room in a minute; the rest are dropped (noted in the "
            "next trace and the log; the speaker is told, `EVENNIA_AI_FLOOD_MESSAGE`). 0 turns "
            "the limit off.",
            whole(0),
            **_closed(20),
        ),
        Setting(
            "EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS",
            20000,
            "Longest arguments (JSON characters) of one tool call a model may send; longer "
            "calls are refused before anything stores them.",
            whole(1),
            **_closed(20000),
        ),
        Setting(
            "EVENNIA_AI_MAX_EVENT_CHARS",
            2000,
            "Characters of a line a player says (or anything an NPC perceives) kept for it; "
            "a pasted novel is cut before it is queued.",
            whole(1),
            **_closed(2000),
        ),
        Setting(
            "EVENNIA_AI_REFLECTION_INTERVAL",
            50,
            "Ticks between reflections.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD",
            30,
            "Summed journal importance since the last reflection that triggers one early.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_SLEEP_SCHEDULE",
            None,
            "Daily sleep window as `('HH:MM', 'HH:MM')` server time, or None for no scheduled sleep.",
            daily_window(),
        ),
        Setting(
            "EVENNIA_AI_WAKE_WHEN_ADDRESSED",
            True,
            "Whether speech addressed to a sleeping assistant wakes it.",
            flag(),
        ),
        # --- the world: routines, paths, the sense of place, goods and money ---------------------
        Setting(
            "EVENNIA_AI_ROUTINES",
            True,
            "Whether AI NPCs keep their routines (walk to each slot's room, sleep in its sleep "
            "slots). False: routines are kept but not followed.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_ROUTINE_LINGER_SECONDS",
            60.0,
            "Seconds after a player's line woke an NPC during which its routine does not move "
            "it (a conversation).",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_ROUTINE_MAX_DELAY",
            600.0,
            "Longest a conversation delays a routine's move, in real seconds from when the NPC "
            "should have left; then it goes. 0: it never waits.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_ROUTE_MAX_ROOMS",
            300,
            "Rooms a path search looks at, at most (routines, `directions`, checks of a new "
            "routine).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_ROUTE_MAX_STEPS",
            40,
            "Exits in a route, at most.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_CONSOLIDATIONS_PER_DAY",
            1,
            "Sleep consolidations an NPC runs per real (UTC) day, however often it sleeps (a "
            "routine in fast game time sleeps many times a real day); later sleeps only rest, "
            "and the next allowed one takes everything since. None: every sleep with something "
            "new consolidates.",
            optional(whole(1)),
        ),
        Setting(
            "EVENNIA_AI_PLACE_TOKENS",
            300,
            "Tokens at most of the sense of place in an NPC's requests (its room, exits and "
            "where they lead, who is here, the time of day, its routine now and next). 0: only "
            "the room's name, as before.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_PLACE_STEPS",
            3,
            "How many exits away the rooms listed in the sense of place may be.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_GOODS_TOKENS",
            250,
            "Tokens at most of a trading NPC's wares, prices and purse in its requests; the "
            "rest through its `wares` tool.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_MONEY",
            "attribute",
            "How the game keeps money: `attribute` (an int Attribute on each character, as "
            "evadventure's coins), `objects` (coin piles tagged `coins`, category "
            "`evennia_ai_money`, each worth its `amount`), or the python path of a class with "
            "`balance`, `prepare`, `pay`, `describe` (docs/world.md).",
            text(),
        ),
        Setting(
            "EVENNIA_AI_MONEY_ATTRIBUTE",
            "coins",
            "The Attribute that holds a character's money (with `attribute`).",
            text(),
        ),
        Setting(
            "EVENNIA_AI_MONEY_CATEGORY",
            None,
            "Its category (None: none, as AttributeProperty stores it).",
            optional(text()),
        ),
        Setting(
            "EVENNIA_AI_MONEY_TAG",
            "coins",
            "The Tag (category `evennia_ai_money`) of coin piles (with `objects`); each pile's "
            "Attribute `amount` is its worth.",
            text(),
        ),
        Setting(
            "EVENNIA_AI_MONEY_NAMES",
            ["coin", "coins"],
            "The money's name, one and many.",
            texts(comma_list=True),
        ),
        Setting(
            "EVENNIA_AI_TRADE_APPROVAL_ABOVE",
            None,
            "Trades worth more than this wait for a Builder's approval after the player "
            "accepts (an NPC's own `approve above` may set it lower). None: none wait.",
            optional(whole(0)),
            **_closed(0),
        ),
        Setting(
            "EVENNIA_AI_TRADE_OFFER_SECONDS",
            120.0,
            "How long an NPC's offer stands for the player to accept.",
            number(1),
        ),
        Setting(
            "EVENNIA_AI_TRADE_MAX_QUANTITY",
            20,
            "Most items of one kind in one trade.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_TRADE_YES_WORDS",
            ["yes", "deal", "agreed", "done", "i'll take it", "accept"],
            "A player's whole line (after the NPC's name) that accepts an offer pending for "
            "them.",
            texts(comma_list=True),
        ),
        Setting(
            "EVENNIA_AI_TRADE_NO_WORDS",
            ["no", "no deal", "decline", "never mind"],
            "A player's whole line (after the NPC's name) that declines an offer pending for "
            "them.",
            texts(comma_list=True),
        ),
        Setting(
            "EVENNIA_AI_LEDGER_SIZE",
            200,
            "Trades kept in each NPC's ledger (the oldest dropped; the day's counts are kept "
            "apart).",
            whole(1),
        ),
        # --- context and memory --------------------------------------------------------------
        Setting(
            "EVENNIA_AI_CONTEXT_WINDOWS",
            {},
            "Per-model context window overrides in tokens, e.g. `{'openai/my-model': 32768}`.",
            mapping(),
        ),
        Setting(
            "EVENNIA_AI_RESERVED_RESPONSE_TOKENS",
            1024,
            "Tokens kept free in every request for the model's answer.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_OPERATOR_OVERRIDE",
            "",
            "Path of an operator override file injected at the very top of every system prompt; re-read when it changes.",
            path(),
            **_closed("", holds=True),
        ),
        Setting(
            "EVENNIA_AI_DATA_DIR",
            "",
            "Folder for the keyword index and the embedded long-term memory. Empty: `<game dir>/server/ai_data`.",
            path(),
        ),
        Setting(
            "EVENNIA_AI_BLOCK_DESCRIPTIONS",
            True,
            "Show memory-block descriptions under their tags in the prompt.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_ARCHIVAL_MAX_ENTRIES",
            1000,
            "Archival entries kept per assistant (oldest dropped first).",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_ARCHIVAL_HITS",
            3,
            "Archival entries shown per tick by the archival_hits source.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_MEMORY_TOP_K",
            5,
            "Long-term memories recalled per search.",
            whole(1),
        ),
        Setting(
            "EVENNIA_AI_RECALL_MODE",
            "auto",
            'Search mode of the memories recalled into every request ("Things you remember"): '
            "auto (hybrid when the embedder is loaded, else keyword), keyword, vector or "
            "hybrid. An unknown value is logged once and auto is used.",
            choice("auto", "keyword", "vector", "hybrid"),
        ),
        Setting(
            "EVENNIA_AI_RECALL_DEADLINE_MS",
            100,
            "Milliseconds a reply's recall waits for its query's embedding (started when the line is heard, once for every NPC hearing it); past it the recall goes with its keyword hits and the miss is counted in the long-term memory status (0: only an embedding already done).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_MEMORY_GATE",
            True,
            "Check each long-term memory before it is stored: near-duplicates are merged or skipped, restatements of the persona, the prompt, a tool result or a memory just recalled are skipped, and an update supersedes the memory it replaces (docs/memory.md, What is kept). False stores every text that is not an exact duplicate.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_MEMORY_THRESHOLD",
            0.3,
            "Least relevance score for a recalled long-term memory (vector hits; keyword hits are ranked, not thresholded).",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_EMBEDDING_CACHE_SIZE",
            20000,
            "Embeddings of archival entries kept in memory for searches by meaning (about 1.5 KB each with the local embedder); at least the largest archive searched, or each search embeds it again.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_EMBEDDER_DIR",
            "",
            "Folder of the local embedder's ONNX model, built there from the all-MiniLM-L6-v2 weights package on first use (or ahead of time: `python -m evennia_ai.memory.onnx_model <folder>`). Empty: `<data dir>/embedder`.",
            path(),
        ),
        Setting(
            "EVENNIA_AI_NATIVE_THREADS",
            1,
            "Worker threads of each native library the plugin loads (ONNX Runtime, tokenizers, OpenMP/MKL/OpenBLAS, torch), set at server start; spinning waits are off. Variables such as OMP_NUM_THREADS already in the server's environment are kept. 0 leaves the libraries' own defaults (one thread per core, competing with the reactor).",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_OPENAI_SDK_ROUTE",
            False,
            "Send `openai/<name>` models through litellm and the OpenAI SDK; the default sends them, and `hosted_vllm/<name>`, over the plugin's own lean HTTP route (about 0.3 ms of CPU a call against 5-15 ms).",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_LITELLM_MODELS",
            [],
            "Model-name patterns (shell-style, e.g. `openai/o*`, `tavern-llm`) kept on litellm and its Router instead of the plugin's lean route for OpenAI-compatible servers. The environment form is comma-separated.",
            texts(comma_list=True),
            env=True,
        ),
        Setting(
            "EVENNIA_AI_GC_FREEZE",
            True,
            "After the model stack and long-term memory have loaded, exempt their objects from Python's garbage collector (gc.freeze), and freeze the survivors of every later full collection, so full collections no longer stall the server for hundreds of milliseconds.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_GC_THAW_INTERVAL",
            3600.0,
            "Seconds between thaws of the frozen objects (`EVENNIA_AI_GC_FREEZE`), so cycles "
            "that died while frozen are collected (0: never).",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_MEMORY_VECTOR_INDEX",
            True,
            "Keep long-term memory's vectors in an in-process per-NPC index (loaded from the store at start, following every write of this process), so a recall is a matrix-vector product: for the embedded Qdrant, a Qdrant server and pgvector; other stores search through mem0. Turn it off when other processes write the same store.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_WARMUP_DELAY",
            3.0,
            "Seconds after server start before the model servers are asked their context windows and litellm's callbacks are installed (in a thread). The tokenizer and litellm load before the server serves players' commands.",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_MEMORY_INIT_DELAY",
            None,
            "Seconds after server start before long-term memory loads its embedder (in a thread). None: it loads while the server starts, before players' commands are served, so the first reply does not wait for it (the start takes about as long as loading it: seconds).",
            optional(number(0)),
        ),
        Setting(
            "EVENNIA_AI_MEM0_CONFIG",
            None,
            "A full mem0 configuration dict replacing the embedded default (Qdrant server, pgvector, any litellm embedder).",
            store_config(),
        ),
        Setting(
            "EVENNIA_AI_KEYWORD_INDEX",
            None,
            'Where the keyword index lives: None for SQLite FTS5 in the data folder; `{"backend": "postgres", "dsn": "postgresql://..."}` for PostgreSQL full-text search (without `dsn`: the server of a `pgvector` EVENNIA_AI_MEM0_CONFIG).',
            store_config(),
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_STRATEGY",
            "summarize",
            "History compression: `summarize` (recursive summarisation by the model; truncation with the offline model) or `truncate`.",
            choice("summarize", "truncate"),
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_SLEEP_RATIO",
            0.7,
            "Share of the history budget at which history is compacted during sleep.",
            number(0, 1),
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_EMERGENCY_RATIO",
            0.8,
            "Share of the history budget at which history is compacted at once (after a fact-extraction pass).",
            number(0, 1),
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_KEEP_RECENT",
            20,
            "Messages always kept verbatim when history is compacted.",
            whole(0),
        ),
        Setting(
            "EVENNIA_AI_SUMMARY_MODEL",
            "",
            "Model for history summaries (empty: the NPC's model).",
            text(),
        ),
        Setting(
            "EVENNIA_AI_COMPONENT_ORDER",
            "default",
            "Component order: `default` (the ID order) or `cache_friendly` (stable text first, for provider prompt caches).",
            choice("default", "cache_friendly"),
        ),
        # --- budgets -------------------------------------------------------------------------
        Setting(
            "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC",
            None,
            "Tokens one assistant may use per day; None for no limit.",
            daily_budget(int),
            **_closed(0),
        ),
        Setting(
            "EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER",
            None,
            "Tokens all assistants together may use per day; None for no limit.",
            daily_budget(int),
            **_closed(0),
        ),
        Setting(
            "EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC",
            None,
            "Cost (USD, as litellm prices it) one assistant may spend per day; None for no limit.",
            daily_budget(float),
            **_closed(0.0),
        ),
        Setting(
            "EVENNIA_AI_DAILY_COST_BUDGET_SERVER",
            None,
            "Cost (USD) all assistants together may spend per day; None for no limit.",
            daily_budget(float),
            **_closed(0.0),
        ),
        Setting(
            "EVENNIA_AI_BUDGET_EXCEEDED_ACTION",
            "message",
            "What an assistant does past its budget (or while held): `message` (no model call; "
            "whoever speaks to it hears its unavailable line, `ailines`, else "
            "`EVENNIA_AI_UNAVAILABLE_MESSAGE`), `silence`, or `offline` (the built-in offline "
            "model answers with canned lines).",
            Kind(
                str,
                "str: message, silence, offline",
                "one of message, silence, offline",
                _budget_action,
            ),
            **_closed("message"),
        ),
        Setting(
            "EVENNIA_AI_THINKING_DELAY",
            2.0,
            "Seconds a player waits for an answer before seeing `EVENNIA_AI_THINKING_MESSAGE` "
            "(0: never shown).",
            number(0),
        ),
        Setting(
            "EVENNIA_AI_THINKING_MESSAGE",
            "{name} pauses, thinking.",
            "What the speaker sees while the NPC's model is slow (`{name}`: the NPC's name; "
            "empty: nothing). An NPC's own line (`ailines`) comes first.",
            text(),
        ),
        Setting(
            "EVENNIA_AI_STREAM_REPLIES",
            True,
            "Show what an NPC says sentence by sentence while its model is still writing the "
            "reply (a `say` tool call, or plain text said aloud; every check of `say` runs on "
            "each sentence first). Off, or an NPC's `stream_replies` execution setting off: "
            "the whole reply is shown when it has come, and requests are not streamed.",
            flag(),
        ),
        Setting(
            "EVENNIA_AI_STREAM_CONTINUATION",
            '{object} adds, "{speech}"',
            "How players see each sentence after the first of a streamed reply (`{object}`: "
            "the NPC, `{speech}`: the sentence); the first reads as a say. Empty: each reads as "
            "a say.",
            text(),
        ),
        Setting(
            "EVENNIA_AI_UNAVAILABLE_MESSAGE",
            "{name} seems lost in thought and does not answer.",
            "What the speaker sees when the NPC's model fails or its budget is spent in "
            "`message` mode (`{name}`: the NPC's name; empty: nothing). An NPC's own line "
            "(`ailines`) comes first.",
            text(),
        ),
        Setting(
            "EVENNIA_AI_APPROVAL_MESSAGE",
            '{name} says, "Let me check with someone first."',
            "What the speaker hears when the NPC's answer is an action waiting for staff's "
            "approval and it said nothing itself (no model is called for it; `{name}`: the "
            "NPC's name; empty: nothing). An NPC's own line (`ailines`) comes first.",
            text(),
        ),
        Setting(
            "EVENNIA_AI_FLOOD_MESSAGE",
            "{name} cannot follow so many lines at once; wait a moment before saying more.",
            "What a speaker sees when `EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE` drops their lines "
            "to an NPC, at most once a minute per NPC (`{name}`: the NPC's name; empty: "
            "nothing).",
            text(),
        ),
    )
}

# Where a setting's value comes from (see :func:`lookup`).
FROM_ENVIRONMENT = "environment"
FROM_SETTINGS = "settings file"
FROM_DEFAULT = "default"
FROM_STRICT = "strictest value (the setting cannot be read)"
FROM_DEFAULT_INSTEAD = "default (the configured value cannot be read)"

# name -> (the value that cannot be read, shown; what is wrong): the latest value of each
# setting read in this process that was refused.
_UNREADABLE: dict[str, tuple[str, str]] = {}
# (name, value shown, problem) already logged: each is logged once.
_LOGGED: set[tuple[str, str, str]] = set()


def _unreadable(setting: Setting, value: Any, problem: str) -> None:
    """Note (and log, once per setting and value) that ``value`` of ``setting`` cannot be
    read."""
    shown = _shown(value)
    _UNREADABLE[setting.name] = (shown, problem)
    if (setting.name, shown, problem) in _LOGGED:
        return
    _LOGGED.add((setting.name, shown, problem))
    if setting.holds:
        instead = "every assistant's model calls stop until it is fixed"
    elif setting.fail_closed:
        instead = f"its strictest value {setting.strict!r} is used instead"
    else:
        instead = f"its default {setting.default!r} is used instead"
    _log.warning(
        f"{log_prefix()}: {setting.name} = {shown} cannot be read ({problem}; it must be "
        f"{setting.kind.expected}); {instead}"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def unreadable_settings() -> dict[str, str]:
    """Every budget and security setting whose value cannot be read now, with why.

    Reads each of them (so each is logged once): server start and ``aistatus`` report them.

    Returns:
        ``{name: "<value> cannot be read (<problem>); <what is used instead>"}``.
    """
    found = {}
    for setting in SETTINGS.values():
        if not setting.fail_closed:
            continue
        if lookup(setting.name)[1] == FROM_STRICT:
            shown, problem = _UNREADABLE.get(setting.name, ("?", "cannot be read"))
            instead = (
                "no assistant calls a model until it is fixed"
                if setting.holds
                else f"the strictest value {setting.strict!r} is used"
            )
            found[setting.name] = f"{shown} cannot be read ({problem}); {instead}"
    return found


def holding_problems() -> list[str]:
    """Unreadable settings that stop every assistant's model calls (``Setting.holds``)."""
    return [
        f"{name} cannot be read"
        for name, setting in SETTINGS.items()
        if setting.holds and lookup(name)[1] == FROM_STRICT
    ]


_UNSET = object()


def lookup(name: str) -> tuple[Any, str]:
    """The current value of a setting, of its declared type, and where it comes from.

    Args:
        name: An ``EVENNIA_AI_*`` name from :data:`SETTINGS`.

    Returns:
        ``(value, source)``: the environment value (for ``env`` settings, when set and
        non-empty) with :data:`FROM_ENVIRONMENT`, else the game's ``settings.py`` value with
        :data:`FROM_SETTINGS`, else the documented default with :data:`FROM_DEFAULT`. The
        environment is the server process's own: ``evennia reload`` keeps it, only
        ``evennia reboot`` (or a stop and start) reads it again. A configured value that
        cannot be read as the declared type is logged (once) and replaced: by the strictest
        value (:data:`FROM_STRICT`) for a budget or security setting, else by the default
        (:data:`FROM_DEFAULT_INSTEAD`).

    Raises:
        KeyError: If ``name`` is not a known setting.
    """
    setting = SETTINGS[name]
    if setting.env:
        raw = os.environ.get(name)
        if raw not in (None, ""):
            return _read(setting, raw, FROM_ENVIRONMENT)
    # Django's settings are read only when Django is already loaded: settings cannot have been
    # configured otherwise, and this keeps the pure modules that read settings free of Django.
    django_conf = sys.modules.get("django.conf")
    settings = getattr(django_conf, "settings", None)
    if settings is not None:
        # The settings object the lazy proxy stands for, read directly: the proxy's own
        # look-up costs several times more (an exception for every setting the game leaves
        # unset), and it holds nothing else for these names. ``settings.X = ...`` and
        # ``override_settings`` change or replace this object, so a change is seen at once.
        wrapped = settings._wrapped
        if wrapped is not getattr(django_conf, "empty", None):  # the mark of not configured
            value = getattr(wrapped, name, _UNSET)
            if value is not _UNSET:
                return _read(setting, value, FROM_SETTINGS)
    return setting.default, FROM_DEFAULT


def _read(setting: Setting, value: Any, source: str) -> tuple[Any, str]:
    """``value`` as ``setting`` reads it, or what stands for it when it cannot be read."""
    try:
        return setting.read(value), source
    except (TypeError, ValueError) as err:
        _unreadable(setting, value, str(err))
        return setting.instead, (FROM_STRICT if setting.fail_closed else FROM_DEFAULT_INSTEAD)


def get(name: str) -> Any:
    """Return the current value of a setting, of its declared type (see :func:`lookup`).

    The typed readers below return the same value typed for a type checker.

    Raises:
        KeyError: If ``name`` is not a known setting.
    """
    return lookup(name)[0]


def _typed(name: str, wanted: type, optional: bool) -> Any:
    """The value of ``name``, which must be declared of type ``wanted`` (or None with
    ``optional``): reading a setting as another type is a mistake in the code."""
    kind = SETTINGS[name].kind
    if kind.type is not wanted or kind.optional is not optional:
        asked = f"{wanted.__name__}{' or None' if optional else ''}"
        raise TypeError(f"{name} is declared {kind.label}, not read as {asked}")
    return lookup(name)[0]


def get_int(name: str) -> int:
    """The value of a setting declared a whole number (:func:`whole`)."""
    value: int = _typed(name, int, False)
    return value


def get_float(name: str) -> float:
    """The value of a setting declared a number (:func:`number`)."""
    value: float = _typed(name, float, False)
    return value


def get_bool(name: str) -> bool:
    """The value of a setting declared true or false (:func:`flag`)."""
    value: bool = _typed(name, bool, False)
    return value


def get_str(name: str) -> str:
    """The value of a setting declared a text (:func:`text`, :func:`choice`, :func:`path`)."""
    value: str = _typed(name, str, False)
    return value


def get_texts(name: str) -> list[str]:
    """The value of a setting declared a list of texts (:func:`texts`)."""
    if SETTINGS[name].kind.label != "list[str]":
        raise TypeError(f"{name} is declared {SETTINGS[name].kind.label}, not read as list[str]")
    value: list[str] = lookup(name)[0]
    return value


def get_list(name: str) -> list[Any]:
    """The value of a setting declared a list (:func:`items` or :func:`texts`)."""
    value: list[Any] = _typed(name, list, False)
    return value


def get_dict(name: str) -> dict[str, Any]:
    """The value of a setting declared a dict (:func:`mapping`)."""
    value: dict[str, Any] = _typed(name, dict, False)
    return value


def get_optional_int(name: str) -> int | None:
    """The value of a setting declared a whole number or None (a daily token budget)."""
    value: int | None = _typed(name, int, True)
    return value


def get_optional_float(name: str) -> float | None:
    """The value of a setting declared a number or None."""
    value: float | None = _typed(name, float, True)
    return value


def get_optional_str(name: str) -> str | None:
    """The value of a setting declared a text or None."""
    value: str | None = _typed(name, str, True)
    return value


def get_optional_dict(name: str) -> dict[str, Any] | None:
    """The value of a setting declared a dict or None."""
    value: dict[str, Any] | None = _typed(name, dict, True)
    return value


def get_optional_pair(name: str) -> tuple[str, str] | None:
    """The value of a setting declared a pair of texts or None (:func:`daily_window`)."""
    value: tuple[str, str] | None = _typed(name, tuple, True)
    return value


def forget_unreadable() -> None:
    """Forget the values that could not be read so far: each is logged again when next read
    (tests; a changed configuration is logged anyway)."""
    _UNREADABLE.clear()
    _LOGGED.clear()


def render_settings_markdown() -> str:
    """Render the configuration reference (``docs/configuration.md``) from :data:`SETTINGS`."""
    lines = [
        "# Configuration reference",
        "",
        "Every setting is optional. Put it in your game's `server/conf/settings.py`; values are",
        "read at call time. Settings marked *env* may also be set in the process environment,",
        "which wins over `settings.py`. The server keeps the environment it was started with:",
        "after changing an `EVENNIA_AI_*` variable run `evennia reboot` (`evennia reload` keeps",
        "the old value). `aistatus <npc>` shows where the model, api base, memory and budget",
        "settings of an NPC come from (its own value, the environment, the settings file or the",
        "default). This file is generated from `evennia_ai/conf.py` by",
        "`scripts/gen_config_docs.py` (a test keeps them in step).",
        "",
        "Each setting has a type (its *type* column): `int` is a whole number, `float` any",
        "number, `bool` True or False, `str` a text, `list[str]` a list of texts; `≥ 0` gives",
        'the least value allowed. A text that reads as the type counts as it (`"20"` for an',
        '`int`, `"false"` or `"off"` for a `bool`); lists given in the environment are',
        "comma-separated.",
        "",
        "A value that cannot be read as its setting's type (a word where a number belongs, a",
        "number below the least allowed) is logged once, naming the setting, and the default is",
        "used instead - except for the budget and security settings: such a value of one of",
        "them is logged, reported at server start and by `aistatus`, and counts as its",
        'strictest value, given in its row as *Unreadable:* (see `docs/security.md`, "When',
        'stored state cannot be read"). The store settings (`dict or None`:',
        "`EVENNIA_AI_MEM0_CONFIG`, `EVENNIA_AI_KEYWORD_INDEX`) are checked by long-term memory",
        "when it starts instead: one it cannot use never falls back to another store (see",
        "`docs/memory.md`).",
        "",
        "| setting | type | default | env | meaning |",
        "|---|---|---|---|---|",
    ]
    for s in SETTINGS.values():
        doc = s.doc
        if s.fail_closed:
            strict = "no assistant calls a model" if s.holds else f"`{s.strict!r}`"
            doc += f" *Unreadable:* {strict}."
        lines.append(
            f"| `{s.name}` | {s.kind.label} | `{s.default!r}` | {'yes' if s.env else ''} | {doc} |"
        )
    return "\n".join(lines) + "\n"
