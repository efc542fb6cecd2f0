"""The one place that turns assistants' state into plain dicts for the dashboard and the API.

Both the HTML pages (:mod:`evennia_ai.web.views`) and the JSON API (:mod:`evennia_ai.web.api`)
call these functions, so a page always shows what the API returns. Everything here is a quick
ORM read or a single decision; nothing calls a model or long-term memory.

What only Developers may see stays with them: the functions that show an NPC's state or traces
take the ``viewer`` (a request's user) and, below Developer, redact what
:mod:`evennia_ai.engine.redaction` keeps for Developers (values kept aside of the keys only they
change, texts of traces that would reveal a secret). Without a viewer they show what a Builder
sees.

Evennia serves its website from the Server process through Twisted's WSGI resource, in a
thread pool. Reads from a view thread are what Evennia's own website does; deciding a
confirmation runs the NPC's action, which may message sessions, so :func:`decide` hands it to
the reactor thread (:func:`on_reactor`) and waits for it. The NPC's place in the world
(:func:`world_view`) is built there too: reading a routine's status updates the routine's
shared in-memory status, and reading state that is badly shaped sets it aside (a write).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Callable

from evennia.objects.models import ObjectDB
from twisted.internet import reactor, threads
from twisted.python import threadable

from evennia_ai import access, conf
from evennia_ai.engine import redaction, routines
from evennia_ai.engine.audience import LINE_KINDS
from evennia_ai.memory import blocks as pure
from evennia_ai.memory import longterm
from evennia_ai.memory.block_admin import visible_blocks
from evennia_ai.npc import controls
from evennia_ai.npc import world_controls as world
from evennia_ai.npc.handler import describe_last_error
from evennia_ai.npc.history_report import history_report
from evennia_ai.npc.lookup import NPCMatchError, all_ai_npcs, find_ai_npc
from evennia_ai.npc.setting_sources import budget_origins, limit_text, origin_text, origin_value
from evennia_ai.prompt.assembly import select_components
from evennia_ai.prompt.builder import cache_friendly_order
from evennia_ai.prompt.contexts import CONTEXT_TYPES
from evennia_ai.prompt.execution_pattern import ALL_TOOL_CATEGORIES
from evennia_ai.prompt.registry import get_prompt_registry
from evennia_ai.prompt.registry_io import PromptRegistryError
from evennia_ai.tools.approvals import ConfirmationError, get_confirmation_queue
from evennia_ai.tools.rules import RULE_FORMS
from evennia_ai.utils import today, truncate
from evennia_ai.workspace.goals import goal_tree
from evennia_ai.workspace.projects import list_projects
from evennia_ai.world.goods import Goods, coins, goods_lines
from evennia_ai.world.ledger import today_of
from evennia_ai.world.money import MoneyError, money
from evennia_ai.world.stock import stock

RECENT_TRACES = 20  # traces shown on an NPC's page
MAX_VALUE_CHARS = 20_000  # characters of a setting's value from a form or the API
CHART_DAYS = 14  # days in the daily usage chart
KEPT_VALUE_CHARS = 200  # characters of a value kept aside shown on the NPC page
LEDGER_SHOWN = 10  # trades shown on an NPC's page, newest first


class NotFound(LookupError):
    """An NPC, trace or confirmation does not exist; the message is for the user."""


# -- threads ----------------------------------------------------------------------------------
def on_reactor(fn: Callable, *args, **kwargs) -> Any:
    """Run ``fn`` on the reactor thread and return its result (directly if already there).

    In the running Server, web views run in a Twisted thread pool while the reactor runs; code
    that may send to sessions must run on the reactor thread. Outside a running reactor (the
    Django test client, scripts) ``fn`` is simply called.
    """

    if reactor.running and not threadable.isInIOThread():
        return threads.blockingCallFromThread(reactor, fn, *args, **kwargs)
    return fn(*args, **kwargs)


# -- NPCs -------------------------------------------------------------------------------------
def get_npc(npc_id: Any):
    """The AI NPC with database id ``npc_id`` (raises :class:`NotFound`)."""

    try:
        number = int(str(npc_id).lstrip("#"))
    except (TypeError, ValueError):
        raise NotFound(f"'{npc_id}' is not an NPC id.") from None
    try:
        return find_ai_npc(f"#{number}")
    except NPCMatchError:
        raise NotFound(f"No AI NPC with id #{number}.") from None


def budget_message(budget: dict) -> str:
    """What an over-budget NPC does instead of calling its model ("" when within budget)."""
    if not budget.get("exceeded"):
        return ""
    scope = "its own" if budget.get("scope") == "npc" else "the server's"
    if budget.get("action") == "silence":
        return f"Over {scope} daily budget: silenced until 00:00 UTC."
    if budget.get("action") == "message":
        return f"Over {scope} daily budget: telling speakers it cannot answer until 00:00 UTC."
    return f"Over {scope} daily budget: offline model until 00:00 UTC."


def npc_summary(npc, viewer=None) -> dict:
    """The NPC-list row: ``npc.ai.status()`` plus state, today's usage and the budget line.

    The badge shows ``state_label`` (``state_class`` styles it): the state, or while the NPC
    runs but cannot answer, why (``model unreachable since 10:42 UTC``, ``held``, ``over
    budget``); ``not_answering`` has the reasons in full (``label``, ``detail``).

    Values kept aside (``quarantined``) are shown as ``viewer`` may see them
    (:func:`evennia_ai.engine.redaction.quarantined_shown_to`).
    """
    status = npc.ai.status()
    budget = status.get("budget") or {}
    kept = redaction.quarantined_shown_to(viewer, npc, status.get("quarantined") or {})
    return {
        **status,
        "quarantined": kept,
        "id": npc.id,
        "state": status["state"],
        "tokens_today": int(budget.get("npc_tokens") or 0),
        "cost_today": float(budget.get("npc_cost") or 0.0),
        "over_budget": bool(budget.get("exceeded")),
        "budget_message": budget_message(budget),
        "last_error_text": describe_last_error(status),
        "host": bool(npc.ai.host),  # the lines of its room that name no AI NPC go to it first
    }


def npc_list(viewer=None) -> list[dict]:
    """Every AI NPC's summary, by id, as ``viewer`` may see it."""

    return [npc_summary(npc, viewer) for npc in all_ai_npcs()]


