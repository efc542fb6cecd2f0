"""Pending confirmations: actions an assistant wanted to take that a Builder must approve.

DANGEROUS tool calls (when the execution pattern requires confirmation) and model writes to
memory blocks with Partner or Human permission land here. One queue for the whole server lives
in the Attributes of a :class:`ConfirmationQueue` Script, got or created by key. Approving runs
the action *as the NPC* (bounded by the NPC's own permissions and locks, never the approver's)
through an executor registered for the entry's ``kind``. Online Builders (and the channel of
``EVENNIA_AI_CONFIRMATION_CHANNEL``) are told when an entry is queued and when it is decided
(:mod:`evennia_ai.engine.notices`).

Entries are plain dicts::

    {"id": "c_1a2b3c4d", "kind": "tool", "npc_id": 12, "npc_key": "Innkeeper",
     "action": "execute_command", "payload": {"arguments": {...}},
     "reason": "...", "tick_id": 42, "created": iso, "status": "pending",
     "decided_by": None, "decided_at": None, "result": None}

Status is one of ``pending``, ``approved`` (ran successfully), ``failed`` (approved but the
action failed or could not run), ``rejected``. Decided entries beyond
:data:`MAX_DECIDED` are dropped oldest first; pending ones are never dropped silently.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, Callable

from evennia.objects.models import ObjectDB
from evennia.scripts.scripts import DefaultScript
from evennia.utils import logger

from evennia_ai.engine import notices
from evennia_ai.memory.block_admin import execute_block_write
from evennia_ai.tools.approvals import QUEUE_KEY, ConfirmationError
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY, passes_lock
from evennia_ai.utils import iso_utc, parse_iso

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

MAX_DECIDED = 200
MAX_PENDING = 500
MAX_PENDING_PER_NPC = 20  # one NPC (and whoever talks to it) cannot fill the whole queue

# kind -> callable(npc, entry) -> (success: bool, result text)
_EXECUTORS: dict[str, Callable[[Any, dict], tuple[bool, str]]] = {}


def register_executor(kind: str, executor: Callable[[Any, dict], tuple[bool, str]]) -> None:
    """Register how approved entries of ``kind`` are carried out.

    Args:
        kind: Entry kind, e.g. "tool" or "block_write".
        executor: ``(npc, entry) -> (success, result_text)``; runs on the reactor thread.
    """
    _EXECUTORS[kind] = executor


def _run_tool_as_npc(npc, entry: dict) -> tuple[bool, str]:
    """Executor for ``kind="tool"``: run the stored tool call as the NPC, confirmed."""
    tool = TOOL_REGISTRY.get(entry["action"])
    if tool is None:
        return False, f"tool '{entry['action']}' no longer exists"
    # Still bounded by the NPC's tool set and the tool's lock as they are now, not when queued.
    ai = getattr(npc, "ai", None)
    allowed = ai.tool_allow if ai is not None else None
    denied = (ai.tool_deny if ai is not None else None) or []
    if tool.name in denied or (allowed is not None and tool.name not in allowed):
        return False, f"'{tool.name}' is no longer in {npc.key}'s tool set"
    if not passes_lock(npc, tool):
        return False, f"{npc.key} no longer passes the lock of '{tool.name}'"
    ctx = ToolContext(npc=npc, tick_id=entry.get("tick_id") or 0, context_type="confirmation")
    ctx.state.confirmed = True
    outcome = tool.safe_run(ctx, dict(entry.get("payload", {}).get("arguments", {})))
    if not isinstance(outcome, ToolResult):
        return False, "the tool answered asynchronously; run it again from the NPC"
    return bool(outcome.success), outcome.to_text()


register_executor("tool", _run_tool_as_npc)
register_executor("block_write", execute_block_write)


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
    ) -> str:
        """Queue an action for confirmation; returns its id (one database write)."""
        entries = self._entries()
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
        confirmation_id = "c_" + uuid.uuid4().hex[:8]
        entries[confirmation_id] = {
            "id": confirmation_id,
            "kind": kind,
            "npc_id": npc.id,
            "npc_key": npc.key,
            "action": action,
            "payload": payload,
            "reason": reason,
            "tick_id": tick_id,
            "created": iso_utc(),
            "status": "pending",
            "decided_by": None,
            "decided_at": None,
            "result": None,
        }
        self.db.entries = entries
        notices.announce_waiting(entries[confirmation_id])
        return confirmation_id

    def _decide(self, confirmation_id: str, status: str, decided_by, result: str | None) -> dict:
        entries = self._entries()
        entry = entries.get(confirmation_id)
        entry.update(
            status=status,
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
        """Approve and carry out an entry as its NPC. Returns the decided entry."""
        entry = self._pending(confirmation_id)
        npc = _find_npc(entry.get("npc_id"))
        if npc is None:
            return self._decide(entry["id"], "failed", approver, "the NPC no longer exists")
        executor = _EXECUTORS.get(entry.get("kind", "tool"))
        if executor is None:
            return self._decide(entry["id"], "failed", approver, f"no executor for {entry['kind']}")
        try:
            success, result = executor(npc, entry)
        except Exception as err:
            logger.log_trace(f"evennia_ai: confirmation {entry['id']} failed")
            success, result = False, f"error: {err}"
        decided = self._decide(entry["id"], "approved" if success else "failed", approver, result)
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


def _tell_npc(npc, entry: dict) -> None:
    """Let the NPC perceive the decision as a system event, so it can follow up."""
    ai = getattr(npc, "ai", None)
    if ai is None or not hasattr(ai, "notify_system"):
        return
    try:
        ai.notify_system(
            f"An operator {entry['status']} your pending '{entry['action']}' "
            f"({entry['id']}): {entry.get('result') or ''}".strip()
        )
    except Exception:
        logger.log_trace("evennia_ai: could not notify NPC of a confirmation decision")
