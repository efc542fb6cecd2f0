"""Settings of evennia-ai: one home for every ``EVENNIA_AI_*`` name and its default.

Values are read at call time, so a game's ``settings.py`` and Django's
``override_settings`` take effect without a restart. The names marked ``env=True`` may also be
set in the process environment, which wins over ``settings.py`` (handy for API keys and for
``make demo``).

Example:
    from evennia_ai import conf
    model = conf.get("EVENNIA_AI_MODEL")

The table in ``docs/configuration.md`` is generated from :data:`SETTINGS` (and a test checks it).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

OFFLINE_MODEL = "evennia_ai/offline"
_log = logging.getLogger("evennia_ai")  # routed to Evennia's log by evennia_ai.startstop


@dataclass(frozen=True)
class Setting:
    """One documented setting.

    Attributes:
        name: The ``EVENNIA_AI_*`` name used in ``settings.py``.
        default: Value used when the game sets nothing.
        doc: One line for the configuration reference.
        env: Whether an environment variable of the same name overrides ``settings.py``.
        read: For budget and security settings: turns a configured value into the one used,
            raising ValueError (saying what is expected) when it cannot be read. None: the
            value is used as configured.
        strict: The value used instead of one ``read`` refuses: the strictest safe value
            (see docs/security.md, "When stored state cannot be read").
        holds: An unreadable value has no strictest value that could stand for it (the
            secrets to keep, the operator's file): every assistant's model calls stop until
            it is fixed (:func:`holding_problems`).
    """

    name: str
    default: Any
    doc: str
    env: bool = False
    read: Callable[[Any], Any] | None = None
    strict: Any = None
    holds: bool = False


# -- readers of the budget and security settings (``Setting.read``) -------------------------------
def _daily_budget(kind: type) -> Callable[[Any], Any]:
    """A reader of a daily budget: None, "" or 0 mean no limit; else a positive number."""

    def read(value: Any) -> Any:
        if value in (None, "") or (type(value) in (int, float) and value == 0):
            return None
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ValueError("must be a positive number, or None for no limit")
        if kind is int:
            if number != int(number):
                raise ValueError("must be a whole number of tokens, or None for no limit")
            return int(number) or None
        return number or None

    return read


def _whole(low: int) -> Callable[[Any], int]:
    """A reader of a whole number of at least ``low``."""

    def read(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"must be a whole number of at least {low}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"must be a whole number of at least {low}") from None
        if not math.isfinite(number) or number != int(number) or number < low:
            raise ValueError(f"must be a whole number of at least {low}")
        return int(number)

    return read


def _texts(value: Any) -> list[str]:
    """A reader of a list of texts (one text alone counts as a list of one)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError("must be a list of texts")
    if not all(isinstance(item, str) for item in value):
        raise ValueError("must be a list of texts (an item is not a text)")
    return list(value)


def _budget_action(value: Any) -> str:
    word = str(value or "offline").strip().lower() if isinstance(value, (str, type(None))) else ""
    if word not in ("offline", "silence", "message"):
        raise ValueError("must be offline, silence or message")
    return word


def _path(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError("must be the path of a file, or empty")
    return os.fspath(value)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        # --- model ---------------------------------------------------------------------------
        Setting(
            "EVENNIA_AI_MODEL",
            "",
            "litellm model name (e.g. `openai/gpt-4o-mini`, `ollama/llama3`). Empty: the built-in offline model.",
            env=True,
        ),
        Setting(
            "EVENNIA_AI_API_BASE",
            "",
            "Base URL of an OpenAI-compatible endpoint (Ollama, vLLM, a litellm proxy).",
            env=True,
        ),
        Setting(
            "EVENNIA_AI_API_KEY",
            "",
            "API key passed to litellm. Empty: litellm reads the provider's own variable.",
            env=True,
        ),
        Setting(
            "EVENNIA_AI_FALLBACK_MODELS",
            [],
            "Ordered list of models tried when the main model fails after its retries. The environment form is comma-separated.",
            env=True,
        ),
        Setting(
            "EVENNIA_AI_TIMEOUT",
            30.0,
            "Seconds one model call may take before it counts as timed out.",
            env=True,
        ),
        Setting(
            "EVENNIA_AI_MAX_RETRIES",
            2,
            "Retries per model on rate limits, 5xx and timeouts (exponential backoff with jitter).",
        ),
        Setting(
            "EVENNIA_AI_RETRY_BASE_DELAY",
            0.5,
            "First backoff delay in seconds; doubles each retry, capped by EVENNIA_AI_RETRY_MAX_DELAY.",
        ),
        Setting(
            "EVENNIA_AI_RETRY_MAX_DELAY",
            8.0,
            "Longest single backoff delay in seconds (a server's retry-after is honoured up to this).",
        ),
        Setting(
            "EVENNIA_AI_MODEL_SETTINGS",
            {},
            "Per-model options: `native_tools`, `context_window`, `api_base`, `api_key`, `timeout`, e.g. `{'ollama/llama2': {'native_tools': False, 'context_window': 4096}}`.",
        ),
        Setting(
            "EVENNIA_AI_BUILDER_MODELS",
            [],
            "Models a Builder may give an NPC (`ainpc/model`, the dashboard, the API); `default` "
            "lets Builders return an NPC to the server's model. Any other choice needs Developer, "
            "since the model sets what an NPC spends. Empty: only Developers change models.",
        ),
        Setting(
            "EVENNIA_AI_THREAD_POOL_SIZE",
            10,
            "Threads for long-term memory calls and other blocking work (a pool of daemon "
            "threads of its own, so a reload never waits for a call in flight). Model calls do "
            "not use it: they run on one event loop (see EVENNIA_AI_MAX_CONCURRENT_CALLS).",
        ),
        Setting(
            "EVENNIA_AI_ROUTER",
            None,
            'A litellm Router in the server: {"model_list": [deployments], <Router options: '
            "routing_strategy, num_retries, allowed_fails, cooldown_time, fallbacks...>}. Model "
            "names of the list (an NPC's model, EVENNIA_AI_MODEL, a fallback) are served through "
            "it, across its deployments; EVENNIA_AI_FALLBACK_MODELS come after the Router gave "
            "up. None: no Router (see docs/scaling.md).",
        ),
        Setting(
            "EVENNIA_AI_MAX_CONCURRENT_CALLS",
            32,
            "Model calls in flight at once per endpoint (an api_base, or a provider such as "
            "openai); more wait their turn without holding a thread. A model's own "
            "`max_concurrent` in EVENNIA_AI_MODEL_SETTINGS overrides it for its endpoint. Set "
            "it to what the model server serves in parallel (vLLM's max_num_seqs, Ollama's "
            "OLLAMA_NUM_PARALLEL) or a provider's rate limit allows.",
        ),
        Setting(
            "EVENNIA_AI_LITELLM_CALLBACKS",
            [],
            "litellm callbacks (names such as `langfuse`, or dotted paths to CustomLogger instances/classes).",
        ),
        Setting(
            "EVENNIA_AI_BATCH_WRITES",
            True,
            "Send the assistants' Attribute writes of one reactor turn to the database together "
            "when the turn ends (one transaction), rather than one transaction per write; the "
            "values change in memory at once and a shutdown or reload writes them first. "
            "False: every write is saved at once.",
        ),
        Setting(
            "EVENNIA_AI_TURN_SLICE_MS",
            4.0,
            "Milliseconds of assistant work the reactor runs in one turn before it reads its "
            "sockets again (pieces of ticks, first come first served; a piece is never cut). "
            "0: one piece per turn.",
        ),
        Setting(
            "EVENNIA_AI_SWITCH_INTERVAL",
            None,
            "Seconds set as the interpreter's thread switch interval at server start "
            "(sys.setswitchinterval; Python's is 0.005). With hundreds of NPCs the model-call "
            "loop's thread works for every call and the reactor waits for it up to this long "
            "each time it wants the interpreter back: 0.001 halved the reactor's lag p99 in "
            "`bench scale` but added ~10 ms to one NPC's reply in `bench npc_ab` "
            "(docs/scaling.md). None: leave Python's.",
        ),
        # --- ticking -------------------------------------------------------------------------
        Setting("EVENNIA_AI_TICK_INTERVAL", 5, "Seconds between an assistant's ticks."),
        Setting(
            "EVENNIA_AI_AUTONOMY",
            True,
            "Whether idle assistants with active goals take autonomous ticks.",
        ),
        Setting(
            "EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL",
            60,
            "Least seconds between two autonomous ticks of one assistant.",
        ),
        Setting(
            "EVENNIA_AI_IDLE_NEEDS_AUDIENCE",
            True,
            "Whether autonomous ticks and reflection wait for a player within earshot (now or in "
            "the last `EVENNIA_AI_AUDIENCE_WINDOW` seconds); a goal marked as needing no "
            "audience is worked on anyway. False: they run whoever is there.",
        ),
        Setting(
            "EVENNIA_AI_AUDIENCE_WINDOW",
            600,
            "Seconds a player counts as within earshot of an assistant after leaving its room.",
        ),
        Setting(
            "EVENNIA_AI_NPC_EXCHANGE_TURNS",
            3,
            "Lines of another AI NPC addressed to an assistant that it answers since a player "
            "last spoke in its room (0: AI NPCs never answer each other); later ones only reach "
            "its context buffer.",
        ),
        Setting(
            "EVENNIA_AI_EVENT_QUEUE_SIZE",
            50,
            "Most events an assistant keeps queued; the oldest low-priority ones go first.",
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MAX_MESSAGES",
            200,
            "Most conversation-history messages kept per assistant before token budgeting.",
        ),
        Setting("EVENNIA_AI_TRACE_RING_SIZE", 50, "Tick traces kept per assistant."),
        Setting(
            "EVENNIA_AI_CONTEXT_BUFFER_SIZE", 20, "Recent room messages kept as ambient context."
        ),
        Setting("EVENNIA_AI_TOOL_TIMEOUT", 30.0, "Seconds an ASYNC_REQUIRED tool may run."),
        Setting(
            "EVENNIA_AI_HELPERS_PER_TICK",
            2,
            "Most `delegate_task` helpers started in one tick (`sub_agent_budget` caps how many "
            "run at once).",
        ),
        Setting(
            "EVENNIA_AI_HELPER_TOKEN_BUDGET",
            20000,
            "Most prompt plus completion tokens one `delegate_task` helper may use.",
            read=_whole(1),
            strict=20000,
        ),
        Setting(
            "EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED",
            False,
            "Let `delegate_task` helpers use the tools that change the NPC itself or undo things "
            "(`update_system_prompt`, memory block writes, `archival_delete`, `move`, `give`, "
            "...), when the NPC may use them. Off: a helper gets its parent's tools without "
            "those; DANGEROUS and speech tools are never a helper's.",
        ),
        Setting(
            "EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY",
            8,
            "Most tool calls run from one model answer; the rest are refused in the trace.",
        ),
        Setting(
            "EVENNIA_AI_CONFIRMATION_CHANNEL",
            None,
            "Evennia channel (key or alias) that is told, as online Builders are, when an action "
            "starts waiting for `aiconfirm` and when it is decided; None: no channel. Give it a "
            "`listen:perm(Builder)` lock: the notices show what NPCs want to run.",
        ),
        Setting(
            "EVENNIA_AI_WEB_MENU_LINK",
            True,
            'Add an "AI NPCs" link to the website\'s menu for accounts with the Builder '
            "permission (read when the web app starts). A game with its own "
            "`web/templates/website/_menu.html` keeps it and adds the link itself (see "
            "docs/installing.md).",
        ),
        Setting(
            "EVENNIA_AI_STRICT_CONTRACTS",
            False,
            "Raise ContractViolation when a request lacks its task or inputs (tests); off, it "
            "is logged and counted (see docs/prompts.md).",
        ),
        Setting(
            "EVENNIA_AI_TASK_JOURNAL_ENTRIES",
            30,
            "Most journal entries a reflection or sleep-consolidation request carries (latest).",
        ),
        Setting(
            "EVENNIA_AI_TOOL_RESULT_SHARE",
            0.25,
            "Largest share of the model's prompt budget one tool result may take; longer "
            "results are cut with a marker saying how to read the rest.",
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
        ),
        Setting(
            "EVENNIA_AI_MAX_OUTPUT_CHARS",
            1000,
            "Most characters of one thing an NPC says, emotes, whispers or pages.",
            read=_whole(1),
            strict=1000,
        ),
        Setting(
            "EVENNIA_AI_OUTPUT_STRIP_COLOUR",
            False,
            "Strip colour codes from what NPCs say and emote (other markup is always removed).",
        ),
        Setting(
            "EVENNIA_AI_SPEAKABLE_LINES",
            [],
            "Lines an NPC may always say, whatever players whispered to it (a required "
            "greeting); lines of an operator prompt starting with `Speakable:` count too.",
            read=_texts,
            strict=[],
        ),
        Setting(
            "EVENNIA_AI_WHISPER_GUARD_WINDOW_WORDS",
            80,
            "Words of an NPC's recent output to each listener that the whisper guard reads "
            "together with what it is about to say, so a whisper split over several lines is "
            "caught (at least 5 count; kept in memory until a reload).",
        ),
        Setting(
            "EVENNIA_AI_SECRETS",
            [],
            "Texts no NPC ever says, emotes, whispers or pages (5 words in a row of one, or all "
            "of a shorter one); lines of an operator prompt starting with `Secret:` count too.",
            read=_texts,
            strict=[],
            holds=True,
        ),
        Setting(
            "EVENNIA_AI_OPERATOR_QUOTE_WORDS",
            12,
            "Most consecutive words of its operator prompt an NPC may repeat to anyone "
            "(speakable lines exempt); 0 turns the check off.",
            read=_whole(0),
            strict=12,
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MAX_CHARS",
            120000,
            "Most characters of content an NPC's history holds; older ticks go first.",
        ),
        Setting(
            "EVENNIA_AI_HISTORY_MESSAGE_CHARS",
            6000,
            "Most characters of one message kept in history (a long tool result is cut).",
        ),
        Setting(
            "EVENNIA_AI_TRACE_MAX_CHARS",
            60000,
            "Most characters of JSON one stored tick trace takes (texts are cut to fit).",
        ),
        Setting(
            "EVENNIA_AI_RECORD_TICKS",
            False,
            "Record every tick (the state its request is built from, each model request and reply, secrets redacted) to `<data dir>/recordings/<npc>-<id>.jsonl`, for `python -m evennia_ai.engine.replay`.",
        ),
        Setting(
            "EVENNIA_AI_RECORD_MAX_BYTES",
            20_000_000,
            "Largest size of one NPC's tick recording file; past it recording that NPC stops (one log line).",
        ),
        Setting(
            "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE",
            20,
            "Most events one speaker can queue for an NPC in a minute; the rest are dropped "
            "(noted in the next trace). 0 turns the limit off.",
            read=_whole(0),
            strict=20,
        ),
        Setting(
            "EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS",
            20000,
            "Longest arguments (JSON characters) of one tool call a model may send; longer "
            "calls are refused before anything stores them.",
            read=_whole(1),
            strict=20000,
        ),
        Setting(
            "EVENNIA_AI_MAX_EVENT_CHARS",
            2000,
            "Characters of a line a player says (or anything an NPC perceives) kept for it; "
            "a pasted novel is cut before it is queued.",
            read=_whole(1),
            strict=2000,
        ),
        Setting("EVENNIA_AI_REFLECTION_INTERVAL", 50, "Ticks between reflections."),
        Setting(
            "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD",
            30,
            "Summed journal importance since the last reflection that triggers one early.",
        ),
        Setting(
            "EVENNIA_AI_SLEEP_SCHEDULE",
            None,
            "Daily sleep window as `('HH:MM', 'HH:MM')` server time, or None for no scheduled sleep.",
        ),
        Setting(
            "EVENNIA_AI_WAKE_WHEN_ADDRESSED",
            True,
            "Whether speech addressed to a sleeping assistant wakes it.",
        ),
        # --- context and memory --------------------------------------------------------------
        Setting(
            "EVENNIA_AI_CONTEXT_WINDOWS",
            {},
            "Per-model context window overrides in tokens, e.g. `{'openai/my-model': 32768}`.",
        ),
        Setting(
            "EVENNIA_AI_RESERVED_RESPONSE_TOKENS",
            1024,
            "Tokens kept free in every request for the model's answer.",
        ),
        Setting(
            "EVENNIA_AI_OPERATOR_OVERRIDE",
            "",
            "Path of an operator override file injected at the very top of every system prompt; re-read when it changes.",
            read=_path,
            strict="",
            holds=True,
        ),
        Setting(
            "EVENNIA_AI_DATA_DIR",
            "",
            "Folder for the keyword index and the embedded long-term memory. Empty: `<game dir>/server/ai_data`.",
        ),
        Setting(
            "EVENNIA_AI_BLOCK_DESCRIPTIONS",
            True,
            "Show memory-block descriptions under their tags in the prompt.",
        ),
        Setting(
            "EVENNIA_AI_ARCHIVAL_MAX_ENTRIES",
            1000,
            "Archival entries kept per assistant (oldest dropped first).",
        ),
        Setting(
            "EVENNIA_AI_ARCHIVAL_HITS",
            3,
            "Archival entries shown per tick by the archival_hits source.",
        ),
        Setting("EVENNIA_AI_MEMORY_TOP_K", 5, "Long-term memories recalled per search."),
        Setting(
            "EVENNIA_AI_RECALL_MODE",
            "auto",
            'Search mode of the memories recalled into every request ("Things you remember"): '
            "auto (hybrid when the embedder is loaded, else keyword), keyword, vector or "
            "hybrid. An unknown value is logged once and auto is used.",
        ),
        Setting(
            "EVENNIA_AI_MEMORY_GATE",
            True,
            "Check each long-term memory before it is stored: near-duplicates are merged or skipped, restatements of the persona, the prompt, a tool result or a memory just recalled are skipped, and an update supersedes the memory it replaces (docs/memory.md, What is kept). False stores every text that is not an exact duplicate.",
        ),
        Setting(
            "EVENNIA_AI_MEMORY_THRESHOLD",
            0.3,
            "Least relevance score for a recalled long-term memory (vector hits; keyword hits are ranked, not thresholded).",
        ),
        Setting(
            "EVENNIA_AI_EMBEDDING_CACHE_SIZE",
            20000,
            "Embeddings of archival entries kept in memory for searches by meaning (about 1.5 KB each with the local embedder); at least the largest archive searched, or each search embeds it again.",
        ),
        Setting(
            "EVENNIA_AI_OPENAI_SDK_ROUTE",
            False,
            "Send `openai/<name>` models at a custom EVENNIA_AI_API_BASE through the OpenAI SDK; the default uses litellm's plain OpenAI-compatible HTTP route, 15 ms faster per call for the same request.",
        ),
        Setting(
            "EVENNIA_AI_GC_FREEZE",
            True,
            "After the model stack and long-term memory have loaded, exempt their objects from Python's garbage collector (gc.freeze), and freeze the survivors of every later full collection, so full collections no longer stall the server for hundreds of milliseconds.",
        ),
        Setting(
            "EVENNIA_AI_GC_THAW_INTERVAL",
            3600,
            "Seconds between thaws of the frozen objects (`EVENNIA_AI_GC_FREEZE`), so cycles "
            "that died while frozen are collected (0: never).",
        ),
        Setting(
            "EVENNIA_AI_MEMORY_VECTOR_INDEX",
            True,
            "Search the embedded Qdrant's vectors through an in-process per-NPC index (Qdrant's local mode filters every point in Python); no effect with a Qdrant server or pgvector.",
        ),
        Setting(
            "EVENNIA_AI_WARMUP_DELAY",
            3.0,
            "Seconds after server start before litellm and the tokenizer are loaded in a thread (the first reply is then fast).",
        ),
        Setting(
            "EVENNIA_AI_MEMORY_INIT_DELAY",
            10.0,
            "Seconds after server start before long-term memory loads its embedder (in a thread).",
        ),
        Setting(
            "EVENNIA_AI_MEM0_CONFIG",
            None,
            "A full mem0 configuration dict replacing the embedded default (Qdrant server, pgvector, any litellm embedder).",
        ),
        Setting(
            "EVENNIA_AI_KEYWORD_INDEX",
            None,
            'Where the keyword index lives: None for SQLite FTS5 in the data folder; `{"backend": "postgres", "dsn": "postgresql://..."}` for PostgreSQL full-text search (without `dsn`: the server of a `pgvector` EVENNIA_AI_MEM0_CONFIG).',
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_STRATEGY",
            "summarize",
            "History compression: `summarize` (recursive summarisation by the model; truncation with the offline model) or `truncate`.",
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_SLEEP_RATIO",
            0.7,
            "Share of the history budget at which history is compacted during sleep.",
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_EMERGENCY_RATIO",
            0.8,
            "Share of the history budget at which history is compacted at once (after a fact-extraction pass).",
        ),
        Setting(
            "EVENNIA_AI_COMPACTION_KEEP_RECENT",
            20,
            "Messages always kept verbatim when history is compacted.",
        ),
        Setting(
            "EVENNIA_AI_SUMMARY_MODEL", "", "Model for history summaries (empty: the NPC's model)."
        ),
        Setting(
            "EVENNIA_AI_COMPONENT_ORDER",
            "default",
            "Component order: `default` (the ID order) or `cache_friendly` (stable text first, for provider prompt caches).",
        ),
        # --- budgets -------------------------------------------------------------------------
        Setting(
            "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC",
            None,
            "Tokens one assistant may use per day; None for no limit.",
            read=_daily_budget(int),
            strict=0,
        ),
        Setting(
            "EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER",
            None,
            "Tokens all assistants together may use per day; None for no limit.",
            read=_daily_budget(int),
            strict=0,
        ),
        Setting(
            "EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC",
            None,
            "Cost (USD, as litellm prices it) one assistant may spend per day; None for no limit.",
            read=_daily_budget(float),
            strict=0.0,
        ),
        Setting(
            "EVENNIA_AI_DAILY_COST_BUDGET_SERVER",
            None,
            "Cost (USD) all assistants together may spend per day; None for no limit.",
            read=_daily_budget(float),
            strict=0.0,
        ),
        Setting(
            "EVENNIA_AI_BUDGET_EXCEEDED_ACTION",
            "offline",
            "What an assistant does past its budget: `offline` (the offline model), `silence`, "
            "or `message` (no model call; whoever speaks to it gets "
            "`EVENNIA_AI_UNAVAILABLE_MESSAGE`).",
            read=_budget_action,
            strict="offline",
        ),
        Setting(
            "EVENNIA_AI_THINKING_DELAY",
            2.0,
            "Seconds a player waits for an answer before seeing `EVENNIA_AI_THINKING_MESSAGE` "
            "(0: never shown).",
        ),
        Setting(
            "EVENNIA_AI_THINKING_MESSAGE",
            "{name} pauses, thinking.",
            "What the speaker sees while the NPC's model is slow (`{name}`: the NPC's name; "
            "empty: nothing).",
        ),
        Setting(
            "EVENNIA_AI_UNAVAILABLE_MESSAGE",
            "{name} seems lost in thought and does not answer.",
            "What the speaker sees when the NPC's model fails or its budget is spent in "
            "`message` mode (`{name}`: the NPC's name; empty: nothing).",
        ),
    )
}