def npc_detail(npc, viewer=None) -> dict:
    """Everything the NPC page shows, in one dict (the API's NPC detail), as ``viewer`` may
    see it."""
    summary = npc_summary(npc, viewer)
    return {
        **summary,
        "location": npc.location.key if npc.location else None,
        "persona": npc.ai.persona,
        "host_text": controls.host_text(npc),
        "own_model": npc.ai.model,  # "" when it uses the server default
        # The operator prompt may hold secrets: its text is for Developers only (operator_prompt).
        "operator_prompt_chars": len(npc.ai.user_system_prompt or ""),
        "budget_text": budget_text(npc.ai.budget or {}),
        "cost_unknown": cost_unknown(npc),
        "goals": goals_tree(npc),
        "projects": projects(npc),
        "blocks": memory_blocks(npc),
        "traces": trace_list(npc, RECENT_TRACES, viewer),
        "usage": usage_series(npc, viewer=viewer),
        "confirmations": confirmations(npc=npc),
        "tools": tool_settings(npc),
        "budget_limits": budget_limits(npc),
        "history": history(npc),
        "longterm": longterm_status(npc),
        "kept_aside": kept_aside_rows(summary["quarantined"]),
        **world_view(npc),  # routine, goods, ledger
    }


def kept_aside_rows(kept: dict) -> list[dict]:
    """Values kept aside (already as the viewer may see them) as rows: key, time, problem and
    the value as JSON text (cut to :data:`KEPT_VALUE_CHARS`), or the marker it was replaced by."""
    rows = []
    for key, entry in (kept or {}).items():
        entry = entry if isinstance(entry, dict) else {}
        value = entry.get("value", redaction.KEPT_ASIDE_WITHHELD)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        rows.append(
            {
                "key": key,
                "time": entry.get("time"),
                "problem": str(entry.get("problem") or ""),
                "value_text": truncate(text, KEPT_VALUE_CHARS),
                "redacted": bool(entry.get("redacted")),
            }
        )
    return rows


