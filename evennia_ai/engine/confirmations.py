"""Pending confirmations: actions an assistant wanted to take that a Builder must approve.

DANGEROUS tool calls (when the execution pattern requires confirmation), model writes to
memory blocks with Partner or Human permission, and accepted trades worth more than the approval
value (:func:`queue_trade`: at most one per NPC and partner; the approval runs the trade again
through every check) land here. One queue for the whole server lives in the Attributes of a
:class:`ConfirmationQueue` Script, got or created by key. Approving runs the action *as the
NPC* (bounded by the NPC's own permissions and locks, never the approver's) through an executor
registered for the entry's ``kind``. Online Builders (and the channel of
``EVENNIA_AI_CONFIRMATION_CHANNEL``) are told when an entry is queued and when it is decided
(:mod:`evennia_ai.engine.notices`).

An approval is a fresh call. Before a parked tool call runs, everything a new call of that tool
would be checked against is checked again, as it is at that moment (:func:`tool_refusal`): the
NPC is enabled, its Script runs and is not paused, it is within its daily budgets; the tool
still exists and is in the tool set the tick would give it now (the context's filter and
categories, the categories of the NPC's execution settings, its allow and deny lists, the
tool's lock: the functions the tick uses, :func:`~evennia_ai.tools.select_tools` and
:func:`~evennia_ai.prompt.execution_pattern.select_execution_pattern`); and its tool rules,
counted with the calls its tick had made when it parked the call plus the approved runs of that
tick. What no longer holds refuses the approval: the entry is decided ``failed`` with
``refused: True`` and the reason, and nothing runs.

Entries are plain dicts::

    {"id": "c_1a2b3c4d", "kind": "tool", "npc_id": 12, "npc_key": "Innkeeper",
     "action": "execute_command", "payload": {"arguments": {...}},
     "reason": "...", "tick_id": 42, "context_type": "tick_event",
     "rules_before": {"calls": ["look"], "succeeded": ["look"]},
     "created": iso, "status": "pending", "refused": False,
     "decided_by": None, "decided_at": None, "result": None}

``context_type`` and ``rules_before`` describe the tick that parked the call (the tool rules'
count before it, :meth:`~evennia_ai.tools.rules.ToolRuleState.snapshot`); entries queued
without a tick's context have None there and are checked as calls of a ``tick_event`` tick
made first in their tick.

Status is one of ``pending``, ``approved`` (ran successfully), ``failed`` (approved but the
action failed, or ``refused`` at approval and did not run), ``rejected``. Decided entries beyond
:data:`MAX_DECIDED` are dropped oldest first; pending ones are never dropped silently. The NPC
is told every decision as a system event, in words that say whether its action ran
(:func:`npc_notice`).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Callable

from evennia.objects.models import ObjectDB
from evennia.scripts.scripts import DefaultScript
from evennia.utils import logger

from evennia_ai.engine import notices
from evennia_ai.memory.block_admin import execute_block_write
from evennia_ai.npc_state import find_npc_state, npc_state
from evennia_ai.prompt.contexts import CONTEXT_TICK_EVENT, CONTEXT_TYPES
from evennia_ai.prompt.execution_pattern import select_execution_pattern
from evennia_ai.prompt.registry import effective_context_config
from evennia_ai.tools import select_tools
from evennia_ai.tools.approvals import QUEUE_KEY, ConfirmationError, get_confirmation_queue
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY, passes_lock
from evennia_ai.tools.rules import ToolRuleState, parse_rules
from evennia_ai.utils import iso_utc, log_prefix, parse_iso
from evennia_ai.world import trade
from evennia_ai.world.objects import as_shown

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

MAX_DECIDED = 200
MAX_PENDING = 500
MAX_PENDING_PER_NPC = 20  # one NPC (and whoever talks to it) cannot fill the whole queue

REFUSED_PREFIX = "refused at approval: "
"""How the result of an approval that was refused begins (the reason follows)."""

# kind -> callable(npc, entry) -> (success: bool, result text)
_EXECUTORS: dict[str, Callable[[Any, dict], tuple[bool, str]]] = {}


class ApprovalRefused(Exception):
    """An approved action may not run now; the message says why, as a clause for people."""


def register_executor(kind: str, executor: Callable[[Any, dict], tuple[bool, str]]) -> None:
    """Register how approved entries of ``kind`` are carried out.

    Args:
        kind: Entry kind, e.g. "tool" or "block_write".
        executor: ``(npc, entry) -> (success, result_text)``; runs on the reactor thread. It
            raises :class:`ApprovalRefused` when the action may not run at all now.
    """
    _EXECUTORS[kind] = executor


# -- the fresh checks ------------------------------------------------------------------------------
def npc_refusal(npc) -> str | None:
    """Why ``npc`` would make no call now (stopped, paused, over budget), or None."""
    state = find_npc_state(npc)
    if state is None:
        return f"{npc.key} is no longer an AI NPC"
    if not state.enabled:
        return f"{npc.key} is stopped"
    script = state.script
    if script is None or not script.is_active:
        return f"{npc.key}'s AI script is not running"
    if state.paused:
        return f"{npc.key} is paused"
    spending = state.spending_status()
    if spending.exceeded:
        return f"{npc.key} is {spending.describe()}"
    return None


def _context_type(entry: dict) -> str:
    stored = entry.get("context_type")
    return stored if stored in CONTEXT_TYPES else CONTEXT_TICK_EVENT


def tool_refusal(npc, entry: dict, tool) -> str | None:
    """Why a new call of ``tool`` by ``npc`` in the entry's tick would be refused now, or None.

    The NPC's state (:func:`npc_refusal`), the tool set the tick would give it (context filter
    and categories, execution settings, allow and deny lists, locks) and its tool rules, counted
    with the calls of the tick that parked the call and the approved runs of that tick.
    """
    refusal = npc_refusal(npc)
    if refusal:
        return refusal
    context_type = _context_type(entry)
    config = effective_context_config(context_type)
    ai_state = npc_state(npc)
    pattern = select_execution_pattern(ai_state.execution_config, config)
    tools = [t for t in select_tools(npc, config) if pattern.allows(t)]
    names = {t.name for t in tools}
    if tool.name not in names:
        return _not_offered(npc, tool, context_type, config, pattern)
    rules, _errors = parse_rules(ai_state.tool_rules or [])  # the tick skips unreadable rules too
    state = ToolRuleState.restore(rules, entry.get("rules_before"), available=names)
    for run in _approved_runs_of_tick(npc, entry):
        state.record(run)
    broken = state.check(tool.name)
    if broken:
        return "a tool rule forbids it now: " + broken.removeprefix("Rule: ")
    return None


def _not_offered(npc, tool, context_type: str, config, pattern) -> str:
    """Why ``tool`` is not in ``npc``'s tool set now, in words (for the approver and the NPC)."""
    where = f"'{tool.name}' is no longer in {npc.key}'s tool set"
    ai_state = npc_state(npc)
    denied = ai_state.tool_deny or []
    allowed = ai_state.tool_allow
    if tool.name in denied:
        return f"{where}: its deny list names it"
    if allowed is not None and tool.name not in allowed:
        return f"{where}: its allow list does not name it"
    if config.tool_filter is not None and tool.name not in config.tool_filter:
        return f"{where}: the {context_type} context does not offer it"
    if not pattern.allows_category(tool.category):
        source = pattern.source_layers.get("allowed_categories")
        whose = (
            f"{npc.key}'s execution settings allow"
            if source == "static"
            else f"the {context_type} context allows"
        )
        shown = ", ".join(pattern.allowed_categories or []) or "none"
        return f"{where}: {tool.category} tools are turned off ({whose} {shown})"
    if not passes_lock(npc, tool):
        return f"{where}: {npc.key} does not pass its lock ({tool.lock})"
    if tool.needs_sub_agents and not pattern.sub_agents_enabled:
        return f"{where}: helpers are turned off for {npc.key}"
    return where