def _from_env(setting: Setting, raw: str) -> Any:
    default = setting.default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, list):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


# Where a setting's value comes from (see :func:`lookup`).
FROM_ENVIRONMENT = "environment"
FROM_SETTINGS = "settings file"
FROM_DEFAULT = "default"
FROM_STRICT = "strictest value (the setting cannot be read)"

# name -> (the value that cannot be read, shown; what is wrong): settings read in this process
# whose value was refused. Each is logged once per value.
_UNREADABLE: dict[str, tuple[str, str]] = {}


def _unreadable(name: str, value: Any, problem: str) -> None:
    shown = _shown(value)
    if _UNREADABLE.get(name) == (shown, problem):
        return
    _UNREADABLE[name] = (shown, problem)
    setting = SETTINGS[name]
    instead = (
        "every assistant's model calls stop until it is fixed"
        if setting.holds
        else f"its strictest value {setting.strict!r} is used instead"
    )
    _log.warning(f"{name} = {shown} cannot be read ({problem}); {instead}")


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
        if setting.read is None:
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


def lookup(name: str) -> tuple[Any, str]:
    """The current value of a setting and where it comes from.

    Args:
        name: An ``EVENNIA_AI_*`` name from :data:`SETTINGS`.

    Returns:
        ``(value, source)``: the environment value (for ``env`` settings, when set and
        non-empty) with :data:`FROM_ENVIRONMENT`, else the game's ``settings.py`` value with
        :data:`FROM_SETTINGS`, else the documented default with :data:`FROM_DEFAULT`. The
        environment is the server process's own: ``evennia reload`` keeps it, only
        ``evennia reboot`` (or a stop and start) reads it again.

    Raises:
        KeyError: If ``name`` is not a known setting.
    """
    setting = SETTINGS[name]
    if setting.env:
        raw = os.environ.get(name)
        if raw not in (None, ""):
            try:
                value = _from_env(setting, raw)
            except ValueError as err:
                _unreadable(name, raw, str(err))
                return setting.strict, FROM_STRICT
            return _checked(setting, value, FROM_ENVIRONMENT)
    # Django's settings are read only when Django is already loaded: settings cannot have been
    # configured otherwise, and this keeps the pure modules that read settings free of Django.
    django_conf = sys.modules.get("django.conf")
    settings = getattr(django_conf, "settings", None)
    if settings is not None and settings.configured and hasattr(settings, name):
        return _checked(setting, getattr(settings, name), FROM_SETTINGS)
    return setting.default, FROM_DEFAULT