# -- settings and their controls --------------------------------------------------------------
def tool_settings(npc) -> dict:
    """Every tool with its verdict for the NPC, its lists and categories, and its tool rules
    (numbered, with notes) with the rules section of its system prompt as the model reads it."""
    rows = controls.tool_rows(npc)
    return {
        "tools": [{**asdict(row), "allowed": row.allowed} for row in rows],
        "usable": sum(row.allowed for row in rows),
        "allow": npc.ai.tool_allow,
        "deny": sorted(npc.ai.tool_deny or []),
        "categories": npc.ai.execution_config.get("allowed_tool_categories"),
        "all_categories": list(ALL_TOOL_CATEGORIES),
        "rules": [asdict(row) for row in controls.rule_rows(npc)],
        "rendered_rules": controls.rendered_rules(npc),
        "rule_forms": [{"type": kind, "form": form} for kind, form in RULE_FORMS.items()],
    }


def cost_unknown(npc) -> bool:
    """Whether the NPC spent tokens but no money: its model has no price litellm knows."""
    daily = (npc.ai.metrics or {}).get("daily") or {}
    tokens = sum(int((day or {}).get("tokens", 0)) for day in daily.values())
    cost = sum(float((day or {}).get("cost", 0.0)) for day in daily.values())
    return tokens > 0 and cost == 0


def operator_prompt(npc) -> str:
    """The NPC's operator prompt (for Developers: it may name secrets)."""
    return npc.ai.user_system_prompt or ""


def budget_text(own: dict) -> str:
    """An NPC's own budget as typed to set it (``tokens=50000 cost=0.25``; "" for none)."""
    return " ".join(f"{key}={own[key]:g}" for key in ("tokens", "cost") if own.get(key) is not None)


def budget_limits(npc) -> dict:
    """The NPC's own daily limits and every limit in force, each with where it comes from."""
    return {
        "own": dict(npc.ai.budget or {}),
        "status": npc.ai.spending_status().describe(),
        "limits": [
            {
                "label": origin.label,
                "value": origin.value,
                "shown": origin_value(origin),
                "source": origin_text(origin),
            }
            for origin in budget_origins(npc)
        ],
    }


def history(npc) -> dict:
    """The NPC's history and compaction state (what ``aihistory`` shows)."""
    report = history_report(npc)
    out = asdict(report)
    for row, measure in zip(out["measures"], report.measures):
        row["share"] = measure.share
        row["width"] = max(0, min(100, round(100 * measure.share)))  # of its bar, in %
    out["window_share"] = report.tokens / report.window if report.window else 0.0
    return out


def longterm_status(npc) -> dict:
    """The game's long-term memory (state, search mode, what is off and why) and how many
    memories this NPC has (None while the index is not open)."""
    state = longterm.status()
    return {
        **state,
        "text": longterm.status_text(state),
        "memories": longterm.memory_count(npc.dbref),
    }


# -- its place in the world: routine, goods, ledger (what airoutine and aigoods show) ------------
def world_view(npc) -> dict:
    """``npc``'s routine, goods and latest trades (the API's ``world/``), built on the reactor
    thread (:func:`on_reactor`): the routine's status and the state reads there may change
    what the game thread shares (the routine's in-memory status, a value set aside)."""

    return on_reactor(_world_parts, npc)


def _world_parts(npc) -> dict:
    return {"routine": routine_view(npc), "goods": goods_view(npc), "ledger": ledger_view(npc)}