def _approved_runs_of_tick(npc, entry: dict) -> list[str]:
    """Actions of the entry's tick that were approved and ran since it was parked."""
    tick_id = entry.get("tick_id")
    if tick_id is None:
        return []
    return [
        other.get("action")
        for other in get_confirmation_queue().list_entries(npc, status="approved")
        if other.get("kind") == "tool"
        and other.get("tick_id") == tick_id
        and other.get("id") != entry.get("id")
        and other.get("rules_before") is not None
    ]


def _run_tool_as_npc(npc, entry: dict) -> tuple[bool, str]:
    """Executor for ``kind="tool"``: check the call afresh, then run it as the NPC, confirmed."""
    tool = TOOL_REGISTRY.get(entry["action"])
    if tool is None:
        raise ApprovalRefused(f"the tool '{entry['action']}' no longer exists")
    try:
        refusal = tool_refusal(npc, entry, tool)
    except Exception:  # a check that cannot be made does not pass
        logger.log_trace(f"{log_prefix(npc)}: approval of {entry.get('id')} could not be checked")
        refusal = f"{npc.key}'s settings could not be read to check the call again (see the log)"
    if refusal:
        raise ApprovalRefused(refusal)
    ctx = ToolContext(npc=npc, tick_id=entry.get("tick_id") or 0, context_type="confirmation")
    ctx.state.confirmed = True
    outcome = tool.safe_run(ctx, dict(entry.get("payload", {}).get("arguments", {})))
    if not isinstance(outcome, ToolResult):
        return False, "the tool started but answers later; its result will not be reported here"
    return bool(outcome.success), outcome.to_text()


