"""Daily token and cost budgets, per assistant and for the whole server.

Usage is counted per assistant in its ``metrics`` Attribute (``daily`` maps a UTC date to
``{"tokens", "cost"}``, written once per tick by the tick runner). The server-wide figure is the
sum over all assistants; it is computed once per process and day from those Attributes and then
kept current in memory by :func:`record` (no extra database write per tick).

Limits come from settings (``EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC``,
``EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC``, ``EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER``,
``EVENNIA_AI_DAILY_COST_BUDGET_SERVER``) and may be tightened, never widened, for one assistant
with ``npc.ai.set("budget", {"tokens": 20000, "cost": 0.5})``. Past a limit the assistant
calls no model until the next UTC day (``EVENNIA_AI_BUDGET_EXCEEDED_ACTION``): by default
(``message``) whoever speaks to it hears its unavailable line (staff's text for it, ``ailines``,
else ``EVENNIA_AI_UNAVAILABLE_MESSAGE``); ``silence`` says nothing; ``offline`` lets the
built-in offline model answer with canned lines. :func:`check` says which, and
``npc.ai.status()`` shows it.

A budget that cannot be read is never no budget: a setting that cannot be read counts as 0
(:mod:`evennia_ai.conf` reads it, logs it and reports it), and an NPC's own budget set aside for
its shape reads as ``{"tokens": 0, "cost": 0}``. An NPC whose operator's word cannot be read (a
set-aside operator prompt, an unreadable override file or secrets setting) is *held*: the check
counts it as over budget (``scope == "held"``), so it calls no model the same way, until staff
restore or discard the value or fix the setting.
"""

from __future__ import annotations

import math
import threading

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine.accounting import (  # noqa: F401  (re-exported: this module's names)
    ACTION_MODES,
    ACTIONS,
    HELD,
    SpendingStatus,
    usage_on,
)
from evennia_ai.llm.tokens import model_info
from evennia_ai.npc.lookup import all_ai_npcs
from evennia_ai.utils import log_prefix, today

_lock = threading.Lock()
# day -> {"tokens": int, "cost": float}: the server's usage today (this process's view).
_server_day: dict[str, dict] = {}
# (npc dbref, day, scope, held) already logged as over budget or held, so the log says each
# once a day.
_announced: set[tuple] = set()


def _limit(value, kind=float):
    """A limit as read: None for no limit, else the number (0: nothing may be spent).

    Settings come through :func:`evennia_ai.conf.get`, which reads a budget setting (None, ""
    and 0 mean no limit) and gives one that cannot be read its strictest value, 0. An NPC's own
    budget is checked against its declared shape when read; one set aside reads as 0.
    """
    if value is None or value == "":
        return None
    return kind(value)


# Each daily limit of a SpendingStatus: its setting, the key of a per-NPC override, its type.
LIMITS = {
    "npc_token_limit": ("EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC", "tokens", int),
    "npc_cost_limit": ("EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC", "cost", float),
    "server_token_limit": ("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER", None, int),
    "server_cost_limit": ("EVENNIA_AI_DAILY_COST_BUDGET_SERVER", None, float),
}
#: The source :func:`limit_origins` gives a limit set by the NPC's own budget.
FROM_NPC = "this NPC"
#: The most an NPC's own daily limits may be: anything larger is a typing slip.
MAX_OWN_LIMITS = {"tokens": 1_000_000_000, "cost": 100_000.0}
#: The least an NPC's own cost limit may be (a smaller one reads as $0.00).
MIN_OWN_COST = 0.0001
_CLEARS = ("none", "off", "clear", "-")
_SUFFIXES = {"k": 1_000, "m": 1_000_000}