def routine_view(npc) -> dict:
    """``npc``'s routine as ``airoutine <npc>`` shows it: its slots (the one now marked), the
    game time with the slot now and next, what the routine is doing (in place, walking,
    waiting, unreachable), the route left, where the NPC is, and the text form to edit."""
    routine = world.routine_of(npc)
    stored = npc.ai.routine or {}
    known = routines.status(npc)  # the slot now, read from the clock; the last tick's route
    now, route = known.now, known.route
    exits = []
    if route is not None and route.exits:
        names = {obj.id: obj.key for obj in ObjectDB.objects.filter(id__in=route.exits)}
        exits = [names.get(exit_id, f"#{exit_id}") for exit_id in route.exits]
    return {
        "slots": [
            {
                "key": slot.key(),
                "room": slot.where(),
                "doing": slot.doing,
                "flag": "trade" if slot.trade else "sleep" if slot.sleep else "",
                "now": slot == now,
            }
            for slot in routine.slots
        ],
        "now_and_next": world.now_and_next(npc) if routine.slots else "",
        "state": world.routine_state(npc) or "",
        "route": exits,
        "where": npc.location.key if npc.location else None,
        "dropped": list(routine.dropped),
        "set_by": str(stored.get("set_by") or "") if routine.slots else "",
        "set_at": stored.get("set_at") if routine.slots else None,
        "text": world.routine_text(npc),
    }


def goods_view(npc) -> dict:
    """``npc``'s goods as ``aigoods <npc>`` shows them: its rules, its stock with prices,
    whether it is open now (and why not), its purse, today's trade and warnings about its
    containers. Rules that cannot be read show as ``closed`` and nothing else (no trade)."""
    goods = world.goods_of(npc)
    view: dict[str, Any] = {"closed": goods.closed, "rules": [], "stock": [], "warnings": []}
    if goods.closed or goods == Goods():
        return {**view, "open": False, "why_closed": "", "purse": "", "today": ""}
    is_open, why = world.shop_hours(npc)
    try:
        purse = money().describe(money().balance(npc))
    except MoneyError as err:
        purse = f"cannot be read: {err}"
    counts = today_of(npc.ai.ledger, today())
    return {
        **view,
        "rules": goods_lines(goods),
        "stock": [
            {
                "name": line.name,
                "count": line.count,
                "price": coins(line.rule.price),
                "floor": line.rule.floor,
                "ceiling": line.rule.ceiling,
            }
            for line in stock(npc, goods)
        ],
        "open": is_open,
        "why_closed": why,
        "purse": purse,
        "today": (
            f"sold {counts.sold_units} item(s) for {coins(counts.taken)}, bought "
            f"{sum(counts.bought.values())} for {coins(counts.paid)}"
        ),
        "warnings": world.container_notes(npc, goods),
    }


def ledger_view(npc, last: int = LEDGER_SHOWN) -> list[dict]:
    """``npc``'s ``last`` latest trades, newest first, as ``aigoods/ledger`` lists them."""
    rows = []
    for row in world.ledger_rows(npc, min(last, conf.get_int("EVENNIA_AI_LEDGER_SIZE"))):
        kind = str(row.get("kind") or "")
        total = row.get("total")
        rows.append(
            {
                "id": str(row.get("id") or ""),
                "at": row.get("at"),
                "game": str(row.get("game") or ""),
                "kind": {"sale": "sold", "purchase": "bought"}.get(kind, kind),
                "quantity": row.get("quantity"),
                "item": str(row.get("name") or row.get("item") or ""),
                "total": coins(total) if isinstance(total, int) else "",
                "partner": str(row.get("partner") or ""),
                "via": str(row.get("via") or ""),
            }
        )
    return rows