def _checked(setting: Setting, value: Any, source: str) -> tuple[Any, str]:
    """``value`` as ``setting.read`` reads it, or its strict value when it cannot be read."""
    if setting.read is None:
        return value, source
    try:
        return setting.read(value), source
    except (TypeError, ValueError) as err:
        _unreadable(setting.name, value, str(err))
        strict = setting.strict
        return (list(strict) if isinstance(strict, list) else strict), FROM_STRICT


def get(name: str) -> Any:
    """Return the current value of a setting (see :func:`lookup` for the order).

    Raises:
        KeyError: If ``name`` is not a known setting.
    """
    return lookup(name)[0]


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
        "A budget or security setting whose value cannot be read (a word where a number",
        "belongs, a negative budget, a secret that is not text) is logged, reported at server",
        "start and by `aistatus`, and counts as its strictest value, given in its row as",
        '*Unreadable:* (see `docs/security.md`, "When stored state cannot be read").',
        "",
        "| setting | default | env | meaning |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS.values():
        doc = s.doc
        if s.read is not None:
            strict = "no assistant calls a model" if s.holds else f"`{s.strict!r}`"
            doc += f" *Unreadable:* {strict}."
        lines.append(f"| `{s.name}` | `{s.default!r}` | {'yes' if s.env else ''} | {doc} |")
    return "\n".join(lines) + "\n"