def parse_own_limit(key: str, text: str) -> int | float | None:
    """One of an NPC's own daily limits as an operator types it.

    ``tokens``: a whole number, ``20000``, ``20,000``, ``20k`` or ``1.5m``; ``cost``: dollars,
    ``0.5`` or ``$0.50``. ``none`` (or ``off``) clears the limit and returns None.

    Raises:
        ValueError: an unknown key, or a value that is not a positive number within
            :data:`MAX_OWN_LIMITS`, saying what is expected.
    """
    if key not in MAX_OWN_LIMITS:
        raise ValueError(f"Unknown limit {key!r}: an NPC's own daily limits are tokens and cost.")
    word = str(text or "").strip().lower().replace(",", "").replace("_", "")
    if word in _CLEARS:
        return None
    if key == "tokens":
        value = _token_count(word, text)
        low = 1
    else:
        try:
            value = float(word.removeprefix("$"))
        except ValueError:
            raise ValueError(f"cost must be dollars, like 0.50 or $2, not {text!r}.") from None
        low = MIN_OWN_COST
    if not value >= low:  # also refuses nan
        raise ValueError(f"{key} must be at least {low}; 'none' removes the limit.")
    if value > MAX_OWN_LIMITS[key]:
        raise ValueError(f"{key} must be at most {MAX_OWN_LIMITS[key]:,} a day.")
    return value


def _token_count(word: str, typed: str) -> int:
    """A token count from ``20000``, ``20k`` or ``1.5m`` (``word``: ``typed`` tidied)."""
    scale = _SUFFIXES.get(word[-1:], 1)
    number = word[:-1] if scale > 1 else word
    try:
        value = float(number) * scale
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value != int(value):
        raise ValueError(f"tokens must be a whole number, like 20000 or 20k, not {typed!r}.")
    return int(value)


def limit_origins(npc) -> dict[str, tuple[int | float | None, str, str]]:
    """Each daily limit of ``npc`` and where it comes from, by the keys of :data:`LIMITS`.

    Returns:
        ``{key: (limit, source, name)}``: the limit in force (None: no limit); its source, one
        of ``conf.lookup``'s or :data:`FROM_NPC` when the NPC's own budget is the tighter one;
        and the setting's name.
    """
    override = npc.ai.budget or {}
    origins = {}
    for key, (name, override_key, kind) in LIMITS.items():
        value, source = conf.lookup(name)
        limit = _limit(value, kind)
        own = _limit(override.get(override_key), kind) if override_key else None
        if own is not None and (limit is None or own <= limit):
            limit, source = own, FROM_NPC
        origins[key] = (limit, source, name)
    return origins


def action() -> str:
    """The configured over-budget action (``message`` unless set to another of :data:`ACTIONS`).

    Also what an assistant does while it is held (``SpendingStatus.held``).
    """
    value = conf.get("EVENNIA_AI_BUDGET_EXCEEDED_ACTION")  # an unreadable one reads as message
    return value if value in ACTIONS else "message"


def is_paid(model: str | None) -> bool:
    """Whether litellm's model map prices ``model`` (a provider that bills per token)."""
    info = model_info(model) if model and model != conf.OFFLINE_MODEL else None
    if not info:
        return False
    return any(
        float(info.get(key) or 0) > 0 for key in ("input_cost_per_token", "output_cost_per_token")
    )


def no_budget_set() -> bool:
    """Whether no daily budget setting limits anything (per NPC or for the server)."""
    return all(_limit(conf.get(name), kind) is None for name, _, kind in LIMITS.values())


def unbounded_spend_warning(model: str | None, status: SpendingStatus | None = None) -> str | None:
    """A warning when ``model`` is paid and no daily budget bounds what it may spend.

    ``status``: one NPC's standing (its own overrides count); None looks at the settings only
    (server start).
    """
    unbounded = status.unbounded if status is not None else no_budget_set()
    if not unbounded or not is_paid(model):
        return None
    return (
        f"{model} is a paid model and no daily budget is set: spending is unbounded (set "
        "EVENNIA_AI_DAILY_COST_BUDGET_SERVER or a per-NPC budget)"
    )