# What the dashboard and the API may change on an NPC: the level each needs (see
# :mod:`evennia_ai.access`; the model also checks the model chosen, :func:`refusal`), and the
# function of :mod:`evennia_ai.npc.controls` that checks and writes it (the admin commands call
# the same).
CONTROLS: dict[str, tuple[str, Callable]] = {
    "pause": (access.OPERATE, lambda npc, value: controls.pause(npc)),
    "resume": (access.OPERATE, lambda npc, value: controls.resume(npc)),
    "model": (access.OPERATE, controls.set_model),
    "persona": (access.OPERATE, controls.set_persona),
    "host": (access.OPERATE, controls.set_host),
    **{f"line_{kind}": (access.OPERATE, controls.line_setter(kind)) for kind in LINE_KINDS},
    "operator_prompt": (access.EDIT, controls.set_operator_prompt),
    "budget": (access.EDIT, lambda npc, value: _budget_changed(npc, value)),
    "allow_tools": (
        access.EDIT,
        lambda npc, value: controls.allow_tools(npc, controls.split_names(value)),
    ),
    "deny_tools": (
        access.EDIT,
        lambda npc, value: controls.deny_tools(npc, controls.split_names(value)),
    ),
    "only_tools": (
        access.EDIT,
        lambda npc, value: controls.only_tools(npc, controls.split_names(value)),
    ),
    "categories": (access.EDIT, controls.set_categories),
    "reset_tools": (access.EDIT, lambda npc, value: controls.reset_tools(npc)),
    "add_rule": (access.EDIT, controls.add_rule),
    "remove_rule": (access.EDIT, controls.remove_rule),
    # its place in the world (npc.world_controls, as airoutine and aigoods)
    "routine": (access.OPERATE, lambda npc, value, by="": world.set_routine(npc, value, by=by)),
    "clear_routine": (access.OPERATE, lambda npc, value, by="": world.clear_routine(npc, by=by)),
    "check_routine": (access.OPERATE, lambda npc, value: world.check_routine(npc)),
    "add_goods": (access.OPERATE, world.add_goods_rule),
    "remove_goods": (access.OPERATE, world.remove_goods),
}
#: The controls that record who made the change (as ``airoutine`` records its caller).
SIGNED_CONTROLS = frozenset({"routine", "clear_routine"})


def _budget_changed(npc, value: str) -> str:
    budget = controls.set_budget(npc, value)
    return (
        f"{npc.key}'s own daily limits are now tokens {limit_text(budget.get('tokens'))}, cost "
        f"{limit_text(budget.get('cost'), money=True)}; today it is "
        f"{npc.ai.spending_status().describe()}."
    )


def control_level(name: str) -> str:
    """The permission control ``name`` needs (raises :class:`NotFound` for an unknown one)."""
    if name not in CONTROLS:
        raise NotFound(f"No setting '{name}'; known: {', '.join(CONTROLS)}.")
    return CONTROLS[name][0]


def refusal(viewer, name: str, value: str = "") -> str:
    """Why ``viewer`` may not apply control ``name`` with ``value`` ("" when they may).

    The control's level (:func:`control_level`), and for ``model`` the model chosen: Builders
    choose only among ``EVENNIA_AI_BUILDER_MODELS`` (:func:`access.model_refusal`).

    Raises:
        NotFound: an unknown control.
    """
    needed = control_level(name)
    if not access.passes(viewer, needed):
        return access.refusal(needed, f"change an NPC's {name.replace('_', ' ')}")
    if name == "model":
        return access.model_refusal(viewer, value)
    return ""


def model_choices(viewer) -> list[str] | None:
    """The models ``viewer`` may pick from a list (None: any model, typed; [] none at all)."""
    if access.passes(viewer, access.EDIT):
        return None
    if not access.passes(viewer, access.OPERATE):
        return []
    return access.builder_models()


