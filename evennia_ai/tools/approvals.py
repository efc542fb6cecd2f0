"""Where actions that wait for a Builder's approval are queued.

A DANGEROUS tool call (when the execution pattern asks for confirmation) and a model write to a
Partner or Human memory block wait in the server's one confirmation queue until a Builder
approves or rejects them. The queue is a Script (:class:`evennia_ai.engine.confirmations
.ConfirmationQueue`, whose typeclass path is stored in the database); this module finds it by
key or creates it by that path, so the tools that queue actions need not import the engine.
"""

from __future__ import annotations

from evennia.scripts.models import ScriptDB
from evennia.utils.create import create_script

from evennia_ai import access

QUEUE_KEY = "evennia_ai_confirmations"
QUEUE_TYPECLASS = "evennia_ai.engine.confirmations.ConfirmationQueue"
APPROVER_LOCK = access.lock(access.APPROVE)
"""Who may approve or reject: the lock of ``aiconfirm``, which the notices of waiting actions
also use to choose who is told."""


class ConfirmationError(ValueError):
    """A confirmation could not be queued, found or decided; the message says why."""


def get_confirmation_queue():
    """The server's ConfirmationQueue Script, created on first use."""
    found = ScriptDB.objects.filter(db_key=QUEUE_KEY).order_by("id").first()
    if found is not None:
        return found
    return create_script(QUEUE_TYPECLASS, key=QUEUE_KEY, persistent=True, autostart=False)