def _run_trade(npc, entry: dict) -> tuple[bool, str]:
    """Executor for ``kind="trade"``: the accepted order runs ``via="approval"``, and
    :func:`evennia_ai.world.trade.execute` checks stock, both purses, the rules and the day's
    limits again. A refusal (the item sold meanwhile) decides the entry ``refused at
    approval`` and tells the partner; a trade that ran told them itself. An entry approved
    again after its trade ran (the server stopped before the entry was marked decided) finds
    the trade in the ledger by its id: it is decided ``approved``, "already done", and
    nothing moves twice."""
    try:
        order = trade.TradeOrder.from_plain(entry["payload"]["order"], via="approval")
    except (trade.TradeAborted, KeyError, TypeError) as err:
        raise ApprovalRefused(str(err) or "the order cannot be read") from err
    if order.npc != npc:
        raise ApprovalRefused(f"the order is not {npc.key}'s")
    result = trade.execute(replace(order, approval=entry.get("id")))
    if not result.done:
        order.partner.msg(  # the names in it may be players' (an item's)
            as_shown(f"Your trade with {npc.key} was refused at approval: {result.refused}.")
        )
        raise ApprovalRefused(result.refused)
    return True, result.to_model()


class TradeAlreadyWaiting(ConfirmationError):
    """The partner already has a trade with the NPC waiting for approval (:func:`queue_trade`).

    Attributes:
        entry: That waiting confirmation entry.
    """

    def __init__(self, entry: dict) -> None:
        self.entry = entry
        super().__init__(f"confirmation {entry.get('id')} is an earlier order still waiting")


def waiting_trade(npc, partner) -> dict | None:
    """The trade of ``partner`` with ``npc`` waiting for approval, or None."""
    for entry in get_confirmation_queue().list_entries(npc):
        order = (entry.get("payload") or {}).get("order") if entry.get("kind") == "trade" else None
        if isinstance(order, dict) and order.get("partner") == partner.dbref:
            return entry
    return None


def queue_trade(order: trade.TradeOrder, name: str = "") -> str:
    """Queue an accepted ``order`` worth more than the approval value for a Builder; returns
    the confirmation's id (for ``TradeResult.pending``). ``name``: the item as the partner
    reads it (kept in the payload, to name the order in words later).

    A partner has at most one trade with an NPC waiting: a pending order reserves neither
    stock nor money, so without this one player could fill the NPC's share of the queue
    (:data:`MAX_PENDING_PER_NPC`) and shut out other players' trades and the NPC's own calls.

    Raises:
        TradeAlreadyWaiting: The partner's earlier order with this NPC still waits.
        ConfirmationError: The queue, or the NPC's share of it, is full.
    """
    waiting = waiting_trade(order.npc, order.partner)
    if waiting is not None:
        raise TradeAlreadyWaiting(waiting)
    reason = trade.approval_needed(order) or f"{order.npc.key} trades with {order.partner.key}"
    payload = {"order": order.to_plain(), "name": name, "arguments": {"deal": reason}}
    return get_confirmation_queue().add_entry(
        order.npc, "trade", payload, kind="trade", reason=reason
    )


register_executor("tool", _run_tool_as_npc)
register_executor("block_write", execute_block_write)
register_executor("trade", _run_trade)