def change(npc, name: str, value: str = "", user=None) -> str:
    """Apply control ``name`` with ``value`` to ``npc`` on the reactor thread; the message.

    ``user`` (the request's) is recorded by the controls that keep who made a change
    (:data:`SIGNED_CONTROLS`: a routine's ``set_by``).

    Raises:
        NotFound: an unknown control.
        evennia_ai.npc.controls.ControlError: the change is refused (the message says why).
    """
    control_level(name)
    value = str(value or "")
    if len(value) > MAX_VALUE_CHARS:
        raise controls.ControlError(f"A setting's value is at most {MAX_VALUE_CHARS:,} characters.")
    if name in SIGNED_CONTROLS:
        by = str(getattr(user, "username", "") or "")
        return on_reactor(CONTROLS[name][1], npc, value, by=by)
    return on_reactor(CONTROLS[name][1], npc, value)


# -- workspace --------------------------------------------------------------------------------
def goals_tree(npc) -> list[dict]:
    """The NPC's goals as a tree (each node has ``children``)."""

    return goal_tree(npc.ai.goals)


def projects(npc) -> list[dict]:
    """The NPC's projects (active first), each with its context text."""

    raw = npc.ai.projects or {}
    slots = raw.get("slots") or {}
    rows = list_projects(raw)
    for row in rows:
        row["context"] = (slots.get(row["key"]) or {}).get("context", "")
    return rows


def memory_blocks(npc) -> list[dict]:
    """The memory blocks the NPC sees (its own, then shared ones), with rendered content."""

    out = []
    for target in visible_blocks(npc):
        block = target.block
        row = pure.describe_block(
            block, shared_from=target.shared_from, permission=target.permission
        )
        row["content"] = pure.render_content(
            block.get("schema") or pure.normalise_schema(None), block.get("content")
        )
        row["updated"] = block.get("updated") or block.get("updated_at")
        out.append(row)
    return out


# -- traces -----------------------------------------------------------------------------------
def _main_iteration(trace: dict) -> dict:
    """The iteration whose prompt sections represent the tick (the first acting call)."""
    iterations = trace.get("iterations") or []
    for iteration in iterations:
        if iteration.get("kind", "act") == "act" and iteration.get("sections"):
            return iteration
    return next((it for it in iterations if it.get("sections")), {})


def trace_summary(trace: dict) -> dict:
    """One trace as a list row: totals, stop reason, tools called and prompt sections."""
    iterations = trace.get("iterations") or []
    sections = {
        str(k): int(v or 0) for k, v in (_main_iteration(trace).get("sections") or {}).items()
    }
    return {
        "tick_id": trace.get("tick_id"),
        "context_type": trace.get("context_type", ""),
        "started": trace.get("started"),
        "ended": trace.get("ended"),
        "stop_reason": trace.get("stop_reason", ""),
        "iterations": len(iterations),
        "tools": [tc.get("name") for it in iterations for tc in it.get("tool_calls") or []],
        "prompt_tokens": int(trace.get("prompt_tokens") or 0),
        "completion_tokens": int(trace.get("completion_tokens") or 0),
        "cost": float(trace.get("cost") or 0.0),
        "duration": float(trace.get("duration") or 0.0),
        "sections": sections,
        "error": trace.get("error"),
        "budget": trace.get("budget"),
    }


def shown_traces(npc, traces: list[dict], viewer=None) -> list[dict]:
    """``traces`` of ``npc`` as ``viewer`` may see them (below Developer: without secrets, see
    :func:`evennia_ai.engine.redaction.trace_for`)."""
    return redaction.traces_shown_to(viewer, npc, traces)


def trace_list(npc, last: int | None = None, viewer=None) -> list[dict]:
    """Summaries of the NPC's kept traces, newest first (the newest ``last`` only)."""
    traces = shown_traces(npc, npc.ai.traces(last), viewer)
    return [trace_summary(t) for t in reversed(traces)]