def server_usage(day: str | None = None) -> dict:
    """All assistants' usage on ``day`` (default today): ``{"tokens", "cost"}``.

    Computed from every assistant's metrics the first time it is asked for a day in this
    process, then kept current by :func:`record`.
    """
    day = day or today()
    with _lock:
        cached = _server_day.get(day)
        if cached is not None:
            return dict(cached)

    tokens, cost = 0, 0.0
    for npc in all_ai_npcs():
        t, c = usage_on(npc.ai.metrics, day)
        tokens, cost = tokens + t, cost + c
    with _lock:
        # Keep only today's figure: yesterday's can always be recomputed.
        for old in [d for d in _server_day if d != day]:
            _server_day.pop(old)
        _server_day.setdefault(day, {"tokens": tokens, "cost": round(cost, 6)})
        return dict(_server_day[day])


def record(tokens: int, cost: float, day: str | None = None) -> None:
    """Add one tick's usage to the server's running figure (the NPC's own is in its metrics)."""
    day = day or today()
    with _lock:
        entry = _server_day.get(day)
        if entry is None:
            return  # not computed yet: the first server_usage() call will count this tick
        entry["tokens"] += int(tokens)
        entry["cost"] = round(entry["cost"] + float(cost), 6)


def reset_cache() -> None:
    """Forget the in-memory server figures (tests; they are recomputed on demand)."""
    with _lock:
        _server_day.clear()
        _announced.clear()


def check(npc, metrics: dict | None = None) -> SpendingStatus:
    """Where ``npc`` stands against its daily budgets now.

    Args:
        npc: An assistant.
        metrics: Its metrics if the caller already read them (saves a read).
    """
    day = today()
    metrics = metrics if metrics is not None else npc.ai.metrics
    npc_tokens, npc_cost = usage_on(metrics, day)
    limits = {key: origin[0] for key, origin in limit_origins(npc).items()}
    npc_token_limit, npc_cost_limit = limits["npc_token_limit"], limits["npc_cost_limit"]
    server_token_limit, server_cost_limit = (
        limits["server_token_limit"],
        limits["server_cost_limit"],
    )
    if server_token_limit is None and server_cost_limit is None:
        server = {"tokens": 0, "cost": 0.0}
        if _server_day.get(day) is not None:
            server = server_usage(day)
    else:
        server = server_usage(day)

    held = tuple(npc.ai.held())
    scope = None
    if held:
        scope = HELD
    elif (npc_token_limit is not None and npc_tokens >= npc_token_limit) or (
        npc_cost_limit is not None and npc_cost >= npc_cost_limit
    ):
        scope = "npc"
    elif (server_token_limit is not None and server["tokens"] >= server_token_limit) or (
        server_cost_limit is not None and server["cost"] >= server_cost_limit
    ):
        scope = "server"
    status = SpendingStatus(
        day=day,
        exceeded=scope is not None,
        scope=scope,
        action=action(),
        npc_tokens=npc_tokens,
        npc_cost=round(npc_cost, 6),
        npc_token_limit=npc_token_limit,
        npc_cost_limit=npc_cost_limit,
        server_tokens=int(server["tokens"]),
        server_cost=round(float(server["cost"]), 6),
        server_token_limit=server_token_limit,
        server_cost_limit=server_cost_limit,
        held=held,
    )
    if status.exceeded:
        key = (getattr(npc, "dbref", str(id(npc))), day, scope, held)
        if key not in _announced:
            _announced.add(key)
            logger.log_warn(f"{log_prefix(npc)}: {status.describe()}.")
    return status


def server_totals() -> dict:
    """All-time and today's tokens and cost over every assistant (for status and the dashboard)."""

    totals = {"npcs": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "ticks": 0}
    for npc in all_ai_npcs():
        m = npc.ai.metrics
        totals["npcs"] += 1
        totals["prompt_tokens"] += int(m.get("prompt_tokens", 0))
        totals["completion_tokens"] += int(m.get("completion_tokens", 0))
        totals["cost"] += float(m.get("cost", 0.0))
        totals["ticks"] += int(m.get("ticks", 0))
    totals["cost"] = round(totals["cost"], 6)
    totals["today"] = server_usage()
    return totals