def _check_room(entries: dict, npc) -> None:
    """Refuse a new entry when the queue, or ``npc``'s share of it, is full.

    Raises:
        ConfirmationError: :data:`MAX_PENDING` entries are pending, or
            :data:`MAX_PENDING_PER_NPC` of ``npc``'s.
    """
    pending = [e for e in entries.values() if e.get("status") == "pending"]
    if len(pending) >= MAX_PENDING:
        raise ConfirmationError(
            f"{MAX_PENDING} confirmations are already pending; decide some first."
        )
    if sum(1 for e in pending if e.get("npc_id") == npc.id) >= MAX_PENDING_PER_NPC:
        raise ConfirmationError(
            f"{npc.key} already has {MAX_PENDING_PER_NPC} actions waiting for confirmation; "
            "nothing more is queued until an operator decides them."
        )


def _parked_in(
    ctx: ToolContext | None, tick_id: int | None
) -> tuple[int | None, str | None, dict | None]:
    """``(tick id, context type, tool rules' count)`` of the tick a call is parked from.

    Without a tool context: ``tick_id`` as given and None for the others (the approval checks
    the call as a first call of a ``tick_event`` tick).
    """
    if ctx is None:
        return tick_id, None, None
    rule_state = ctx.services.rule_state
    rules_before = (
        rule_state.snapshot() if rule_state is not None else {"calls": [], "succeeded": []}
    )
    return (ctx.tick_id if tick_id is None else tick_id), ctx.context_type, rules_before


class ConfirmationQueue(DefaultScript):
    """Server-wide queue of actions awaiting a Builder's decision (no timer)."""

    def at_script_creation(self):
        self.key = QUEUE_KEY
        self.desc = "evennia-ai: actions awaiting confirmation"
        self.persistent = True
        self.db.entries = {}

    # -- reading -------------------------------------------------------------------------------
    def _entries(self) -> dict:
        entries = self.attributes.get("entries", default=None)
        if entries is None:
            return {}
        return {key: dict(value) for key, value in entries.deserialize().items()}

    def list_entries(self, npc=None, status: str | None = "pending") -> list[dict]:
        """Entries, oldest first, optionally only one NPC's and/or one status (None: all)."""
        out = []
        for entry in self._entries().values():
            if npc is not None and entry.get("npc_id") != npc.id:
                continue
            if status is not None and entry.get("status") != status:
                continue
            out.append(entry)
        return sorted(out, key=lambda e: parse_iso(e.get("created")) or _EPOCH)

    def get_entry(self, confirmation_id: str) -> dict:
        """One entry by id (raises ConfirmationError when unknown)."""
        entry = self._entries().get(str(confirmation_id).strip())
        if entry is None:
            raise ConfirmationError(f"No confirmation with id '{confirmation_id}'.")
        return entry

    # -- writing -------------------------------------------------------------------------------
    def add_entry(
        self,
        npc,
        action: str,
        payload: dict,
        *,
        kind: str = "tool",
        reason: str = "",
        tick_id: int | None = None,
        ctx: ToolContext | None = None,
    ) -> str:
        """Queue an action for confirmation; returns its id (one database write).

        Args:
            npc: The NPC the action is for.
            action: The tool (or block operation) wanted.
            payload: What the executor needs (``{"arguments": {...}}`` for a tool call).
            kind: Which executor carries it out.
            reason: Why it was asked for, for the approver.
            tick_id: The tick that asked (``ctx``'s when it is given).
            ctx: The context of the tool call that is parked: its tick, context type and the
                tool rules' count so far are kept, so the approval checks the call as a call
                of that tick.
        """
        entries = self._entries()
        _check_room(entries, npc)
        confirmation_id = "c_" + uuid.uuid4().hex[:8]
        tick_id, context_type, rules_before = _parked_in(ctx, tick_id)
        entries[confirmation_id] = {
            "id": confirmation_id,
            "kind": kind,
            "npc_id": npc.id,
            "npc_key": npc.key,
            "action": action,
            "payload": payload,
            "reason": reason,
            "tick_id": tick_id,
            "context_type": context_type,
            "rules_before": rules_before,
            "created": iso_utc(),
            "status": "pending",
            "refused": False,
            "decided_by": None,
            "decided_at": None,
            "result": None,
        }
        self.db.entries = entries
        notices.announce_waiting(entries[confirmation_id])
        return confirmation_id

    def _decide(
        self,
        confirmation_id: str,
        status: str,
        decided_by,
        result: str | None,
        refused: bool = False,
    ) -> dict:
        entries = self._entries()
        entry = entries[confirmation_id]  # _pending found it
        entry.update(
            status=status,
            refused=refused,
            decided_by=getattr(decided_by, "key", None)
            or (str(decided_by) if decided_by else None),
            decided_at=iso_utc(),
            result=result,
        )
        decided = sorted(
            (e for e in entries.values() if e.get("status") != "pending"),
            key=lambda e: parse_iso(e.get("decided_at")) or _EPOCH,
        )
        for old in decided[:-MAX_DECIDED]:
            entries.pop(old["id"], None)
        self.db.entries = entries
        notices.announce_decision(entry, decided_by)
        return entry

    def _pending(self, confirmation_id: str) -> dict:
        entry = self.get_entry(confirmation_id)
        if entry.get("status") != "pending":
            raise ConfirmationError(
                f"Confirmation '{confirmation_id}' was already decided ({entry['status']})."
            )
        return entry

    def approve(self, confirmation_id: str, approver=None) -> dict:
        """Approve and carry out an entry as its NPC, if it may still run. Returns the entry.

        A tool call is checked again as a new call would be (see the module docstring); when a
        check fails nothing runs and the entry is decided ``failed`` with ``refused: True`` and
        a result starting ``refused at approval:``, naming the reason. The NPC is told either
        way (:func:`npc_notice`).
        """
        entry = self._pending(confirmation_id)
        npc = _find_npc(entry.get("npc_id"))
        if npc is None:
            return self._refuse(entry, approver, "the NPC no longer exists")
        executor = _EXECUTORS.get(entry.get("kind", "tool"))
        if executor is None:
            return self._refuse(
                entry, approver, f"nothing can carry out a '{entry.get('kind')}' action", npc
            )
        try:
            success, result = executor(npc, entry)
        except ApprovalRefused as refusal:
            return self._refuse(entry, approver, str(refusal), npc)
        except Exception as err:
            logger.log_trace(f"evennia_ai: confirmation {entry['id']} failed")
            success, result = False, f"error: {err}"
        decided = self._decide(entry["id"], "approved" if success else "failed", approver, result)
        _tell_npc(npc, decided)
        return decided

    def _refuse(self, entry: dict, approver, reason: str, npc=None) -> dict:
        """Decide an approved entry that may not run: ``failed``, ``refused``, with why."""
        if npc is not None:
            logger.log_info(
                f"{log_prefix(npc)}: approval of {entry['id']} ({entry.get('action')}) refused: "
                f"{reason}"
            )
        decided = self._decide(
            entry["id"], "failed", approver, f"{REFUSED_PREFIX}{reason}", refused=True
        )
        if npc is not None:
            _tell_npc(npc, decided)
        return decided

    def reject(self, confirmation_id: str, rejecter=None, reason: str = "") -> dict:
        """Reject an entry; nothing runs. Returns the decided entry."""
        entry = self._pending(confirmation_id)
        decided = self._decide(entry["id"], "rejected", rejecter, reason or "rejected")
        npc = _find_npc(entry.get("npc_id"))
        if npc is not None:
            _tell_npc(npc, decided)
        return decided