def trace_detail(npc, tick_id: Any, viewer=None) -> dict:
    """One full trace plus its summary, as ``viewer`` may see it (raises :class:`NotFound`)."""
    try:
        number = int(tick_id)
    except (TypeError, ValueError):
        raise NotFound(f"'{tick_id}' is not a tick id.") from None
    trace = npc.ai.trace(number)
    if trace is None:
        raise NotFound(
            f"{npc.key} has no trace of tick #{number} (only the last "
            f"{conf.get_int('EVENNIA_AI_TRACE_RING_SIZE')} are kept)."
        )
    trace = shown_traces(npc, [trace], viewer)[0]
    return {**trace, "summary": trace_summary(trace)}


def usage_series(npc, days: int = CHART_DAYS, viewer=None) -> dict:
    """Tokens and cost over time: per UTC day (last ``days`` with use) and per kept tick."""
    metrics = npc.ai.metrics or {}
    daily = metrics.get("daily") or {}
    per_day = [
        {
            "label": day,
            "tokens": int((daily[day] or {}).get("tokens", 0)),
            "cost": float((daily[day] or {}).get("cost", 0.0)),
        }
        for day in sorted(daily)[-days:]
    ]
    per_tick = [
        {
            "label": f"#{t.get('tick_id')}",
            "tokens": int(t.get("prompt_tokens") or 0) + int(t.get("completion_tokens") or 0),
            "cost": float(t.get("cost") or 0.0),
            "error": str(t.get("error") or ""),
        }
        for t in shown_traces(npc, npc.ai.traces(RECENT_TRACES), viewer)
    ]
    return {"daily": per_day, "ticks": per_tick}


# -- confirmations ----------------------------------------------------------------------------
def confirmations(npc=None, status: str | None = "pending") -> list[dict]:
    """Confirmation entries, oldest first (one NPC's, one status; None: all)."""

    return get_confirmation_queue().list_entries(npc=npc, status=status)


def confirmation(confirmation_id: str) -> dict:
    """One confirmation entry (raises :class:`NotFound`)."""

    try:
        return get_confirmation_queue().get_entry(confirmation_id)
    except ConfirmationError as err:
        raise NotFound(str(err)) from None


def decide(confirmation_id: str, approve: bool, user, reason: str = "") -> dict:
    """Approve or reject a confirmation exactly as ``aiconfirm`` does, on the reactor thread.

    Args:
        confirmation_id: The entry's id.
        approve: True to approve (the action runs as the NPC), False to reject.
        user: The deciding Account (recorded as ``decided_by``).
        reason: Why it was rejected (told to the NPC).

    Returns:
        The decided entry.

    Raises:
        evennia_ai.tools.approvals.ConfirmationError: Unknown or already decided.
    """

    def run():
        queue = get_confirmation_queue()
        if approve:
            return queue.approve(confirmation_id, approver=user)
        return queue.reject(confirmation_id, rejecter=user, reason=reason)

    return on_reactor(run)


# -- prompt assembly --------------------------------------------------------------------------
def context_orders() -> list[dict]:
    """Per context type, the components it assembles in the order they are sent."""

    registry = get_prompt_registry()
    components = registry.get_all_prompt_components()
    cache_friendly = conf.get_str("EVENNIA_AI_COMPONENT_ORDER") == "cache_friendly"
    out = []
    for context_type in CONTEXT_TYPES:
        try:
            config = registry.get_effective_context_config(context_type)
        except PromptRegistryError as err:
            out.append(
                {
                    "context_type": context_type,
                    "name": context_type,
                    "error": str(err),
                    "components": [],
                }
            )
            continue
        selected = select_components(components, config)
        ordered = cache_friendly_order(selected) if cache_friendly else selected
        by_key = {c.key: c for c in selected}
        out.append(
            {
                "context_type": context_type,
                "name": config.name,
                "execution_mode": config.execution_mode,
                "components": [
                    {
                        "key": c.key,
                        "name": c.name,
                        "id": by_key[c.key].id,
                        "static": by_key[c.key].is_static,
                        "role": c.role,
                    }
                    for c in ordered
                ],
            }
        )
    return out
