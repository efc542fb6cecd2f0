"""Who may use the dashboard and its API: the permission story of :mod:`evennia_ai.access`.

Viewing every page and every ``GET`` of the API, and approving or rejecting a waiting action,
need Evennia's ``Builder`` permission (as the in-game commands do); changing an NPC's tool
lists, tool rules, operator prompt or budget needs ``Developer``. Permissions are checked on
the account through Evennia's permission hierarchy, as Evennia's own REST API does; a superuser
passes every check.
"""

from __future__ import annotations

from evennia.web.api.permissions import EvenniaPermission

from evennia_ai import access


def is_ai_staff(user) -> bool:
    """Whether ``user`` (a request's user) may see the dashboard (:data:`access.VIEW`)."""
    return access.passes(user, access.VIEW)


def may(user, permission: str) -> bool:
    """Whether ``user`` (a request's user) holds ``permission`` (a level of :mod:`access`)."""
    return access.passes(user, permission)


class AIStaffPermission(EvenniaPermission):
    """DRF permission of the dashboard API: viewing and deciding at Builder; the actions that
    edit name their own level with ``required_permission`` (e.g. :data:`access.EDIT`)."""

    message = (
        "The evennia-ai API needs the Builder permission (editing an NPC's settings needs "
        "Developer)."
    )

    def has_permission(self, request, view):
        needed = getattr(view, "required_permission", None) or access.VIEW
        if not access.passes(request.user, needed):
            if needed != access.VIEW:
                self.message = access.refusal(needed, "change this setting")
            return False
        return True

    def has_object_permission(self, request, view, obj):
        return self.has_permission(request, view)