def _find_npc(npc_id):
    if npc_id is None:
        return None
    try:
        return ObjectDB.objects.get(id=npc_id)
    except ObjectDB.DoesNotExist:
        return None


def npc_notice(entry: dict) -> str:
    """What the NPC is told of a decision on its pending action, in words that say whether it ran.

    Example:
        ``An operator approved your pending 'execute_command' (c_1a2b3c4d); it ran: ...``
    """
    action = f"your pending '{entry.get('action')}' ({entry.get('id')})"
    result = str(entry.get("result") or "").strip()
    status = entry.get("status")
    if status == "approved":
        text = f"An operator approved {action}; it ran"
    elif status == "failed" and entry.get("refused"):
        result = result.removeprefix(REFUSED_PREFIX)
        text = f"An operator approved {action}, but it was refused at approval and did not run"
    elif status == "failed":
        text = f"An operator approved {action}; it ran but failed"
    elif status == "rejected":
        reason = result if result and result != "rejected" else "none given"
        return f"An operator rejected {action}; it did not run. Their reason: {reason}"
    else:
        text = f"{action[0].upper()}{action[1:]} is {status}"
    return f"{text}: {result}" if result else f"{text}."


def _tell_npc(npc, entry: dict) -> None:
    """Let the NPC perceive the decision as a system event, so it can follow up."""
    state = find_npc_state(npc)
    if state is None or not hasattr(state, "notify_system"):
        return
    try:
        state.notify_system(npc_notice(entry))
    except Exception:
        logger.log_trace("evennia_ai: could not notify NPC of a confirmation decision")
